"""Command line of blockcd: ``python -m blockcd reproduce``.

Runs the book's experiment suite (:mod:`blockcd.reproduce`, chapter 8),
writes a figure (PNG and PDF) and a CSV of measured against predicted values
per experiment, prints a summary table and exits with status 0 when every
check passes, 1 when one fails and 2 on a usage error (such as an unknown
experiment name).
"""

from __future__ import annotations

import argparse
import sys

from .reproduce import EXPERIMENTS, TOLERANCE, experiment_name


def _name(value: str) -> str:
    try:
        return experiment_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seed(value: str) -> int:
    try:
        s = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer >= 0, got {value!r}") from None
    if s < 0:
        raise argparse.ArgumentTypeError(f"seed must be an integer >= 0, got {s}")
    return s


def _tolerance(value: str) -> float:
    try:
        t = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"tolerance must be a number > 0, got {value!r}") from None
    if not t > 0 or t == float("inf"):
        raise argparse.ArgumentTypeError(f"tolerance must be a finite number > 0, got {value!r}")
    return t


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m blockcd``."""
    p = argparse.ArgumentParser(
        prog="python -m blockcd",
        description="blockcd: independent block sparsification for distributed optimization.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    r = sub.add_parser(
        "reproduce",
        help="run the book's experiment suite (chapter 8) and check it against the theory",
        description=(
            "Run the experiment suite of chapter 8: for each experiment write NAME.png, NAME.pdf and "
            "NAME.csv (measured against predicted) into --out, print a summary table, and exit with "
            "status 1 if any check falls outside its tolerance. Experiments: " + ", ".join(EXPERIMENTS) + "."
        ),
    )
    r.add_argument("--quick", action="store_true",
                   help="the reduced suite (under 2 minutes; the one the tests and the book run)")
    r.add_argument("--out", default="reproduce-out", metavar="DIR",
                   help="directory for the figures and tables (default: %(default)s)")
    r.add_argument("--only", nargs="+", type=_name, metavar="NAME",
                   help="run only these experiments ('-' and '_' are the same)")
    r.add_argument("--seed", type=_seed, default=0, metavar="S",
                   help="seed of the problems; the runs use seeds S, S+1, ... (default: %(default)s)")
    r.add_argument("--tolerance", type=_tolerance, default=TOLERANCE, metavar="T",
                   help="relative tolerance of the 'within' checks (default: %(default)s)")
    return p


def main(argv=None) -> int:
    """Parse ``argv`` and run the command; returns the exit status."""
    args = parser().parse_args(argv)
    if args.command == "reproduce":
        from .reproduce import main_reproduce

        return main_reproduce(args.only, config="quick" if args.quick else "full", out=args.out,
                              seed=args.seed, tolerance=args.tolerance)
    return 2  # pragma: no cover  (argparse rejects other commands)


if __name__ == "__main__":
    sys.exit(main())

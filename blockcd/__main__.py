"""Command line of blockcd: ``python -m blockcd reproduce [--paper]``.

Runs the book's experiment suite (:mod:`blockcd.reproduce`, chapter 8), or with ``--paper`` the paper's
twelve figures (:mod:`blockcd.reproduce.paper`: ``--libsvm-dir``, ``--seeds``, ``--figures``),
writes a figure (PNG and PDF) and a CSV of measured against predicted values
per experiment, prints a summary table and exits with status 0 when every
check passes, 1 when one fails and 2 on a usage error (such as an unknown
experiment name).
"""

from __future__ import annotations

import argparse
import sys

from . import __version__
from .reproduce import EXPERIMENTS, TOLERANCE, experiment_name


def _name(value: str) -> str:
    try:
        return experiment_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _int_arg(name: str, lo: int, hi: int | None = None):
    """An argparse type: an integer in [lo, hi], else a usage error naming the option and the range."""
    allowed = f"an integer >= {lo}" if hi is None else f"integers in {lo}..{hi}"

    def parse(value: str) -> int:
        try:
            k = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be {allowed}, got {value!r}") from None
        if k < lo or (hi is not None and k > hi):
            raise argparse.ArgumentTypeError(f"{name} must be {allowed}, got {k}")
        return k

    return parse


_seed = _int_arg("seed", 0, 2**63 - 1)  # check_seed's range: a counter-based generator's key
_seeds = _int_arg("seeds", 1)
_figure = _int_arg("figures", 1, 12)
_jobs = _int_arg("jobs", 1)


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
    p.add_argument("--version", action="version", version=f"blockcd {__version__}",
                   help="print the version of blockcd (the book's footer names the same) and exit")
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
    r.add_argument("--paper", action="store_true",
                   help="regenerate the paper's twelve figures instead (figNN.png/.pdf/.csv by the paper's "
                        "numbers), each claim checked; exit with status 1 on any surprise: a check that "
                        "fails (FAIL) or one the book expects not to hold that holds (XPASS)")
    r.add_argument("--libsvm-dir", default=None, metavar="DIR",
                   help="with --paper: directory holding the paper's LIBSVM files a1a, mushrooms, phishing, w1a "
                        "(default: the copies shipped with blockcd)")
    r.add_argument("--seeds", type=_seeds, default=None, metavar="K",
                   help="with --paper: runs per curve (default: 3 quick, 5 full)")
    r.add_argument("--figures", nargs="+", type=_figure, default=None, metavar="N",
                   help="with --paper: only these figures (1-12)")
    r.add_argument("--replace", action="store_true",
                   help="let the run replace the files of another run (another seed, size or version) in --out; "
                        "without it such a directory is refused before any computation")
    r.add_argument("--jobs", type=_jobs, default=1, metavar="J",
                   help="run the experiments (with --paper: the figures) in J processes at once; the same "
                        "numbers as one process (default: %(default)s)")
    return p




def main(argv=None) -> int:
    """Parse ``argv`` and run the command; returns the exit status (130 when interrupted)."""
    from .reproduce.outdir import OutError, command_line, interrupted

    p = parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    command = command_line(argv)
    try:
        if args.command == "reproduce" and args.paper:
            from .reproduce.paper import check_libsvm_dir, main_paper

            if args.only:
                p.error("--only names the book's experiments; with --paper use --figures")
            if args.libsvm_dir is not None:
                try:
                    check_libsvm_dir(args.libsvm_dir)
                except (TypeError, ValueError) as exc:
                    p.error(f"--libsvm-dir: {exc}")
            return main_paper(quick=args.quick, out=args.out, seed=args.seed, seeds=args.seeds,
                              libsvm_dir=args.libsvm_dir, figures=args.figures, jobs=args.jobs,
                              replace=args.replace, command=command)
        if args.paper is False and (args.libsvm_dir is not None or args.seeds is not None or args.figures):
            p.error("--libsvm-dir, --seeds and --figures apply to --paper only")
        if args.command == "reproduce":
            from .reproduce import main_reproduce

            return main_reproduce(args.only, config="quick" if args.quick else "full", out=args.out,
                                  seed=args.seed, tolerance=args.tolerance, jobs=args.jobs, replace=args.replace,
                                  command=command)
    except OutError as exc:  # raised before any computation
        p.error(str(exc))
    except KeyboardInterrupt:
        return interrupted()
    return 2  # pragma: no cover  (argparse rejects other commands)


if __name__ == "__main__":
    sys.exit(main())

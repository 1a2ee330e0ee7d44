"""The command line of the MPI job: the problems it builds, its flags and their checks.

``mpiexec -n K python -m blockcd.mpi`` parses its arguments here, identically on
every rank and without messages: :func:`build_problem` (also used by notebooks
and tests to rebuild a job's problem), the parser and the checked configuration.
The message formats are :mod:`blockcd.mpi.wire`; the rank programs
:mod:`blockcd.mpi.ranks`.
"""


import argparse
import math
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import problems as _problems
from .. import regularizers as _regularizers
from .._validate import check_choice, check_float, check_int
from ..arguments import Setup, setup
from . import usermethod

#: problems the command line can build, and the options each accepts
PROBLEMS = {
    "synthetic": ("rows_per_worker", "d", "loss", "cond", "heterogeneity", "interpolating", "noise",
                  "lam", "split", "data_seed", "reg", "nonconvex"),
    "breast-cancer": ("lam", "split", "data_seed", "reg", "nonconvex"),
    "digits": ("lam", "split", "data_seed", "reg", "nonconvex"),
    "libsvm": ("path", "loss", "lam", "split", "data_seed", "n_features", "reg", "nonconvex"),
    # your own arrays, saved by blockcd.problems.save_arrays: each worker rank reads only its rows
    "arrays": ("path", "loss", "lam", "split", "data_seed", "reg"),
}
#: a set-up step still running after this many seconds says so on standard error (and its time when done)
PROGRESS_AFTER = 3.0
#: exit status of invalid arguments (as argparse) and of a failed or stalled job
EXIT_USAGE = 2
EXIT_FAILED = 1
EXIT_TIMEOUT = 124



class UsageError(ValueError):
    """An invalid command line (raised identically on every rank)."""


# ---------------------------------------------------------------- problems
@contextmanager
def progress(what: str, show: bool = True, after: float | None = None):
    """Say on standard error that the set-up step ``what`` is still running once it has taken
    ``after`` seconds (default :data:`PROGRESS_AFTER`), and how long it took when it ends; a
    quicker step prints nothing.  ``show=False`` prints nothing at all."""
    after = PROGRESS_AFTER if after is None else after
    if not show:
        yield
        return
    t0 = time.perf_counter()
    fired = threading.Event()

    def say():
        fired.set()
        print(f"blockcd.mpi: {what} ...", file=sys.stderr, flush=True)

    timer = threading.Timer(after, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if fired.is_set():
            print(f"blockcd.mpi: {what}: done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)


def build_problem(name: str, n_workers: int, *, worker: int | None = None, **options: Any) -> _problems.Problem:
    """Build the problem a ``blockcd.mpi`` job runs on, as every rank does.

    ``name`` is one of ``PROBLEMS`` (``'synthetic'``, ``'breast-cancer'``,
    ``'digits'``, ``'libsvm'``, ``'arrays'``: a file of
    :func:`blockcd.problems.save_arrays` at ``path``, ridge by default); ``options`` are that builder's keyword
    arguments, with ``data_seed`` for its ``seed`` (the run's ``seed`` drives
    the block choices, as in :func:`blockcd.run`).  Options left at ``None``
    take the builder's default.  Use it to build, in a notebook or a test, the
    same problem an MPI job with ``n_workers = K - 1`` ran on.

    ``nonconvex=w`` (``--nonconvex W``) adds the non-convex term
    w sum_j x_j^2/(1 + x_j^2) of :func:`blockcd.problems.nonconvex` to every f_i,
    keeping each worker's rows (IS-SGD only, chapter 5's "Without convexity").

    ``worker=i`` (``'arrays'`` only; a worker rank passes it) reads only worker i's rows from the
    file (:func:`blockcd.problems.from_arrays`): the result serves ``.worker(i)`` and nothing else.

    Raises
    ------
    ValueError
        for an unknown problem name or an option that the problem does not take.
    """
    name = check_choice("problem", name, tuple(PROBLEMS))
    n_workers = check_int("n_workers", n_workers, 1)
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    unknown = [k for k in given if k not in PROBLEMS[name]]
    if unknown:
        flags = ", ".join("--" + k.replace("_", "-") for k in unknown)
        allowed = ", ".join("--" + k.replace("_", "-") for k in PROBLEMS[name])
        verb = "does" if len(unknown) == 1 else "do"
        raise ValueError(f"{flags} {verb} not apply to --problem {name} (it takes {allowed})")
    kw = dict(given)
    w = kw.pop("nonconvex", None)
    if w is not None:
        if "reg" in kw:
            raise ValueError("--nonconvex takes no --reg: the methods with a prox step have a convex theory only")
        return _with_nonconvex(build_problem(name, n_workers, **{k: v for k, v in given.items() if k != "nonconvex"}),
                               check_float("--nonconvex", w, positive=True))
    if "data_seed" in kw:
        kw["seed"] = kw.pop("data_seed")
    if isinstance(kw.get("reg"), str):  # the command line's KIND:WEIGHT
        kw["reg"] = _regularizers.parse(kw["reg"])
    if name == "synthetic":
        rows = kw.pop("rows_per_worker", 50)
        d = kw.pop("d", 40)
        return _problems.synthetic(n_workers, rows, d, **kw)
    if name == "breast-cancer":
        return _problems.breast_cancer(n_workers, **kw)
    if name == "digits":
        return _problems.digits(n_workers, **kw)
    if name == "arrays":
        if "path" not in kw:
            raise ValueError("--problem arrays needs --path FILE (an .npz or .npy of blockcd.problems.save_arrays, "
                             "readable on every rank)")
        path = kw.pop("path")
        if not Path(path).is_file():
            raise ValueError(f"--path {path!r} is not a readable file")
        return _problems.from_arrays(path, n_workers=n_workers, worker=worker, **kw)
    if worker is not None:
        raise ValueError(f"worker applies to --problem arrays only, not to --problem {name}")
    if "path" not in kw:
        raise ValueError("--problem libsvm needs --path FILE (a LIBSVM/svmlight file readable on every rank)")
    path = kw.pop("path")
    if not Path(path).is_file():
        raise ValueError(f"--path {path!r} is not a readable file")
    return _problems.load_libsvm(path, n_workers=n_workers, **kw)


def _with_nonconvex(p: _problems.Problem, w: float) -> _problems.Problem:
    """``p`` with the term w sum_j x_j^2/(1 + x_j^2) in every f_i, each worker keeping its rows."""
    if p.split == "identical":
        A, t = p.worker(0).A, p.worker(0).t
    else:
        parts = [p.worker(i) for i in range(p.n)]
        A = sp.vstack([q.A for q in parts], format="csr") if p.sparse else np.vstack([q.A for q in parts])
        t = np.concatenate([q.t for q in parts])
    q = _problems.nonconvex(A, t, n_workers=p.n, w=w, loss=p.loss, lam=p.lam,
                            split="identical" if p.split == "identical" else "contiguous",
                            name=f"{p.name}, non-convex (w = {w:g})")
    if q.split != "identical" and not np.array_equal(q.sizes, p.sizes):
        raise ValueError(f"the non-convex problem splits the rows as {q.sizes.tolist()}, not as {p.sizes.tolist()}")
    return q


def worker_rows(problem: _problems.Problem, i: int):
    """Worker i's own rows ``A_i`` and targets ``t_i``: ``problem.worker(i)``'s (chapter 10)."""
    if not isinstance(problem, _problems.Problem):
        raise TypeError(f"problem must be a blockcd Problem, got {type(problem).__name__}")
    w = problem.worker(i)
    return w.A, w.t


# ---------------------------------------------------------------- command line
class _Parser(argparse.ArgumentParser):
    """Raises on errors and prints help on one rank only (``show``), so K ranks do not print K copies."""

    show = True

    def error(self, message):
        raise UsageError(message)

    def _print_message(self, message, file=None):
        if self.show:
            super()._print_message(message, file)


class _Defaults(argparse.HelpFormatter):
    """``--help`` shows each flag's default where it has one (not for None, False or an empty list)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if not (default is None or default is False or default == [] or default == argparse.SUPPRESS
                or "%(default)" in text):
            text += " (default: %(default)s)"
        return text


def _fail_at(text: str):
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("raise", "hang")):
            raise ValueError
        return int(parts[0]), int(parts[1]), parts[2] if len(parts) == 3 else "raise"
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RANK:ITERATION[:raise|hang], got {text!r}") from None


def _step(text: str):
    if text == "decreasing":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'decreasing', got {text!r}") from None


def _slow(text: str):
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        rank, seconds = int(parts[0]), float(parts[1])
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError
        return rank, seconds
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RANK:SECONDS (seconds >= 0), got {text!r}") from None


def _parser(show: bool = True) -> argparse.ArgumentParser:
    p = _Parser(
        prog="mpiexec -n K python -m blockcd.mpi", formatter_class=_Defaults,
        description="Run a method of blockcd on MPI: rank 0 is the master, ranks 1..K-1 the n = K-1 "
        "workers. Method arguments are those of blockcd.run.",
    )
    g = p.add_argument_group("method (as blockcd.run)")
    g.add_argument("--method", required=True, help="ibcd, is-sgd, isega, is-saga, is-asgd, ibgd, isaga-local, "
                   "isaga-shared, is-sgd-async (aliases gd, dense, sgd, saga, asgd; the dense method is tau = m), "
                   "or a rule of your own by its module path, package.module:Name (a blockcd.rules.Rule that every "
                   "rank imports: installed or on PYTHONPATH)")
    g.add_argument("--m", type=int, required=True, help="number of blocks, 1 <= m <= d")
    g.add_argument("--tau", type=int, required=True, help="blocks each worker sends per round, 1 <= tau <= m")
    g.add_argument("--step", type=_step, default=None,
                   help="step size (is-asgd: eta), or 'decreasing' (is-sgd: the theory's schedule 1/(a + c k)); "
                   "default: the theory's constant step")
    g.add_argument("--iters", type=int, required=True,
                   help="rounds; for is-sgd-async, messages the master applies (arrivals)")
    g.add_argument("--seed", type=int, default=0, help="seed of the block choices and minibatches")
    g.add_argument("--sampling", default="independent", help="independent or shared ('cd': shared)")
    g.add_argument("--batch", type=int, default=None, help="minibatch size of is-sgd and is-saga (default 1)")
    g.add_argument("--x0", default=None, help=".npy file with the starting point (default: zeros)")
    g.add_argument("--send-indices", action="store_true",
                   help="send each worker's block indices (ceil(log2 m) bits each) instead of regenerating them")
    q = p.add_argument_group("problem (built on every rank; workers keep their own rows)")
    q.add_argument("--problem", default="synthetic", help="synthetic, breast-cancer, digits, libsvm, or arrays (your "
                   "own A and b: an .npz or .npy written by blockcd.problems.save_arrays; each worker reads its rows)")
    q.add_argument("--rows-per-worker", type=int, default=None)
    q.add_argument("--d", type=int, default=None)
    q.add_argument("--loss", default=None, help="ridge or logistic")
    q.add_argument("--cond", type=float, default=None)
    q.add_argument("--heterogeneity", type=float, default=None)
    q.add_argument("--interpolating", action="store_true")
    q.add_argument("--noise", type=float, default=None)
    q.add_argument("--lam", type=float, default=None)
    q.add_argument("--split", default=None, help="iid, sorted, identical (alias shared: every worker reads all "
                   "rows, as isaga-shared needs) or contiguous")
    q.add_argument("--data-seed", type=int, default=None, help="seed of the data and of the split")
    q.add_argument("--path", default=None, help="LIBSVM file (--problem libsvm), or the .npz/.npy file of "
                   "blockcd.problems.save_arrays (--problem arrays)")
    q.add_argument("--n-features", type=int, default=None)
    q.add_argument("--nonconvex", type=float, default=None, metavar="W",
                   help="add w sum_j x_j^2/(1 + x_j^2) to every f_i (a non-convex problem; is-sgd only)")
    q.add_argument("--reg", default=None, help="regulariser KIND:WEIGHT, l1:W or l2norm:W (isega and "
                   "is-sgd-async: the prox is the master's)")
    o = p.add_argument_group("output and faults")
    o.add_argument("--out", default=None, help="history file to write (.npz), readable by blockcd.History.load")
    o.add_argument("--quiet", action="store_true", help="do not print the summary line")
    o.add_argument("--timeout", type=float, default=None,
                   help="abort the job, naming the rank and iteration, when one iteration takes longer than this "
                   "many seconds (0: never; default: 100 times the slowest round so far, at least 120 s)")
    o.add_argument("--fail-at", type=_fail_at, default=None, metavar="RANK:ITER[:raise|hang]",
                   help="for testing the fault handling: make RANK raise (or hang) at iteration ITER")
    o.add_argument("--slow", type=_slow, action="append", default=[], metavar="RANK:SECONDS",
                   help="make worker rank RANK a straggler: it sleeps SECONDS before each gradient (repeatable)")
    o.add_argument("--max-delay", type=int, default=None, metavar="M",
                   help="is-sgd-async: abort, naming the rank, when a worker's message is more than M arrivals late")
    p.show = show
    return p


@dataclass
class _Config:
    """The command line: the run's arguments (``run``, checked by :func:`blockcd.arguments.setup` as
    :func:`blockcd.run` checks them: ``cfg.m``, ``cfg.tau``, ``cfg.step``, ... read them) and the job's own."""

    run: Setup
    problem_name: str
    problem_options: dict
    out: Path | None
    quiet: bool
    timeout: float | None
    fail_at: tuple | None
    slow: dict
    max_delay: int | None

    @property
    def method(self) -> str:
        return self.run.method.name

    def __getattr__(self, name):
        if name == "run":
            raise AttributeError(name)
        return getattr(self.run, name)


def _as_flag(exc: Exception, parser: argparse.ArgumentParser, **names: str) -> Exception:
    """``exc`` with a leading Python argument name (``lam must be >= 0``) written as its flag (``--lam``)."""
    import re

    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    flags.update(names)
    text = str(exc)
    match = re.match(r"([a-z][a-z_0-9]*)(?= (must|does|is|applies|holds|takes|needs))", text)
    if match and match.group(1) in flags:
        text = flags[match.group(1)] + text[match.end():]
        return type(exc)(text) if isinstance(exc, UsageError) else UsageError(text)
    return exc


def configure(argv: Sequence[str], ranks: int, show: bool = True, rank: int | None = None):
    """Parse and check the command line and build the problem: the same on every rank, no messages
    (``--problem arrays``: a worker ``rank`` reads only its own rows).  An error that names a Python
    argument names its flag instead (``--lam``)."""
    parser = _parser(show)
    try:
        return _configure(parser, argv, ranks, show, rank)
    except (ValueError, TypeError) as exc:
        raise _as_flag(exc, parser) from None


def _configure(parser, argv, ranks, show, rank):
    a = parser.parse_args(list(argv))
    if ranks < 2:
        raise UsageError(
            f"needs at least 2 MPI ranks (one master, one worker), got {ranks}; "
            "run it as: mpiexec -n K python -m blockcd.mpi ..."
        )
    n = ranks - 1
    if not isinstance(a.method, str):
        raise UsageError("--method is required")
    options = {k: getattr(a, k) for k in PROBLEMS["synthetic"] + PROBLEMS["libsvm"]}
    own = {"worker": rank - 1} if a.problem == "arrays" and rank else {}
    where = f"reading {a.path}" if a.path is not None else f"building the {a.problem} problem"
    with progress(f"{where} ({'every rank' if not own else 'each worker its rows, the master all'})",
                  show and not a.quiet):
        try:
            problem = build_problem(a.problem, n, **own, **options)
        except (ValueError, TypeError) as exc:  # the builder's seed is the data's
            raise _as_flag(exc, parser, seed="--data-seed") from None
    d = problem.d
    # a rule of the user's, by its module path: every rank imports it (usermethod)
    method = usermethod.load_method(a.method) if usermethod.is_path(a.method) else a.method
    # the checks of blockcd.run, once for every method; the theory's step is the master's (_master_setup)
    s = setup(problem, method, m=a.m, tau=a.tau, step=a.step, iters=a.iters, seed=a.seed, sampling=a.sampling,
              batch=a.batch, send_indices=bool(a.send_indices), theory_step=False)
    if s.method.rule.own_blocks and s.method.asynchronous:
        raise UsageError(f"{s.method.name!r} chooses its own blocks (own_blocks), which the asynchronous ranks "
                         "do not support: they regenerate every message's blocks from the seed")
    if s.sampling == "importance":
        raise UsageError("--sampling importance (coordinate descent's variable-size block sets) runs in the "
                         "simulator and the reference only; the MPI ranks take 'cd' with --sampling shared")
    timeout = None if a.timeout is None else check_float("--timeout", a.timeout, nonnegative=True)
    if a.x0 is None:
        x0 = np.zeros(d)
    else:
        x0 = np.load(a.x0, allow_pickle=False)
        if x0.shape != (d,) or not np.all(np.isfinite(x0)):
            raise UsageError(f"--x0 must hold a finite vector of shape ({d},), got shape {x0.shape}")
        x0 = x0.astype(np.float64)
    if a.fail_at is not None:
        r, k, _ = a.fail_at
        check_int("--fail-at rank", r, 0, ranks - 1)
        check_int("--fail-at iteration", k, 0, s.iters - 1)
    slow = {}
    for r, sec in a.slow:
        slow[check_int("--slow rank (a worker)", r, 1, ranks - 1)] = sec
    max_delay = None
    if a.max_delay is not None:
        if not s.method.asynchronous:
            raise UsageError(f"--max-delay applies to is-sgd-async only, not to {s.method.name!r}")
        max_delay = check_int("--max-delay", a.max_delay, n - 1)
    out = None
    if a.out is not None:
        out = Path(a.out)
        if out.suffix != ".npz":
            raise UsageError(f"--out must end in .npz, got {a.out!r}")
        if not out.parent.is_dir():
            raise UsageError(f"--out: directory {str(out.parent)!r} does not exist")
    spec = {k: v for k, v in options.items() if v is not None and v is not False}
    s.x0 = x0
    return _Config(s, a.problem, spec, out, bool(a.quiet), timeout, a.fail_at, slow, max_delay)

"""The book's methods on MPI: one master rank, n = K - 1 worker ranks, real messages.

Run it as ``mpiexec -n K python -m blockcd.mpi --method isega --m 40 --tau 10
--iters 200 --out run.npz`` (chapter 10, "Running on a real cluster").  Rank 0
is the master, ranks 1..K-1 are the workers 0..n-1 of the simulator.  Every
method of :func:`blockcd.run` runs with the same arguments and, for the same
problem and seed, the same iterates up to the order of floating-point sums.

What each rank does:

* **Data.**  Every rank builds the problem from the command line (a seeded
  synthetic problem, a bundled data set or a LIBSVM file); a worker keeps only
  its own rows and drops the rest, so no data travel.  The master keeps the
  whole problem for one purpose only, *evaluation*: x*, f(x*), and f(x^k) for
  the history's ``gap``.  That work is timed apart from the method's own.
* **Messages.**  Each round the master broadcasts the iterate (IS-ASGD: the
  point y) and each worker sends the values of its tau blocks of
  ``g_i`` (ISEGA, IS-SAGA: of ``g_i - h_i``), unscaled; the master applies
  m/(tau n).  Block indices are *not* sent: worker i's blocks at iteration k
  are a function of (seed, i, k) alone, which the worker evaluates with
  :meth:`blockcd.blocks.BlockSampler.worker_blocks` and the master, for all
  workers in one draw, with :meth:`~blockcd.blocks.BlockSampler.masks`.
  ``--send-indices`` sends them instead, packed in ceil(log2 m) bits each
  (:func:`pack_indices`), and counts those bytes too.
* **Counting.**  Every message is counted as it is sent (bytes up per worker
  and per round, bytes down per round), and each rank splits its wall time into
  compute and communication (time inside MPI calls, which includes waiting for
  the slowest peer).  The master writes a :class:`blockcd.History` file
  (``History.load`` reads it) whose extra ``mpi_*`` arrays hold the
  measurements (:func:`load_measurements`).
* **Faults.**  Arguments are checked on every rank, identically, before any
  message; a rank that raises prints its rank and the error and aborts the job
  (``MPI_Abort``, non-zero exit); ``--timeout`` aborts a job whose iteration
  stalls.

Importing this module does not import :mod:`mpi4py`; only the ranks started by
``mpiexec`` do.  The helpers :func:`mpiexec`, :func:`launch`,
:func:`build_problem` and :func:`load_measurements` run in an ordinary process
(a notebook, a test).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import problems as _problems
from . import theory
from ._validate import check_choice, check_float, check_int, check_seed
from .blocks import PURPOSE_SAMPLES, SAMPLINGS, BlockSampler, CounterStream, partition
from .methods import ALIASES, BLOWUP, METHODS, DivergenceError, History

__all__ = [
    "PROBLEMS",
    "Measurements",
    "build_problem",
    "launch",
    "load_measurements",
    "main",
    "mpiexec",
    "pack_indices",
    "unpack_indices",
    "worker_rows",
]

#: problems the command line can build, and the options each accepts
PROBLEMS = {
    "synthetic": ("rows_per_worker", "d", "loss", "cond", "heterogeneity", "interpolating", "noise",
                  "lam", "split", "data_seed"),
    "breast-cancer": ("lam", "split", "data_seed"),
    "digits": ("lam", "split", "data_seed"),
    "libsvm": ("path", "loss", "lam", "split", "data_seed", "n_features"),
}
#: exit status of invalid arguments (as argparse) and of a failed or stalled job
EXIT_USAGE = 2
EXIT_FAILED = 1
EXIT_TIMEOUT = 124
#: message tags: values, packed indices
_TAG_VALUES = 1
_TAG_INDICES = 2


class UsageError(ValueError):
    """An invalid command line (raised identically on every rank)."""


# ---------------------------------------------------------------- problems
def build_problem(name: str, n_workers: int, **options: Any) -> _problems.Problem:
    """Build the problem a ``blockcd.mpi`` job runs on, as every rank does.

    ``name`` is one of :data:`PROBLEMS` (``'synthetic'``, ``'breast-cancer'``,
    ``'digits'``, ``'libsvm'``); ``options`` are that builder's keyword
    arguments, with ``data_seed`` for its ``seed`` (the run's ``seed`` drives
    the block choices, as in :func:`blockcd.run`).  Options left at ``None``
    take the builder's default.  Use it to build, in a notebook or a test, the
    same problem an MPI job with ``n_workers = K - 1`` ran on.

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
    if "data_seed" in kw:
        kw["seed"] = kw.pop("data_seed")
    if name == "synthetic":
        rows = kw.pop("rows_per_worker", 50)
        d = kw.pop("d", 40)
        return _problems.synthetic(n_workers, rows, d, **kw)
    if name == "breast-cancer":
        return _problems.breast_cancer(n_workers, **kw)
    if name == "digits":
        return _problems.digits(n_workers, **kw)
    if "path" not in kw:
        raise ValueError("--problem libsvm needs --path FILE (a LIBSVM/svmlight file readable on every rank)")
    path = kw.pop("path")
    if not Path(path).is_file():
        raise ValueError(f"--path {path!r} is not a readable file")
    return _problems.load_libsvm(path, n_workers=n_workers, **kw)


def worker_rows(problem: _problems.Problem, i: int):
    r"""Worker i's own data: the rows ``A_i`` and targets ``t_i`` of its local function.

    :math:`f_i(x) = \frac{1}{l_i}\sum_{j} \phi(a_j^\top x; t_j) + \frac{\lambda}{2}\|x\|^2`
    (chapter 10), copied out of the problem's storage, with targets already
    mapped to -1/+1 for logistic regression.  With ``split='identical'`` every
    worker holds all rows.  An MPI worker calls this and drops the problem.

    Parameters
    ----------
    problem : Problem
    i : int, 0 <= i < problem.n

    Returns
    -------
    (A_i, t_i) : ndarray or CSR matrix of shape (l_i, d), and ndarray of shape (l_i,)
    """
    if not isinstance(problem, _problems.Problem):
        raise TypeError(f"problem must be a blockcd Problem, got {type(problem).__name__}")
    i = check_int("i", i, 0, problem.n - 1)
    layout = problem._layout
    if layout == "shared":
        A, t = problem._A2, problem._t
    elif layout == "sparse":
        s, e = problem.offsets[i], problem.offsets[i + 1]
        A, t = problem._A2[s:e], problem._t[s:e]
    else:  # padded: (n, l_max, d) with zero-weight padding rows after row l_i
        li, lm = int(problem.sizes[i]), problem.l_max
        A, t = problem._A3[i, :li], problem._t.reshape(problem.n, lm)[i, :li]
    A = A.copy() if sp.issparse(A) else np.array(A)
    return A, np.array(t)


class _Shard:
    """One worker's oracle: its local gradient, minibatch and SAGA estimates, from its rows only."""

    def __init__(self, problem, i):
        self.A, self.t = worker_rows(problem, i)
        self.l = int(problem.sizes[i])
        self.w = 1.0 / self.l
        self.lam = problem.lam
        self.ridge = problem.loss == "ridge"
        self.d = problem.d

    def dphi(self, z, t):
        if self.ridge:
            return z - t
        return -t * np.exp(-np.logaddexp(0.0, t * z))

    def _rows(self, idx):
        Ab = self.A[idx]
        return Ab.toarray() if sp.issparse(Ab) else Ab

    def _combine(self, coef, Ab):
        return np.asarray(coef @ Ab).ravel()

    def grad(self, x):
        """grad f_i(x)."""
        c = self.w * self.dphi(self.A @ x, self.t)
        g = np.asarray(self.A.T @ c).ravel()
        return g + self.lam * x if self.lam else g

    def minibatch(self, x, idx):
        """The b-minibatch gradient over local rows idx."""
        Ab = self._rows(idx)
        s = self.dphi(Ab @ x, self.t[idx])
        g = self._combine(s / idx.size, Ab)
        return g + self.lam * x if self.lam else g

    def saga_init(self, x):
        """SAGA table at x: one scalar phi'(a_j^T x) per local row, and abar_i."""
        self.alpha = self.dphi(self.A @ x, self.t)
        self.abar = np.asarray(self.A.T @ (self.w * self.alpha)).ravel()

    def saga(self, x, idx):
        """The local SAGA estimate at x with rows idx; refreshes the table."""
        Ab = self._rows(idx)
        s = self.dphi(Ab @ x, self.t[idx])
        old = self.alpha[idx]
        g = self._combine((s - old) / idx.size, Ab) + self.abar
        if self.lam:
            g = g + self.lam * x
        self.alpha[idx] = s
        self.abar = self.abar + self._combine((s - old) / self.l, Ab)
        return g


def _local_batch(stream: CounterStream, k: int, i: int, b: int, li: int, l_max: int) -> np.ndarray:
    """Worker i's minibatch at iteration k, as the simulator's ``_Minibatcher.local`` draws it."""
    u = stream.worker_uniforms(k, i)
    if b == 1:
        return np.array([min(int(u[0] * li), li - 1)])
    if li < l_max:
        u = np.where(np.arange(l_max) >= li, 2.0, u)
    return np.argpartition(u, b - 1)[:b]


# ---------------------------------------------------------------- command line
class _Parser(argparse.ArgumentParser):
    """Raises on errors and prints help on one rank only (``show``), so K ranks do not print K copies."""

    show = True

    def error(self, message):
        raise UsageError(message)

    def _print_message(self, message, file=None):
        if self.show:
            super()._print_message(message, file)


def _fail_at(text: str):
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("raise", "hang")):
            raise ValueError
        return int(parts[0]), int(parts[1]), parts[2] if len(parts) == 3 else "raise"
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RANK:ITERATION[:raise|hang], got {text!r}") from None


def _parser(show: bool = True) -> argparse.ArgumentParser:
    p = _Parser(
        prog="mpiexec -n K python -m blockcd.mpi",
        description="Run a method of blockcd on MPI: rank 0 is the master, ranks 1..K-1 the n = K-1 "
        "workers. Method arguments are those of blockcd.run.",
    )
    g = p.add_argument_group("method (as blockcd.run)")
    g.add_argument("--method", required=True, help="ibcd, is-sgd, isega, is-saga, is-asgd (aliases gd, dense, "
                   "sgd, saga, asgd; the dense method is tau = m)")
    g.add_argument("--m", type=int, required=True, help="number of blocks, 1 <= m <= d")
    g.add_argument("--tau", type=int, required=True, help="blocks each worker sends per round, 1 <= tau <= m")
    g.add_argument("--step", type=float, default=None, help="step size (is-asgd: eta); default: the theory's")
    g.add_argument("--iters", type=int, required=True)
    g.add_argument("--seed", type=int, default=0, help="seed of the block choices and minibatches")
    g.add_argument("--sampling", default="independent", help="independent or shared")
    g.add_argument("--batch", type=int, default=None, help="minibatch size of is-sgd and is-saga (default 1)")
    g.add_argument("--x0", default=None, help=".npy file with the starting point (default: zeros)")
    g.add_argument("--send-indices", action="store_true",
                   help="send each worker's block indices (ceil(log2 m) bits each) instead of regenerating them")
    q = p.add_argument_group("problem (built on every rank; workers keep their own rows)")
    q.add_argument("--problem", default="synthetic", help="synthetic, breast-cancer, digits or libsvm")
    q.add_argument("--rows-per-worker", type=int, default=None)
    q.add_argument("--d", type=int, default=None)
    q.add_argument("--loss", default=None, help="ridge or logistic")
    q.add_argument("--cond", type=float, default=None)
    q.add_argument("--heterogeneity", type=float, default=None)
    q.add_argument("--interpolating", action="store_true")
    q.add_argument("--noise", type=float, default=None)
    q.add_argument("--lam", type=float, default=None)
    q.add_argument("--split", default=None, help="iid, sorted, identical or contiguous")
    q.add_argument("--data-seed", type=int, default=None, help="seed of the data and of the split")
    q.add_argument("--path", default=None, help="LIBSVM file (--problem libsvm)")
    q.add_argument("--n-features", type=int, default=None)
    o = p.add_argument_group("output and faults")
    o.add_argument("--out", default=None, help="history file to write (.npz), readable by blockcd.History.load")
    o.add_argument("--quiet", action="store_true", help="do not print the summary line")
    o.add_argument("--timeout", type=float, default=0.0,
                   help="abort the job when one iteration takes longer than this many seconds (0: never)")
    o.add_argument("--fail-at", type=_fail_at, default=None, metavar="RANK:ITER[:raise|hang]",
                   help="for testing the fault handling: make RANK raise (or hang) at iteration ITER")
    p.show = show
    return p


@dataclass
class _Config:
    method: str
    m: int
    tau: int
    step: float | None
    iters: int
    seed: int
    sampling: str
    batch: int | None
    x0: np.ndarray
    send_indices: bool
    problem_name: str
    problem_options: dict
    out: Path | None
    quiet: bool
    timeout: float
    fail_at: tuple | None


def _configure(argv: Sequence[str], ranks: int, show: bool = True):
    """Parse and check the command line and build the problem: the same on every rank, no messages."""
    a = _parser(show).parse_args(list(argv))
    if ranks < 2:
        raise UsageError(
            f"needs at least 2 MPI ranks (one master, one worker), got {ranks}; "
            "run it as: mpiexec -n K python -m blockcd.mpi ..."
        )
    n = ranks - 1
    if not isinstance(a.method, str):
        raise UsageError("--method is required")
    method = check_choice("method", ALIASES.get(a.method.lower(), a.method.lower()), METHODS)
    options = {k: getattr(a, k) for k in PROBLEMS["synthetic"] + PROBLEMS["libsvm"]}
    problem = build_problem(a.problem, n, **options)
    d = problem.d
    m = check_int("m", a.m, 1, d)
    tau = check_int("tau", a.tau, 1, m)
    iters = check_int("iters", a.iters, 1)
    seed = check_seed("seed", a.seed)
    sampling = check_choice("sampling", a.sampling, SAMPLINGS)
    if method in ("is-sgd", "is-saga"):
        batch = 1 if a.batch is None else check_int("batch", a.batch, 1, int(problem.sizes.min()))
    elif a.batch is not None:
        raise UsageError(f"--batch applies to is-sgd and is-saga only, not to {method}")
    else:
        batch = None
    step = None if a.step is None else check_float("step", a.step, positive=True)
    timeout = check_float("timeout", a.timeout, nonnegative=True)
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
        check_int("--fail-at iteration", k, 0, iters - 1)
    out = None
    if a.out is not None:
        out = Path(a.out)
        if out.suffix != ".npz":
            raise UsageError(f"--out must end in .npz, got {a.out!r}")
        if not out.parent.is_dir():
            raise UsageError(f"--out: directory {str(out.parent)!r} does not exist")
    spec = {k: v for k, v in options.items() if v is not None and v is not False}
    cfg = _Config(method, m, tau, step, iters, seed, sampling, batch, x0, bool(a.send_indices),
                  a.problem, spec, out, bool(a.quiet), timeout, a.fail_at)
    return cfg, problem


# ---------------------------------------------------------------- messages
def _index_bits(m: int) -> int:
    return math.ceil(math.log2(m)) if m > 1 else 1


def pack_indices(idx, m: int) -> np.ndarray:
    r"""Pack block indices into :math:`\lceil \tau \lceil\log_2 m\rceil / 8\rceil` bytes.

    The message ``--send-indices`` adds to a worker's values (chapter 10): each
    index takes :math:`\lceil\log_2 m\rceil` bits (least significant first),
    the bits of all tau indices are concatenated and padded to whole bytes, so
    the size is that of :func:`blockcd.theory.index_bits` rounded up to bytes.

    Parameters
    ----------
    idx : array of ints, shape (tau,)
        Block indices, each in ``0 .. m - 1``.
    m : int >= 1
        Number of blocks.

    Returns
    -------
    ndarray of uint8
    """
    m = check_int("m", m, 1)
    idx = np.asarray(idx)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"idx must be a 1-D array of integers, got {idx.dtype} of shape {idx.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= m):
        raise ValueError(f"idx must hold block indices in [0, {m - 1}]")
    bits = _index_bits(m)
    b = (idx.astype(np.int64)[:, None] >> np.arange(bits)) & 1
    return np.packbits(b.astype(np.uint8).ravel())


def unpack_indices(buf, tau: int, m: int) -> np.ndarray:
    """The tau block indices packed by :func:`pack_indices` (int64 array of shape (tau,)).

    Raises ``ValueError`` if ``buf`` is shorter than tau ceil(log2 m) bits.
    """
    m = check_int("m", m, 1)
    tau = check_int("tau", tau, 1, m)
    buf = np.asarray(buf, dtype=np.uint8)
    bits = _index_bits(m)
    if buf.size * 8 < tau * bits:
        raise ValueError(f"buf holds {buf.size} bytes, fewer than the {tau * bits} bits of {tau} indices")
    b = np.unpackbits(buf)[: tau * bits].reshape(tau, bits).astype(np.int64)
    return b @ (1 << np.arange(bits))


def _coords(blocks, chosen):
    """Coordinates of the chosen blocks (sorted), or None for all blocks."""
    if chosen is None:
        return None
    if blocks.equal:
        bs = blocks.d // blocks.m
        return (chosen[:, None] * bs + np.arange(bs)).ravel()
    keep = np.zeros(blocks.m, dtype=bool)
    keep[chosen] = True
    return np.flatnonzero(keep[blocks.block_of])


class _Clock:
    """Splits a rank's wall time per iteration into compute and communication."""

    def __init__(self, iters):
        self.compute = np.zeros(iters)
        self.comm = np.zeros(iters)
        self.last = time.perf_counter()

    def lap(self, kind: np.ndarray, k: int) -> None:
        now = time.perf_counter()
        kind[k] += now - self.last
        self.last = now


class _Watchdog:
    """Aborts the job when no iteration completes within ``timeout`` seconds."""

    def __init__(self, comm, rank, role, timeout):
        self.comm, self.rank, self.role, self.timeout = comm, rank, role, timeout
        self.k = -1
        self.beat = time.monotonic()
        self.done = threading.Event()
        if timeout > 0:
            threading.Thread(target=self._watch, daemon=True).start()

    def tick(self, k):
        self.k = k
        self.beat = time.monotonic()

    def _watch(self):
        while not self.done.wait(min(1.0, self.timeout / 10)):
            if time.monotonic() - self.beat > self.timeout:
                _say(f"rank {self.rank} ({self.role}): no progress for {self.timeout:g} s in iteration "
                     f"{self.k} (--timeout); aborting the job")
                self.comm.Abort(EXIT_TIMEOUT)


def _say(msg: str) -> None:
    print(f"blockcd.mpi: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the ranks
def _worker(comm, cfg, shard, i, n, sizes, l_max, watchdog, fail):
    """Worker i (rank i + 1): receive the point, send tau blocks of the local estimate."""
    d = shard.d
    blocks = partition(d, cfg.m)
    sampler = BlockSampler(n, cfg.m, cfg.tau, cfg.seed, cfg.sampling)
    dense = cfg.tau == cfg.m
    method = cfg.method
    stream = None
    if method in ("is-sgd", "is-saga"):
        width = 1 if cfg.batch == 1 else l_max
        stream = CounterStream(cfg.seed, PURPOSE_SAMPLES, n, width)
    shifted = method in ("isega", "is-saga")
    h = np.zeros(d) if shifted else None
    if method == "is-saga":
        shard.saga_init(cfg.x0)
    x = np.empty(d)
    up = np.zeros(cfg.iters)
    clock = _Clock(cfg.iters)
    for k in range(cfg.iters):
        watchdog.tick(k)
        comm.Bcast(x, root=0)
        clock.lap(clock.comm, k)
        if fail is not None and fail[1] == k:
            _inject(fail)
        if method in ("ibcd", "isega", "is-asgd"):
            g = shard.grad(x)
        else:
            idx = _local_batch(stream, k, i, cfg.batch, int(sizes[i]), l_max)
            g = shard.minibatch(x, idx) if method == "is-sgd" else shard.saga(x, idx)
        D = g - h if shifted else g
        if dense:
            vals = D
        else:
            chosen = sampler.worker_blocks(k, i)
            coords = _coords(blocks, chosen)
            vals = D[coords]
            if cfg.send_indices:
                packed = pack_indices(chosen, cfg.m)
        if shifted:
            if dense:
                h += D
            else:
                h[coords] += vals
        clock.lap(clock.compute, k)
        if cfg.send_indices and not dense:
            comm.Send(packed, dest=0, tag=_TAG_INDICES)
            up[k] += packed.nbytes
        comm.Send(vals, dest=0, tag=_TAG_VALUES)
        up[k] += vals.nbytes
        clock.lap(clock.comm, k)
    return clock, up


def _inject(fail):
    rank, k, how = fail
    if how == "hang":
        while True:
            time.sleep(3600)
    raise RuntimeError(f"injected failure (--fail-at {rank}:{k})")


class _Evaluator:
    """The master's evaluation role: dist2 and gap at each iterate (not part of the method)."""

    def __init__(self, problem, cfg, step):
        self.p, self.cfg, self.step = problem, cfg, step
        self.xs, self.fs = problem.x_star, problem.f_star
        self.dist2 = np.empty(cfg.iters + 1)
        self.gap = np.empty(cfg.iters + 1)
        self.time = np.zeros(cfg.iters + 1)
        self.limit = None

    def point(self, k, x):
        t0 = time.perf_counter()
        diff = x - self.xs
        d2 = float(diff @ diff)
        self.dist2[k] = d2
        self.gap[k] = (self.p.f(x) if np.isfinite(d2) else math.nan) - self.fs
        if k == 0:
            self.limit = BLOWUP * max(d2, 1.0)
        elif not d2 <= self.limit:
            try:
                hint = "the largest step the theory allows here is " + format(
                    theory.step_size(self.p, self.cfg.method, self.cfg.m, self.cfg.tau, batch=self.cfg.batch,
                                     sampling=self.cfg.sampling), ".4g")
            except ValueError as exc:
                hint = f"the theory gives no step here ({exc})"
            raise DivergenceError(
                f"{self.cfg.method} diverged at iteration {k} (||x - x*||^2 = {d2:.3g}) "
                f"with step = {self.step:.4g}; {hint}"
            )
        self.time[k] = time.perf_counter() - t0


def _master_setup(problem, cfg):
    """The step (theory's by default) and the IS-ASGD constants; raises ValueError if none applies."""
    step = cfg.step
    if step is None:
        step = theory.step_size(problem, cfg.method, cfg.m, cfg.tau, batch=cfg.batch, sampling=cfg.sampling)
    consts = None
    if cfg.method == "is-asgd":
        consts = theory.asgd_parameters(problem, step)
    _ = problem.x_star, problem.f_star  # evaluation constants, computed before the clock starts
    return step, consts


def _master(comm, cfg, problem, step, consts, watchdog, fail):
    """The master (rank 0): broadcast the point, evaluate, regenerate the blocks, receive, aggregate, step."""
    from mpi4py import MPI

    n, d = problem.n, problem.d
    blocks = partition(d, cfg.m)
    sampler = BlockSampler(n, cfg.m, cfg.tau, cfg.seed, cfg.sampling)
    dense = cfg.tau == cfg.m
    scale = (cfg.m / cfg.tau) / n
    ev = _Evaluator(problem, cfg, step)
    shifted = cfg.method in ("isega", "is-saga")
    asgd = cfg.method == "is-asgd"
    hbar = np.zeros(d)
    x = cfg.x0.copy()
    if asgd:
        alpha, beta, gamma = consts
        w, v = x, x.copy()
    down = np.zeros(cfg.iters)
    nbytes_idx = len(pack_indices(np.zeros(cfg.tau, dtype=np.int64), cfg.m))
    idx_bufs = [np.empty(nbytes_idx, dtype=np.uint8) for _ in range(n)]
    clock = _Clock(cfg.iters)
    for k in range(cfg.iters):
        watchdog.tick(k)
        if fail is not None and fail[1] == k:
            _inject(fail)
        if asgd:
            y = alpha * v + (1.0 - alpha) * w
            point = y
        else:
            point = x
        point = np.ascontiguousarray(point)
        clock.lap(clock.compute, k)
        comm.Bcast(point, root=0)
        down[k] = point.nbytes
        clock.lap(clock.comm, k)
        # while the workers compute: evaluate x^k (timed apart) and regenerate their block choices
        ev.point(k, w if asgd else x)
        clock.last = time.perf_counter()
        if dense:
            coords = [None] * n
        elif not cfg.send_indices:
            # all n choices in one draw, as the simulator makes them; row i is
            # what worker i computed alone with worker_blocks(k, i)
            mask = sampler.masks(k)
            coords = [_coords(blocks, np.flatnonzero(mask[i])) for i in range(n)]
        clock.lap(clock.compute, k)
        if cfg.send_indices and not dense:
            MPI.Request.Waitall([comm.Irecv(idx_bufs[i], source=i + 1, tag=_TAG_INDICES) for i in range(n)])
            clock.lap(clock.comm, k)
            coords = [_coords(blocks, unpack_indices(idx_bufs[i], cfg.tau, cfg.m)) for i in range(n)]
            clock.lap(clock.compute, k)
        bufs = [np.empty(d if c is None else c.size) for c in coords]
        statuses = [MPI.Status() for _ in range(n)]
        reqs = [comm.Irecv(bufs[i], source=i + 1, tag=_TAG_VALUES) for i in range(n)]
        MPI.Request.Waitall(reqs, statuses)
        clock.lap(clock.comm, k)
        for i, st in enumerate(statuses):
            if st.Get_count(MPI.DOUBLE) != bufs[i].size:
                raise RuntimeError(f"worker {i} (rank {i + 1}) sent {st.Get_count(MPI.DOUBLE)} numbers at "
                                   f"iteration {k}, expected {bufs[i].size}")
        acc = np.zeros(d)
        for c, b in zip(coords, bufs):
            if c is None:
                acc += b
            else:
                acc[c] += b
        if asgd:
            g = acc * scale
            w = y - step * g
            v = beta * v + (1.0 - beta) * y - gamma * step * g
        elif shifted:
            g = hbar + acc * scale
            hbar = hbar + acc / n
            x = x - step * g
        else:
            x = x - step * (acc * scale)
        clock.lap(clock.compute, k)
    watchdog.tick(cfg.iters)
    x = w if asgd else x
    ev.point(cfg.iters, x)
    return clock, down, ev, x


def _history(cfg, problem, step, ev, x, up_rounds, down):
    """The simulator's History from the measured counters (cumulative, entry 0 = start)."""
    iters = cfg.iters
    k = np.arange(iters + 1)
    zero = np.zeros(1)
    return History(
        method=cfg.method, n=problem.n, d=problem.d, m=cfg.m, tau=cfg.tau, step=float(step),
        seed=cfg.seed, sampling=cfg.sampling, batch=cfg.batch,
        dist2=ev.dist2, gap=ev.gap,
        blocks_up=(k * cfg.tau).astype(float),
        bytes_up=np.concatenate((zero, np.cumsum(up_rounds.mean(axis=1)))),
        bytes_down=np.concatenate((zero, np.cumsum(down))),
        x=x,
        bytes_up_workers=up_rounds.sum(axis=0),
    )


def _save(path, hist, extras):
    hist.save(path)
    with np.load(path, allow_pickle=False) as z:
        arrays = {key: z[key] for key in z.files}
    arrays.update(extras)
    np.savez(path, **arrays)


def _run(comm, argv):
    from mpi4py import MPI

    rank, ranks = comm.Get_rank(), comm.Get_size()
    role = "master" if rank == 0 else f"worker {rank - 1}"
    t_start = time.perf_counter()
    # 1. every rank checks the command line and builds the problem on its own: no message yet
    error = None
    try:
        cfg, problem = _configure(argv, ranks, show=rank == 0)
    except SystemExit as exc:  # --help
        return exc.code or 0
    except (UsageError, ValueError, TypeError, OSError) as exc:  # OSError: a data or --x0 file
        error = exc
    # 2. the master's checks that need the whole problem (the theory's step, IS-ASGD's eta <= 1/L)
    step = consts = None
    if rank == 0 and error is None:
        try:
            step, consts = _master_setup(problem, cfg)
        except ValueError as exc:
            error = exc
    # 3. one status word per rank, summed: all ranks stop together, even if their checks disagreed
    #    (say, a data file missing on one node); the master, or else each failing rank, says why
    failed = np.zeros(ranks, dtype=np.int64)
    failed[rank] = error is not None
    comm.Allreduce(MPI.IN_PLACE, failed, op=MPI.SUM)
    if failed.any():
        if error is not None and (rank == 0 or not failed[0]):
            where = "" if rank == 0 else f"rank {rank} ({role}): "
            hint = " (see --help)" if isinstance(error, UsageError) else ""
            print(f"blockcd.mpi: error: {where}{error}{hint}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    fail = cfg.fail_at if cfg.fail_at is not None and cfg.fail_at[0] == rank else None
    if rank != 0:
        # a worker keeps its own rows and drops the rest of the problem
        shard = _Shard(problem, rank - 1)
        n, sizes, l_max = problem.n, problem.sizes.copy(), problem.l_max
        problem = None
    watchdog = _Watchdog(comm, rank, role, cfg.timeout)
    comm.Barrier()
    t_setup = time.perf_counter() - t_start
    t0 = time.perf_counter()
    if rank == 0:
        clock, down, ev, x = _master(comm, cfg, problem, step, consts, watchdog, fail)
        up = np.zeros(cfg.iters)
    else:
        clock, up = _worker(comm, cfg, shard, rank - 1, n, sizes, l_max, watchdog, fail)
    wall = time.perf_counter() - t0
    watchdog.done.set()

    # telemetry, after the run and not counted: every rank's timings and counters to the master
    row = np.concatenate((clock.compute, clock.comm, up, [t_setup, wall]))
    table = np.empty((ranks, row.size)) if rank == 0 else None
    comm.Gather(row, table, root=0)
    hosts = comm.gather(MPI.Get_processor_name(), root=0)
    if rank != 0:
        return 0
    it = cfg.iters
    compute, comm_t, up_all = table[:, :it], table[:, it:2 * it], table[1:, 2 * it:3 * it].T
    hist = _history(cfg, problem, step, ev, x, up_all, down)
    if cfg.out is not None:
        meta = {
            "ranks": ranks,
            "problem": cfg.problem_name,
            "problem_options": cfg.problem_options,
            "send_indices": cfg.send_indices,
            "argv": list(argv),
            "hosts": hosts,
            "mpi_library": MPI.Get_library_version().strip().splitlines()[0],
            "setup_seconds": table[:, 3 * it].tolist(),
            "wall_seconds": table[:, 3 * it + 1].tolist(),
        }
        _save(cfg.out, hist, {
            "mpi_meta": np.array(json.dumps(meta)),
            "mpi_compute": compute,
            "mpi_comm": comm_t,
            "mpi_eval": ev.time,
            "mpi_up": up_all,
            "mpi_down": down,
        })
    if not cfg.quiet:
        per_up = up_all.mean()
        print(f"blockcd.mpi: {cfg.method} on {ranks} ranks (n = {ranks - 1} workers), m = {cfg.m}, "
              f"tau = {cfg.tau}, {it} iterations: ||x - x*||^2 from {hist.dist2[0]:.3g} to {hist.dist2[-1]:.3g}; "
              f"{per_up:.0f} bytes up per worker and {down.mean():.0f} down per round"
              + (f"; wrote {cfg.out}" if cfg.out is not None else ""), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mpiexec -n K python -m blockcd.mpi ...``; returns the exit status.

    A rank that raises prints ``blockcd.mpi: rank R (role) failed: Error: message``
    and calls ``MPI_Abort``, which ends every rank with a non-zero status.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        from mpi4py import MPI
    except ImportError:
        _say("needs mpi4py and an MPI library: python -m pip install mpi4py mpich")
        return EXIT_USAGE
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        return _run(comm, argv)
    except BaseException as exc:  # noqa: BLE001 - any failure must end the whole job, never hang it
        role = "master" if rank == 0 else f"worker {rank - 1}"
        _say(f"rank {rank} ({role}) failed: {type(exc).__name__}: {exc}")
        comm.Abort(EXIT_FAILED)
        return EXIT_FAILED


# ---------------------------------------------------------------- launching (ordinary processes)
def mpiexec(ranks: int) -> list[str]:
    """The launcher prefix ``[mpiexec, '-n', K]`` for this Python environment.

    Uses ``$BLOCKCD_MPIEXEC`` if set (e.g. ``"srun --mpi=pmi2"`` on a Slurm
    cluster, split on spaces), else the ``mpiexec`` next to this Python (where
    the ``mpich`` wheel installs it), else the first on ``PATH``.

    Raises
    ------
    FileNotFoundError
        if no launcher is found, with the command that installs one.
    """
    ranks = check_int("ranks", ranks, 2)
    custom = os.environ.get("BLOCKCD_MPIEXEC")
    if custom:
        parts = custom.split()
        return parts + ["-n", str(ranks)]
    here = str(Path(sys.executable).parent)
    exe = shutil.which("mpiexec", path=here) or shutil.which("mpiexec")
    if exe is None:
        raise FileNotFoundError(
            "mpiexec not found next to this Python or on PATH; install MPI with "
            "`python -m pip install mpi4py mpich` (both are in requirements.txt)"
        )
    return [exe, "-n", str(ranks)]


def _flag(key: str, value: Any) -> list[str]:
    flag = "--" + key.replace("_", "-")
    if value is None or value is False:
        return []
    if value is True:
        return [flag]
    return [flag, str(value)]


def launch(ranks: int, *, wait: float = 600.0, check: bool = True, **options: Any) -> subprocess.CompletedProcess:
    """Run ``mpiexec -n ranks python -m blockcd.mpi`` with ``options`` as its flags.

    Keyword arguments become flags (``tau=10`` -> ``--tau 10``,
    ``send_indices=True`` -> ``--send-indices``; ``None``/``False`` are left
    out).  Each rank runs with one BLAS thread (``OMP_NUM_THREADS=1`` unless
    set), as usual for MPI jobs.  The job runs in its own process group, which
    is killed if it outlives ``wait`` seconds (``timeout=...`` is the job's own
    ``--timeout``, the per-iteration watchdog).

    Returns
    -------
    subprocess.CompletedProcess with text ``stdout`` and ``stderr``.

    Raises
    ------
    subprocess.CalledProcessError
        with ``check=True``, if the job exits with a non-zero status.
    subprocess.TimeoutExpired
        if it does not finish within ``wait`` seconds.
    """
    wait = check_float("wait", wait, positive=True)
    args = mpiexec(ranks) + [sys.executable, "-m", "blockcd.mpi"]
    for key, value in options.items():
        args += _flag(key, value)
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=wait)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(args, wait, out, err) from None
    result = subprocess.CompletedProcess(args, proc.returncode, out, err)
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, args, out, err)
    return result


@dataclass
class Measurements:
    """What an MPI run measured, beside its :class:`blockcd.History`.

    Attributes
    ----------
    compute, comm : arrays (K, iters)
        Seconds per iteration of each rank (row 0 the master) spent computing
        and inside MPI calls (sending, receiving and waiting).
    evaluation : array (iters + 1,)
        The master's seconds per iterate for ||x - x*||^2 and f(x) - f* (not part of the method).
    bytes_up : array (iters, n)
        Bytes each worker sent in each round (values, plus indices with ``--send-indices``).
    bytes_down : array (iters,)
        Bytes the master broadcast in each round (the iterate, or IS-ASGD's point y).
    meta : dict
        ranks, problem and its options, argv, hosts, MPI library, setup and wall seconds per rank.
    """

    compute: np.ndarray
    comm: np.ndarray
    evaluation: np.ndarray
    bytes_up: np.ndarray
    bytes_down: np.ndarray
    meta: dict

    def per_iteration(self) -> dict:
        """Mean seconds per iteration: ``{'master': (compute, comm), 'workers': (compute, comm)}``."""
        return {
            "master": (float(self.compute[0].mean()), float(self.comm[0].mean())),
            "workers": (float(self.compute[1:].mean()), float(self.comm[1:].mean())),
        }


def load_measurements(path) -> Measurements:
    """Read the measurements of an MPI run: the ``mpi_*`` arrays of its history file.

    Parameters
    ----------
    path : str or Path
        A file written by ``python -m blockcd.mpi --out path`` (its
        :class:`blockcd.History` is read by ``History.load(path)``).

    Returns
    -------
    Measurements

    Raises
    ------
    ValueError
        if the file holds no MPI measurements (a simulator's history).
    """
    with np.load(Path(path), allow_pickle=False) as z:
        if "mpi_meta" not in z.files:
            raise ValueError(f"{path} holds no MPI measurements (was it written by blockcd.mpi?)")
        return Measurements(
            compute=z["mpi_compute"], comm=z["mpi_comm"], evaluation=z["mpi_eval"],
            bytes_up=z["mpi_up"], bytes_down=z["mpi_down"], meta=json.loads(str(z["mpi_meta"])),
        )


if __name__ == "__main__":
    sys.exit(main())

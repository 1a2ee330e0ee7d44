"""What a run records: the ``History`` and the :class:`Recorder` that fills it.

The simulator (:func:`blockcd.run`), the per-worker reference
(:mod:`blockcd.reference`) and the MPI master (:mod:`blockcd.mpi`) all record
through one :class:`Recorder`: ||x^k - x*||^2 and f(x^k) - f* at each
iterate (on a non-convex problem, which has no x*: ||grad f(x^k)||^2 and the
dissimilarity of the local gradients instead), the communication counters, divergence detection (an error naming
the step used and the largest step the theory allows) and stopping at an
accuracy (``until``).  No update rule lives here.
"""

from __future__ import annotations

import json
import math
import sys
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import theory
from ._validate import check_float, history_fields_wrong, printable

BYTES_PER_NUMBER = 8
#: a run whose distance to x* grows by this factor has diverged
BLOWUP = 1e12


class DivergenceError(FloatingPointError):
    """Raised when a run's iterates overflow, turn NaN, or blow up."""


@dataclass
class History:
    r"""What a run recorded, one entry per iteration (entry 0 is the start x0).

    Attributes
    ----------
    dist2 : ndarray
        ``||x^k - x*||^2``.
    gap : ndarray
        ``f(x^k) - f(x*)``.
    blocks_up : ndarray
        Cumulative blocks sent by each worker (the same for all workers; for IBGD, importance
        sampling, the asynchronous method and a rule that chooses its own blocks, the mean over
        workers of what each sent).
    bytes_up : ndarray
        Cumulative bytes sent up, averaged over workers (values, plus indices
        when ``send_indices=True``, and always for a rule that chooses its own blocks).
    bytes_down : ndarray
        Cumulative bytes the master sends to each worker (the iterate).
    bytes_up_workers : ndarray
        Total bytes each worker sent, shape (n,).
    step : float
        The step size used (with a schedule, its first step).
    steps : ndarray or None
        With a step schedule (``step=`` a callable or ``'decreasing'``): the step used at
        iteration k, k = 0..iters-1; None for a constant step.
    gap_avg : ndarray or None
        With ``step='decreasing'``: :math:`f(\hat x_k) - f^\star`, where
        :math:`\hat x_k = \sum_{j \le k} w_j x^j / \sum_{j \le k} w_j` with the weights of
        :func:`blockcd.theory.average_weights` (chapter 5); None otherwise.
    x_avg : ndarray or None
        With ``step='decreasing'``: the last weighted average :math:`\hat x`.
    arrivals : integer ndarray or None
        Asynchronous IS-SGD (``'is-sgd-async'``): the worker whose message iteration k applied;
        None otherwise.
    delays : integer ndarray or None
        Asynchronous IS-SGD: the delay of the message iteration k applied (messages applied
        since that worker received its point); None otherwise.
    times : ndarray or None
        Asynchronous IS-SGD: the time of each arrival, in the delay model's units
        (:class:`blockcd.asynchronous.Speeds`) or, from MPI, seconds since the start.
    grad2 : ndarray or None
        On a non-convex problem (``problem.convex`` False; ``dist2`` and ``gap`` are then NaN, there
        is no x*): :math:`\lVert\nabla f(x^k)\rVert^2`.  Its mean over k = 0..t is
        :math:`\mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2` for :math:`\hat x_t` drawn uniformly from the
        iterates, the quantity of the paper's Theorem 7 (chapter 5).  None on a convex problem.
    nu2 : ndarray or None
        On a non-convex problem: the dissimilarity
        :math:`\frac1n\sum_i\lVert\nabla f_i(x^k) - \nabla f(x^k)\rVert^2` at each iterate; None otherwise.
    x : ndarray
        The last iterate.
    method : str
        The method's registry name (an alias is resolved).
    n : int
        Workers.
    d : int
        Dimension.
    m : int
        Blocks.
    tau : int
        Blocks each worker sends per iteration.
    seed : int
        The run's seed.
    sampling : str
        The block sampling used.
    batch : int or None
        The minibatch size (None: each worker's full local gradient).
    problem : dict or None
        What the run was on (``describe_problem``): the problem's name (its data), loss,
        N, n, d, lam, split, regulariser and non-convex weight.  None in a history written before
        it was recorded.
    iters_asked : int or None
        The iterations asked for (``iters=``); :attr:`iters` is fewer when ``until`` stopped the run.
    version : str or None
        The version of blockcd that made the run (``library_version``).

    Notes
    -----
    Two histories are equal (``==``) when every field is: the scalars equal, the arrays of the same
    shape and dtype with the same entries bit for bit (NaN equal to NaN at the same place).
    """

    method: str
    n: int
    d: int
    m: int
    tau: int
    step: float
    seed: int
    sampling: str
    batch: int | None
    dist2: np.ndarray
    gap: np.ndarray
    blocks_up: np.ndarray
    bytes_up: np.ndarray
    bytes_down: np.ndarray
    x: np.ndarray = field(repr=False)
    bytes_up_workers: np.ndarray = field(repr=False, default=None)
    steps: np.ndarray | None = field(repr=False, default=None)
    gap_avg: np.ndarray | None = field(repr=False, default=None)
    x_avg: np.ndarray | None = field(repr=False, default=None)
    arrivals: np.ndarray | None = field(repr=False, default=None)
    delays: np.ndarray | None = field(repr=False, default=None)
    times: np.ndarray | None = field(repr=False, default=None)
    grad2: np.ndarray | None = field(repr=False, default=None)
    nu2: np.ndarray | None = field(repr=False, default=None)
    problem: dict | None = field(repr=False, default=None)
    iters_asked: int | None = field(repr=False, default=None)
    version: str | None = field(repr=False, default=None)

    def __eq__(self, other) -> bool:
        if not isinstance(other, History):
            return NotImplemented
        if any(getattr(self, k) != getattr(other, k) for k in self._SCALARS):
            return False
        return all(_same_array(getattr(self, k), getattr(other, k)) for k in self._ARRAYS)

    __hash__ = None

    @property
    def iters(self) -> int:
        """Iterations recorded (entries after the start x0)."""
        return len(self.dist2) - 1

    def iters_to(self, eps: float) -> int | None:
        """First iteration k with dist2[k] <= eps * dist2[0], or None if never reached (and None when
        dist2[0] is not a finite number: no target to reach)."""
        eps = check_float("eps", eps, positive=True)
        if self.grad2 is not None:
            raise ValueError("iters_to measures ||x^k - x*||^2, and this history is of a non-convex problem, which "
                             "has no x*: use History.grad2 (||grad f(x^k)||^2) instead")
        return first_below(self.dist2, eps)

    _ARRAYS = ("dist2", "gap", "blocks_up", "bytes_up", "bytes_down", "x", "bytes_up_workers", "steps", "gap_avg",
               "x_avg", "arrivals", "delays", "times", "grad2", "nu2")
    _SCALARS = ("method", "n", "d", "m", "tau", "step", "seed", "sampling", "batch", "problem", "iters_asked",
                "version")
    #: the fields a history file must hold (those of every version of :meth:`save`)
    _REQUIRED = ("method", "n", "d", "m", "tau", "step", "seed", "sampling", "batch")

    def save(self, path) -> Path:
        """Write to ``.npz`` (the arrays plus a JSON header ``meta``; no pickle).

        ``path`` gets the suffix ``.npz`` if it has none (as ``numpy.savez`` adds it), and
        :meth:`load` accepts the same ``path``: ``h.save("out/x")`` writes ``out/x.npz`` and
        ``History.load("out/x")`` reads it.  Returns the path written.
        """
        path = _npz_path(path)
        meta = json.dumps({k: getattr(self, k) for k in self._SCALARS})
        arrays = {k: getattr(self, k) for k in self._ARRAYS if getattr(self, k) is not None}
        np.savez(path, meta=np.array(meta), **arrays)
        return path

    @classmethod
    def load(cls, path) -> History:
        """Read a history written by :meth:`save` (``allow_pickle=False``).

        ``path`` as given to :meth:`save`: without a suffix, ``path + '.npz'`` is read.  A file that
        is not a history (no ``.npz`` archive, or one without the JSON header ``meta`` that
        :meth:`save` writes) raises a ValueError naming the file and what was expected; a missing
        file, a FileNotFoundError naming it.
        """
        path = Path(path)
        if not path.exists() and path.suffix != ".npz" and _npz_path(path).exists():
            path = _npz_path(path)
        if not path.exists():
            raise FileNotFoundError(f"no history file {str(path)!r}" + (
                "" if path.suffix == ".npz" else f" (nor {str(_npz_path(path))!r})"))
        expected = "an .npz archive written by History.save (arrays and a JSON header 'meta')"
        try:
            return cls._read(path, expected)
        except _Bad as exc:
            raise ValueError(f"{str(path)!r} is not a history file: {exc}") from None

    @classmethod
    def _read(cls, path: Path, expected: str) -> History:
        """The history in ``path``, every field checked; raises _Bad saying what is wrong."""
        try:
            z = np.load(path, allow_pickle=False)
        except ValueError:  # numpy's own text suggests allow_pickle: neither true here nor safe
            raise _Bad(f"numpy reads no array from it without pickle; expected {expected}") from None
        except (OSError, EOFError, zipfile.BadZipFile) as exc:
            raise _Bad(f"it is truncated or not an archive ({printable(exc)}); expected {expected}") from None
        if not isinstance(z, np.lib.npyio.NpzFile):  # a .npy file: the contents are wrong, not the argument
            raise _Bad(f"it holds one array ({path.suffix} file); expected {expected}")
        try:
            with z:
                if "meta" not in z.files:
                    raise _Bad(f"the archive holds {printable(sorted(z.files))} but no 'meta'; expected {expected}")
                try:
                    meta = json.loads(str(z["meta"]))
                except (ValueError, RecursionError) as exc:
                    raise _Bad(f"its 'meta' is not the JSON header History.save writes ({printable(exc)})") from None
                if not isinstance(meta, dict) or any(k not in meta for k in cls._REQUIRED):
                    lacks = [k for k in cls._REQUIRED if not isinstance(meta, dict) or k not in meta]
                    raise _Bad(f"its 'meta' lacks the fields {lacks}")
                missing = [k for k in ("dist2", "gap", "blocks_up", "bytes_up", "bytes_down", "x")
                           if k not in z.files]
                if missing:
                    raise _Bad(f"it is not complete: it lacks the arrays {missing}")
                arrays = {k: z[k] for k in cls._ARRAYS if k in z.files}
        except _Bad:
            raise
        except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error, KeyError) as exc:
            raise _Bad(f"an array in it cannot be read ({printable(exc)}): the file is corrupted or was not "
                       "written by History.save") from None
        meta = {k: v for k, v in meta.items() if k in cls._SCALARS}
        wrong = history_fields_wrong(meta, arrays)
        if wrong:
            raise _Bad(wrong)
        return cls(**meta, **arrays)


class _Bad(Exception):
    """What is wrong with a history file (History.load names the file)."""


def first_below(values, eps: float) -> int | None:
    """The first k with values[k] <= eps values[0]; None if there is none, or if values[0] is not finite
    (an overflowing start has no target: every later inf would count as reached)."""
    values = np.asarray(values, dtype=float)
    if not (values.size and np.isfinite(values[0])):
        return None
    hit = np.flatnonzero(values <= eps * values[0])
    return int(hit[0]) if hit.size else None


def _npz_path(path) -> Path:
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def _same_array(a, b) -> bool:
    """Exactly equal: both None, or the same shape, dtype and entries (NaN equal to NaN in place)."""
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if np.issubdtype(a.dtype, np.inexact):
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def library_version() -> str | None:
    """The version of blockcd: ``blockcd.__version__`` if it is set, else the installed package's
    metadata version, else None.  (The package is read from ``sys.modules``, where importing this
    module has put it, so that this module does not import the package that imports it.)"""
    v = getattr(sys.modules.get(__name__.rpartition(".")[0]), "__version__", None)
    if v:
        return str(v)
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        return version("blockcd")
    except PackageNotFoundError:
        return None


def describe_problem(problem) -> dict:
    """What a History records of the problem it ran on: a dict of plain values (JSON).

    Keys: ``name`` (the data: the builder's or the user's name), ``loss``, ``N`` (rows), ``n``
    (workers), ``d``, ``lam`` (the ridge term lambda), ``split``, ``sparse`` (a CSR matrix),
    ``reg`` (the regulariser R, as its repr, or None) and ``nonconvex`` (the weight w, 0: convex).
    """
    get = lambda name, kind: None if getattr(problem, name, None) is None else kind(getattr(problem, name))
    reg = getattr(problem, "reg", None)
    return {"name": get("name", str), "loss": get("loss", str), "N": get("N", int), "n": get("n", int),
            "d": get("d", int), "lam": get("lam", float), "split": get("split", str),
            "sparse": get("sparse", bool), "reg": None if reg is None else repr(reg),
            "nonconvex": get("nonconvex", float)}


class Recorder:
    """Records one run: distances, gaps and what was sent; detects divergence; stops at ``until``.

    Parameters
    ----------
    problem : Problem
        Gives x*, f* and f (the evaluation, not part of any method); for a non-convex problem
        the local gradients at each iterate, for ||grad f(x^k)||^2 and the dissimilarity.
    method, step, batch, sampling : as given to :func:`blockcd.run` (for the history and the
        divergence message)
    blocks : Blocks
        The partition (for counting coordinates sent).
    tau, iters : int
    send_indices : bool
        Count tau ceil(log2 m) index bits per worker and iteration.
    until : float or None
        :meth:`point` returns True at the first k with dist2[k] <= until * dist2[0].
    gap : bool
        Evaluate f at each iterate (else the gaps are NaN).
    counted : bool
        Count each worker's blocks from the masks (a Bernoulli choice: all m or none),
        not tau per worker and iteration; ``History.blocks_up`` is then their mean over workers.
    own : bool
        The rule chose its own blocks (``own_blocks``): count them from the masks (as ``counted``) and,
        since the master cannot regenerate such a choice, the indices of a worker that sends c blocks,
        0 < c < m: ceil(c ceil(log2 m) / 8) bytes (``send_indices`` then changes nothing).
    schedule : bool
        Record the step of every iteration (:meth:`stepped`; a step schedule).
    average : (a, c) or None
        Also record f at the average with the weights a + c (k - 1) (``step='decreasing'``).
    """

    def __init__(self, problem, *, method, step, blocks, tau, iters, sampling, batch=None, send_indices=False,
                 until=None, gap=True, counted=False, schedule=False, average=None, own=False):
        self.own = own
        self.counted = counted or own
        self.steps = np.empty(iters) if schedule else None
        self.average = average
        #: the average's weights w_k = a + c (k - 1), k = 0..iters (theory.average_weights)
        self.weights = None if average is None else theory.average_weights(*average, iters)
        self.gap_avg = np.empty(iters + 1) if average is not None else None
        self.x_sum, self.w_sum, self.x_avg = None, 0.0, None
        self.blocks_sent = np.zeros(iters + 1)  # cumulative blocks per worker, mean over workers (counted)
        self.p, self.method, self.step, self.blocks, self.want_gap = problem, method, step, blocks, gap
        self.tau, self.sampling, self.batch, self.until = tau, sampling, batch, until
        self.dist2 = np.empty(iters + 1)
        self.gap = np.empty(iters + 1)
        self.coords = np.zeros(problem.n)  # cumulative coordinates sent per worker
        self.bytes_up = np.zeros(iters + 1)
        self.convex = problem.convex
        if self.convex:
            self.xs, self.fs = problem.x_star, problem.f_star
            self.grad2 = self.nu2 = None
        else:  # no x*: record ||grad f||^2 and the dissimilarity, from the n local gradients at x^k
            self.xs = self.fs = None
            self.grad2, self.nu2 = np.empty(iters + 1), np.empty(iters + 1)
        self.index_bytes = (math.ceil(tau * math.ceil(math.log2(blocks.m)) / 8)
                            if send_indices and tau < blocks.m and not own else 0)
        #: the index bytes each worker sent so far (a rule that chooses its own blocks)
        self.own_index = np.zeros(problem.n) if own else None
        self.up_total = 0.0
        self.limit = None
        self.target = None
        self.last = iters

    def point(self, k: int, x: np.ndarray, fx: float | None = None) -> bool:
        """Record iterate k (fx: the smooth part of f(x) if already known); True if the run has reached ``until``."""
        if not self.convex:
            return self._point_nonconvex(k, x)
        diff = x - self.xs
        d2 = float(diff @ diff)
        if fx is None:
            fx = self.p.f(x) if np.isfinite(d2) and self.want_gap else math.nan
        elif self.p.reg is not None:  # fx came with the workers' gradients: the smooth part only
            fx = fx + self.p.reg(x)
        self.dist2[k] = d2
        self.gap[k] = fx - self.fs
        if self.average is not None:
            w = self.weights[k]
            if k == 0:
                self.x_sum = w * x
            else:
                self.x_sum += w * x
            self.w_sum += w
            self.x_avg = self.x_sum / self.w_sum
            self.gap_avg[k] = (self.p.f(self.x_avg) if np.isfinite(d2) else math.nan) - self.fs
        if k == 0:
            if not math.isfinite(d2):
                raise ValueError(f"the start point's error ||x0 - x*||^2 = {d2} is not a finite number (the "
                                 f"largest |x0_j| is {float(np.max(np.abs(x))):.3g}): no error can be measured "
                                 "from it; start closer to x* (x0=None starts at zeros)")
            self.limit = BLOWUP * max(d2, 1.0)
            if self.until is not None:
                self.target = self.until * d2
        elif not (d2 <= self.limit):
            self._diverged(k)
        if self.target is not None and d2 <= self.target:
            self.last = k
            return True
        return False

    def _point_nonconvex(self, k: int, x: np.ndarray) -> bool:
        """Record ||grad f(x^k)||^2 and (1/n) sum_i ||grad f_i(x^k) - grad f(x^k)||^2 (one pass over the data)."""
        G = self.p.workers().grads(x)
        g = G.mean(axis=0)
        g2 = float(g @ g)
        self.grad2[k] = g2
        self.nu2[k] = float(np.mean(np.sum((G - g) ** 2, axis=1)))
        self.dist2[k] = self.gap[k] = math.nan
        if k == 0:
            self.limit = BLOWUP * max(g2, 1.0)
        elif not (g2 <= self.limit and np.all(np.isfinite(x))):
            self._diverged(k)
        return False

    def sent(self, k: int, mask: np.ndarray | None, chosen: np.ndarray | None = None) -> None:
        """Count what the workers sent at iteration k: the (n, m) block ``mask`` or the (n, tau) ``chosen``
        block indices (both None: every block)."""
        if self.counted:
            sent = float(self.blocks.m) if mask is None else float(np.mean(mask.sum(axis=1)))
            self.blocks_sent[k + 1] = self.blocks_sent[k] + sent
        if mask is None and chosen is None:
            per = mean = float(self.blocks.d)
        elif self.blocks.equal and not self.counted:  # tau equal blocks each (a Bernoulli mask: counted)
            per = mean = float(self.tau * (self.blocks.d // self.blocks.m))
        else:
            per = mask @ self.blocks.sizes if chosen is None else self.blocks.sizes[chosen].sum(axis=1)
            mean = float(np.mean(per))
        self.coords += per
        if self.own:  # the indices of a choice the master could not regenerate: 0 < c < m blocks
            c = mask.sum(axis=1)
            index = np.where((c > 0) & (c < self.blocks.m), np.ceil(c * math.ceil(math.log2(self.blocks.m)) / 8), 0.0)
            self.own_index += index
            mean += float(np.mean(index)) / BYTES_PER_NUMBER
        self.up_total += mean + self.index_bytes / BYTES_PER_NUMBER
        self.bytes_up[k + 1] = self.up_total * BYTES_PER_NUMBER

    def stepped(self, k: int, step: float) -> None:
        """Record the step taken at iteration k (with a schedule; otherwise nothing to do)."""
        if self.steps is not None:
            self.steps[k] = step

    def _diverged(self, k: int):
        from . import theory

        try:
            if self.convex:
                safe = theory.step_size(self.p, self.method, self.blocks.m, self.tau, batch=self.batch,
                                        sampling=self.sampling)
                hint = f"the largest step the theory allows here is {safe:.4g}"
            else:
                safe = theory.nonconvex_step(self.p, self.blocks.m, self.tau, len(self.dist2) - 1)
                hint = f"the paper's Theorem 7 step for this horizon is {safe:.4g}"
        except ValueError as exc:
            hint = f"the theory gives no step here ({exc})"
        what = (f"||x - x*||^2 = {self.dist2[k]:.3g}" if self.convex else f"||grad f(x)||^2 = {self.grad2[k]:.3g}")
        raise DivergenceError(
            f"{self.method} diverged at iteration {k} ({what}) "
            f"with step = {self.step:.4g}{' (the first of a schedule)' if self.steps is not None else ''}; {hint}"
        )

    def history(self, x, seed, *, bytes_up=None, bytes_down=None, bytes_up_workers=None) -> History:
        """The History up to the last recorded iterate; measured counters (MPI) replace the counted ones."""
        it = self.last
        k = np.arange(it + 1)
        if bytes_up_workers is None:
            bytes_up_workers = self.coords * BYTES_PER_NUMBER + it * self.index_bytes
            if self.own:
                bytes_up_workers = bytes_up_workers + self.own_index
        return History(
            method=self.method, n=self.p.n, d=self.p.d, m=self.blocks.m, tau=self.tau, step=float(self.step),
            seed=seed, sampling=self.sampling, batch=self.batch,
            dist2=self.dist2[: it + 1], gap=self.gap[: it + 1],
            blocks_up=self.blocks_sent[: it + 1].copy() if self.counted else (k * self.tau).astype(float),
            bytes_up=self.bytes_up[: it + 1] if bytes_up is None else bytes_up,
            bytes_down=(k * self.p.d * BYTES_PER_NUMBER).astype(float) if bytes_down is None else bytes_down,
            x=x,
            bytes_up_workers=bytes_up_workers,
            steps=None if self.steps is None else self.steps[:it].copy(),
            gap_avg=None if self.gap_avg is None else self.gap_avg[: it + 1].copy(),
            x_avg=None if self.x_avg is None else self.x_avg.copy(),
            grad2=None if self.grad2 is None else self.grad2[: it + 1].copy(),
            nu2=None if self.nu2 is None else self.nu2[: it + 1].copy(),
            problem=describe_problem(self.p), iters_asked=len(self.dist2) - 1, version=library_version(),
        )

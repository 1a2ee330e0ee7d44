"""The methods: IBCD, IS-SGD, ISEGA, IS-SAGA, IS-ASGD, and the run loop.

Every method is the master/worker template with all n workers simulated at
once: the (n, d) array of local gradient estimates, an (n, m) block mask from
:class:`blockcd.blocks.BlockSampler`, and one aggregation per iteration.
No Python loop runs over workers.  What was sent is counted from the masks
actually used.  The loss lives in :mod:`blockcd.problems`, the step sizes in
:mod:`blockcd.theory`; this module holds the update rules and the
:class:`History` they record.

With tau = m every mask is all-ones, the scale m/tau is exactly 1, and each
method is its dense (non-sparsified) parent, bit for bit.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import theory
from ._validate import check_choice, check_float, check_int, check_seed, check_vector
from .blocks import PURPOSE_SAMPLES, SAMPLINGS, BlockSampler, CounterStream, partition
from .problems import Problem

METHODS = ("ibcd", "is-sgd", "isega", "is-saga", "is-asgd")
#: dense names accepted as aliases: the parent method with tau = m
ALIASES = {"gd": "ibcd", "dense": "ibcd", "sgd": "is-sgd", "saga": "is-saga", "asgd": "is-asgd"}
BYTES_PER_NUMBER = 8
#: a run whose distance to x* grows by this factor has diverged
BLOWUP = 1e12


class DivergenceError(FloatingPointError):
    """Raised when a run's iterates overflow, turn NaN, or blow up."""


@dataclass
class History:
    """What a run recorded, one entry per iteration (entry 0 is the start x0).

    Attributes
    ----------
    dist2 : ||x^k - x*||^2
    gap : f(x^k) - f(x*)
    blocks_up : cumulative blocks sent by each worker (the same for all workers)
    bytes_up : cumulative bytes sent up, averaged over workers (values, plus
        indices when ``send_indices=True``)
    bytes_down : cumulative bytes the master sends to each worker (the iterate)
    step : the step size used
    x : the last iterate
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

    @property
    def iters(self) -> int:
        return len(self.dist2) - 1

    def iters_to(self, eps: float) -> int | None:
        """First iteration k with dist2[k] <= eps * dist2[0], or None if never reached."""
        eps = check_float("eps", eps, positive=True)
        hit = np.flatnonzero(self.dist2 <= eps * self.dist2[0])
        return int(hit[0]) if hit.size else None

    _ARRAYS = ("dist2", "gap", "blocks_up", "bytes_up", "bytes_down", "x", "bytes_up_workers")
    _SCALARS = ("method", "n", "d", "m", "tau", "step", "seed", "sampling", "batch")

    def save(self, path) -> None:
        """Write to ``.npz`` (arrays plus a JSON header; no pickle)."""
        meta = json.dumps({k: getattr(self, k) for k in self._SCALARS})
        arrays = {k: getattr(self, k) for k in self._ARRAYS if getattr(self, k) is not None}
        np.savez(path, meta=np.array(meta), **arrays)

    @classmethod
    def load(cls, path) -> History:
        """Read a history written by :meth:`save` (``allow_pickle=False``)."""
        with np.load(Path(path), allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            arrays = {k: z[k] for k in cls._ARRAYS if k in z}
        return cls(**meta, **arrays)


def _canonical(method) -> str:
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, one of {METHODS}, got {type(method).__name__}")
    name = ALIASES.get(method.lower(), method.lower())
    return check_choice("method", name, METHODS)


def run(
    problem: Problem,
    method: str,
    *,
    m: int,
    tau: int,
    step: float | None = None,
    iters: int,
    seed: int = 0,
    sampling: str = "independent",
    batch: int | None = None,
    x0=None,
    send_indices: bool = False,
) -> History:
    r"""Run one method of the book on ``problem`` and record its history.

    Each iteration, worker i forms a local estimate (its full gradient for
    IBCD/ISEGA/IS-ASGD, a b-minibatch gradient for IS-SGD, a SAGA estimate for
    IS-SAGA) and sends tau of the m blocks, rescaled by m/tau; the master
    averages and steps.  ISEGA and IS-SAGA send the difference to a shift h_i
    and both sides overwrite the sent blocks of h_i.

    Parameters
    ----------
    problem : Problem
    method : {'ibcd', 'is-sgd', 'isega', 'is-saga', 'is-asgd'}
        (aliases: 'gd'/'dense' = 'ibcd', 'sgd', 'saga', 'asgd'; use tau = m for the dense method)
    m : int, 1 <= m <= d
        Number of blocks.
    tau : int, 1 <= tau <= m
        Blocks each worker sends per iteration.
    step : float > 0 or None
        Step size (for IS-ASGD, eta).  None takes :func:`blockcd.theory.step_size`.
    iters : int >= 1
    seed : int >= 0
        Seeds the block choices and minibatches: worker i's choice at iteration
        k is a function of (seed, i, k) alone.
    sampling : {'independent', 'shared'}
    batch : int or None
        Minibatch size for IS-SGD (default 1) and IS-SAGA (default 1).
    x0 : array (d,) or None (zeros)
    send_indices : bool
        Count tau * ceil(log2 m) index bits per worker per iteration, as when
        the master cannot regenerate the choice from the seed.

    Returns
    -------
    History
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a blockcd Problem, got {type(problem).__name__}")
    method = _canonical(method)
    d, n = problem.d, problem.n
    m = check_int("m", m, 1, d)
    tau = check_int("tau", tau, 1, m)
    iters = check_int("iters", iters, 1)
    seed = check_seed("seed", seed)
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    if not isinstance(send_indices, (bool, np.bool_)):
        raise TypeError(f"send_indices must be True or False, got {send_indices!r}")
    if method in ("is-sgd", "is-saga"):
        batch = 1 if batch is None else check_int("batch", batch, 1, int(problem.sizes.min()))
    elif batch is not None:
        raise ValueError(f"batch applies to 'is-sgd' and 'is-saga' only, not to {method!r}")
    if step is None:
        step = theory.step_size(problem, method, m, tau, batch=batch, sampling=sampling)
    else:
        step = check_float("step", step, positive=True)
    x = np.zeros(d) if x0 is None else check_vector("x0", x0, d, "the problem dimension d").copy()

    blocks = partition(d, m)
    sampler = BlockSampler(n, m, tau, seed, sampling)
    loop = _LOOPS[method]
    with np.errstate(over="ignore", invalid="ignore"):
        return loop(problem, blocks, sampler, x, step, iters, seed, batch, method, sampling, send_indices)


# ---------------------------------------------------------------- helpers
class _Recorder:
    """Records dist2, gap and the communication counters; detects divergence."""

    def __init__(self, problem, blocks, sampler, iters, step, method, send_indices, batch=None):
        self.p = problem
        self.blocks = blocks
        self.sampler = sampler
        self.step = step
        self.method = method
        self.batch = batch
        self.dist2 = np.empty(iters + 1)
        self.gap = np.empty(iters + 1)
        self.coords = np.zeros(problem.n)  # cumulative coordinates sent per worker
        self.bytes_up = np.zeros(iters + 1)
        self.xs = problem.x_star
        self.fs = problem.f_star
        self.index_bytes = (
            math.ceil(sampler.tau * math.ceil(math.log2(blocks.m)) / 8)
            if send_indices and sampler.tau < blocks.m
            else 0
        )
        self.up_total = 0.0
        self.limit = None

    def point(self, k: int, x: np.ndarray, fx: float | None = None) -> None:
        diff = x - self.xs
        d2 = float(diff @ diff)
        if fx is None:
            fx = self.p.f(x) if np.isfinite(d2) else math.nan
        self.dist2[k] = d2
        self.gap[k] = fx - self.fs
        if k == 0:
            self.limit = BLOWUP * max(d2, 1.0)
        elif not (d2 <= self.limit):
            self._diverged(k)

    def sent(self, k: int, mask: np.ndarray | None) -> None:
        """Count what the workers sent at iteration k (mask: (n, m) blocks, None = all)."""
        if mask is None:
            per = mean = float(self.blocks.d)
        elif self.blocks.equal:
            per = mean = float(self.sampler.tau * (self.blocks.d // self.blocks.m))
        else:
            per = mask @ self.blocks.sizes
            mean = float(np.mean(per))
        self.coords += per
        self.up_total += mean + self.index_bytes / BYTES_PER_NUMBER
        self.bytes_up[k + 1] = self.up_total * BYTES_PER_NUMBER

    def _diverged(self, k: int):
        try:
            safe = theory.step_size(self.p, self.method, self.blocks.m, self.sampler.tau, batch=self.batch,
                                    sampling=self.sampler.sampling)
            hint = f"the largest step the theory allows here is {safe:.4g}"
        except ValueError as exc:
            hint = f"the theory gives no step here ({exc})"
        raise DivergenceError(
            f"{self.method} diverged at iteration {k} (||x - x*||^2 = {self.dist2[k]:.3g}) "
            f"with step = {self.step:.4g}; {hint}"
        )

    def history(self, method, sampler, step, seed, batch, x):
        iters = len(self.dist2) - 1
        k = np.arange(iters + 1)
        return History(
            method=method,
            n=self.p.n,
            d=self.p.d,
            m=self.blocks.m,
            tau=sampler.tau,
            step=float(step),
            seed=seed,
            sampling=sampler.sampling,
            batch=batch,
            dist2=self.dist2,
            gap=self.gap,
            blocks_up=(k * sampler.tau).astype(float),
            bytes_up=self.bytes_up,
            bytes_down=(k * self.p.d * BYTES_PER_NUMBER).astype(float),
            x=x,
            bytes_up_workers=(self.coords * BYTES_PER_NUMBER
                              + iters * self.index_bytes),
        )


def _masks(sampler, k):
    return None if sampler.tau == sampler.m else sampler.masks(k)


def _indexed(blocks, tau: int, n: int) -> bool:
    """Whether to reach the sent entries by index: few, wide blocks of a large (n, d) array.

    Indexing touches about tau/m of the array but costs more per entry, and
    more per call, than the ``where=`` forms, which pass over all of it; it
    was measured to win with equal blocks of >= 4 coordinates, tau <= m/10
    and n d >= 2^15.
    """
    return blocks.equal and blocks.d >= 4 * blocks.m and 10 * tau <= blocks.m and n * blocks.d >= 1 << 15


class _Sent:
    """The entries of the (n, d) array of local estimates sent at one iteration.

    Built from the (n, m) block mask (None: tau = m, every block).  Each
    coordinate's sum adds, in worker order and starting from zero, the entries
    of the workers that sent its block: over the whole array with ``where=``
    (the block mask repeated to coordinates), or, with ``indexed``, through the
    (worker, coordinate) indices of the sent entries and ``np.bincount``
    (which adds in the order given).  Both add the same numbers in the same
    order, which are the nonzero terms of the sum of the masked array, so the
    iterates do not depend on the form.
    """

    def __init__(self, blocks, mask, indexed: bool):
        self.d, self.mask, self.where, self.rows, self.cols = blocks.d, mask, None, None, None
        if mask is None:
            return
        if indexed:
            workers, chosen = np.nonzero(mask)
            width = blocks.d // blocks.m
            self.rows = workers[:, None]
            self.cols = (chosen * width)[:, None] + np.arange(width)
        else:
            self.where = mask if blocks.m == blocks.d else np.repeat(mask, blocks.sizes, axis=1)

    def sum(self, D):
        """sum_i P_{S_i} D_i."""
        if self.mask is None:
            return D.sum(axis=0)
        if self.rows is None:
            return np.add.reduce(D, axis=0, where=self.where)
        return np.bincount(self.cols.ravel(), weights=D[self.rows, self.cols].ravel(), minlength=self.d)

    def shift(self, G, h):
        """Send D_i = G_i - h_i on the chosen blocks: h_i += P_{S_i} D_i in place, return sum_i P_{S_i} D_i."""
        if self.rows is None:
            D = G - h
            np.add(h, D, out=h, where=True if self.mask is None else self.where)
            return self.sum(D)
        hs = h[self.rows, self.cols]
        D = G[self.rows, self.cols] - hs
        h[self.rows, self.cols] = hs + D
        return np.bincount(self.cols.ravel(), weights=D.ravel(), minlength=self.d)


class _Minibatcher:
    """b-nice minibatches of each worker's rows, a function of (seed, worker, iteration)."""

    def __init__(self, problem, batch, seed):
        self.p = problem
        self.b = batch
        self.sizes = problem.sizes
        width = 1 if batch == 1 else problem.l_max
        self.stream = CounterStream(seed, PURPOSE_SAMPLES, problem.n, width)
        self.invalid = None
        if batch > 1 and np.any(self.sizes < problem.l_max):
            self.invalid = np.arange(problem.l_max)[None, :] >= self.sizes[:, None]

    def local(self, k: int) -> np.ndarray:
        """(n, b) local row numbers each worker samples at iteration k."""
        u = self.stream.draw(k)
        if self.b == 1:
            idx = np.minimum((u * self.sizes[:, None]).astype(np.int64), self.sizes[:, None] - 1)
        else:
            if self.invalid is not None:
                u = np.where(self.invalid, 2.0, u)
            idx = np.argpartition(u, self.b - 1, axis=1)[:, : self.b]
        return idx


# ---------------------------------------------------------------- loops
def _loop_ibcd(p, blocks, sampler, x, step, iters, seed, batch, method, sampling, send_indices):
    rec = _Recorder(p, blocks, sampler, iters, step, method, send_indices, batch)
    scale = (blocks.m / sampler.tau) / p.n
    mb = _Minibatcher(p, batch, seed) if method == "is-sgd" else None
    indexed = _indexed(blocks, sampler.tau, p.n)
    for k in range(iters):
        if mb is None:
            G, fx = p._local_grads(x, True)
            rec.point(k, x, fx)
        else:
            rec.point(k, x)
            G = p._minibatch_grads(x, p._rows(mb.local(k)))
        mask = _masks(sampler, k)
        g = _Sent(blocks, mask, indexed).sum(G) * scale
        rec.sent(k, mask)
        x = x - step * g
    rec.point(iters, x)
    return rec.history(method, sampler, step, seed, batch, x)


def _loop_shifted(p, blocks, sampler, x, step, iters, seed, batch, method, sampling, send_indices):
    """ISEGA (full local gradients) and IS-SAGA (local SAGA estimates), both with shifts h_i."""
    rec = _Recorder(p, blocks, sampler, iters, step, method, send_indices, batch)
    n = p.n
    scale = (blocks.m / sampler.tau) / n
    h = np.zeros((n, p.d))
    hbar = np.zeros(p.d)
    saga = method == "is-saga"
    indexed = _indexed(blocks, sampler.tau, p.n)
    if saga:
        mb = _Minibatcher(p, batch, seed)
        # SAGA tables: worker i keeps one scalar phi'(a_j^T x) per local row
        # (linear models), filled at x0; abar_i = (1/l_i) sum_j alpha_ij a_j
        z = p._margins(x)
        alpha0 = p._dphi(z, p._t) * (p._w > 0)
        abar = np.array(p._worker_sums(p._w * alpha0))
        local_all = np.minimum(np.arange(p.l_max)[None, :], p.sizes[:, None] - 1)
        alpha = alpha0[p._rows(local_all)]
    for k in range(iters):
        if saga:
            rec.point(k, x)
            idx = mb.local(k)
            rows = p._rows(idx)
            s = p._sample_dphi(x, rows)
            old = np.take_along_axis(alpha, idx, axis=1)
            corr = p._combine_rows(rows, (s - old) / rows.shape[1])
            G = corr + abar
            if p.lam:
                G = G + p.lam * x
            # refresh the table (with b > 1, rows of one worker are distinct)
            np.put_along_axis(alpha, idx, s, axis=1)
            abar = abar + p._combine_rows(rows, (s - old) / p.sizes[:, None])
        else:
            G, fx = p._local_grads(x, True)
            rec.point(k, x, fx)
        mask = _masks(sampler, k)
        sent = _Sent(blocks, mask, indexed).shift(G, h)
        g = hbar + sent * scale
        rec.sent(k, mask)
        hbar = hbar + sent / n
        x = x - step * g
    rec.point(iters, x)
    return rec.history(method, sampler, step, seed, batch, x)


def _loop_asgd(p, blocks, sampler, x, step, iters, seed, batch, method, sampling, send_indices):
    """Accelerated SGD under strong growth (Vaswani, Bach and Schmidt 2019) on the IBCD estimator."""
    rec = _Recorder(p, blocks, sampler, iters, step, method, send_indices, batch)
    scale = (blocks.m / sampler.tau) / p.n
    eta = step
    alpha, beta, gamma = theory.asgd_parameters(p, eta)
    w = x
    v = x.copy()
    indexed = _indexed(blocks, sampler.tau, p.n)
    for k in range(iters):
        rec.point(k, w)
        y = alpha * v + (1.0 - alpha) * w
        G = p._local_grads(y)
        mask = _masks(sampler, k)
        g = _Sent(blocks, mask, indexed).sum(G) * scale
        rec.sent(k, mask)
        w = y - eta * g
        v = beta * v + (1.0 - beta) * y - gamma * eta * g
    rec.point(iters, w)
    return rec.history(method, sampler, step, seed, batch, w)


_LOOPS = {
    "ibcd": _loop_ibcd,
    "is-sgd": _loop_ibcd,
    "isega": _loop_shifted,
    "is-saga": _loop_shifted,
    "is-asgd": _loop_asgd,
}

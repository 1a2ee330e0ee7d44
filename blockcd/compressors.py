"""Compressors the book compares with independent block sparsification, and the dense methods as n grows.

Two things live here.  First, the compressors that libraries commonly use
instead of independent block sparsification -- a random-k mask shared by all
workers, and (biased, deterministic) top-k -- behind one function,
:func:`compress`, with :func:`aggregation_error` measuring what each costs in
the average the master forms (book chapter 3).  Second,
:func:`iterations_over_workers`, the sweep of chapter 2: how many iterations a
dense method (tau = m) needs as the same data are split over more and more
workers, next to what the theory predicts.  The block sparsifier itself is in
:mod:`blockcd.blocks`, the methods in :mod:`blockcd.methods`, the formulas in
:mod:`blockcd.theory`; nothing here draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from . import theory
from ._validate import check_choice, check_float, check_int, check_rows, check_seed
from .blocks import partition, sparsify
from .experiments import iterations_to, variance_mc
from .problems import Problem

#: compressors :func:`compress` knows, independent and shared rand-k block masks (rescaled by m/tau,
#: unbiased) and top-k blocks by norm (not rescaled, biased)
KINDS = ("independent", "shared", "top-k")


def _check_G(G) -> tuple[np.ndarray, bool]:
    """G as a finite float (n, d) array, and whether the input was 1-D."""
    return check_rows("G", G)


def top_k(G, m: int, tau: int) -> np.ndarray:
    r"""Keep, in every row of ``G``, the ``tau`` of its ``m`` blocks with the largest norm.

    Row i becomes :math:`\operatorname{top}_k(g_i) = P_{S_i} g_i` (k = tau blocks) with
    :math:`S_i = \arg\max_{|S| = \tau} \|P_S g_i\|^2`, not rescaled: the
    compressor is deterministic and biased, :math:`\operatorname{top}_k(g) \ne g` in general,
    with :math:`\|\operatorname{top}_k(g) - g\|^2 \le (1 - \tau/m)\|g\|^2` (the dropped blocks
    are the smallest, so they carry at most their share of the norm).  Ties
    are broken by block position.  Chapter 3 compares it with the unbiased
    block sparsifier; its block choice depends on the data, so the indices
    must be sent along with the values.

    Parameters
    ----------
    G : array of shape (n, d), or (d,) for one vector
    m : int, 1 <= m <= d
        Number of contiguous blocks (sizes differ by at most one).
    tau : int, 1 <= tau <= m
        Blocks kept per row.

    Returns
    -------
    ndarray of the shape of ``G``, a new array.
    """
    G, one_d = _check_G(G)
    n, d = G.shape
    blocks = partition(d, m)
    tau = check_int("tau", tau, 1, blocks.m)
    norms2 = np.add.reduceat(G**2, blocks.starts, axis=1)  # (n, m)
    if tau == blocks.m:
        out = G.copy()
    else:
        # stable sort on -norm: the largest blocks first, ties by position
        keep = np.argsort(-norms2, axis=1, kind="stable")[:, :tau]
        mask = np.zeros((n, blocks.m), dtype=bool)
        np.put_along_axis(mask, keep, True, axis=1)
        out = np.where(blocks.expand(mask), G, 0.0)
    return out[0] if one_d else out


def compress(G, m: int, tau: int, kind: str, rng: np.random.Generator | int | None = None) -> np.ndarray:
    r"""Compress every row of ``G`` to ``tau`` of its ``m`` blocks with one of :data:`KINDS`.

    ``'independent'``: :math:`C_i(g_i) = \frac{m}{\tau} P_{S_i} g_i` with a
    tau-nice :math:`S_i` drawn per row (the book's sparsifier,
    :func:`blockcd.sparsify`); ``'shared'``: the same, with one :math:`S`
    for all rows (a shared random-k mask); ``'top-k'``: :func:`top_k`
    (deterministic; ``rng`` is ignored).  Chapter 3.

    Parameters
    ----------
    G : array of shape (n, d), or (d,)
    m : int, 1 <= m <= d
    tau : int, 1 <= tau <= m
    kind : {'independent', 'shared', 'top-k'}
    rng : numpy Generator or int seed (for the two random kinds)

    Returns
    -------
    ndarray of the shape of ``G``.
    """
    kind = check_choice("kind", kind, KINDS)
    if kind == "top-k":
        return top_k(G, m, tau)
    return sparsify(G, m, tau, rng, sampling=kind)


def aggregation_error(G, m: int, tau: int, kind: str, *, trials: int = 2000,
                      seed: int = 0) -> tuple[float, float]:
    r"""Mean squared error of the master's average, :math:`\mathbb{E}\|\frac1n\sum_i Q(g_i) - \bar g\|^2`.

    For the random kinds this is the Monte-Carlo estimate of
    :func:`blockcd.experiments.variance_mc` (``trials`` draws) with its
    standard error; the exact values are
    :func:`blockcd.theory.aggregation_variance` -- :math:`(\omega/n)\frac1n\sum_i\|g_i\|^2`
    (independent) and :math:`\omega\|\bar g\|^2` (shared), with
    :math:`\omega = m/\tau - 1`.  For ``'top-k'`` the error is deterministic,
    all of it bias, and is returned exactly with standard error 0.  Chapter 3.

    Returns
    -------
    (mean, standard error) : tuple of floats
    """
    kind = check_choice("kind", kind, KINDS)
    G, _ = _check_G(G)
    if kind != "top-k":
        return variance_mc(G, m, tau, sampling=kind, trials=check_int("trials", trials, 2),
                           seed=check_seed("seed", seed))
    diff = top_k(G, m, tau).mean(axis=0) - G.mean(axis=0)
    return float(diff @ diff), 0.0


@dataclass(frozen=True)
class WorkerSweep:
    """Result of :func:`iterations_over_workers`: one row per number of workers.

    Attributes
    ----------
    method : str
        The method, run dense (tau = m).
    ns : ndarray (k,)
        Numbers of workers.
    d : int
        Dimension: each worker sends d numbers per iteration.
    measured : ndarray (k, seeds)
        Iterations until ||x - x*||^2 <= eps ||x0 - x*||^2 (nan if not reached).
    predicted : ndarray (k,)
        The theorem's iteration bound, :func:`blockcd.theory.predicted_iterations`.
    smoothness : ndarray (k,)
        The expected-smoothness constant L(n) that sets the step,
        :func:`blockcd.theory.expected_smoothness` at tau = m.
    """

    method: str
    ns: np.ndarray
    d: int
    measured: np.ndarray
    predicted: np.ndarray
    smoothness: np.ndarray

    @property
    def iterations(self) -> np.ndarray:
        """Median over seeds of the measured iterations, shape (k,)."""
        return np.median(self.measured, axis=1)

    @property
    def received_per_iteration(self) -> np.ndarray:
        """Numbers the master receives per iteration, n d."""
        return self.ns * float(self.d)

    @property
    def received_total(self) -> np.ndarray:
        """Numbers the master receives until the accuracy is reached, n d K(n) (median K)."""
        return self.received_per_iteration * self.iterations


def iterations_over_workers(
    build: Callable[[int], Problem],
    ns: Sequence[int],
    method: str,
    eps: float,
    *,
    seeds: Sequence[int] = (0,),
    batch: int | None = None,
    start: float = 0.5,
) -> WorkerSweep:
    r"""Iterations of a dense method (tau = m) to accuracy ``eps`` as the data are split over n workers.

    For each n, ``build(n)`` must return the problem split over n workers
    (the same data each time, so that f does not change); the method runs
    with its theory step (:func:`blockcd.theory.step_size` at tau = m) through
    :func:`blockcd.experiments.iterations_to`.  The theorem of the method
    (chapters 4-6) guarantees
    :math:`\mathbb{E}\|x^K - x^\star\|^2 \le \varepsilon\|x^0 - x^\star\|^2`
    after :math:`K \approx (\mathcal{L}(n)/\mu)\log(1/\varepsilon)` iterations, with
    :math:`\mathcal{L}(n) = L` for gradient descent and
    :math:`L + \mathcal{L}_{\rm loc}/n` for minibatch SGD (chapter 2).

    Runs are budgeted from that bound: the first run of each seed is
    ``start`` times the bound long, and the budget doubles (re-running the
    seed) until the accuracy is reached or the budget passes four times the
    bound, after which the count is ``nan``.

    Parameters
    ----------
    build : callable n -> Problem
    ns : sequence of int >= 1
        Numbers of workers.
    method : {'ibcd', 'is-sgd', 'is-saga'} or an alias ('gd', 'sgd', 'saga')
    eps : float in (0, 1)
    seeds : sequence of int >= 0
    batch : int or None
        Local minibatch size for SGD and SAGA (default 1).
    start : float in (0, 4]
        First budget as a fraction of the theorem's bound.

    Returns
    -------
    WorkerSweep
    """
    if not callable(build):
        raise TypeError(f"build must be a callable n -> Problem, got {type(build).__name__}")
    if isinstance(method, str) and method.lower() in ("isega", "is-asgd", "asgd"):
        raise ValueError(f"method must be one of 'ibcd', 'is-sgd', 'is-saga' (or 'gd', 'sgd', 'saga'), "
                         f"got {method!r}")
    eps = check_float("eps", eps, positive=True, hi=1.0)
    if eps >= 1:
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    start = check_float("start", start, positive=True, hi=4.0)
    ns = [check_int("ns[]", n, 1) for n in ns]
    if not ns:
        raise ValueError("ns must hold at least one number of workers")
    seeds = [check_seed("seeds[]", s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    measured = np.full((len(ns), len(seeds)), np.nan)
    predicted = np.empty(len(ns))
    smooth = np.empty(len(ns))
    d = None
    for a, n in enumerate(ns):
        p = build(n)
        if not isinstance(p, Problem):
            raise TypeError(f"build({n}) must return a blockcd Problem, got {type(p).__name__}")
        if p.n != n:
            raise ValueError(f"build({n}) returned a problem with {p.n} workers")
        if d is None:
            d = p.d
        elif p.d != d:
            raise ValueError(f"build must keep the dimension fixed: d = {d}, then {p.d} at n = {n}")
        m = p.d
        predicted[a] = theory.predicted_iterations(p, method, m, m, eps, batch=batch)
        smooth[a] = theory.expected_smoothness(p, method, m, m, batch=batch)
        if not math.isfinite(predicted[a]):
            raise ValueError(f"eps = {eps:g} lies inside the neighbourhood the theory predicts for "
                             f"{method} at n = {n}: use an interpolating problem or a larger eps")
        cap_max = max(50, math.ceil(4 * predicted[a]))
        for b, seed in enumerate(seeds):
            cap = max(50, math.ceil(start * predicted[a]))
            while True:
                k = iterations_to(p, method, m, [m], eps, seeds=(seed,), iters_max=cap, batch=batch)[0, 0]
                if np.isfinite(k) or cap >= cap_max:
                    break
                cap = min(2 * cap, cap_max)
            measured[a, b] = k
    return WorkerSweep(method=str(method), ns=np.array(ns), d=int(d), measured=measured,
                       predicted=predicted, smoothness=smooth)

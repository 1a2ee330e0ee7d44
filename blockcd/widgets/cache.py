"""The explorers' caches: problems, runs and sweeps built once per parameter set.

Every explorer asks here for its problem (:func:`cached_problem`), its runs of
:func:`blockcd.run` (:func:`cached_run`), the theorem's bound on a plotted curve
(:func:`theorem_bound`) and the sweeps it reuses while a slider moves
(Monte-Carlo variances, iterations to accuracy on a grid of tau, the theory's
curve against tau), all ``functools.lru_cache``d by their arguments.  Nothing
here draws: figures and controls are in :mod:`blockcd.widgets.canvas`, :mod:`blockcd.widgets.controls` and the
explorer modules.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import experiments, problems, theory
from ..experiments import variance_mc
from ..methods import quiet_unreachable, run
from .controls import log_taus

#: problems the explorers can build (synthetic ones take d; the real ones fix it)
PROBLEMS = ("ridge", "interpolating", "heterogeneous", "logistic", "breast cancer", "digits")
SPLITS = problems.SPLITS
#: runs stop below this relative distance, under the explorers' panels (their bottom is 1e-12)
FLOOR = 1e-13


# --------------------------------------------------------------------------- caches
#: the synthetic problems' rows in all (at most, unless 2 d needs more), 2000 rows of d <= 200 doubles
#: (3.2 MB) stay in the processor's cache, where one pass over them costs some 50 us; 6400 rows
#: (n = 64 workers of 100) did not, and each pass cost 20 times that
MAX_ROWS = 2000
#: ... and at most this many entries (rows x d, 1.3 MB), all MAX_ROWS rows up to d = 80, fewer for
#: wider problems (800 rows at the playground's d = 200, whose passes over 2000 rows made its redraws at
#: n = 64 take about 190 ms in the kernel)
MAX_ENTRIES = 160_000


def _rows_per_worker(n: int, d: int) -> int:
    """Rows per worker of the synthetic problems: 100, or fewer to keep the rows in all within MAX_ROWS and
    MAX_ENTRIES / d, and at least 2d / n (100 up to n = 20 workers for d <= 80)."""
    return max(min(100, -(-min(MAX_ROWS, MAX_ENTRIES // d) // n)), -(-2 * d // n))


@functools.lru_cache(maxsize=48)
def cached_problem(kind: str, n: int, d: int, split: str, seed: int):
    """The explorers' problems, built once per parameter set."""
    if kind == "breast cancer":
        return problems.breast_cancer(n, split=split, seed=seed)
    if kind == "digits":
        return problems.digits(n, split=split, seed=seed)
    rows = _rows_per_worker(n, d)
    if kind == "ridge":
        return problems.synthetic(n, rows, d, cond=10, split=split, seed=seed)
    if kind == "interpolating":
        return problems.synthetic(n, rows, d, cond=10, interpolating=True, split=split, seed=seed)
    if kind == "heterogeneous":
        return problems.synthetic(n, rows, d, cond=10, heterogeneity=1.0, split=split, seed=seed)
    return problems.synthetic(n, rows, d, loss="logistic", lam=1e-2, split=split, seed=seed)


def problem_d(kind: str, d: int) -> int:
    """The dimension a problem kind will have (real data fix it)."""
    return {"breast cancer": 30, "digits": 61}.get(kind, d)


@functools.lru_cache(maxsize=256)
def cached_run(key: tuple, method: str, m: int, tau: int, step: float, iters: int, seed: int):
    """blockcd.run on the cached problem ``cached_problem(*key)``, as the explorers draw it.

    Without f(x^k) (they plot distances), and stopped once ||x^k - x*||^2 falls
    below :data:`FLOOR` times its start, under the bottom of their panels
    (1e-12): a run that converges costs the iterations it needs, not the budget.
    """
    with quiet_unreachable():  # a curve that levels off is what the explorer shows
        return run(cached_problem(*key), method, m=m, tau=tau, step=step, iters=iters, seed=seed, gap=False,
                   until=FLOOR)


def theorem_bound(p, method: str, m: int, tau: int, step: float):
    """(start, rate, floor) of the theorem's bound on ||x^k - x*||^2 / ||x^0 - x*||^2.

    The same starting values as :func:`blockcd.theory.predicted_iterations`:
    ISEGA's Lyapunov function adds c gamma^2 H^0, IS-ASGD's adds 2 (f(x^0) - f*)/mu,
    IBCD and IS-SGD add the neighbourhood 2 gamma sigma^2 / mu.
    """
    q = theory.rate(p, method, m, tau, step=step)
    D0 = float(p.x_star @ p.x_star)  # x^0 = 0
    start, floor = 1.0, 0.0
    if method in ("ibcd", "is-sgd"):
        floor = theory.neighbourhood(p, method, m, tau, step=step) / D0
    elif method == "isega":
        c = 4 * theory.omega(m, tau) * m / (p.n * tau)
        H0 = p.sigma_star2
        start = (D0 + c * step * step * H0) / D0
    elif method == "is-asgd":
        gap0 = p.f(np.zeros(p.d)) - p.f_star
        start = (2 * gap0 / p.mu + D0) / D0
    return start, q, floor


@functools.lru_cache(maxsize=128)
def predicted_curve(key: tuple, method: str, m: int, eps: float):
    """The theorem's iterations to ``eps`` on a grid of tau (it does not depend on the tau chosen)."""
    p = cached_problem(*key)
    taus = np.array(log_taus(m, 24))
    pred = np.array([theory.predicted_iterations(p, method, m, int(t), eps) for t in taus], float)
    pred.setflags(write=False)
    return taus, pred


@functools.lru_cache(maxsize=64)
def variance_vectors(n, d, seed):
    """What workers send in the variance explorer: local gradients of the synthetic ridge problem at x = 0."""
    p = cached_problem("ridge", n, d, "contiguous", seed)
    return p.local_grads(np.zeros(d))


@functools.lru_cache(maxsize=256)
def cached_variance_mc(n, d, m, tau, sampling, trials, seed):
    return variance_mc(variance_vectors(n, d, seed), m, tau, sampling=sampling, trials=trials, seed=seed)


def _sweep_taus(m: int) -> list[int]:
    return log_taus(m, 8)


@functools.lru_cache(maxsize=512)
def iterations_to(method, kind, n, d, m, tau, eps, scale, seed) -> float:
    """:func:`blockcd.experiments.iterations_to` on the cached problem, at most 20,000 iterations (nan beyond)."""
    p = cached_problem(kind, n, d, "contiguous", seed)
    return float(experiments.iterations_to(p, method, m, [tau], eps, seeds=(seed,), iters_max=20_000,
                                           step_scale=scale)[0, 0])


@functools.lru_cache(maxsize=128)
def tradeoff_sweep(method, kind, n, d, m, eps, scale, seed):
    p = cached_problem(kind, n, d, "contiguous", seed)
    taus = _sweep_taus(m)
    K = [iterations_to(method, kind, n, d, m, t, eps, scale, seed) for t in taus]
    ratio = [theory.predicted_ratio(p, method, m, t) for t in taus]
    return taus, K, ratio

"""Iterations to an accuracy: counts over a grid of tau and seeds, the best step, ratios against the theory.

What the chapters compare with :func:`blockcd.theory.predicted_iterations` and
:func:`blockcd.theory.predicted_ratio`: :func:`iterations_to` and the sweeps built on it,
the tuned step, the book's grid search over rho (chapter 7), and where a measured ratio crosses a level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._validate import check_choice, check_float, check_int, check_seed
from ..history import DivergenceError
from ..methods import quiet_unreachable, run


def iterations_to(
    problem,
    method: str,
    m: int,
    taus: Sequence[int],
    eps: float,
    *,
    seeds: Sequence[int] = (0,),
    iters_max: int = 100_000,
    step: float | None = None,
    step_scale: float = 1.0,
    batch: int | None = None,
    sampling: str = "independent",
    diverged: str = "raise",
) -> np.ndarray:
    """Iterations until ||x^k - x*||^2 <= eps ||x^0 - x*||^2, for each tau and seed.

    Each run stops at that accuracy (``blockcd.run(..., until=eps)``), so it
    is exactly as long as needed; the step is ``step`` if given, else
    ``step_scale`` times the theory's step for that tau.

    Returns an array of shape (len(taus), len(seeds)): ``nan`` where the
    accuracy was not reached within ``iters_max``; a run that diverges raises
    :class:`blockcd.DivergenceError` (``diverged='raise'``) or counts ``inf``
    (``diverged='inf'``).
    """
    from .. import theory

    eps = check_float("eps", eps, positive=True)
    iters_max = check_int("iters_max", iters_max, 1)
    step_scale = check_float("step_scale", step_scale, positive=True)
    diverged = check_choice("diverged", diverged, ("raise", "inf"))
    out = np.full((len(taus), len(seeds)), np.nan)
    for a, tau in enumerate(taus):
        g = step if step is not None else step_scale * theory.step_size(problem, method, m, tau, batch=batch,
                                                                         sampling=sampling)
        for b, seed in enumerate(seeds):
            try:
                with quiet_unreachable():  # an unreached accuracy is counted as nan below
                    h = run(problem, method, m=m, tau=tau, step=g, iters=iters_max, seed=seed, batch=batch,
                            sampling=sampling, until=eps)
            except DivergenceError:
                if diverged == "raise":
                    raise
                out[a, b] = np.inf
                continue
            k = h.iters_to(eps)
            if k is not None:
                out[a, b] = k
    return out


def tuned_step(
    problem,
    method: str,
    m: int,
    tau: int,
    eps: float,
    *,
    scales: Sequence[float] = (2, 4, 8, 16, 32, 64),
    seeds: Sequence[int] = (0,),
    batch: int | None = None,
    sampling: str = "independent",
    k_theory=None,
    iters_max: int | None = None,
    start: str = "low",
) -> tuple[float, np.ndarray]:
    """The best step among the theory step times ``scales``: (scale, iterations per seed).

    ``start='low'``: scales are tried upwards from 1 (the theory step, whose
    counts are ``k_theory`` when already measured); the search stops at the
    first scale that diverges, misses the accuracy within the theory step's
    count (or ``iters_max``), or is no better on average than the previous one.
    ``start='high'``: downwards from the largest scale; scales that diverge or
    miss the accuracy within ``iters_max`` are passed over, and the search
    stops at the first scale no better than the one above it (cheaper when
    small multiples need many iterations).  Either way the resolution is the
    ratio of consecutive scales.  Returns (1, the theory step's counts) if no
    multiple does better.
    """
    start = check_choice("start", start, ("low", "high"))
    if k_theory is None and (start == "low" or iters_max is None):
        cap = 100_000 if iters_max is None else iters_max
        k_theory = iterations_to(problem, method, m, [tau], eps, seeds=seeds, iters_max=cap, batch=batch,
                                 sampling=sampling, diverged="inf")[0]
    cap = int(np.nanmax(np.asarray(k_theory, dtype=float))) if iters_max is None else iters_max

    def count(sc):
        return iterations_to(problem, method, m, [tau], eps, seeds=seeds, iters_max=cap, step_scale=float(sc),
                             batch=batch, sampling=sampling, diverged="inf")[0]

    if start == "high":
        best_scale, best = None, None
        for sc in sorted(scales, reverse=True):
            K = count(sc)
            if not np.all(np.isfinite(K)):
                if best is None:
                    continue  # too large a step (diverges or does not get there): try a smaller one
                break
            if best is not None and np.mean(K) >= np.mean(best):
                break
            best_scale, best = float(sc), K
        if best is not None:
            return best_scale, best
        if k_theory is None:
            k_theory = count(1.0)
        return 1.0, np.asarray(k_theory, dtype=float)
    best_scale, best = 1.0, np.asarray(k_theory, dtype=float)
    for sc in scales:
        K = count(sc)
        if not np.all(np.isfinite(K)) or np.mean(K) >= np.mean(best):
            break
        best_scale, best = float(sc), K
    return best_scale, best


def rho_grid(problem, m: int, tau: int, eps: float, rhos: Sequence[float], *, batch: int | None = None,
             seeds: Sequence[int] = (0,), iters_max: int = 100_000) -> np.ndarray:
    """IS-ASGD's iterations to eps for each strong growth parameter rho of a grid (the paper's Figs. 7-8).

    Each rho >= 1 sets the step eta = 1/(rho L) and with it the other parameters
    (:func:`blockcd.theory.asgd_parameters`), as the book's grid search (chapter 7) does.  Returns an
    array of shape (len(rhos), len(seeds)): ``inf`` where the run diverged, ``nan`` where it did
    not reach eps within ``iters_max``.
    """
    rhos = [check_float("rho", r, positive=True) for r in rhos]
    if any(r < 1 for r in rhos):
        raise ValueError(f"every rho of the grid must be >= 1 (the step eta = 1/(rho L) <= 1/L), got {min(rhos)}")
    return np.concatenate([iterations_to(problem, "is-asgd", m, [tau], eps, seeds=seeds, iters_max=iters_max,
                                         step=1.0 / (r * problem.L), batch=batch, diverged="inf")
                           for r in rhos])


def crossing(taus: Sequence[int], ratio: Sequence[float], level: float) -> float:
    """The tau at which measured ratios K(tau)/K(m) fall to ``level`` (> 1), read off the grid (chapter 7).

    ``taus`` increasing, ending at m; ``ratio`` the measured K(tau)/K(m).  Walking down from tau = m, the
    first grid point whose ratio reaches ``level`` and its neighbour above bracket the crossing, which
    is interpolated linearly in m/tau (in which K(tau)/K(m) = 1 + a (m/tau - 1) is linear).  Returns
    ``nan`` if no ratio reaches ``level``.
    """
    level = check_float("level", level)
    if level <= 1:
        raise ValueError(f"level must be > 1 (a ratio K(tau)/K(m) above 1), got {level}")
    taus, ratio = np.asarray(taus, dtype=float), np.asarray(ratio, dtype=float)
    if taus.ndim != 1 or taus.shape != ratio.shape or taus.size < 2:
        raise ValueError(f"taus and ratio must be 1-d of the same length >= 2, got {taus.shape} and {ratio.shape}")
    x = taus[-1] / taus
    for j in range(taus.size - 1, 0, -1):
        if ratio[j - 1] >= level:
            x0, x1, r0, r1 = x[j], x[j - 1], ratio[j], ratio[j - 1]
            return float(taus[-1] / (x0 + (level - r0) / (r1 - r0) * (x1 - x0)))
    return math.nan


def mean_iterations(problem, method: str, m: int, taus: Sequence[int], eps: float, *,
                    seeds: Sequence[int] = (0,), batch: int | None = None, budget: float = 0.6) -> np.ndarray:
    r"""Mean iterations to eps over ``seeds`` for each tau, each run capped at a share of the theorem's count.

    The cap of a run at tau is ``budget`` times :func:`blockcd.theory.predicted_iterations` (the bound
    :math:`K(\tau) \approx 2\mathcal{L}(\tau)/\mu\,\log(1/\varepsilon)` of chapters 4-5, or
    :math:`\rho(\tau)\sqrt\kappa\log(c/\varepsilon)` for IS-ASGD, chapter 7).  Measured counts lie at a
    third to a half of the bound, so a budget of 0.5-0.7 is enough; a run that falls short gives ``nan``,
    and the chapter's assertion on it fails rather than passing with a truncated count.

    Parameters
    ----------
    problem, method, m, taus, eps, seeds, batch
        As for :func:`iterations_to`.
    budget : float
        The cap as a share of the theorem's count, > 0 (default 0.6).

    Returns
    -------
    numpy.ndarray
        Shape (len(taus),): the mean count over the seeds, ``nan`` where a run missed the accuracy.
    """
    from .. import theory

    budget = check_float("budget", budget, positive=True)
    eps = check_float("eps", eps, positive=True)
    out = np.empty(len(taus))
    for a, tau in enumerate(taus):
        bound = theory.predicted_iterations(problem, method, m, tau, eps, batch=batch)
        if not math.isfinite(bound):
            raise ValueError(f"eps = {eps:g} lies inside the theorem's neighbourhood at tau = {tau}: "
                             "the theorem gives no iteration count to budget")
        cap = int(budget * bound)
        out[a] = np.mean(iterations_to(problem, method, m, [tau], eps, seeds=seeds, batch=batch,
                                       iters_max=max(cap, 1)))
    return out


def rho_search(problem, m: int, tau: int, eps: float, grid: Sequence[float], *, batch: int | None = None,
               seeds: Sequence[int] = (0,)) -> tuple[np.ndarray, np.ndarray, float, float]:
    r"""The book's grid search over IS-ASGD's strong growth parameter, beside the theory's (chapter 7).

    Runs IS-ASGD with the theory's :math:`\rho(\tau)` (:func:`blockcd.theory.rho`), whose mean count over
    ``seeds`` is :math:`K_{\text{th}}`, then with every :math:`\rho` of ``grid`` below it
    (:func:`rho_grid`), each run capped at :math:`2K_{\text{th}}` iterations.

    Returns
    -------
    rhos : numpy.ndarray
        The grid's values below :math:`\rho(\tau)`, then :math:`\rho(\tau)` itself.
    counts : numpy.ndarray
        Mean iterations to ``eps`` for each of ``rhos``; ``inf`` where a run diverged or missed the
        accuracy within twice the theory's count.
    rho_theory, k_theory : float
        :math:`\rho(\tau)` and its mean count.
    """
    from .. import theory

    r_th = theory.rho(problem, m, tau, batch=batch)
    k_th = float(np.mean(iterations_to(problem, "is-asgd", m, [tau], eps, seeds=seeds, batch=batch)))
    if not math.isfinite(k_th):
        raise ValueError(f"IS-ASGD with the theory's rho did not reach eps = {eps:g} at tau = {tau}")
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1:
        raise ValueError(f"grid must be a 1-d sequence of rho values, got shape {grid.shape}")
    rhos = np.append(grid[grid < r_th], r_th)
    counts = rho_grid(problem, m, tau, eps, rhos, batch=batch, seeds=seeds, iters_max=int(2 * k_th)).mean(axis=1)
    return rhos, np.where(np.isnan(counts), np.inf, counts), float(r_th), k_th


def iteration_ratios(problem, method: str, m: int, taus: Sequence[int], eps: float, *,
                     seeds: Sequence[int] = (0, 1), cap: float = 1.25) -> dict[str, np.ndarray | float]:
    r"""Measured and predicted K(tau)/K(m), the check of the m/n rule (chapter 4).

    ``K(m)`` is one run at ``tau = m`` (deterministic: every block is sent); ``K(tau)`` is the
    mean over ``seeds`` of :func:`iterations_to` at the theory's step, each run capped at
    ``cap`` times the predicted count

    .. math:: K(\tau) \approx K(m)\,\frac{\mathcal{L}(\tau)}{\mathcal{L}(m)}
              = K(m)\Big(1 + \Big(\frac{m}{\tau} - 1\Big)\frac{r}{n}\Big)

    (:func:`blockcd.theory.predicted_ratio`), so a run that misses the prediction by more than
    the cap returns ``nan`` and any comparison with it fails.

    Parameters
    ----------
    problem : Problem
    method : str
        A method of :func:`blockcd.run`.
    m : int
        Blocks, >= 1.
    taus : sequence of int
        Blocks per worker, each in [1, m].
    eps : float
        Accuracy ||x^K - x*||^2 <= eps ||x^0 - x*||^2, > 0.
    seeds : sequence of int
        Seeds averaged for each tau < m.
    cap : float
        Run length as a multiple of the predicted count, >= 1.

    Returns
    -------
    dict
        ``K_m`` (float), and arrays over ``taus``: ``K``, ``measured`` (K / K_m), ``predicted``.
    """
    from .. import theory

    m = check_int("m", m, 1)
    taus = [check_int("tau", t, 1, m) for t in taus]
    cap = check_float("cap", cap, positive=True)
    if cap < 1:
        raise ValueError(f"cap must be >= 1 (a multiple of the predicted count), got {cap}")
    pred = np.array([theory.predicted_ratio(problem, method, m, t) for t in taus])
    K_m = float(iterations_to(problem, method, m, [m], eps)[0, 0])
    K = np.array([np.mean(iterations_to(problem, method, m, [t], eps, seeds=seeds,
                                        iters_max=int(cap * K_m * pr)))
                  for t, pr in zip(taus, pred)])
    return {"K_m": K_m, "K": K, "measured": K / K_m, "predicted": pred}


#: multiples of the theory step that :func:`tuned_run` tries, from the top (chapter 6)
TUNED_SCALES = (4, 16, 64, 256, 1024)


def tuned_run(problem, method: str, m: int, tau: int, *, eps: float = 1e-8,
              scales: Sequence[float] = TUNED_SCALES, batch: int | None = None, iters: int = 2000,
              seed: int = 0):
    """The fastest multiple of the theory step to ``eps``, and a run of ``iters`` rounds with it.

    :func:`tuned_step` with ``start='high'`` and each trial capped at ``iters``
    iterations: the multiples ``scales`` of the theory step are tried from the
    largest down, those that diverge or miss
    :math:`\\lVert x^k - x^\\star\\rVert^2 \\le \\varepsilon\\lVert x^0 - x^\\star\\rVert^2`
    are passed over, and the search stops at the first multiple no faster than
    the one above it.  Chapter 6 draws the returned run beside the theory
    step's (figures ``fig-isega-real`` and ``fig-is-saga``).

    Parameters
    ----------
    problem : Problem
    method : str
        A method of :data:`blockcd.registry.METHODS` with a theory step.
    m, tau : int
        Blocks and blocks sent per worker, 1 <= tau <= m.
    eps : float
        Accuracy the search asks for (default 1e-8), > 0.
    scales : sequence of float
        Multiples of the theory step to try, each > 0.
    batch : int or None
        Minibatch size for the methods that take one.
    iters : int
        Cap of every trial and length of the returned run (default 2000), >= 1.
    seed : int
        Seed of the returned run (the trials use seed 0).

    Returns
    -------
    (float, History)
        The multiple found (1 if none is faster than the theory step) and the run with it.
    """
    from .. import theory

    eps = check_float("eps", eps, positive=True)
    iters = check_int("iters", iters, 1)
    seed = check_seed("seed", seed)
    scales = [check_float("scales", s, positive=True) for s in scales]
    if not scales:
        raise ValueError("scales must hold at least one multiple of the theory step")
    scale, _ = tuned_step(problem, method, m, tau, eps, scales=scales, batch=batch, iters_max=iters, start="high")
    step = scale * theory.step_size(problem, method, m, tau, batch=batch)
    return scale, run(problem, method, m=m, tau=tau, step=step, iters=iters, batch=batch, seed=seed)


def dense_and_sparse(problem, method: str, m: int, tau: int, eps: float, *, seeds: Sequence[int] = (0,),
                     batch: int | None = None) -> dict:
    r"""Iterations to ``eps`` at :math:`\tau = m` and at ``tau`` with the theory steps, against the bounds.

    The measured ratio :math:`K(\tau)/K(m)` and the ratio of the theorem's iteration
    bounds (:func:`blockcd.theory.predicted_iterations`, all of :math:`\Psi^0`) that
    chapter 6 compares at :math:`\tau = m/n`.  Each run is capped at half its
    bound plus 20 iterations (the counts lie far below the bounds).

    Returns
    -------
    dict
        ``steps``, ``bounds`` and ``counts`` (mean over ``seeds``), each a pair
        (tau = m, tau), and the ratios ``measured`` and ``predicted``.
    """
    from .. import theory

    eps = check_float("eps", eps, positive=True)
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    taus = (m, tau)   # (theory.step_size checks them)
    steps = tuple(theory.step_size(problem, method, m, t, batch=batch) for t in taus)
    bounds = tuple(theory.predicted_iterations(problem, method, m, t, eps, batch=batch) for t in taus)
    counts = tuple(float(np.mean(iterations_to(problem, method, m, [t], eps, seeds=seeds, batch=batch,
                                               iters_max=int(0.5 * kb) + 20)))
                   for t, kb in zip(taus, bounds))
    return {"steps": steps, "bounds": bounds, "counts": counts,
            "measured": counts[1] / counts[0], "predicted": bounds[1] / bounds[0]}

"""Sweeps the chapters and ``python -m blockcd reproduce`` share.

Small, seeded loops over :func:`blockcd.run` and the sparsifier: iterations
to an accuracy over a grid of tau (and seeds), the best step on a grid of
multiples of the theory's, and Monte-Carlo estimates of the aggregation
variance of the key lemma.  Each returns plain arrays; the
plotting is in :mod:`blockcd.plotting` and the predictions in
:mod:`blockcd.theory`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._validate import check_choice, check_float, check_int, check_seed
from .blocks import SAMPLINGS, nice_mask, partition
from .history import DivergenceError
from .methods import run


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
    from . import theory

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


def variance_mc(G, m: int, tau: int, *, sampling: str = "independent", trials: int = 2000,
                seed: int = 0) -> tuple[float, float]:
    """Monte-Carlo estimate of E||(1/n) sum_i C_i(g_i) - gbar||^2 and its standard error.

    Draws ``trials`` independent aggregations of the rows of ``G`` (n, d) in
    one batched operation; compare with :func:`blockcd.theory.aggregation_variance`.
    """
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2:
        raise ValueError(f"G must have shape (n, d), got {G.shape}")
    n, d = G.shape
    blocks = partition(d, m)
    tau = check_int("tau", tau, 1, blocks.m)
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    trials = check_int("trials", trials, 2)
    rng = np.random.default_rng(check_seed("seed", seed))
    gbar = G.mean(axis=0)
    vals = np.empty(trials)
    chunk = max(1, 2**22 // max(n * d, 1))
    for s in range(0, trials, chunk):
        t = min(chunk, trials - s)
        rows = n if sampling == "independent" else 1
        mask = nice_mask(rng.random((t * rows, blocks.m)), tau).reshape(t, rows, blocks.m)
        coord = mask[:, :, blocks.block_of]  # (t, rows, d)
        agg = np.einsum("tnd,nd->td", np.broadcast_to(coord, (t, n, d)), G) * (blocks.m / tau) / n
        vals[s : s + t] = np.sum((agg - gbar) ** 2, axis=1)
    return float(vals.mean()), float(vals.std(ddof=1) / np.sqrt(trials))


def growth_mc(problem, x, m: int, tau: int, *, batch: int | None = None, draws: int = 2000,
              seed: int = 0) -> tuple[float, float]:
    r"""Monte-Carlo estimate of IS-ASGD's E||q(x)||^2 and its standard error (chapter 7, Lemma 1).

    q(x) = (m/(tau n)) sum_i P_{S_i} g_i(x) is the master's estimate, drawn ``draws`` times by the
    rule of :mod:`blockcd.rules` itself, with the block choices and minibatches of
    iterations k = 0, ..., draws - 1 of a run with this ``seed`` (so the draws are independent);
    g_i is worker i's full local gradient (``batch=None``) or its b-minibatch gradient.  Compare
    with rho ||grad f(x)||^2 (:func:`blockcd.theory.rho`, :func:`blockcd.theory.strong_growth_exact`).
    """
    from .methods import Sent, setup

    s = setup(problem, "is-asgd", m=m, tau=tau, iters=1, seed=seed, batch=batch, theory_step=False)
    draws = check_int("draws", draws, 2)
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (problem.d,):
        raise ValueError(f"x must have shape (d,) = ({problem.d},), got {x.shape}")
    rule, o, blocks = s.method.rule, problem.workers(), s.blocks
    sampler, batches = s.sampler(), s.minibatches()
    scale = (s.m / s.tau) / problem.n
    vals = np.empty(draws)
    for k in range(draws):
        mask = None if s.tau == s.m else sampler.masks(k)
        idx = None if batches is None else batches.draw(k)
        total, _ = rule.send(o, None, x, idx, Sent(blocks, mask, False, want_f=False))
        q = total * scale
        vals[k] = q @ q
    return float(vals.mean()), float(vals.std(ddof=1) / np.sqrt(draws))


def rho_grid(problem, m: int, tau: int, eps: float, rhos: Sequence[float], *, batch: int | None = None,
             seeds: Sequence[int] = (0,), iters_max: int = 100_000) -> np.ndarray:
    """IS-ASGD's iterations to eps for each strong growth parameter rho of a grid (the paper's Figs. 7-8).

    Each rho >= 1 sets the step eta = 1/(rho L) and with it the other parameters
    (:func:`blockcd.theory.asgd_parameters`), as the paper's grid search does.  Returns an array of
    shape (len(rhos), len(seeds)): ``inf`` where the run diverged, ``nan`` where it did not reach eps
    within ``iters_max``.
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
    from . import theory

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


def stationary_floor(problem, method: str, m: int, tau: int, *, batch: int | None = None,
                     seeds: Sequence[int] = (0,), burn: float = 1.0, window: float = 3.0) -> float:
    r"""The measured floor of a constant-step method: mean of ||x^k - x*||^2 in its stationary regime (chapter 5).

    Each run takes the theory's step :math:`\gamma` (:func:`blockcd.theory.step_size`), starts at
    :math:`x^0 = x^\star`, spends :math:`\lfloor \text{burn}/(\gamma\mu)\rfloor` iterations reaching its
    stationary regime and then averages :math:`\lVert x^k - x^\star\rVert^2` over the next
    :math:`\lfloor \text{window}/(\gamma\mu)\rfloor` iterations; the result is the mean over ``seeds``.
    Compare with the theorem's floor :func:`blockcd.theory.neighbourhood`.

    Parameters
    ----------
    problem, method, m, tau, batch, seeds
        As for :func:`blockcd.run`.
    burn, window : float
        Lengths in units of :math:`1/(\gamma\mu)`, the time the contraction needs to forget the start; > 0.

    Returns
    -------
    float
        The floor, in the units of :math:`\lVert x - x^\star\rVert^2`.
    """
    from . import theory

    burn = check_float("burn", burn, positive=True)
    window = check_float("window", window, positive=True)
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    gamma = theory.step_size(problem, method, m, tau, batch=batch)
    b, w = int(burn / (gamma * problem.mu)), int(window / (gamma * problem.mu))
    means, _ = _tail_means(problem, method, m, tau, seeds, batch=batch, x0=problem.x_star, burn=b, tail=max(w, 1))
    return float(means.mean())


def _tail_means(problem, method: str, m: int, tau: int, seeds, *, batch, x0, burn: int, tail: int):
    """Each seed's mean of ||x^k - x*||^2 over iterations burn..burn+tail-1, and the first seed's history:
    the one measurement behind :func:`stationary_floor` and :func:`stationary_error`."""
    hs = [run(problem, method, m=m, tau=tau, batch=batch, seed=check_seed("seed", s), x0=x0, iters=burn + tail)
          for s in seeds]
    return np.array([h.dist2[burn:].mean() for h in hs]), hs[0]


def stationarity(problem, m: int, taus: Sequence[int], iters: int, *, batch: int | None = None,
                 step: float | None = None, seeds: Sequence[int] = (0,)
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""IS-SGD on a non-convex problem: the measured :math:`\mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2` for each tau (chapter 5).

    For one run, the mean of ``History.grad2`` over :math:`k = 0, \dots, t` is the expectation of
    :math:`\lVert\nabla f(\hat x_t)\rVert^2` over :math:`\hat x_t` drawn uniformly from the iterates;
    the runs for different seeds are independent, so their mean estimates
    :math:`\mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2` with the standard error of a mean.

    Parameters
    ----------
    problem
        A problem of :func:`blockcd.problems.nonconvex` (or any problem; the history records grad2).
    m, taus, iters, batch, step
        As for :func:`blockcd.run` with ``"is-sgd"``; ``step=None`` takes the run's default
        (:func:`blockcd.theory.nonconvex_step` on a non-convex problem).
    seeds : sequence of int
        At least two, for a standard error.

    Returns
    -------
    tuple of numpy.ndarray
        Each of shape (len(taus),): the mean over seeds, its standard error, the largest dissimilarity
        :math:`\nu^2` seen at any iterate of any run (``History.nu2``), and the step the runs took.
    """
    iters = check_int("iters", iters, 1)
    if len(seeds) < 2:
        raise ValueError(f"seeds must name at least two seeds (for a standard error), got {len(seeds)}")
    mean, se, nu2, steps = (np.empty(len(taus)) for _ in range(4))
    for j, tau in enumerate(taus):
        hs = [run(problem, "is-sgd", m=m, tau=tau, batch=batch, iters=iters, step=step, seed=check_seed("seed", s))
              for s in seeds]
        v = np.array([h.grad2.mean() for h in hs])
        mean[j], se[j] = v.mean(), v.std(ddof=1) / np.sqrt(len(v))
        nu2[j], steps[j] = max(h.nu2.max() for h in hs), hs[0].step
    return mean, se, nu2, steps


def _row_gradients(problem, x) -> np.ndarray:
    """grad f_ij(x) for every row j of every worker, shape (l, n, d) (equal-sized workers only)."""
    sizes = np.asarray(problem.sizes)
    if np.any(sizes != sizes[0]):
        raise ValueError(f"the workers must hold the same number of rows, got sizes from {sizes.min()} to {sizes.max()}")
    return np.stack([problem.minibatch_grads(x, np.full((problem.n, 1), j)) for j in range(int(sizes[0]))])


def composition_identity(problem, x, m: int, tau: int) -> float:
    r"""The exact :math:`\mathbb{E}\lVert G(x) - G(x^\star)\rVert^2` of IS-SGD with one row per minibatch (chapter 5).

    The right-hand side of the composition identity,

    .. math::

       \lVert\nabla f(x)\rVert^2 + \frac{1}{n^2}\sum_{i=1}^n\Big(\frac{m}{\tau}\,
       \mathbb{E}\lVert u_i\rVert^2 - \lVert\mathbb{E}\,u_i\rVert^2\Big),
       \qquad u_i = g_i(x) - g_i(x^\star),

    with every expectation over the minibatch computed exactly as the mean over a worker's rows
    (:math:`b = 1`, equal-sized workers).  Compare with :func:`composition_mc`.
    """
    m, tau = check_int("m", m, 1), check_int("tau", tau, 1)
    if tau > m:
        raise ValueError(f"tau must be in 1..m = {m}, got {tau}")
    U = _row_gradients(problem, x) - _row_gradients(problem, problem.x_star)
    Eu = problem.local_grads(x) - problem.local_grads(problem.x_star)       # E u_i, shape (n, d)
    Eu2 = np.mean(np.sum(U**2, axis=2), axis=0)                              # E ||u_i||^2, shape (n,)
    g = Eu.mean(axis=0)
    return float(g @ g + np.sum(m / tau * Eu2 - np.sum(Eu**2, axis=1)) / problem.n**2)


def composition_mc(problem, x, m: int, tau: int, *, trials: int = 20_000,
                   seed: int = 0) -> tuple[float, float, float, float]:
    r"""Monte-Carlo :math:`\mathbb{E}\lVert G(x) - G(x^\star)\rVert^2` and :math:`\mathbb{E}\lVert G(x^\star)\rVert^2` (chapter 5).

    ``trials`` independent rounds of IS-SGD's estimator with one row per minibatch: each worker draws
    a row uniformly and a :math:`\tau`-nice set of blocks (:func:`blockcd.sparsify`), the same ones at
    :math:`x` and :math:`x^\star`.  Compare with :func:`composition_identity` and with
    :func:`blockcd.theory.gradient_noise` at ``batch=1``.

    Returns
    -------
    tuple of float
        The mean and standard error of :math:`\lVert G(x) - G(x^\star)\rVert^2`, then those of
        :math:`\lVert G(x^\star)\rVert^2`.
    """
    from .blocks import sparsify

    m, tau = check_int("m", m, 1), check_int("tau", tau, 1)
    trials = check_int("trials", trials, 2)
    rng = np.random.default_rng(check_seed("seed", seed))
    Gx, Gs = _row_gradients(problem, x), _row_gradients(problem, problem.x_star)
    n, d = problem.n, problem.d
    j, w = rng.integers(0, Gx.shape[0], size=(trials, n)), np.arange(n)    # one row per worker and round

    def moment(U):                                                           # ||(1/n) sum_i C_i(u_i)||^2
        C = sparsify(U.reshape(trials * n, d), m, tau, rng).reshape(trials, n, d)
        v = np.sum(C.mean(axis=1) ** 2, axis=1)
        return float(v.mean()), float(v.std(ddof=1) / np.sqrt(trials))

    return (*moment(Gx[j, w] - Gs[j, w]), *moment(Gs[j, w]))


def rho_search(problem, m: int, tau: int, eps: float, grid: Sequence[float], *, batch: int | None = None,
               seeds: Sequence[int] = (0,)) -> tuple[np.ndarray, np.ndarray, float, float]:
    r"""The paper's grid search over IS-ASGD's strong growth parameter, beside the theory's (chapter 7).

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
    from . import theory

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


def coverage_mc(n: int, m: int, tau: int, *, rounds: int = 1000, seed: int = 0,
                sampling: str = "independent") -> tuple[float, float]:
    r"""Monte-Carlo estimate of the distinct blocks the master receives per round, with its standard error.

    Counts, over ``rounds`` rounds of :class:`blockcd.blocks.BlockSampler` (the choices of
    :func:`blockcd.run`), the blocks that at least one of the ``n`` workers sends.  Compare with
    the coverage lemma of chapter 3, :func:`blockcd.theory.coverage`,

    .. math:: \mathbb{E}\,\#\{j : j \in S_i \text{ for some } i\} = m\big(1 - (1 - \tau/m)^n\big)

    for independent sampling, and exactly ``tau`` for shared sampling.

    Parameters
    ----------
    n, m, tau : int
        Workers (>= 1), blocks (>= 1) and blocks per worker, 1 <= tau <= m.
    rounds : int
        Rounds drawn, >= 2.
    seed : int
        The run seed of the sampler.
    sampling : {"independent", "shared"}
        Each worker its own choice, or one choice for all.

    Returns
    -------
    (mean, se) : tuple of float
    """
    from .blocks import BlockSampler

    n = check_int("n", n, 1)
    m = check_int("m", m, 1)
    tau = check_int("tau", tau, 1, m)
    rounds = check_int("rounds", rounds, 2)
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    sampler = BlockSampler(n, m, tau, seed=check_seed("seed", seed), sampling=sampling)
    counts = np.array([sampler.masks(k).any(axis=0).sum() for k in range(rounds)], dtype=float)
    return float(counts.mean()), float(counts.std(ddof=1) / np.sqrt(rounds))


def smoothness_ratios(problem, m: int, taus: Sequence[int], *, points: int = 1000,
                      seed: int = 0) -> dict[int, float]:
    r"""Largest E||g(x) - g(x*)||^2 / (2 D(x)) of IBCD over random points, for each tau (chapter 4).

    The expected smoothness lemma of IBCD bounds this ratio by
    :math:`\mathcal{L}(\tau) = L + \omega L_{\max}/n`
    (:func:`blockcd.theory.expected_smoothness`).  Its proof computes the numerator exactly,

    .. math:: \mathbb{E}\lVert g(x) - g(x^\star)\rVert^2 = \lVert\bar v\rVert^2
              + \frac{\omega}{n}\cdot\frac1n\sum_i\lVert v_i\rVert^2,
              \qquad v_i = \nabla f_i(x) - \nabla f_i(x^\star),

    so no sampling is involved: the points are :math:`x^\star + z`, :math:`z` standard normal,
    drawn with ``seed``.

    Parameters
    ----------
    problem : Problem
        A convex problem with a minimiser ``x_star``.
    m : int
        Blocks, 1 <= m <= d.
    taus : sequence of int
        Blocks per worker, each in [1, m].
    points : int
        Random points, >= 1.
    seed : int
        Seed of the points.

    Returns
    -------
    dict
        ``{tau: largest ratio}``.
    """
    from .theory import aggregation_variance

    m = check_int("m", m, 1, problem.d)
    taus = [check_int("tau", t, 1, m) for t in taus]
    points = check_int("points", points, 1)
    rng = np.random.default_rng(check_seed("seed", seed))
    G_star = problem.local_grads(problem.x_star)
    worst = {t: 0.0 for t in taus}
    for x in problem.x_star + rng.standard_normal((points, problem.d)):
        V = problem.local_grads(x) - G_star
        D = problem.f(x) - problem.f_star
        vbar = V.mean(axis=0)
        for t in taus:
            worst[t] = max(worst[t], (vbar @ vbar + aggregation_variance(V, m, t)) / (2 * D))
    return worst


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
    from . import theory

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


def stationary_error(problem, method: str, m: int, tau: int, *, seeds: Sequence[int] = (0, 1, 2),
                     tail: int = 2000, burn: int | None = None):
    r"""Where a method stalls: the mean of ||x^k - x*||^2 over the last ``tail`` iterations (chapter 4).

    The same measurement as :func:`stationary_floor`, which starts at :math:`x^\star` and counts
    in units of :math:`1/(\gamma\mu)`; this one starts at the default :math:`x^0`, counts
    iterations, and gives a standard error.

    Each seed runs ``burn + tail`` iterations at the theory's step :math:`\gamma`; the burn-in
    defaults to :math:`3/(\gamma\mu)` iterations, after which the first term of the SGD theorem,
    :math:`(1 - \gamma\mu)^k\lVert x^0 - x^\star\rVert^2`, has fallen by :math:`e^{-3}`.  Compare
    the mean with the theorem's radius (:func:`blockcd.theory.neighbourhood`)

    .. math:: R(\tau) = \frac{2\gamma\,\omega\,\sigma_\star^2}{n\mu} .

    Parameters
    ----------
    problem : Problem
    method : str
        A method of :func:`blockcd.run`.
    m, tau : int
        Blocks and blocks per worker, 1 <= tau <= m.
    seeds : sequence of int
        At least two seeds; the standard error is that of the mean over them.
    tail : int
        Iterations averaged after the burn-in, >= 1.
    burn : int, optional
        Burn-in iterations, >= 0.

    Returns
    -------
    (mean, se, history) : tuple
        The mean over seeds of each run's tail average, its standard error, and the first seed's
        :class:`blockcd.History` (for a figure).
    """
    from . import theory

    seeds = [check_seed("seed", s) for s in seeds]
    if len(seeds) < 2:
        raise ValueError(f"seeds must hold at least two seeds (for a standard error), got {len(seeds)}")
    tail = check_int("tail", tail, 1)
    if burn is None:
        burn = int(3 / (theory.step_size(problem, method, m, tau) * problem.mu))
    burn = check_int("burn", burn, 0)
    means, h0 = _tail_means(problem, method, m, tau, seeds, batch=None, x0=None, burn=burn, tail=tail)
    return float(means.mean()), float(means.std(ddof=1) / np.sqrt(len(seeds))), h0


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
    from . import theory

    eps = check_float("eps", eps, positive=True)
    iters = check_int("iters", iters, 1)
    seed = check_seed("seed", seed)
    scales = [check_float("scales", s, positive=True) for s in scales]
    if not scales:
        raise ValueError("scales must hold at least one multiple of the theory step")
    scale, _ = tuned_step(problem, method, m, tau, eps, scales=scales, batch=batch, iters_max=iters, start="high")
    step = scale * theory.step_size(problem, method, m, tau, batch=batch)
    return scale, run(problem, method, m=m, tau=tau, step=step, iters=iters, batch=batch, seed=seed)


def _random_state(problem, rng, spread: tuple[float, float]):
    """A point x and shifts h_i at random distances from x* and grad f_i(x*) (log-uniform scales)."""
    x = problem.x_star + rng.standard_normal(problem.d) * np.exp(rng.uniform(*spread))
    h = problem.local_grads_star + rng.standard_normal((problem.n, problem.d)) * np.exp(rng.uniform(*spread))
    return x, h


def isega_inequality_ratios(problem, m: int, tau: int, *, states: int = 1000, seed: int = 0) -> np.ndarray:
    r"""Largest left/right ratios of ISEGA's one-step inequalities over random states (chapter 6).

    At ``states`` random points x and shifts :math:`h_i` (at distances
    :math:`e^{U}`, :math:`U \sim \mathcal{U}(-3, 1)`, from :math:`x^\star` and
    :math:`\nabla f_i(x^\star)`), every expectation over one round is computed
    exactly, with :math:`q = \tau/m`, :math:`\omega = m/\tau - 1`,
    :math:`D = f(x) - f^\star` and :math:`H = \frac1n\sum_i\lVert h_i - \nabla f_i(x^\star)\rVert^2`:

    - item 1 of ``lem-isega-step``: :math:`\mathbb{E}\lVert g\rVert^2 = \lVert\nabla f(x)\rVert^2 +
      \frac{\omega}{n^2}\sum_i\lVert\nabla f_i(x) - h_i\rVert^2` (the key lemma) against
      :math:`2LD + 4\omega L_{\max}D/n + 2\omega H/n`;
    - item 2: :math:`\mathbb{E}H^+ = (1 - q)H + \frac qn\sum_i\lVert\nabla f_i(x) - \nabla f_i(x^\star)\rVert^2`
      against :math:`(1 - q)H + 2qL_{\max}D`;
    - ``thm-isega``: :math:`\mathbb{E}\Psi^+` against the rate times :math:`\Psi`, with
      :math:`\Psi = \lVert x - x^\star\rVert^2 + c\gamma^2H`, :math:`c = 4\omega/(nq)` and the theory step.

    Returns
    -------
    numpy.ndarray
        The three largest ratios (item 1, item 2, theorem); each is at most 1 if the inequalities hold.
    """
    from . import theory

    gamma, rate = theory.step_size(problem, "isega", m, tau), theory.rate(problem, "isega", m, tau)  # checks m, tau
    states = check_int("states", states, 1)
    seed = check_seed("seed", seed)
    n, xs, Gs = problem.n, problem.x_star, problem.local_grads_star
    w, q = theory.omega(m, tau), tau / m
    c = 4 * w / (n * q)
    rng = np.random.default_rng(seed)
    worst = np.zeros(3)
    for _ in range(states):
        x, h = _random_state(problem, rng, (-3.0, 1.0))
        G, e, D = problem.local_grads(x), x - xs, problem.f(x) - problem.f_star
        gbar, H = G.mean(axis=0), np.mean(np.sum((h - Gs) ** 2, axis=1))
        Eg2 = gbar @ gbar + theory.aggregation_variance(G - h, m, tau)
        EH = (1 - q) * H + q * np.mean(np.sum((G - Gs) ** 2, axis=1))
        Ex = e @ e - 2 * gamma * gbar @ e + gamma**2 * Eg2
        worst = np.maximum(worst, [
            Eg2 / (2 * problem.L * D + 4 * w * problem.L_max * D / n + 2 * w * H / n),
            EH / ((1 - q) * H + 2 * q * problem.L_max * D),
            (Ex + c * gamma**2 * EH) / (rate * (e @ e + c * gamma**2 * H))])
    return worst


def is_saga_inequality_ratio(problem, m: int, tau: int, *, states: int = 300, seed: int = 0) -> float:
    r"""Largest ratio :math:`\mathbb{E}\Psi^+ / (\text{rate}\cdot\Psi)` of IS-SAGA with b = 1 (chapter 6).

    :math:`\Psi = \lVert x - x^\star\rVert^2 + c\gamma^2H + a\gamma^2Q` of ``thm-is-saga`` with
    :math:`c = 4\omega/(nq)`, :math:`a = 4l\theta(1 + 6\omega)/(bn)`, :math:`\theta = (l - b)/(b(l - 1))`
    and the theory step.  With minibatches of one row every expectation over the
    minibatch is the average over a worker's l rows, and over the blocks it is
    exact as in :func:`isega_inequality_ratios`, so each state's ratio is exact.  The
    states are random points, shifts and tables :math:`J_{ij}` at log-uniform
    distances from their targets; every worker must hold the same number l of rows.

    Returns
    -------
    float
        The largest ratio; at most 1 if the theorem's contraction holds.
    """
    from . import theory

    gamma = theory.step_size(problem, "is-saga", m, tau, batch=1)        # checks m and tau
    states = check_int("states", states, 1)
    seed = check_seed("seed", seed)
    sizes = np.asarray(problem.sizes)
    if np.any(sizes != sizes[0]) or sizes[0] < 2:
        raise ValueError(f"problem must give every worker the same number l >= 2 of rows, got sizes {sizes.tolist()}")
    n, l, b = problem.n, int(sizes[0]), 1
    xs, Gs = problem.x_star, problem.local_grads_star
    w, q, theta = theory.omega(m, tau), tau / m, (l - b) / (b * (l - 1))
    rate = theory.rate(problem, "is-saga", m, tau, batch=b)
    c, a = 4 * w / (n * q), 4 * l * theta * (1 + 6 * w) / (b * n)
    rows = [np.full((n, 1), j) for j in range(l)]
    Rs = np.stack([problem.minibatch_grads(xs, r) for r in rows])        # grad f_ij(x*), shape (l, n, d)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(states):
        s = np.exp(rng.uniform(-3, 1, size=3))
        x = xs + s[0] * rng.standard_normal(problem.d)
        h = Gs + s[1] * rng.standard_normal((n, problem.d))
        J = Rs + s[2] * rng.standard_normal((l, n, problem.d))
        Rx = np.stack([problem.minibatch_grads(x, r) for r in rows])
        g_ij = Rx - J + J.mean(axis=0)                                     # the SAGA estimate for each row j
        G, e = problem.local_grads(x), x - xs
        gbar = G.mean(axis=0)
        Eg2 = (gbar @ gbar + np.sum(np.mean(np.sum((g_ij - G) ** 2, axis=2), axis=0)) / n**2
               + w / n**2 * np.sum(np.mean(np.sum((g_ij - h) ** 2, axis=2), axis=0)))
        H, Q = np.mean(np.sum((h - Gs) ** 2, axis=1)), np.mean(np.sum((J - Rs) ** 2, axis=2))
        EH = (1 - q) * H + q * np.mean(np.sum((g_ij - Gs) ** 2, axis=2))
        EQ = (1 - 1 / l) * Q + np.mean(np.sum((Rx - Rs) ** 2, axis=2)) / l
        Ex = e @ e - 2 * gamma * gbar @ e + gamma**2 * Eg2
        worst = max(worst, (Ex + gamma**2 * (c * EH + a * EQ)) / (rate * (e @ e + gamma**2 * (c * H + a * Q))))
    return float(worst)


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
    from . import theory

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


def isega_shifts(problem, m: int, tau: int, iters: int, *, step: float | None = None, seed: int = 0):
    r"""Run ISEGA worker by worker and record every shift :math:`h_i^k` (chapter 6's picture of the shifts).

    The same run as :func:`blockcd.run` with these arguments (the per-worker loop of
    :func:`blockcd.reference.run`, each worker's blocks from (seed, worker, round)),
    with the workers' shifts copied after every round.

    Returns
    -------
    (History, numpy.ndarray)
        The run's history and the shifts, shape (iters + 1, n, d): ``shifts[k, i]`` is
        :math:`h_i^k`, with :math:`h_i^0 = 0`.
    """
    from .methods import setup
    from .reference import Selection, add_sent

    iters = check_int("iters", iters, 1)
    s = setup(problem, "isega", m=m, tau=tau, step=step, iters=iters, seed=seed)
    rule, n = s.method.rule, problem.n
    sampler, rec = s.sampler(), s.recorder()
    workers = [problem.worker(i) for i in range(n)]
    states = [rule.worker_init(wk, s.x0) for wk in workers]
    master = rule.start(s)
    shifts = np.zeros((iters + 1, n, problem.d))
    for k in range(iters):
        x = rule.point(master)
        total = np.zeros(problem.d)
        mask = np.zeros((n, s.m), dtype=bool)
        for i, (wk, state) in enumerate(zip(workers, states)):
            chosen = sampler.worker_blocks(k, i)
            mask[i, chosen] = True
            coords = None if chosen.size == s.m else s.blocks.coords(chosen)
            values, _ = rule.send(wk, state, x, None, Selection(coords))
            add_sent(total, coords, values)
            shifts[k + 1, i] = state.h
        rec.point(k, rule.iterate(master))
        rec.sent(k, None if s.tau == s.m else mask)
        g = s.step_at(k)
        rec.stepped(k, g)
        rule.step(master, total, (s.m / s.tau) / n, g, n)
        rule.prox(master, g)
    rec.point(iters, rule.iterate(master))
    return rec.history(rule.iterate(master), s.seed), shifts

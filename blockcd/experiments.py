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

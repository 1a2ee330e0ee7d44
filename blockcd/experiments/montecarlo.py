"""Monte-Carlo estimates of the lemmas' quantities, and the exact one-step checks of the theorems.

The aggregation variance of the key lemma, the coverage of the master, the strong growth
constant of IS-ASGD, chapter 5's composition identity, the expected-smoothness ratios and the
one-step inequalities of ISEGA and IS-SAGA, each measured on seeded draws and returned as plain
numbers for the chapters to compare with :mod:`blockcd.theory`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._validate import check_choice, check_int, check_seed
from ..blocks import SAMPLINGS, nice_mask, partition


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
    r"""Monte-Carlo estimate of IS-ASGD's E||q(x)||^2 and its standard error
    (chapter 7, the book's lem-rho-batch).

    q(x) = (m/(tau n)) sum_i P_{S_i} g_i(x) is the master's estimate, drawn ``draws`` times by the
    rule of :mod:`blockcd.rules` itself, with the block choices and minibatches of
    iterations k = 0, ..., draws - 1 of a run with this ``seed`` (so the draws are independent);
    g_i is worker i's full local gradient (``batch=None``) or its b-minibatch gradient.  Compare
    with rho ||grad f(x)||^2 (:func:`blockcd.theory.rho`, :func:`blockcd.theory.strong_growth_exact`).
    """
    from ..arguments import setup
    from ..messages import Sent

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
    from ..blocks import sparsify

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
    from ..blocks import BlockSampler

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
    from ..theory import aggregation_variance

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
    from .. import theory

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
    from .. import theory

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

"""What a run settles to: the floor of a constant-step method, non-convex stationarity, ISEGA's shifts.

Each function runs :func:`blockcd.run` and summarises a stretch of its history; the
predictions they are compared with are in :mod:`blockcd.theory`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._validate import check_float, check_int, check_seed
from ..methods import run


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
    from .. import theory

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
    from .. import theory

    seeds = [check_seed("seed", s) for s in seeds]
    if len(seeds) < 2:
        raise ValueError(f"seeds must hold at least two seeds (for a standard error), got {len(seeds)}")
    tail = check_int("tail", tail, 1)
    if burn is None:
        burn = int(3 / (theory.step_size(problem, method, m, tau) * problem.mu))
    burn = check_int("burn", burn, 0)
    means, h0 = _tail_means(problem, method, m, tau, seeds, batch=None, x0=None, burn=burn, tail=tail)
    return float(means.mean()), float(means.std(ddof=1) / np.sqrt(len(seeds))), h0


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
    from ..arguments import setup
    from ..messages import Selection, add_sent

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

"""Coordinate descent (``'cd'``): the importance sampling of its blocks, its per-block steps and its rate."""

from __future__ import annotations

import numpy as np

from .._validate import check_choice, check_float
from .constants import m_tau

#: the samplings of coordinate descent (``'cd'``), the same blocks on every worker, uniform or by importance
CD_SAMPLINGS = ("shared", "importance")


def cd_probabilities(problem, m: int, tau: int) -> np.ndarray:
    r"""Importance sampling of coordinate descent: :math:`p_j = \min(1, c L_j)` with :math:`\sum_j p_j = \tau`.

    :math:`L_j` are the blocks' smoothness constants (:meth:`blockcd.problems.Problem.block_smoothness`);
    c is set by water-filling (blocks whose :math:`c L_j` would exceed 1 are always sent), so that
    tau blocks are sent in expectation, as under uniform tau-nice sampling.  At tau = 1 and more
    than one block, :math:`p_j = L_j/\sum_k L_k`: the sampling of Nesterov (2012).
    """
    m, tau = m_tau(problem, m, tau)
    Lj = problem.block_smoothness(m)
    p = np.zeros(m)
    free = np.ones(m, dtype=bool)
    budget = float(tau)
    while True:  # at most m rounds: each fixes at least one block at probability 1
        c = budget / Lj[free].sum()
        cap = free & (c * Lj >= 1.0)
        if not cap.any():
            p[free] = c * Lj[free]
            break
        p[cap] = 1.0
        free &= ~cap
        budget -= float(cap.sum())
        if not free.any() or budget <= 0:
            break
    p[free & (p == 0)] = max(budget, 0.0) / max(int(free.sum()), 1)
    return np.clip(p, np.finfo(float).tiny, 1.0)


def cd_steps(problem, m: int, tau: int, sampling: str = "shared") -> np.ndarray:
    r"""Per-block steps of coordinate descent (``'cd'``), shape (m,): the update is
    :math:`x_j^+ = x_j - \gamma\, w_j \nabla_j f(x)` on the blocks j sent (all workers send the same ones).

    - ``'shared'`` (uniform tau-nice blocks): :math:`w_j = 1/L`, the paper's "default" coordinate
      descent (its App. I.1, step 1/L, unscaled); the book's ``ibcd`` with ``sampling='shared'`` and
      step (tau/m)/L is the same method.  Rate: :func:`cd_rate`.
    - ``'importance'`` (block j sent with probability p_j of :func:`cd_probabilities`, independently):
      :math:`w_j = 1/v_j` with :math:`v_j = p_j L + (1 - p_j) L_j`, the expected separable
      overapproximation of this product sampling,
      :math:`\mathbb{E}\lVert h_S\rVert_H^2 \le \sum_j p_j v_j \lVert h_j\rVert^2`
      (the off-diagonal pairs appear with probability p_j p_k, bounded by L; the diagonal with
      p_j(1 - p_j), bounded by L_j).  For small p_j it is :math:`1/L_j`, the paper's
      "inverse of coordinate-wise smoothness constants".
    """
    m, tau = m_tau(problem, m, tau)
    sampling = check_choice("sampling", sampling, CD_SAMPLINGS)
    if sampling == "shared":
        return np.full(m, 1.0 / problem.L)
    p = cd_probabilities(problem, m, tau)
    return 1.0 / (p * problem.L + (1.0 - p) * problem.block_smoothness(m))


def cd_rate(problem, m: int, tau: int, sampling: str = "shared", *, step: float = 1.0) -> float:
    r"""Contraction of E[f(x^k) - f*] per iteration of coordinate descent at ``step`` times :func:`cd_steps`.

    From the overapproximation of :func:`cd_steps`, with step multiplier :math:`\gamma \le 1`:
    :math:`\mathbb{E} f(x^+) \le f(x) - \gamma(1 - \gamma/2)\sum_j p_j w_j \lVert\nabla_j f(x)\rVert^2`, so the
    rate is :math:`1 - \gamma(2 - \gamma)\mu \min_j p_j w_j`: :math:`1 - (\tau/m)\mu/L` for uniform blocks
    at :math:`\gamma = 1`, :math:`1 - \mu \min_j p_j / v_j` for importance sampling.
    """
    m, tau = m_tau(problem, m, tau)
    step = check_float("step", step, positive=True)
    if step > 1.0:
        raise ValueError(f"cd_rate covers step multipliers in (0, 1], got step = {step}")
    sampling = check_choice("sampling", sampling, CD_SAMPLINGS)
    w = cd_steps(problem, m, tau, sampling)
    p = np.full(m, tau / m) if sampling == "shared" else cd_probabilities(problem, m, tau)
    return float(1.0 - step * (2.0 - step) * problem.mu * np.min(p * w))

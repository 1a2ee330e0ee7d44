"""IS-SGD without convexity (the paper's Theorem 7 and Corollary 6; chapter 5): the step for a horizon
of t iterations, the local variance bound, the book's bound on E||grad f(x-hat_t)||^2 and the tau
past which a larger tau does not help."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_float, check_int, check_vector
from ..blocks import minibatch_theta
from .constants import m_tau, omega


def q_t(problem, m, tau, t) -> tuple[int, int, float, int]:
    m, tau = m_tau(problem, m, tau)
    t = check_int("t", t, 1)
    return m, tau, tau / m, t


def nonconvex_step(problem, m: int, tau: int, t: int) -> float:
    r"""The step of the paper's Corollary 6 (non-convex ISGD) for a horizon of t iterations, in the book's units.

    The paper (Mishchenko, Hanzely and Richtarik 2019, Theorem 7 and Corollary 6) takes, with its
    fraction q = tau/m of blocks and its unscaled worker step,
    :math:`\gamma_{paper} = \sqrt n/(L\sqrt{qt})`, allowed when
    :math:`\gamma_{paper} \le 1/(2L(q/2 + (1-q)/n))`.  The book's worker rescales by 1/q, so the
    book's step is q times the paper's (as in :func:`paper_decreasing_schedule`):

    .. math::

        \gamma = \frac{\sqrt{qn}}{L\sqrt t},\qquad\text{allowed for}\quad
        t \ge \frac{n}{q}\Big(q + \frac{2(1-q)}{n}\Big)^2 .

    L is the smoothness constant of f (``problem.L``).  ``run(p, "is-sgd", ...)`` on a non-convex
    problem takes this step with t = ``iters`` when no step is given (chapter 5, "Without convexity").
    Raises ``ValueError`` for a t below the corollary's condition.
    """
    m, tau, q, t = q_t(problem, m, tau, t)
    n = problem.n
    t_min = n / q * (q + 2.0 * (1.0 - q) / n) ** 2
    if t < t_min:
        raise ValueError(f"t must be >= n (q + 2(1 - q)/n)^2 / q = {t_min:.4g} for the paper's Corollary 6 step "
                         f"(q = tau/m = {q:.4g}, n = {n}), got t = {t}")
    return math.sqrt(q * n) / (problem.L * math.sqrt(t))


def local_variance_bound(problem, batch: int | None = None) -> float:
    r"""A uniform bound :math:`\bar\sigma_b^2 \ge \frac1n\sum_i\mathbb{E}\lVert g_i(x) - \nabla f_i(x)\rVert^2`
    for b-minibatch local gradients at every x (the paper's Assumption 3, averaged over workers): chapter 5's
    optional section writes it :math:`\bar\sigma_b^2`, as chapter 7 does with :math:`\bar\rho = 0`; the
    noise at the optimum :math:`\sigma^2` is another quantity.

    For b of l rows without replacement the variance is
    :math:`\frac{l-b}{b(l-1)}\frac1l\sum_j\lVert\nabla f_{ij}(x) - \nabla f_i(x)\rVert^2
    \le \frac{l-b}{b(l-1)}\frac1l\sum_j\lVert a_j\rVert^2` for logistic regression
    (:math:`|\phi'| \le 1`; the terms lam x and psi cancel).  0 at b = l; ``inf`` for ridge.
    """
    b = 1 if batch is None else check_int("batch", batch, 1, int(problem.sizes.min()))
    l = problem.sizes.astype(float)
    factor = minibatch_theta(l, b)
    if not np.any(factor > 0):
        return 0.0
    if problem.loss == "ridge":
        return math.inf
    mean_norm2 = problem.worker_means(problem.row_norms2)
    return float(np.mean(factor * mean_norm2))


def start_gap(problem, x0) -> float:
    x0 = np.zeros(problem.d) if x0 is None else check_vector("x0", x0, problem.d, "the problem dimension d")
    return problem.f(x0) - problem.f_lower


def nonconvex_bound(problem, m: int, tau: int, t: int, *, step: float | None = None, nu2: float | None = None,
                    batch: int | None = None, x0=None) -> float:
    r"""The book's bound on :math:`\mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2` for IS-SGD on a smooth f.

    For a constant step :math:`\gamma \le 1/(L(1 + \omega/n))` and :math:`\hat x_t` uniform over
    :math:`x^0, \dots, x^t` (chapter 5, thm-is-sgd-nonconvex):

    .. math::

        \mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2 \le \frac{2(f(x^0) - f^\star)}{\gamma(t+1)}
        + \frac{L\gamma}{n}\Big(\omega\nu^2 + \frac{m}{\tau}\bar\sigma_b^2\Big),

    :math:`\omega = m/\tau - 1`, ``problem.f_lower`` for f*, ``nu2`` (default ``problem.nu2_bound``)
    and :math:`\bar\sigma_b^2` = :func:`local_variance_bound` for b-minibatches (b = 1 by default, as in
    :func:`blockcd.run`).  ``step=None`` takes :func:`nonconvex_step`, at which the bound is at most
    :math:`\frac{1}{\sqrt{tqn}}(2(f(x^0) - f^\star)L + (1-q)\nu^2 + \bar\sigma_b^2)`.  Raises
    ``ValueError`` for a step above :math:`1/(L(1 + \omega/n))`.
    """
    m, tau, _, t = q_t(problem, m, tau, t)
    n, L, w = problem.n, problem.L, omega(m, tau)
    g = nonconvex_step(problem, m, tau, t) if step is None else check_float("step", step, positive=True)
    g_max = 1.0 / (L * (1.0 + w / n))
    if g > g_max * (1 + 1e-12):
        raise ValueError(f"step must be <= 1/(L (1 + omega/n)) = {g_max:.4g} for the bound, got {g:.4g}")
    nu2 = problem.nu2_bound if nu2 is None else check_float("nu2", nu2, nonnegative=True)
    s2 = local_variance_bound(problem, batch)
    return 2.0 * start_gap(problem, x0) / (g * (t + 1)) + L * g / n * (w * nu2 + (m / tau) * s2)


def nonconvex_threshold(problem, m: int, step: float, base: float, *, nu2: float | None = None,
                        batch: int | None = None) -> float:
    r"""The tau past which sending more blocks gains at most a factor 2 in E||grad f(x-hat_t)||^2, at a fixed step.

    In :func:`nonconvex_bound` only the term :math:`\frac{L\gamma}{n}\omega(\nu^2 + \bar\sigma_b^2)` depends
    on tau (besides the tau-free :math:`\frac{L\gamma}{n}\bar\sigma_b^2`).  Compared with ``base``, the value
    at tau = m (the dense run's, measured or bounded), it is smaller once
    :math:`\omega \le \omega_{\text{sat}} = n\,\text{base}/(L\gamma(\nu^2 + \bar\sigma_b^2))`, i.e. for

    .. math::

        \tau \ge \tau_{\text{sat}} = \frac{m}{1 + \omega_{\text{sat}}},

    the paper's observation (Corollary 6 ii) that past a threshold a larger tau does not help
    (chapter 5, "Without convexity").  ``nu2`` defaults to ``problem.nu2_bound``, sigma-bar_b^2 is
    :func:`local_variance_bound` (b = 1 by default).  Returns a real number in (0, m].
    """
    m = check_int("m", m, 1, problem.d)
    step = check_float("step", step, positive=True)
    base = check_float("base", base, positive=True)
    nu2 = problem.nu2_bound if nu2 is None else check_float("nu2", nu2, nonnegative=True)
    noise = nu2 + local_variance_bound(problem, batch)
    if noise == 0:  # identical workers and exact local gradients: sparsification costs nothing here
        return 1.0
    w_star = problem.n * base / (problem.L * step * noise)
    return m / (1.0 + w_star)

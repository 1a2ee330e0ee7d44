"""What the theory guarantees at a step: the contraction per iteration, the neighbourhood reached,
the iterations to an accuracy and their ratio to the dense count (the m/n rule and its knee,
IS-ASGD's saturation, the time-optimal tau), and IS-SGD's bound with decreasing steps."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_float, check_int, check_vector
from ..blocks import minibatch_theta
from .constants import (
    check_rho0,
    check_shared,
    expected_smoothness,
    gradient_noise,
    local_L,
    m_tau,
    method_name,
    minibatch_growth,
    omega,
    rho,
)
from .steps import decreasing_schedule, step_size


def rate(problem, method: str, m: int, tau: int, *, step: float | None = None, batch: int | None = None) -> float:
    """Contraction factor per iteration of the method's Lyapunov function at the given step.

    ibcd, ibgd, is-sgd: 1 - step mu; isega: max(1 - step mu, 1 - tau/(2m));
    is-saga: max(1 - step mu, 1 - b/(2 l_max), 1 - tau/(2m));
    is-asgd: 1 - sqrt(mu eta / rho) with rho = 1/(eta L);
    isaga-local: 1 - theta of :func:`isaga_local_constants` (1 where the theorem gives no rate);
    isaga-shared: 1 - theta of :func:`isaga_shared_constants`.
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    g = step_size(problem, method, m, tau, batch=batch) if step is None else check_float("step", step, positive=True)
    mu = problem.mu
    if method == "is-asgd":
        rho_ = 1.0 / (g * problem.L)
        return 1.0 - math.sqrt(mu * g / rho_)
    if method == "isaga-local":
        return 1.0 - isaga_local_constants(problem, m, tau, g)[2]
    if method == "isaga-shared":
        return 1.0 - isaga_shared_constants(problem, m, tau, g)[2]
    q = 1.0 - g * mu
    if method == "isega":
        q = max(q, 1.0 - tau / (2.0 * m))
    elif method == "is-saga":
        b = 1 if batch is None else batch
        q = max(q, 1.0 - b / (2.0 * problem.l_max), 1.0 - tau / (2.0 * m))
    return q


def isaga_local_constants(problem, m: int, tau: int, step: float) -> tuple[float, float, float]:
    r"""Theorem 5's constants (c, gamma_p, theta) for isaga-local at the book's ``step``.

    With q = tau/m, L_s = max_ij L_ij and l = l_max: the paper's step
    :math:`\gamma_p = \gamma/q`, :math:`c = \frac{1}{n}(\frac{1}{\gamma_p L_s} - \frac{1}{n} - q)`
    and :math:`\vartheta = q \min\{\gamma_p\mu,\ \frac{1}{l} - \frac{2}{n^2 l c}\}`; the Lyapunov
    function :math:`\|x - x^\star\|^2 + c\gamma_p^2\Psi` contracts by 1 - theta per iteration.
    theta = 0 (no rate) when c <= 0, i.e. when gamma_p exceeds 1/(L_s(1/n + q)), or when the
    minimum is negative (gamma_p above 1/(L_s(3/n + q))).
    """
    m, tau = m_tau(problem, m, tau)
    step = check_float("step", step, positive=True)
    q, n, Ls, lm = tau / m, problem.n, local_L(problem, 1), problem.l_max
    gp = step / q
    c = (1.0 / (gp * Ls) - 1.0 / n - q) / n
    if c <= 0:
        return c, gp, 0.0
    theta = q * min(gp * problem.mu, 1.0 / lm - 2.0 / (n * n * lm * c))
    return c, gp, max(theta, 0.0)


def isaga_shared_constants(problem, m: int, tau: int, step: float) -> tuple[float, float, float]:
    r"""Theorem 2's constants (c, gamma_p, theta) for isaga-shared at the book's ``step``.

    With q = tau/m, L_s = max_j L_j over the N functions and the paper's step
    :math:`\gamma_p = \gamma/q`: :math:`c = \frac{1}{n}(\frac{1}{\gamma_p L_s} - \frac{1}{n} - q)`
    and :math:`\vartheta = q \min\{\gamma_p\mu,\ \frac{n}{N}(1 - \frac{2}{n^2 c})\}`; the
    Lyapunov function :math:`\|x - x^\star\|^2 + c\gamma_p^2\Psi`,
    :math:`\Psi = \sum_{j=1}^N \|\alpha_j - \nabla f_j(x^\star)\|^2`, contracts by 1 - theta per
    iteration.  These are Theorem 5's with the refresh probability of a table entry, n/N
    (one of the n drawn), in place of 1/l; at q = 1/n and gamma_p = n/(5 L_s) they give the
    paper's Corollary 2, c = 3/n^2 and theta = min{mu/(5 L_s), 1/(3N)}.  theta = 0 (no rate)
    when c <= 0 or gamma_p >= 1/(L_s(3/n + q)).
    """
    check_shared(problem)
    m, tau = m_tau(problem, m, tau)
    step = check_float("step", step, positive=True)
    q, n, N, Ls = tau / m, problem.n, problem.N, local_L(problem, 1)
    gp = step / q
    c = (1.0 / (gp * Ls) - 1.0 / n - q) / n
    if c <= 0:
        return c, gp, 0.0
    theta = q * min(gp * problem.mu, (n / N) * (1.0 - 2.0 / (n * n * c)))
    return c, gp, max(theta, 0.0)


def _table_distance2(problem, x0) -> float:
    """Psi^0 = sum_i sum_j ||grad f_ij(x0) - grad f_ij(x*)||^2, from each worker's own rows."""
    xs, lam, total = problem.x_star, problem.lam, 0.0
    for i in range(problem.n):  # a constant, computed once
        w = problem.worker(i)
        D = w.gradient_table(x0) - w.gradient_table(xs) + lam * (x0 - xs)
        total += float(np.sum(D * D))
    return total


def _shared_table_distance2(problem, x0) -> float:
    """Psi^0 = sum_j ||grad f_j(x0) - grad f_j(x*)||^2 over the N functions every worker reads."""
    w, xs = problem.worker(0), problem.x_star
    D = w.gradient_table(x0) - w.gradient_table(xs) + problem.lam * (x0 - xs)
    return float(np.sum(D * D))


def _is_saga_memory0(problem, m, tau, batch, x0) -> float:
    """c H^0 + a A^0 of thm-is-saga (chapter 6): h_i^0 = 0, so H^0 = (1/n) sum_i ||grad f_i(x*)||^2, and
    tables filled at x0, so A^0 = (1/n) sum_i (1/l_i) sum_j ||grad f_ij(x0) - grad f_ij(x*)||^2."""
    b = 1 if batch is None else batch
    n, l, w = problem.n, problem.l_max, omega(m, tau)
    theta = 0.0 if b >= l else minibatch_theta(l, b)
    c, a = 4.0 * w * m / (n * tau), 4.0 * l * theta * (1.0 + 6.0 * w) / (b * n)
    H0 = float(np.mean(np.sum(problem.local_grads_star ** 2, axis=1)))
    xs, lam, A0 = problem.x_star, problem.lam, 0.0
    if a > 0:
        for i in range(n):
            wk = problem.worker(i)
            D = wk.gradient_table(x0) - wk.gradient_table(xs) + lam * (x0 - xs)
            A0 += float(np.sum(D * D)) / (D.shape[0] * n)
    return c * H0 + a * A0


def neighbourhood(problem, method: str, m: int, tau: int, *, step: float | None = None,
                  batch: int | None = None) -> float:
    """Radius 2 gamma sigma^2 / mu of the ball ||x - x*||^2 the method reaches (0 for shifted methods).

    ibcd, ibgd: sigma^2 = (omega/n) sigma*^2;  is-sgd: sigma^2 <= (m/(tau n)) sigma-bar^2 minus the
    cross terms, i.e. ((m/tau) sigma-bar^2 - sigma*^2)/n (chapter 5).
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    g = step_size(problem, method, m, tau, batch=batch) if step is None else check_float("step", step, positive=True)
    if method in ("ibcd", "ibgd"):
        s2 = omega(m, tau) / problem.n * problem.sigma_star2
    elif method == "is-sgd":
        s2 = gradient_noise(problem, m, tau, batch=batch)
    elif method == "isaga-local":  # Theorem 5 needs interpolation; without it no ball is proved
        return 0.0 if problem.interpolating else math.inf
    elif method == "isaga-shared":  # Theorem 2: x^k -> x* on any shared-data problem
        check_shared(problem)
        return 0.0
    else:
        return 0.0
    return 2.0 * g * max(s2, 0.0) / problem.mu


def predicted_iterations(problem, method: str, m: int, tau: int, eps: float, *, step: float | None = None,
                         batch: int | None = None, x0=None) -> float:
    """Iterations after which the theorem guarantees E||x^k - x*||^2 <= eps ||x^0 - x*||^2.

    ``inf`` when eps lies inside the method's neighbourhood.  For IS-SAGA the
    Lyapunov function's starting value is all of Psi^0 = ||x^0 - x*||^2 + c gamma^2 H^0 +
    a gamma^2 A^0 (chapter 6, thm-is-saga), with the shifts h_i^0 = 0 and the tables filled
    at x^0 (l = l_max on an uneven split).  For
    isaga-local it is ||x^0 - x*||^2 + c gamma_p^2 Psi^0 (Theorem 5), Psi^0 =
    sum_ij ||grad f_ij(x^0) - grad f_ij(x*)||^2 (tables filled at x^0); ``inf``
    without interpolation.  For isaga-shared, ||x^0 - x*||^2 + c gamma_p^2 Psi^0 (Theorem 2) with
    Psi^0 = sum_j ||grad f_j(x^0) - grad f_j(x*)||^2 over the N shared functions, on any data.
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    eps = check_float("eps", eps, positive=True)
    g = step_size(problem, method, m, tau, batch=batch) if step is None else check_float("step", step, positive=True)
    x0 = np.zeros(problem.d) if x0 is None else check_vector("x0", x0, problem.d, "the problem dimension d")
    D0 = float(np.sum((x0 - problem.x_star) ** 2))
    q = rate(problem, method, m, tau, step=g, batch=batch)
    if not 0 < q < 1:
        return math.inf
    if method in ("ibcd", "ibgd", "is-sgd"):
        target = eps * D0 - neighbourhood(problem, method, m, tau, step=g, batch=batch)
        if target <= 0:
            return math.inf
        ratio = target / D0
    elif method == "isega":
        c = 4 * omega(m, tau) * m / (problem.n * tau)
        H0 = float(np.mean(np.sum((problem.local_grads_star) ** 2, axis=1)))  # h_i = 0 at the start
        ratio = eps * D0 / (D0 + c * g * g * H0)
    elif method == "is-saga":
        ratio = eps * D0 / (D0 + g * g * _is_saga_memory0(problem, m, tau, batch, x0))
    elif method == "isaga-local":
        if not problem.interpolating:
            return math.inf
        c, gp, _ = isaga_local_constants(problem, m, tau, g)
        ratio = eps * D0 / (D0 + c * gp * gp * _table_distance2(problem, x0))
    elif method == "isaga-shared":
        c, gp, _ = isaga_shared_constants(problem, m, tau, g)
        ratio = eps * D0 / (D0 + c * gp * gp * _shared_table_distance2(problem, x0))
    else:
        gap0 = problem.f(x0) - problem.f_star
        ratio = eps * D0 * problem.mu / (2 * gap0 + problem.mu * D0)
    return max(0.0, math.ceil(math.log(ratio) / math.log(q)))


def predicted_ratio(problem, method: str, m: int, tau: int, *, batch: int | None = None) -> float:
    """K(tau)/K(m) from the leading term: L(tau)/L(m) (for IS-ASGD rho(tau)/rho(m) = rho(tau)).

    For IBCD (and IBGD) this is 1 + (m/tau - 1) r / n (the m/n rule, chapter 4).  For isaga-shared the
    rate has two terms (:func:`isaga_shared_constants`): the ratio is log(1 - theta(m)) / log(1 - theta(tau)).
    """
    if method_name(method) == "isaga-shared":
        return (math.log(rate(problem, method, m, m, batch=batch))
                / math.log(rate(problem, method, m, tau, batch=batch)))
    return (expected_smoothness(problem, method, m, tau, batch=batch)
            / expected_smoothness(problem, method, m, m, batch=batch))


def knee(m: int, n: int, r: float) -> float:
    """tau where the sparsification term equals the base term: tau_knee = m r / (n + r)."""
    m = check_int("m", m, 1)
    n = check_int("n", n, 1)
    r = check_float("r", r, positive=True)
    return m * r / (n + r)


def iteration_factor(m: int, tau: int, n: int, r: float) -> float:
    """The m/n rule for IBCD: K(tau)/K(m) = 1 + (m/tau - 1) r / n."""
    n = check_int("n", n, 1)
    r = check_float("r", r, positive=True)
    return 1.0 + omega(m, tau) * r / n


def asgd_saturation(problem, m: int, *, batch: int | None = None, excess: float = 0.1) -> float:
    r"""The tau past which more blocks bring IS-ASGD little: K(tau)/K(m) = 1 + ``excess`` (chapter 7).

    With K(tau) proportional to rho(tau) (:func:`rho`, the book's lem-rho-batch; Theorem 8's rate),
    :math:`\rho(\tau) - \rho(m) = \frac{\rho_0(1 + \bar\rho)}{n}\big(\frac{m}{\tau} - 1\big)`, so
    :math:`\frac{K(\tau)}{K(m)} = 1 + a\big(\frac{m}{\tau} - 1\big)` with
    :math:`a = \frac{\rho_0(1 + \bar\rho)}{n\,\rho(m)}`, and the threshold is
    :math:`\tau = \frac{m\,a}{a + \text{excess}}` (a real number in (0, m]).  With ``excess = 1`` it is
    the knee where the sparsification term equals rho(m); for n much larger than rho0 (1 + rho-bar)
    that is about m rho0 (1 + rho-bar)/n, the paper's threshold (:func:`paper_saturation`) when
    rho-bar is much larger than 1.
    """
    m = check_int("m", m, 1, problem.d)
    excess = check_float("excess", excess, positive=True)
    rb, _ = minibatch_growth(problem, batch)
    a = check_rho0(problem) * (1.0 + rb) / (problem.n * rho(problem, m, m, batch=batch))
    return m * a / (a + excess)


def time_optimal_tau(L: float, L_max: float, n: int, m: int, c0: float, c1: float) -> float:
    """tau minimising K(tau) T(tau) with K ∝ a + b/tau, T = c0 + c1 tau (chapter 9).

    a = L - L_max/n, b = m L_max / n; tau* = sqrt(b c0 / (a c1)), clipped to [1, m].
    """
    L = check_float("L", L, positive=True)
    L_max = check_float("L_max", L_max, positive=True)
    n = check_int("n", n, 1)
    m = check_int("m", m, 1)
    c0 = check_float("c0", c0, nonnegative=True)
    c1 = check_float("c1", c1, positive=True)
    a = L - L_max / n
    b = m * L_max / n
    if a <= 0:
        return float(m)
    return float(min(max(math.sqrt(b * c0 / (a * c1)), 1.0), m))


def decreasing_bound(problem, m: int, tau: int, t, *, batch: int | None = None, x0=None) -> np.ndarray:
    r"""The book's bound on :math:`\mathbb{E} f(\hat x_t) - f^\star` for IS-SGD with ``step='decreasing'``.

    With (a, c) of :func:`decreasing_schedule`, :math:`r_0 = \lVert x^0 - x^\star\rVert^2` and
    :math:`\sigma^2` of :func:`gradient_noise` (chapter 5, thm-is-sgd-decreasing):

    .. math::

        \mathbb{E} f(\hat x_t) - f^\star \le
        \frac{(a - c)(a - \mu)\, r_0 + 2\sigma^2 (t + 1)}{(t + 1)(a - c) + c\, t (t + 1)/2},

    :math:`\hat x_t` the average with the weights of :func:`average_weights`.  For large t it is
    about :math:`4\sigma^2/(c t) = 8\sigma^2/(\mu t)`.  ``t``: an int or an array of them (>= 0).
    """
    a, c = decreasing_schedule(problem, m, tau, batch=batch)
    x0 = np.zeros(problem.d) if x0 is None else check_vector("x0", x0, problem.d, "the problem dimension d")
    r0 = float(np.sum((x0 - problem.x_star) ** 2))
    t = np.asarray(t, dtype=np.float64)
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError("t must hold finite iteration counts >= 0")
    s2 = gradient_noise(problem, m, tau, batch=batch)
    W = (t + 1.0) * (a - c) + c * t * (t + 1.0) / 2.0
    return ((a - c) * (a - problem.mu) * r0 + 2.0 * s2 * (t + 1.0)) / W

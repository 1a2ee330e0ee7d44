"""What the theory guarantees at a step: the contraction per iteration, the neighbourhood reached,
the iterations to an accuracy and their ratio to the dense count (the m/n rule and its knee,
IS-ASGD's saturation, the time-optimal tau), and IS-SGD's bound with decreasing steps."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_float, check_int, check_vector
from .constants import (
    check_convex,
    check_rho0,
    gradient_noise,
    m_tau,
    method_name,
    minibatch_growth,
    omega,
    rho,
)
from .rows import entry, iterations
from .steps import decreasing_schedule, step_size


def rate(problem, method: str, m: int, tau: int, *, step: float | None = None, batch: int | None = None) -> float:
    """Contraction factor per iteration of the method's Lyapunov function at the given step (its row ``rate``).

    ibcd, ibgd, is-sgd: 1 - step mu; isega: max(1 - step mu, 1 - tau/(2m));
    is-saga: max(1 - step mu, 1 - b/(2 l_max), 1 - tau/(2m));
    is-asgd: 1 - sqrt(mu eta / rho) with rho = 1/(eta L);
    isaga-local: 1 - theta of :func:`isaga_local_constants` (1 where the theorem gives no rate);
    isaga-shared: 1 - theta of :func:`isaga_shared_constants`.  ``ValueError`` for a method without
    a rate (coordinate descent: :func:`~blockcd.theory.cd_rate`; asynchronous IS-SGD, whose
    Theorem 9 counts epochs).
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    q = entry(method, "rate")
    g = step_size(problem, method, m, tau, batch=batch) if step is None else check_float("step", step, positive=True)
    return q(problem, m, tau, g, batch)


def neighbourhood(problem, method: str, m: int, tau: int, *, step: float | None = None,
                  batch: int | None = None) -> float:
    """Radius 2 gamma sigma^2 / mu of the ball ||x - x*||^2 the method reaches (0 for shifted methods).

    ibcd, ibgd: sigma^2 = (omega/n) sigma*^2;  is-sgd: sigma^2 <= (m/(tau n)) sigma-bar^2 minus the
    cross terms, i.e. ((m/tau) sigma-bar^2 - sigma*^2)/n (chapter 5); the method's row ``neighbourhood``.
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    ball = entry(method, "neighbourhood")
    g = step_size(problem, method, m, tau, batch=batch) if step is None else check_float("step", step, positive=True)
    return ball(problem, m, tau, g, batch)


def predicted_iterations(problem, method: str, m: int, tau: int, eps: float, *, step: float | None = None,
                         batch: int | None = None, x0=None) -> float:
    """Iterations after which the theorem guarantees E||x^k - x*||^2 <= eps ||x^0 - x*||^2.

    The least K with rate^K <= the row's ``target``.  ``inf`` when eps lies inside the method's
    neighbourhood.  For IS-SAGA the
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
    target = entry(method, "target")
    g = step_size(problem, method, m, tau, batch=batch) if step is None else check_float("step", step, positive=True)
    x0 = np.zeros(problem.d) if x0 is None else check_vector("x0", x0, problem.d, "the problem dimension d")
    D0 = float(np.sum((x0 - problem.x_star) ** 2))
    q = rate(problem, method, m, tau, step=g, batch=batch)
    if not 0 < q < 1:
        return math.inf
    return iterations(q, target(problem, m, tau, eps, g, batch, x0, D0))


def predicted_ratio(problem, method: str, m: int, tau: int, *, batch: int | None = None) -> float:
    """K(tau)/K(m) from the leading term: L(tau)/L(m) (for IS-ASGD rho(tau)/rho(m) = rho(tau)).

    For IBCD (and IBGD) this is 1 + (m/tau - 1) r / n (the m/n rule, chapter 4).  For isaga-shared the
    rate has two terms (:func:`isaga_shared_constants`): the ratio is log(1 - theta(m)) / log(1 - theta(tau)).
    The method's row ``ratio``.
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    check_convex(problem, f"{method}'s constant L(tau) (expected smoothness) and its step")
    return entry(method, "ratio")(problem, m, tau, batch, method)


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

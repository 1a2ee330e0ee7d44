"""The steps the theory allows: every method's constant step (from its L(tau)), IS-ASGD's parameters
at its step, and IS-SGD's decreasing schedule with the weights of its average."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_float, check_int
from .constants import expected_smoothness, m_tau, method_name


def step_size(problem, method: str, m: int, tau: int, *, batch: int | None = None,
              sampling: str = "independent") -> float:
    """The theory's step size (for IS-ASGD, eta); see the module table and :func:`expected_smoothness`."""
    method = method_name(method)
    if method == "cd":  # its steps are per block (cd_steps); the step is their multiplier
        m_tau(problem, m, tau)
        return 1.0
    Lt = expected_smoothness(problem, method, m, tau, batch=batch, sampling=sampling)
    return 1.0 / (2.0 * Lt) if method in ("ibcd", "ibgd", "is-sgd", "is-sgd-async") else 1.0 / Lt


def asgd_parameters(problem, eta: float) -> tuple[float, float, float]:
    """IS-ASGD's constants (alpha, beta, gamma) for step eta (Vaswani, Bach and Schmidt 2019; chapter 7).

    rho = 1/(eta L), s = sqrt(mu eta / rho), beta = 1 - s, alpha = s/(1 + s),
    gamma = 1/sqrt(mu eta rho).  Raises ``ValueError`` unless eta <= 1/L (rho >= 1).
    """
    eta = check_float("step", eta, positive=True)
    rho_ = 1.0 / (eta * problem.L)
    if rho_ < 1.0:
        raise ValueError(
            f"step (eta) must be <= 1/L = {1.0 / problem.L:.4g} for is-asgd (the strong growth constant rho = "
            f"1/(eta L) must be >= 1), got {eta:.4g}"
        )
    s = math.sqrt(problem.mu * eta / rho_)
    return s / (1.0 + s), 1.0 - s, 1.0 / math.sqrt(problem.mu * eta * rho_)


def decreasing_schedule(problem, m: int, tau: int, *, batch: int | None = None) -> tuple[float, float]:
    r"""The book's decreasing schedule for IS-SGD, :math:`\gamma_k = 1/(a + c k)`: returns (a, c).

    :math:`a = 4\mathcal{L}(\tau)` (so every step is at most :math:`1/(4\mathcal{L}(\tau))`, with
    :math:`\mathcal{L}(\tau) = L + \frac{m}{\tau}\mathcal{L}_{\text{loc}}(b)/n`) and :math:`c = \mu/2`,
    the constants of the book's bound (chapter 5, :func:`decreasing_bound`).

    The paper's Theorem 6 (Mishchenko, Hanzely and Richtarik 2019) takes
    :math:`\gamma^{paper}_t = 1/(a_p + c_p t)` with :math:`a_p = 2(q + 2(1 - q)/n)L`,
    :math:`c_p = \mu q/4`, where q = tau/m is the paper's fraction of blocks.  Its worker step
    :math:`x - \gamma^{paper}_t (g_i)_{U_i}` has no rescaling by 1/q, the book's does, so the book's
    step is q times the paper's: :math:`\gamma_t = q/(a_p + c_p t) = 1/(a_p/q + (c_p/q) t)`, i.e.
    :math:`a_p/q = 2L(1 + 2\omega/n)`, :math:`c_p/q = \mu/4` (see :func:`paper_decreasing_schedule`).
    """
    Lt = expected_smoothness(problem, "is-sgd", m, tau, batch=batch)
    return 4.0 * Lt, problem.mu / 2.0


def average_weights(a: float, c: float, t: int) -> np.ndarray:
    r"""The weights :math:`w_k = a + c(k - 1) = 1/\gamma_{k-1}`, k = 0..t, of the average
    :math:`\hat x_t = \sum_{k=0}^t w_k x^k / \sum_{k=0}^t w_k` (chapter 5; ``History.gap_avg``)."""
    a = check_float("a", a, positive=True)
    c = check_float("c", c, nonnegative=True)
    t = check_int("t", t, 0)
    if a <= c:
        raise ValueError(f"the weights a + c (k - 1) need a > c, got a = {a}, c = {c}")
    return a + c * (np.arange(t + 1) - 1.0)

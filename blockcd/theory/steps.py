"""The steps the theory allows: every method's constant step (from its L(tau)), IS-ASGD's parameters
at its step, and IS-SGD's decreasing schedule with the weights of its average."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_choice, check_float, check_int
from .constants import check_convex, m_tau, method_name
from .rows import MissingTheory, entry, optional

_STEP_HINT = ("; pass step= to blockcd.run (or blockcd.reference.run), or register the method with its theory "
              "row (blockcd.registry.register(..., theory=blockcd.registry.TheoryRow(smoothness=..., "
              "step_factor=...)))")


def expected_smoothness(problem, method: str, m: int, tau: int, *, batch: int | None = None,
                        sampling: str = "independent") -> float:
    """The constant L(tau) of the method (see the module table); the step is built from it.

    The method's row ``smoothness`` (:mod:`blockcd.theory.rows`).  With ``sampling='shared'`` (one
    block choice for all workers) the key lemma gives variance omega ||gbar||^2 instead of
    (omega/n) mean ||g_i||^2, so ibcd: (m/tau) L;  is-sgd: (m/tau)(L + L_loc/n);  is-asgd:
    rho = m/tau, with ``batch`` (m/tau)(1 + rho-bar rho0/n) (E||C(gbar)||^2 = (m/tau) E||gbar||^2,
    then Lemma 1's bounds); isega and is-saga: the independent constants with omega/n replaced by
    omega (the same proofs with the shared bound; conservative).  Raises ``ValueError`` for a
    method without a row, or a sampling its row does not cover.
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    sampling = check_choice("sampling", sampling, ("independent", "shared"))
    check_convex(problem, f"{method}'s constant L(tau) (expected smoothness) and its step")
    smoothness = entry(method, "smoothness")
    return smoothness(problem, m, tau, batch, _covered(method, sampling))


def _covered(method: str, sampling: str) -> str:
    if sampling not in entry(method, "samplings"):
        raise ValueError(f"{method}'s theory covers {' and '.join(entry(method, 'samplings'))} choices only: "
                         f"sampling must be {listed(entry(method, 'samplings'))}")
    return sampling


def listed(options) -> str:
    return " or ".join(repr(o) for o in options)


def step_size(problem, method: str, m: int, tau: int, *, batch: int | None = None,
              sampling: str = "independent") -> float:
    """The theory's step size (for IS-ASGD, eta): the row's ``step_factor`` / L(tau) (1/(2 L(tau)) for ibcd,
    ibgd, is-sgd and is-sgd-async, 1/L(tau) for the others; see the module table); for coordinate descent
    the multiplier 1 of its per-block steps (its row's ``step``).

    Raises ``ValueError`` naming the missing rows for a method registered without them: pass ``step=``.
    """
    method = method_name(method)
    step = optional(method, "step")
    if step is not None:
        m, tau = m_tau(problem, m, tau)
        return step(problem, m, tau, batch, sampling)
    missing = [f for f in ("smoothness", "step_factor") if optional(method, f) is None]
    if missing:
        raise MissingTheory(f"{method!r} has no theory row for {' and '.join(missing)} (its expected smoothness "
                            "L(tau) and the factor of its step, step = step_factor / L(tau)), so the theory gives "
                            "no step" + _STEP_HINT)
    return entry(method, "step_factor") / expected_smoothness(problem, method, m, tau, batch=batch,
                                                              sampling=sampling)


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

r"""Each method's theory as one row: :data:`ROWS`, keyed by the registry's names.

A row (:class:`blockcd.registry.TheoryRow`) holds a method's formulas, each a
few lines below with its formula and the chapter that derives it:

- ``smoothness``: the expected smoothness :math:`\mathcal{L}(\tau)` (the table of
  :mod:`blockcd.theory`), for the samplings in ``samplings``;
- ``step_factor``: the theory's step is ``step_factor`` / :math:`\mathcal{L}(\tau)`
  (``step``: a step not built that way, coordinate descent's multiplier);
- ``rate``: the contraction per iteration at a step; ``neighbourhood``: the
  radius of the ball reached; ``target``: what rate^K must reach for
  E||x^K - x*||^2 <= eps ||x^0 - x*||^2 (the Lyapunov function's start);
  ``ratio``: K(tau)/K(m) from the leading term;
- ``paper_step``, ``paper_iterations``: the paper's theorem, in the book's units.

:func:`blockcd.theory.expected_smoothness`, :func:`~blockcd.theory.step_size`,
:func:`~blockcd.theory.rate` and the others look the row up (:func:`entry`) and
call it; none of them branches on a method's name.  A field that is a string
says why the method has no such formula; a field left ``None`` (a method
registered without it) is an error naming the method and the missing field
(:class:`~blockcd.theory.MissingTheory`), never another method's numbers.
"""

from __future__ import annotations

import math

import numpy as np

from .. import registry
from .._validate import check_float
from ..blocks import minibatch_theta
from ..registry import TheoryRow
from .constants import ISEGA_C, ISSAGA_C, ISSAGA_C0, check_shared, gradient_noise, local_L, m_tau, omega, rho


class MissingTheory(ValueError):
    """A method's theory row lacks a formula that was asked for (a ``ValueError``)."""


#: what each field of a row gives, for the error messages
WHAT = {
    "smoothness": "expected smoothness L(tau)", "step_factor": "step factor (step = step_factor / L(tau))",
    "rate": "rate (contraction per iteration)", "neighbourhood": "neighbourhood (radius of the ball reached)",
    "target": "iteration count (the Lyapunov function's start)", "ratio": "predicted ratio K(tau)/K(m)",
    "paper_step": "paper's step", "paper_iterations": "paper's iteration count",
}


def entry(method: str, field: str, *, hint: str = ""):
    """Field ``field`` of ``method``'s theory row; raises :class:`~blockcd.theory.MissingTheory` naming both when it has none.

    The row is :data:`ROWS`' for the book's methods, else the one the method was registered with
    (:func:`blockcd.registry.register`, ``theory=``).
    """
    name = registry.canonical(method)
    row = ROWS.get(name) or registry.get(name).theory
    value = None if row is None else getattr(row, field)
    if value is not None and not isinstance(value, str):
        return value
    why = (f": {value}" if isinstance(value, str) else
           " (it was registered without one)" if row is None or name not in ROWS else "")
    raise MissingTheory(f"{name!r} has no {WHAT.get(field, field)} in the theory (theory row field "
                        f"{field!r}){why}{hint}")


def optional(method: str, field: str):
    """Field ``field`` of ``method``'s theory row, or None where the row has none (a string or None)."""
    try:
        return entry(method, field)
    except MissingTheory:
        return None


# ---- expected smoothness L(tau): (problem, m, tau, batch, sampling) -> float -----------------------------


def ibcd_smoothness(p, m, tau, batch, sampling):
    """IBCD and IBGD (chapter 4, the key lemma): L + omega L_max / n; shared choices: (m/tau) L."""
    if sampling == "shared":
        return (m / tau) * p.L
    return p.L + omega(m, tau) * p.L_max / p.n


def is_sgd_smoothness(p, m, tau, batch, sampling):
    """IS-SGD (chapter 5): L + (m/tau) L_loc(b) / n; shared: (m/tau)(L + L_loc(b)/n)."""
    if sampling == "shared":
        return (m / tau) * (p.L + local_L(p, batch) / p.n)
    return p.L + (m / tau) * local_L(p, batch) / p.n


def isega_smoothness(p, m, tau, batch, sampling):
    """ISEGA (chapter 6, thm-isega): L + 6 omega L_max / n; shared: omega/n replaced by omega."""
    if sampling == "shared":
        return p.L + ISEGA_C * omega(m, tau) * p.L_max
    return p.L + ISEGA_C * omega(m, tau) * p.L_max / p.n


def is_saga_smoothness(p, m, tau, batch, sampling):
    """IS-SAGA (chapter 6b, thm-is-saga): L + (6 + 36 omega) L_loc(b) / n; shared: L + 36 (m/tau) L_loc(b)."""
    if sampling == "shared":
        return p.L + ISSAGA_C * (m / tau) * local_L(p, batch)
    return p.L + (ISSAGA_C0 + ISSAGA_C * omega(m, tau)) * local_L(p, batch) / p.n


def is_asgd_smoothness(p, m, tau, batch, sampling):
    """IS-ASGD (chapter 7): rho(tau) L (:func:`~blockcd.theory.rho`); shared: (m/tau) rho(m) L
    (E||C(gbar)||^2 = (m/tau) E||gbar||^2, then the strong growth bounds; rho(m) = 1 without batch)."""
    if sampling == "shared":
        return (m / tau) * rho(p, m, m, batch=batch) * p.L
    return rho(p, m, tau, batch=batch) * p.L


def isaga_local_smoothness(p, m, tau, batch, sampling):
    """Distributed ISAGA (the paper's Theorem 5, chapter 6b): L_s (1 + 4 m/(tau n)), batch 1."""
    if batch not in (None, 1):
        raise ValueError(f"isaga-local's theory (the paper's Theorem 5) covers batch = 1, got batch = {batch}; "
                         "pass step= for larger batches")
    return local_L(p, 1) * (1.0 + 4.0 * m / (tau * p.n))


def isaga_shared_smoothness(p, m, tau, batch, sampling):
    """Shared-data ISAGA (the paper's Theorem 2, chapter 6b): L_s (1 + 4 m/(tau n)), one function per worker."""
    check_shared(p)
    if batch not in (None, 1):
        raise ValueError(f"isaga-shared samples one function per worker (the paper's Algorithm 4), got "
                         f"batch = {batch}")
    return local_L(p, 1) * (1.0 + 4.0 * m / (tau * p.n))


def is_sgd_async_smoothness(p, m, tau, batch, sampling):
    """Asynchronous IS-SGD (the paper's Theorem 9 in book units, chapter 12): L_max (1 + 2 m/(tau n))."""
    return p.L_max * (1.0 + 2.0 * m / (tau * p.n))


def cd_step(p, m, tau, batch, sampling):
    """Coordinate descent (chapter 3): its steps are per block (:func:`~blockcd.theory.cd_steps`); the
    run's step is their multiplier, 1."""
    return 1.0


# ---- rate at a step: (problem, m, tau, step, batch) -> float ------------------------------------------


def plain_rate(p, m, tau, step, batch):
    """IBCD, IBGD, IS-SGD (chapters 4, 5): 1 - step mu."""
    return 1.0 - step * p.mu


def isega_rate(p, m, tau, step, batch):
    """ISEGA (chapter 6): max(1 - step mu, 1 - tau/(2m)) (the shifts learn at rate tau/(2m))."""
    return max(1.0 - step * p.mu, 1.0 - tau / (2.0 * m))


def is_saga_rate(p, m, tau, step, batch):
    """IS-SAGA (chapter 6b): max(1 - step mu, 1 - b/(2 l_max), 1 - tau/(2m))."""
    b = 1 if batch is None else batch
    return max(1.0 - step * p.mu, 1.0 - b / (2.0 * p.l_max), 1.0 - tau / (2.0 * m))


def is_asgd_rate(p, m, tau, step, batch):
    """IS-ASGD (chapter 7): 1 - sqrt(mu eta / rho) with rho = 1/(eta L), eta the step."""
    rho_ = 1.0 / (step * p.L)
    return 1.0 - math.sqrt(p.mu * step / rho_)


def isaga_local_rate(p, m, tau, step, batch):
    """Distributed ISAGA: 1 - theta of :func:`~blockcd.theory.isaga_local_constants` (1 where Theorem 5 gives no rate)."""
    return 1.0 - isaga_local_constants(p, m, tau, step)[2]


def isaga_shared_rate(p, m, tau, step, batch):
    """Shared-data ISAGA: 1 - theta of :func:`~blockcd.theory.isaga_shared_constants` (Theorem 2)."""
    return 1.0 - isaga_shared_constants(p, m, tau, step)[2]


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


# ---- neighbourhood: (problem, m, tau, step, batch) -> float --------------------------------------------


def ibcd_neighbourhood(p, m, tau, step, batch):
    """IBCD, IBGD (chapter 4): 2 step sigma^2 / mu with sigma^2 = (omega/n) sigma*^2."""
    return 2.0 * step * max(omega(m, tau) / p.n * p.sigma_star2, 0.0) / p.mu


def is_sgd_neighbourhood(p, m, tau, step, batch):
    """IS-SGD (chapter 5): 2 step sigma^2 / mu, sigma^2 = ((m/tau) sigma-bar^2 - sigma*^2)/n."""
    return 2.0 * step * max(gradient_noise(p, m, tau, batch=batch), 0.0) / p.mu


def no_neighbourhood(p, m, tau, step, batch):
    """ISEGA, IS-SAGA (chapters 6, 6b: the shifts or tables reach grad f_i(x*)) and IS-ASGD (chapter 7, under
    interpolation): 0, x^k -> x*."""
    return 0.0


def isaga_local_neighbourhood(p, m, tau, step, batch):
    """Distributed ISAGA: 0 under interpolation (Theorem 5); without it no ball is proved (inf)."""
    return 0.0 if p.interpolating else math.inf


def isaga_shared_neighbourhood(p, m, tau, step, batch):
    """Shared-data ISAGA (Theorem 2): 0, x^k -> x* on any shared-data problem."""
    check_shared(p)
    return 0.0


# ---- target: (problem, m, tau, eps, step, batch, x0, D0) -> what rate^K must reach (<= 0: never) ---------


def ibcd_target(p, m, tau, eps, step, batch, x0, D0):
    """IBCD, IBGD (chapter 4): (eps D0 - neighbourhood) / D0, D0 = ||x^0 - x*||^2 (never when eps lies inside
    the ball)."""
    return (eps * D0 - ibcd_neighbourhood(p, m, tau, step, batch)) / D0


def is_sgd_target(p, m, tau, eps, step, batch, x0, D0):
    """IS-SGD (chapter 5): (eps D0 - neighbourhood) / D0."""
    return (eps * D0 - is_sgd_neighbourhood(p, m, tau, step, batch)) / D0


def isega_target(p, m, tau, eps, step, batch, x0, D0):
    """ISEGA (chapter 6, thm-isega): eps D0 / (D0 + c step^2 H^0), c = 4 omega m/(n tau), shifts h_i^0 = 0 so
    H^0 = (1/n) sum_i ||grad f_i(x*)||^2."""
    c = 4 * omega(m, tau) * m / (p.n * tau)
    H0 = float(np.mean(np.sum((p.local_grads_star) ** 2, axis=1)))
    return eps * D0 / (D0 + c * step * step * H0)


def is_saga_target(p, m, tau, eps, step, batch, x0, D0):
    """IS-SAGA (chapter 6b, thm-is-saga): eps D0 / (D0 + step^2 (c H^0 + a A^0)), shifts 0 and tables filled at
    x^0 (l = l_max on an uneven split)."""
    return eps * D0 / (D0 + step * step * _is_saga_memory0(p, m, tau, batch, x0))


def isaga_local_target(p, m, tau, eps, step, batch, x0, D0):
    """Distributed ISAGA (Theorem 5): eps D0 / (D0 + c gamma_p^2 Psi^0), Psi^0 = sum_ij ||grad f_ij(x^0) -
    grad f_ij(x*)||^2; never without interpolation."""
    if not p.interpolating:
        return 0.0
    c, gp, _ = isaga_local_constants(p, m, tau, step)
    return eps * D0 / (D0 + c * gp * gp * _table_distance2(p, x0))


def isaga_shared_target(p, m, tau, eps, step, batch, x0, D0):
    """Shared-data ISAGA (Theorem 2): eps D0 / (D0 + c gamma_p^2 Psi^0) over the N shared functions, any data."""
    c, gp, _ = isaga_shared_constants(p, m, tau, step)
    return eps * D0 / (D0 + c * gp * gp * _shared_table_distance2(p, x0))


def is_asgd_target(p, m, tau, eps, step, batch, x0, D0):
    """IS-ASGD (chapter 7, Vaswani et al.'s Lyapunov function): eps D0 mu / (2 (f(x^0) - f*) + mu D0)."""
    gap0 = p.f(x0) - p.f_star
    return eps * D0 * p.mu / (2 * gap0 + p.mu * D0)


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


def iterations(q: float, ratio: float) -> float:
    """The least K >= 0 with q^K <= ratio: ceil(log ratio / log q); ``inf`` unless 0 < q < 1 and ratio > 0."""
    if not 0 < q < 1 or not ratio > 0:
        return math.inf
    return max(0.0, math.ceil(math.log(ratio) / math.log(q)))


# ---- ratio K(tau)/K(m): (problem, m, tau, batch, method) -> float ---------------------------------------


def smoothness_ratio(p, m, tau, batch, method):
    """The leading term L(tau)/L(m) (for IBCD 1 + (m/tau - 1) r/n, the m/n rule of chapter 4; for IS-ASGD
    rho(tau)/rho(m)), from the method's row ``smoothness``."""
    L = entry(method, "smoothness")
    return L(p, m, tau, batch, "independent") / L(p, m, m, batch, "independent")


def rate_ratio(p, m, tau, batch, method):
    """log q(m) / log q(tau) at the theory's steps, from the method's rows ``rate``, ``step_factor`` and
    ``smoothness``: shared-data ISAGA, whose rate has two terms (Theorem 2)."""
    L, factor, rate = entry(method, "smoothness"), entry(method, "step_factor"), entry(method, "rate")

    def q(t):
        return rate(p, m, t, factor / L(p, m, t, batch, "independent"), batch)
    return math.log(q(m)) / math.log(q(tau))


# ---- the paper's theorems in the book's units (q = tau/m, L = L_max) ---------------------------------------


def ibcd_paper_step(p, m, tau):
    """Theorems 1 and 4 (IBCD, IBGD): q n/(q n + 2(1 - q)) / (2 L), i.e. 1/(2 L_max (1 + 2 omega/n))."""
    q = tau / m
    return q * p.n / (q * p.n + 2.0 * (1.0 - q)) / (2.0 * p.L_max)


def isega_paper_step(p, m, tau):
    """Theorem 3 (ISEGA): min{1/(4L(1 + 1/(nq))), 1/(mu/q + 4L/(nq))} (its g_i is already rescaled)."""
    q, n, L1 = tau / m, p.n, p.L_max
    return min(1.0 / (4.0 * L1 * (1.0 + 1.0 / (n * q))), 1.0 / (p.mu / q + 4.0 * L1 / (n * q)))


def isaga_shared_paper_step(p, m, tau):
    """Theorem 2 with Corollary 2's step at every q (shared-data ISAGA): q/(L_s (4/n + q))."""
    check_shared(p)
    q = tau / m
    return q / (local_L(p, 1) * (4.0 / p.n + q))


def is_sgd_async_paper_step(p, m, tau):
    """Theorem 9 (asynchronous IS-SGD): q/(2L(q + 2/n)) = 1/(2 L_max (1 + 2m/(tau n)))."""
    q = tau / m
    return q / (2.0 * p.L_max * (q + 2.0 / p.n))


def plain_paper_iterations(p, m, tau, eps, step, x0):
    """Theorems 1 and 4 (under interpolation): (1 - step mu)^K ||x^0 - x*||^2 <= eps ||x^0 - x*||^2."""
    D0 = float(np.sum((x0 - p.x_star) ** 2))
    return max(0.0, math.ceil(math.log(eps * D0 / D0) / math.log(1.0 - step * p.mu)))


def isega_paper_iterations(p, m, tau, eps, step, x0):
    """Theorem 3: (1 - step mu)^K Phi^0, Phi^0 = ||x^0 - x*||^2 + step/(2 L q n) sum_i ||grad f_i(x*)||^2
    (h_i^0 = 0, L = L_max)."""
    D0 = float(np.sum((x0 - p.x_star) ** 2))
    phi0 = D0 + step / (2.0 * p.L_max * (tau / m)) * p.sigma_star2
    return max(0.0, math.ceil(math.log(eps * D0 / phi0) / math.log(1.0 - step * p.mu)))


def isaga_shared_paper_iterations(p, m, tau, eps, step, x0):
    """Theorem 2: the book's bound at the paper's step (the book has no finer one)."""
    D0 = float(np.sum((x0 - p.x_star) ** 2))
    return iterations(isaga_shared_rate(p, m, tau, step, None),
                      isaga_shared_target(p, m, tau, eps, step, None, x0, D0))


# ---- the table -------------------------------------------------------------------------------------------

_CD = "coordinate descent's steps are per block and its rate depends on the sampling: see theory.cd_steps, cd_rate"
_ASYNC = ("the paper's Theorem 9 gives linear convergence in epochs of at most M iterations to a neighbourhood, "
          "not a contraction per iteration (chapter 12)")
_NOPAPER = "the paper states no step for it (its theorem's constants are not legible, or it has none)"

#: name -> the method's theory row (:class:`blockcd.registry.TheoryRow`) for the book's methods (a
#: registered method brings its own)
ROWS: dict[str, TheoryRow] = {
    "ibcd": TheoryRow(ibcd_smoothness, 0.5, plain_rate, ibcd_neighbourhood, ibcd_target, smoothness_ratio,
                      paper_step=ibcd_paper_step, paper_iterations=plain_paper_iterations),
    "is-sgd": TheoryRow(is_sgd_smoothness, 0.5, plain_rate, is_sgd_neighbourhood, is_sgd_target, smoothness_ratio,
                        paper_step=_NOPAPER, paper_iterations=_NOPAPER),
    "isega": TheoryRow(isega_smoothness, 1.0, isega_rate, no_neighbourhood, isega_target, smoothness_ratio,
                       paper_step=isega_paper_step, paper_iterations=isega_paper_iterations),
    "is-saga": TheoryRow(is_saga_smoothness, 1.0, is_saga_rate, no_neighbourhood, is_saga_target, smoothness_ratio,
                         paper_step=_NOPAPER, paper_iterations=_NOPAPER),
    "is-asgd": TheoryRow(is_asgd_smoothness, 1.0, is_asgd_rate, no_neighbourhood, is_asgd_target, smoothness_ratio,
                         paper_step=_NOPAPER, paper_iterations=_NOPAPER),
    "cd": TheoryRow(_CD, 1.0, _CD, _CD, _CD, _CD, step=cd_step, paper_step=_NOPAPER, paper_iterations=_NOPAPER),
    "ibgd": TheoryRow(ibcd_smoothness, 0.5, plain_rate, ibcd_neighbourhood, ibcd_target, smoothness_ratio,
                      samplings=("independent",), paper_step=ibcd_paper_step,
                      paper_iterations=plain_paper_iterations),
    "isaga-local": TheoryRow(isaga_local_smoothness, 1.0, isaga_local_rate, isaga_local_neighbourhood,
                             isaga_local_target, smoothness_ratio, samplings=("independent",),
                             paper_step=_NOPAPER, paper_iterations=_NOPAPER),
    "isaga-shared": TheoryRow(isaga_shared_smoothness, 1.0, isaga_shared_rate, isaga_shared_neighbourhood,
                              isaga_shared_target, rate_ratio, samplings=("independent",),
                              paper_step=isaga_shared_paper_step, paper_iterations=isaga_shared_paper_iterations),
    "is-sgd-async": TheoryRow(is_sgd_async_smoothness, 0.5, _ASYNC, _ASYNC, _ASYNC, smoothness_ratio,
                              samplings=("independent",), paper_step=is_sgd_async_paper_step,
                              paper_iterations=_ASYNC),
}

"""The paper's own statements (Mishchenko, Hanzely and Richtarik 2019) in the book's units: the steps
and iteration counts of its theorems, Corollary 7's saturation threshold, Theorem 6's decreasing
schedule and Corollary 6's non-convex bound, as it states them."""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_float, check_int, check_vector
from .constants import check_rho0, m_tau, method_name, minibatch_growth
from .nonconvex import nonconvex_step, q_t, start_gap
from .rows import ROWS, MissingTheory, entry, optional


def paper_step(problem, method: str, m: int, tau: int) -> float:
    r"""The step of the paper's theorem for ``method``, converted to the book's units.

    The paper (Mishchenko, Hanzely and Richtarik 2019) writes the worker
    update unscaled, x_i = x - gamma (grad f_i(x))_{U_i}, with its tau the
    *fraction* q = tau/m of blocks and one L for every f_i (its Assumption 1;
    here L_max).  The book rescales what a worker sends by 1/q, so the book's
    step is q times the paper's:

    - ibcd (Theorem 1) and ibgd (Theorem 4):
      :math:`\gamma_{paper} = \frac{n}{qn + 2(1-q)}\frac{1}{2L}`, i.e.
      :math:`\gamma = 1/(2 L_{\max}(1 + 2\omega/n))` in the book's units: the
      constant L + 2 omega L/n, of which the book's L + omega L_max/n is a refinement
      (never larger, since L <= L_max).
    - isega (Theorem 3, with or without a regulariser R): the paper's g_i is
      already rescaled by 1/q, so no conversion:
      :math:`\gamma = \min\{1/(4L(1 + 1/(nq))),\ 1/(\mu/q + 4L/(nq))\}`.
    - is-sgd-async (Theorem 9, asynchronous, delays at most M): :math:`\gamma_{paper} \le 1/(2L(q + 2/n))`,
      i.e. :math:`\gamma = q/(2L(q + 2/n)) = 1/(2 L_{\max}(1 + 2m/(\tau n)))`, also
      :func:`step_size`'s (the book has no sharper form).
    - isaga-shared (Theorem 2, shared data, no interpolation needed): the theorem
      allows :math:`\gamma_{paper} \le 1/(L(3/n + q))`, at which its rate is 0
      (see :func:`isaga_shared_constants`); its Corollary 2 takes n/(5L) at
      q = 1/n, i.e. :math:`\gamma_{paper} = 1/(L(4/n + q))`, taken here for every q;
      in the book's units q/(L(4/n + q)), the book's step.

    Raises ``ValueError`` for a method without such a theorem here.  The method's row ``paper_step``.
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    step = optional(method, "paper_step")
    if step is None:
        covered = [name for name in ROWS if optional(name, "paper_step") is not None]
        raise MissingTheory(f"paper_step covers {', '.join(map(repr, covered))} (the paper's theorems that state "
                            f"a step), not {method!r}")
    return step(problem, m, tau)


def paper_iterations(problem, method: str, m: int, tau: int, eps: float, *, x0=None) -> float:
    r"""Iterations after which the paper's theorem guarantees E||x^k - x*||^2 <= eps ||x^0 - x*||^2, at
    :func:`paper_step`.

    ibcd, ibgd (Theorems 1 and 4, under interpolation): rate 1 - mu gamma.
    isega (Theorem 3): :math:`(1 - \gamma\mu)^k \Phi^0` with
    :math:`\Phi^0 = \|x^0 - x^\star\|^2 + \frac{\gamma}{2Lqn}\sum_i\|h_i^0 - \nabla f_i(x^\star)\|^2`
    and h_i^0 = 0, L = L_max.
    isaga-shared (Theorem 2): :math:`(1 - \vartheta)^k (\|x^0 - x^\star\|^2 + c\gamma_p^2\Psi^0)`,
    the constants of :func:`isaga_shared_constants` (the same as :func:`predicted_iterations`:
    the book has no finer bound for it).  The method's row ``paper_iterations``.
    """
    method = method_name(method)
    m, tau = m_tau(problem, m, tau)
    eps = check_float("eps", eps, positive=True)
    g = paper_step(problem, method, m, tau)
    count = entry(method, "paper_iterations")
    x0 = np.zeros(problem.d) if x0 is None else check_vector("x0", x0, problem.d, "the problem dimension d")
    return count(problem, m, tau, eps, g, x0)


def paper_saturation(problem, m: int, *, batch: int | None) -> float:
    r"""Corollary 7's threshold in the book's units: tau = m rho-tilde rho-bar / n (chapter 7).

    The paper (Mishchenko, Hanzely and Richtarik 2019, Corollary 7 and its section I.3) says that
    increasing its fraction of blocks beyond :math:`\tilde\rho\bar\rho/n` does not improve the
    convergence significantly; its fraction is q = tau/m, and its rho-tilde is ``problem.rho0``.
    Not clipped to [1, m]: a value above m says that no sparsification is free.
    """
    m = check_int("m", m, 1, problem.d)
    rb, _ = minibatch_growth(problem, batch)
    return m * check_rho0(problem) * rb / problem.n


def paper_decreasing_schedule(problem, m: int, tau: int) -> tuple[float, float]:
    r"""The paper's Theorem 6 schedule in the book's units: (a_p/q, c_p/q) = (2 L (1 + 2 omega/n), mu/4).

    q = tau/m; the paper's one L for every f_i is L_max here.  See :func:`decreasing_schedule`.
    """
    m, tau = m_tau(problem, m, tau)
    q = tau / m
    a_p = 2.0 * (q + 2.0 * (1.0 - q) / problem.n) * problem.L_max
    return a_p / q, problem.mu / 4.0   # c_p / q = (mu q / 4) / q


def paper_nonconvex_bound(problem, m: int, tau: int, t: int, *, nu2: float | None = None, x0=None) -> float:
    r"""The paper's Corollary 6 bound on :math:`\mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2`, as it states it.

    With q = tau/m and the step of :func:`nonconvex_step`, :math:`\hat x_t` uniform over
    :math:`x^0, \dots, x^t`:

    .. math::

        \mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2 \le \frac{2}{\sqrt{tqn}}
        \Big((f(x^0) - f^\star)L + (1 - q)\nu^2\Big),

    with ``problem.f_lower`` for f* and ``nu2`` (default ``problem.nu2_bound``) for the
    dissimilarity.  The text of the corollary has no term in the local variance sigma-bar_b^2 of its
    Assumption 3; the book's derivation (:func:`nonconvex_bound`) finds one, so this form is
    for exact local gradients (b = l).
    """
    m, tau, q, t = q_t(problem, m, tau, t)
    nonconvex_step(problem, m, tau, t)  # the corollary's condition on t
    nu2 = problem.nu2_bound if nu2 is None else check_float("nu2", nu2, nonnegative=True)
    return 2.0 / math.sqrt(t * q * problem.n) * (start_gap(problem, x0) * problem.L + (1.0 - q) * nu2)

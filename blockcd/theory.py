"""What the theory predicts: omega, expected smoothness, step sizes, rates, iteration counts.

Formulas of the book (chapters 3-9), evaluated on a :class:`~blockcd.problems.Problem`
or on plain numbers.  Nothing here runs a method.

Conventions.  ``expected_smoothness(problem, method, m, tau)`` is the constant
:math:`\\mathcal{L}(\\tau)` that sets the method's theoretical step:

=========  ==========================================  ===================
method     :math:`\\mathcal{L}(\\tau)`                     step
=========  ==========================================  ===================
ibcd       L + omega L_max / n                          1 / (2 L(tau))
ibgd       L + omega L_max / n                          1 / (2 L(tau))
is-sgd     L + (m/tau) L_loc(b) / n                     1 / (2 L(tau))
isega      L + 6 omega L_max / n                        1 / L(tau)
is-saga    L + (6 + 36 omega) L_loc(b) / n              1 / L(tau)
is-asgd    rho(tau) L,  rho = 1 + omega rho0 / n        eta = 1 / L(tau)
isaga-l.   L_s (1 + 4 m / (tau n))                       1 / L(tau)
isaga-s.   L_s (1 + 4 m / (tau n))                       1 / L(tau)
=========  ==========================================  ===================

with omega = m/tau - 1 and L_loc(b) the largest local expected smoothness of a
b-minibatch (L_s at b = 1).  IBGD (each worker sends its whole gradient with
probability q = tau/m, rescaled by 1/q) has IBCD's constants: its sparsifier
(1/q) b_i g_i has the same variance omega ||g_i||^2 with omega = 1/q - 1, so
the key lemma and IBCD's proof hold word for word.

``isaga-local`` (the paper's distributed ISAGA) takes its constants from the
paper's Theorem 5 (one row per worker and iteration; L_s = max_ij L_ij; under
its Assumption 2, interpolation): with q = tau/m, a paper step gamma_p <=
1/(L_s (3/n + q)) is q gamma_p in the book's units, and the book takes
gamma_p = 1/(L_s (4/n + q)), which at q = 1/n is the step n/(5 L_s) of the
paper's Corollary 4.  See :func:`isaga_local_constants`.

``isaga-shared`` (the paper's shared-data ISAGA, Algorithm 4: every worker
reads all N functions f_j, n distinct of them per round) takes the same step
from the paper's Theorem 2 (L_s = max_j L_j, one constant for every f_j),
which needs no interpolation; at q = 1/n it is Corollary 2's n/(5 L_s).  See
:func:`isaga_shared_constants`.  The constants 6 and 36 come from Young's
inequality in the book's proofs and are loose (chapter 6).  IS-SAGA's step is
the theorem's own, 1/(L + (6 + 36 omega) L_loc(b)/n), not its simpler
corollary form 1/(L + 36 (m/tau) L_loc(b)/n): at tau = m (dense SAGA) the two
differ by up to 6 times, and the corollary form would handicap the baseline.
"""

from __future__ import annotations

import math

import numpy as np

from . import registry
from ._validate import check_choice, check_float, check_int, check_vector

METHODS = registry.METHODS
#: constants of the Lyapunov proofs (chapter 6); loose, see the module docstring
ISEGA_C = 6.0
#: IS-SAGA's constant is ISSAGA_C0 + ISSAGA_C * omega: 6 at tau = m, below 36 m/tau at every tau
ISSAGA_C0 = 6.0
ISSAGA_C = 36.0


_method = registry.canonical


def _m_tau(problem, m, tau) -> tuple[int, int]:
    d = problem.d if problem is not None else None
    m = check_int("m", m, 1, d)
    tau = check_int("tau", tau, 1, m)
    return m, tau


def omega(m: int, tau: int) -> float:
    """Variance parameter of the block sparsifier, omega = m/tau - 1 (chapter 3)."""
    m = check_int("m", m, 1)
    tau = check_int("tau", tau, 1, m)
    return m / tau - 1.0


def coverage(m: int, tau: int, n: int) -> float:
    """Expected number of distinct blocks the master receives: m (1 - (1 - tau/m)^n)."""
    m = check_int("m", m, 1)
    tau = check_int("tau", tau, 1, m)
    n = check_int("n", n, 1)
    return m * (1.0 - (1.0 - tau / m) ** n)


def aggregation_variance(G, m: int, tau: int, sampling: str = "independent") -> float:
    r"""Exact E||(1/n) sum_i C_i(g_i) - gbar||^2 for the rows g_i of ``G`` (the key lemma).

    independent: (omega/n) (1/n) sum_i ||g_i||^2;   shared: omega ||gbar||^2.
    Both hold for uneven block sizes (each block is kept with probability tau/m).
    """
    G = np.atleast_2d(np.asarray(G, dtype=np.float64))
    if G.ndim != 2:
        raise ValueError(f"G must have shape (n, d), got {G.shape}")
    n, d = G.shape
    m = check_int("m", m, 1, d)
    w = omega(m, tau)
    sampling = check_choice("sampling", sampling, ("independent", "shared"))
    if sampling == "independent":
        return w / n * float(np.mean(np.sum(G**2, axis=1)))
    gbar = G.mean(axis=0)
    return w * float(gbar @ gbar)


def index_bits(m: int, tau: int) -> int:
    """Bits to name tau of m blocks when the master cannot regenerate them: tau ceil(log2 m)."""
    m = check_int("m", m, 1)
    tau = check_int("tau", tau, 1, m)
    return 0 if tau == m else tau * math.ceil(math.log2(m))


def _local_L(problem, batch) -> float:
    b = 1 if batch is None else batch
    return float(problem.local_smoothness(b).max())


def rho(problem, m: int, tau: int) -> float:
    """Strong growth constant of the IBCD estimator, rho(tau) = 1 + omega rho0 / n (chapter 7)."""
    m, tau = _m_tau(problem, m, tau)
    if tau == m:  # omega = 0: the exact gradient, strong growth with rho = 1 on any problem
        return 1.0
    r0 = problem.rho0
    if not math.isfinite(r0):
        raise ValueError(
            "IS-ASGD's theory needs interpolation (grad f_i(x*) = 0 for all i); this problem has "
            f"sigma*^2 = {problem.sigma_star2:.3g} > 0, so rho0 is infinite"
        )
    return 1.0 + omega(m, tau) * r0 / problem.n


def expected_smoothness(problem, method: str, m: int, tau: int, *, batch: int | None = None,
                        sampling: str = "independent") -> float:
    """The constant L(tau) of the method (see the module table); the step is built from it.

    With ``sampling='shared'`` (one block choice for all workers) the key lemma
    gives variance omega ||gbar||^2 instead of (omega/n) mean ||g_i||^2, so
    ibcd: (m/tau) L;  is-sgd: (m/tau)(L + L_loc/n);  is-asgd: rho = m/tau;
    isega and is-saga: the independent constants with omega/n replaced by
    omega (the same proofs with the shared bound; conservative).
    """
    method = _method(method)
    m, tau = _m_tau(problem, m, tau)
    sampling = check_choice("sampling", sampling, ("independent", "shared"))
    w, n, L = omega(m, tau), problem.n, problem.L
    if method in ("ibgd", "isaga-local", "isaga-shared") and sampling != "independent":
        raise ValueError(f"{method}'s theory covers independent choices only: sampling must be 'independent'")
    if method == "isaga-shared":
        _check_shared(problem)
        if batch not in (None, 1):
            raise ValueError(f"isaga-shared samples one function per worker (the paper's Algorithm 4), got "
                             f"batch = {batch}")
        return _local_L(problem, 1) * (1.0 + 4.0 * m / (tau * n))
    if method == "isaga-local":
        if batch not in (None, 1):
            raise ValueError(f"isaga-local's theory (the paper's Theorem 5) covers batch = 1, got batch = {batch}; "
                             "pass step= for larger batches")
        return _local_L(problem, 1) * (1.0 + 4.0 * m / (tau * n))
    if sampling == "shared":
        if method == "ibcd":
            return (m / tau) * L
        if method == "is-sgd":
            return (m / tau) * (L + _local_L(problem, batch) / n)
        if method == "isega":
            return L + ISEGA_C * w * problem.L_max
        if method == "is-saga":
            return L + ISSAGA_C * (m / tau) * _local_L(problem, batch)
        return (m / tau) * L
    if method in ("ibcd", "ibgd"):
        return L + w * problem.L_max / n
    if method == "is-sgd":
        return L + (m / tau) * _local_L(problem, batch) / n
    if method == "isega":
        return L + ISEGA_C * w * problem.L_max / n
    if method == "is-saga":
        return L + (ISSAGA_C0 + ISSAGA_C * w) * _local_L(problem, batch) / n
    return rho(problem, m, tau) * L


def step_size(problem, method: str, m: int, tau: int, *, batch: int | None = None,
              sampling: str = "independent") -> float:
    """The theory's step size (for IS-ASGD, eta); see the module table and :func:`expected_smoothness`."""
    method = _method(method)
    if method == "cd":  # its steps are per block (cd_steps); the step is their multiplier
        _m_tau(problem, m, tau)
        return 1.0
    Lt = expected_smoothness(problem, method, m, tau, batch=batch, sampling=sampling)
    return 1.0 / (2.0 * Lt) if method in ("ibcd", "ibgd", "is-sgd") else 1.0 / Lt


#: the samplings of coordinate descent (``'cd'``): the same blocks on every worker, uniform or by importance
CD_SAMPLINGS = ("shared", "importance")


def cd_probabilities(problem, m: int, tau: int) -> np.ndarray:
    r"""Importance sampling of coordinate descent: :math:`p_j = \min(1, c L_j)` with :math:`\sum_j p_j = \tau`.

    :math:`L_j` are the blocks' smoothness constants (:meth:`blockcd.problems.Problem.block_smoothness`);
    c is set by water-filling (blocks whose :math:`c L_j` would exceed 1 are always sent), so that
    tau blocks are sent in expectation, as under uniform tau-nice sampling.  At tau = 1 and more
    than one block, :math:`p_j = L_j/\sum_k L_k`: the sampling of Nesterov (2012).
    """
    m, tau = _m_tau(problem, m, tau)
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
    m, tau = _m_tau(problem, m, tau)
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
    m, tau = _m_tau(problem, m, tau)
    step = check_float("step", step, positive=True)
    if step > 1.0:
        raise ValueError(f"cd_rate covers step multipliers in (0, 1], got step = {step}")
    sampling = check_choice("sampling", sampling, CD_SAMPLINGS)
    w = cd_steps(problem, m, tau, sampling)
    p = np.full(m, tau / m) if sampling == "shared" else cd_probabilities(problem, m, tau)
    return float(1.0 - step * (2.0 - step) * problem.mu * np.min(p * w))


def _check_shared(problem) -> None:
    if not problem.shared_data:
        raise ValueError("isaga-shared's theory (the paper's Theorem 2) is for shared data, every worker reading "
                         f"all N functions (split='identical' or 'shared'); got split = {problem.split!r}")


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
    - isaga-shared (Theorem 2, shared data, no interpolation needed): the theorem
      allows :math:`\gamma_{paper} \le 1/(L(3/n + q))`, at which its rate is 0
      (see :func:`isaga_shared_constants`); its Corollary 2 takes n/(5L) at
      q = 1/n, i.e. :math:`\gamma_{paper} = 1/(L(4/n + q))`, taken here for every q;
      in the book's units q/(L(4/n + q)), the book's step.

    Raises ``ValueError`` for a method without such a theorem here.
    """
    method = _method(method)
    m, tau = _m_tau(problem, m, tau)
    q, n, L1 = tau / m, problem.n, problem.L_max
    if method in ("ibcd", "ibgd"):
        return q * n / (q * n + 2.0 * (1.0 - q)) / (2.0 * L1)
    if method == "isega":
        return min(1.0 / (4.0 * L1 * (1.0 + 1.0 / (n * q))), 1.0 / (problem.mu / q + 4.0 * L1 / (n * q)))
    if method == "isaga-shared":
        _check_shared(problem)
        return q / (_local_L(problem, 1) * (4.0 / n + q))
    raise ValueError(f"paper_step covers 'ibcd', 'ibgd', 'isega' and 'isaga-shared' (Theorems 1, 4, 3 and 2), "
                     f"not {method!r}")


def paper_iterations(problem, method: str, m: int, tau: int, eps: float, *, x0=None) -> float:
    r"""Iterations after which the paper's theorem guarantees E||x^k - x*||^2 <= eps ||x^0 - x*||^2, at
    :func:`paper_step`.

    ibcd, ibgd (Theorems 1 and 4, under interpolation): rate 1 - mu gamma.
    isega (Theorem 3): :math:`(1 - \gamma\mu)^k \Phi^0` with
    :math:`\Phi^0 = \|x^0 - x^\star\|^2 + \frac{\gamma}{2Lqn}\sum_i\|h_i^0 - \nabla f_i(x^\star)\|^2`
    and h_i^0 = 0, L = L_max.
    isaga-shared (Theorem 2): :math:`(1 - \vartheta)^k (\|x^0 - x^\star\|^2 + c\gamma_p^2\Psi^0)`,
    the constants of :func:`isaga_shared_constants` (the same as :func:`predicted_iterations`:
    the book has no finer bound for it).
    """
    method = _method(method)
    m, tau = _m_tau(problem, m, tau)
    eps = check_float("eps", eps, positive=True)
    g = paper_step(problem, method, m, tau)
    if method == "isaga-shared":
        return predicted_iterations(problem, method, m, tau, eps, step=g, x0=x0)
    x0 = np.zeros(problem.d) if x0 is None else check_vector("x0", x0, problem.d, "the problem dimension d")
    D0 = float(np.sum((x0 - problem.x_star) ** 2))
    phi0 = D0
    if method == "isega":
        phi0 += g / (2.0 * problem.L_max * (tau / m)) * problem.sigma_star2
    return max(0.0, math.ceil(math.log(eps * D0 / phi0) / math.log(1.0 - g * problem.mu)))


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


def rate(problem, method: str, m: int, tau: int, *, step: float | None = None, batch: int | None = None) -> float:
    """Contraction factor per iteration of the method's Lyapunov function at the given step.

    ibcd, ibgd, is-sgd: 1 - step mu; isega: max(1 - step mu, 1 - tau/(2m));
    is-saga: max(1 - step mu, 1 - b/(2 l_max), 1 - tau/(2m));
    is-asgd: 1 - sqrt(mu eta / rho) with rho = 1/(eta L);
    isaga-local: 1 - theta of :func:`isaga_local_constants` (1 where the theorem gives no rate);
    isaga-shared: 1 - theta of :func:`isaga_shared_constants`.
    """
    method = _method(method)
    m, tau = _m_tau(problem, m, tau)
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
    m, tau = _m_tau(problem, m, tau)
    step = check_float("step", step, positive=True)
    q, n, Ls, lm = tau / m, problem.n, _local_L(problem, 1), problem.l_max
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
    _check_shared(problem)
    m, tau = _m_tau(problem, m, tau)
    step = check_float("step", step, positive=True)
    q, n, N, Ls = tau / m, problem.n, problem.N, _local_L(problem, 1)
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
    theta = 0.0 if b >= l else (l - b) / (b * (l - 1))     # variance of a sample mean without replacement
    c, a = 4.0 * w * m / (n * tau), 4.0 * l * theta * (1.0 + 6.0 * w) / (b * n)
    H0 = float(np.mean(np.sum(problem.local_grads_star ** 2, axis=1)))
    xs, lam, A0 = problem.x_star, problem.lam, 0.0
    if a > 0:
        for i in range(n):
            wk = problem.worker(i)
            D = wk.gradient_table(x0) - wk.gradient_table(xs) + lam * (x0 - xs)
            A0 += float(np.sum(D * D)) / (D.shape[0] * n)
    return c * H0 + a * A0


def local_variance_star(problem, batch: int) -> float:
    """sigma-bar^2 = (1/n) sum_i E||g_i(x*)||^2 for b-minibatch local estimators (chapter 5)."""
    return problem.minibatch_variance_star(batch)


def neighbourhood(problem, method: str, m: int, tau: int, *, step: float | None = None,
                  batch: int | None = None) -> float:
    """Radius 2 gamma sigma^2 / mu of the ball ||x - x*||^2 the method reaches (0 for shifted methods).

    ibcd, ibgd: sigma^2 = (omega/n) sigma*^2;  is-sgd: sigma^2 <= (m/(tau n)) sigma-bar^2 minus the
    cross terms, i.e. ((m/tau) sigma-bar^2 - sigma*^2)/n (chapter 5).
    """
    method = _method(method)
    m, tau = _m_tau(problem, m, tau)
    g = step_size(problem, method, m, tau, batch=batch) if step is None else check_float("step", step, positive=True)
    if method in ("ibcd", "ibgd"):
        s2 = omega(m, tau) / problem.n * problem.sigma_star2
    elif method == "is-sgd":
        s2 = gradient_noise(problem, m, tau, batch=batch)
    elif method == "isaga-local":  # Theorem 5 needs interpolation; without it no ball is proved
        return 0.0 if problem.interpolating else math.inf
    elif method == "isaga-shared":  # Theorem 2: x^k -> x* on any shared-data problem
        _check_shared(problem)
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
    method = _method(method)
    m, tau = _m_tau(problem, m, tau)
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
    if _method(method) == "isaga-shared":
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


def gradient_noise(problem, m: int, tau: int, *, batch: int | None = None) -> float:
    r"""IS-SGD's noise at the optimum, :math:`\sigma^2 = \mathbb{E}\lVert G(x^\star)\rVert^2
    = \frac1n\big(\frac{m}{\tau}\bar\sigma^2 - \sigma_\star^2\big)` (chapter 5, the composition lemma)."""
    m, tau = _m_tau(problem, m, tau)
    b = 1 if batch is None else batch
    return ((m / tau) * local_variance_star(problem, b) - problem.sigma_star2) / problem.n


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


def paper_decreasing_schedule(problem, m: int, tau: int) -> tuple[float, float]:
    r"""The paper's Theorem 6 schedule in the book's units: (a_p/q, c_p/q) = (2 L (1 + 2 omega/n), mu/4).

    q = tau/m; the paper's one L for every f_i is L_max here.  See :func:`decreasing_schedule`.
    """
    m, tau = _m_tau(problem, m, tau)
    q = tau / m
    a_p = 2.0 * (q + 2.0 * (1.0 - q) / problem.n) * problem.L_max
    return a_p / q, problem.mu / 4.0   # c_p / q = (mu q / 4) / q


def average_weights(a: float, c: float, t: int) -> np.ndarray:
    r"""The weights :math:`w_k = a + c(k - 1) = 1/\gamma_{k-1}`, k = 0..t, of the average
    :math:`\hat x_t = \sum_{k=0}^t w_k x^k / \sum_{k=0}^t w_k` (chapter 5; ``History.gap_avg``)."""
    a = check_float("a", a, positive=True)
    c = check_float("c", c, nonnegative=True)
    t = check_int("t", t, 0)
    if a <= c:
        raise ValueError(f"the weights a + c (k - 1) need a > c, got a = {a}, c = {c}")
    return a + c * (np.arange(t + 1) - 1.0)


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

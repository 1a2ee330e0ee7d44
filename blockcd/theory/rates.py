"""The formulas of :mod:`blockcd.theory`; its docstring states the conventions and the table of L(tau)."""

from __future__ import annotations

import math

import numpy as np

from .. import registry
from .._validate import check_choice, check_float, check_int, check_vector
from ..blocks import minibatch_theta

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


def _rho0(problem) -> float:
    r0 = problem.rho0
    if not math.isfinite(r0):
        raise ValueError(
            "IS-ASGD's theory needs interpolation (grad f_i(x*) = 0 for all i); this problem has "
            f"sigma*^2 = {problem.sigma_star2:.3g} > 0, so rho0 is infinite"
        )
    return r0


def _batch(problem, batch) -> int | None:
    return None if batch is None else check_int("batch", batch, 1, int(problem.sizes.min()))


def minibatch_growth(problem, batch: int | None) -> tuple[float, float]:
    r"""The local variance constants (rho-bar, sigma-bar^2) of b-minibatch gradients (chapter 7).

    The paper's bound (13) for every worker and every x,

    .. math:: \operatorname{Var}[g_i(x)] \le \bar\rho\,\lVert\nabla f_i(x)\rVert^2 + \bar\sigma^2 ,

    g_i the mean gradient of b of worker i's rows drawn without replacement.  The library
    computes the pair with :math:`\bar\sigma^2 = 0`: :math:`\bar\rho = \max_i \bar\rho_i`, the smallest
    constant, from :meth:`blockcd.problems.Problem.minibatch_growth` (exact for least squares whose
    every row interpolates, b = A x* row by row).  ``batch=None`` (full local gradients) gives (0, 0).
    This sigma-bar^2 is the additive constant of (13), not chapter 5's (1/n) sum_i E||g_i(x*)||^2
    (:func:`local_variance_star`); both are 0 here.

    Raises ``ValueError`` where no finite rho-bar with sigma-bar^2 = 0 exists: logistic regression,
    or least squares whose rows do not all interpolate (the bound would need sigma-bar^2 > 0 at
    every x, and Corollary 7 assumes sigma-bar^2 = 0).
    """
    batch = _batch(problem, batch)
    if batch is None:
        return 0.0, 0.0
    rb = float(np.max(problem.minibatch_growth(batch)))
    if not math.isfinite(rb):
        why = (f"loss = {problem.loss!r}: the rows' gradients differ at x*" if problem.loss != "ridge" else
               "the rows' gradients differ at x* (not every row interpolates)")
        raise ValueError(f"IS-ASGD with batch = {batch} needs minibatch gradients without variance at x* "
                         f"(sigma-bar^2 = 0, every row interpolating); {why}, so no finite rho-bar exists; "
                         "use batch=None (full local gradients) or an interpolating least-squares problem")
    return rb, 0.0


def rho(problem, m: int, tau: int, *, batch: int | None = None) -> float:
    r"""Strong growth constant of the IS-ASGD estimator, Lemma 1 in the book's units (chapter 7).

    .. math:: \rho(\tau) = 1 + \Big(\omega + \frac{m}{\tau}\,\bar\rho\Big)\frac{\rho_0}{n},
              \qquad \omega = \frac{m}{\tau} - 1,

    with rho0 the workers' strong growth constant (the paper's rho-tilde, ``problem.rho0``) and
    rho-bar the local variance constant of :func:`minibatch_growth` (0 for ``batch=None``, full
    local gradients: then rho(tau) = 1 + omega rho0 / n).  In the paper's fraction q = tau/m it
    reads 1 + rho0 ((1 + rho-bar)/q - 1)/n.
    """
    m, tau = _m_tau(problem, m, tau)
    batch = _batch(problem, batch)
    if batch is None:
        if tau == m:  # omega = 0: the exact gradient, strong growth with rho = 1 on any problem
            return 1.0
        return 1.0 + omega(m, tau) * _rho0(problem) / problem.n
    rb, _ = minibatch_growth(problem, batch)
    return 1.0 + (omega(m, tau) + (m / tau) * rb) * _rho0(problem) / problem.n


def strong_growth_exact(problem, m: int, tau: int, *, batch: int | None = None,
                        with_direction: bool = False) -> float | tuple[float, np.ndarray]:
    r"""The smallest strong growth constant of the IS-ASGD estimator on least squares (chapter 7).

    The key lemma and the variance of a minibatch give, with e = x - x*,
    :math:`\mathbb{E}\lVert q\rVert^2 = \lVert\nabla f\rVert^2 + \frac{1}{n^2}\sum_i\big(\omega\lVert\nabla f_i\rVert^2
    + \frac{m}{\tau}\operatorname{Var}[g_i]\big) = e^\top\big(H^2 + \frac{1}{n^2}\sum_i(\omega H_i^2
    + \frac{m}{\tau} c_i V_i)\big)e`, so the smallest constant is one plus the largest generalised
    eigenvalue of :math:`(\frac{1}{n^2}\sum_i(\omega H_i^2 + \frac{m}{\tau}c_iV_i),\ H^2)`
    (:attr:`blockcd.problems.Problem.local_moments`, :math:`c_i = \frac{l_i - b}{b(l_i - 1)}`, 0 for
    ``batch=None``).  At most :func:`rho`, which bounds each worker's variance and the workers'
    spread separately.  Needs an interpolating least-squares problem (every row, with ``batch``).
    With ``with_direction=True`` returns (rho, e): the constant is attained at x = x* + t e, any t.
    """
    m, tau = _m_tau(problem, m, tau)
    batch = _batch(problem, batch)
    _rho0(problem)
    if batch is not None:
        minibatch_growth(problem, batch)  # raises unless every row interpolates
    H, V = problem.local_moments
    n, w = problem.n, omega(m, tau)
    l = problem.sizes.astype(float)
    c = np.zeros(n) if batch is None else np.where(l > 1, (l - batch) / (batch * np.maximum(l - 1, 1)), 0.0)
    Hbar = H.mean(axis=0)
    S = (w * np.einsum("ijk,ikl->jl", H, H) + (m / tau) * np.einsum("i,ijk->jk", c, V)) / n**2
    R = np.linalg.solve(Hbar, np.linalg.solve(Hbar, S).T)    # Hbar^-1 S Hbar^-1: e = Hbar^-1 u, u its top vector
    w, U = np.linalg.eigh((R + R.T) / 2)
    rho_ = 1.0 + max(float(w[-1]), 0.0)
    if not with_direction:
        return rho_
    e = np.linalg.solve(Hbar, U[:, -1])
    return rho_, e / np.linalg.norm(e)


def asgd_saturation(problem, m: int, *, batch: int | None = None, excess: float = 0.1) -> float:
    r"""The tau past which more blocks bring IS-ASGD little: K(tau)/K(m) = 1 + ``excess`` (chapter 7).

    With K(tau) proportional to rho(tau) (:func:`rho`, Lemma 1; Theorem 8's rate),
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
    a = _rho0(problem) * (1.0 + rb) / (problem.n * rho(problem, m, m, batch=batch))
    return m * a / (a + excess)


def paper_saturation(problem, m: int, *, batch: int | None) -> float:
    r"""Corollary 7's threshold in the book's units: tau = m rho-tilde rho-bar / n (chapter 7).

    The paper (Mishchenko, Hanzely and Richtarik 2019, Corollary 7 and its section I.3) says that
    increasing its fraction of blocks beyond :math:`\tilde\rho\bar\rho/n` does not improve the
    convergence significantly; its fraction is q = tau/m, and its rho-tilde is ``problem.rho0``.
    Not clipped to [1, m]: a value above m says that no sparsification is free.
    """
    m = check_int("m", m, 1, problem.d)
    rb, _ = minibatch_growth(problem, batch)
    return m * _rho0(problem) * rb / problem.n


def expected_smoothness(problem, method: str, m: int, tau: int, *, batch: int | None = None,
                        sampling: str = "independent") -> float:
    """The constant L(tau) of the method (see the module table); the step is built from it.

    With ``sampling='shared'`` (one block choice for all workers) the key lemma
    gives variance omega ||gbar||^2 instead of (omega/n) mean ||g_i||^2, so
    ibcd: (m/tau) L;  is-sgd: (m/tau)(L + L_loc/n);  is-asgd: rho = m/tau, with ``batch``
    (m/tau)(1 + rho-bar rho0/n) (E||C(gbar)||^2 = (m/tau) E||gbar||^2, then Lemma 1's bounds);
    isega and is-saga: the independent constants with omega/n replaced by
    omega (the same proofs with the shared bound; conservative).
    """
    method = _method(method)
    m, tau = _m_tau(problem, m, tau)
    sampling = check_choice("sampling", sampling, ("independent", "shared"))
    _check_convex(problem, f"{method}'s constant L(tau) (expected smoothness) and its step")
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
        return (m / tau) * rho(problem, m, m, batch=batch) * L   # is-asgd: 1 without batch
    if method in ("ibcd", "ibgd"):
        return L + w * problem.L_max / n
    if method == "is-sgd-async":  # the paper's Theorem 9 in book units: no sharper form here
        return problem.L_max * (1.0 + 2.0 * m / (tau * n))
    if method == "is-sgd":
        return L + (m / tau) * _local_L(problem, batch) / n
    if method == "isega":
        return L + ISEGA_C * w * problem.L_max / n
    if method == "is-saga":
        return L + (ISSAGA_C0 + ISSAGA_C * w) * _local_L(problem, batch) / n
    return rho(problem, m, tau, batch=batch) * L


def step_size(problem, method: str, m: int, tau: int, *, batch: int | None = None,
              sampling: str = "independent") -> float:
    """The theory's step size (for IS-ASGD, eta); see the module table and :func:`expected_smoothness`."""
    method = _method(method)
    if method == "cd":  # its steps are per block (cd_steps); the step is their multiplier
        _m_tau(problem, m, tau)
        return 1.0
    Lt = expected_smoothness(problem, method, m, tau, batch=batch, sampling=sampling)
    return 1.0 / (2.0 * Lt) if method in ("ibcd", "ibgd", "is-sgd", "is-sgd-async") else 1.0 / Lt


def _check_convex(problem, what: str) -> None:
    if not problem.convex:
        raise ValueError(f"{what} come from a theory for convex f; this problem is non-convex (there is no x*): "
                         "for IS-SGD use nonconvex_step and nonconvex_bound (the paper's Theorem 7)")


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
    - is-sgd-async (Theorem 9, asynchronous, delays at most M): :math:`\gamma_{paper} \le 1/(2L(q + 2/n))`,
      i.e. :math:`\gamma = q/(2L(q + 2/n)) = 1/(2 L_{\max}(1 + 2m/(\tau n)))`, also
      :func:`step_size`'s (the book has no sharper form).
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
    if method == "is-sgd-async":
        return q / (2.0 * L1 * (q + 2.0 / n))
    raise ValueError(f"paper_step covers 'ibcd', 'ibgd', 'isega', 'isaga-shared' and 'is-sgd-async' (Theorems 1, "
                     f"4, 3, 2 and 9), not {method!r}")


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


# ------------------------------------------------------------------ without convexity
def _q_t(problem, m, tau, t) -> tuple[int, int, float, int]:
    m, tau = _m_tau(problem, m, tau)
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
    m, tau, q, t = _q_t(problem, m, tau, t)
    n = problem.n
    t_min = n / q * (q + 2.0 * (1.0 - q) / n) ** 2
    if t < t_min:
        raise ValueError(f"t must be >= n (q + 2(1 - q)/n)^2 / q = {t_min:.4g} for the paper's Corollary 6 step "
                         f"(q = tau/m = {q:.4g}, n = {n}), got t = {t}")
    return math.sqrt(q * n) / (problem.L * math.sqrt(t))


def local_variance_bound(problem, batch: int | None = None) -> float:
    r"""A uniform bound :math:`\sigma^2 \ge \frac1n\sum_i\mathbb{E}\lVert g_i(x) - \nabla f_i(x)\rVert^2` for
    b-minibatch local gradients at every x (the paper's Assumption 3, averaged over workers).

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


def _start_gap(problem, x0) -> float:
    x0 = np.zeros(problem.d) if x0 is None else check_vector("x0", x0, problem.d, "the problem dimension d")
    return problem.f(x0) - problem.f_lower


def paper_nonconvex_bound(problem, m: int, tau: int, t: int, *, nu2: float | None = None, x0=None) -> float:
    r"""The paper's Corollary 6 bound on :math:`\mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2`, as it states it.

    With q = tau/m and the step of :func:`nonconvex_step`, :math:`\hat x_t` uniform over
    :math:`x^0, \dots, x^t`:

    .. math::

        \mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2 \le \frac{2}{\sqrt{tqn}}
        \Big((f(x^0) - f^\star)L + (1 - q)\nu^2\Big),

    with ``problem.f_lower`` for f* and ``nu2`` (default ``problem.nu2_bound``) for the
    dissimilarity.  The text of the corollary has no term in the local variance sigma^2 of its
    Assumption 3; the book's derivation (:func:`nonconvex_bound`) finds one, so this form is
    for exact local gradients (b = l).
    """
    m, tau, q, t = _q_t(problem, m, tau, t)
    nonconvex_step(problem, m, tau, t)  # the corollary's condition on t
    nu2 = problem.nu2_bound if nu2 is None else check_float("nu2", nu2, nonnegative=True)
    return 2.0 / math.sqrt(t * q * problem.n) * (_start_gap(problem, x0) * problem.L + (1.0 - q) * nu2)


def nonconvex_bound(problem, m: int, tau: int, t: int, *, step: float | None = None, nu2: float | None = None,
                    batch: int | None = None, x0=None) -> float:
    r"""The book's bound on :math:`\mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2` for IS-SGD on a smooth f.

    For a constant step :math:`\gamma \le 1/(L(1 + \omega/n))` and :math:`\hat x_t` uniform over
    :math:`x^0, \dots, x^t` (chapter 5, thm-is-sgd-nonconvex):

    .. math::

        \mathbb{E}\lVert\nabla f(\hat x_t)\rVert^2 \le \frac{2(f(x^0) - f^\star)}{\gamma(t+1)}
        + \frac{L\gamma}{n}\Big(\omega\nu^2 + \frac{m}{\tau}\sigma^2\Big),

    :math:`\omega = m/\tau - 1`, ``problem.f_lower`` for f*, ``nu2`` (default ``problem.nu2_bound``)
    and :math:`\sigma^2` = :func:`local_variance_bound` for b-minibatches (b = 1 by default, as in
    :func:`blockcd.run`).  ``step=None`` takes :func:`nonconvex_step`, at which the bound is at most
    :math:`\frac{1}{\sqrt{tqn}}(2(f(x^0) - f^\star)L + (1-q)\nu^2 + \sigma^2)`.  Raises
    ``ValueError`` for a step above :math:`1/(L(1 + \omega/n))`.
    """
    m, tau, _, t = _q_t(problem, m, tau, t)
    n, L, w = problem.n, problem.L, omega(m, tau)
    g = nonconvex_step(problem, m, tau, t) if step is None else check_float("step", step, positive=True)
    g_max = 1.0 / (L * (1.0 + w / n))
    if g > g_max * (1 + 1e-12):
        raise ValueError(f"step must be <= 1/(L (1 + omega/n)) = {g_max:.4g} for the bound, got {g:.4g}")
    nu2 = problem.nu2_bound if nu2 is None else check_float("nu2", nu2, nonnegative=True)
    s2 = local_variance_bound(problem, batch)
    return 2.0 * _start_gap(problem, x0) / (g * (t + 1)) + L * g / n * (w * nu2 + (m / tau) * s2)


def nonconvex_threshold(problem, m: int, step: float, base: float, *, nu2: float | None = None,
                        batch: int | None = None) -> float:
    r"""The tau past which sending more blocks gains at most a factor 2 in E||grad f(x-hat_t)||^2, at a fixed step.

    In :func:`nonconvex_bound` only the term :math:`\frac{L\gamma}{n}\omega(\nu^2 + \sigma^2)` depends
    on tau (besides the tau-free :math:`\frac{L\gamma}{n}\sigma^2`).  Compared with ``base``, the value
    at tau = m (the dense run's, measured or bounded), it is smaller once
    :math:`\omega \le \omega^\star = n\,\text{base}/(L\gamma(\nu^2 + \sigma^2))`, i.e. for

    .. math::

        \tau \ge \tau^\star = \frac{m}{1 + \omega^\star},

    the paper's observation (Corollary 6 ii) that past a threshold a larger tau does not help
    (chapter 5, "Without convexity").  ``nu2`` defaults to ``problem.nu2_bound``, sigma^2 is
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

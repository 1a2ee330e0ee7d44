"""The constants the theory is built from: the sparsifier's omega, coverage and index bits, the key
lemma's aggregation variance, IS-ASGD's strong growth rho and IS-SGD's noise at the optimum (each
method's expected smoothness L(tau) is its row in :mod:`blockcd.theory.rows`);
and the checks of m, tau and batch the other parts of the package share."""

from __future__ import annotations

import math

import numpy as np

from .. import registry
from .._validate import check_choice, check_int

METHODS = registry.METHODS
#: constants of the Lyapunov proofs (chapter 6); loose, see the package docstring
ISEGA_C = 6.0
#: IS-SAGA's constant is ISSAGA_C0 + ISSAGA_C * omega, 6 at tau = m, below 36 m/tau at every tau
ISSAGA_C0 = 6.0
ISSAGA_C = 36.0


method_name = registry.canonical


def m_tau(problem, m, tau) -> tuple[int, int]:
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


def local_L(problem, batch) -> float:
    b = 1 if batch is None else batch
    return float(problem.local_smoothness(b).max())


def check_rho0(problem) -> float:
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
    r"""Strong growth constant of the IS-ASGD estimator: the book's lemma lem-rho-batch (chapter 7).

    The paper's Lemma 1 states that the IASGD estimate satisfies strong growth, but its constants
    are not legible in the text the book works from; this is the constant the book derives and
    checks (chapter 7), not the paper's.

    .. math:: \rho(\tau) = 1 + \Big(\omega + \frac{m}{\tau}\,\bar\rho\Big)\frac{\rho_0}{n},
              \qquad \omega = \frac{m}{\tau} - 1,

    with rho0 the workers' strong growth constant (the paper's rho-tilde, ``problem.rho0``) and
    rho-bar the local variance constant of :func:`minibatch_growth` (0 for ``batch=None``, full
    local gradients: then rho(tau) = 1 + omega rho0 / n).  In the paper's fraction q = tau/m it
    reads 1 + rho0 ((1 + rho-bar)/q - 1)/n.
    """
    m, tau = m_tau(problem, m, tau)
    batch = _batch(problem, batch)
    if batch is None:
        if tau == m:  # omega = 0: the exact gradient, strong growth with rho = 1 on any problem
            return 1.0
        return 1.0 + omega(m, tau) * check_rho0(problem) / problem.n
    rb, _ = minibatch_growth(problem, batch)
    return 1.0 + (omega(m, tau) + (m / tau) * rb) * check_rho0(problem) / problem.n


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
    m, tau = m_tau(problem, m, tau)
    batch = _batch(problem, batch)
    check_rho0(problem)
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


def check_convex(problem, what: str) -> None:
    if not problem.convex:
        raise ValueError(f"{what} come from a theory for convex f; this problem is non-convex (there is no x*): "
                         "for IS-SGD use nonconvex_step and nonconvex_bound (the paper's Theorem 7)")


def check_shared(problem) -> None:
    if not problem.shared_data:
        raise ValueError("isaga-shared's theory (the paper's Theorem 2) is for shared data, every worker reading "
                         f"all N functions (split='identical' or 'shared'); got split = {problem.split!r}")


def local_variance_star(problem, batch: int) -> float:
    """sigma-bar^2 = (1/n) sum_i E||g_i(x*)||^2 for b-minibatch local estimators (chapter 5)."""
    return problem.minibatch_variance_star(batch)


def gradient_noise(problem, m: int, tau: int, *, batch: int | None = None) -> float:
    r"""IS-SGD's noise at the optimum, :math:`\sigma^2 = \mathbb{E}\lVert G(x^\star)\rVert^2
    = \frac1n\big(\frac{m}{\tau}\bar\sigma^2 - \sigma_\star^2\big)` (chapter 5, the composition lemma)."""
    m, tau = m_tau(problem, m, tau)
    b = 1 if batch is None else batch
    return ((m / tau) * local_variance_star(problem, b) - problem.sigma_star2) / problem.n

"""The inequalities of chapters 4-6 at random points, and the closed forms of blockcd.theory.

Expectations over the block samples (and minibatches) are computed *exactly*
by enumerating every tau-subset of blocks (and every b-subset of rows), or by
Monte-Carlo with the masks the runs use and an SE-based tolerance.
"""

import math
from itertools import combinations

import numpy as np
import pytest
from conftest import Z, data, mean_se

from blockcd import partition, problems, theory
from blockcd.blocks import BlockSampler


def subset_masks(d, m, tau):
    """Coordinate masks (C(m, tau), d) of every tau-subset of the m blocks, equally likely."""
    blocks = partition(d, m)
    masks = []
    for S in combinations(range(m), tau):
        bm = np.zeros(m, dtype=bool)
        bm[list(S)] = True
        masks.append(bm[blocks.block_of])
    return np.array(masks)


def sparsified_outcomes(v, m, tau):
    """Every equally likely value of C(v) = (m/tau) P_S v, shape (C(m, tau), d)."""
    return subset_masks(v.size, m, tau) * v * (m / tau)


def joint_moments(outcomes):
    """Exact E[S] and E||S||^2 of S = sum_i X_i, X_i independent, X_i uniform over outcomes[i] (rows).

    Enumerates the product space (prod_i C_i points), no independence formula used.
    """
    S = outcomes[0]
    for V in outcomes[1:]:
        S = (S[:, None, :] + V[None, :, :]).reshape(-1, S.shape[1])
    return S.mean(axis=0), float(np.mean(np.sum(S**2, axis=1)))


def bregman(p, x):
    """D(x) = f(x) - f(x*) (the linear term vanishes: grad f(x*) = 0)."""
    return p.f(x) - p.f_star


def random_points(p, k, seed):
    rng = np.random.default_rng(seed)
    return [p.x_star + rng.standard_normal(p.d) * 10.0 ** rng.uniform(-1, 1.5) for _ in range(k)]


@pytest.fixture(scope="module", params=["ridge", "logistic"])
def het3(request):
    """3 workers, d = 7 (m = 4 blocks of sizes 2, 2, 2, 1), heterogeneous (sorted split)."""
    A, b = data(20, 7, seed=51)
    A *= np.linspace(0.5, 2.0, 20)[:, None]
    if request.param == "ridge":
        return problems.ridge(A, b, n_workers=3, lam=0.05, split="sorted")
    return problems.logistic(A, (b > 0).astype(float), n_workers=3, lam=0.05, split="sorted")


# ------------------------------------------------------------ section 4: IBCD
@pytest.mark.parametrize("tau", [1, 2, 3, 4])
def test_ibcd_expected_smoothness_exact(het3, tau):
    p, m = het3, 4
    n = p.n
    Gs = p.local_grads_star
    assert np.allclose(Gs.sum(axis=0), 0, atol=1e-9)
    Lt = theory.expected_smoothness(p, "ibcd", m, tau)
    assert Lt == pytest.approx(p.L + theory.omega(m, tau) * p.L_max / n, rel=1e-15)
    # E||g(x*)||^2 = (omega / n) sigma*^2, exactly
    mean_star, second_star = joint_moments([sparsified_outcomes(Gs[i] / n, m, tau) for i in range(n)])
    assert np.allclose(mean_star, 0, atol=1e-9)
    assert second_star == pytest.approx(theory.omega(m, tau) / n * p.sigma_star2, rel=1e-9, abs=1e-15)
    for x in random_points(p, 8, seed=tau):
        # g(x) - g(x*) with the SAME samples: (1/n) sum_i C_i(grad f_i(x) - grad f_i(x*))
        Delta = p.local_grads(x) - Gs
        mean, second = joint_moments([sparsified_outcomes(Delta[i] / n, m, tau) for i in range(n)])
        assert np.allclose(mean, p.grad(x), rtol=1e-10, atol=1e-12)  # unbiased
        bound = 2 * Lt * bregman(p, x)
        assert second <= bound * (1 + 1e-10), (second, bound)
        # and the key lemma gives the exact value
        exact = p.grad(x) @ p.grad(x) + theory.aggregation_variance(Delta, m, tau)
        assert second == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("tau", [1, 3])
def test_ibcd_expected_smoothness_monte_carlo_with_the_run_masks(het, tau):
    # 4 workers, d = 8, m = 5 (blocks 2, 2, 2, 1, 1): too many joint outcomes to enumerate, so
    # Monte-Carlo over K masks from the BlockSampler a run uses
    p, m, K = het, 5, 4000
    blocks = partition(p.d, m)
    sampler = BlockSampler(p.n, m, tau, seed=9)
    coord = np.stack([blocks.expand(sampler.masks(k)) for k in range(K)])  # (K, n, d)
    Lt = theory.expected_smoothness(p, "ibcd", m, tau)
    for x in random_points(p, 4, seed=10 + tau):
        Delta = p.local_grads(x) - p.local_grads_star
        diff = (coord * Delta).sum(axis=1) * (m / tau) / p.n  # g(x) - g(x*) for each draw
        mean, se = mean_se(np.sum(diff**2, axis=1))
        # one-sided: a mean of K iid draws exceeds its expectation by 4.5 SE with probability < 4e-6
        assert mean - Z * se <= 2 * Lt * bregman(p, x)
        exact = p.grad(x) @ p.grad(x) + theory.aggregation_variance(Delta, m, tau)
        assert abs(mean - exact) <= Z * se


# ---------------------------------------------------------- section 5: IS-SGD
def minibatch_outcomes(p, A, t, i, x, b):
    """Every equally likely b-minibatch gradient of worker i at x (rows drawn without replacement)."""
    rows = p.order[p.offsets[i] : p.offsets[i + 1]]
    out = []
    for B in combinations(rows, b):
        B = list(B)
        out.append(A[B].T @ (A[B] @ x - t[B]) / b + p.lam * x)
    return np.array(out)


@pytest.fixture(scope="module")
def ridge4():
    """Ridge over 4 workers with 6, 6, 6, 5 rows (uneven), d = 7, heterogeneous."""
    A, b = data(23, 7, seed=61)
    A *= np.linspace(0.4, 2.0, 23)[:, None]
    return problems.ridge(A, b, n_workers=4, lam=0.05, split="sorted"), A, b


@pytest.mark.parametrize("b", [1, 2, 5])
@pytest.mark.parametrize("tau", [1, 2, 4])
def test_is_sgd_expected_smoothness_exact(ridge4, b, tau):
    p, A, t = ridge4
    m, n = 4, p.n
    Lloc = p.local_smoothness(b)
    Lt = theory.expected_smoothness(p, "is-sgd", m, tau, batch=b)
    assert Lt == pytest.approx(p.L + (m / tau) * Lloc.max() / n, rel=1e-15)
    xs = p.x_star
    star = [minibatch_outcomes(p, A, t, i, xs, b) for i in range(n)]
    Gs = p.local_grads_star

    # sigma-bar^2 = (1/n) sum_i E||g_i(x*)||^2, by enumeration of the minibatches
    sbar = np.mean([np.mean(np.sum(S**2, axis=1)) for S in star])
    assert theory.local_variance_star(p, b) == pytest.approx(sbar, rel=1e-9)

    def moments(vectors_per_worker):
        """Exact E and E||.||^2 of (1/n) sum_i C_i(v_i), v_i uniform over its rows, all independent.

        Workers are independent, so E||sum X_i||^2 = ||sum E X_i||^2 + sum Var X_i;
        each worker's law (minibatch x block subset) is enumerated exactly.
        """
        means, var = [], 0.0
        for V in vectors_per_worker:
            X = np.concatenate([sparsified_outcomes(v, m, tau) for v in V]) / n
            mu_i = X.mean(axis=0)
            means.append(mu_i)
            var += np.mean(np.sum(X**2, axis=1)) - mu_i @ mu_i
        mean = np.sum(means, axis=0)
        return mean, mean @ mean + var

    # sigma^2 = E||g(x*)||^2 = ((m/tau) sigma-bar^2 - sigma*^2) / n <= (m / (tau n)) sigma-bar^2
    mean_star, s2 = moments(star)
    assert np.allclose(mean_star, 0, atol=1e-9)
    assert s2 == pytest.approx(((m / tau) * sbar - p.sigma_star2) / n, rel=1e-9)
    assert s2 <= m / (tau * n) * sbar * (1 + 1e-12)

    for x in random_points(p, 5, seed=100 * b + tau):
        cur = [minibatch_outcomes(p, A, t, i, x, b) for i in range(n)]
        # the same minibatch and the same blocks at x and at x*: difference per outcome
        mean, second = moments([c - s for c, s in zip(cur, star)])
        assert np.allclose(mean, p.grad(x), rtol=1e-10, atol=1e-12)
        assert second <= 2 * Lt * bregman(p, x) * (1 + 1e-10)
        # the local ingredient: E||g_i(x) - g_i(x*)||^2 <= 2 L_i(b) D_i(x) for each worker
        G = p.local_grads(x)
        for i in range(n):
            rows = p.order[p.offsets[i] : p.offsets[i + 1]]

            def f_i(z, rows=rows):
                return 0.5 * np.mean((A[rows] @ z - t[rows]) ** 2) + 0.5 * p.lam * z @ z

            Di = f_i(x) - f_i(xs) - Gs[i] @ (x - xs)  # the local Bregman divergence D_i(x)
            assert Di >= -1e-12
            loc = np.mean(np.sum((cur[i] - star[i]) ** 2, axis=1))
            assert loc <= 2 * Lloc[i] * Di * (1 + 1e-10) + 1e-14
            assert np.allclose(cur[i].mean(axis=0), G[i], rtol=1e-10, atol=1e-12)


# ------------------------------------------------------ section 6: ISEGA shifts
@pytest.mark.parametrize("tau", [1, 2, 3])
def test_isega_one_step_inequalities_exact(het3, tau):
    p, m = het3, 4
    n, pr = p.n, tau / m
    w = theory.omega(m, tau)
    Gs = p.local_grads_star
    rng = np.random.default_rng(tau)
    for x in random_points(p, 6, seed=20 + tau):
        h = Gs + rng.standard_normal(Gs.shape) * rng.uniform(0.1, 3)  # arbitrary shifts
        H = np.mean(np.sum((h - Gs) ** 2, axis=1))
        D = bregman(p, x)
        G = p.local_grads(x)
        # g = hbar + (1/n) sum_i C_i(grad f_i(x) - h_i)
        mean, second = joint_moments(
            [h[i] / n + sparsified_outcomes(G[i] - h[i], m, tau) / n for i in range(n)])
        assert np.allclose(mean, p.grad(x), rtol=1e-10, atol=1e-12)
        assert second <= (2 * p.L * D + 4 * w * p.L_max / n * D + 2 * w / n * H) * (1 + 1e-10)
        # E H+ <= (1 - p) H + 2 p L_max D, where h_i+ = h_i + P_S (grad f_i(x) - h_i)
        masks = subset_masks(p.d, m, tau)
        EH = np.mean([np.mean(np.sum((h[i] + masks * (G[i] - h[i]) - Gs[i]) ** 2, axis=1))
                      for i in range(n)])
        assert EH <= ((1 - pr) * H + 2 * pr * p.L_max * D) * (1 + 1e-10)


# ------------------------------------------------------------- closed forms
def test_omega_coverage_index_bits():
    assert theory.omega(10, 10) == 0.0
    assert theory.omega(10, 1) == 9.0
    assert theory.omega(12, 5) == pytest.approx(12 / 5 - 1, rel=1e-15)
    assert theory.coverage(100, 10, 10) == pytest.approx(100 * (1 - 0.9**10), rel=1e-15)
    # at p = 1/n and large n, about 1 - 1/e = 63% of the blocks arrive
    assert theory.coverage(10000, 10, 1000) / 10000 == pytest.approx(1 - math.exp(-1), abs=1e-3)
    assert theory.coverage(8, 8, 3) == 8.0
    assert theory.index_bits(16, 3) == 12
    assert theory.index_bits(17, 3) == 15
    assert theory.index_bits(16, 16) == 0


def test_iteration_factor_knee_and_predicted_ratio(het):
    p, m = het, 8
    for tau in range(1, m + 1):
        f = theory.iteration_factor(m, tau, p.n, p.r)
        assert f == pytest.approx(1 + (m / tau - 1) * p.r / p.n, rel=1e-13)
        assert theory.predicted_ratio(p, "ibcd", m, tau) == pytest.approx(f, rel=1e-12)
    # at the knee the sparsification term equals the base term: factor exactly 2
    for (mm, n, r) in [(100, 10, 1.0), (64, 8, 3.5), (40, 10, 10.0)]:
        tk = theory.knee(mm, n, r)
        assert tk == pytest.approx(mm * r / (n + r))
        assert 1 + (mm / tk - 1) * r / n == pytest.approx(2.0, rel=1e-12)


def test_time_optimal_tau_minimises_total_time():
    L, L_max, n, m = 1.0, 3.0, 10, 200
    a, b = L - L_max / n, m * L_max / n
    taus = np.linspace(1, m, 200001)
    for c0, c1 in [(1.0, 0.01), (5.0, 1.0), (0.0, 1.0), (1e3, 1e-3)]:
        best = taus[np.argmin((a + b / taus) * (c0 + c1 * taus))]
        assert theory.time_optimal_tau(L, L_max, n, m, c0, c1) == pytest.approx(best, abs=2e-3 * m)
    # when L <= L_max / n the iteration count only falls with tau: send everything
    assert theory.time_optimal_tau(1.0, 20.0, 10, m, 1.0, 1.0) == m


def test_step_sizes_and_rates_follow_the_table(het, interp):
    p, m, tau = het, 8, 2
    w, n = theory.omega(m, tau), p.n
    assert theory.step_size(p, "ibcd", m, tau) == pytest.approx(1 / (2 * (p.L + w * p.L_max / n)))
    assert theory.step_size(p, "isega", m, tau) == pytest.approx(1 / (p.L + 6 * w * p.L_max / n))
    Lloc = p.local_smoothness(2).max()
    assert theory.step_size(p, "is-sgd", m, tau, batch=2) == pytest.approx(1 / (2 * (p.L + (m / tau) * Lloc / n)))
    # IS-SAGA: the theorem's (6 + 36 omega), which is 6 at tau = m (dense SAGA), not the corollary's 36 m/tau
    assert theory.step_size(p, "is-saga", m, tau, batch=2) == pytest.approx(1 / (p.L + (6 + 36 * w) * Lloc / n))
    assert theory.step_size(p, "is-saga", m, m, batch=2) == pytest.approx(1 / (p.L + 6 * Lloc / n))
    assert theory.step_size(p, "gd", m, m) == pytest.approx(1 / (2 * p.L))  # alias, tau = m
    g = theory.step_size(p, "isega", m, tau)
    assert theory.rate(p, "isega", m, tau) == pytest.approx(max(1 - g * p.mu, 1 - tau / (2 * m)))
    assert theory.rate(p, "ibcd", m, tau, step=0.1) == pytest.approx(1 - 0.1 * p.mu)
    # IS-ASGD: rho(tau) = 1 + omega rho0 / n, eta = 1 / (rho L); rho = 1 at tau = m on any problem
    q, mq = interp, 10
    assert theory.rho(q, mq, 2) == pytest.approx(1 + theory.omega(mq, 2) * q.rho0 / q.n)
    assert theory.step_size(q, "is-asgd", mq, 2) == pytest.approx(1 / (theory.rho(q, mq, 2) * q.L))
    assert theory.rho(p, m, m) == 1.0
    assert theory.predicted_ratio(q, "is-asgd", mq, 2) == pytest.approx(theory.rho(q, mq, 2))
    eta = theory.step_size(q, "is-asgd", mq, 2)
    assert theory.rate(q, "is-asgd", mq, 2) == pytest.approx(1 - math.sqrt(q.mu * eta * eta * q.L))


def test_neighbourhood(het, interp):
    p, m = het, 8
    for tau in (1, 4, 8):
        g = theory.step_size(p, "ibcd", m, tau)
        expect = 2 * g * theory.omega(m, tau) / p.n * p.sigma_star2 / p.mu
        assert theory.neighbourhood(p, "ibcd", m, tau) == pytest.approx(expect, rel=1e-12)
    assert theory.neighbourhood(p, "ibcd", m, m) == 0.0
    assert theory.neighbourhood(p, "isega", m, 1) == 0.0
    assert theory.neighbourhood(interp, "ibcd", 10, 1) <= 1e-25
    # predicted_iterations is infinite when the accuracy asked for lies inside the neighbourhood
    assert theory.predicted_iterations(p, "ibcd", m, 1, 1e-12) == math.inf
    assert math.isfinite(theory.predicted_iterations(p, "isega", m, 1, 1e-12))


def test_ibgd_has_ibcd_constants_and_the_paper_step_is_never_larger(het, interp):
    """IBGD's theory (the key lemma with omega = m/tau - 1) is IBCD's; Theorems 1 and 4 of the paper, in the
    book's units, give gamma = 1/(2 L_max (1 + 2 omega/n)), at most the book's 1/(2 (L + omega L_max/n))."""
    for p in (het, interp):
        for m, tau in ((8, 2), (5, 1), (5, 5)):
            w, n = theory.omega(m, tau), p.n
            assert theory.expected_smoothness(p, "ibgd", m, tau) == theory.expected_smoothness(p, "ibcd", m, tau)
            assert theory.step_size(p, "ibgd", m, tau) == theory.step_size(p, "ibcd", m, tau)
            assert theory.neighbourhood(p, "ibgd", m, tau) == theory.neighbourhood(p, "ibcd", m, tau)
            paper = theory.paper_step(p, "ibgd", m, tau)
            assert paper == theory.paper_step(p, "ibcd", m, tau)
            assert paper == pytest.approx(1 / (2 * p.L_max * (1 + 2 * w / n)), rel=1e-14)
            assert paper <= theory.step_size(p, "ibgd", m, tau) * (1 + 1e-15)
    with pytest.raises(ValueError, match="sampling must be 'independent'"):
        theory.step_size(het, "ibgd", 8, 2, sampling="shared")
    with pytest.raises(ValueError, match="paper_step covers"):
        theory.paper_step(het, "is-sgd", 8, 2)


def test_isaga_local_step_is_theorem_5s_and_corollary_4s(interp, het):
    """In the book's units the step is q / (L_s (4/n + q)): at tau = m/n the paper's n/(5 L_s) times q = 1/n;
    the rate is 1 - q min(gamma_p mu, 1/(3 l)) (c = 3/n^2 at this step)."""
    for p in (interp, het):
        n, Ls, lm = p.n, p.L_sample.max(), p.l_max
        m = 2 * n
        tau = m // n
        g = theory.step_size(p, "isaga-local", m, tau)
        assert g == pytest.approx((tau / m) / (Ls * (4 / n + tau / m)), rel=1e-14)
        assert g / (tau / m) == pytest.approx(n / (5 * Ls), rel=1e-14)  # Corollary 4's step
        c, gp, theta = theory.isaga_local_constants(p, m, tau, g)
        assert c == pytest.approx(3 / n**2, rel=1e-12)
        assert theta == pytest.approx((tau / m) * min(gp * p.mu, 1 / (3 * lm)), rel=1e-12)
        assert theory.rate(p, "isaga-local", m, tau) == pytest.approx(1 - theta, rel=1e-14)
        # at the largest step Theorem 5 allows, 1/(L_s (3/n + q)), the memory term vanishes: no rate
        # (0 up to the round-off of 1 - (3/n + q) gamma L_s / q, a few units of 2^-52 times theta's scale)
        edge = theory.isaga_local_constants(p, m, tau, (tau / m) / (Ls * (3 / n + tau / m)))[2]
        assert abs(edge) <= 1e-14 * (tau / m)
    assert theory.neighbourhood(interp, "isaga-local", 10, 1) == 0.0
    assert theory.neighbourhood(het, "isaga-local", 8, 1) == math.inf
    with pytest.raises(ValueError, match="covers batch = 1"):
        theory.step_size(het, "isaga-local", 8, 2, batch=2)
    with pytest.raises(ValueError, match="sampling must be 'independent'"):
        theory.step_size(het, "isaga-local", 8, 2, sampling="shared")


def test_isaga_shared_step_is_theorem_2s_and_corollary_2s(het):
    """Shared data: the step q / (L_s (4/n + q)) is the paper's n/(5 L_s) times q = 1/n at tau = m/n; Theorem 2's
    constants there are Corollary 2's, c = 3/n^2 and theta = min(mu/(5 L_s), 1/(3N)); no interpolation is needed
    (the neighbourhood is 0 on heterogeneous functions), and a problem whose workers hold their own rows is refused."""
    p = problems.synthetic(5, 8, 10, heterogeneity=1.0, cond=5, split="shared", seed=2)
    n, N, Ls = p.n, p.N, p.L_sample.max()
    assert N == 40 and Ls == pytest.approx(float(np.max(np.sum(p.worker(0).A ** 2, axis=1))), rel=1e-12)
    m = 2 * n
    tau = m // n
    g = theory.step_size(p, "isaga-shared", m, tau)
    # the same step by two formulas: equal to round-off (a few ulps; the order of operations differs)
    assert g == pytest.approx(theory.paper_step(p, "isaga-shared", m, tau), rel=1e-15)
    assert g / (tau / m) == pytest.approx(n / (5 * Ls), rel=1e-14)  # Corollary 2's step
    c, gp, theta = theory.isaga_shared_constants(p, m, tau, g)
    assert gp == pytest.approx(n / (5 * Ls), rel=1e-14)  # the paper's step gamma_p = gamma / q
    assert c == pytest.approx(3 / n**2, rel=1e-12)
    assert theta == pytest.approx(min(p.mu / (5 * Ls), 1 / (3 * N)), rel=1e-12)
    assert theory.rate(p, "isaga-shared", m, tau) == pytest.approx(1 - theta, rel=1e-14)
    # at the largest step Theorem 2 allows, 1/(L_s (3/n + q)), the memory term vanishes: no rate (1 - 2/(n^2 c)
    # is 0 up to the rounding of c, a few 1e-16)
    assert theory.isaga_shared_constants(p, m, tau, (tau / m) / (Ls * (3 / n + tau / m)))[2] <= 1e-15 / N
    assert theory.neighbourhood(p, "isaga-shared", m, tau) == 0.0
    K = theory.predicted_iterations(p, "isaga-shared", m, tau, 1e-6)
    assert math.isfinite(K) and K == theory.paper_iterations(p, "isaga-shared", m, tau, 1e-6)
    # K(tau)/K(m) from the two-term rate
    assert theory.predicted_ratio(p, "isaga-shared", m, tau) == pytest.approx(
        math.log(theory.rate(p, "isaga-shared", m, m)) / math.log(1 - theta), rel=1e-12)
    for call in (lambda: theory.step_size(het, "isaga-shared", 8, 2),
                 lambda: theory.paper_step(het, "isaga-shared", 8, 2),
                 lambda: theory.isaga_shared_constants(het, 8, 2, 0.01)):
        with pytest.raises(ValueError, match="is for shared data"):
            call()
    with pytest.raises(ValueError, match="sampling must be 'independent'"):
        theory.step_size(p, "isaga-shared", 8, 2, sampling="shared")


def test_decreasing_schedule_constants_and_the_papers_in_book_units():
    p = problems.synthetic(10, 20, 40, heterogeneity=1.0, seed=0)
    m, tau = 20, 2
    a, c = theory.decreasing_schedule(p, m, tau)
    assert a == pytest.approx(4 * theory.expected_smoothness(p, "is-sgd", m, tau)) and c == pytest.approx(p.mu / 2)
    ap, cp = theory.paper_decreasing_schedule(p, m, tau)
    q, w = tau / m, theory.omega(m, tau)
    # the paper's 1/(a_p + c_p t) times q: a_p/q = 2 L (1 + 2 omega/n), c_p/q = mu/4
    assert ap == pytest.approx(2 * (q + 2 * (1 - q) / p.n) * p.L_max / q)
    assert ap == pytest.approx(2 * p.L_max * (1 + 2 * w / p.n)) and cp == pytest.approx(p.mu / 4)


def test_decreasing_bound_tends_to_its_leading_term():
    p = problems.synthetic(10, 20, 40, heterogeneity=1.0, seed=0)
    t = 1e9
    lead = 8 * theory.gradient_noise(p, 20, 2) / (p.mu * t)
    assert theory.decreasing_bound(p, 20, 2, t) == pytest.approx(lead, rel=1e-4)
    B = theory.decreasing_bound(p, 20, 2, np.arange(0, 100))
    assert np.all(np.diff(B) < 0)
    with pytest.raises(ValueError, match="t must hold"):
        theory.decreasing_bound(p, 20, 2, -1)

"""IS-ASGD with stochastic local gradients (chapter 7): the constant of the book's lem-rho-batch,
Theorem 8's rate, saturation in tau.

The paper's Algorithm 7 lets worker i send blocks of a b-minibatch gradient of its own rows.  Checked here:
the strong growth inequality of Lemma 1 by Monte Carlo (tolerances from the estimator's standard error), the
convergence at the theory's parameters, the tau past which more blocks bring little (measured against
predicted), the engines' agreement with batch > 1, and the rejection of bad input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import blockcd
from blockcd import experiments, problems, reference, theory

M = 20


@pytest.fixture(scope="module")
def P():
    """n = 100 workers of 100 interpolating rows in d = 20 (kappa = 10): n large against rho0 rho-bar."""
    return problems.synthetic(100, 100, 20, interpolating=True, cond=10, seed=0, split="iid")


@pytest.fixture(scope="module")
def small():
    """A small interpolating problem with uneven rows per worker (l_i = 16 or 17) and d = 12."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((99, 12)) * np.geomspace(1, 0.3, 12)
    return problems.ridge(A, A @ rng.standard_normal(12), n_workers=6, split="iid", seed=1)


def _second_moment(p, x, m, tau, batch):
    """E||q(x)||^2 from the key lemma and the variance of a b-minibatch drawn without replacement (exact)."""
    H, V = p.local_moments
    e, g = x - p.x_star, p.grad(x)
    l = p.sizes.astype(float)
    c = np.zeros(p.n) if batch is None else (l - batch) / (batch * (l - 1))
    HE = np.einsum("ijk,k->ij", H, e)
    spread = (m / tau - 1) * np.sum(HE**2) + (m / tau) * np.sum(c * np.einsum("j,ijk,k->i", e, V, e))
    return float(g @ g + spread / p.n**2), float(g @ g)


# ---------------------------------------------------------------- constants
def test_rho_without_batch_is_the_full_gradient_constant(P):
    for tau in (1, 3, M // 2):
        assert theory.rho(P, M, tau) == pytest.approx(1 + (M / tau - 1) * P.rho0 / P.n, rel=1e-14)
        assert theory.rho(P, M, tau, batch=None) == theory.rho(P, M, tau)
    assert theory.rho(P, M, M) == 1.0
    assert theory.minibatch_growth(P, None) == (0.0, 0.0)
    # b = l_i: every row, no variance; rho-bar = 0 and lem-rho-batch's constant is the full gradients'
    assert np.all(P.minibatch_growth(100) == 0.0)
    assert theory.rho(P, M, 2, batch=100) == pytest.approx(theory.rho(P, M, 2), rel=1e-14)


def test_lemma_1_constant_in_book_units(P):
    rb, s2 = theory.minibatch_growth(P, 10)
    assert s2 == 0.0 and rb > 0
    for tau in (1, 4, M):
        w = M / tau - 1
        assert theory.rho(P, M, tau, batch=10) == pytest.approx(1 + (w + (M / tau) * rb) * P.rho0 / P.n, rel=1e-14)
        # the paper's fraction q = tau/m: 1 + rho-tilde ((1 + rho-bar)/q - 1)/n
        q = tau / M
        assert theory.rho(P, M, tau, batch=10) == pytest.approx(1 + P.rho0 * ((1 + rb) / q - 1) / P.n, rel=1e-12)


def test_rho_bar_is_attained_per_worker(small):
    """rho-bar_i is the smallest constant: attained at the top generalised eigenvector, never exceeded."""
    b = 4
    H, V = small.local_moments
    rb = small.minibatch_growth(b)
    rng = np.random.default_rng(0)
    for i in (0, 5):
        l = small.sizes[i]
        c = (l - b) / (b * (l - 1))
        ratios = [c * (e @ V[i] @ e) / np.sum((H[i] @ e) ** 2) for e in rng.standard_normal((500, 12))]
        assert max(ratios) <= rb[i] * (1 + 1e-12)
        w, U = np.linalg.eigh(H[i])
        Bm = U / w
        top = np.linalg.eigh(Bm.T @ V[i] @ Bm)[1][:, -1]
        e = Bm @ top
        assert c * (e @ V[i] @ e) / np.sum((H[i] @ e) ** 2) == pytest.approx(rb[i], rel=1e-9)


def test_shared_sampling_with_minibatches(P):
    """One mask for all workers: E||C(gbar)||^2 = (m/tau) E||gbar||^2, so rho = (m/tau)(1 + rho-bar rho0/n)."""
    rb, _ = theory.minibatch_growth(P, 5)
    got = theory.expected_smoothness(P, "is-asgd", M, 4, batch=5, sampling="shared")
    assert got == pytest.approx((M / 4) * (1 + rb * P.rho0 / P.n) * P.L, rel=1e-14)
    assert theory.expected_smoothness(P, "is-asgd", M, 4, sampling="shared") == (M / 4) * P.L


def test_exact_constant_is_below_lemma_1_and_equal_without_batch(P):
    for tau in (1, 5, M):
        assert theory.strong_growth_exact(P, M, tau) == pytest.approx(theory.rho(P, M, tau), rel=1e-10)
        for b in (1, 25):
            assert theory.strong_growth_exact(P, M, tau, batch=b) <= theory.rho(P, M, tau, batch=b)
    r, e = theory.strong_growth_exact(P, M, 2, batch=5, with_direction=True)
    mom, g2 = _second_moment(P, P.x_star + 3.0 * e, M, 2, 5)
    assert mom / g2 == pytest.approx(r, rel=1e-9)                     # attained in its direction


@pytest.mark.parametrize("tau,batch", [(1, 5), (4, 25), (M, 1)])
def test_lemma_1_strong_growth_by_monte_carlo(P, tau, batch):
    """E||q||^2 <= rho ||grad f||^2 at random points and at the worst direction, q drawn by the rule itself.

    The Monte-Carlo mean of 1500 draws agrees with the exact second moment within 4 standard errors
    (a false alarm has probability about 6e-5 per point), and the exact moment never exceeds
    rho ||grad f||^2 with lem-rho-batch's rho.
    """
    rng = np.random.default_rng(11)
    r_exact, e_top = theory.strong_growth_exact(P, M, tau, batch=batch, with_direction=True)
    points = [P.x_star + z for z in rng.standard_normal((2, P.d))] + [P.x_star + 2.0 * e_top]
    for j, x in enumerate(points):
        mc, se = experiments.growth_mc(P, x, M, tau, batch=batch, draws=1500, seed=j)
        exact, g2 = _second_moment(P, x, M, tau, batch)
        assert abs(mc - exact) <= 4 * se, (mc, exact, se)
        assert exact <= r_exact * g2 * (1 + 1e-9) <= theory.rho(P, M, tau, batch=batch) * g2 * (1 + 1e-9)
        assert mc <= theory.rho(P, M, tau, batch=batch) * g2 + 4 * se


def test_saturation_thresholds(P):
    b = 25
    rb, _ = theory.minibatch_growth(P, b)
    for excess in (0.1, 1.0):
        t = theory.asgd_saturation(P, M, batch=b, excess=excess)
        assert 0 < t <= M
        # at that tau (real, through the formula of rho) K(tau)/K(m) = rho(tau)/rho(m) = 1 + excess
        w = M / t - 1
        rho_t = 1 + (w + (M / t) * rb) * P.rho0 / P.n
        assert rho_t / theory.rho(P, M, M, batch=b) == pytest.approx(1 + excess, rel=1e-12)
    assert theory.paper_saturation(P, M, batch=b) == pytest.approx(M * P.rho0 * rb / P.n, rel=1e-14)
    assert theory.paper_saturation(P, M, batch=None) == 0.0


# ---------------------------------------------------------------- runs
def test_converges_at_the_theory_parameters_with_minibatches(P):
    """Theorem 8 with lem-rho-batch's rho: after the predicted iterations E||w - x*||^2 <= eps ||x0 - x*||^2.

    Measured: the mean over 4 seeds; the bound holds in expectation, and the runs get there in about half
    the predicted count (f - f* >= mu/2 ||w - x*||^2 loses a factor of about 2 on a quadratic), so the mean
    sits far below eps; with rho-bar left out (rho of full gradients) the step is too long and b = 1 diverges.
    """
    eps, b, tau = 1e-6, 1, 2
    K = int(theory.predicted_iterations(P, "is-asgd", M, tau, eps, batch=b))
    final = [blockcd.run(P, "is-asgd", m=M, tau=tau, iters=K, seed=s, batch=b).dist2 for s in range(4)]
    assert np.mean([d[-1] / d[0] for d in final]) <= eps
    with pytest.raises(blockcd.DivergenceError):
        blockcd.run(P, "is-asgd", m=M, tau=1, iters=3000, seed=0, batch=b, step=theory.step_size(P, "is-asgd", M, 1))


def test_tau_saturation_measured_against_predicted(P):
    """The tau where K(tau)/K(m) falls to 1.1 and to 2, read off the measured counts, within 15% of predicted.

    K(tau) is the mean of 4 seeds at the theory's parameters, tau = 1..m; the crossing is interpolated
    linearly in m/tau.  15% is the book's tolerance for ratios of iteration counts (chapter 9 of THEORY);
    the seeds' standard error of each ratio is below 5% here.
    """
    b, eps, taus = 25, 1e-8, list(range(1, M + 1))
    K = experiments.iterations_to(P, "is-asgd", M, taus, eps, seeds=(0, 1, 2, 3), batch=b).mean(axis=1)
    R = K / K[-1]
    pred = np.array([theory.rho(P, M, t, batch=b) for t in taus]) / theory.rho(P, M, M, batch=b)
    assert np.max(np.abs(R / pred - 1)) < 0.15
    for level in (1.1, 2.0):
        measured = experiments.crossing(taus, R, level)
        predicted = theory.asgd_saturation(P, M, batch=b, excess=level - 1)
        assert abs(measured / predicted - 1) < 0.15, (level, measured, predicted)


def test_reference_equals_simulator_with_minibatches(small):
    step = 0.5 * theory.step_size(small, "is-asgd", 12, 3, batch=4)
    for tau, sampling in ((3, "independent"), (12, "independent"), (2, "shared")):
        diff = reference.difference(small, "is-asgd", m=12, tau=tau, iters=40, seed=5, batch=4, step=step,
                                    sampling=sampling)
        assert diff <= 1e-12


def test_batch_changes_the_run_and_is_recorded(small):
    full = blockcd.run(small, "is-asgd", m=12, tau=3, iters=30, seed=2)
    mb = blockcd.run(small, "is-asgd", m=12, tau=3, iters=30, seed=2, batch=4, step=full.step)
    assert full.batch is None and mb.batch == 4
    assert not np.allclose(full.dist2, mb.dist2)
    again = blockcd.run(small, "is-asgd", m=12, tau=3, iters=30, seed=2, batch=4, step=full.step)
    assert np.array_equal(mb.dist2, again.dist2) and np.array_equal(mb.x, again.x)   # bit for bit


# ---------------------------------------------------------------- bad input
def test_bad_batch_is_rejected(small):
    with pytest.raises(ValueError, match=r"^batch must be an integer in \[1, 16\], got 0"):
        blockcd.run(small, "is-asgd", m=12, tau=3, iters=3, batch=0)
    with pytest.raises(ValueError, match=r"^batch must be an integer in \[1, 16\], got 17"):
        blockcd.run(small, "is-asgd", m=12, tau=3, iters=3, batch=17)
    with pytest.raises(TypeError, match=r"^batch must be an integer, got float 2.5"):
        blockcd.run(small, "is-asgd", m=12, tau=3, iters=3, batch=2.5)
    with pytest.raises(ValueError, match=r"batch must be an integer in \[1, 16\]"):
        theory.rho(small, 12, 3, batch=99)


def test_minibatches_without_row_interpolation_are_rejected():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((60, 5))
    noisy = problems.ridge(A, A @ rng.standard_normal(5) + 0.1 * rng.standard_normal(60), n_workers=3)
    logit = problems.logistic(A, np.sign(A[:, 0]), n_workers=3, lam=0.1)
    for p in (noisy, logit):
        with pytest.raises(ValueError, match=r"IS-ASGD with batch = 2 needs minibatch gradients without variance"):
            theory.minibatch_growth(p, 2)
        with pytest.raises(ValueError, match=r"batch = 2 needs minibatch gradients|needs interpolation"):
            blockcd.run(p, "is-asgd", m=5, tau=1, iters=3, batch=2)
    assert np.all(np.isinf(noisy.minibatch_growth(2)))
    # a given step still runs (the rule does not need the theory): eta <= 1/L
    h = blockcd.run(noisy, "is-asgd", m=5, tau=1, iters=3, batch=2, step=0.5 / noisy.L)
    assert h.batch == 2 and np.all(np.isfinite(h.dist2))
    with pytest.raises(ValueError, match=r"local_moments are those of least squares"):
        _ = logit.local_moments


def test_bad_arguments_of_the_helpers(small):
    with pytest.raises(ValueError, match=r"^every rho of the grid must be >= 1"):
        experiments.rho_grid(small, 12, 3, 1e-3, [0.5, 2])
    with pytest.raises(ValueError, match=r"^x must have shape \(d,\) = \(12,\)"):
        experiments.growth_mc(small, np.zeros(3), 12, 3)
    with pytest.raises(ValueError, match=r"^draws must be an integer in \[2, inf\]"):
        experiments.growth_mc(small, np.zeros(12), 12, 3, draws=1)
    with pytest.raises(ValueError, match=r"^excess must be > 0"):
        theory.asgd_saturation(small, 12, batch=2, excess=0)
    with pytest.raises(ValueError, match=r"^m must be an integer in \[1, 12\]"):
        theory.paper_saturation(small, 13, batch=2)
    with pytest.raises(ValueError, match=r"^level must be > 1"):
        experiments.crossing([1, 2], [2.0, 1.0], 1.0)


def test_grid_over_rho_counts_iterations_in_proportion_to_rho(P):
    """Above the exact strong growth constant Theorem 8's rate 1 - 1/(rho sqrt(kappa)) sets the count:
    K(rho) / K(rho') = rho / rho' within 15%."""
    tau, b = 1, 25
    r = theory.rho(P, M, tau, batch=b)
    assert theory.strong_growth_exact(P, M, tau, batch=b) < r / 1.5
    K = experiments.rho_grid(P, M, tau, 1e-8, [r / 1.5, r], batch=b, seeds=(0, 1)).mean(axis=1)
    assert math.isfinite(K[0]) and abs(K[0] / K[1] * 1.5 - 1) < 0.15

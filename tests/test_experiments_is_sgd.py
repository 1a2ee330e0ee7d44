"""The chapter 5 helpers of blockcd.experiments: budgets, floors, stationarity, the composition check."""

import numpy as np
import pytest

import blockcd
from blockcd import experiments, problems, theory


@pytest.fixture(scope="module")
def small():
    return problems.synthetic(4, 10, 8, cond=3, noise=0.01, seed=0)


def test_mean_iterations_is_the_mean_count_under_the_budget(small):
    eps, m = 1e-3, 8
    got = experiments.mean_iterations(small, "is-sgd", m, [2, 8], eps, seeds=(0, 1), batch=5, budget=0.6)
    for a, tau in enumerate((2, 8)):
        cap = int(0.6 * theory.predicted_iterations(small, "is-sgd", m, tau, eps, batch=5))
        want = np.mean(experiments.iterations_to(small, "is-sgd", m, [tau], eps, seeds=(0, 1), batch=5,
                                                 iters_max=cap))
        assert got[a] == want


def test_mean_iterations_is_nan_when_the_budget_is_too_small(small):
    got = experiments.mean_iterations(small, "is-sgd", 8, [1], 1e-3, batch=5, budget=1e-3)
    assert np.isnan(got[0])
    with pytest.raises(ValueError, match="neighbourhood"):                 # eps below the floor
        experiments.mean_iterations(small, "is-sgd", 8, [1], 1e-12, batch=1)


def test_mean_iterations_rejects_a_nonpositive_budget(small):
    with pytest.raises(ValueError, match="budget"):
        experiments.mean_iterations(small, "ibcd", 8, [1], 1e-3, budget=0)


def test_stationary_floor_averages_the_window_and_lies_below_the_theorem(small):
    m, tau = 8, 2
    gamma = theory.step_size(small, "is-sgd", m, tau, batch=1)
    b, w = int(1 / (gamma * small.mu)), int(3 / (gamma * small.mu))
    want = np.mean([blockcd.run(small, "is-sgd", m=m, tau=tau, batch=1, seed=s, x0=small.x_star,
                                iters=b + w).dist2[b:].mean() for s in (0, 1)])
    got = experiments.stationary_floor(small, "is-sgd", m, tau, batch=1, seeds=(0, 1))
    assert got == pytest.approx(want, rel=1e-12)
    assert 0 < got <= theory.neighbourhood(small, "is-sgd", m, tau, batch=1)   # the theorem's floor is a bound


def test_stationary_floor_validates(small):
    with pytest.raises(ValueError, match="window"):
        experiments.stationary_floor(small, "is-sgd", 8, 2, batch=1, window=-1)
    with pytest.raises(ValueError, match="seeds"):
        experiments.stationary_floor(small, "is-sgd", 8, 2, batch=1, seeds=())


def test_stationarity_matches_the_runs_and_falls_with_tau():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((200, 6))
    y = np.sign(A @ rng.standard_normal(6))
    p = problems.nonconvex(A, y, n_workers=4, w=0.5, split="sorted", seed=0)
    M, S, nu2, steps = experiments.stationarity(p, 6, [1, 6], 50, batch=50, seeds=(0, 1, 2))
    h = [blockcd.run(p, "is-sgd", m=6, tau=1, batch=50, iters=50, seed=s) for s in (0, 1, 2)]
    assert M[0] == pytest.approx(np.mean([x.grad2.mean() for x in h]), rel=1e-12)
    assert steps[0] == h[0].step and np.all(S >= 0) and np.all(nu2 <= p.nu2_bound)
    assert M[1] < M[0]                       # at the paper's step, sending every block helps
    with pytest.raises(ValueError, match="two seeds"):
        experiments.stationarity(p, 6, [1], 10, seeds=(0,))


def test_composition_monte_carlo_agrees_with_the_identity(small):
    # seeded; the mean of 20,000 independent rounds is within 4 standard errors of the exact value
    # (a false alarm has probability below 1e-4)
    m, tau = 8, 2
    x = small.x_star + np.random.default_rng(1).standard_normal(small.d) / np.sqrt(small.d)
    mc, se, mc0, se0 = experiments.composition_mc(small, x, m, tau, trials=20_000, seed=3)
    exact = experiments.composition_identity(small, x, m, tau)
    assert abs(mc - exact) <= 4 * se
    assert abs(mc0 - theory.gradient_noise(small, m, tau, batch=1)) <= 4 * se0
    # and the identity lies below the lemma's bound 2 L(tau) D(x)
    assert exact <= 2 * theory.expected_smoothness(small, "is-sgd", m, tau, batch=1) * (small.f(x) - small.f_star)


def test_composition_identity_at_tau_m_without_sparsification_is_the_minibatch_variance(small):
    # tau = m: G = mean of the g_i, so E||G(x) - G(x*)||^2 = ||grad f||^2 + (1/n^2) sum Var u_i >= ||grad f||^2
    x = small.x_star + 0.1
    g = small.grad(x)
    assert experiments.composition_identity(small, x, 8, 8) >= g @ g
    with pytest.raises(ValueError, match="tau"):
        experiments.composition_identity(small, x, 8, 9)


def test_rho_search_puts_the_theory_last_and_its_count_no_worse_than_the_grid_best():
    p = problems.synthetic(10, 20, 8, interpolating=True, cond=5, seed=0)
    rhos, K, r_th, k_th = experiments.rho_search(p, 8, 1, 1e-6, [1, 2, 4, 1000], seeds=(0,))
    assert rhos[-1] == r_th == theory.rho(p, 8, 1) and np.all(rhos[:-1] < r_th) and 1000 not in rhos
    assert K[-1] == k_th                               # the theory's rho, run again through the grid
    assert np.min(K) <= k_th and K.shape == rhos.shape
    with pytest.raises(ValueError, match="rho"):
        experiments.rho_search(p, 8, 1, 1e-6, [0.5])    # rho < 1: a step above 1/L

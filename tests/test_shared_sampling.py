"""The theory's step for shared block choices (one mask for all workers).

With a shared tau-nice mask the key lemma gives E||G - gbar||^2 = omega ||gbar||^2,
so IBCD's expected smoothness is (m/tau) L instead of L + omega L_max / n, and the
m/n rule becomes K(tau)/K(m) = m/tau: no 1/n.
"""

import numpy as np
import pytest

import blockcd
from blockcd import problems, theory


@pytest.fixture(scope="module")
def prob():
    return problems.synthetic(10, 30, 40, interpolating=True, cond=10, seed=3)


def test_shared_constants(prob):
    m, tau, L = 40, 4, prob.L
    assert theory.expected_smoothness(prob, "ibcd", m, tau, sampling="shared") == pytest.approx(10 * L)
    assert theory.step_size(prob, "ibcd", m, tau, sampling="shared") == pytest.approx(1 / (20 * L))
    assert theory.expected_smoothness(prob, "is-asgd", m, tau, sampling="shared") == pytest.approx(10 * L)
    # tau = m: both samplings are the dense method, same constant
    for meth in ("ibcd", "isega", "is-asgd"):
        assert theory.step_size(prob, meth, m, m, sampling="shared") == pytest.approx(
            theory.step_size(prob, meth, m, m))
    with pytest.raises(ValueError, match="sampling"):
        theory.step_size(prob, "ibcd", m, tau, sampling="mixed")


def test_run_uses_the_shared_step(prob):
    h = blockcd.run(prob, "ibcd", m=40, tau=4, iters=5, sampling="shared")
    assert h.step == theory.step_size(prob, "ibcd", 40, 4, sampling="shared")


def test_shared_expected_smoothness_is_exact(prob):
    # E||G(x) - G(x*)||^2 = (m/tau) ||grad f(x) - grad f(x*)||^2 for a shared mask, exactly:
    # enumerate all C(4, 2) masks of m = 4 blocks
    from itertools import combinations

    m, tau = 4, 2
    rng = np.random.default_rng(0)
    x = rng.standard_normal(prob.d)
    D = prob.local_grads(x) - prob.local_grads(prob.x_star)
    blocks = blockcd.partition(prob.d, m)
    vals = []
    for S in combinations(range(m), tau):
        mask = np.isin(blocks.block_of, S)
        vals.append(np.sum(((m / tau) * D.mean(axis=0) * mask) ** 2))
    gdiff = prob.grad(x) - prob.grad(prob.x_star)
    assert np.mean(vals) == pytest.approx((m / tau) * gdiff @ gdiff, rel=1e-12)
    Dx = prob.f(x) - prob.f_star
    assert np.mean(vals) <= 2 * theory.expected_smoothness(prob, "ibcd", m, tau, sampling="shared") * Dx


def test_shared_iteration_ratio_matches_theory(prob):
    # K_shared(tau)/K_indep(tau) against L_shared(tau)/L_indep(tau); the m/n rule's 15% (chapter 8, lemma lem-ratios)
    m, tau, eps = 40, 4, 1e-6
    ks = [blockcd.run(prob, "ibcd", m=m, tau=tau, iters=4000, seed=s, sampling="shared").iters_to(eps)
          for s in range(3)]
    ki = [blockcd.run(prob, "ibcd", m=m, tau=tau, iters=4000, seed=s).iters_to(eps) for s in range(3)]
    measured = np.mean(ks) / np.mean(ki)
    predicted = (theory.expected_smoothness(prob, "ibcd", m, tau, sampling="shared")
                 / theory.expected_smoothness(prob, "ibcd", m, tau))
    print(f"shared/independent iterations: measured {measured:.3f}, predicted {predicted:.3f}")
    assert abs(measured / predicted - 1) < 0.15

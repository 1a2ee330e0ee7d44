"""The measurements chapters 3 and 4 take from blockcd.experiments: coverage, expected-smoothness
ratios and the m/n-rule sweep, each against its formula, plus argument validation."""

import math

import numpy as np
import pytest

from blockcd import experiments, problems, theory


def test_coverage_mc_matches_the_coverage_lemma():
    # 1000 rounds; the estimate's standard error is printed by the function itself; allow 4 of them
    mean, se = experiments.coverage_mc(10, 100, 10, rounds=1000, seed=10)
    assert abs(mean - theory.coverage(100, 10, 10)) < 4 * se
    assert 0 < se < 1


def test_coverage_mc_shared_is_exactly_tau():
    mean, se = experiments.coverage_mc(10, 100, 10, rounds=50, seed=0, sampling="shared")
    assert mean == 10 and se == 0


@pytest.mark.parametrize("kw", [{"n": 0}, {"tau": 101}, {"rounds": 1}, {"sampling": "both"}])
def test_coverage_mc_rejects_bad_arguments(kw):
    args = {"n": 10, "m": 100, "tau": 10, "rounds": 10}
    args.update(kw)
    with pytest.raises((ValueError, TypeError)):
        experiments.coverage_mc(args.pop("n"), args.pop("m"), args.pop("tau"), **args)


def test_smoothness_ratios_below_the_lemma_and_exact_at_dense():
    p = problems.synthetic(5, 40, 20, interpolating=True, cond=10, seed=1)
    worst = experiments.smoothness_ratios(p, 20, [20, 5, 1], points=200, seed=0)
    for t, w in worst.items():
        assert 0 < w <= theory.expected_smoothness(p, "ibcd", 20, t)
    # tau = m: the ratio is ||grad f(x)||^2 / (2 D(x)), at most L and at least mu
    assert p.mu - 1e-12 <= worst[20] <= p.L + 1e-12
    # fewer blocks, more variance: the ratio grows as tau falls
    assert worst[1] > worst[5] > worst[20]


def test_smoothness_ratios_rejects_tau_above_m():
    p = problems.synthetic(2, 10, 8, seed=0)
    with pytest.raises(ValueError):
        experiments.smoothness_ratios(p, 8, [9], points=2)


def test_iteration_ratios_follow_the_mn_rule():
    # the chapter's 15% rule for ratios of iteration counts
    q = problems.synthetic(4, 100, 20, interpolating=True, cond=5, seed=1)
    out = experiments.iteration_ratios(q, "ibcd", 20, [20, 5], 1e-4)
    assert out["measured"][0] == 1.0 and out["predicted"][0] == 1.0
    assert np.all(np.isfinite(out["measured"]))
    assert np.all(np.abs(out["measured"] / out["predicted"] - 1) < 0.15)
    assert math.isclose(out["predicted"][1], theory.iteration_factor(20, 5, 4, q.r))


def test_iteration_ratios_rejects_cap_below_one():
    q = problems.synthetic(2, 10, 8, interpolating=True, seed=0)
    with pytest.raises(ValueError, match="cap"):
        experiments.iteration_ratios(q, "ibcd", 8, [8], 1e-3, cap=0.5)


def test_stationary_error_below_the_radius_and_zero_for_gradient_descent():
    het = problems.synthetic(5, 20, 10, heterogeneity=1.0, noise=0.1, cond=5, seed=3)
    mean, se, h = experiments.stationary_error(het, "ibcd", 10, 2, tail=500)
    assert 0 < mean <= theory.neighbourhood(het, "ibcd", 10, 2) and se > 0
    assert h.dist2.size == int(3 / (theory.step_size(het, "ibcd", 10, 2) * het.mu)) + 500 + 1
    dense, _, _ = experiments.stationary_error(het, "ibcd", 10, 10, tail=200, burn=2000)
    assert dense < 1e-20 * h.dist2[0]          # tau = m: gradient descent reaches x*


def test_stationary_error_needs_two_seeds():
    het = problems.synthetic(2, 10, 4, heterogeneity=1.0, seed=0)
    with pytest.raises(ValueError, match="two seeds"):
        experiments.stationary_error(het, "ibcd", 4, 1, seeds=(0,))

"""Chapter 6's experiments moved into the library: the tuned run, the exact one-step checks of
ISEGA and IS-SAGA, the dense-against-sparse counts, and the recorded shifts."""

import numpy as np
import pytest

import blockcd
from blockcd import experiments, problems, theory


@pytest.fixture(scope="module")
def sorted_ls():
    return problems.synthetic(10, 20, 40, cond=20, noise=0.1, heterogeneity=0.5, split="sorted", seed=0)


def test_isega_inequalities_hold_and_item_2_is_nearly_tight(sorted_ls):
    worst = experiments.isega_inequality_ratios(sorted_ls, 20, 2, states=200, seed=0)
    assert worst.shape == (3,) and np.all(worst <= 1)
    assert worst[1] > 0.99          # item 2 is attained when x is near x* and the shifts are far
    assert worst[0] < 0.9           # item 1 has room (a factor of about 2 on this problem)


def test_isega_check_finds_a_counterexample_when_the_step_is_too_large(sorted_ls, monkeypatch):
    """The check can fail: with 30 times the theory step the theorem's contraction breaks."""
    real = theory.step_size

    def big(*a, **k):
        return 30 * real(*a, **k)

    monkeypatch.setattr(theory, "step_size", big)        # the step the check takes
    monkeypatch.setattr(theory.rates, "step_size", big)  # and the one theory.rate contracts at
    assert experiments.isega_inequality_ratios(sorted_ls, 20, 2, states=200, seed=0)[2] > 1


def test_is_saga_inequality_holds(sorted_ls):
    assert 0.9 < experiments.is_saga_inequality_ratio(sorted_ls, 20, 2, states=40, seed=0) <= 1


def test_is_saga_check_needs_equal_shares():
    q = problems.synthetic(3, 10, 8, seed=0)
    q.sizes = np.array([10, 10, 9])
    with pytest.raises(ValueError, match="same number l"):
        experiments.is_saga_inequality_ratio(q, 4, 2, states=1)


def test_tuned_run_is_the_run_with_the_scale_found(sorted_ls):
    scale, h = experiments.tuned_run(sorted_ls, "isega", 20, 2, iters=2000)
    assert scale == 4                                       # chapter 6's multiple on this problem
    ref = blockcd.run(sorted_ls, "isega", m=20, tau=2, iters=2000,
                      step=4 * theory.step_size(sorted_ls, "isega", 20, 2))
    assert np.array_equal(h.dist2, ref.dist2)
    assert h.iters_to(1e-8) is not None


@pytest.mark.parametrize("bad, match", [({"eps": 0}, "eps"), ({"iters": 0}, "iters"), ({"scales": ()}, "scales"),
                                        ({"scales": (4, -1)}, "scales")])
def test_tuned_run_validates(sorted_ls, bad, match):
    with pytest.raises(ValueError, match=match):
        experiments.tuned_run(sorted_ls, "isega", 20, 2, **bad)


def test_dense_and_sparse_counts_lie_below_their_bounds(sorted_ls):
    r = experiments.dense_and_sparse(sorted_ls, "isega", 20, 2, 1e-6)
    assert r["steps"] == (theory.step_size(sorted_ls, "isega", 20, 20), theory.step_size(sorted_ls, "isega", 20, 2))
    assert all(k <= b for k, b in zip(r["counts"], r["bounds"]))
    assert r["measured"] == r["counts"][1] / r["counts"][0]
    assert abs(r["measured"] / r["predicted"] - 1) < 0.15   # the book's 15% rule for ratios of counts
    with pytest.raises(ValueError, match="seeds"):
        experiments.dense_and_sparse(sorted_ls, "isega", 20, 2, 1e-6, seeds=())


def test_recorded_shifts_are_those_of_the_simulator_run(sorted_ls):
    p = sorted_ls
    h, S = experiments.isega_shifts(p, 20, 2, 200, seed=3)
    ref = blockcd.run(p, "isega", m=20, tau=2, iters=200, seed=3)
    assert np.max(np.abs(h.dist2 - ref.dist2)) <= 1e-12 * ref.dist2[0]   # same iterates, to rounding
    assert S.shape == (201, p.n, p.d) and not S[0].any()                 # h_i^0 = 0
    changed = np.any(S[1] != S[0], axis=1)
    assert changed.all()                                                 # every worker sent two blocks
    assert np.sum(S[1] != 0) <= p.n * 2 * (p.d // 20)                   # and only those coordinates moved
    H = np.mean(np.sum((S - p.local_grads_star) ** 2, axis=2), axis=1)
    assert H[0] == pytest.approx(p.sigma_star2) and H[-1] < 0.5 * H[0]  # the shifts move toward grad f_i(x*)


def test_recorded_shifts_validate(sorted_ls):
    with pytest.raises(ValueError, match="iters"):
        experiments.isega_shifts(sorted_ls, 20, 2, 0)


@pytest.mark.parametrize("m, tau", [(20, 30), (20, 0), (50, 2)])
def test_inequality_checks_validate_m_and_tau(sorted_ls, m, tau):
    with pytest.raises(ValueError):
        experiments.isega_inequality_ratios(sorted_ls, m, tau, states=1)
    with pytest.raises(ValueError):
        experiments.is_saga_inequality_ratio(sorted_ls, m, tau, states=1)

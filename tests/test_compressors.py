"""Tests of blockcd.compressors: top-k, the compressor dispatch, aggregation errors, the n-sweep."""

import numpy as np
import pytest

import blockcd
from blockcd import compressors as compare
from blockcd import problems, theory


# ------------------------------------------------------------------ top-k
def test_top_k_keeps_the_largest_blocks():
    # d = 7, m = 3: blocks {0,1,2}, {3,4}, {5,6}; block norms^2 = 3, 50, 8
    g = np.array([1.0, 1.0, 1.0, 5.0, 5.0, 2.0, 2.0])
    out = compare.top_k(g, 3, 2)
    np.testing.assert_array_equal(out, [0, 0, 0, 5, 5, 2, 2])
    np.testing.assert_array_equal(compare.top_k(g, 3, 1), [0, 0, 0, 5, 5, 0, 0])


def test_top_k_rows_choose_their_own_blocks_and_ties_go_to_the_first():
    G = np.array([[3.0, 0.0, 0.0, 1.0], [0.0, 0.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    out = compare.top_k(G, 4, 1)
    np.testing.assert_array_equal(out, [[3, 0, 0, 0], [0, 0, 2, 0], [1, 0, 0, 0]])


def test_top_k_with_tau_m_is_the_identity_and_returns_a_copy():
    G = np.arange(12.0).reshape(2, 6)
    out = compare.top_k(G, 3, 3)
    np.testing.assert_array_equal(out, G)
    out[0, 0] = 99.0
    assert G[0, 0] == 0.0


def test_top_k_error_is_at_most_the_dropped_share():
    # ||T(g) - g||^2 <= (1 - tau/m) ||g||^2, uneven blocks (d = 23, m = 5)
    rng = np.random.default_rng(0)
    G = rng.standard_normal((200, 23)) * rng.exponential(size=(200, 23))
    for tau in range(1, 6):
        err = np.sum((compare.top_k(G, 5, tau) - G) ** 2, axis=1)
        assert np.all(err <= (1 - tau / 5) * np.sum(G**2, axis=1) + 1e-12)


@pytest.mark.parametrize(
    "args, exc",
    [
        (("not an array", 2, 1), TypeError),
        ((None, 2, 1), TypeError),
        ((np.ones((2, 4)), 5, 1), ValueError),      # m > d
        ((np.ones((2, 4)), 0, 1), ValueError),      # m < 1
        ((np.ones((2, 4)), 2, 0), ValueError),      # tau < 1
        ((np.ones((2, 4)), 2, 3), ValueError),      # tau > m
        ((np.ones((2, 4)), 2, 1.5), TypeError),     # tau not an integer
        ((np.array([[1.0, np.nan]]), 1, 1), ValueError),
        ((np.ones((2, 2, 2)), 1, 1), ValueError),   # 3-D
    ],
)
def test_top_k_rejects_bad_input(args, exc):
    with pytest.raises(exc):
        compare.top_k(*args)


# --------------------------------------------------------------- compress
def test_compress_independent_is_the_book_sparsifier():
    G = np.random.default_rng(1).standard_normal((5, 12))
    a = compare.compress(G, 6, 2, "independent", rng=7)
    b = blockcd.sparsify(G, 6, 2, rng=7, sampling="independent")
    np.testing.assert_array_equal(a, b)


def test_compress_shared_uses_one_support_for_all_rows():
    G = np.random.default_rng(2).standard_normal((8, 12)) + 5.0   # no zero entries
    out = compare.compress(G, 6, 2, "shared", rng=3)
    support = out != 0
    assert np.all(support == support[0])
    assert support[0].sum() == 4                                 # 2 blocks of 2 coordinates


def test_compress_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        compare.compress(np.ones((2, 4)), 2, 1, "random-k")
    with pytest.raises(TypeError, match="kind"):
        compare.compress(np.ones((2, 4)), 2, 1, 3)


# ------------------------------------------------------- aggregation error
def test_aggregation_error_top_k_is_exact():
    G = np.random.default_rng(4).standard_normal((6, 20))
    v, se = compare.aggregation_error(G, 10, 3, "top-k")
    direct = compare.top_k(G, 10, 3).mean(axis=0) - G.mean(axis=0)
    assert se == 0.0
    assert v == pytest.approx(direct @ direct, rel=1e-14)


@pytest.mark.parametrize("kind", ["independent", "shared"])
def test_aggregation_error_random_kinds_match_the_key_lemma(kind):
    # Monte-Carlo mean of 4000 i.i.d. squared errors: within 4 standard errors of the exact value
    # except with probability < 1e-4 (central limit theorem); the seed is fixed.
    G = np.random.default_rng(5).standard_normal((7, 30)) + 0.5
    v, se = compare.aggregation_error(G, 10, 2, kind, trials=4000, seed=11)
    exact = theory.aggregation_variance(G, 10, 2, sampling=kind)
    assert se > 0
    assert abs(v - exact) < 4 * se


def test_aggregation_error_validates():
    with pytest.raises(ValueError, match="kind"):
        compare.aggregation_error(np.ones((2, 4)), 2, 1, "top")
    with pytest.raises(ValueError, match="trials"):
        compare.aggregation_error(np.ones((2, 4)), 2, 1, "independent", trials=1)
    with pytest.raises(ValueError, match="seed"):
        compare.aggregation_error(np.ones((2, 4)), 2, 1, "shared", seed=-1)


# ------------------------------------------------------------ n-sweep
def _data(N=24, d=4, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, d)) * np.geomspace(1.0, 0.5, d)
    return A, A @ rng.standard_normal(d)


def test_gradient_descent_needs_the_same_iterations_for_every_split():
    A, b = _data()
    s = compare.iterations_over_workers(lambda n: problems.ridge(A, b, n_workers=n), [1, 2, 4, 8], "gd", 1e-4)
    assert s.measured.shape == (4, 1)
    assert np.unique(s.measured).size == 1
    assert np.all(s.measured[:, 0] <= s.predicted)
    np.testing.assert_allclose(s.smoothness, s.smoothness[0], rtol=1e-9)   # L(n) = L
    np.testing.assert_array_equal(s.received_per_iteration, [4, 8, 16, 32])
    np.testing.assert_array_equal(s.received_total, s.received_per_iteration * s.iterations)


def test_minibatch_sgd_smoothness_is_L_plus_L_loc_over_n():
    A, b = _data()
    build = lambda n: problems.ridge(A, b, n_workers=n)
    s = compare.iterations_over_workers(build, [1, 3], "sgd", 1e-2, seeds=(0, 1))
    for n, L_n in zip([1, 3], s.smoothness):
        p = build(n)
        assert L_n == pytest.approx(p.L + p.local_smoothness(1).max() / n, rel=1e-12)
    assert s.measured.shape == (2, 2) and np.all(np.isfinite(s.measured))
    # the theorem bounds the expected error; the counts stay below the bound on this problem
    assert np.all(s.measured <= s.predicted[:, None])


def test_iterations_over_workers_validates():
    A, b = _data()
    good = lambda n: problems.ridge(A, b, n_workers=n)
    with pytest.raises(TypeError, match="build"):
        compare.iterations_over_workers("no", [1], "gd", 1e-3)
    with pytest.raises(TypeError, match="Problem"):
        compare.iterations_over_workers(lambda n: None, [1], "gd", 1e-3)
    with pytest.raises(ValueError, match="workers"):
        compare.iterations_over_workers(lambda n: good(2), [1], "gd", 1e-3)
    with pytest.raises(ValueError, match="dimension"):
        compare.iterations_over_workers(lambda n: problems.ridge(A[:, : 2 + n], b, n_workers=n), [1, 2], "gd", 1e-3)
    with pytest.raises(ValueError, match="method"):
        compare.iterations_over_workers(good, [1], "isega", 1e-3)
    with pytest.raises(ValueError, match="eps"):
        compare.iterations_over_workers(good, [1], "gd", 1.0)
    with pytest.raises(ValueError, match="eps"):
        compare.iterations_over_workers(good, [1], "gd", 0.0)
    with pytest.raises(ValueError, match="ns"):
        compare.iterations_over_workers(good, [], "gd", 1e-3)
    with pytest.raises(ValueError, match=r"ns\[\]"):
        compare.iterations_over_workers(good, [0], "gd", 1e-3)
    with pytest.raises(ValueError, match="seeds"):
        compare.iterations_over_workers(good, [1], "gd", 1e-3, seeds=())
    with pytest.raises(ValueError, match="start"):
        compare.iterations_over_workers(good, [1], "gd", 1e-3, start=0)


def test_iterations_over_workers_refuses_an_accuracy_inside_the_neighbourhood():
    # noisy targets: minibatch SGD only reaches a neighbourhood of x*
    A, b = _data()
    b = b + np.random.default_rng(9).standard_normal(b.size)
    with pytest.raises(ValueError, match="neighbourhood"):
        compare.iterations_over_workers(lambda n: problems.ridge(A, b, n_workers=n), [2], "sgd", 1e-12)

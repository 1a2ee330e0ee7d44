"""Blocks, tau-nice sampling, the counter-based stream and the block sparsifier (chapter 3)."""

from itertools import combinations

import numpy as np
import pytest
from conftest import assert_mc, mean_se
from scipy import stats

import blockcd
from blockcd import theory
from blockcd.blocks import (
    BernoulliSampler,
    BlockSampler,
    CounterStream,
    ImportanceSampler,
    first_distinct,
    partition,
)
from blockcd.experiments import variance_mc


# ------------------------------------------------------------------ partition
@pytest.mark.parametrize("d", [1, 2, 7, 10, 11, 64, 101])
def test_partition_is_contiguous_balanced_and_covers(d):
    for m in sorted({1, 2, 3, d // 2, d - 1, d} & set(range(1, d + 1))):
        b = partition(d, m)
        assert (b.d, b.m) == (d, m)
        assert b.sizes.sum() == d
        assert b.sizes.max() - b.sizes.min() <= 1
        # the larger blocks come first, as documented
        assert np.all(np.diff(b.sizes) <= 0)
        assert np.array_equal(b.starts, np.concatenate(([0], np.cumsum(b.sizes)[:-1])))
        # block_of lists every coordinate 0..d-1 once, in contiguous runs 0, 0, ..., 1, 1, ...
        assert b.block_of.shape == (d,)
        assert np.array_equal(b.block_of, np.repeat(np.arange(m), b.sizes))
        assert np.all(np.diff(b.block_of) >= 0)
        for j in range(m):
            coords = np.flatnonzero(b.block_of == j)
            assert np.array_equal(coords, np.arange(b.starts[j], b.starts[j] + b.sizes[j]))
        assert b.equal == (d % m == 0)


def test_expand_turns_block_masks_into_coordinate_masks():
    b = partition(10, 4)  # sizes 3, 3, 2, 2
    mask = np.array([[True, False, False, True], [False, True, True, False]])
    coord = b.expand(mask)
    assert coord.shape == (2, 10)
    assert np.array_equal(np.flatnonzero(coord[0]), [0, 1, 2, 8, 9])
    assert np.array_equal(np.flatnonzero(coord[1]), [3, 4, 5, 6, 7])


# ------------------------------------------------------------------ sampling
def test_every_mask_row_has_exactly_tau_blocks():
    for sampling in ("independent", "shared"):
        for tau in (1, 3, 7):
            s = BlockSampler(6, 7, tau, seed=5, sampling=sampling)
            for k in range(50):
                M = s.masks(k)
                assert M.shape == (6, 7) and M.dtype == bool
                assert np.all(M.sum(axis=1) == tau)


def test_inclusion_frequency_is_tau_over_m():
    n, m, tau, K = 6, 7, 3, 3000
    s = BlockSampler(n, m, tau, seed=1)
    M = np.stack([s.masks(k) for k in range(K)])  # (K, n, m)
    p = tau / m
    freq = M.mean(axis=(0, 1))
    # n K independent Bernoulli(p) draws per block: SE = sqrt(p(1-p)/(nK)); |freq - p| <= 4.5 SE,
    # false-failure probability < 7e-6 per block
    se = np.sqrt(p * (1 - p) / (n * K))
    assert_mc(freq, np.full(m, se), np.full(m, p), what="inclusion frequency")
    # per worker as well (K draws each)
    assert_mc(M.mean(axis=0), np.full((n, m), np.sqrt(p * (1 - p) / K)), np.full((n, m), p),
              what="per-worker inclusion")


def test_tau_nice_every_subset_equally_likely():
    n, m, tau, K = 4, 5, 2, 2500
    s = BlockSampler(n, m, tau, seed=2)
    subsets = {c: j for j, c in enumerate(combinations(range(m), tau))}
    counts = np.zeros(len(subsets))
    for k in range(K):
        for row in s.masks(k):
            counts[subsets[tuple(np.flatnonzero(row))]] += 1
    # chi-square goodness of fit against the uniform law on the 10 subsets:
    # reject only below p = 1e-4 (the false-failure probability)
    assert stats.chisquare(counts).pvalue > 1e-4
    # the test has power: counts 20% too high on the subsets holding block 0 would fail it
    skewed = counts.copy()
    skewed[: m - 1] *= 1.2
    assert stats.chisquare(skewed * counts.sum() / skewed.sum()).pvalue < 1e-4


def test_independent_rows_are_independent_shared_rows_equal():
    n, m, tau, K = 5, 6, 2, 4000
    p = tau / m
    s = BlockSampler(n, m, tau, seed=3)
    M = np.stack([s.masks(k) for k in range(K)]).astype(float)  # (K, n, m)
    # co-inclusion of block a at worker i and block b at worker j != i: p^2 if independent
    # (K independent Bernoulli(p^2) draws: SE = sqrt(p^2 (1 - p^2) / K))
    co = np.einsum("kia,kjb->ijab", M, M) / K
    se_pair = np.sqrt(p**2 * (1 - p**2) / K)
    off = ~np.eye(n, dtype=bool)
    assert_mc(co[off], np.full(co[off].shape, se_pair), np.full(co[off].shape, p**2),
              what="co-inclusion across workers")
    # within one worker a tau-nice sample has P(a, b in S) = tau (tau - 1) / (m (m - 1)) for a != b
    q = tau * (tau - 1) / (m * (m - 1))
    same = co[np.arange(n), np.arange(n)]  # (n, m, m)
    offb = ~np.eye(m, dtype=bool)
    assert_mc(same[:, offb], np.full(same[:, offb].shape, np.sqrt(q * (1 - q) / K)),
              np.full(same[:, offb].shape, q), what="co-inclusion within a worker")

    sh = BlockSampler(n, m, tau, seed=3, sampling="shared")
    Ms = np.stack([sh.masks(k) for k in range(200)])
    assert np.all(Ms == Ms[:, :1, :])  # every worker the same choice
    assert np.all(Ms.sum(axis=2) == tau)
    assert len({tuple(r) for r in Ms[:, 0]}) > 1  # but a fresh choice each iteration


def _samplers():
    """Every block sampler (the protocol blockcd.samplers.Sampler), as a maker of fresh copies, with its id."""
    out = []
    for sampling in ("independent", "shared"):
        for n, m, tau in ((5, 7, 3), (3, 9, 1), (4, 5, 4), (2, 13, 6), (3, 1024, 8), (2, 512, 32)):  # last two: few
            out.append((f"tau-nice-{sampling}-{n}-{m}-{tau}",
                        lambda n=n, m=m, tau=tau, sampling=sampling: BlockSampler(n, m, tau, 17, sampling)))
        out.append((f"tau-nice-{sampling}-tau-m", lambda sampling=sampling: BlockSampler(3, 6, 6, 17, sampling)))
    for q in (0.3, 1.0):
        out.append((f"bernoulli-{q}", lambda q=q: BernoulliSampler(5, 7, q, seed=17)))
    out.append(("importance", lambda: ImportanceSampler(4, np.linspace(0.1, 1.0, 9), seed=17)))
    return out


SAMPLERS = _samplers()


@pytest.mark.parametrize("make", [f for _, f in SAMPLERS], ids=[i for i, _ in SAMPLERS])
def test_worker_blocks_regenerated_alone_equal_the_mask_rows(make):
    """For every sampler: a worker's blocks regenerated alone are its row of the masks, whatever the order of
    the calls; the masks drawn ahead and each iteration's cheaper form (draw) are the same choices."""
    from blockcd.samplers import Sampler

    ks = [0, 1, 2, 9, 3, 3, 50, 4, 0]  # out of order and repeated
    s, in_order, ahead = make(), make(), make()
    assert isinstance(s, Sampler)
    n, m = s.n, s.m
    ref = {k: in_order.masks(k).copy() for k in range(51)}  # drawn in order 0, 1, 2, ...
    chunk = np.concatenate([ahead.masks_ahead(k, c) for k, c in ((0, 4), (4, 1), (5, 46))])
    assert np.array_equal(chunk, np.stack([ref[k] for k in range(51)]))
    for k in ks:
        M = s.masks(k)
        assert M.shape == (n, m) and np.array_equal(M, ref[k]), f"masks({k}) depends on the order of the calls"
        mask, chosen = make().draw(k)
        if mask is None:
            assert np.array_equal(chosen, np.nonzero(M)[1].reshape(n, -1))
        else:
            assert chosen is None and np.array_equal(mask, M)
        idx = s.choices_of(M[None])
        assert idx is None or np.array_equal(idx[0], np.nonzero(M)[1].reshape(n, -1))
        for i in range(n):
            # a fresh sampler, as on a worker or the master that never saw the other rows
            alone = make().worker_blocks(k, i)
            assert np.array_equal(alone, np.flatnonzero(M[i])), (k, i)
            assert np.array_equal(s.worker_blocks(k, i), alone)


def test_counter_stream_rows_regenerate_bit_for_bit():
    for width in (1, 4, 7, 9):
        cs = CounterStream(seed=8, purpose=0, rows=3, width=width)
        draws = [cs.draw(k) for k in range(6)]
        for k in (5, 0, 3):
            for i in range(3):
                assert np.array_equal(CounterStream(8, 0, 3, width).worker_uniforms(k, i), draws[k][i])
        assert np.array_equal(CounterStream(8, 0, 3, width).draw(4), draws[4])  # random access
        assert not np.array_equal(CounterStream(8, 1, 3, width).draw(0), draws[0])  # other purpose


def test_same_seed_same_masks_different_seed_different():
    a = [BlockSampler(4, 8, 3, seed=1).masks(k).copy() for k in range(20)]
    b = [BlockSampler(4, 8, 3, seed=1).masks(k).copy() for k in range(20)]
    c = [BlockSampler(4, 8, 3, seed=2).masks(k).copy() for k in range(20)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_tau_equal_m_sends_everything():
    s = BlockSampler(3, 5, 5, seed=0)
    assert np.all(s.masks(7))
    assert np.array_equal(s.worker_blocks(7, 2), np.arange(5))


# ---------------------------------------------------------------- sparsifier
@pytest.mark.parametrize("d,m", [(11, 4), (10, 3), (9, 9)])
def test_sparsify_is_unbiased_per_coordinate_and_on_a_projection(d, m):
    rng = np.random.default_rng(0)
    g = rng.standard_normal(d)
    v = rng.standard_normal(d)
    T = 20000
    for tau in sorted({1, max(1, m // 2), m - 1} - {0}):
        # T independent draws of C(g): rows of a (T, d) array sparsified independently
        C = blockcd.sparsify(np.tile(g, (T, 1)), m, tau, np.random.default_rng(tau))
        mean, se = mean_se(C)
        # per coordinate: mean of T iid draws, |mean - g_j| <= 4.5 SE (false failure < 7e-6 each)
        assert_mc(mean, se, g, what=f"E C(g) per coordinate (d={d}, m={m}, tau={tau})")
        pm, pse = mean_se(C @ v)
        assert_mc(pm, pse, g @ v, what="E <v, C(g)>")
        # C(g) keeps whole blocks, scaled by m/tau, and exactly tau of them
        kept = np.abs(C) > 0
        blocks = partition(d, m)
        per_block = np.add.reduceat(kept, blocks.starts, axis=1)
        assert np.all((per_block == 0) | (per_block == blocks.sizes))
        assert np.all((per_block > 0).sum(axis=1) == tau)
        assert np.allclose(C[kept], (np.tile(g, (T, 1)) * (m / tau))[kept], rtol=0, atol=0)


@pytest.mark.parametrize("d,m", [(11, 4), (13, 5)])
def test_sparsify_variance_is_omega_norm2(d, m):
    rng = np.random.default_rng(1)
    g = rng.standard_normal(d) * np.linspace(0.2, 3, d)  # uneven coordinates over uneven blocks
    T = 20000
    for tau in range(1, m + 1):
        C = blockcd.sparsify(np.tile(g, (T, 1)), m, tau, np.random.default_rng(100 + tau))
        err2 = np.sum((C - g) ** 2, axis=1)
        mean, se = mean_se(err2)
        truth = theory.omega(m, tau) * (g @ g)
        if tau == m:
            assert mean == 0.0
        else:
            # mean of T iid squared errors vs omega ||g||^2, 4.5 SE
            assert_mc(mean, se, truth, what=f"E||C(g) - g||^2 (tau={tau})")


def test_sparsify_shared_and_independent_sampling():
    G = np.arange(1.0, 25.0).reshape(4, 6)
    S = blockcd.sparsify(G, 3, 1, 0, sampling="shared")
    assert np.array_equal(S != 0, np.broadcast_to(S[0] != 0, S.shape))  # one mask for all rows
    I = blockcd.sparsify(np.ones((200, 6)), 3, 1, 0)
    assert len({tuple(r != 0) for r in I}) == 3  # independent rows: all three singletons appear
    # 1-D input is one worker; an int seed is reproducible
    one = blockcd.sparsify(np.ones(6), 3, 1, 7)
    assert one.shape == (6,) and np.array_equal(one, blockcd.sparsify(np.ones(6), 3, 1, 7))
    # tau = m is the identity
    assert np.array_equal(blockcd.sparsify(G, 3, 3, 0), G)


# ------------------------------------------------------ aggregation (key lemma)
@pytest.mark.parametrize("sampling", ["independent", "shared"])
@pytest.mark.parametrize("n,d,m,tau", [(5, 11, 4, 1), (5, 11, 4, 2), (3, 13, 5, 3), (8, 12, 6, 1)])
def test_aggregation_variance_matches_the_key_lemma(n, d, m, tau, sampling):
    rng = np.random.default_rng(n * 100 + d)
    # rows with a common part and a worker-specific part, uneven scales
    G = rng.standard_normal(d) + rng.standard_normal((n, d)) * np.linspace(0.5, 2, n)[:, None]
    gbar = G.mean(axis=0)
    truth = theory.aggregation_variance(G, m, tau, sampling)
    w = theory.omega(m, tau)
    # the formulas of the key lemma (chapter 3), written out
    expect = w / n * np.mean(np.sum(G**2, axis=1)) if sampling == "independent" else w * gbar @ gbar
    assert truth == pytest.approx(expect, rel=1e-12)

    # (a) Monte-Carlo with the public sparsifier: T aggregations (1/n) sum_i C_i(g_i)
    T = 4000
    gen = np.random.default_rng(7)
    if sampling == "independent":  # every row independent: T aggregations from one call on T stacked copies
        agg = blockcd.sparsify(np.tile(G, (T, 1)), m, tau, gen).reshape(T, n, d).mean(axis=1)
    else:  # one mask per aggregation: one call each
        agg = np.array([blockcd.sparsify(G, m, tau, gen, "shared").mean(axis=0) for _ in range(T)])
    vals = np.sum((agg - gbar) ** 2, axis=1)
    mean, se = mean_se(vals)
    # mean of T iid squared deviations: |mean - truth| <= 4.5 SE, false failure < 7e-6
    assert_mc(mean, se, truth, what=f"aggregation variance via sparsify ({sampling})")
    # (b) the batched estimator the chapters use
    mean2, se2 = variance_mc(G, m, tau, sampling=sampling, trials=T, seed=3)
    assert_mc(mean2, se2, truth, what=f"experiments.variance_mc ({sampling})")


def test_independent_beats_shared_by_about_n_on_similar_rows():
    # on identical rows the lemma predicts a ratio of exactly n between the two
    n, d, m, tau = 6, 12, 6, 1
    G = np.tile(np.random.default_rng(0).standard_normal(d), (n, 1))
    ind = theory.aggregation_variance(G, m, tau, "independent")
    sha = theory.aggregation_variance(G, m, tau, "shared")
    assert sha / ind == pytest.approx(n, rel=1e-12)
    mi, si = variance_mc(G, m, tau, sampling="independent", trials=4000, seed=1)
    ms, ss = variance_mc(G, m, tau, sampling="shared", trials=4000, seed=1)
    assert_mc(mi, si, ind, what="independent")
    assert_mc(ms, ss, sha, what="shared")


@pytest.mark.parametrize("n,m,tau", [(10, 20, 2), (4, 9, 3), (7, 7, 1), (3, 10, 10)])
def test_coverage_formula_matches_distinct_blocks(n, m, tau):
    K = 3000
    s = BlockSampler(n, m, tau, seed=4)
    distinct = np.array([s.masks(k).any(axis=0).sum() for k in range(K)], dtype=float)
    mean, se = mean_se(distinct)
    truth = theory.coverage(m, tau, n)
    assert truth == pytest.approx(m * (1 - (1 - tau / m) ** n), rel=1e-15)
    if tau == m:
        assert np.all(distinct == m)
    else:
        # mean of K iid counts, 4.5 SE
        assert_mc(mean, se, truth, what="distinct blocks received")
    # shared sampling: the master always receives exactly tau distinct blocks
    sh = BlockSampler(n, m, tau, seed=4, sampling="shared")
    assert all(sh.masks(k).any(axis=0).sum() == tau for k in range(20))


# ------------------------------------------- few blocks of many: O(tau) draws
def test_few_blocks_of_many_draw_tau_nice_choices_from_about_tau_uniforms():
    # m >= FEW_M and 16 tau <= m: choices from W = tau + ceil(2 tau^2/m) + 16 uniforms, not m
    n, m, tau, K = 8, 1024, 4, 4000
    s = BlockSampler(n, m, tau, seed=3)
    assert not s.draws_ahead and s.stream.width == tau + 1 + 16  # the tau-nice sampler's private few-block path
    C = np.stack([s.choices(k) for k in range(K)])  # (K, n, tau)
    assert C.shape == (K, n, tau) and np.all(np.diff(C, axis=2) > 0)  # tau distinct, sorted
    # inclusion: n K Bernoulli(tau/m) draws per block; SE-derived band of 4.5 SE per block
    p = tau / m
    freq = np.bincount(C.ravel(), minlength=m) / (n * K)
    assert_mc(freq, np.full(m, np.sqrt(p * (1 - p) / (n * K))), np.full(m, p), what="inclusion frequency")
    # pairs: P(blocks a and b both chosen) = tau (tau-1) / (m (m-1)) for a tau-nice sampling; for the pairs
    # (j, j+1) pooled over j, n K (m-1) draws of a Bernoulli(q): 4.5 SE
    q = tau * (tau - 1) / (m * (m - 1))
    M = np.zeros((K * n, m), dtype=bool)
    np.put_along_axis(M, C.reshape(K * n, tau), True, axis=1)
    both = (M[:, :-1] & M[:, 1:]).mean()
    se = np.sqrt(q * (1 - q) / (K * n * (m - 1)))
    assert abs(both - q) <= 4.5 * se, (both, q, se)


@pytest.mark.parametrize("sampling", ["independent", "shared"])
def test_few_blocks_choices_masks_and_worker_blocks_agree(sampling):
    n, m, tau = 5, 2000, 30
    s = BlockSampler(n, m, tau, seed=11, sampling=sampling)
    for k in (0, 7, 3):
        C, M = s.choices(k), s.masks(k)
        for i in range(n):
            alone = BlockSampler(n, m, tau, seed=11, sampling=sampling).worker_blocks(k, i)
            assert np.array_equal(alone, C[i]) and np.array_equal(np.flatnonzero(M[i]), alone)


def test_first_distinct_keeps_the_first_tau_new_values_and_flags_short_rows():
    u = np.array([[0.55, 0.15, 0.55, 0.95, 0.35], [0.1, 0.1, 0.1, 0.1, 0.1]])
    idx, ok = first_distinct(u, 10, 3)  # floor(10 u): [5, 1, 5, 9, 3] and [1, 1, 1, 1, 1]
    assert np.array_equal(idx[0], [1, 5, 9]) and ok.tolist() == [True, False]


def test_a_row_without_tau_distinct_draws_is_drawn_again_from_the_fallback_stream():
    s = BlockSampler(3, 1024, 8, seed=5)
    u = s.stream.draw(0).copy()
    u[1] = 0.5  # worker 1's draws hold one value: it must come from the fallback stream instead
    idx = s._few(u, 0, np.arange(3))
    w = s.fallback.worker_uniforms(0, 1)
    assert np.array_equal(idx[1], np.sort(np.argpartition(w, 7)[:8]))
    assert np.array_equal(idx[[0, 2]], s.choices(0)[[0, 2]])


def test_stream_purposes_have_distinct_keys():
    # SeedSequence pads the entropy with zeros, so (seed, 2) and (seed, 2, 0) give one key: every purpose,
    # including each DDP bucket's (PURPOSE_DDP, b), must differ from every other stream's entropy
    from blockcd.blocks import (
        PURPOSE_BERNOULLI,
        PURPOSE_BLOCKS,
        PURPOSE_DDP,
        PURPOSE_FEW_BLOCKS,
        PURPOSE_FEW_FALLBACK,
        PURPOSE_SAMPLES,
    )

    purposes = [PURPOSE_BLOCKS, PURPOSE_SAMPLES, PURPOSE_FEW_BLOCKS, PURPOSE_FEW_FALLBACK, PURPOSE_BERNOULLI]
    purposes += [(PURPOSE_DDP, b) for b in range(8)]
    keys = {tuple(CounterStream(7, p, 2, 3).key) for p in purposes}
    assert len(keys) == len(purposes)


# ------------------------------------------------------ all blocks or none (IBGD)
@pytest.mark.parametrize("n,d,m,tau", [(5, 11, 4, 1), (8, 12, 6, 3)])
def test_bernoulli_choice_satisfies_the_key_lemma_with_the_same_omega(n, d, m, tau):
    """(1/n) sum_i (1/q) b_i g_i, b_i ~ Bernoulli(q = tau/m) independent: unbiased, with variance
    (omega/n) (1/n) sum ||g_i||^2 and omega = m/tau - 1, as the tau-nice block choice."""
    rng = np.random.default_rng(n + d)
    G = rng.standard_normal(d) + rng.standard_normal((n, d)) * np.linspace(0.5, 2, n)[:, None]
    gbar = G.mean(axis=0)
    q, T = tau / m, 6000
    s = BernoulliSampler(n, m, q, seed=4)
    b = np.array([s.senders(k) for k in range(T)])  # (T, n)
    agg = (b[:, :, None] * G[None]).mean(axis=1) / q
    truth = theory.aggregation_variance(G, m, tau)
    vals = np.sum((agg - gbar) ** 2, axis=1)
    mean, se = mean_se(vals)
    # a mean of T iid squared deviations: 4.5 SE (false failure < 7e-6 per check)
    assert_mc(mean, se, truth, what="variance of the Bernoulli aggregate")
    m1, se1 = mean_se(agg)
    assert_mc(m1, se1, gbar, what="mean of the Bernoulli aggregate")


def test_bernoulli_masks_worker_blocks_and_q_one():
    s = BernoulliSampler(6, 5, 0.4, seed=3)
    for k in (0, 7, 3):  # out of order: regenerated from (seed, k)
        mask = s.masks(k)
        assert mask.shape == (6, 5) and np.all(mask.all(axis=1) | ~mask.any(axis=1))  # all blocks or none
        for i in range(6):
            assert np.array_equal(np.flatnonzero(mask[i]), s.worker_blocks(k, i))
    assert not s.draws_ahead and s.choices_of(s.masks(0)[None]) is None  # rows of m blocks or none
    assert BernoulliSampler(6, 5, 1.0, seed=3).senders(0).all()  # q = 1: every worker, every round
    other = BernoulliSampler(6, 5, 0.4, seed=4)  # another seed, other draws
    assert any(not np.array_equal(s.senders(k), other.senders(k)) for k in range(5))


@pytest.mark.parametrize("q, exc, match", [(0.0, ValueError, r"^q must be > 0"), (-0.5, ValueError, r"^q must be > 0"),
                                           (1.5, ValueError, r"^q must be a probability in \(0, 1\]"),
                                           (float("nan"), ValueError, r"^q must be finite"),
                                           ("0.5", TypeError, r"^q must be a real number")])
def test_bernoulli_q_outside_zero_one_is_rejected(q, exc, match):
    with pytest.raises(exc, match=match):
        BernoulliSampler(4, 3, q)


def test_minibatch_theta_is_the_exact_variance_factor_without_replacement():
    # enumerate every b-subset of l numbers: the variance of their mean is theta times that of one
    from blockcd.blocks import minibatch_theta

    v = np.random.default_rng(3).standard_normal(7)
    one = np.mean((v - v.mean()) ** 2)
    for b in range(1, 8):
        means = [v[list(S)].mean() for S in combinations(range(7), b)]
        exact = np.mean((np.array(means) - v.mean()) ** 2) / one
        assert abs(minibatch_theta(7, b) - exact) <= 1e-12
    assert minibatch_theta(1, 1) == 0.0 and minibatch_theta(7, 1) == 1.0
    assert np.allclose(minibatch_theta(np.array([1, 4, 7]), 1), [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="l must hold row counts >= b = 3"):
        minibatch_theta(2, 3)
    with pytest.raises(ValueError, match="b must be an integer in"):
        minibatch_theta(5, 0)


# ------------------------------------------------------------------ nice_mask's selection and ties
def _argpartition_mask(u, tau):
    """The plain selection nice_mask must agree with: argpartition's tau smallest of each row."""
    mask = np.zeros(u.shape, dtype=bool)
    np.put_along_axis(mask, np.argpartition(u, tau - 1, axis=1)[:, :tau], True, axis=1)
    return mask


@pytest.mark.parametrize("tau", [1, 2, 3, 7])
def test_nice_mask_is_argpartitions_selection_also_with_ties(tau):
    from blockcd.blocks import nice_mask

    rng = np.random.default_rng(11)
    u = rng.random((400, 20))
    # rows with ties: two and three tied minima, a tie at the tau-th value, ties everywhere
    u[1, [3, 9]] = -1.0
    u[2, [0, 5, 17]] = -1.0
    s = np.sort(u[3])
    u[3, np.flatnonzero(u[3] == s[tau])] = s[tau - 1]
    u[4] = np.round(u[4], 1)
    got = nice_mask(u, tau)
    assert np.array_equal(got.sum(axis=1), np.full(400, tau))
    assert np.array_equal(got, _argpartition_mask(u, tau))
    if tau == 2:  # two tied minima: exactly those two
        assert np.array_equal(np.flatnonzero(got[1]), [3, 9])


@pytest.mark.parametrize("sampling", ["independent", "shared"])
@pytest.mark.parametrize("tau", [1, 2, 5])
def test_choices_of_a_chunk_are_each_masks_nonzero(sampling, tau):
    s = BlockSampler(7, 30, tau, seed=2, sampling=sampling)
    masks = s.masks_ahead(0, 9)
    idx = s.choices_of(masks)
    assert idx.shape == (9, 7, tau)
    for k in range(9):
        rows, cols = np.nonzero(masks[k])
        assert np.array_equal(rows, np.repeat(np.arange(7), tau))
        assert np.array_equal(idx[k].ravel(), cols)
        assert np.array_equal(idx[k], s.choices(k))
    with pytest.raises(ValueError, match="masks must have shape"):
        s.choices_of(masks[:, :3])


@pytest.mark.parametrize("batch", [1, 3])
def test_minibatches_drawn_ahead_are_those_drawn_one_by_one_and_regenerated_per_worker(batch):
    """The simulator draws the rows of several iterations at once: the same rows as one by one and as each
    worker regenerates alone; with b > 1 every row is a b-subset of the worker's own l_i rows."""
    from blockcd.blocks import Minibatches

    sizes = [5, 9, 7, 9]  # unequal: rows past l_i are never drawn
    one, ahead = Minibatches(sizes, batch, seed=6), Minibatches(sizes, batch, seed=6)
    chunks = np.concatenate([ahead.draw_ahead(k, c) for k, c in ((0, 5), (5, 1), (6, 9))])
    assert chunks.shape == (15, 4, batch)
    for k in range(15):
        assert np.array_equal(chunks[k], one.draw(k))
        for i, li in enumerate(sizes):
            assert np.array_equal(np.sort(chunks[k, i]), np.sort(one.worker(k, i)))
            assert len(set(chunks[k, i])) == batch and chunks[k, i].max() < li
    assert np.array_equal(ahead.draw_ahead(40, 2), np.stack([one.draw(40), one.draw(41)]))

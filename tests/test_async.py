"""Asynchronous IS-SGD in the simulator: the delay model, arrival records, replay and convergence (chapter 12)."""

from __future__ import annotations

import numpy as np
import pytest

import blockcd
from blockcd import problems, theory
from blockcd.asynchronous import Speeds, arrival_delays, check_record, epoch_rate


@pytest.fixture(scope="module")
def het():
    """Heterogeneous ridge, every f_i strongly convex (lam > 0): n = 4, d = 12."""
    return problems.synthetic(4, 20, 12, heterogeneity=0.5, lam=0.1, seed=1)


@pytest.fixture(scope="module")
def interp():
    """An interpolating problem: every grad f_ij(x*) = 0, so the method reaches x* (no noise floor)."""
    return problems.synthetic(4, 20, 12, interpolating=True, cond=5, seed=2)


# ---------------------------------------------------------------- the delay model
def test_equal_speeds_without_jitter_go_round_robin():
    w, t = Speeds(jitter=0.0).arrivals(4, 12)
    np.testing.assert_array_equal(w, np.tile(np.arange(4), 3))     # ties go to the lower index
    np.testing.assert_array_equal(t, np.repeat([1.0, 2.0, 3.0], 4))
    d = arrival_delays(w, 4)
    np.testing.assert_array_equal(d[4:], 3)                       # steady state: n - 1 others in between
    np.testing.assert_array_equal(d[:4], np.arange(4))            # the first round all computed on x0
    # the bound counts floor(1/1) + 1 = 2 messages of each other worker (ties at both ends of worker i's
    # interval may both count): 6, of which the round robin reaches 3
    assert Speeds(jitter=0.0).max_delay(4) == 6


@pytest.mark.parametrize("speeds, jitter", [(None, 0.25), ((1, 1, 1, 0.2), 0.25), ((3, 1, 0.5, 0.5, 2), 0.6)])
def test_delays_stay_within_the_model_bound(speeds, jitter):
    model = Speeds(speeds, jitter=jitter, seed=5)
    n = 4 if speeds is None else len(speeds)
    w, t = model.arrivals(n, 3000)
    d = arrival_delays(w, n)
    assert d.max() <= model.max_delay(n)
    assert np.all(np.diff(t) >= 0)                                # arrivals in time order


def test_arrival_shares_follow_the_speeds():
    """Worker i delivers about speed_i / sum(speeds) of the messages: at 4000 arrivals the shares are within
    2% (each compute time is 1/s_i times a mean-1 factor, so the counts differ from the shares by O(1) each)."""
    s = np.array([1.0, 1.0, 1.0, 0.25])
    w, _ = Speeds(tuple(s), jitter=0.25, seed=1).arrivals(4, 4000)
    share = np.bincount(w, minlength=4) / 4000
    np.testing.assert_allclose(share, s / s.sum(), atol=0.02)


def test_rounds_wait_for_the_slowest_worker():
    """A synchronous round lasts max_i T_i: with one worker four times slower, 4 time units on average (its
    own time, since the others take at most 1.25); the asynchronous master meanwhile receives sum_i s_i = 3.25
    messages per unit.  Tolerances: a round's time has sd 4 * 0.25/sqrt(3) = 0.58, so the mean of 200 has
    s.e. 0.041 (3 s.e. = 0.12); the 3250 messages' rate, a sum of four renewal counts, is within 2%."""
    model = Speeds((1, 1, 1, 0.25), jitter=0.25, seed=0)
    end = model.round_times(4, 200)
    assert end[-1] / 200 == pytest.approx(4.0, abs=0.12)
    _, t = model.arrivals(4, 3250)
    assert 3250 / t[-1] == pytest.approx(3.25, rel=0.02)


def test_arrivals_and_rounds_use_the_same_compute_times():
    """Worker i's arrival times in the event simulation are the running sums of its durations."""
    model = Speeds((1, 0.5, 2, 0.25), jitter=0.4, seed=7)
    w, t = model.arrivals(4, 2000)
    D = model.durations(4, 2000)
    for i in range(4):
        mine = t[w == i]
        np.testing.assert_allclose(mine, np.cumsum(D[i, : mine.size]), rtol=1e-12)
    np.testing.assert_allclose(model.round_times(4, 10), np.cumsum(D[:, :10].max(axis=0)), rtol=1e-15)


def test_same_seed_same_arrivals_other_seed_others():
    a, _ = Speeds(seed=3).arrivals(5, 200)
    b, _ = Speeds(seed=3).arrivals(5, 200)
    c, _ = Speeds(seed=4).arrivals(5, 200)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("kw, exc, match", [
    ({"speeds": (1, 0)}, ValueError, "speeds must be a sequence of finite floats > 0"),
    ({"speeds": (1, float("nan"))}, ValueError, "speeds must be a sequence of finite floats > 0"),
    ({"speeds": "fast"}, ValueError, "speeds must be a sequence of finite floats > 0"),
    ({"jitter": 1.0}, ValueError, r"jitter must be in \[0, 1\)"),
    ({"jitter": -0.1}, ValueError, "jitter must be"),
    ({"seed": -1}, ValueError, "seed"),
])
def test_bad_delay_models_are_rejected(kw, exc, match):
    with pytest.raises(exc, match=match):
        Speeds(**kw)


def test_speeds_must_match_the_workers(het):
    with pytest.raises(ValueError, match="speeds has 3 entries, the problem has n = 4 workers"):
        blockcd.run(het, "is-sgd-async", m=4, tau=2, iters=5, delays=Speeds((1, 1, 1)))


# ---------------------------------------------------------------- arrival records
def test_bad_records_are_rejected(het):
    kw = {"m": 4, "tau": 2, "iters": 6}
    with pytest.raises(ValueError, match="arrival 2 of the record is from worker 4; workers are 0..3"):
        blockcd.run(het, "is-sgd-async", delays=[0, 1, 4, 2, 3, 0], **kw)
    with pytest.raises(ValueError, match="has 3 arrivals, fewer than iters = 6"):
        blockcd.run(het, "is-sgd-async", delays=[0, 1, 2], **kw)
    with pytest.raises(TypeError, match="1-D integer array"):
        blockcd.run(het, "is-sgd-async", delays=[0.0, 1.0, 2.0, 3.0, 0.0, 1.0], **kw)
    # worker 3 answers only at arrival 5, having started on x0: delay 5 > M = 3
    with pytest.raises(ValueError, match=r"arrival 5 \(worker 3\) has delay 5, beyond max_delay = 3"):
        blockcd.run(het, "is-sgd-async", delays=[0, 1, 2, 0, 1, 3], max_delay=3, **kw)
    with pytest.raises(ValueError, match="max_delay"):
        blockcd.run(het, "is-sgd-async", delays=[0, 1, 2, 3, 0, 1], max_delay=-1, **kw)
    # a model whose bound exceeds the stated M
    with pytest.raises(ValueError, match=r"bounds delays by M = \d+, beyond max_delay = 3"):
        blockcd.run(het, "is-sgd-async", delays=Speeds((1, 1, 1, 0.2)), max_delay=3, **kw)


def test_delays_only_for_the_asynchronous_method(het):
    with pytest.raises(ValueError, match="delays and max_delay apply to 'is-sgd-async' only, not to 'is-sgd'"):
        blockcd.run(het, "is-sgd", m=4, tau=2, iters=3, delays=Speeds())
    with pytest.raises(ValueError, match="step='decreasing' applies to 'is-sgd' only"):
        blockcd.run(het, "is-sgd-async", m=4, tau=2, iters=3, step="decreasing")


def test_check_record_returns_the_prefix():
    r = check_record(np.array([2, 0, 1, 2, 0]), 3, 4, max_delay=2)
    np.testing.assert_array_equal(r, [2, 0, 1, 2])


# ---------------------------------------------------------------- the method
def test_first_round_is_one_synchronous_step(het):
    """The first n arrivals all computed on x0 (each worker's message 0: the blocks and minibatch of
    (seed, i, 0), as synchronous IS-SGD's round 0), so after them w = x0 - gamma (m/tau)(1/n) sum_i (g_i)_{U_i}:
    the synchronous x^1, up to the order of the additions (1e-15 relative)."""
    n, m, tau, b = het.n, 6, 2, 3
    step = theory.step_size(het, "is-sgd-async", m, tau)
    a = blockcd.run(het, "is-sgd-async", m=m, tau=tau, batch=b, step=step, iters=n, seed=4,
                    delays=np.array([2, 0, 3, 1]))
    s = blockcd.run(het, "is-sgd", m=m, tau=tau, batch=b, step=step, iters=1, seed=4)
    np.testing.assert_allclose(a.x, s.x, rtol=1e-14, atol=1e-15)
    assert a.dist2[-1] == pytest.approx(s.dist2[-1], rel=1e-13)
    np.testing.assert_array_equal(a.delays, [0, 1, 2, 3])


def test_history_counts_one_message_per_arrival(het):
    m, tau = 6, 2
    h = blockcd.run(het, "is-sgd-async", m=m, tau=tau, iters=40, seed=1)
    assert h.arrivals.shape == h.delays.shape == h.times.shape == (40,)
    # blocks and bytes per worker (the mean over the n workers): tau blocks of 2 coordinates each per arrival
    np.testing.assert_allclose(np.diff(h.blocks_up), tau / het.n)
    np.testing.assert_allclose(np.diff(h.bytes_up), 8 * 2 * tau / het.n)
    np.testing.assert_allclose(np.diff(h.bytes_down), 8 * het.d / het.n)
    np.testing.assert_array_equal(h.bytes_up_workers, 8 * 2 * tau * np.bincount(h.arrivals, minlength=het.n))


def test_same_seed_same_history_and_replay_is_exact(het, tmp_path):
    kw = {"m": 6, "tau": 2, "batch": 2, "iters": 300, "seed": 9, "delays": Speeds((1, 1, 1, 0.3), seed=2)}
    a = blockcd.run(het, "is-sgd-async", **kw)
    b = blockcd.run(het, "is-sgd-async", **kw)
    np.testing.assert_array_equal(a.dist2, b.dist2)
    a.save(tmp_path / "h.npz")
    loaded = blockcd.History.load(tmp_path / "h.npz")
    np.testing.assert_array_equal(loaded.arrivals, a.arrivals)
    np.testing.assert_array_equal(loaded.delays, a.delays)
    kw["delays"] = loaded.arrivals
    r = blockcd.run(het, "is-sgd-async", **kw)
    np.testing.assert_array_equal(r.dist2, a.dist2)
    np.testing.assert_array_equal(r.x, a.x)


def test_converges_to_x_star_under_interpolation(interp):
    """With interpolation (no noise at x*) and Theorem 9's step, the error falls by 1e-8 in 3000 arrivals
    behind a straggler, at a steady rate per epoch of M arrivals (the form of Theorem 9's bound)."""
    m, tau = 6, 2
    model = Speeds((1, 1, 1, 0.3), seed=1)
    M = model.max_delay(interp.n)
    h = blockcd.run(interp, "is-sgd-async", m=m, tau=tau, iters=3000, seed=2, delays=model, max_delay=M)
    assert h.delays.max() <= M
    assert h.dist2[-1] <= 1e-8 * h.dist2[0]
    rate = epoch_rate(h, M)
    assert 0 < rate < 0.9


def test_prox_on_the_master_reaches_x_star_of_f_plus_r():
    """With R = l1 the master sends prox(w).  With no noise at all (tau = m, each worker's minibatch all its
    20 rows) the method is the delay-tolerant proximal gradient of the paper's reference [13]: it reaches the
    x* of f + R exactly, its zeros included, on heterogeneous data and behind a straggler."""
    from blockcd import regularizers

    p = problems.synthetic(4, 20, 12, heterogeneity=0.5, lam=0.1, reg=regularizers.l1(0.05), seed=1)
    zeros = np.flatnonzero(p.x_star == 0)
    assert 0 < zeros.size < p.d
    h = blockcd.run(p, "is-sgd-async", m=6, tau=6, batch=20, iters=3000, seed=0, delays=Speeds((1, 1, 1, 0.3)))
    assert h.dist2[-1] <= 1e-12 * h.dist2[0]   # x* itself (an accelerated proximal solve) is this accurate
    assert np.all(h.x[zeros] == 0)


def test_theory_step_is_theorem_9(het):
    """The paper's gamma <= 1/(2L(q + 2/n)) in book units (gamma_book = q gamma_paper): 1/(2 L_max (1 + 2m/(tau n)))."""
    m, tau = 6, 2
    g = theory.step_size(het, "is-sgd-async", m, tau)
    assert g == pytest.approx(1 / (2 * het.L_max * (1 + 2 * m / (tau * het.n))), rel=1e-14)
    assert g == pytest.approx(theory.paper_step(het, "is-sgd-async", m, tau), rel=1e-14)


def test_epoch_rate_rejects_short_runs(het):
    h = blockcd.run(het, "is-sgd-async", m=4, tau=2, iters=3)
    with pytest.raises(ValueError, match="less than one epoch of M = 5"):
        epoch_rate(h, 5)

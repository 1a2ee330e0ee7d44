"""Asynchronous IS-SGD's mean iterate under delays (chapter 12, prop-async-mean), and the check that uses it."""

from __future__ import annotations

import numpy as np
import pytest

import blockcd
from blockcd import experiments, problems, rules, theory
from blockcd.asynchronous import Speeds, epoch_rate


@pytest.fixture(scope="module")
def het():
    """Heterogeneous ridge without interpolation (lam > 0): n = 4, d = 12, 20 rows per worker."""
    return problems.synthetic(4, 20, 12, heterogeneity=0.5, lam=0.1, seed=1)


@pytest.fixture(scope="module")
def interp():
    """Interpolating least squares, chapter 12's kind of problem: n = 4, d = 12, m = 12."""
    return problems.synthetic(4, 20, 12, interpolating=True, cond=5, seed=2)


@pytest.fixture(scope="module")
def straggler():
    """An arrival record behind a straggler ten times slower: delays up to the model's M = 51."""
    return Speeds((1.0, 1.0, 1.0, 0.1), seed=0).arrivals(4, 400)[0]


def _dense(p, record, step, iters):
    """The library's own asynchronous run with full local gradients and every block: deterministic."""
    return blockcd.run(p, "is-sgd-async", m=p.d, tau=p.d, batch=p.l_max, step=step, iters=iters, seed=0,
                       delays=record).x


# ---------------------------------------------------------------- the prediction
def test_expected_iterate_is_the_dense_asynchronous_run(het, straggler):
    # two implementations of the same recursion: expected_async_iterate's own loop and the rule at tau = m
    step = theory.step_size(het, "is-sgd-async", 12, 3)
    for iters in (1, 4, 57, 300):
        np.testing.assert_allclose(experiments.expected_async_iterate(het, straggler, step, iters),
                                   _dense(het, straggler, step, iters), rtol=1e-12, atol=1e-14)


def test_expected_iterate_depends_on_the_delays_and_the_step(het, straggler):
    step = theory.step_size(het, "is-sgd-async", 12, 3)
    round_robin = np.tile(np.arange(4), 100)
    a = experiments.expected_async_iterate(het, straggler, step, 200)
    b = experiments.expected_async_iterate(het, round_robin, step, 200)
    c = experiments.expected_async_iterate(het, straggler, 2 * step, 200)
    scale = np.linalg.norm(a - het.x_star)
    assert np.linalg.norm(a - b) > 0.05 * scale and np.linalg.norm(a - c) > 0.05 * scale


def test_first_n_arrivals_are_one_gradient_step(het):
    # prop-async-round at tau = m: n arrivals on x0 = 0 make one gradient step of f
    step = 0.05
    x = experiments.expected_async_iterate(het, np.array([2, 0, 3, 1]), step, 4)
    np.testing.assert_allclose(x, -step * het.grad(np.zeros(het.d)), rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- the check passes, and can fail
def test_mean_of_the_library_runs_matches(het, straggler):
    # 40 seeds, d = 12 coordinates: a false alarm (some |t_39| > 4) has probability about 12 x 3e-4
    step = theory.step_size(het, "is-sgd-async", 12, 3)
    out = experiments.async_mean_check(het, straggler, m=12, tau=3, batch=4, step=step, iters=200)
    assert out["z"] < 4
    assert out["relative"] < 0.2


def _naive(self, s, i, coords, values, scale, step):
    # asynchronous SGD without local iterates: the stale message is applied to the current average
    if coords is None:
        s.w -= step * scale * values / s.n
    else:
        s.w[coords] -= step * scale * values / s.n
    s.gamma = step
    s.Z[i] = self.iterate(s)


def _unscaled(self, s, i, coords, values, scale, step):
    # the sparsified message without its factor m/tau: biased by tau/m
    return _ORIGINAL(self, s, i, coords, values, 1.0, step)


def _undelayed(self, s, i, coords, values, scale, step):
    # the worker's new local iterate taken from the current average instead of the point it computed on
    s.Z[i] = self.iterate(s).copy()
    return _ORIGINAL(self, s, i, coords, values, scale, step)


_ORIGINAL = rules.ISSGDAsync.arrive


@pytest.mark.parametrize("wrong", [_naive, _unscaled, _undelayed], ids=["naive", "unscaled", "undelayed"])
def test_a_wrong_master_fails_the_check(interp, straggler, monkeypatch, wrong):
    # the same check as chapter 12's (40 seeds, 4 standard errors); the right master passes it first
    step = theory.step_size(interp, "is-sgd-async", 12, 3)
    kw = {"m": 12, "tau": 3, "batch": 4, "step": step, "iters": 200}
    assert experiments.async_mean_check(interp, straggler, **kw)["z"] < 4
    monkeypatch.setattr(rules.ISSGDAsync, "arrive", wrong)
    assert experiments.async_mean_check(interp, straggler, **kw)["z"] > 8


# ---------------------------------------------------------------- epochs
def test_epoch_ratios_multiply_to_the_run_and_average_to_epoch_rate(het):
    model = Speeds((1.0, 1.0, 1.0, 0.5), seed=0)
    M = model.max_delay(4)
    h = blockcd.run(het, "is-sgd-async", m=12, tau=3, iters=600, seed=0, delays=model)
    r = experiments.epoch_ratios(h, M)
    assert r.size == (h.dist2.size - 1) // M
    assert np.prod(r) == pytest.approx(h.dist2[r.size * M] / h.dist2[0], rel=1e-10)
    assert np.exp(np.mean(np.log(r))) == pytest.approx(epoch_rate(h, M), rel=1e-12)


# ---------------------------------------------------------------- validation
def test_validation(het, straggler):
    with pytest.raises(ValueError, match="least squares"):
        experiments.expected_async_iterate(problems.synthetic(4, 20, 12, loss="logistic", lam=0.1, seed=0),
                                           straggler, 0.1, 10)
    with pytest.raises(ValueError, match="step"):
        experiments.expected_async_iterate(het, straggler, 0.0, 10)
    with pytest.raises(ValueError, match="fewer than iters"):
        experiments.expected_async_iterate(het, straggler[:5], 0.1, 10)
    with pytest.raises(ValueError, match=r"\[0, 3\]"):
        experiments.expected_async_iterate(het, np.array([0, 4, 1]), 0.1, 3)
    with pytest.raises(TypeError, match="record"):
        experiments.expected_async_iterate(het, [0.5, 1.0], 0.1, 2)
    with pytest.raises(ValueError, match="x0"):
        experiments.expected_async_iterate(het, straggler, 0.1, 2, x0=np.zeros(3))
    with pytest.raises(ValueError, match="seeds"):
        experiments.async_mean_check(het, straggler, m=12, tau=3, step=0.1, iters=5, seeds=(1, 1))
    with pytest.raises(ValueError, match="M"):
        experiments.epoch_ratios(blockcd.run(het, "is-sgd-async", m=12, tau=3, iters=3, seed=0), 10)
    with pytest.raises(TypeError, match="history"):
        experiments.epoch_ratios(np.ones(5), 2)


# ---------------------------------------------------------------- the message check: one residual per arrival
def _long_step(self, s, i, coords, values, scale, step):
    # the master's step 10% too long: the mean of the last iterate moves by about 4 standard errors only
    return _ORIGINAL(self, s, i, coords, values, scale, 1.1 * step)


def _fresh_gradient(self, s, i, coords, values, scale, step):
    # delays ignored in the gradient: every worker computes on the current average, while the local
    # iterate is still built from the point the master last sent it
    if not hasattr(s, "H"):
        s.H = s.Z.copy()
    new = s.H[i].copy()
    if coords is None:
        new -= step * scale * values
    else:
        new[coords] -= step * scale * values
    s.w += (new - s.X[i]) / s.n
    s.X[i] = new
    s.H[i] = self.iterate(s)
    s.Z[:] = self.iterate(s)
    return s.H[i]


def test_the_message_check_passes_the_library_and_estimates_its_step(interp, straggler):
    # a t test with 39 degrees of freedom: |t| > 4 has probability about 3e-4 for a correct master
    step = theory.step_size(interp, "is-sgd-async", 12, 3)
    out = experiments.async_message_check(interp, straggler, m=12, tau=3, batch=4, step=step, iters=200)
    assert out["z"] < 4 and out["delay_z"] < 4 and out["runs"].shape == out["delay_runs"].shape == (40,)
    assert abs(out["mean"]) < 4 * out["se"] < 0.1     # the relative step error, within 4 of its s.e.


@pytest.mark.parametrize("wrong", [_long_step, _naive, _unscaled, _undelayed],
                         ids=["step+10%", "naive", "unscaled", "undelayed"])
def test_a_wrong_master_fails_the_message_check(interp, straggler, monkeypatch, wrong):
    step = theory.step_size(interp, "is-sgd-async", 12, 3)
    monkeypatch.setattr(rules.ISSGDAsync, "arrive", wrong)
    out = experiments.async_message_check(interp, straggler, m=12, tau=3, batch=4, step=step, iters=200)
    assert max(out["z"], out["delay_z"]) > 4


def test_the_message_check_sees_delay_errors_at_equal_speeds(interp, monkeypatch):
    # no straggler (delays up to 6): the worker's new local iterate taken from the current average, and
    # the gradient computed on the current average (the delays ignored; kappa's mean is then 1)
    record = Speeds((1.0, 1.0, 1.0, 1.0), seed=0).arrivals(4, 200)[0]
    step = theory.step_size(interp, "is-sgd-async", 12, 3)
    kw = {"m": 12, "tau": 3, "batch": 4, "step": step, "iters": 200}
    assert experiments.async_message_check(interp, record, **kw)["z"] < 4
    monkeypatch.setattr(rules.ISSGDAsync, "arrive", _undelayed)
    assert experiments.async_message_check(interp, record, **kw)["z"] > 8
    monkeypatch.setattr(rules.ISSGDAsync, "arrive", _fresh_gradient)
    out = experiments.async_message_check(interp, record, **kw)
    assert out["delay_z"] > 4 and abs(out["delay_mean"] - 1) < 4 * out["delay_se"]

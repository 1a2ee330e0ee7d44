"""blockcd.network: the round-time model of chapter 9, its presets, and the time-optimal tau."""

from __future__ import annotations

import math

import numpy as np
import pytest

from blockcd import network, problems, theory

LINK = {"bandwidth": 10e9, "latency": 100e-6}


def test_presets_cover_the_stated_ranges():
    bw = [v["bandwidth"] for v in network.LINKS.values()]
    lat = [v["latency"] for v in network.LINKS.values()]
    assert min(bw) == 1e9 and max(bw) == 100e9
    assert min(lat) == 1e-6 and max(lat) == 1e-3
    sizes = list(network.MODELS.values())
    assert min(sizes) == 10**5 and max(sizes) == 10**9
    assert sizes == sorted(sizes)


def test_parameter_server_round_by_hand():
    # 4 workers, d = 1000 numbers of 32 bits, m = 10 blocks, tau = 2: each worker sends 200 numbers
    t = network.round_time(4, 1000, 10, 2, bandwidth=1e9, latency=1e-4, compute=0.02)
    assert t == pytest.approx(0.02 / 4 + 1e-4 + 32e-9 * 4 * 200, rel=1e-15)
    dense = network.round_time(4, 1000, 10, 10, bandwidth=1e9, latency=1e-4)
    assert dense == pytest.approx(1e-4 + 32e-9 * 4 * 1000, rel=1e-15)


def test_tau_m_over_n_makes_the_master_receive_d_numbers_for_every_n():
    for n in (2, 4, 8, 16, 32):
        assert network.numbers_received(n, 4096, 64, 64 // n) == 4096
        assert network.numbers_received(n, 4096, 64, 64) == n * 4096


def test_all_reduce_round_by_hand():
    n, d, m = 8, 1000, 16
    beta = 32 / 1e9
    dense = network.round_time(n, d, m, m, bandwidth=1e9, latency=1e-5, accounting="all-reduce")
    assert dense == pytest.approx(2 * 7 * 1e-5 + 2 * 7 / 8 * d * beta, rel=1e-15)
    sparse = network.round_time(n, d, m, 2, bandwidth=1e9, latency=1e-5, accounting="all-reduce")
    assert sparse == pytest.approx(7 * 1e-5 + 7 * 2 * (d / m) * beta, rel=1e-15)
    # at tau = m/n the all-gather moves half the bytes of the ring all-reduce
    half = network.round_time(n, d, m, m // n, bandwidth=1e9, latency=0.0, accounting="all-reduce")
    full = network.round_time(n, d, m, m, bandwidth=1e9, latency=0.0, accounting="all-reduce")
    assert half / full == pytest.approx(0.5, rel=1e-14)


@pytest.mark.parametrize("accounting", network.ACCOUNTING)
def test_round_time_is_c0_plus_c1_tau(accounting):
    n, d, m = 6, 3000, 30
    c0, c1 = network.round_cost_coefficients(n, d, m, compute=0.01, accounting=accounting, **LINK)
    taus = range(1, m)  # for all-reduce, tau = m is the ring all-reduce, off the line
    got = [network.round_time(n, d, m, t, compute=0.01, accounting=accounting, **LINK) for t in taus]
    np.testing.assert_allclose(got, [c0 + c1 * t for t in taus], rtol=1e-13)


def test_iterations_follow_the_m_over_n_rule():
    p = problems.synthetic(5, 40, 10, interpolating=True, cond=10, seed=2)
    for tau in (1, 2, 5, 10):
        ratio = network.iterations(p.kappa, p.r, 5, 10, tau) / network.iterations(p.kappa, p.r, 5, 10, 10)
        assert ratio == pytest.approx(theory.predicted_ratio(p, "ibcd", 10, tau), rel=1e-12)
    # the rate 1 - mu / (2 L(tau)) of chapter 4, to accuracy 1e-6
    K = network.iterations(p.kappa, p.r, 5, 10, 2, eps=1e-6)
    q = theory.rate(p, "ibcd", 10, 2)
    assert K == pytest.approx(2 * p.kappa * (1 + 4 * p.r / 5) * math.log(1e6), rel=1e-12)
    assert q ** K <= 1e-6 * 1.0000001  # log(1/q) >= 1 - q, so K iterations of rate q reach 1e-6


def test_time_to_accuracy_is_the_product():
    kw = dict(kappa=50.0, r=1.5, eps=1e-4, compute=0.1, **LINK)
    t = network.time_to_accuracy(8, 10**6, 64, 8, **kw)
    K = network.iterations(50.0, 1.5, 8, 64, 8, 1e-4)
    T = network.round_time(8, 10**6, 64, 8, compute=0.1, **LINK)
    assert t == pytest.approx(K * T, rel=1e-15)


@pytest.mark.parametrize("accounting", network.ACCOUNTING)
@pytest.mark.parametrize("name", list(network.LINKS))
def test_formula_tau_star_is_the_integer_minimiser(name, accounting):
    n, d, m, r = 16, 25_600_000, 1024, 2.0
    link = network.LINKS[name]
    kw = {"bandwidth": link["bandwidth"], "latency": link["latency"], "compute": 1e-8 * d, "accounting": accounting}
    star = network.optimal_tau(n, d, m, r=r, **kw)
    taus = np.arange(1, m)  # the all-gather branch (tau < m) for all-reduce
    tta = np.array([network.time_to_accuracy(n, d, m, int(t), kappa=100.0, r=r, **kw) for t in taus])
    best = int(taus[np.argmin(tta)])
    assert best in (math.floor(star), math.ceil(star)) or (star >= m - 1 and best == m - 1)


def test_tau_star_closed_form_against_m_over_n():
    n, d, m, r = 8, 10**7, 512, 1.5
    c0, _c1 = network.round_cost_coefficients(n, d, m, compute=0.05, **LINK)
    beta = 32 / LINK["bandwidth"]
    star = network.optimal_tau(n, d, m, r=r, compute=0.05, **LINK)
    assert star == pytest.approx(m / n * math.sqrt(r / (1 - r / n) * c0 / (beta * d)), rel=1e-12)


def test_validation_names_the_parameter():
    with pytest.raises(ValueError, match="tau must be an integer in \\[1, 8\\]"):
        network.round_time(2, 64, 8, 9, **LINK)
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        network.round_time(2, 64, 8, 1, bandwidth=0.0, latency=1e-6)
    with pytest.raises(ValueError, match="latency must be >= 0"):
        network.round_time(2, 64, 8, 1, bandwidth=1e9, latency=-1.0)
    with pytest.raises(ValueError, match="accounting must be one of"):
        network.round_time(2, 64, 8, 1, accounting="gossip", **LINK)
    with pytest.raises(ValueError, match="r must be in \\[1, n\\]"):
        network.iterations(10.0, 3.0, 2, 8, 1)
    with pytest.raises(TypeError, match="n must be an integer"):
        network.round_time(2.5, 64, 8, 1, **LINK)
    with pytest.raises(ValueError, match="m must be an integer in \\[1, 64\\]"):
        network.numbers_received(2, 64, 65, 1)


@pytest.mark.parametrize("accounting", network.ACCOUNTING)
def test_compute_that_falls_with_tau_is_on_the_round_cost_line(accounting):
    # T_compute(tau) = T_c (rho + (1 - rho) tau/m): a worker computes only the partial derivatives it sends
    n, d, m, Tc = 8, 10**6, 64, 0.25
    link = network.LINKS["10 Gbit/s cloud network, 100 us"]
    c0, c1 = network.round_cost_coefficients(n, d, m, compute=Tc, compute_fixed=0.5, accounting=accounting, **link)
    for tau in (1, 8, 63):
        T = network.round_time(n, d, m, tau, compute=Tc, compute_fixed=0.5, accounting=accounting, **link)
        assert T == pytest.approx(c0 + c1 * tau, rel=1e-13)
        full = network.round_time(n, d, m, tau, compute=Tc, accounting=accounting, **link)
        assert full - T == pytest.approx(Tc / n * 0.5 * (1 - tau / m), rel=1e-12)  # the compute saved
    # at tau = m every worker computes its whole gradient, whatever rho
    assert network.round_time(n, d, m, m, compute=Tc, compute_fixed=0.3, **link) == \
        network.round_time(n, d, m, m, compute=Tc, **link)
    with pytest.raises(ValueError, match="compute_fixed must be <= 1"):
        network.round_time(n, d, m, 1, compute=Tc, compute_fixed=1.5, **link)
    with pytest.raises(ValueError, match="compute_fixed must be >= 0"):
        network.round_cost_coefficients(n, d, m, compute=Tc, compute_fixed=-0.1, **link)

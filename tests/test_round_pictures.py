"""Claims of chapter 9's round picture and preset table: the segments of a round add up to the round
time, and the brute-force optimum over the presets sits where the closed form says."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from blockcd import network, plotting

LINK = network.LINKS["10 Gbit/s cloud network, 100 us"]
D = network.MODELS["ResNet-50, 2.6 x 10^7"]


@pytest.mark.parametrize("tau", [1, 8, 64])
@pytest.mark.parametrize("rho", [1.0, 0.5])
def test_round_segments_add_up_to_round_time(tau, rho):
    comp = network.COMPUTE_PER_PARAMETER * D
    segs = network.round_segments(8, D, 64, tau, compute=comp, compute_fixed=rho, **LINK)
    names = [s for s, _ in segs]
    assert names == ["compute", "latency"] + [f"worker {i}" for i in range(8)]
    total = sum(t for _, t in segs)
    assert math.isclose(total, network.round_time(8, D, 64, tau, compute=comp, compute_fixed=rho, **LINK),
                        rel_tol=1e-12)
    c0, c1 = network.round_cost_coefficients(8, D, 64, compute=comp, compute_fixed=rho, **LINK)
    assert math.isclose(total, c0 + c1 * tau, rel_tol=1e-12)


def test_round_segments_broadcast_is_alpha_plus_beta_d():
    segs = network.round_segments(5, 1000, 10, 2, broadcast=True, **LINK)
    assert segs[-1][0] == "broadcast"
    beta = network.BITS_PER_NUMBER / LINK["bandwidth"]
    assert math.isclose(segs[-1][1], LINK["latency"] + beta * 1000, rel_tol=1e-12)
    # the messages of tau = m/n add up to one gradient, beta d
    assert math.isclose(sum(t for s, t in segs if s.startswith("worker")), beta * 1000, rel_tol=1e-12)


def test_round_segments_validates():
    with pytest.raises(ValueError, match="tau"):
        network.round_segments(4, 1000, 10, 11, **LINK)
    with pytest.raises(TypeError, match="broadcast"):
        network.round_segments(4, 1000, 10, 5, broadcast="yes", **LINK)


def test_round_timeline_draws_the_round_time():
    comp = network.COMPUTE_PER_PARAMETER * D
    rows = {f"tau = {t}": network.round_segments(8, D, 64, t, compute=comp, broadcast=True, **LINK)
            for t in (64, 8)}
    fig, ax = plt.subplots()
    plotting.round_timeline(rows, ax)
    for t in (64, 8):
        assert math.isclose(ax.timeline_totals[f"tau = {t}"],
                            network.round_time(8, D, 64, t, compute=comp, **LINK), rel_tol=1e-12)
    # 2 rows of 2 + 8 + 1 segments
    assert len(ax.patches) == 22
    plt.close(fig)
    with pytest.raises(TypeError, match="rows"):
        plotting.round_timeline({})
    with pytest.raises(ValueError, match="seconds"):
        plotting.round_timeline({"a": [("compute", -1.0)]})


def test_preset_optima_brute_force_at_floor_or_ceiling():
    rows = network.preset_optima(16, 256, r=1.6)
    assert len(rows) == len(network.LINKS) * len(network.MODELS)
    for row in rows:
        star = row["tau_star"]
        assert row["brute"] in (math.floor(star), math.ceil(star), 256, 1)
        closed = math.sqrt(1.6 / (1 - 1.6 / 16) * row["fixed_over_gradient"])
        assert math.isclose(row["ratio"], min(max(closed, 16 / 256), 16.0), rel_tol=1e-12)


def test_preset_optima_validates():
    with pytest.raises(ValueError, match="m"):
        network.preset_optima(16, 10**6, r=1.6)
    with pytest.raises(ValueError, match="r must be"):
        network.preset_optima(16, 64, r=20.0)


def test_round_messages_draws_the_bytes_of_a_round():
    fig, ax = plt.subplots()
    plotting.round_messages(4, 100, 20, 5, ax, label="tau = m/n")
    # 8 tau d / m up per worker, n times that into the master, 8 d down
    assert ax.message_bytes == {"up": 200.0, "into_master": 800.0, "down": 800.0}
    arrows = [t for t in ax.texts if isinstance(t, matplotlib.text.Annotation)]
    assert len(arrows) == 2 * 4                        # one message down and one up per worker
    assert len(ax.texts) - len(arrows) == 4 + 1 + 1    # workers, master, the line on top
    plt.close(fig)
    with pytest.raises(ValueError, match="tau"):
        plotting.round_messages(4, 100, 20, 21)
    with pytest.raises(TypeError, match="label"):
        plotting.round_messages(4, 100, 20, 5, label=3)

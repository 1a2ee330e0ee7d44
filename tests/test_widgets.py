"""The explorers of blockcd.widgets: they build, their controls stay consistent, and they plot the library's numbers.

Callbacks are called directly (no browser, Agg backend): moving a control
through ``.value`` triggers the same observer a slider does.  No timing is
asserted here; ``python -m tests.live --bench`` measures the latency.
"""

from __future__ import annotations

import math
import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from conftest import assert_mc

import blockcd
from blockcd import network, plotting, problems, theory, widgets
from blockcd.methods import BYTES_PER_NUMBER


def synthetic_like_the_explorers(kind, n, d, split="contiguous", seed=0):
    """The synthetic problems as the convergence_explorer docstring documents them."""
    rows = max(min(100, math.ceil(min(2000, 160000 // d) / n)), math.ceil(2 * d / n))
    extra = {"ridge": {}, "interpolating": {"interpolating": True}, "heterogeneous": {"heterogeneity": 1.0}}[kind]
    return problems.synthetic(n, rows, d, cond=10, split=split, seed=seed, **extra)


@pytest.mark.parametrize(("n", "d", "rows"), [(10, 40, 100), (20, 40, 100), (64, 40, 32), (10, 200, 80),
                                              (64, 200, 13), (4, 200, 100), (64, 150, 17)])
def test_the_explorers_problems_are_the_documented_ones_and_stay_small(n, d, rows):
    """At most 2000 rows and 160,000 entries (at least 2d rows), as the convergence_explorer docstring says."""
    from blockcd.widgets.cache import cached_problem

    p = cached_problem("heterogeneous", n, d, "contiguous", 0)
    q = synthetic_like_the_explorers("heterogeneous", n, d)
    assert p.N == q.N == n * rows
    assert np.array_equal(p.x_star, q.x_star)
    assert p.N * d <= 160_000 + n * d or p.N <= 2 * d + n


@pytest.fixture(scope="module")
def conv():
    return widgets.convergence_explorer("ibcd", n=5, tau=4, iters=150, problem="interpolating")


@pytest.mark.parametrize("name", list(widgets.EXPLORERS))
def test_builders_construct_and_draw(name):
    kw = {"time": {}, "tradeoff": {"n": 4, "m": 8, "tau": 2, "d": 8}}.get(name, {"n": 4})
    ex = widgets.EXPLORERS[name](**kw)
    assert ex.image.value[:8] == b"\x89PNG\r\n\x1a\n", "the live figure is not a PNG"
    assert ex.info.value, "no text under the figure"
    assert "error" not in ex.last, f"default settings failed: {ex.last.get('error')}"
    assert len(ex.timings) == 1
    assert re.fullmatch(rf"<blockcd {name} explorer: .*>", repr(ex.widget))


def test_unknown_name_and_bad_defaults_are_refused():
    with pytest.raises(ValueError, match="name must be one of"):
        widgets.show("histogram")
    with pytest.raises(ValueError, match="tau must be an integer in"):
        widgets.convergence_explorer(m=8, tau=9)
    with pytest.raises(ValueError, match="step_scale must be in"):
        widgets.convergence_explorer(step_scale=1000.0)
    with pytest.raises(ValueError, match="method must be one of"):
        widgets.convergence_explorer("adam")
    with pytest.raises(ValueError, match="problem must be one of"):
        widgets.playground("mnist")


def test_tau_follows_m_down(conv):
    c = conv.controls
    conv.set(m=40, tau=10)
    c["m"].value = 6
    assert c["tau"].max == 6 and c["tau"].value == 6
    c["m"].value = 40
    assert c["tau"].max == 40 and c["tau"].value == 6, "raising m must not move tau"
    conv.set(m=40, tau=4)


@pytest.mark.parametrize("name", ["template", "variance", "tradeoff"])
def test_tau_follows_m_in_every_explorer(name):
    kw = {"n": 4, "m": 8, "tau": 6}
    if name == "tradeoff":
        kw["d"] = 8
    ex = widgets.EXPLORERS[name](**kw)
    ex.controls["m"].value = 3
    assert ex.controls["tau"].value == 3
    assert ex.last.get("error") is None


def test_playground_m_follows_d_and_the_data_set():
    pg = widgets.playground(n=4, d=40, m=40, tau=20, iters=100)
    c = pg.controls
    c["d"].value = 12
    assert c["m"].max == 12 and c["m"].value == 12 and c["tau"].value == 12
    c["problem"].value = "breast cancer"  # 30 features
    assert c["m"].max == 30 and c["d"].disabled
    assert pg.last["history"].d == 30
    c["problem"].value = "interpolating"
    assert not c["d"].disabled and c["m"].max == 12


def test_divergence_shows_a_message_not_nans():
    ex = widgets.convergence_explorer("ibcd", n=5, tau=4, iters=150, step_scale=256.0)
    assert "Diverged" in ex.info.value and "256" in ex.info.value
    assert isinstance(ex.last["error"], blockcd.DivergenceError)
    assert "Diverged" in ex.art["text"].get_text()
    for key in ("run_it", "run_sent", "bound"):
        assert len(ex.art[key].get_xdata()) == 0, f"{key} still holds data after a divergence"
    ex.controls["step_scale"].value = 1.0
    assert "error" not in ex.last and ex.art["text"].get_text() == ""
    assert np.all(np.isfinite(ex.art["run_it"].get_ydata()))


def test_is_asgd_off_interpolation_explains_itself():
    ex = widgets.convergence_explorer("is-asgd", n=5, problem="ridge", iters=50)
    assert "interpolation" in ex.info.value
    assert isinstance(ex.last["error"], ValueError)


def test_the_paper_methods_in_the_explorers():
    """IBGD and distributed ISAGA run in the convergence explorer on any split; shared-data ISAGA runs on the
    shared split ('identical') and says why elsewhere; the trade-off explorer (no split control, each worker
    its own rows) does not offer it."""
    for method in ("ibgd", "isaga-local"):
        ex = widgets.convergence_explorer(method, n=5, iters=60, problem="ridge")
        assert "error" not in ex.last, ex.last.get("error")
    ex = widgets.convergence_explorer("isaga-shared", n=5, iters=60, problem="ridge", split="identical")
    assert "error" not in ex.last, ex.last.get("error")
    ex.set(split="contiguous")
    assert isinstance(ex.last["error"], ValueError) and "shared data" in ex.info.value
    options = widgets.tradeoff_explorer(n=4, m=8, tau=2, d=8).controls["method"].options
    assert "ibgd" in options and "isaga-local" in options and "isaga-shared" not in options
    with pytest.raises(ValueError, match="method must be one of"):
        widgets.tradeoff_explorer("isaga-shared", n=4, m=8, tau=2, d=8)


@pytest.mark.parametrize("method", ["ibcd", "isega", "is-sgd"])
def test_plotted_curve_is_the_run_history(conv, method):
    conv.set(method=method, tau=5, step_scale=2.0, split="iid", seed=3)
    p = synthetic_like_the_explorers("interpolating", 5, 40, split="iid", seed=3)
    step = 2.0 * theory.step_size(p, method, 40, 5)
    h = blockcd.run(p, method, m=40, tau=5, step=step, iters=150, seed=3)
    dense = blockcd.run(p, method, m=40, tau=40, iters=150, seed=3)
    for art, run in (("run_it", h), ("dense_it", dense)):
        # the drawn curve is the run's, stopped only at the first point under FLOOR (below the panel, 1e-12)
        y = conv.art[art].get_ydata()
        # the same run to round-off: the explorer and this test may sum in another order (BLAS threads,
        # processor kernels), which moves the last digits and grows over 150 steps (6e-14 seen); a
        # different step, seed or mask would differ at the first iterations by far more than 1e-9
        np.testing.assert_allclose(y, (run.dist2 / run.dist2[0])[: len(y)], rtol=1e-9, atol=0)
        assert len(y) == run.iters + 1 or y[-1] <= widgets.cache.FLOOR < y[-2], (art, len(y), y[-2:])
        assert widgets.cache.FLOOR < 1e-12 == conv.figure.axes[0].get_ylim()[0]
        np.testing.assert_array_equal(conv.art[art].get_xdata(), np.arange(len(y)))
    n = len(conv.art["run_sent"].get_xdata())
    np.testing.assert_array_equal(conv.art["run_sent"].get_xdata(), (h.bytes_up / BYTES_PER_NUMBER)[:n])
    assert conv.figure.axes[0].get_xlim() == (0, 150), "the iteration axis is not the budget"
    assert len(conv.art["bound"].get_xdata()) == 0, "the bound is drawn for a step above the theory's"
    conv.set(method="ibcd", tau=4, step_scale=1.0, split="contiguous", seed=0)


def test_bound_is_the_theory_rate(conv):
    conv.set(method="ibcd", tau=4, step_scale=1.0)
    p = synthetic_like_the_explorers("interpolating", 5, 40)
    q = theory.rate(p, "ibcd", 40, 4)
    k = np.arange(151)
    np.testing.assert_allclose(conv.art["bound"].get_ydata(), q**k, rtol=1e-12)
    # the theorem holds for the expectation; one run stays below it here with a wide margin
    assert np.all(conv.art["run_it"].get_ydata() <= q**k * 1.0001)


def test_template_bars_count_what_the_master_receives():
    ex = widgets.template_explorer(n=5, m=20, tau=3, d=40, iters=60)
    dense, sparse = (b.get_height() for b in ex.art["bars"])
    assert dense == 5 * 40
    assert sparse == pytest.approx(5 * 3 * 40 / 20, rel=1e-12)  # equal blocks of 2 coordinates
    ex.controls["n"].value = 10
    assert ex.art["bars"][0].get_height() == 400


def test_variance_explorer_matches_the_key_lemma():
    ex = widgets.variance_explorer(n=6, m=12, tau=3, d=24, trials=2000, seed=1)
    meas, se, pred = (np.array(ex.last[k]) for k in ("measured", "stderr", "predicted"))
    # Monte Carlo over 2000 independent draws: within Z standard errors (conftest)
    assert_mc(meas, se, pred, what="variance explorer")
    G = widgets.cache.variance_vectors(6, 24, 1)
    norm = np.mean(np.sum(G**2, axis=1))
    assert pred[0] == pytest.approx(theory.aggregation_variance(G, 12, 3) / norm, rel=1e-12)
    assert pred[0] == pytest.approx((12 / 3 - 1) / 6, rel=1e-12)
    ex.controls["tau"].value = 12
    assert "zero" in ex.info.value


def test_tradeoff_counts_are_iters_to():
    ex = widgets.tradeoff_explorer("ibcd", n=4, m=8, tau=2, d=8, eps=1e-3)
    taus, K = ex.last["taus"], ex.last["iterations"]
    assert taus[0] == 1 and taus[-1] == 8
    p = synthetic_like_the_explorers("interpolating", 4, 8)
    for t, k in zip(taus, K):
        h = blockcd.run(p, "ibcd", m=8, tau=t, iters=int(k) + 1)
        assert h.iters_to(1e-3) == k
    np.testing.assert_allclose(ex.last["predicted"],
                               [theory.predicted_ratio(p, "ibcd", 8, t) * K[-1] for t in taus], rtol=1e-12)
    info = widgets.cache.tradeoff_sweep.cache_info()
    ex.controls["tau"].value = 3  # not on the grid: one extra run, the sweep itself comes from the cache
    after = widgets.cache.tradeoff_sweep.cache_info()
    assert (after.hits, after.misses) == (info.hits + 1, info.misses)
    assert ex.last["current"] == blockcd.run(p, "ibcd", m=8, tau=3, iters=2000).iters_to(1e-3)


def test_time_explorer_uses_the_network_model():
    ex = widgets.time_explorer(n=16, m=1024)
    p = ex.params()
    d = round(p["d"])
    bw, lat = p["bandwidth"] * 1e9, p["latency"] * 1e-6
    c0, c1 = network.round_cost_coefficients(16, d, 1024, bandwidth=bw, latency=lat, compute=1e-8 * d)
    assert ex.last["tau_star"] == theory.time_optimal_tau(1.0, 2.0, 16, 1024, c0, c1)
    i = 7
    tau = int(ex.last["taus"][i])
    assert ex.last["parameter_server"][i] == network.time_to_accuracy(
        16, d, 1024, tau, bandwidth=bw, latency=lat, kappa=100.0, r=2.0, compute=1e-8 * d)
    # a preset sets the sliders; sliders off every preset blank the dropdown, and back on one name it again
    ex.controls["link"].value = "100 Gbit/s InfiniBand, 1 us"
    assert ex.controls["bandwidth"].value == pytest.approx(100) and ex.controls["latency"].value == pytest.approx(1)
    ex.controls["bandwidth"].value = 10
    assert ex.controls["link"].value is None
    ex.controls["latency"].value = 100
    assert ex.controls["link"].value == "10 Gbit/s cloud network, 100 us"
    ex.controls["d"].value = 1e6
    assert ex.controls["model"].value is None
    ex.controls["model"].value = "BERT-large, 3.4 x 10^8"
    assert round(ex.controls["d"].value) == 340_000_000


def test_one_redraw_per_move():
    ex = widgets.convergence_explorer(n=4, m=8, tau=6, d=8, iters=50)
    ex.timings.clear()
    ex.controls["m"].value = 4  # clamps tau too: still one redraw
    assert len(ex.timings) == 1


def test_animation_is_small_deterministic_and_kernel_free():
    ex = widgets.variance_explorer(n=4, m=8, tau=2, d=8, trials=50)
    html = ex.animation()
    assert html.startswith(widgets.SWEEP_START) and html.endswith(widgets.SWEEP_END)
    frames = re.findall(r'frames\[\d+\] = "data:image/png;base64,', html)
    assert 2 <= len(frames) <= 12
    assert "font-awesome" not in html and 'class="fa' not in html
    assert not re.search(r"[0-9a-f]{32}", html), "a random element id is left in the HTML"
    assert 'class="animation"' in html and "anim-slider" in html
    assert ex.last["measured"], "building the sweep changed the live explorer's state"


def test_show_displays_sweep_note_and_widget(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    widgets.show("convergence", method="isega", n=4, m=8, d=8, tau=2, iters=40)
    assert len(shown) == 3
    assert widgets.SWEEP_START in shown[0].html and shown[0].png  # the player and its static frame
    note = " ".join(map(str, shown[1].values()))  # a raw mime bundle (HTML, and text for the PDF)
    assert "launch button" in note and "jupyter lab" in note
    ex = shown[2]
    assert ex.controls["method"].value == "isega" and ex.controls["tau"].value == 2
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == "<blockcd convergence explorer: move the controls in a live notebook>"


def test_blitted_frame_equals_a_full_redraw():
    from io import BytesIO

    from PIL import Image

    ex = widgets.convergence_explorer(n=4, m=8, tau=2, d=8, iters=60)
    key = ex._key
    ex.controls["tau"].value = 5  # same axes: drawn over the cached background
    blitted = np.asarray(Image.open(BytesIO(ex.image.value)))
    assert ex._key == key
    ex._background = None  # force a full draw of the same state, under the settings redraws use
    with matplotlib.rc_context(plotting.RC_PARAMS):
        full = np.asarray(Image.open(BytesIO(ex._render())))
    np.testing.assert_array_equal(blitted, full)


def test_is_asgd_step_slider_stops_at_the_last_half_octave_below_one_over_L():
    ex = widgets.convergence_explorer("is-asgd", problem="interpolating", n=4, d=8, iters=50)
    c = ex.controls
    p = synthetic_like_the_explorers("interpolating", 4, 8)
    step0 = theory.step_size(p, "is-asgd", c["m"].value, c["tau"].value)
    top = 2.0 ** c["step_scale"].max
    assert top * step0 <= 1 / p.L * (1 + 1e-9) < 2**0.5 * top * step0, (top, step0, 1 / p.L)
    c["step_scale"].value = 256  # clamped to the top: the method's constants stay defined
    assert c["step_scale"].value == pytest.approx(top)
    assert "error" not in ex.last, ex.last.get("error")
    c["method"].value = "ibcd"  # other methods keep the whole range
    assert c["step_scale"].max == 8


# --------------------------------------------------------------------------- what makes redraws quick
def test_masks_drawn_ahead_are_those_drawn_one_by_one():
    """The simulator draws tau-nice masks several iterations at once: the same masks, bit for bit."""
    from blockcd.blocks import BlockSampler

    for sampling in ("independent", "shared"):
        for m, tau in ((40, 1), (40, 3), (7, 6)):
            one = BlockSampler(5, m, tau, seed=3, sampling=sampling)
            ahead = BlockSampler(5, m, tau, seed=3, sampling=sampling)
            chunks = np.concatenate([ahead.masks_ahead(k, c) for k, c in ((0, 4), (4, 1), (5, 7))])
            assert np.array_equal(chunks, np.stack([one.masks(k) for k in range(12)]))
            assert np.array_equal(ahead.masks_ahead(30, 2), np.stack([one.masks(30), one.masks(31)]))


@pytest.mark.parametrize("method", ["ibcd", "isega", "is-sgd"])
def test_masks_drawn_by_a_second_thread_give_the_same_run_bit_for_bit(monkeypatch, method):
    """Large draws come from a worker thread chunks ahead; the run is the one drawn in line, bit for bit,
    also when it stops early (until) or is interrupted, and the thread is gone after either."""
    import threading

    from blockcd import drawing

    p = problems.synthetic(40, 25, 200, cond=10, heterogeneity=0.5, seed=1)  # 1000 rows: partial sends
    kw = {"m": 200, "tau": 2, "iters": 300, "seed": 4}
    if method == "is-sgd":
        kw["batch"] = 2

    def hist(**more):
        h = blockcd.run(p, method, **kw, **more)
        return h.x, h.dist2, h.bytes_up, h.iters

    monkeypatch.setattr(drawing, "_cores", lambda: 2)
    monkeypatch.setattr(drawing, "THREAD_CHUNK", 3 * 40 * 200 + 7)  # chunks of 3 iterations: 100 hand-overs
    threaded = [hist(), hist(until=0.9)]
    seen = []
    real = drawing._Chunks.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        seen.append((self.threaded, self.per))

    monkeypatch.setattr(drawing._Chunks, "__init__", spy)
    hist()
    assert seen == [(True, 3)]
    monkeypatch.setattr(drawing, "THREAD_UNIFORMS", 10**9)  # in line
    inline = [hist(), hist(until=0.9)]
    assert seen[-1] == (False, drawing.AHEAD_UNIFORMS // (40 * 200))
    for a, b in zip(threaded, inline):
        for u, v in zip(a, b):
            assert np.array_equal(u, v)
    assert threaded[1][3] < 300  # the early stop happened
    monkeypatch.setattr(drawing, "THREAD_UNIFORMS", 1)
    with pytest.raises(drawing.Interrupted), drawing.interrupt_when(lambda: True):
        blockcd.run(p, method, **kw)
    for t in threading.enumerate():
        if t.name.startswith("blockcd masks"):
            t.join(timeout=10)
    assert not [t for t in threading.enumerate() if t.name.startswith("blockcd masks")]


def test_a_run_stops_when_its_thread_says_it_is_no_longer_wanted():
    """An explorer's redraw runs inside drawing.interrupt_when(check); blockcd.run raises Interrupted once
    check returns True, and the check is gone after the block."""
    from blockcd import drawing

    p = synthetic_like_the_explorers("ridge", 4, 12)
    calls = []
    with pytest.raises(drawing.Interrupted), drawing.interrupt_when(lambda: calls.append(1) or len(calls) > 2):
        blockcd.run(p, "ibcd", m=12, tau=3, iters=500)
    assert len(calls) == 3  # asked every drawing.INTERRUPT_EVERY iterations, stopped at the third
    h = blockcd.run(p, "ibcd", m=12, tau=3, iters=500)  # no check: runs to the end
    assert h.iters == 500


def test_a_moved_on_redraw_is_abandoned_mid_run():
    """A background redraw whose controls moved on stops inside its run and draws nothing."""
    ex = widgets.convergence_explorer("isega", n=5, tau=4, iters=2000, problem="heterogeneous", split="sorted")
    drawn = len(ex.timings)
    image = ex.image.value
    ex._syncing = True  # move a control without the observer's redraw
    ex.controls["seed"].value = 3
    ex._syncing = False
    ex.refresh(stale=lambda: True)
    assert len(ex.timings) == drawn and ex.image.value is image


def test_the_kernel_free_sweep_is_drawn_at_the_width_the_book_shows_it():
    """Its frames are SWEEP_PX pixels wide from a figure at most SWEEP_INCHES wide (11-point labels at
    about 15 px when shown at the column's width), and the image is never shown wider than drawn."""
    import base64
    import io
    import re

    from PIL import Image

    from blockcd.widgets.player import SWEEP_INCHES, SWEEP_PX

    html = widgets.variance_explorer(n=4, m=8, tau=2, d=8).animation()
    frames = re.findall(r'data:image/png;base64,([^"]+)"', html)
    assert frames
    img = Image.open(io.BytesIO(base64.b64decode(re.sub(r"[^A-Za-z0-9+/=]", "", frames[0]))))
    assert img.width == SWEEP_PX
    assert f'style="width:{SWEEP_PX}px;max-width:100%;height:auto"' in html
    # an 11-point label on a figure SWEEP_INCHES wide shown SWEEP_PX wide: at least 11 px tall
    assert 11 / 72 * SWEEP_PX / SWEEP_INCHES >= 11


# --------------------------------------------------------------------------- computing ahead
def test_the_values_ahead_are_the_next_steps_of_the_last_moved_slider_then_one_back():
    ex = widgets.convergence_explorer("ibcd", n=10, d=40, iters=50)
    assert ex.moved is None and ex.neighbours() == []
    ex.controls["n"].value = 61
    assert ex.moved == ("n", 1)
    assert [p["n"] for p in ex.neighbours()] == [62, 63, 64, 60]  # the slider ends at 64
    assert all(p["tau"] == ex.params()["tau"] and p["m"] == 40 for p in ex.neighbours())
    ex.controls["step_scale"].value = 0.5  # a log slider (base 2, half-octave steps) moved down
    assert ex.moved == ("step_scale", -1)
    # exactly the front end's values: base ** (a whole number of steps)
    assert [p["step_scale"] for p in ex.neighbours()] == [2**-1.5, 2**-2.0, 2**-2.5, 2**-0.5]
    ex._syncing = True  # a value the explorer sets itself (a clamp) is not the reader's move
    ex.controls["tau"].value = 3
    ex._syncing = False
    assert ex.moved == ("step_scale", -1)
    ex.controls["method"].value = "isega"  # a dropdown has no "next value": the last slider stays
    assert ex.moved == ("step_scale", -1)


@pytest.mark.parametrize("slider, start, ahead", [
    ("m", 11, [(10, 10), (9, 9), (8, 8), (12, 11)]),  # tau follows m down; back up, tau stays where it was
    ("d", 11, [(10, 10), (9, 9), (8, 8), (11, 11)]),  # m follows d, and tau follows m; back up, both stay
])
def test_the_values_ahead_are_what_the_controls_hold_after_the_move(slider, start, ahead):
    def fresh():
        ex = widgets.EXPLORERS["playground"](n=4, d=12, m=12, tau=12, iters=100)
        ex.controls[slider].value = start
        return ex

    ex = fresh()
    assert (ex.params()["m"], ex.params()["tau"]) == (11, 11)
    values = ex.neighbours()
    assert [(p["m"], p["tau"]) for p in values] == ahead
    for p in values:  # each is exactly what the controls hold once the reader makes that move
        ex = fresh()
        ex.controls[slider].value = p[slider]
        assert ex.params() == p


def test_values_computed_ahead_fill_the_caches_with_the_numbers_a_move_computes():
    """In a live kernel, after a move of n, the runs at n + 1 ... n + 3 are in the caches when the reader
    gets there, and they are the runs blockcd.run gives for those settings, bit for bit."""
    from blockcd.widgets import cache

    ex = widgets.convergence_explorer("is-sgd", n=6, d=24, iters=120, seed=2)
    ex.background = True
    cache.cached_run.cache_clear()
    ex.controls["n"].value = 7
    assert ex.wait(60, ahead=True)
    assert cache.cached_run.cache_info().currsize == 2 * 5  # both runs at n = 7 and ahead: 8, 9, 10 and 6
    misses = cache.cached_run.cache_info().misses
    for n in (8, 9, 10):
        ex.background = False  # drawn now, in this thread (no computing ahead)
        ex.controls["n"].value = n
        assert cache.cached_run.cache_info().misses == misses
        p = cache.cached_problem("ridge", n, 24, "contiguous", 2)
        tau = ex.params()["tau"]
        h = blockcd.run(p, "is-sgd", m=24, tau=tau, step=theory.step_size(p, "is-sgd", 24, tau), iters=120,
                        seed=2, gap=False, until=cache.FLOOR)
        assert np.array_equal(ex.last["history"].dist2, h.dist2)


def test_computing_ahead_stops_when_a_control_moves_and_skips_values_that_fail():
    from blockcd.widgets import base

    ex = widgets.convergence_explorer("ibcd", n=10, d=40, iters=50)
    ex.controls["n"].value = 11
    done = []

    def prefetch(params):
        done.append(params["n"])
        if params["n"] == 12:
            raise ValueError("a setting the method does not support")  # skipped: the next one is computed
        base._MOVES[0] += 1  # the reader moves a control: the rest is not computed
        return True

    ex._prefetch = prefetch
    ex._ahead()
    assert done == [12, 13]


def test_explorers_with_quick_redraws_compute_nothing_ahead():
    ex = widgets.variance_explorer(n=4, m=8, tau=2, d=8)
    ex.controls["tau"].value = 3
    assert ex.neighbours() and not ex.computes_ahead
    with pytest.raises(NotImplementedError):
        ex._prefetch(ex.neighbours()[0])
    ex._prefetch = lambda params: pytest.fail("computed ahead")
    ex._ahead()


@pytest.mark.parametrize("name, kw", [
    ("template", {"n": 4, "m": 12, "d": 12, "iters": 80}),
    ("tradeoff", {"n": 4, "m": 12, "tau": 3, "d": 12, "eps": 1e-2}),
    ("convergence", {"n": 4, "d": 12, "iters": 80}),
    ("playground", {"n": 4, "d": 12, "iters": 100}),
])
def test_an_explorer_that_computes_ahead_draws_the_next_values_from_its_caches(name, kw, monkeypatch):
    """Every cache the redraw at n + 1 and n + 2 reads was filled ahead: moving there computes nothing new."""
    from blockcd.widgets import base, cache

    monkeypatch.setattr(base, "AHEAD_DELAY", 0.0)
    caches = [cache.cached_problem, cache.cached_run, cache.tradeoff_sweep, cache.iterations_to,
              cache.predicted_curve]
    ex = widgets.EXPLORERS[name](**kw)
    assert ex.computes_ahead
    ex.controls["n"].value = 5
    ex._ahead()
    misses = [c.cache_info().misses for c in caches]
    for n in (6, 7):
        ex.controls["n"].value = n
        assert "error" not in ex.last
        assert [c.cache_info().misses for c in caches] == misses

"""Chapter 13's kernel-free players (readable text at the book's column width, light frames, the figure untouched)
and chapter 12's straggler sweep."""

import base64
import io
import re
import types

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from blockcd import problems, run
from blockcd.asynchronous import Speeds, epoch_rate
from blockcd.experiments import straggler_sweep
from blockcd.reproduce import paper


def _sweep(panels=2, curves=3):
    fig, axes = plt.subplots(1, panels, figsize=(10, 3.8), squeeze=False)
    k = np.arange(200)
    for a, ax in enumerate(axes[0]):
        for j in range(curves):
            y = np.exp(-(j + 1) * k / 50)
            ax.semilogy(k, y, label=f"τ = {j + 1}")
            ax.fill_between(k, 0.9 * y, 1.1 * y, alpha=0.2)
        ax.set_xlabel("iterations")
        ax.set_ylabel("relative suboptimality")
        ax.text(0.97, 0.97, f"n = {a + 2}", transform=ax.transAxes, ha="right", va="top")
        ax.legend(fontsize=8)
    return fig


def _frames(html):
    return [Image.open(io.BytesIO(base64.b64decode(b)))
            for b in re.findall(r'frames\[\d+\] = "data:image/png;base64,([^"]+)"', html)]


def test_the_scrubber_draws_one_readable_panel_per_row_at_the_column_width():
    fig = _sweep()
    html = paper.scrubber(types.SimpleNamespace(figure=fig), dpi=90, width=7.2, panel_height=2.7, colors=32)
    frames = _frames(html)
    assert len(frames) == 3                                   # one frame per curve
    w, h = frames[0].size
    assert w == round(7.2 * 90) and h == round(2 * 2.7 * 90)  # two panels stacked, not side by side
    assert frames[0].mode == "P" and len(frames[0].getcolors()) <= 32
    assert "max-width: 100%" in html
    plt.close(fig)


def test_the_scrubber_leaves_the_figure_as_it_was_and_opens_no_figure():
    fig = _sweep()
    before = plt.get_fignums()
    size = fig.get_size_inches().copy()
    specs = [ax.get_subplotspec().get_geometry() for ax in fig.axes]
    alphas = [ln.get_alpha() for ax in fig.axes for ln in ax.get_lines()]
    fonts = [ax.xaxis.label.get_fontsize() for ax in fig.axes]
    paper.scrubber(types.SimpleNamespace(figure=fig), dpi=30)
    assert plt.get_fignums() == before
    assert np.array_equal(fig.get_size_inches(), size)
    assert [ax.get_subplotspec().get_geometry() for ax in fig.axes] == specs
    assert [ln.get_alpha() for ax in fig.axes for ln in ax.get_lines()] == alphas
    assert [ax.xaxis.label.get_fontsize() for ax in fig.axes] == fonts
    plt.close(fig)


def test_palette_frames_are_lighter_than_full_colour_ones():
    fig = _sweep()
    res = types.SimpleNamespace(figure=fig)
    light, full = paper.scrubber(res, dpi=60, colors=32), paper.scrubber(res, dpi=60, colors=0)
    assert _frames(full)[0].mode == "RGB"
    assert len(light) < 0.7 * len(full)
    plt.close(fig)


def test_a_player_shows_the_frame_it_names_where_it_cannot_play():
    # panels of 3 and 4 curves give 4 frames (matched from the last curve); frame -3 is the second, and
    # the PDF's picture (image/png) is that frame, byte for byte; the HTML keeps the player
    fig = _sweep(panels=1, curves=3)
    ax = fig.add_subplot(2, 1, 2)
    for j in range(4):
        ax.semilogy(np.arange(50), np.exp(-(j + 1) * np.arange(50) / 20), label=f"τ = {j}")
    ax.legend()
    res = types.SimpleNamespace(figure=fig)
    p = paper.player(res, frame=-3, dpi=30)
    bundle = p._repr_mimebundle_()
    assert (p.n_frames, p.frame) == (4, 1)
    assert base64.b64decode(bundle["image/png"]) == base64.b64decode(
        re.findall(r'frames\[1\] = "data:image/png;base64,([^"]+)"', bundle["text/html"])[0])
    assert "<script" in bundle["text/html"]
    with pytest.raises(ValueError, match="frame"):
        paper.player(res, frame=4, dpi=30)
    plt.close(fig)


@pytest.mark.parametrize("kw, err", [({"dpi": 10}, ValueError), ({"width": 0}, ValueError),
                                     ({"panel_height": -1.0}, ValueError), ({"fontsize": "big"}, TypeError),
                                     ({"colors": 1}, ValueError), ({"colors": 300}, ValueError)])
def test_the_scrubber_names_a_bad_parameter(kw, err):
    fig = _sweep(panels=1)
    with pytest.raises(err, match=next(iter(kw))):
        paper.scrubber(types.SimpleNamespace(figure=fig), **kw)
    plt.close(fig)


# ---- blockcd.experiments.straggler_sweep: chapter 12's Theorem 9 check as one call ----

def _async_problem():
    return problems.synthetic(4, 20, 20, interpolating=True, cond=5, seed=0)


def test_straggler_sweep_is_the_runs_it_describes():
    p = _async_problem()
    (row,) = straggler_sweep(p, [0.25], m=20, tau=5, batch=4, iters=3000, eps=1e-3)
    model = Speeds((1.0, 1.0, 1.0, 0.25), seed=0)
    h = run(p, "is-sgd-async", m=20, tau=5, batch=4, iters=3000, seed=0, delays=model, max_delay=model.max_delay(4))
    assert row["M"] == model.max_delay(4) and row["largest_delay"] <= row["M"]
    assert row["epoch_rate"] == epoch_rate(h, row["M"]) and np.array_equal(row["history"].dist2, h.dist2)
    assert row["arrivals"] == h.iters_to(1e-3) and row["time"] == h.times[row["arrivals"] - 1]
    assert row["per_arrival"] == pytest.approx(row["epoch_rate"] ** (1 / row["M"]), rel=1e-12)


def test_a_slower_straggler_slows_each_arrival_but_every_epoch_contracts():
    """Theorem 9's form: a contraction per epoch of M arrivals; per arrival the factor grows with M
    (deterministic at seed 0: no tolerance needed)."""
    rows = straggler_sweep(_async_problem(), (1.0, 0.1), m=20, tau=5, batch=4, iters=4000, eps=1e-6)
    assert rows[0]["M"] < rows[1]["M"]
    assert all(r["epoch_rate"] < 1 for r in rows)
    assert rows[0]["per_arrival"] < rows[1]["per_arrival"]


@pytest.mark.parametrize("kw, err, name", [({"slow_speeds": [0.0]}, ValueError, "slow_speeds"),
                                           ({"slow_speeds": [1.5]}, ValueError, "slow_speeds"),
                                           ({"slow_speeds": []}, ValueError, "slow_speeds"),
                                           ({"iters": 0}, ValueError, "iters"),
                                           ({"eps": -1.0}, ValueError, "eps"),
                                           ({"seed": -1}, ValueError, "seed")])
def test_straggler_sweep_names_a_bad_parameter(kw, err, name):
    args = {"slow_speeds": [0.5], "m": 20, "tau": 5, "batch": 4, "iters": 10, "eps": 1e-3} | kw
    with pytest.raises(err, match=name):
        straggler_sweep(_async_problem(), **args)

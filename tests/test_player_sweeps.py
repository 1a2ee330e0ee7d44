"""The explorers' kernel-free sweeps show what the text says: axes fixed across frames, legends off the
data, the variable the chapter talks about moving, a line saying what to watch, and playing on load."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from blockcd import widgets
from blockcd.widgets import base, player
from blockcd.widgets.canvas import axis_limits

SMALL = {
    "template": lambda: widgets.template_explorer(d=20, m=20, iters=120),
    "variance": lambda: widgets.variance_explorer(trials=40),
    "convergence": lambda: widgets.convergence_explorer(d=16, m=16, iters=80),
    "tradeoff": lambda: widgets.tradeoff_explorer(d=16, m=16, eps=1e-2),
    "time": lambda: widgets.time_explorer(),
    "playground": lambda: widgets.playground(d=16, m=16, iters=80),
    # at the chapter's own sizes (chapter 5: d = 40, 800 iterations), where IS-SGD's dense run sends
    # tens of thousands of numbers per worker and the x axis needs room for five-digit labels
    "convergence, chapter 5": lambda: widgets.convergence_explorer(method="is-sgd"),
    "template, chapter 1": lambda: widgets.template_explorer(),
    "variance, chapter 3": lambda: widgets.variance_explorer(),
    "playground, as the appendix shows it": lambda: widgets.playground(),
}


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.fixture(scope="module")
def sweeps():
    """For each explorer: per frame, the axis limits and whether a legend overlaps any axes; the watch line."""
    out = {}
    for name, build in SMALL.items():
        seen = {"limits": [], "overlap": [], "outside": [], "crowded": []}

        def fake_jshtml(fig, update, n_frames, name, fps=1.5, *, watch=None, autoplay=True, seen=seen):
            seen["watch"] = watch
            for i in range(n_frames):
                update(i)
                seen["limits"].append(axis_limits(fig))
                fig.canvas.draw()
                r = fig.canvas.get_renderer()
                fb = fig.bbox
                for a, ax in enumerate(fig.axes):
                    for axis in ("x", "y"):
                        boxes = [t.get_window_extent(r) for t in getattr(ax, f"get_{axis}ticklabels")()
                                 if t.get_visible() and t.get_text()]
                        seen["crowded"] += [(i, a, axis) for b1, b2 in zip(boxes, boxes[1:]) if _overlaps(b1, b2)]
                for ax in fig.axes:
                    leg = ax.get_legend()
                    if leg is None:
                        continue
                    lb = leg.get_window_extent(r)
                    seen["overlap"].append(any(_overlaps(lb, a.get_window_extent(r)) for a in fig.axes))
                    seen["outside"].append(lb.x0 < fb.x0 - 1 or lb.x1 > fb.x1 + 1 or lb.y1 > fb.y1 + 1)
            return ""

        ex = build()
        seen["frames"] = ex._frames()
        mp = pytest.MonkeyPatch()
        mp.setattr(base, "jshtml", fake_jshtml)
        try:
            ex.animation()
        finally:
            mp.undo()
        out[name] = seen
    return out


@pytest.mark.parametrize("name", list(SMALL))
def test_every_frame_of_a_sweep_has_the_same_axes(sweeps, name):
    lims = sweeps[name]["limits"]
    assert len(lims) >= 5
    for i, f in enumerate(lims):
        assert f == lims[0], f"{name}: frame {i} has limits {f}, frame 0 {lims[0]}"


@pytest.mark.parametrize("name", list(SMALL))
def test_legends_lie_off_every_plotting_area_and_inside_the_figure(sweeps, name):
    s = sweeps[name]
    assert s["overlap"], f"{name}: no legend found"
    assert not any(s["overlap"]), f"{name}: a legend overlaps a plotting area"
    assert not any(s["outside"]), f"{name}: a legend leaves the figure"


@pytest.mark.parametrize(("name", "moves"), [("template", "n runs"), ("variance", "n runs"),
                                             ("convergence", "τ runs"), ("tradeoff", "n runs"),
                                             ("time", "bandwidth runs"), ("playground", "τ runs")])
def test_the_watch_line_names_what_the_frames_move(sweeps, name, moves):
    frames, watch = sweeps[name]["frames"], sweeps[name]["watch"]
    assert watch.removeprefix("the ").startswith(moves), watch
    var = {"n runs": "n", "τ runs": "tau", "bandwidth runs": "bandwidth"}[moves]
    assert len({f[var] for f in frames}) == len(frames)  # that variable moves in every frame


def test_chapter_3_sweeps_n_at_fixed_tau_through_omega():
    ex = widgets.variance_explorer(trials=40)  # n = 10, m = 40, tau = 4: omega = 9
    frames = ex._frames()
    ns = [f["n"] for f in frames]
    assert {f["m"] for f in frames} == {40} and {f["tau"] for f in frames} == {4}
    assert ns == sorted(ns) and ns[0] == 1 and ns[-1] == 64 and {8, 9, 10} <= set(ns)
    assert len(frames) <= player.MAX_FRAMES


def test_chapter_3_legend_shows_both_bar_colours():
    from PIL import Image

    ex = widgets.variance_explorer(trials=40)
    fig = ex.figure
    ex._background = None
    with matplotlib.rc_context(widgets.base.plotting.RC_PARAMS):
        ex._render()
    r = fig.canvas.get_renderer()
    lb = fig.axes[0].get_legend().get_window_extent(r)
    img = np.asarray(Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[..., :3]))
    h = img.shape[0]
    crop = img[int(h - lb.y1):int(h - lb.y0), int(lb.x0):int(lb.x1)].reshape(-1, 3).astype(float)
    for bar in ex.art["bars"]:
        rgb = np.array(matplotlib.colors.to_rgb(bar.get_facecolor()[:3])) * 255
        alpha = bar.get_alpha()
        want = alpha * rgb + (1 - alpha) * 255  # drawn at the bars' alpha over white
        assert np.min(np.abs(crop - want).max(axis=1)) <= 3, f"no swatch of colour {want} in the legend"


def test_the_player_plays_on_load_unless_reduced_motion_is_asked():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1), dpi=40)
    ax = fig.subplots()
    line, = ax.plot([0, 1], [0, 0])
    html = player.jshtml(fig, lambda i: line.set_ydata([i, i]), 3, "test", watch="the line <rises>.")
    anim = re.search(r"(animblockcd_test_\d+) = new Animation\(", html).group(1)
    start = html.index(f"{anim} = new Animation(")
    # in the start-up script, once the player exists (the play button calls it too, on a click)
    play = html.index(f"{anim}.play_animation();", start)
    assert play < html.index("}, 0);", start)
    assert "prefers-reduced-motion" in html
    assert "What to watch:</b> the line &lt;rises&gt;." in html  # escaped, inside the sweep
    assert html.index("blockcd-watch") < html.index(player.SWEEP_END)
    still = player.jshtml(fig, lambda i: line.set_ydata([i, i]), 3, "test", autoplay=False)
    assert ".play_animation();" not in still.split("new Animation(")[-1]
    with pytest.raises(ValueError, match="watch"):
        player.watch_line(" ")


@pytest.mark.parametrize("name", list(SMALL))
def test_tick_labels_do_not_run_into_each_other(sweeps, name):
    # (frame, axes, axis) of every pair of neighbouring tick labels whose boxes overlap
    assert not sweeps[name]["crowded"], f"{name}: tick labels overlap at {sweeps[name]['crowded'][:3]}"


def _sent_to_bottom(y, sent) -> float:
    """Numbers sent per worker when the relative error first reaches the panel's bottom, 1e-12."""
    hit = np.flatnonzero(y <= 1e-12)
    return float(sent[hit[0]]) if len(hit) else np.inf


#: the explorers of chapters 5, 6 and 7 as the chapters call them
CHAPTER_SWEEPS = {
    "is-sgd": {},
    "isega": {"problem": "heterogeneous", "split": "sorted"},
    "is-asgd": {"problem": "interpolating"},
}


@pytest.mark.parametrize("method", list(CHAPTER_SWEEPS))
def test_what_to_watch_is_what_the_chapters_sweep_shows(method):
    # each chapter's "What to watch" line makes a claim about its sweep; measure it frame by frame
    from blockcd.history import BYTES_PER_NUMBER

    ex = widgets.convergence_explorer(method=method, **CHAPTER_SWEEPS[method])
    frames = ex._frames()
    assert ex.WATCH[method] in ex.watch(frames)
    taus, to_bottom, to_floor = [], [], []
    for f in frames:
        r = ex._compute(f)
        h, dense = r["history"], r["dense"]
        y, yd = h.dist2 / h.dist2[0], dense.dist2 / dense.dist2[0]
        taus.append(f["tau"])
        to_bottom.append((_sent_to_bottom(y, h.bytes_up / BYTES_PER_NUMBER),
                          _sent_to_bottom(yd, dense.bytes_up / BYTES_PER_NUMBER)))
        # IS-SGD: the first iteration within a factor 2 of the dense run's floor (its second half's mean)
        near = np.flatnonzero(y <= 2 * yd[len(yd) // 2:].mean())
        to_floor.append(near[0] if len(near) else np.inf)
    assert taus[-1] == f["m"] and len(taus) >= 5
    if method == "is-sgd":
        # the smaller tau, the later the chosen run gets near the floor (never, within the run, at small tau)
        assert all(a >= b for a, b in zip(to_floor, to_floor[1:])), to_floor
        assert np.isinf(to_floor[0]) and np.isfinite(to_floor[-1])
    elif method == "isega":
        # dense GD reaches the bottom with fewer numbers sent than every tau < m
        assert all(mine > dense for mine, dense in to_bottom[:-1]), to_bottom
    else:
        # every tau < m reaches the bottom with fewer numbers than the dense run, the fewer the smaller tau
        assert all(mine < dense for mine, dense in to_bottom[:-1]), to_bottom
        mine = [a for a, _ in to_bottom]
        assert all(a < b for a, b in zip(mine, mine[1:])), mine

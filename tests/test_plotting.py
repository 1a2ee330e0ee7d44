"""The book's figures draw what the library computes: the selection grid of chapters 1 and 3.

:func:`blockcd.plotting.selection_grid` shades the blocks each worker sends and
writes, under each grid, how many workers sent each block.  These tests read the
drawn rectangles and texts back from the figure and compare them with
:class:`~blockcd.blocks.BlockSampler` for the same seed, so a figure that drew
anything else (another seed, a transposed grid, counts off by one) fails.
"""

import dataclasses
import itertools

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from blockcd import plotting, styles
from blockcd.blocks import BlockSampler

CASES = [(4, 12, 3, 0, 0), (8, 16, 2, 0, 0), (10, 30, 3, 5, 7), (3, 6, 6, 1, 0), (1, 5, 1, 2, 3)]


def drawn(ax, n, m):
    """The (n, m) shading and the per-block numbers as drawn, read from the Axes' artists."""
    shade = np.zeros((n, m), dtype=bool)
    counts = np.full(m, -1)
    for patch in ax.patches:
        gid = patch.get_gid() or ""
        if gid.startswith("cell-"):
            i, j = map(int, gid.split("-")[1:])
            shade[i, j] = patch.get_facecolor()[:3] != matplotlib.colors.to_rgb("white")
    for text in ax.texts:
        gid = text.get_gid() or ""
        if gid.startswith("count-"):
            counts[int(gid.split("-")[1])] = int(text.get_text())
    return shade, counts


@pytest.mark.parametrize("n, m, tau, seed, k", CASES)
def test_shaded_cells_are_the_samplers_choices_and_counts_are_column_sums(n, m, tau, seed, k):
    fig = plotting.selection_grid(n, m, tau, seed=seed, iteration=k)
    try:
        axes = fig.axes
        assert len(axes) == 2
        for ax, sampling in zip(axes, ("independent", "shared")):
            truth = np.asarray(BlockSampler(n, m, tau, seed=seed, sampling=sampling).masks(k))
            shade, counts = drawn(ax, n, m)
            assert np.array_equal(shade, truth), sampling
            assert np.array_equal(shade.sum(axis=1), np.full(n, tau)), f"{sampling}: a row without tau cells"
            assert np.array_equal(counts, truth.sum(axis=0)), f"{sampling}: counts are not the column sums"
            assert np.array_equal(ax.selection_mask, truth) and np.array_equal(ax.selection_counts, counts)
            # the label under the grid states the counts of the marked blocks
            label = ax.get_xlabel()
            assert f"{int(np.sum(counts == 0))} from nobody" in label
            assert f"{int(np.sum(counts >= 2))} from two or more" in label
        # shared sampling: every worker sends the same tau blocks, so exactly m - tau arrive from nobody
        assert np.sum(axes[1].selection_counts == 0) == m - tau
    finally:
        plt.close(fig)


def test_marks_of_the_master_row_follow_the_counts():
    fig = plotting.selection_grid(8, 16, 2, seed=0)
    try:
        for ax in fig.axes:
            for patch in ax.patches:
                gid = patch.get_gid() or ""
                if gid.startswith("count-"):
                    c = ax.selection_counts[int(gid.split("-")[1])]
                    kind = "nobody" if c == 0 else "once" if c == 1 else "several"
                    mark = plotting.COVERAGE_MARKS[kind]
                    assert patch.get_hatch() == mark["hatch"]
                    assert np.allclose(patch.get_facecolor()[:3], matplotlib.colors.to_rgb(mark["facecolor"]))
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert {"from nobody", "from one worker", "from two or more workers"} <= set(labels)
        # the independent panel of this seed has both kinds of marked block (the chapter's figure)
        counts = fig.axes[0].selection_counts
        assert np.any(counts == 0) and np.any(counts >= 2)
    finally:
        plt.close(fig)


def test_draws_into_given_axes_and_is_readable():
    fig, axes = plt.subplots(2, 1)
    try:
        assert plotting.selection_grid(4, 12, 3, axes=axes) is fig
        assert all(t.get_fontsize() >= 12 for ax in axes for t in ax.texts)
    finally:
        plt.close(fig)
    fig = plotting.selection_grid(4, 12, 3)
    try:
        assert all(t.get_fontsize() >= 12 for ax in fig.axes for t in ax.texts)
        assert all(lab.get_fontsize() >= 12 for ax in fig.axes for lab in ax.get_yticklabels() + ax.get_xticklabels())
        assert all(t.get_fontsize() >= 12 for t in fig.legends[0].get_texts())
        assert fig.get_figwidth() <= 11.5   # shown at the page's width without shrinking the text away
    finally:
        plt.close(fig)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"n": 0}, ValueError, r"n must be an integer in \[1, 32\]"),
    ({"n": 33}, ValueError, r"n must be an integer in \[1, 32\]"),
    ({"n": 2.0}, TypeError, "n must be an integer"),
    ({"m": 0}, ValueError, r"m must be an integer in \[1, 48\]"),
    ({"m": 49}, ValueError, r"m must be an integer in \[1, 48\]"),
    ({"tau": 0}, ValueError, r"tau must be an integer in \[1, 12\]"),
    ({"tau": 13}, ValueError, r"tau must be an integer in \[1, 12\]"),
    ({"tau": "3"}, TypeError, "tau must be an integer"),
    ({"seed": -1}, ValueError, "seed must be"),
    ({"seed": True}, TypeError, "seed must be an integer"),
    ({"iteration": -1}, ValueError, "iteration must be"),
    ({"axes": 3}, TypeError, "axes must be a pair of matplotlib Axes"),
    ({"axes": [None, None]}, TypeError, "axes must be a pair of matplotlib Axes"),
])
def test_bad_arguments_raise_naming_the_parameter(kwargs, exc, match):
    args = {"n": 4, "m": 12, "tau": 3}
    args.update(kwargs)
    before = plt.get_fignums()
    with pytest.raises(exc, match=match):
        plotting.selection_grid(args.pop("n"), args.pop("m"), args.pop("tau"), **args)
    assert plt.get_fignums() == before   # no half-drawn figure left behind


# --- convergence: a researcher's runs told apart, errors that reach zero, the x axes by name ---

@pytest.fixture(scope="module")
def two_taus():
    import blockcd

    p = blockcd.problems.synthetic(4, 20, 12, interpolating=True, cond=5, seed=0)
    return [blockcd.run(p, "ibcd", m=12, tau=t, iters=400, seed=0) for t in (3, 12)]


def test_runs_of_one_method_at_several_tau_are_told_apart_and_labelled(two_taus):
    ax = plotting.convergence(two_taus)
    try:
        a, b = ax.lines
        assert a.get_label() == "IBCD, τ = 3" and b.get_label() == "IBCD, τ = 12"
        assert a.get_color() != b.get_color() and a.get_linestyle() != b.get_linestyle()
        # explicit keys keep the book's figures: every run in exactly its key's colour
        ax2 = plotting.convergence(two_taus, keys=["ibcd", "ibcd"])
        assert {line.get_color() for line in ax2.lines} == {plotting.STYLE["ibcd"]["color"]}
    finally:
        plt.close("all")


def test_a_converged_gap_ends_at_its_first_entry_at_or_below_zero(two_taus):
    # whether and where a run's f - f* first reaches <= 0 is round-off, the last bits of the processor's
    # floating-point kernels (a run that gets there on one processor never does on another); so the run's
    # gap is replaced by one that decays geometrically and reaches exactly 0 at iteration 250, with a
    # negative round-off value after it, the same on every processor
    import dataclasses

    gap = two_taus[1].gap[0] * 0.85 ** np.arange(two_taus[1].gap.size)
    gap[250:], gap[260] = 0.0, -1e-18
    h = dataclasses.replace(two_taus[1], gap=gap)
    nonpos = np.flatnonzero(h.gap <= 0)
    assert nonpos[0] == 250
    ax = plotting.convergence([h], y="gap")
    try:
        ydata = ax.lines[0].get_ydata()
        assert ax.convergence_ends == [nonpos[0] - 1]
        assert len(ydata) == nonpos[0] and np.all(ydata > 0)
        # a stated round-off level: the curve ends at the first entry at or below it
        ax = plotting.convergence([h], y="gap", floor=1e-12)
        first = np.flatnonzero(h.gap / h.gap[0] <= 1e-12)[0]
        assert len(ax.lines[0].get_ydata()) == first and ax.get_ylim()[0] > 1e-20
    finally:
        plt.close("all")


@pytest.mark.parametrize("x, field", [("blocks", "blocks_up"), ("blocks_up", "blocks_up"), ("bytes", "bytes_up"),
                                      ("bytes_up", "bytes_up"), ("bytes_down", "bytes_down")])
def test_x_by_name_or_history_field(two_taus, x, field):
    ax = plotting.convergence(two_taus[:1], x=x)
    try:
        h = two_taus[0]
        assert np.array_equal(ax.lines[0].get_xdata(), getattr(h, field)[: len(ax.lines[0].get_xdata())])
    finally:
        plt.close("all")


@pytest.mark.parametrize("kwargs, error, words", [
    ({"x": "byte"}, ValueError, ["x must be one of", "bytes_up", "iteration"]),
    ({"x": 3}, TypeError, ["x must be a string"]),
    ({"y": "loss"}, ValueError, ["y must be one of", "gap"]),
    ({"floor": -1}, ValueError, ["floor"]),
    ({"keys": ["ibcd"]}, ValueError, ["keys", "one entry per history"]),
    ({"labels": ["a", "b", "c"]}, ValueError, ["labels"]),
])
def test_convergence_names_the_wrong_argument(two_taus, kwargs, error, words):
    with pytest.raises(error) as e:
        plotting.convergence(two_taus, **kwargs)
    for w in words:
        assert w in str(e.value)
    with pytest.raises(TypeError, match="histories"):
        plotting.convergence([np.ones(3)])
    with pytest.raises(TypeError, match="histories"):
        plotting.convergence([])


def test_series_gives_every_curve_its_own_colour_marker_and_line_style():
    drawn_styles = [plotting.series("ibcd", j) for j in range(len(styles.SERIES_COLORS))]
    for field in ("color", "marker"):
        values = [s[field] for s in drawn_styles]
        assert len(set(values)) == len(values), field
    # consecutive curves differ in line style too, so that they differ in grey
    assert all(a["ls"] != b["ls"] for a, b in itertools.pairwise(drawn_styles))
    assert all(s["label"] == plotting.STYLE["ibcd"]["label"] for s in drawn_styles)
    assert plotting.series("ibcd", 2, label="x", marker="*")["label"] == "x"
    # past the palette the colours repeat, but with another line style: the first 28 curves
    # (7 colours by 4 line styles) still differ in the pair
    pairs = [(s["color"], s["ls"]) for s in (plotting.series("ibcd", j) for j in range(28))]
    assert len(set(pairs)) == 28
    with pytest.raises(ValueError, match="j"):
        plotting.series("ibcd", -1)


def test_convergence_draws_several_runs_of_one_method_in_distinct_colours():
    # the runs of a researcher's tau sweep, drawn without keys: each its own colour, marker and
    # line style, and the legend maps each label to its line
    import blockcd

    p = blockcd.problems.synthetic(4, 20, 12, interpolating=True, cond=5, seed=0)
    runs = [blockcd.run(p, "ibcd", m=12, tau=t, iters=50, seed=0) for t in (12, 6, 3, 1)]
    ax = plotting.convergence(runs)
    lines = ax.get_lines()
    assert len(lines) == 4
    assert len({matplotlib.colors.to_hex(ln.get_color()) for ln in lines}) == 4
    assert len({ln.get_marker() for ln in lines}) == 4
    assert all(a.get_linestyle() != b.get_linestyle() for a, b in itertools.pairwise(lines))
    plt.close(ax.figure)


def test_tradeoff_legend_maps_every_curve_and_sits_above_the_data():
    taus = np.array([40, 10, 4, 1])
    K = np.array([100.0, 190.0, 400.0, 1400.0])
    axes = plotting.tradeoff(taus, K, taus * K, predicted_iterations=K, predicted_blocks=taus * K, mark=4)
    try:
        fig = axes[0].figure
        fig.canvas.draw()
        legend = axes[0].get_legend()
        assert [t.get_text() for t in legend.get_texts()] == ["IBCD", "IBCD (theory)", r"$\tau = m/n$"]
        renderer = fig.canvas.get_renderer()
        assert legend.get_window_extent(renderer).y0 >= axes[0].get_window_extent(renderer).y1
    finally:
        plt.close("all")


def test_a_curve_with_nothing_to_draw_is_an_error_and_unknown_keys_are_refused():
    """convergence([h], y='gap') of a run without gaps, or of a run whose error is inf from the start, used
    to draw empty axes silently; keys=['nope'] was accepted (drawn in matplotlib's default colour)."""
    import dataclasses

    import blockcd

    p = blockcd.problems.synthetic(4, 10, 6, seed=1)
    h = blockcd.run(p, "ibcd", m=3, tau=1, iters=20, gap=False)
    with pytest.raises(ValueError, match=r"run 0 \(IBCD, τ = 1\) has nothing to draw as y = 'gap': its gaps "
                                         r"were not recorded \(all NaN: the run had gap=False\)"):
        plotting.convergence([h], y="gap")
    inf = dataclasses.replace(h, dist2=np.full_like(h.dist2, np.inf))
    with pytest.raises(ValueError, match="its start value is inf, not a finite number"):
        plotting.convergence([inf])
    with pytest.raises(ValueError, match=r"keys must name entries of blockcd.styles.STYLE, got \['nope'\]"):
        plotting.convergence([h], keys=["nope"])
    ax = plotting.convergence([h])
    assert ax.convergence_ends == [20]
    plt.close("all")


def test_default_styles_do_not_collide_with_another_method_in_the_plot():
    """Two IBCD runs beside one IS-SGD run: the second IBCD run was drawn in IS-SGD's orange squares; a
    user's method (no style of its own) was drawn in IBCD's blue."""
    import blockcd

    p = blockcd.problems.synthetic(4, 10, 6, interpolating=True, cond=5, seed=1)
    a = blockcd.run(p, "ibcd", m=3, tau=1, iters=10)
    b = blockcd.run(p, "ibcd", m=3, tau=3, iters=10)
    c = blockcd.run(p, "is-sgd", m=3, tau=1, iters=10)
    ax = plotting.convergence([a, b, c])
    looks = [(matplotlib.colors.to_hex(line.get_color()), line.get_marker()) for line in ax.lines]
    assert len(set(looks)) == 3, looks
    sgd = (styles.STYLE["is-sgd"]["color"], styles.STYLE["is-sgd"]["marker"])
    assert looks[2] == sgd and all(m != sgd[1] for _, m in looks[:2]), looks
    mine = dataclasses.replace(a, method="my-method")
    ax = plotting.convergence([mine, b])
    assert ax.lines[0].get_marker() != styles.STYLE["ibcd"]["marker"]
    assert matplotlib.colors.to_hex(ax.lines[0].get_color()) != styles.STYLE["ibcd"]["color"]
    # one method alone keeps its series, as before
    ax = plotting.convergence([a, b])
    assert [line.get_marker() for line in ax.lines] == [styles.SERIES_MARKERS[0], styles.SERIES_MARKERS[1]]
    plt.close("all")

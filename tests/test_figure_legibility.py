"""Every figure can be read at the size the page shows it, and its series told apart by colour.

The page shows a figure at its pixel width or shrunk to the 784-px column of a 1,400-px window,
whichever is smaller; its smallest text must then be at least 80% of the 16-px body text
(``blockcd.styles.smallest_text``).  Two series of one figure must differ by at least
``blockcd.styles.MIN_DELTA_E`` CIEDE2000 units (``blockcd.styles.delta_e``, checked here against
the published test pairs of the formula).
"""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from blockcd import plotting, styles  # noqa: E402
from blockcd.registry import METHODS  # noqa: E402

#: Sharma, Wu and Dalal (2005), Table 1: CIELAB pairs and their CIEDE2000 difference (4 decimals)
SHARMA = [
    ((50.0000, 2.6772, -79.7751), (50.0000, 0.0000, -82.7485), 2.0425),
    ((50.0000, 0.0000, 0.0000), (50.0000, -1.0000, 2.0000), 2.3669),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0009), 7.1792),
    ((50.0000, 2.5000, 0.0000), (73.0000, 25.0000, -18.0000), 27.1492),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((22.7233, 20.0904, -46.6940), (23.0331, 14.9730, -42.5619), 2.0373),
]
MIN_TEXT_PX = styles.MIN_TEXT_RATIO * styles.BODY_PX


@pytest.mark.parametrize(("lab1", "lab2", "expected"), SHARMA)
def test_ciede2000_matches_the_published_pairs(lab1, lab2, expected):
    assert styles.delta_e(lab1, lab2) == pytest.approx(expected, abs=1e-4)
    assert styles.delta_e(lab2, lab1) == pytest.approx(expected, abs=1e-4)


def test_the_check_sees_two_nearly_equal_oranges():
    # Okabe-Ito's orange and vermillion, which drew workers 4 and 7 of Fig. 6.1 alike
    d, pair = styles.closest_colors(["#0072B2", "#E69F00", "#D55E00"])
    assert d < styles.MIN_DELTA_E and pair == ("#e69f00", "#d55e00"), (d, pair)
    # a colour drawn twice (a bound in its method's colour) is one colour, not a pair
    assert styles.closest_colors(["#0072B2", "#0072b2"])[0] == float("inf")


def test_series_colours_differ_pairwise():
    d, pair = styles.closest_colors(styles.SERIES_COLORS)
    assert len(set(styles.SERIES_COLORS)) == len(styles.SERIES_COLORS)
    assert d >= styles.MIN_DELTA_E, f"series colours {pair} only {d:.1f} CIEDE2000 apart"


def test_the_methods_colours_differ_pairwise():
    # the book's methods (the registry) are drawn side by side in its comparisons
    colors = [styles.STYLE[m]["color"] for m in METHODS if m in styles.STYLE]
    assert len(colors) >= 8, METHODS
    d, pair = styles.closest_colors(colors)
    assert d >= styles.MIN_DELTA_E, f"method colours {pair} only {d:.1f} CIEDE2000 apart"


def _histories(k):
    import blockcd

    p = blockcd.problems.synthetic(n_workers=4, rows_per_worker=10, d=8, interpolating=True, seed=0)
    return [blockcd.run(p, "ibcd", m=8, tau=t, iters=30) for t in (1, 2, 4, 8)[:k]]


def test_several_runs_of_one_method_get_distinct_colours():
    ax = plotting.convergence(_histories(4))
    ax.legend()
    colors = styles.series_colors(ax.figure)
    plt.close(ax.figure)
    assert len(colors) == 4, colors
    d, pair = styles.closest_colors(colors)
    assert d >= styles.MIN_DELTA_E, (d, pair)


def test_the_smallest_text_is_measured_at_the_size_the_page_shows():
    fig, ax = plt.subplots(figsize=(15.68, 4), dpi=100)     # 1,568 px: shown at half its size
    ax.set_xlabel("x", fontsize=20)
    ax.tick_params(labelsize=20)
    px, _ = styles.smallest_text(fig)
    plt.close(fig)
    assert px == pytest.approx(20 * 100 / 72 / 2)


@pytest.mark.parametrize("draw", ["convergence", "tradeoff", "against_tau"])
def test_the_librarys_figures_have_text_at_least_80_percent_of_the_body(draw):
    styles.setup()
    taus = np.array([1, 2, 4, 8])
    if draw == "convergence":
        fig = plotting.convergence(_histories(2)).figure
        fig.axes[0].legend()
    elif draw == "tradeoff":
        fig = plotting.tradeoff(taus, 100 / taus, taus * (100 / taus), predicted_iterations=100 / taus,
                                mark=2)[0].figure
    else:
        fig = plotting.against_tau(taus, 100 / taus, 90 / taus, mark=2).figure
        fig.axes[0].legend()
    px, text = styles.smallest_text(fig)
    plt.close(fig)
    assert px >= MIN_TEXT_PX, f"{draw}: {text!r} is {px:.1f} px, under {MIN_TEXT_PX:.1f} px"


def test_rc_defaults_give_readable_text_up_to_the_column_width():
    # a figure of the default size holds the default font at full size on the page
    width_px = styles.RC_PARAMS["figure.figsize"][0] * styles.RC_PARAMS["figure.dpi"]
    assert width_px <= styles.COLUMN_PX
    tick = styles.RC_PARAMS["font.size"] * styles.RC_PARAMS["figure.dpi"] / 72
    assert tick >= MIN_TEXT_PX


def test_pairs_helper_is_symmetric_over_the_palette():
    for a, b in itertools.combinations(styles.SERIES_COLORS, 2):
        assert styles.delta_e(a, b) == pytest.approx(styles.delta_e(b, a), abs=1e-9)

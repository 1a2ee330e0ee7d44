"""Chapter 13's kernel-free players: readable text at the book's column width, light frames, the figure untouched."""

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


@pytest.mark.parametrize("kw, err", [({"dpi": 10}, ValueError), ({"width": 0}, ValueError),
                                     ({"panel_height": -1.0}, ValueError), ({"fontsize": "big"}, TypeError),
                                     ({"colors": 1}, ValueError), ({"colors": 300}, ValueError)])
def test_the_scrubber_names_a_bad_parameter(kw, err):
    fig = _sweep(panels=1)
    with pytest.raises(err, match=next(iter(kw))):
        paper.scrubber(types.SimpleNamespace(figure=fig), **kw)
    plt.close(fig)

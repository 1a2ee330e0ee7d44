"""The explorers' figures outside pyplot: creating one, encoding it as PNG, and what blitting keys on.

A figure here is never shown by the inline backend; :class:`blockcd.widgets.base.Explorer`
draws its changing artists over a cached background (keyed by :func:`layout_key`) and
encodes the canvas (:func:`encode`).  Also the axis helpers that keep that background:
log limits rounded to decades, linear limits rounded to 1, 2, 5.  Read next: the sweep
(:mod:`blockcd.widgets.player`), the base class (:mod:`blockcd.widgets.base`).
"""

from __future__ import annotations

import io
import math

import matplotlib as mpl
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .. import plotting


def figure(size, dpi, adjust) -> Figure:
    """A figure outside pyplot (never shown by the inline backend), with a fixed layout (fast to redraw)."""
    with mpl.rc_context(plotting.RC_PARAMS):
        fig = Figure(figsize=size, dpi=dpi)
    fig.subplots_adjust(**adjust)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    return buf.getvalue()


def encode(canvas: FigureCanvasAgg) -> bytes:
    """PNG of what the Agg canvas holds now (after a draw or a blit), without drawing again."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3]).save(buf, format="png", compress_level=1)
    return buf.getvalue()


def artists(obj):
    """The matplotlib artists held in an explorer's ``art`` dict (axes excluded)."""
    if isinstance(obj, mpl.axes.Axes):
        return
    if isinstance(obj, mpl.artist.Artist):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from artists(v)
    elif isinstance(obj, (list, tuple, mpl.container.Container)):
        for v in obj:
            yield from artists(v)


def layout_key(fig: Figure) -> tuple:
    """What the static background depends on: axis limits and legend entries."""
    key = []
    for ax in fig.axes:
        key.append((tuple(ax.get_xlim()), tuple(ax.get_ylim())))
        leg = ax.get_legend()
        if leg is not None:
            key.append(tuple(t.get_text() for t in leg.get_texts()))
            key.append(tuple((str(getattr(h, "get_color", lambda: "")()), str(getattr(h, "get_marker", lambda: "")()))
                             for h in leg.legend_handles))
    return tuple(key)


#: keywords of a legend in one or two rows just above its axes, off the data (``ax.legend(**ABOVE)``)
ABOVE = {"loc": "lower left", "bbox_to_anchor": (0.0, 1.01), "borderaxespad": 0.0, "fontsize": 8,
         "frameon": False, "handlelength": 1.8, "columnspacing": 1.0, "handletextpad": 0.5}


def axis_limits(fig: Figure) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """(x limits, y limits) of each of the figure's axes, in order."""
    return [(tuple(ax.get_xlim()), tuple(ax.get_ylim())) for ax in fig.axes]


def union_limits(frames: list) -> list:
    """The limits that hold every frame's: for each axis, the lowest low and the highest high of
    :func:`axis_limits` over ``frames`` (a list of its results), so that an axis drawn with them is
    the same in every frame of a sweep and what changes between frames is the data."""
    def hull(spans):
        return (min(lo for lo, _ in spans), max(hi for _, hi in spans))

    return [(hull([f[a][0] for f in frames]), hull([f[a][1] for f in frames])) for a in range(len(frames[0]))]


def set_limits(fig: Figure, limits: list) -> None:
    """Set each axis of ``fig`` to the (x limits, y limits) of ``limits`` (as ``union_limits`` gives)."""
    for ax, (x, y) in zip(fig.axes, limits):
        ax.set_xlim(*x)
        ax.set_ylim(*y)


def no_minor_ticks(*axes) -> None:
    """Drop the minor ticks of log axes: they cost most of a full redraw and carry no numbers."""
    for ax in axes:
        ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
        ax.yaxis.set_minor_locator(mpl.ticker.NullLocator())


def decades(lo: float, hi: float, pad: float = 1.3) -> tuple[float, float]:
    """Log-axis limits rounded out to powers of ten, so that small moves keep the axes (and the cached background)."""
    return 10.0 ** math.floor(math.log10(lo / pad)), 10.0 ** math.ceil(math.log10(hi * pad))


def nice_ceil(x: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is >= x (> 0): a linear axis limit that small
    moves keep, and with it the cached background."""
    e = 10.0 ** math.floor(math.log10(x))
    return next(f * e for f in (1.0, 2.0, 5.0, 10.0) if f * e >= x * (1 - 1e-12))


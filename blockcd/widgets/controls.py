"""The explorers' controls: the panel, the grid of sliders, slider steps and the texts under a figure.

Read next: :mod:`blockcd.widgets.base` (the :class:`~blockcd.widgets.base.Explorer` that
lays them out).
"""

from __future__ import annotations

import math

import ipywidgets as W
import numpy as np

STEPPED = (W.IntSlider, W.FloatSlider, W.FloatLogSlider)


class Panel(W.VBox):
    """The explorer's box; its plain-text form names it (no widget reprs in stored outputs)."""

    def __init__(self, title: str, **kw):
        super().__init__(**kw)
        self._title = title

    def __repr__(self) -> str:
        return f"<{self._title}: move the controls in a live notebook>"


#: the controls' labels share one width, so that the sliders of a column start and end together
LABEL_WIDTH = "96px"


def grid(controls, width: str) -> W.GridBox:
    """The controls in equal columns as wide as the figure (as many of at least 250 px as fit).

    Rows of boxes sized by their contents wrapped at different places on every
    explorer; in a grid every cell has the width of the others and every label
    the same width.
    """
    controls = list(controls)
    for w in controls:
        w.style.description_width = LABEL_WIDTH
        w.layout.width = "auto"
    return W.GridBox(controls, layout=W.Layout(
        width=width, max_width="100%", grid_template_columns="repeat(auto-fill, minmax(250px, 1fr))",
        grid_gap="2px 12px"))


def style_box():
    return {"description_width": "initial"}


def stepped(w, k: int):
    """The value of slider ``w`` ``k`` of its steps from the current one, or None outside its range."""
    if isinstance(w, W.FloatLogSlider):
        # the front end's value: base ** (a whole number of steps from min)
        e = w.min + (round((math.log(w.value, w.base) - w.min) / w.step) + k) * w.step
        if not w.min - 1e-9 <= e <= w.max + 1e-9:
            return None
        return float(w.base**e)
    v = w.value + k * w.step
    if not w.min <= v <= w.max:
        return None
    return type(w.value)(v)


def int_slider(desc, value, lo, hi, **kw):
    return W.IntSlider(value=value, min=lo, max=hi, description=desc, continuous_update=False,
                       style=style_box(), **kw)


def message(text: str) -> str:
    return f'<div style="color:#a30000;font-weight:bold;margin:0.3em 0">{text}</div>'


def fmt_int(k) -> str:
    return "not reached" if k is None or (isinstance(k, float) and not math.isfinite(k)) else f"{int(k):,}"



def log_taus(m: int, k: int = 8) -> list[int]:
    return sorted({round(t) for t in np.geomspace(1, m, k)})

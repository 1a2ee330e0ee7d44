"""The book's look: one colour and marker per method, and its matplotlib defaults.

Every figure of the library draws a method with :data:`STYLE` (colour, marker and label per
method or series name), through :func:`style` and, for several curves of one method (several n
or tau), :func:`blockcd.styles.series` (a distinct colour, marker and line style per curve) or
:func:`blockcd.styles.shade` (shades of the method's colour, which the library no longer draws
with).  :func:`setup` applies the book's matplotlib defaults :data:`RC_PARAMS`
(``lw=2``, grid, no top and right spines; lowercase labels and no titles: captions come from the
notebook cell's metadata).  :mod:`blockcd.plotting` (the curves) and :mod:`blockcd.diagrams`
(the pictures of the ideas) draw with them.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from ._validate import check_int

#: colour, marker and label of each method (and of the dense baselines)
STYLE = {
    "ibcd": {"color": "#1f77b4", "marker": "o", "label": "IBCD"},
    "is-sgd": {"color": "#ff7f0e", "marker": "s", "label": "IS-SGD"},
    "isega": {"color": "#2ca02c", "marker": "^", "label": "ISEGA"},
    "is-saga": {"color": "#d62728", "marker": "v", "label": "IS-SAGA"},
    "is-asgd": {"color": "#9467bd", "marker": "D", "label": "IS-ASGD"},
    "ibgd": {"color": "#393b79", "marker": "p", "label": "IBGD"},
    "isaga-local": {"color": "#ad494a", "marker": "<", "label": "distributed ISAGA"},
    "isaga-shared": {"color": "#637939", "marker": ">", "label": "shared-data ISAGA"},
    "is-sgd-async": {"color": "#e6550d", "marker": "d", "label": "asynchronous IS-SGD"},
    "cd": {"color": "#c49c94", "marker": "d", "label": "CD, same blocks, step 1/L"},
    "cd-importance": {"color": "#8c6d31", "marker": "8", "label": "CD, importance sampling"},
    "asgd": {"color": "#c5b0d5", "marker": "H", "label": "ASGD"},
    "gd": {"color": "#7f7f7f", "marker": "x", "label": "dense GD"},
    "sgd": {"color": "#8c564b", "marker": "P", "label": "minibatch SGD"},
    "saga": {"color": "#e377c2", "marker": "*", "label": "SAGA"},
    "shared": {"color": "#bcbd22", "marker": "h", "label": "shared sampling"},
    "independent": {"color": "#17becf", "marker": "o", "label": "independent sampling"},
    "top-k": {"color": "#000000", "marker": "X", "label": "top-k"},
    "theory": {"color": "#000000", "ls": "--", "label": "theory"},
}

#: the book's matplotlib rc defaults; :func:`setup` applies them globally; a figure built
#: outside pyplot (the explorers of :mod:`blockcd.widgets`) takes them through
#: ``matplotlib.rc_context(RC_PARAMS)``
RC_PARAMS = {
    "lines.linewidth": 2,
    "lines.markersize": 6,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "legend.frameon": False,
    "font.size": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def setup() -> None:
    """Apply the book's matplotlib defaults (idempotent)."""
    mpl.rcParams.update(RC_PARAMS)


def style(key: str, **overrides) -> dict:
    """Keyword arguments for ``ax.plot`` for a method or series name."""
    s = dict(STYLE.get(key, {"label": key}))
    s.update(overrides)
    return s


def shade(key: str, j: int, k: int, **overrides) -> dict:
    """The style of ``key`` for the j-th of k curves of one method (several n or tau): its colour,
    from dark (j = 0) to light (j = k - 1), and one line style per curve; the marker stays the method's."""
    j = check_int("j", j, 0)
    k = check_int("k", k, j + 1)
    s = style(key)
    rgb = np.array(mpl.colors.to_rgb(s.get("color", "#000000")))
    t = 0.0 if k == 1 else 0.6 * j / (k - 1)
    s["color"] = tuple(rgb * (1 - t) + t)                # toward white
    s["ls"] = ("-", "--", "-.", ":")[j % 4]
    s.update(overrides)
    return s


#: the colours :func:`series` gives, the Okabe-Ito palette (blue, orange, bluish green, vermillion,
#: reddish purple, sky blue, black), which readers with any common colour-vision deficiency tell apart
SERIES_COLORS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
#: markers and line styles of :func:`series`, so that its curves differ in grey too
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
SERIES_LINES = ("-", "--", "-.", ":")


def series(key: str, j: int, **overrides) -> dict:
    """The style of ``key`` for the j-th of several curves of one method (several n, tau or workers).

    Unlike :func:`shade`, every curve gets its own colour (``SERIES_COLORS[j % 7]``), marker
    (``SERIES_MARKERS[j % 7]``) and line style (``SERIES_LINES[j % 4]``), so that curves and legend
    entries pair up in colour and in grey; the label stays the method's.  ``j`` counts from 0; the
    first 7 curves differ in colour and marker, and the first 28 in the pair of colour and line
    style.  ``overrides`` replace any key (e.g. ``label``).
    """
    j = check_int("j", j, 0)
    s = style(key)
    c = j % len(SERIES_COLORS)
    s.update(color=SERIES_COLORS[c], marker=SERIES_MARKERS[c], ls=SERIES_LINES[j % len(SERIES_LINES)])
    s.update(overrides)
    return s


def ax_or_new(ax):
    """The axes to draw on: ``ax`` itself, or (``ax=None``) those of a new figure with the book's defaults."""
    if ax is None:
        setup()
        _, ax = plt.subplots()
    return ax

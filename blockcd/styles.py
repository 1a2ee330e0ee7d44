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
    "ibgd": {"color": "#332288", "marker": "p", "label": "IBGD"},
    "isaga-local": {"color": "#882255", "marker": "<", "label": "distributed ISAGA"},
    "isaga-shared": {"color": "#bcbd22", "marker": ">", "label": "shared-data ISAGA"},
    "is-sgd-async": {"color": "#17becf", "marker": "d", "label": "asynchronous IS-SGD"},
    "cd": {"color": "#004949", "marker": "d", "label": "CD, same blocks, step 1/L"},
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


#: the colours :func:`series` gives, in order blue, orange, bluish green, red, reddish purple,
#: purple and black; blue, orange, bluish green, reddish purple and black are those of the Okabe-Ito
#: palette, which readers with any common colour-vision deficiency tell apart, with a red
#: and a purple from Paul Tol's schemes in place of Okabe-Ito's vermillion and sky blue, which lie
#: 22 CIEDE2000 units from its orange and blue (two "nearly equal oranges" in a figure's markers);
#: any two of these differ by at least 30 (:data:`MIN_DELTA_E`)
SERIES_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC3311", "#CC79A7", "#6C3483", "#000000")
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


# ---- what a reader can tell apart and read: colour distances and text sizes ------------------

#: the smallest CIEDE2000 colour difference between two series of one figure.  2.3 is a
#: just-noticeable difference between two large patches side by side; thin lines and small markers
#: need many times more: Okabe-Ito's orange and vermillion (22.2 apart) read as two nearly equal
#: oranges in a figure's markers, so two series must differ by more than that
MIN_DELTA_E = 23.0
#: the width of the book's text column and its body text at a 1,400-px window, in CSS pixels
COLUMN_PX = 784
BODY_PX = 16
#: the smallest text a figure may show, as a fraction of the body text, at the size the page shows it
MIN_TEXT_RATIO = 0.8


def _lab(color) -> np.ndarray:
    """CIELAB (D65) of a matplotlib colour."""
    rgb = np.asarray(mpl.colors.to_rgb(color), dtype=float)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124564, 0.3575761, 0.1804375],
                    [0.2126729, 0.7151522, 0.0721750],
                    [0.0193339, 0.1191920, 0.9503041]]) @ lin
    xyz /= np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(c1, c2) -> float:
    """The CIEDE2000 colour difference of two colours (matplotlib colour specs, or CIELAB triples).

    Sharma, Wu and Dalal (2005), "The CIEDE2000 color-difference formula: implementation notes";
    ``tests/test_figure_legibility.py`` checks it against their published test pairs.
    """
    lab1 = np.asarray(c1, dtype=float) if np.ndim(c1) == 1 and len(c1) == 3 and not isinstance(c1, str) \
        and max(abs(np.asarray(c1, dtype=float))) > 1 else _lab(c1)
    lab2 = np.asarray(c2, dtype=float) if np.ndim(c2) == 1 and len(c2) == 3 and not isinstance(c2, str) \
        and max(abs(np.asarray(c2, dtype=float))) > 1 else _lab(c2)
    (L1, a1, b1), (L2, a2, b2) = lab1, lab2
    C1, C2 = np.hypot(a1, b1), np.hypot(a2, b2)
    Cm = (C1 + C2) / 2
    G = 0.5 * (1 - np.sqrt(Cm**7 / (Cm**7 + 25.0**7)))
    a1p, a2p = (1 + G) * a1, (1 + G) * a2
    C1p, C2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360 if C1p else 0.0
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360 if C2p else 0.0
    dLp, dCp = L2 - L1, C2p - C1p
    dh = h2p - h1p
    if C1p * C2p == 0:
        dh = 0.0
    elif dh > 180:
        dh -= 360
    elif dh < -180:
        dh += 360
    dHp = 2 * np.sqrt(C1p * C2p) * np.sin(np.radians(dh / 2))
    Lpm, Cpm = (L1 + L2) / 2, (C1p + C2p) / 2
    if C1p * C2p == 0:
        hpm = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hpm = (h1p + h2p) / 2
    else:
        hpm = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    T = (1 - 0.17 * np.cos(np.radians(hpm - 30)) + 0.24 * np.cos(np.radians(2 * hpm))
         + 0.32 * np.cos(np.radians(3 * hpm + 6)) - 0.20 * np.cos(np.radians(4 * hpm - 63)))
    dtheta = 30 * np.exp(-(((hpm - 275) / 25) ** 2))
    Rc = 2 * np.sqrt(Cpm**7 / (Cpm**7 + 25.0**7))
    Sl = 1 + 0.015 * (Lpm - 50) ** 2 / np.sqrt(20 + (Lpm - 50) ** 2)
    Sc, Sh = 1 + 0.045 * Cpm, 1 + 0.015 * Cpm * T
    Rt = -np.sin(np.radians(2 * dtheta)) * Rc
    return float(np.sqrt((dLp / Sl) ** 2 + (dCp / Sc) ** 2 + (dHp / Sh) ** 2 + Rt * (dCp / Sc) * (dHp / Sh)))


def closest_colors(colors) -> tuple[float, tuple]:
    """The smallest CIEDE2000 difference between two different colours of ``colors`` and the pair.

    Equal colours (the same series drawn twice, a bound in its method's colour) are one colour.
    ``(inf, ())`` when fewer than two colours differ.
    """
    distinct = []
    for c in colors:
        rgb = tuple(np.round(mpl.colors.to_rgb(c), 4))
        if rgb not in distinct:
            distinct.append(rgb)
    best = (float("inf"), ())
    for i, a in enumerate(distinct):
        for b in distinct[i + 1:]:
            d = delta_e(a, b)
            if d < best[0]:
                best = (d, (mpl.colors.to_hex(a), mpl.colors.to_hex(b)))
    return best


def series_colors(fig) -> list:
    """The colours a figure tells its series apart by: each legend entry's line, marker or patch colour.

    Greys and black (the reference lines: theory, a bound, the other workers) are left out; a
    figure without a legend gives the colours of its lines."""
    handles = []
    for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if leg is not None:
            handles += list(leg.legend_handles)
    if not handles:
        handles = [ln for ax in fig.axes for ln in ax.get_lines()]
    out = []
    for h in handles:
        for get in ("get_color", "get_markerfacecolor", "get_facecolor"):
            if hasattr(h, get):
                c = getattr(h, get)()
                if isinstance(c, np.ndarray) and c.ndim == 2:
                    c = c[0] if len(c) else None
                if c is None or (isinstance(c, str) and c == "none"):
                    continue
                rgb = np.asarray(mpl.colors.to_rgb(c))
                if np.ptp(rgb) > 0.08:           # a hue, not a grey
                    out.append(mpl.colors.to_hex(rgb))
                break
    return out


def smallest_text(fig, *, column_px: float = COLUMN_PX) -> tuple[float, str]:
    """The smallest text of ``fig`` as the page shows it, in CSS pixels, and that text.

    The page shows a figure at its pixel width (``figure.dpi``) or shrunk to the column, whichever
    is smaller; a font of s points is s * dpi / 72 pixels before that."""
    fig.canvas.draw()
    width_px = fig.get_figwidth() * fig.dpi
    scale = min(1.0, column_px / width_px)
    best = (float("inf"), "")
    for t in fig.findobj(mpl.text.Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        px = t.get_fontsize() * fig.dpi / 72 * scale
        if px < best[0]:
            best = (px, t.get_text())
    return best

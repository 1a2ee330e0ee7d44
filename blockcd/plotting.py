"""The book's recurring figures: convergence curves and measured-against-predicted plots.

Every chapter draws with these functions so that a method looks the same everywhere, in the
colour, marker and label :data:`blockcd.styles.STYLE` gives it, with the book's matplotlib
defaults (:func:`blockcd.styles.setup`).  Nothing here runs a method; pass
:class:`~blockcd.History` objects or arrays.  :func:`convergence` draws a researcher's runs side
by side: several runs of one method (several tau) each in a colour, marker and line style of its
own, labelled with its tau, against iterations, blocks or bytes, and each curve ends where its
error reaches zero.

The module is one of three, split by job: :mod:`blockcd.styles` holds the look (``STYLE``,
``RC_PARAMS``, ``setup``, ``style``, ``series``, ``shade``) and :mod:`blockcd.diagrams` the
pictures of the ideas (``selection_grid``, ``round_timeline``, ``round_messages`` and their constants).  Both are
importable from here as well (``plotting.STYLE``, ``plotting.selection_grid``, ...), as they
always were.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np

# re-exported: blockcd.plotting's public names from before the split stay importable from here
from .diagrams import (  # noqa: F401
    COVERAGE_MARKS,
    SELECTION_BESIDE_M,
    SELECTION_MAX_M,
    SELECTION_MAX_N,
    TIMELINE_COLORS,
    round_messages,
    round_timeline,
    selection_grid,
)
from .styles import RC_PARAMS, STYLE, ax_or_new, series, setup, shade, style  # noqa: F401

#: the x axes :func:`convergence` draws against, with the History field each reads; the History
#: field names themselves (``"blocks_up"``, ``"bytes_up"``, ``"bytes_down"``) are accepted too
X_AXES = {
    "iteration": (None, "iteration k"),
    "blocks": ("blocks_up", "blocks sent per worker"),
    "bytes": ("bytes_up", "bytes sent per worker"),
    "bytes_down": ("bytes_down", "bytes received per worker"),
}
_X_ALIASES = {"iterations": "iteration", "blocks_up": "blocks", "bytes_up": "bytes"}
# the legend entry of against_tau's mark when mark_label is None (matplotlib mathtext)
_MARK_LABEL = r"$\tau = m/n$"
#: the error curves :func:`convergence` draws, with the History field each reads
Y_VALUES = ("dist2", "gap", "grad2")


def _x_axis(x) -> str:
    if not isinstance(x, str):
        raise TypeError(f"x must be a string, got {type(x).__name__}")
    name = _X_ALIASES.get(x, x)
    if name not in X_AXES:
        choices = sorted(set(X_AXES) | set(_X_ALIASES))
        raise ValueError(f"x must be one of {tuple(choices)} (the History fields blocks_up, bytes_up and "
                         f"bytes_down, or their short names), got {x!r}")
    return name


def run_label(h, *, step: bool = False) -> str:
    """A run's legend entry: the method's label and its tau, e.g. ``"IBCD, τ = 4"`` (``step=True``
    adds the step size, ``"IBCD, τ = 4, γ = 0.012"``, to tell apart runs that differ only there)."""
    name = STYLE.get(h.method, {}).get("label", h.method)
    text = f"{name}, τ = {h.tau}"
    return f"{text}, γ = {h.step:.3g}" if step else text


def convergence(histories: Sequence, ax=None, *, x: str = "iteration", y: str = "dist2",
                labels: Iterable[str] | None = None, keys: Iterable[str] | None = None,
                relative: bool = True, markevery: int | None = None, floor: float = 0.0, **kw):
    r"""Error against iterations, or blocks or bytes sent, one curve per run.

    Parameters
    ----------
    histories : sequence of History
        The runs, e.g. ``[blockcd.run(p, "ibcd", m=40, tau=t, iters=500) for t in (4, 40)]``.
    ax : matplotlib Axes, optional
        Drawn into; a new figure with the book's defaults (:func:`blockcd.styles.setup`) when None.
    x : str
        ``'iteration'`` (the default), ``'blocks'`` (cumulative blocks sent per worker,
        ``History.blocks_up``), ``'bytes'`` (bytes sent up per worker, ``History.bytes_up``) or
        ``'bytes_down'`` (the iterate the master sends, ``History.bytes_down``); the field names
        ``'blocks_up'`` and ``'bytes_up'`` are accepted for ``'blocks'`` and ``'bytes'``
        (:data:`X_AXES`).  Any other value raises a ValueError that lists these.
    y : str
        ``'dist2'`` (:math:`\|x^k - x^\star\|^2`), ``'gap'`` (:math:`f(x^k) - f^\star`) or
        ``'grad2'`` (:math:`\|\nabla f(x^k)\|^2`, the record of a non-convex problem, which has no
        :math:`x^\star`).
    labels : iterable of str, optional
        Legend entries, one per run.  By default each run is labelled by its method and its
        :math:`\tau` (:func:`run_label`), and also by its step when two runs share both.
    keys : iterable of str, optional
        The :data:`blockcd.styles.STYLE` entry (colour and marker) of each run, e.g. ``["gd", "ibcd"]`` to draw a
        run at :math:`\tau = m` as dense gradient descent.  By default each run takes its method's
        style, and several runs of one method are told apart by :func:`blockcd.styles.series` (a colour,
        marker and line style of their own per run, in the order given).  With ``keys`` given, every run is
        drawn in exactly its key's style, as the book's figures are.
    relative : bool
        Divide each curve by its value at :math:`x^0` (the y label says so).
    markevery : int, optional
        Marker spacing (default: about 8 markers per curve).
    floor : float
        A curve stops at its first entry at or below ``floor`` (after the division when
        ``relative``), so a run that reached zero, or round-off, ends where it did instead of
        plunging off the log axis.  The default 0 stops at an exact zero or a negative value: a
        gap :math:`f(x^k) - f^\star` is computed to about :math:`10^{-16}|f^\star|` and turns
        negative at round-off, which is where a converged run then ends.  Pass e.g.
        ``floor=1e-15`` to stop at a stated round-off level.
    **kw
        Passed to ``ax.semilogy`` for every curve (e.g. ``lw=1``).

    Returns
    -------
    matplotlib Axes
        With ``ax.convergence_ends``: for each run the index of the last entry drawn.
    """
    if isinstance(histories, (str, bytes)) or not isinstance(histories, Sequence) or not histories:
        raise TypeError("histories must be a non-empty list of History objects")
    from .history import History

    for i, h in enumerate(histories):
        if not isinstance(h, History):
            raise TypeError(f"histories[{i}] must be a History, got {type(h).__name__}")
    x = _x_axis(x)
    if y not in Y_VALUES:
        raise ValueError(f"y must be one of {Y_VALUES}, got {y!r}")
    floor = float(floor)
    if not np.isfinite(floor) or floor < 0:
        raise ValueError(f"floor must be a finite number >= 0, got {floor}")
    k = len(histories)
    if labels is not None:
        labels = list(labels)
        if len(labels) != k:
            raise ValueError(f"labels must have one entry per history ({k}), got {len(labels)}")
    if keys is not None:
        keys = list(keys)
        if len(keys) != k:
            raise ValueError(f"keys must have one entry per history ({k}), got {len(keys)}")
        unknown = [key for key in keys if key not in STYLE]
        if unknown:
            raise ValueError(f"keys must name entries of blockcd.styles.STYLE, got {unknown!r}; choose from "
                             f"{', '.join(STYLE)}")
        styles = [style(key, **kw) for key in keys]
    else:
        styles = _default_styles([h.method for h in histories], kw)
    if labels is None and keys is None:
        pairs = [(h.method, h.tau) for h in histories]
        labels = [run_label(h, step=pairs.count((h.method, h.tau)) > 1) for h in histories]
    elif labels is None:
        labels = [None] * k
    ax = ax_or_new(ax)
    ends = []
    for h, lab, st in zip(histories, labels, styles):
        if y != "grad2" and h.grad2 is not None:
            raise ValueError(f"y = {y!r} needs x*, and a history of a non-convex problem has none: use y='grad2'")
        if y == "grad2" and h.grad2 is None:
            raise ValueError("y='grad2' is recorded on non-convex problems only; this history has dist2 and gap")
        vals = np.asarray(getattr(h, y), dtype=float)
        if relative:
            with np.errstate(invalid="ignore", divide="ignore"):  # a start of 0 or inf: refused below
                vals = vals / vals[0]
        field_name = X_AXES[x][0]
        xs = np.arange(vals.size) if field_name is None else np.asarray(getattr(h, field_name), dtype=float)
        low = np.flatnonzero(~(vals > floor))   # at or below the floor, or NaN
        end = int(low[0]) if low.size else vals.size
        if end == 0:
            raise ValueError(f"run {len(ends)} ({lab or h.method}) has nothing to draw as y = {y!r}: "
                             + _why_empty(np.asarray(getattr(h, y), dtype=float), y, relative, floor))
        ends.append(end - 1)
        if lab is not None:
            st["label"] = lab
        st.setdefault("markevery", markevery or max(1, vals.size // 8))
        ax.semilogy(xs[:end], vals[:end], **st)
    ax.set_xlabel(X_AXES[x][1])
    ax.set_ylabel({"dist2": r"$\|x^k - x^\star\|^2 / \|x^0 - x^\star\|^2$" if relative else r"$\|x^k - x^\star\|^2$",
                   "gap": r"$(f(x^k) - f^\star) / (f(x^0) - f^\star)$" if relative else r"$f(x^k) - f^\star$",
                   "grad2": r"$\|\nabla f(x^k)\|^2 / \|\nabla f(x^0)\|^2$" if relative else r"$\|\nabla f(x^k)\|^2$",
                   }[y])
    ax.convergence_ends = ends
    return ax


def _default_styles(methods: list, kw: dict) -> list:
    """Each run's style when no ``keys`` are given: its method's own, for a method drawn once; for several
    runs of one method, and for a method without a style of its own (a user's), the :func:`series` styles
    in order, skipping those whose marker or colour another method in the plot already wears (so that a
    second IBCD run is not drawn in IS-SGD's orange squares, nor a user's method in IBCD's blue)."""
    from .styles import SERIES_COLORS, SERIES_MARKERS

    own = {mth for mth in methods if mth in STYLE and methods.count(mth) == 1}
    markers = {STYLE[mth].get("marker") for mth in own}
    colors = {STYLE[mth].get("color", "").lower() for mth in own}
    free = [j for j in range(len(SERIES_COLORS))
            if SERIES_MARKERS[j] not in markers and SERIES_COLORS[j].lower() not in colors]
    clash = len(free) < len(SERIES_COLORS)
    out, taken = [], 0
    for i, mth in enumerate(methods):
        if mth in own:
            out.append(style(mth, **kw))
            continue
        if not clash and mth in STYLE:  # no other method to avoid: the method's series, as before
            j = [k for k, other in enumerate(methods) if other == mth].index(i)
        else:
            # a user's method never takes slot 0, the blue circle that reads as IBCD
            pool = [k for k in free if k != 0 or mth in STYLE] or free
            j = pool[taken % len(pool)] if pool else taken
            taken += 1
        out.append(series(mth, j, **kw))
    return out


def _why_empty(raw: np.ndarray, y: str, relative: bool, floor: float) -> str:
    """Why a run's first value cannot start a curve on a log axis."""
    if np.all(np.isnan(raw)):
        return ("its gaps were not recorded (all NaN: the run had gap=False)" if y == "gap"
                else "every entry is NaN")
    if not np.isfinite(raw[0]):
        return f"its start value is {raw[0]}, not a finite number"
    if raw[0] <= 0 and relative:
        return f"its start value is {raw[0]:g}, which a relative curve cannot divide by (the run started at the optimum)"
    return f"its start value {raw[0]:g} is at or below floor = {floor:g}"


def rate_line(ax, rate: float, iters: int, start: float = 1.0, **kw):
    """Overlay the theoretical linear rate start * rate^k on a convergence plot."""
    k = np.arange(iters + 1)
    st = style("theory", **kw)
    ax.semilogy(k, start * rate**k, **st)
    return ax


def against_tau(taus, measured, predicted=None, ax=None, *, key: str = "ibcd", mark: float | None = None,
                mark_label: str | None = None, ylabel: str = "iterations", logy: bool = False, **kw):
    """Measured values against tau (markers) with the prediction (dashed line) and an optional mark.

    Parameters
    ----------
    taus, measured : arrays of one length
        The tau values (a log axis) and what was measured at each.
    predicted : array or None
        The theory's values at the same taus, drawn dashed in the method's colour.
    ax : matplotlib Axes or None
        Drawn into; a new figure with the book's defaults when None.
    key : str
        The :data:`blockcd.styles.STYLE` entry of the markers.
    mark : float or None
        A tau to mark with a dotted vertical line (e.g. m/n).
    mark_label : str or None
        The mark's legend entry (None: the mathtext of tau = m/n).
    ylabel : str
    logy : bool
        A log y axis.
    **kw
        Overrides of the markers' style.

    Returns
    -------
    matplotlib Axes
    """
    ax = ax_or_new(ax)
    taus = np.asarray(taus)
    st = style(key, **kw)
    ax.plot(taus, measured, ls="none", **st)
    if predicted is not None:
        ax.plot(taus, predicted, color=st["color"], ls="--", lw=1.5, label=f"{st.get('label', key)} (theory)")
    if mark is not None:
        ax.axvline(mark, color="0.5", ls=":", lw=1.5, label=_MARK_LABEL if mark_label is None else mark_label)
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(r"blocks sent per worker per iteration, $\tau$")
    ax.set_ylabel(ylabel)
    return ax


def tradeoff(taus, iterations, blocks_sent, *, axes=None, key: str = "ibcd", predicted_iterations=None,
             predicted_blocks=None, mark: float | None = None):
    """The two trade-off curves side by side: iterations and blocks sent to accuracy against tau."""
    if axes is None:
        setup()
        # 860 px, shown at 91% in the book's column: the text stays above 80% of the body's size
        _, axes = plt.subplots(1, 2, figsize=(8.6, 3.8), layout="constrained")
    against_tau(taus, iterations, predicted_iterations, axes[0], key=key, mark=mark,
                ylabel="iterations to accuracy")
    against_tau(taus, blocks_sent, predicted_blocks, axes[1], key=key, mark=mark,
                ylabel="blocks sent per worker to accuracy", logy=True)
    axes[0].legend(loc="lower left", bbox_to_anchor=(0.0, 1.02), ncol=3)   # above, off the data
    return axes


def time_split(measurements, ax=None, *, xlabel: str = "rank", unit: float = 1e-3):
    """Stacked bars of each rank's mean time per iteration: compute, then communication.

    ``measurements`` is a :class:`blockcd.mpi.Measurements` (chapter 10); bar 0 is
    the master, bar i worker i (rank i, ticked ``w1``, ``w2``, ...: the book numbers
    workers from 1).  Communication is the time inside MPI calls, waiting for the
    slowest peer included; the master's evaluation of the error
    (not part of the method) is left out.  ``unit`` is the time unit in seconds
    (milliseconds by default).
    """
    ax = ax_or_new(ax)
    comp = np.asarray(measurements.compute).mean(axis=1) / unit
    comm = np.asarray(measurements.comm).mean(axis=1) / unit
    ranks = np.arange(comp.size)
    ax.bar(ranks, comp, color="#1f77b4", label="compute")
    ax.bar(ranks, comm, bottom=comp, color="#c7c7c7", label="communication (incl. waiting)")
    ax.set_xticks(ranks, ["master"] + [f"w{i}" for i in range(1, comp.size)])
    ax.set_xlabel(xlabel)
    ax.set_ylabel({1e-3: "milliseconds per iteration", 1e-6: "microseconds per iteration",
                   1.0: "seconds per iteration"}.get(unit, f"time per iteration ({unit:g} s)"))
    ax.grid(axis="x", visible=False)
    return ax

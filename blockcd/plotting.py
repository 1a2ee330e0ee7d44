"""The book's recurring figures, with one colour and marker per method.

Every chapter draws with these functions so that a method looks the same
everywhere: :data:`STYLE` fixes colour, marker and label per method, and
:func:`setup` applies the book's matplotlib defaults :data:`RC_PARAMS`
(``lw=2``, grid, no top and right spines; lowercase labels and no titles:
captions come from the notebook cell's metadata).  Nothing here
runs a method; pass :class:`~blockcd.History` objects or arrays.
:func:`convergence` draws a researcher's runs side by side: several runs of one
method (several tau) in shades of its colour, each labelled with its tau, against
iterations, blocks or bytes, and each curve ends where its error reaches zero.
:func:`selection_grid` draws the block choices of
:class:`~blockcd.blocks.BlockSampler` themselves, the idea of chapters 1 and 3.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from ._validate import check_int, check_seed

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

#: the book's matplotlib rc defaults: :func:`setup` applies them globally; a figure built
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


def _ax(ax):
    if ax is None:
        setup()
        _, ax = plt.subplots()
    return ax


#: the x axes :func:`convergence` draws against, with the History field each reads; the History
#: field names themselves (``"blocks_up"``, ``"bytes_up"``, ``"bytes_down"``) are accepted too
X_AXES = {
    "iteration": (None, "iteration k"),
    "blocks": ("blocks_up", "blocks sent per worker"),
    "bytes": ("bytes_up", "bytes sent per worker"),
    "bytes_down": ("bytes_down", "bytes received per worker"),
}
_X_ALIASES = {"iterations": "iteration", "blocks_up": "blocks", "bytes_up": "bytes"}
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
        Drawn into; a new figure with the book's defaults (:func:`setup`) when None.
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
        The :data:`STYLE` entry (colour and marker) of each run, e.g. ``["gd", "ibcd"]`` to draw a
        run at :math:`\tau = m` as dense gradient descent.  By default each run takes its method's
        style, and several runs of one method are told apart by :func:`shade` (one shade and one
        line style per run, dark to light in the order given).  With ``keys`` given, every run is
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
        styles = [style(key, **kw) for key in keys]
    else:
        methods = [h.method for h in histories]
        styles = []
        for i, h in enumerate(histories):
            same = [j for j, mth in enumerate(methods) if mth == h.method]
            styles.append(shade(h.method, same.index(i), len(same), **kw) if len(same) > 1 else style(h.method, **kw))
    if labels is None and keys is None:
        pairs = [(h.method, h.tau) for h in histories]
        labels = [run_label(h, step=pairs.count((h.method, h.tau)) > 1) for h in histories]
    elif labels is None:
        labels = [None] * k
    ax = _ax(ax)
    ends = []
    for h, lab, st in zip(histories, labels, styles):
        if y != "grad2" and h.grad2 is not None:
            raise ValueError(f"y = {y!r} needs x*, and a history of a non-convex problem has none: use y='grad2'")
        if y == "grad2" and h.grad2 is None:
            raise ValueError("y='grad2' is recorded on non-convex problems only; this history has dist2 and gap")
        vals = np.asarray(getattr(h, y), dtype=float)
        if relative:
            vals = vals / vals[0]
        field_name = X_AXES[x][0]
        xs = np.arange(vals.size) if field_name is None else np.asarray(getattr(h, field_name), dtype=float)
        low = np.flatnonzero(~(vals > floor))   # at or below the floor, or NaN
        end = int(low[0]) if low.size else vals.size
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


def rate_line(ax, rate: float, iters: int, start: float = 1.0, **kw):
    """Overlay the theoretical linear rate start * rate^k on a convergence plot."""
    k = np.arange(iters + 1)
    st = style("theory", **kw)
    ax.semilogy(k, start * rate**k, **st)
    return ax


def against_tau(taus, measured, predicted=None, ax=None, *, key: str = "ibcd", mark: float | None = None,
                mark_label: str = r"$\tau = m/n$", ylabel: str = "iterations", logy: bool = False, **kw):
    """Measured values against tau (markers) with the prediction (dashed line) and an optional mark."""
    ax = _ax(ax)
    taus = np.asarray(taus)
    st = style(key, **kw)
    ax.plot(taus, measured, ls="none", **st)
    if predicted is not None:
        ax.plot(taus, predicted, color=st["color"], ls="--", lw=1.5, label=f"{st.get('label', key)} (theory)")
    if mark is not None:
        ax.axvline(mark, color="0.5", ls=":", lw=1.5, label=mark_label)
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
        _, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    against_tau(taus, iterations, predicted_iterations, axes[0], key=key, mark=mark,
                ylabel="iterations to accuracy")
    against_tau(taus, blocks_sent, predicted_blocks, axes[1], key=key, mark=mark,
                ylabel="blocks sent per worker to accuracy", logy=True)
    axes[0].legend()
    return axes


def time_split(measurements, ax=None, *, xlabel: str = "rank", unit: float = 1e-3):
    """Stacked bars of each rank's mean time per iteration: compute, then communication.

    ``measurements`` is a :class:`blockcd.mpi.Measurements` (chapter 10); bar 0 is
    the master, bar i the worker i - 1.  Communication is the time inside MPI calls,
    waiting for the slowest peer included; the master's evaluation of the error
    (not part of the method) is left out.  ``unit`` is the time unit in seconds
    (milliseconds by default).
    """
    ax = _ax(ax)
    comp = np.asarray(measurements.compute).mean(axis=1) / unit
    comm = np.asarray(measurements.comm).mean(axis=1) / unit
    ranks = np.arange(comp.size)
    ax.bar(ranks, comp, color="#1f77b4", label="compute")
    ax.bar(ranks, comm, bottom=comp, color="#c7c7c7", label="communication (incl. waiting)")
    ax.set_xticks(ranks, ["master"] + [f"w{i}" for i in range(comp.size - 1)])
    ax.set_xlabel(xlabel)
    ax.set_ylabel({1e-3: "milliseconds per iteration", 1e-6: "microseconds per iteration",
                   1.0: "seconds per iteration"}.get(unit, f"time per iteration ({unit:g} s)"))
    ax.grid(axis="x", visible=False)
    return ax


#: largest grid :func:`selection_grid` draws (beyond it the counts no longer fit in the cells)
SELECTION_MAX_N = 32
SELECTION_MAX_M = 48
#: up to this many blocks the two panels stand side by side, beyond it one above the other
SELECTION_BESIDE_M = 20
#: the marks of the "what reaches the master" row: a block from nobody, from one worker, from two or more
COVERAGE_MARKS = {
    "nobody": {"facecolor": "#ececec", "hatch": "///", "edgecolor": "#a6a6a6", "label": "from nobody"},
    "once": {"facecolor": "white", "hatch": None, "edgecolor": "#7f7f7f", "label": "from one worker"},
    "several": {"facecolor": "#4d4d4d", "hatch": None, "edgecolor": "#4d4d4d",
                "label": "from two or more workers"},
}


def _coverage_kind(count: int) -> str:
    return "nobody" if count == 0 else "once" if count == 1 else "several"


def selection_grid(n: int, m: int, tau: int, *, seed: int = 0, iteration: int = 0, axes=None):
    r"""Who sends which block in one round: independent sampling beside shared sampling.

    Each panel is an n x m grid, workers (rows, top to bottom) by blocks
    (columns); a shaded cell is a block the worker sends.  The choices are
    those of :class:`~blockcd.blocks.BlockSampler` with this ``seed`` at
    iteration ``iteration``, the choices :func:`blockcd.run` makes: on the
    left every worker draws its own tau blocks
    (``sampling='independent'``), on the right one draw serves all workers
    (``sampling='shared'``).  Below each grid, the row *what reaches the
    master* gives, per block, the number of workers that sent it (the column
    sum); a block that arrives from nobody is hatched and one that arrives
    from two or more workers is filled dark, as the legend says.  The
    expected number of blocks nobody sends is :math:`m(1 - \tau/m)^n` under
    independent sampling and exactly :math:`m - \tau` under shared sampling
    (chapter 3, the coverage lemma).

    Parameters
    ----------
    n : int in [1, 32]
        Workers (rows).
    m : int in [1, 48]
        Blocks (columns).
    tau : int in [1, m]
        Blocks each worker sends.
    seed : int >= 0
        The run seed of the samplers.
    iteration : int >= 0
        The round whose choices are drawn.
    axes : pair of matplotlib Axes, optional
        Where to draw the two panels; by default a new figure, the panels side
        by side up to m = 20 blocks and one above the other beyond, so that
        the counts stay readable.

    Returns
    -------
    matplotlib Figure
        The figure holding the two panels.  Panel j's Axes keeps the drawn
        (n, m) mask as ``axes[j].selection_mask`` and the per-block counts as
        ``axes[j].selection_counts``.

    Raises
    ------
    TypeError
        If ``n``, ``m``, ``tau``, ``seed`` or ``iteration`` is not an integer,
        or ``axes`` is not a pair of Axes.
    ValueError
        If one of them is outside its range.
    """
    from .blocks import SAMPLINGS, BlockSampler

    n = check_int("n", n, 1, SELECTION_MAX_N)
    m = check_int("m", m, 1, SELECTION_MAX_M)
    tau = check_int("tau", tau, 1, m)
    seed = check_seed("seed", seed)
    iteration = check_int("iteration", iteration, 0)
    beside = m <= SELECTION_BESIDE_M
    if axes is None:
        setup()
        if beside:
            cell = min(0.4, 8.8 / (2 * m))
            size = (2 * m * cell + 1.9, (n + 1.5) * cell + 1.9)
        else:
            cell = min(0.4, 9.0 / m)
            size = (m * cell + 1.6, 2 * ((n + 1.5) * cell + 1.2) + 0.7)
        fig, axes = plt.subplots(1, 2, figsize=size, layout="constrained") if beside else \
            plt.subplots(2, 1, figsize=size, layout="constrained")
        fig.get_layout_engine().set(wspace=0.04, hspace=0.04)
    else:
        try:
            axes = list(axes)
        except TypeError:
            raise TypeError(f"axes must be a pair of matplotlib Axes, got {type(axes).__name__}") from None
        if len(axes) != 2 or not all(isinstance(a, mpl.axes.Axes) for a in axes):
            raise TypeError(f"axes must be a pair of matplotlib Axes, got {len(axes)} object(s) "
                            f"of types {[type(a).__name__ for a in axes]}")
        fig = axes[0].figure
    # the figure is shown at about 7 inches in the HTML page: fonts large enough to survive the shrink
    cell_font = 12 if m > 24 else 13 if m > 16 else 14
    for ax, sampling in zip(axes, SAMPLINGS):
        mask = np.array(BlockSampler(n, m, tau, seed=seed, sampling=sampling).masks(iteration), dtype=bool)
        counts = mask.sum(axis=0)
        colour = STYLE[sampling]["color"]
        ax.selection_mask, ax.selection_counts = mask, counts
        for i in range(n):
            for j in range(m):
                ax.add_patch(mpl.patches.Rectangle(
                    (j, i), 1, 1, facecolor=colour if mask[i, j] else "white", edgecolor="#bfbfbf", lw=0.8,
                    gid=f"cell-{i}-{j}"))
        row = n + 0.5                       # the master's row, half a cell below the grid
        for j, c in enumerate(counts):
            mark = COVERAGE_MARKS[_coverage_kind(int(c))]
            ax.add_patch(mpl.patches.Rectangle(
                (j, row), 1, 1, facecolor=mark["facecolor"], edgecolor=mark["edgecolor"],
                hatch=mark["hatch"], lw=1.0, gid=f"count-{j}"))
            ax.text(j + 0.5, row + 0.5, str(int(c)), ha="center", va="center", fontsize=cell_font,
                    color="white" if c >= 2 else "black", fontweight="bold" if c >= 2 else "normal",
                    gid=f"count-{j}")
        ax.set_xlim(0, m)
        ax.set_ylim(row + 1, 0)
        ax.set_aspect("equal")
        ax.grid(False)
        for side in ax.spines.values():
            side.set_visible(False)
        step = 1 if m <= 12 else 5
        ax.set_xticks(np.arange(0, m, step) + 0.5, [str(j + 1) for j in range(0, m, step)])
        if beside and ax is not axes[0]:
            ax.set_yticks([])               # the left panel names the rows of both
        else:
            wk = list(range(0, n, 1 if n <= 12 else 5))
            ax.set_yticks([i + 0.5 for i in wk] + [row + 0.5],
                          [f"worker {i + 1}" for i in wk] + ["to the master"])
        ax.tick_params(length=0, labelsize=13)
        nobody, several = int(np.sum(counts == 0)), int(np.sum(counts >= 2))
        ax.set_xlabel(f"block\n{STYLE[sampling]['label']}\n{nobody} from nobody, {several} from two or more",
                      fontsize=13)
    handles = [mpl.patches.Patch(facecolor=mk["facecolor"], edgecolor=mk["edgecolor"], hatch=mk["hatch"],
                                 label=mk["label"]) for mk in COVERAGE_MARKS.values()]
    handles += [mpl.patches.Patch(facecolor=STYLE[s]["color"], label=f"sent ({STYLE[s]['label']})")
                for s in SAMPLINGS]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=13)
    return fig


#: colours of the segments :func:`round_timeline` draws (worker messages alternate two blues)
TIMELINE_COLORS = {"compute": "#ff7f0e", "latency": "#d62728", "worker": ("#1f77b4", "#9ecae1"),
                   "broadcast": "#c7c7c7"}


def round_timeline(rows: dict, ax=None, *, unit: float = 1e-3):
    r"""One round as a horizontal bar of consecutive segments, one bar per row (chapter 9).

    ``rows`` maps a row label (e.g. ``"dense, τ = m"``) to the segments of
    :func:`blockcd.network.round_segments`, a list of (name, seconds).  Each
    bar starts at 0 and lays the segments end to end: compute (orange), the
    latency (red), the workers' messages into the master (alternating blues,
    one per worker), and a hatched grey broadcast if present.  The x axis is
    time in ``unit`` seconds (milliseconds by default); the first row is drawn
    at the top.  Returns the Axes; ``ax.timeline_totals`` holds each row's
    drawn length in seconds (the broadcast excluded), marked on each bar by a
    black tick labelled T, for the chapter's assert
    against :func:`blockcd.network.round_time`.
    """
    if not isinstance(rows, dict) or not rows:
        raise TypeError("rows must be a non-empty dict {label: [(segment name, seconds), ...]}")
    ax = _ax(ax)
    totals = {}
    labels = list(rows)
    for y, label in enumerate(labels):
        start, total, w = 0.0, 0.0, 0
        for name, seconds in rows[label]:
            seconds = float(seconds)
            if not np.isfinite(seconds) or seconds < 0:
                raise ValueError(f"segment {name!r} of row {label!r} must last >= 0 seconds, got {seconds}")
            kw = {"height": 0.6, "edgecolor": "white", "linewidth": 0.5}
            if name.startswith("worker"):
                kw["color"] = TIMELINE_COLORS["worker"][w % 2]
                w += 1
            elif name == "broadcast":
                kw.update(color=TIMELINE_COLORS["broadcast"], hatch="//", edgecolor="#7f7f7f")
            else:
                kw["color"] = TIMELINE_COLORS.get(name, "#7f7f7f")
            ax.barh(-y, seconds / unit, left=start / unit, **kw)
            start += seconds
            if name != "broadcast":
                total += seconds
        totals[label] = total
        ax.plot([total / unit] * 2, [-y - 0.38, -y + 0.38], color="k", lw=1.5)
        suffix = {1e-3: " ms", 1e-6: " µs", 1.0: " s"}.get(unit, "")
        ax.text(total / unit, -y + 0.4, f"T = {total / unit:.3g}{suffix}", ha="center", va="bottom", fontsize=9)
    handles = [mpl.patches.Patch(color=TIMELINE_COLORS["compute"], label="compute"),
               mpl.patches.Patch(color=TIMELINE_COLORS["latency"], label="latency α"),
               mpl.patches.Patch(color=TIMELINE_COLORS["worker"][0], label="workers' messages, one after another")]
    if any(name == "broadcast" for segs in rows.values() for name, _ in segs):
        handles.append(mpl.patches.Patch(facecolor=TIMELINE_COLORS["broadcast"], hatch="//",
                                         edgecolor="#7f7f7f", label="broadcast of the iterate"))
    ax.legend(handles=handles, loc="lower right", fontsize=9)
    ax.set_yticks([-y for y in range(len(labels))], labels)
    ax.set_xlabel({1e-3: "time in the round (ms)", 1e-6: "time in the round (µs)",
                   1.0: "time in the round (s)"}.get(unit, f"time in the round ({unit:g} s)"))
    ax.grid(axis="y", visible=False)
    ax.timeline_totals = totals
    return ax


def round_messages(n: int, d: int, m: int, tau: int, ax=None, *, bytes_per_number: int = 8,
                   label: str | None = None):
    r"""The ranks of an MPI job and the messages of one round (chapter 10).

    Rank 0, the master, sits on top; ranks 1 to n, the workers, below.  Grey
    arrows are the broadcast of the iterate, :math:`8d` bytes that every worker
    receives; coloured arrows are the workers' messages, the values of
    :math:`\tau` blocks, :math:`8\tau d/m` bytes each (blocks of equal size),
    their width in proportion to their size.  The text on top gives what the
    master's link takes in per round, :math:`8n\tau d/m` bytes: :math:`8nd` dense,
    :math:`8d` at :math:`\tau = m/n`, after ``label`` if one is given.
    ``bytes_per_number`` is 8 for float64; at most 16 workers are drawn.

    Returns the Axes; ``ax.message_bytes`` holds the drawn numbers,
    ``{'up': ..., 'into_master': ..., 'down': ...}``, for the chapter's assert
    against the bytes the ranks counted.
    """
    n = check_int("n", n, 1, 16)
    d = check_int("d", d, 1)
    m = check_int("m", m, 1, d)
    tau = check_int("tau", tau, 1, m)
    bytes_per_number = check_int("bytes_per_number", bytes_per_number, 1)
    ax = _ax(ax)
    up = bytes_per_number * tau * d / m
    down = float(bytes_per_number * d)
    xm = (n - 1) / 2
    colour = STYLE["ibcd"]["color"]
    box = {"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "0.3"}
    for i in range(n):
        spread = 0.08 * (i - xm)   # each worker's arrows meet the master at their own place
        ax.annotate("", xy=(i - 0.12, 0.18), xytext=(xm + spread - 0.1, 0.82),
                    arrowprops={"arrowstyle": "-|>", "color": "0.6", "lw": 4.0, "shrinkA": 0, "shrinkB": 0})
        ax.annotate("", xy=(xm + spread + 0.1, 0.82), xytext=(i + 0.12, 0.18),
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 0.6 + 3.4 * up / down,
                                "shrinkA": 0, "shrinkB": 0})
        ax.text(i, 0.05, f"rank {i + 1}\nworker {i}", ha="center", va="center", fontsize=10, bbox=box)
    ax.text(xm, 0.95, "rank 0\nmaster", ha="center", va="center", fontsize=10, bbox=box)
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a string or None, got {type(label).__name__}")
    top = f"into the master: {up * n:,.0f} bytes per round"
    ax.text(xm, 1.2, top if label is None else f"{label}\n{top}", ha="center", va="center", fontsize=11)
    handles = [mpl.lines.Line2D([], [], color="0.6", lw=4.0, label=f"down: the iterate, {down:,.0f} bytes"),
               mpl.lines.Line2D([], [], color=colour, lw=0.6 + 3.4 * up / down,
                                label=f"up: {tau} of {m} blocks, {up:,.0f} bytes")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=1, fontsize=10)
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_ylim(-0.1, 1.32)
    ax.set_axis_off()
    ax.message_bytes = {"up": up, "into_master": up * n, "down": down}
    return ax

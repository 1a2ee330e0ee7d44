"""Pictures of the book's ideas, drawn from the library's own objects.

:func:`selection_grid` draws the block choices of :class:`~blockcd.blocks.BlockSampler`
(independent beside shared sampling, and what reaches the master), the idea of chapters 1 and 3;
:func:`round_timeline` one round of the time model (chapter 9); :func:`round_messages` the messages
of one round between the MPI ranks (chapter 10).  Colours and markers are those of
:data:`blockcd.styles.STYLE`; :mod:`blockcd.plotting` exports these functions too.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.legend_handler import HandlerTuple

from ._validate import check_int, check_seed
from .styles import STYLE, ax_or_new, setup

#: largest grid :func:`selection_grid` draws (beyond it the counts no longer fit in the cells)
SELECTION_MAX_N = 32
SELECTION_MAX_M = 48
#: up to this many blocks the two panels stand side by side, beyond it one above the other
SELECTION_BESIDE_M = 20
#: the marks of the "what reaches the master" row, for a block from nobody, from one worker, from two or more
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
            size = (2 * m * cell + 1.9, (n + 1.5) * cell + 2.4)
        else:
            cell = min(0.4, 9.0 / m)
            size = (m * cell + 1.6, 2 * ((n + 1.5) * cell + 1.4) + 0.9)
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
        # a short panel name on top; the block axis and the panel's counts underneath
        ax.set_title(STYLE[sampling]["label"], fontsize=14, pad=8)
        ax.set_xlabel(f"block\n{nobody} from nobody, {several} from two or more", fontsize=13)
    # the legend in a row of its own under both panels, clear of the grids and their labels
    handles = [mpl.patches.Patch(facecolor=STYLE[s]["color"], label=f"sent ({STYLE[s]['label'].split()[0]})")
               for s in SAMPLINGS]
    handles += [mpl.patches.Patch(facecolor=mk["facecolor"], edgecolor=mk["edgecolor"], hatch=mk["hatch"],
                                  label=mk["label"]) for mk in COVERAGE_MARKS.values()]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=13, columnspacing=2.0)
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
    ax = ax_or_new(ax)
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
        ax.text(total / unit, -y + 0.4, f"T = {total / unit:.3g}{suffix}", ha="center", va="bottom", fontsize=10)
    handles = [mpl.patches.Patch(color=TIMELINE_COLORS["compute"]),
               mpl.patches.Patch(color=TIMELINE_COLORS["latency"]),
               # both shades the messages alternate in, side by side in one swatch
               (mpl.patches.Patch(color=TIMELINE_COLORS["worker"][0]),
                mpl.patches.Patch(color=TIMELINE_COLORS["worker"][1]))]
    labels_ = ["compute", "latency α", "workers' messages, one after another"]
    if any(name == "broadcast" for segs in rows.values() for name, _ in segs):
        handles.append(mpl.patches.Patch(facecolor=TIMELINE_COLORS["broadcast"], hatch="//",
                                         edgecolor="#7f7f7f"))
        labels_.append("broadcast of the iterate")
    # above the axes, off the bars, whichever row is the shortest
    ax.legend(handles, labels_, loc="lower left", bbox_to_anchor=(0, 1.08), ncol=2,
              handler_map={tuple: HandlerTuple(ndivide=None, pad=0)})
    ax.set_yticks([-y for y in range(len(labels))], labels)
    ax.set_xlabel({1e-3: "time in the round (ms)", 1e-6: "time in the round (µs)",
                   1.0: "time in the round (s)"}.get(unit, f"time in the round ({unit:g} s)"))
    ax.grid(axis="y", visible=False)
    ax.timeline_totals = totals
    return ax


def round_messages(n: int, d: int, m: int, tau: int, ax=None, *, bytes_per_number: int = 8,
                   label: str | None = None):
    r"""The ranks of an MPI job and the messages of one round (chapter 10).

    Rank 0, the master, sits on top; ranks 1 to n below, worker i on rank i
    (the book numbers workers from 1).  Grey arrows are the broadcast of the
    iterate, :math:`8d` bytes that every worker receives; coloured arrows are
    the workers' messages, the values of :math:`\tau` blocks, :math:`8\tau d/m`
    bytes each (blocks of equal size), their width in proportion to their size.
    The text on top gives what the master's link takes in per round,
    :math:`8n\tau d/m` bytes: :math:`8nd` dense, :math:`8d` at :math:`\tau = m/n`,
    after ``label`` if one is given.
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
    ax = ax_or_new(ax)
    up = bytes_per_number * tau * d / m
    down = float(bytes_per_number * d)
    xm = (n - 1) / 2
    colour = STYLE["ibcd"]["color"]
    box = {"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "0.3"}
    # readable at the page's width; smaller only when many boxes share it
    size, box_size = (12, 11) if n <= 4 else (11, 10)
    for i in range(n):
        spread = 0.08 * (i - xm)   # each worker's arrows meet the master at their own place
        ax.annotate("", xy=(i - 0.12, 0.18), xytext=(xm + spread - 0.1, 0.82),
                    arrowprops={"arrowstyle": "-|>", "color": "0.6", "lw": 4.0, "shrinkA": 0, "shrinkB": 0})
        ax.annotate("", xy=(xm + spread + 0.1, 0.82), xytext=(i + 0.12, 0.18),
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 0.6 + 3.4 * up / down,
                                "shrinkA": 0, "shrinkB": 0})
        ax.text(i, 0.05, f"rank {i + 1}\nworker {i + 1}", ha="center", va="center", fontsize=box_size, bbox=box)
    ax.text(xm, 0.95, "rank 0\nmaster", ha="center", va="center", fontsize=box_size, bbox=box)
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a string or None, got {type(label).__name__}")
    top = f"into the master: {up * n:,.0f} bytes per round"
    ax.text(xm, 1.2, top if label is None else f"{label}\n{top}", ha="center", va="center", fontsize=size)
    handles = [mpl.lines.Line2D([], [], color="0.6", lw=4.0, label=f"down: the iterate, {down:,.0f} bytes"),
               mpl.lines.Line2D([], [], color=colour, lw=0.6 + 3.4 * up / down,
                                label=f"up: {tau} of {m} blocks, {up:,.0f} bytes")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=1, fontsize=size)
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_ylim(-0.1, 1.32)
    ax.set_axis_off()
    ax.message_bytes = {"up": up, "into_master": up * n, "down": down}
    return ax

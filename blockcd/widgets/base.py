"""The explorers' base class: :class:`Explorer`, controls and a figure redrawn on every move.

An explorer lays out its controls (:mod:`blockcd.widgets.controls`), draws on a figure
outside pyplot (:mod:`blockcd.widgets.canvas`), redraws in the background in a live
kernel, coalescing moves and computing the next values of the last moved slider ahead
(:mod:`blockcd.widgets.threads`), and shows a kernel-free sweep in the book's HTML
(:mod:`blockcd.widgets.player`).  Nothing here builds a problem, runs a method or knows a
chapter: caches are in :mod:`blockcd.widgets.cache`, the explorers in one module per
chapter (read :mod:`blockcd.widgets.convergence` next).
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

import ipywidgets as W
import matplotlib as mpl

from .. import plotting
from ..drawing import Interrupted, interrupt_when
from .canvas import artists, axis_limits, encode, figure, layout_key, set_limits, union_limits
from .controls import STEPPED, Panel, grid, int_slider, message, stepped
from .player import MAX_FRAMES, jshtml, sweep_size
from .threads import RENDER, in_kernel, one_blas_thread, prompt_switching

_LIVE_DPI = 72

#: the number of moves scheduled in this process (a computation ahead stops when it changes)
_MOVES = [0]
_MOVED = threading.Condition()
#: how many values ahead of the last move an explorer computes (``Explorer._ahead``), and how many seconds after the
#: redraw it starts: the redrawn figure is then on its way to the browser (the server forwards it, the
#: browser paints it), and computing at once took a core from them on a two-core machine (last key press to
#: redrawn figure in chapter 4, median of 10: 110 ms computing at once, 84-92 ms after 0.15-0.3 s, 118 ms
#: without computing ahead)
AHEAD_STEPS = 3
AHEAD_DELAY = 0.2


class Explorer:
    """Controls, a figure redrawn on every move, and a pre-rendered sweep for the HTML.

    Subclasses define ``_controls(**defaults)`` (name -> widget), ``_limits(params)``
    (the sliders whose end depends on other controls, such as tau <= m), ``_setup(fig)``
    (create the artists, return a dict), ``_update(art, params)`` (recompute and
    redraw; returns the HTML of the line under the figure) and ``_frames()``
    (parameter sets of the sweep); those whose redraws compute runs also define
    ``_prefetch(params)`` (fill the caches for a redraw at ``params``), and the
    next values of the last moved slider are then computed ahead in a live kernel.

    Attributes
    ----------
    controls : dict of ipywidgets
    figure : matplotlib Figure
        The live view.
    image : ipywidgets.Image
        The last render.
    info : ipywidgets.HTML
        The line under the figure (numbers, or the divergence message).
    timings : list of float
        Seconds per callback (wall clock).
    cpu_timings : list of float
        CPU seconds of this process per callback.
    last : dict
        What the last callback computed (plotted arrays, runs).
    moved : tuple or None
        (control name, +1 or -1) of the reader's last slider move.
    """

    name = "explorer"
    figsize = (9.0, 3.4)
    adjust: ClassVar[dict] = {"left": 0.08, "right": 0.98, "bottom": 0.15, "top": 0.9, "wspace": 0.3}

    def __init__(self, **defaults):
        self.controls: dict[str, W.Widget] = self._controls(**defaults)
        self.figure = figure(self.figsize, _LIVE_DPI, self.adjust)
        with mpl.rc_context(plotting.RC_PARAMS):
            self.art = self._setup(self.figure)
        # the artists that change are drawn over a cached background (blitting); a full
        # draw happens only when the background changes (limits, legend)
        self._dynamic = list(dict.fromkeys(artists(self.art)))
        for a in self._dynamic:
            a.set_animated(True)
        self._background = None
        self._key = None
        width = f"{round(self.figsize[0] * _LIVE_DPI)}px"
        self.image = W.Image(format="png", layout=W.Layout(width=width, max_width="100%", height="auto"))
        self.info = W.HTML()
        self.timings: list[float] = []
        self.cpu_timings: list[float] = []
        self.last: dict[str, Any] = {}
        self._syncing = False
        # coalescing: moves raise ``_wanted``; one redraw at a time runs in a thread, then redraws
        # once more, for the newest values only, if controls moved meanwhile
        self._wanted = 0
        self._busy = False
        self._idle = threading.Event()
        self._idle.set()
        self._quiet = threading.Event()  # set when nothing runs in the background (no redraw, no computing ahead)
        self._quiet.set()
        self._lock = threading.Lock()
        self.background = in_kernel()
        #: (control name, +1 or -1) of the reader's last move of a slider, whose next values are computed
        #: ahead while the kernel is idle (``_ahead``); None before any move
        self.moved: tuple[str, int] | None = None
        with one_blas_thread():
            self._link()
        for name, w in self.controls.items():
            w.observe(lambda change, name=name: self._note_move(name, change), names="value")
            w.observe(self._on_change, names="value")
        self.widget = Panel(f"blockcd {self.name} explorer", children=[grid(self.controls.values(), width),
                                                                          self.image, self.info])
        self.refresh()

    # -- subclasses
    def _controls(self, **defaults) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _limits(self, params: dict):
        """The sliders whose range depends on other controls: (name, upper end in the slider's own units)
        pairs for the controls' values ``params``, in the order they apply.  A generator: each pair is
        computed after the ones before it have clamped ``params`` (tau's end is m once m is clamped)."""
        return iter(())

    def _link(self) -> None:
        """Set the dependent sliders' ranges for the current values (:meth:`linked`)."""
        self.linked(self.params(), apply=True)

    def linked(self, params: dict, *, apply: bool = False) -> dict:
        """``params`` as the controls hold them once the dependent ranges are applied: a value above its
        slider's new end becomes the end, as ipywidgets clamps it.  With ``apply``, the sliders' ranges
        are set (which clamps the controls themselves)."""
        p = dict(params)
        for name, hi in self._limits(p):
            w = self.controls[name]
            if apply:
                w.max = hi
                p[name] = w.value
            else:
                p[name] = min(p[name], w.base**hi if isinstance(w, W.FloatLogSlider) else hi)
        return p

    def _setup(self, fig) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _update(self, art: dict, params: dict) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _frames(self) -> list[dict]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _prefetch(self, params: dict) -> None:
        """Compute into the caches what a redraw at ``params`` will need, without drawing.  Explorers that
        define it have the next values of the last moved slider computed ahead; the others' redraws are
        quick anyway."""
        raise NotImplementedError

    @property
    def computes_ahead(self) -> bool:
        """Whether, in a live kernel, the next values of the last moved slider are computed into the caches
        after a redraw (the explorers whose redraws compute runs: convergence, playground, template and
        trade-off)."""
        return type(self)._prefetch is not Explorer._prefetch

    # -- machinery
    def params(self) -> dict:
        """Current values of the controls."""
        return {k: w.value for k, w in self.controls.items()}

    def _note_move(self, name: str, change) -> None:
        """Remember which slider the reader moved, and which way (not the moves the explorer makes itself)."""
        w = self.controls[name]
        if self._syncing or not isinstance(w, STEPPED) or change["old"] == change["new"]:
            return
        self.moved = (name, 1 if change["new"] > change["old"] else -1)

    def _on_change(self, change) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:  # _link may build a problem (the playground's step range): one BLAS thread, as the redraws
            with one_blas_thread():
                self._link()
        finally:
            self._syncing = False
        self._schedule()

    def _schedule(self) -> None:
        """Redraw after a control moved: now, or, in a live kernel, coalesced in the background.

        In a kernel (``self.background``) the observer returns at once, so the kernel
        reads the next slider message while the figure is drawn; a move that arrives
        during a redraw is not drawn by itself: when the redraw ends, one more is made
        for the values the controls hold then.  A slider dragged over ten values thus
        costs two redraws, not ten.  Once the figure is drawn and no move waits, the
        same thread computes the next values of the last moved slider (``_ahead``).
        """
        if not self.background:
            self.refresh()
            return
        with _MOVED:
            _MOVES[0] += 1
            _MOVED.notify_all()
        with self._lock:
            self._wanted += 1
            self._idle.clear()
            if self._busy:
                return
            self._busy = True
            self._quiet.clear()
        threading.Thread(target=self._drain, name=f"blockcd {self.name} redraw", daemon=True).start()

    def _drain(self) -> None:
        try:
            while True:
                with self._lock:
                    seen = self._wanted
                # one redraw at a time in the process (matplotlib's rc settings are global), switching
                # threads promptly while it runs (see _prompt_switching)
                with RENDER, prompt_switching():
                    try:  # a redraw overtaken by a newer move is not drawn: the next one is
                        self.refresh(stale=lambda seen=seen: self._wanted != seen)
                    except Exception as exc:  # noqa: BLE001 - shown to the reader instead of a frozen figure
                        self.info.value = message(f"The figure could not be redrawn: {type(exc).__name__}: {exc}")
                with self._lock:
                    if self._wanted != seen:
                        continue
                    self._idle.set()
                self._ahead()
                with self._lock:
                    if self._wanted == seen:
                        self._busy = False
                        self._quiet.set()
                        return
        except BaseException:
            with self._lock:
                self._busy = False
                self._idle.set()
                self._quiet.set()
            raise

    def neighbours(self, steps: int = AHEAD_STEPS) -> list[dict]:
        """The controls' values after the next ``steps`` moves of the last moved slider the same way
        (nearest first), then one back: what a reader stepping with an arrow key asks for next.  The
        sliders that depend on it hold what they would after such a move (:meth:`linked`)."""
        if self.moved is None:
            return []
        name, way = self.moved
        w = self.controls[name]
        if w.disabled:
            return []
        base = self.params()
        out = []
        for k in [*range(1, steps + 1), -1]:
            v = stepped(w, way * k)
            if v is None:
                if k > 0:
                    continue
                break
            out.append(self.linked(dict(base, **{name: v})))
        return out

    def _ahead(self) -> None:
        """While the kernel is idle after a redraw: compute the next values of the last moved slider into the
        caches (:meth:`neighbours`, ``_prefetch``), so that a reader stepping on finds them ready.

        Stops at once when any explorer's control moves (its run raises Interrupted), and
        holds the render lock only one value at a time.  Only caches fill: nothing is
        drawn, and every number is what computing it on demand gives.
        """
        start = _MOVES[0]

        def stale():
            return _MOVES[0] != start

        if not self.computes_ahead or self.moved is None:
            return
        with _MOVED:
            if _MOVED.wait_for(stale, timeout=AHEAD_DELAY):
                return
        with RENDER, one_blas_thread():
            try:  # a range may need a problem built (IS-ASGD's step range)
                todo = self.neighbours()
            except Exception:  # noqa: BLE001 - the redraw at those values says what fails, if the reader goes there
                return
        for params in todo:
            if stale():
                return
            with RENDER, prompt_switching(), one_blas_thread(), interrupt_when(stale):
                try:
                    self._prefetch(params)
                except Interrupted:
                    return
                except Exception:  # noqa: BLE001, S112 - a value that fails fails again, with its message, if drawn
                    continue

    def wait(self, timeout: float | None = 60.0, *, ahead: bool = False) -> bool:
        """Wait until no redraw is running or pending (moves in a live kernel are drawn in the background);
        with ``ahead``, also until the values computed ahead of the last move are in the caches."""
        return (self._quiet if ahead else self._idle).wait(timeout)

    def set(self, **values) -> None:
        """Move several controls at once and redraw once (what a reader does, one move at a time)."""
        self._syncing = True
        try:
            for k, v in values.items():
                if k not in self.controls:
                    raise ValueError(f"{k!r} is not a control of the {self.name} explorer; "
                                     f"controls: {tuple(self.controls)}")
                self.controls[k].value = v
                with one_blas_thread():
                    self._link()
        finally:
            self._syncing = False
        self.refresh()

    def refresh(self, stale=None) -> float:
        """Recompute and redraw for the current controls; returns the seconds it took.

        ``stale`` (a function, for the background redraws) is asked once the
        numbers are computed: when it returns True the controls have moved on,
        and the figure is neither drawn nor sent (the next redraw is).
        """
        t0, c0 = time.perf_counter(), time.process_time()
        with one_blas_thread(), mpl.rc_context(plotting.RC_PARAMS):
            # a run under way asks ``stale`` every few iterations and stops once the controls have moved
            # on (blockcd.run raises Interrupted): the newest values are then computed at once, not after
            # a whole run for values the reader has already left
            try:
                with interrupt_when(stale):
                    info = self._update(self.art, self.params())
            except Interrupted:
                return time.perf_counter() - t0
            if stale is not None and stale():
                return time.perf_counter() - t0
            self.info.value = info
            self.image.value = self._render()
        dt = time.perf_counter() - t0
        self.timings.append(dt)
        self.cpu_timings.append(time.process_time() - c0)
        return dt

    def _render(self) -> bytes:
        """Blit the changed artists over the cached background and encode the canvas as PNG."""
        canvas = self.figure.canvas
        key = layout_key(self.figure)
        if key != self._key or self._background is None:
            canvas.draw()  # static parts only: the dynamic artists are animated
            self._background = canvas.copy_from_bbox(self.figure.bbox)
            self._key = key
        else:
            canvas.restore_region(self._background)
        renderer = canvas.get_renderer()
        for a in self._dynamic:
            if a.get_visible():
                a.draw(renderer)
        return encode(canvas)

    def animation(self) -> str:
        """HTML of the kernel-free sweep (at most 12 frames, SWEEP_PX pixels wide).

        Every frame is drawn once first, to learn the axis limits each one sets; the sweep then
        draws every frame with the limits that hold them all (``union_limits``), so that its
        axes, tick labels and margins are the same in every frame and only the data move.  It plays
        on load, with the explorer's :meth:`watch` line under it.
        """
        frames = self._frames()[:MAX_FRAMES]
        fig = figure(*sweep_size(self.figsize), self.adjust)
        with mpl.rc_context(plotting.RC_PARAMS):
            art = self._setup(fig)
        keep = self.last

        def draw(i):
            with mpl.rc_context(plotting.RC_PARAMS):
                self._update(art, frames[i])

        try:
            limits = []
            for i in range(len(frames)):
                draw(i)
                limits.append(axis_limits(fig))
            fixed = union_limits(limits)

            def update(i):
                draw(i)
                set_limits(fig, fixed)
                return []

            # the live figure's margins are for its own size; text relatively larger needs its own:
            # fitted once, on the fixed axes (with room for the settings line at the top), then kept
            update(0)
            with mpl.rc_context(plotting.RC_PARAMS):
                fig.tight_layout(pad=0.5, w_pad=1.5, rect=(0, 0, 1, 0.94))
            html = jshtml(fig, update, len(frames), self.name, watch=self.watch(frames))
        finally:
            self.last = keep
        return html

    def watch(self, frames: list[dict]) -> str:
        """One sentence under the sweep: which control its ``frames`` move and what to watch."""
        moved = [k for k in frames[0] if len({repr(f[k]) for f in frames}) > 1]
        return f"the frames move {', '.join(moved) or 'nothing'}; the rest of the settings stay fixed."

    def _repr_mimebundle_(self, **kw):
        data = self.widget._repr_mimebundle_(**kw)
        data["text/plain"] = repr(self.widget)
        return data

    def wait_ready(self) -> None:
        """Wait for work the explorer started in the background when it was built (none here)."""

    # -- helpers for subclasses
    def _label(self, art, text: str) -> None:
        art["label"].set_text(text)

    def _legend(self, ax, handles=None, **kw) -> None:
        """(Re)make ``ax``'s legend only when its entries (label, colour, marker) changed: making one
        costs more than blitting the whole figure, and most moves keep it."""
        hs = handles if handles is not None else ax.get_legend_handles_labels()[0]
        key = tuple((h.get_label(), str(h.get_color()), str(h.get_marker())) for h in hs)
        if getattr(ax, "_blockcd_legend", None) != key or ax.get_legend() is None:
            ax.legend(handles=hs, **kw)
            ax._blockcd_legend = key



class BlocksExplorer(Explorer):
    """An explorer whose controls are n, m and tau, linked so that tau <= m <= d (``self._d``)."""

    _d: int

    def _controls(self, *, n, m, tau):
        return {"n": int_slider("workers n", n, 1, 64), "m": int_slider("blocks m", m, 1, self._d),
                "tau": int_slider("sent τ", tau, 1, m)}

    def _limits(self, params):
        yield "tau", params["m"]

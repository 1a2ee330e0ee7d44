"""The explorers' kernel-free machinery: the :class:`Explorer` base class and what it draws with.

Here live the figure outside pyplot and its PNG encoding (blitting over a cached
background), the kernel-free sweep written with matplotlib's ``HTMLWriter`` as
``Animation.to_jshtml`` does (:data:`SWEEP_START` ... :data:`SWEEP_END`), the
panel that holds controls and image, the slider and message helpers and the
one-BLAS-thread guard of every callback.  Nothing here builds a problem, runs a
method or knows a chapter: caches are in :mod:`blockcd.widgets.cache`, the
explorers in one module per chapter.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import os
import re
import sys
import tempfile
import threading
import time
from typing import Any, ClassVar

import ipywidgets as W
import matplotlib as mpl
import numpy as np
from matplotlib.animation import HTMLWriter
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .. import plotting
from ..methods import _INTERRUPT, Interrupted

_LIVE_DPI = 72
#: the kernel-free sweep is drawn this many pixels wide and shown at most this many CSS pixels wide
#: (the book's text column is about 700-800 px), on a figure at most SWEEP_INCHES wide, so that its
#: 11-point labels show at about 15 px and its 8-point legends at about 11 px
SWEEP_PX = 760
SWEEP_INCHES = 8.0
#: at most this many frames in a sweep
MAX_FRAMES = 12

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
_STEPPED = (W.IntSlider, W.FloatSlider, W.FloatLogSlider)


# --------------------------------------------------------------------------- figures
def _figure(size, dpi, adjust) -> Figure:
    """A figure outside pyplot (never shown by the inline backend), with a fixed layout (fast to redraw)."""
    with mpl.rc_context(plotting.RC_PARAMS):
        fig = Figure(figsize=size, dpi=dpi)
    fig.subplots_adjust(**adjust)
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    return buf.getvalue()


def _encode(canvas: FigureCanvasAgg) -> bytes:
    """PNG of what the Agg canvas holds now (after a draw or a blit), without drawing again."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3]).save(buf, format="png", compress_level=1)
    return buf.getvalue()


def _artists(obj):
    """The matplotlib artists held in an explorer's ``art`` dict (axes excluded)."""
    if isinstance(obj, mpl.axes.Axes):
        return
    if isinstance(obj, mpl.artist.Artist):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _artists(v)
    elif isinstance(obj, (list, tuple, mpl.container.Container)):
        for v in obj:
            yield from _artists(v)


def _layout_key(fig: Figure) -> tuple:
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


_anim_ids = itertools.count()

#: the player's Font Awesome icons, as plain characters (no stylesheet from a CDN)
_ICONS = {
    "fa fa-fast-backward": "&#8676;", "fa fa-step-backward": "&#8249;",
    "fa fa-play fa-flip-horizontal": "&#9664;", "fa fa-pause": "&#10074;&#10074;",
    "fa fa-play": "&#9654;", "fa fa-step-forward": "&#8250;", "fa fa-fast-forward": "&#8677;",
    "fa fa-minus": "&minus;", "fa fa-plus": "+",
}
#: markers around every sweep; tests/nbval-sanitize.cfg compares sweeps like images (not at all)
SWEEP_START = "<!-- blockcd sweep -->"
SWEEP_END = "<!-- end of blockcd sweep -->"


#: in JupyterLab (its output areas), the kernel-free sweep and the note on running live are hidden:
#: the live explorer is there; the book's HTML has no such class and shows them
_LIVE_HIDES = ("<style>.jp-OutputArea-output .blockcd-sweep, .jp-OutputArea-output .blockcd-note "
               "{display: none}</style>")


def _jshtml(fig: Figure, update, n_frames: int, name: str, fps: float = 1.5) -> str:
    """A kernel-free animation of ``n_frames`` calls of ``update(i)``, as HTML.

    Written with matplotlib's ``HTMLWriter``, as ``Animation.to_jshtml`` does, but
    drawing each frame once.  The player's random element ids are replaced by
    ``blockcd_<name>_<k>`` (k counts sweeps in this process), its icons by plain
    characters (no stylesheet to fetch), and the whole is wrapped in
    :data:`SWEEP_START` ... :data:`SWEEP_END`.
    """
    writer = HTMLWriter(fps=fps, embed_frames=True, default_mode="loop")
    with tempfile.TemporaryDirectory() as tmp, mpl.rc_context({"animation.embed_limit": 8.0}):
        path = os.path.join(tmp, "sweep.html")
        with writer.saving(fig, path, dpi=fig.dpi):
            for i in range(n_frames):
                update(i)
                writer.grab_frame()
        with open(path, encoding="utf-8") as fh:
            html = fh.read()
    uid = re.search(r"_anim_img([0-9a-f]+)", html).group(1)
    html = html.replace(uid, f"blockcd_{re.sub(r'[^a-z]', '', name)}_{next(_anim_ids)}")
    html = re.sub(r'<link rel="stylesheet"\s+href="[^"]*font-awesome[^"]*">', "", html)
    html = re.sub(r'<i class="([^"]*)"></i>', lambda mo: _ICONS.get(mo.group(1), ""), html)
    # at the column's width, never wider than drawn (the player's box shrinks to its contents)
    html = re.sub(r'<img id="', f'<img style="width:{SWEEP_PX}px;max-width:100%;height:auto" id="', html, count=1)
    return f"{SWEEP_START}\n{_LIVE_HIDES}\n<div class=\"blockcd-sweep\">{html}</div>\n{SWEEP_END}"


def _sweep_size(figsize) -> tuple[tuple[float, float], float]:
    """(size in inches, dpi) of a sweep's figure: at most SWEEP_INCHES wide, the live figure's shape,
    SWEEP_PX pixels wide (a narrower figure has relatively larger text, readable when shown at the
    book's column width)."""
    w = min(figsize[0], SWEEP_INCHES)
    return (w, figsize[1] * w / figsize[0]), SWEEP_PX / w


class _Panel(W.VBox):
    """The explorer's box; its plain-text form names it (no widget reprs in stored outputs)."""

    def __init__(self, title: str, **kw):
        super().__init__(**kw)
        self._title = title

    def __repr__(self) -> str:
        return f"<{self._title}: move the controls in a live notebook>"


#: the controls' labels share one width, so that the sliders of a column start and end together
LABEL_WIDTH = "96px"


def _grid(controls, width: str) -> W.GridBox:
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


# --------------------------------------------------------------------------- base class
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
    figure : matplotlib Figure of the live view
    image : ipywidgets.Image holding the last render
    info : ipywidgets.HTML under the figure (numbers, or the divergence message)
    timings : list of seconds per callback (wall clock)
    cpu_timings : list of CPU seconds of this process per callback
    last : dict of what the last callback computed (plotted arrays, runs)
    moved : (control name, +1 or -1) of the reader's last slider move, or None
    """

    name = "explorer"
    figsize = (9.0, 3.4)
    adjust: ClassVar[dict] = {"left": 0.08, "right": 0.98, "bottom": 0.15, "top": 0.9, "wspace": 0.3}

    def __init__(self, **defaults):
        self.controls: dict[str, W.Widget] = self._controls(**defaults)
        self.figure = _figure(self.figsize, _LIVE_DPI, self.adjust)
        with mpl.rc_context(plotting.RC_PARAMS):
            self.art = self._setup(self.figure)
        # the artists that change are drawn over a cached background (blitting); a full
        # draw happens only when the background changes (limits, legend)
        self._dynamic = list(dict.fromkeys(_artists(self.art)))
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
        self.background = _in_kernel()
        #: (control name, +1 or -1) of the reader's last move of a slider, whose next values are computed
        #: ahead while the kernel is idle (``_ahead``); None before any move
        self.moved: tuple[str, int] | None = None
        with _one_blas_thread():
            self._link()
        for name, w in self.controls.items():
            w.observe(lambda change, name=name: self._note_move(name, change), names="value")
            w.observe(self._on_change, names="value")
        self.widget = _Panel(f"blockcd {self.name} explorer", children=[_grid(self.controls.values(), width),
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
        if self._syncing or not isinstance(w, _STEPPED) or change["old"] == change["new"]:
            return
        self.moved = (name, 1 if change["new"] > change["old"] else -1)

    def _on_change(self, change) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:  # _link may build a problem (the playground's step range): one BLAS thread, as the redraws
            with _one_blas_thread():
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
                with _RENDER, _prompt_switching():
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
            v = _stepped(w, way * k)
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
        with _RENDER, _one_blas_thread():
            try:  # a range may need a problem built (IS-ASGD's step range)
                todo = self.neighbours()
            except Exception:  # noqa: BLE001 - the redraw at those values says what fails, if the reader goes there
                return
        for params in todo:
            if stale():
                return
            with _RENDER, _prompt_switching(), _one_blas_thread():
                _INTERRUPT.check = stale
                try:
                    self._prefetch(params)
                except Interrupted:
                    return
                except Exception:  # noqa: BLE001, S112 - a value that fails fails again, with its message, if drawn
                    continue
                finally:
                    _INTERRUPT.check = None

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
                with _one_blas_thread():
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
        with _one_blas_thread(), mpl.rc_context(plotting.RC_PARAMS):
            # a run under way asks ``stale`` every few iterations and stops once the controls have moved
            # on (blockcd.run raises Interrupted): the newest values are then computed at once, not after
            # a whole run for values the reader has already left
            _INTERRUPT.check = stale
            try:
                info = self._update(self.art, self.params())
            except Interrupted:
                return time.perf_counter() - t0
            finally:
                _INTERRUPT.check = None
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
        key = _layout_key(self.figure)
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
        return _encode(canvas)

    def animation(self) -> str:
        """HTML of the kernel-free sweep (at most 12 frames, SWEEP_PX pixels wide)."""
        frames = self._frames()[:MAX_FRAMES]
        fig = _figure(*_sweep_size(self.figsize), self.adjust)
        with mpl.rc_context(plotting.RC_PARAMS):
            art = self._setup(fig)
        keep = self.last

        def update(i):
            with mpl.rc_context(plotting.RC_PARAMS):
                self._update(art, frames[i])
            return []

        try:
            # the live figure's margins are for its own size; text relatively larger needs its own:
            # fitted once to the first frame (with room for the settings line at the top), then kept
            update(0)
            with mpl.rc_context(plotting.RC_PARAMS):
                fig.tight_layout(pad=0.5, w_pad=1.5, rect=(0, 0, 1, 0.94))
            html = _jshtml(fig, update, len(frames), self.name)
        finally:
            self.last = keep
        return html

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

_BLAS = []
_RENDER = threading.Lock()


def _stepped(w, k: int):
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


#: seconds a thread holding the GIL keeps it while another waits, during a background redraw
#: (Python's default is 0.005)
SWITCH_INTERVAL = 1e-4


@contextlib.contextmanager
def _prompt_switching(interval: float = SWITCH_INTERVAL):
    """Hand the GIL over within ``interval`` seconds while a background redraw computes.

    A redraw's run is a Python loop that holds the GIL; the kernel's main thread
    (reading the next slider message) and its IOPub thread (sending replies and
    status messages) need it for a moment at every step of their work, and with
    Python's default of 5 ms each of these steps waited for the redraw: a slider
    message was read, and its "idle" status reached the browser, 100-200 ms
    late, and ipywidgets' front end sends a control's next value only once the
    kernel is idle after the previous one.  Switching is only forced while
    another thread waits, so the redraw itself is not slowed, and no number changes.
    """
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, interval))
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _in_kernel() -> bool:
    """Whether this process is a Jupyter kernel whose widgets talk to a front end (redraw in the background)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipywidgets depends on IPython
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _one_blas_thread():
    """Run a callback with one BLAS thread: the explorers' arrays are small, and on a busy
    machine a second BLAS thread only waits for a core (scikit-learn's threadpoolctl)."""

    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS.append(ThreadpoolController())
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _BLAS.append(None)
    return contextlib.nullcontext() if _BLAS[0] is None else _BLAS[0].limit(limits=1, user_api="blas")


def int_slider(desc, value, lo, hi, **kw):
    return W.IntSlider(value=value, min=lo, max=hi, description=desc, continuous_update=False,
                       style=style_box(), **kw)


def message(text: str) -> str:
    return f'<div style="color:#a30000;font-weight:bold;margin:0.3em 0">{text}</div>'


def fmt_int(k) -> str:
    return "not reached" if k is None or (isinstance(k, float) and not math.isfinite(k)) else f"{int(k):,}"


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


def log_taus(m: int, k: int = 8) -> list[int]:
    return sorted({round(t) for t in np.geomspace(1, m, k)})

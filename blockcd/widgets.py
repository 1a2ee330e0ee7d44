"""Interactive explorers for the book: sliders, a figure that follows them, and a moving figure for the HTML.

A chapter shows an explorer with one code cell, ``blockcd.widgets.show("convergence")``,
which displays three things:

1. a figure that moves without a kernel: a short pre-rendered sweep (over tau or
   n) written with matplotlib's ``to_jshtml``, so the static HTML of the book
   still shows how the picture changes;
2. a one-line note on opening the chapter live;
3. the live explorer: ipywidgets controls above a figure that is redrawn, in
   well under a second, each time a control moves.

The explorers are built by :func:`template_explorer`, :func:`variance_explorer`,
:func:`convergence_explorer`, :func:`tradeoff_explorer`, :func:`time_explorer`
and :func:`playground`.  Each keeps one matplotlib figure (not managed by
pyplot), updates its artists in place on every move and sends the rendered
PNG to an ``ipywidgets.Image``; problems and runs are cached by their
parameters, so moving tau does not rebuild the problem.  Controls are linked so
that impossible values cannot be chosen (tau <= m <= d).  A step that makes a
method diverge shows a message instead of a plot of NaNs.

``python -m blockcd.widgets --bench`` times the callbacks of every explorer
over a set of control moves (Agg backend, no display needed).

This module computes nothing new: runs come from :func:`blockcd.run`,
predictions from :mod:`blockcd.theory` and :mod:`blockcd.network`, styles from
:mod:`blockcd.plotting`.
"""

from __future__ import annotations

import functools
import io
import itertools
import math
import os
import re
import tempfile
import time
from typing import Any, ClassVar

import matplotlib as mpl
import numpy as np
from matplotlib.animation import HTMLWriter
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import network, plotting, problems, theory
from ._validate import check_choice, check_float, check_int, check_seed
from .experiments import variance_mc
from .methods import ALIASES, BYTES_PER_NUMBER, METHODS, DivergenceError, run

try:  # ipywidgets is a dependency of the package; keep the import error readable
    import ipywidgets as W
except ImportError as exc:  # pragma: no cover
    raise ImportError("blockcd.widgets needs ipywidgets (pip install ipywidgets)") from exc

__all__ = [
    "EXPLORERS",
    "PROBLEMS",
    "Explorer",
    "convergence_explorer",
    "playground",
    "show",
    "template_explorer",
    "time_explorer",
    "tradeoff_explorer",
    "variance_explorer",
]

#: problems the explorers can build (synthetic ones take d; the real ones fix it)
PROBLEMS = ("ridge", "interpolating", "heterogeneous", "logistic", "breast cancer", "digits")
SPLITS = problems.SPLITS
_LIVE_DPI = 72
_ANIM_DPI = 60
_MAX_FRAMES = 12
_ERR_FLOOR = 1e-16

NOTE = (
    '<p style="font-size:90%;margin:0.3em 0 0.6em 0"><b>To move the sliders</b> the page needs a running '
    "kernel: open the chapter live with the launch button (rocket icon) at the top of the page "
    "(Binder or Colab), or clone the repository, <code>pip install -e .</code> and run "
    "<code>jupyter lab</code>. The figure above plays a pre-computed sweep and needs no kernel.</p>"
)


# --------------------------------------------------------------------------- caches
def _rows_per_worker(n: int, d: int) -> int:
    return max(100, -(-2 * d // n))


@functools.lru_cache(maxsize=48)
def _problem(kind: str, n: int, d: int, split: str, seed: int):
    """The explorers' problems, built once per parameter set."""
    if kind == "breast cancer":
        return problems.breast_cancer(n, split=split, seed=seed)
    if kind == "digits":
        return problems.digits(n, split=split, seed=seed)
    rows = _rows_per_worker(n, d)
    if kind == "ridge":
        return problems.synthetic(n, rows, d, cond=10, split=split, seed=seed)
    if kind == "interpolating":
        return problems.synthetic(n, rows, d, cond=10, interpolating=True, split=split, seed=seed)
    if kind == "heterogeneous":
        return problems.synthetic(n, rows, d, cond=10, heterogeneity=1.0, split=split, seed=seed)
    return problems.synthetic(n, rows, d, loss="logistic", lam=1e-2, split=split, seed=seed)


def _problem_d(kind: str, d: int) -> int:
    """The dimension a problem kind will have (real data fix it)."""
    return {"breast cancer": 30, "digits": 61}.get(kind, d)


@functools.lru_cache(maxsize=256)
def _run(key: tuple, method: str, m: int, tau: int, step: float, iters: int, seed: int):
    """blockcd.run on the cached problem ``_problem(*key)``."""
    return run(_problem(*key), method, m=m, tau=tau, step=step, iters=iters, seed=seed)


def _canonical(method: str) -> str:
    return check_choice("method", ALIASES.get(method.lower(), method.lower()), METHODS)


def _bound(p, method: str, m: int, tau: int, step: float):
    """(start, rate, floor) of the theorem's bound on ||x^k - x*||^2 / ||x^0 - x*||^2.

    The same starting values as :func:`blockcd.theory.predicted_iterations`:
    ISEGA's Lyapunov function adds c gamma^2 H^0, IS-ASGD's adds 2 (f(x^0) - f*)/mu,
    IBCD and IS-SGD add the neighbourhood 2 gamma sigma^2 / mu.
    """
    q = theory.rate(p, method, m, tau, step=step)
    D0 = float(p.x_star @ p.x_star)  # x^0 = 0
    start, floor = 1.0, 0.0
    if method in ("ibcd", "is-sgd"):
        floor = theory.neighbourhood(p, method, m, tau, step=step) / D0
    elif method == "isega":
        c = 4 * theory.omega(m, tau) * m / (p.n * tau)
        H0 = float(np.mean(np.sum(p.local_grads_star**2, axis=1)))
        start = (D0 + c * step * step * H0) / D0
    elif method == "is-asgd":
        gap0 = p.f(np.zeros(p.d)) - p.f_star
        start = (2 * gap0 / p.mu + D0) / D0
    return start, q, floor


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
    Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3]).save(buf, format="png", compress_level=3)
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
    return f"{SWEEP_START}\n<div class=\"blockcd-sweep\">{html}</div>\n{SWEEP_END}"


class _Panel(W.VBox):
    """The explorer's box; its plain-text form names it (no widget reprs in stored outputs)."""

    def __init__(self, title: str, **kw):
        super().__init__(**kw)
        self._title = title

    def __repr__(self) -> str:
        return f"<{self._title}: move the controls in a live notebook>"


def _style_box():
    return {"description_width": "initial"}


# --------------------------------------------------------------------------- base class
class Explorer:
    """Controls, a figure redrawn on every move, and a pre-rendered sweep for the HTML.

    Subclasses define ``_controls(**defaults)`` (name -> widget), ``_link()``
    (clamp bounds after a move), ``_setup(fig)`` (create the artists, return a
    dict), ``_update(art, params)`` (recompute and redraw; returns the HTML of
    the line under the figure) and ``_frames()`` (parameter sets of the sweep).

    Attributes
    ----------
    controls : dict of ipywidgets
    figure : matplotlib Figure of the live view
    image : ipywidgets.Image holding the last render
    info : ipywidgets.HTML under the figure (numbers, or the divergence message)
    timings : list of seconds per callback (wall clock)
    cpu_timings : list of CPU seconds of this process per callback
    last : dict of what the last callback computed (plotted arrays, runs)
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
        self._link()
        for w in self.controls.values():
            w.observe(self._on_change, names="value")
        rows = [W.HBox(list(self.controls.values())[i:i + 3]) for i in range(0, len(self.controls), 3)]
        self.widget = _Panel(f"blockcd {self.name} explorer", children=[*rows, self.image, self.info])
        self.refresh()

    # -- subclasses
    def _controls(self, **defaults) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _link(self) -> None:
        pass

    def _setup(self, fig) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _update(self, art: dict, params: dict) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _frames(self) -> list[dict]:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- machinery
    def params(self) -> dict:
        """Current values of the controls."""
        return {k: w.value for k, w in self.controls.items()}

    def _on_change(self, change) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            self._link()
        finally:
            self._syncing = False
        self.refresh()

    def set(self, **values) -> None:
        """Move several controls at once and redraw once (what a reader does, one move at a time)."""
        self._syncing = True
        try:
            for k, v in values.items():
                if k not in self.controls:
                    raise ValueError(f"{k!r} is not a control of the {self.name} explorer; "
                                     f"controls: {tuple(self.controls)}")
                self.controls[k].value = v
                self._link()
        finally:
            self._syncing = False
        self.refresh()

    def refresh(self) -> float:
        """Recompute and redraw for the current controls; returns the seconds it took."""
        t0, c0 = time.perf_counter(), time.process_time()
        with _one_blas_thread(), mpl.rc_context(plotting.RC_PARAMS):
            self.info.value = self._update(self.art, self.params())
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
        """HTML of the kernel-free sweep (at most 12 frames, low resolution)."""
        frames = self._frames()[:_MAX_FRAMES]
        fig = _figure(self.figsize, _ANIM_DPI, self.adjust)
        with mpl.rc_context(plotting.RC_PARAMS):
            art = self._setup(fig)
        keep = self.last

        def update(i):
            with mpl.rc_context(plotting.RC_PARAMS):
                self._update(art, frames[i])
            return []

        try:
            html = _jshtml(fig, update, len(frames), self.name)
        finally:
            self.last = keep
        return html

    def _repr_mimebundle_(self, **kw):
        data = self.widget._repr_mimebundle_(**kw)
        data["text/plain"] = repr(self.widget)
        return data

    # -- helpers for subclasses
    def _label(self, art, text: str) -> None:
        art["label"].set_text(text)


_BLAS = []


def _one_blas_thread():
    """Run a callback with one BLAS thread: the explorers' arrays are small, and on a busy
    machine a second BLAS thread only waits for a core (scikit-learn's threadpoolctl)."""
    import contextlib

    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS.append(ThreadpoolController())
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _BLAS.append(None)
    return contextlib.nullcontext() if _BLAS[0] is None else _BLAS[0].limit(limits=1, user_api="blas")


def _int_slider(desc, value, lo, hi, **kw):
    return W.IntSlider(value=value, min=lo, max=hi, description=desc, continuous_update=False,
                       style=_style_box(), **kw)


def _message(text: str) -> str:
    return f'<div style="color:#a30000;font-weight:bold;margin:0.3em 0">{text}</div>'


def _fmt_int(k) -> str:
    return "not reached" if k is None or (isinstance(k, float) and not math.isfinite(k)) else f"{int(k):,}"


def _no_minor_ticks(*axes) -> None:
    """Drop the minor ticks of log axes: they cost most of a full redraw and carry no numbers."""
    for ax in axes:
        ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
        ax.yaxis.set_minor_locator(mpl.ticker.NullLocator())


def _decades(lo: float, hi: float, pad: float = 1.3) -> tuple[float, float]:
    """Log-axis limits rounded out to powers of ten, so that small moves keep the axes (and the cached background)."""
    return 10.0 ** math.floor(math.log10(lo / pad)), 10.0 ** math.ceil(math.log10(hi * pad))


def _log_taus(m: int, k: int = 8) -> list[int]:
    return sorted({round(t) for t in np.geomspace(1, m, k)})


# --------------------------------------------------------------------------- convergence
class ConvergenceExplorer(Explorer):
    """Error against iterations and against numbers sent, with the theorem's bound (chapters 4-7)."""

    name = "convergence"
    figsize = (9.5, 3.5)
    show_problem = False

    def __init__(self, *, method="ibcd", problem="ridge", n=10, d=40, m=None, tau=None, step_scale=1.0,
                 split="contiguous", seed=0, iters=800, eps=1e-6):
        method = _canonical(method)
        problem = check_choice("problem", problem, PROBLEMS)
        n = check_int("n", n, 1, 64)
        d = check_int("d", d, 2, 200)
        d_eff = _problem_d(problem, d)
        m = d_eff if m is None else check_int("m", m, 1, d_eff)
        tau = max(1, m // n) if tau is None else check_int("tau", tau, 1, m)
        step_scale = check_float("step_scale", step_scale, positive=True)
        if not 1 / 16 <= step_scale <= 256:
            raise ValueError(f"step_scale must be in [1/16, 256], got {step_scale}")
        split = check_choice("split", split, SPLITS)
        seed = check_seed("seed", seed)
        iters = check_int("iters", iters, 10, 20000)
        self.eps = check_float("eps", eps, positive=True, hi=1.0)
        self._fixed = {"problem": problem, "d": d, "iters": iters}
        super().__init__(method=method, problem=problem, n=n, d=d, m=m, tau=tau, step_scale=step_scale,
                         split=split, seed=seed, iters=iters)

    def _controls(self, *, method, problem, n, d, m, tau, step_scale, split, seed, iters):
        c = {}
        if self.show_problem:
            c["problem"] = W.Dropdown(options=PROBLEMS, value=problem, description="problem")
        c["method"] = W.Dropdown(options=METHODS, value=method, description="method")
        c["split"] = W.Dropdown(options=SPLITS, value=split, description="split")
        c["n"] = _int_slider("workers n", n, 1, 64)
        if self.show_problem:
            c["d"] = _int_slider("dimension d", d, 2, 200)
        c["m"] = _int_slider("blocks m", m, 1, _problem_d(problem, d))
        c["tau"] = _int_slider("sent τ", tau, 1, m)
        c["step_scale"] = W.FloatLogSlider(value=step_scale, base=2, min=-4, max=8, step=0.5,
                                           description="step / theory", continuous_update=False,
                                           style=_style_box())
        c["seed"] = _int_slider("seed", seed, 0, 9)
        if self.show_problem:
            c["iters"] = _int_slider("iterations", iters, 50, 5000, step=50)
        return c

    def _link(self):
        c = self.controls
        kind = c["problem"].value if "problem" in c else self._fixed["problem"]
        if "d" in c:
            c["d"].disabled = kind in ("breast cancer", "digits")
        d = _problem_d(kind, c["d"].value if "d" in c else self._fixed["d"])
        c["m"].max = d          # ipywidgets clamps the value into the new range
        c["tau"].max = c["m"].value

    def params(self):
        p = dict(self._fixed)
        p.update(super().params())
        return p

    def _setup(self, fig):
        ax1, ax2 = fig.subplots(1, 2)
        art = {"axes": (ax1, ax2)}
        for ax, key in ((ax1, "it"), (ax2, "sent")):
            art[f"dense_{key}"], = ax.semilogy([], [], **plotting.style("gd", label=r"dense ($\tau = m$)"))
            art[f"run_{key}"], = ax.semilogy([], [], **plotting.style("ibcd"))
            ax.set_ylim(1e-12, 1e2)
        plotting.rate_line(ax1, 0.5, 1, label="theorem's bound")
        art["bound"] = ax1.lines[-1]
        art["bound"].set_data([], [])
        ax1.set_xlabel("iteration k")
        ax2.set_xlabel("numbers sent per worker")
        ax1.set_ylabel(r"$\|x^k - x^\star\|^2 / \|x^0 - x^\star\|^2$")
        art["text"] = ax1.text(0.5, 0.5, "", transform=ax1.transAxes, ha="center", va="center",
                               color="#a30000", fontsize=10, wrap=True)
        art["label"] = fig.text(0.99, 0.99, "", ha="right", va="top", fontsize=9, color="0.3")
        ax1.legend(handles=[art["run_it"], art["dense_it"], art["bound"]], loc="lower left", fontsize=8)
        _no_minor_ticks(ax1, ax2)
        return art

    def _compute(self, params):
        """Runs and predictions for one setting; raises DivergenceError / ValueError."""
        method = _canonical(params["method"])
        kind = params["problem"]
        key = (kind, params["n"], _problem_d(kind, params["d"]), params["split"], params["seed"])
        p = _problem(*key)
        m, tau, iters, seed = params["m"], params["tau"], params["iters"], params["seed"]
        step0 = theory.step_size(p, method, m, tau)
        step = params["step_scale"] * step0
        h = _run(key, method, m, tau, step, iters, seed)
        dense = _run(key, method, m, m, theory.step_size(p, method, m, m), iters, seed)
        bound = _bound(p, method, m, tau, step) if params["step_scale"] <= 1.0 + 1e-12 else None
        return {"problem": p, "method": method, "history": h, "dense": dense, "step": step,
                "step0": step0, "bound": bound}

    def _update(self, art, params):
        ax1, ax2 = art["axes"]
        self._label(art, f"n = {params['n']}, m = {params['m']}, τ = {params['tau']}, "
                         f"step = {params['step_scale']:g} × theory")
        try:
            r = self._compute(params)
        except (DivergenceError, ValueError) as exc:
            for k in ("run_it", "run_sent", "dense_it", "dense_sent", "bound"):
                art[k].set_data([], [])
            what = str(exc)
            if isinstance(exc, DivergenceError):
                head = (f"Diverged: a step {params['step_scale']:g} × the theory's is above the stable "
                        "range for these settings.")
            else:
                head = "These settings are outside what the method supports."
            art["text"].set_text(head)
            self.last = {"error": exc}
            return _message(f"{head} {what}")
        art["text"].set_text("")
        h, dense, method = r["history"], r["dense"], r["method"]
        st = plotting.style(method)
        k = np.arange(h.iters + 1)
        y = h.dist2 / h.dist2[0]
        yd = dense.dist2 / dense.dist2[0]
        sent = h.bytes_up / BYTES_PER_NUMBER
        sent_d = dense.bytes_up / BYTES_PER_NUMBER
        for key in ("run_it", "run_sent"):
            art[key].set_color(st["color"])
            art[key].set_marker(st["marker"])
            art[key].set_markevery(max(1, h.iters // 8))
            art[key].set_label(f"{st['label']}, chosen τ")
        art["run_it"].set_data(k, y)
        art["run_sent"].set_data(sent, y)
        art["dense_it"].set_data(k, yd)
        art["dense_sent"].set_data(sent_d, yd)
        for key in ("dense_it", "dense_sent"):
            art[key].set_markevery(max(1, h.iters // 8))
        ax1.set_xlim(0, h.iters)
        below = np.flatnonzero(yd < 1e-12)  # where the dense curve leaves the panel
        # fixed while tau moves (the dense run does not depend on tau), so the background is reused
        ax2.set_xlim(0, sent_d[below[0]] if below.size else sent_d[-1])
        if r["bound"] is not None:
            start, q, floor = r["bound"]
            art["bound"].set_data(k, start * q**k + floor)
        else:
            art["bound"].set_data([], [])
        ax1.legend(handles=[art["run_it"], art["dense_it"], art["bound"]], loc="lower left", fontsize=8)
        self.last = {"iterations": k, "dist2": y, "sent": sent, "history": h, "dense": dense,
                     "bound": r["bound"]}
        p = r["problem"]
        reached = h.iters_to(self.eps)
        theorem = ""
        if r["bound"] is not None:
            pred = theory.predicted_iterations(p, method, params["m"], params["tau"], self.eps, step=r["step"])
            theorem = (f", theorem ≤ {_fmt_int(pred)}" if math.isfinite(pred)
                       else f", theorem: {self.eps:.0e} lies inside its neighbourhood")
        parts = [
            f"step γ = {r['step']:.3g} ({params['step_scale']:g} × the theory's {r['step0']:.3g})",
            f"iterations to {self.eps:.0e}: measured {_fmt_int(reached)}, dense {_fmt_int(dense.iters_to(self.eps))}"
            + theorem,
            f"numbers sent per worker per iteration: {sent[1]:.3g} of d = {p.d}",
            f"κ = {p.kappa:.3g}, r = {p.r:.3g}",
        ]
        msg = "; ".join(parts) + "."
        if r["bound"] is None:
            msg += " The theorem covers steps up to the theory's; its bound is not drawn."
        if y[-1] > 1.0:
            msg += " " + _message("The error grows: this step is above the stable range.")
        return f'<div style="font-size:90%">{msg}</div>'

    def _frames(self):
        base = self.params()
        m = base["m"]
        return [dict(base, tau=t) for t in _log_taus(m, _MAX_FRAMES)]


class Playground(ConvergenceExplorer):
    """The appendix's explorer: every control, with the theory's iteration count against tau."""

    name = "playground"
    figsize = (12.0, 3.6)
    adjust: ClassVar[dict] = {"left": 0.07, "right": 0.98, "bottom": 0.15, "top": 0.9, "wspace": 0.3}
    show_problem = True

    def __init__(self, **kw):
        self._prewarm = _prewarm_sklearn()
        super().__init__(**kw)

    def _setup(self, fig):
        gs = fig.add_gridspec(1, 3)
        ax1 = fig.add_subplot(gs[0, 0])
        ax2 = fig.add_subplot(gs[0, 1], sharey=ax1)
        ax3 = fig.add_subplot(gs[0, 2])
        sub = _SubFigureProxy(fig, (ax1, ax2))
        art = ConvergenceExplorer._setup(self, sub)
        art["pred"], = ax3.loglog([], [], **plotting.style("theory", label="theorem"))
        art["meas"], = ax3.loglog([], [], ls="none", ms=9, **plotting.style("ibcd", label="measured"))
        art["mark"] = ax3.axvline(1, color="0.5", ls=":", lw=1.5, label=r"$\tau = m/n$")
        ax3.set_xlabel(r"blocks sent per worker, $\tau$")
        ax3.set_ylabel("iterations to accuracy")
        ax3.legend(fontsize=8, loc="upper right")
        _no_minor_ticks(ax3)
        art["ax3"] = ax3
        return art

    def _update(self, art, params):
        html = super()._update(art, params)
        ax3 = art["ax3"]
        m, n = params["m"], params["n"]
        art["mark"].set_xdata([m / n, m / n])
        if "history" not in self.last:
            art["pred"].set_data([], [])
            art["meas"].set_data([], [])
            return html
        method = _canonical(params["method"])
        kind = params["problem"]
        key = (kind, n, _problem_d(kind, params["d"]), params["split"], params["seed"])
        taus, pred = _predicted_curve(key, method, m, self.eps)
        art["pred"].set_data(taus, pred)
        k = self.last["history"].iters_to(self.eps)
        st = plotting.style(method)
        art["meas"].set_color(st["color"])
        art["meas"].set_marker(st["marker"])
        art["meas"].set_data([params["tau"]] if k else [], [k] if k else [])
        ax3.set_xlim(0.8, m * 1.25)
        finite = pred[np.isfinite(pred)]
        vals = np.concatenate([finite, [k] if k else []])
        if vals.size:
            ax3.set_ylim(*_decades(max(vals.min(), 1), vals.max()))
        self.last["predicted_iterations"] = (taus, pred)
        return html


@functools.lru_cache(maxsize=128)
def _predicted_curve(key: tuple, method: str, m: int, eps: float):
    """The theorem's iterations to ``eps`` on a grid of tau (it does not depend on the tau chosen)."""
    p = _problem(*key)
    taus = np.array(_log_taus(m, 24))
    pred = np.array([theory.predicted_iterations(p, method, m, int(t), eps) for t in taus], float)
    pred.setflags(write=False)
    return taus, pred


def _prewarm_sklearn():
    """Import scikit-learn's data sets in the background, so that the first switch to real data is quick."""
    import importlib
    import threading

    th = threading.Thread(target=importlib.import_module, args=("sklearn.datasets",), daemon=True)
    th.start()
    return th


class _SubFigureProxy:
    """Lets :meth:`ConvergenceExplorer._setup` draw into two given axes of a larger figure."""

    def __init__(self, fig, axes):
        self._fig, self._axes = fig, axes

    def subplots(self, *a, **k):
        return self._axes

    def text(self, *a, **k):
        return self._fig.text(*a, **k)


# --------------------------------------------------------------------------- template (chapter 1)
class TemplateExplorer(Explorer):
    """Numbers the master receives per round, and what sparsification costs in iterations (chapter 1)."""

    name = "template"
    figsize = (9.0, 3.3)
    adjust: ClassVar[dict] = {"left": 0.1, "right": 0.98, "bottom": 0.15, "top": 0.9, "wspace": 0.35}

    def __init__(self, *, n=10, m=40, tau=None, d=40, iters=600, problem="interpolating", seed=0):
        self._d = check_int("d", d, 2, 200)
        self._kind = check_choice("problem", problem, PROBLEMS[:4])
        self._iters = check_int("iters", iters, 10, 20000)
        self._seed = check_seed("seed", seed)
        n = check_int("n", n, 1, 64)
        m = check_int("m", m, 1, self._d)
        tau = max(1, m // n) if tau is None else check_int("tau", tau, 1, m)
        super().__init__(n=n, m=m, tau=tau)

    def _controls(self, *, n, m, tau):
        return {"n": _int_slider("workers n", n, 1, 64), "m": _int_slider("blocks m", m, 1, self._d),
                "tau": _int_slider("sent τ", tau, 1, m)}

    def _link(self):
        self.controls["tau"].max = self.controls["m"].value

    def _setup(self, fig):
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
        bars = ax1.bar([0, 1], [1, 1], color=[plotting.STYLE["gd"]["color"], plotting.STYLE["ibcd"]["color"]])
        ax1.set_xticks([0, 1], ["dense", "sparse"])
        ax1.set_ylabel("numbers the master\nreceives per round")
        vals = [ax1.text(i, 0, "", ha="center", va="bottom", fontsize=9) for i in (0, 1)]
        dense, = ax2.semilogy([], [], **plotting.style("gd", label=r"dense ($\tau = m$)"))
        sparse, = ax2.semilogy([], [], **plotting.style("ibcd"))
        ax2.set_xlabel("iteration k")
        ax2.set_ylabel(r"$\|x^k - x^\star\|^2 / \|x^0 - x^\star\|^2$")
        ax2.set_ylim(1e-12, 2)
        label = fig.text(0.99, 0.99, "", ha="right", va="top", fontsize=9, color="0.3")
        return {"axes": (ax1, ax2), "bars": bars, "vals": vals, "dense": dense, "sparse": sparse,
                "label": label}

    def _update(self, art, params):
        n, m, tau = params["n"], params["m"], params["tau"]
        d = self._d
        key = (self._kind, n, d, "contiguous", self._seed)
        p = _problem(*key)
        h = _run(key, "ibcd", m, tau, theory.step_size(p, "ibcd", m, tau), self._iters, self._seed)
        hd = _run(key, "ibcd", m, m, theory.step_size(p, "ibcd", m, m), self._iters, self._seed)
        recv = [n * d, n * (h.bytes_up[1] / BYTES_PER_NUMBER)]
        ax1, ax2 = art["axes"]
        for bar, txt, v in zip(art["bars"], art["vals"], recv):
            bar.set_height(v)
            txt.set_position((bar.get_x() + bar.get_width() / 2, v))
            txt.set_text(f"{v:,.0f}")
        ax1.set_ylim(0, max(recv) * 1.2)
        k = np.arange(h.iters + 1)
        art["dense"].set_data(k, hd.dist2 / hd.dist2[0])
        art["sparse"].set_data(k, h.dist2 / h.dist2[0])
        art["sparse"].set_label("IBCD, chosen τ")
        art["sparse"].set_markevery(max(1, h.iters // 8))
        art["dense"].set_markevery(max(1, h.iters // 8))
        ax2.set_xlim(0, h.iters)
        ax2.legend(loc="lower left", fontsize=8)
        self._label(art, f"n = {n}, m = {m}, τ = {tau}, d = {d}")
        self.last = {"history": h, "dense": hd, "received": recv}
        eps = 1e-6
        return (f'<div style="font-size:90%">Per round the master receives n d = {recv[0]:,.0f} numbers '
                f"dense and n τ d/m = {recv[1]:,.0f} sparse; iterations to {eps:.0e}: dense "
                f"{_fmt_int(hd.iters_to(eps))}, sparse {_fmt_int(h.iters_to(eps))} (theory ratio "
                f"1 + (m/τ − 1) r/n = {theory.predicted_ratio(p, 'ibcd', m, tau):.3g}, r = {p.r:.3g}).</div>")

    def _frames(self):
        m = self.controls["m"].value
        ns = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 32]
        return [{"n": k, "m": m, "tau": max(1, m // k)} for k in ns]


# --------------------------------------------------------------------------- variance (chapter 3)
class VarianceExplorer(Explorer):
    """Measured and predicted aggregation variance, independent against shared sampling (chapter 3)."""

    name = "variance"
    figsize = (7.0, 3.3)
    adjust: ClassVar[dict] = {"left": 0.15, "right": 0.97, "bottom": 0.12, "top": 0.9}

    def __init__(self, *, n=10, m=40, tau=4, d=40, trials=400, seed=0):
        self._d = check_int("d", d, 2, 200)
        self._trials = check_int("trials", trials, 10, 100_000)
        self._seed = check_seed("seed", seed)
        n = check_int("n", n, 1, 64)
        m = check_int("m", m, 1, self._d)
        tau = check_int("tau", tau, 1, m)
        super().__init__(n=n, m=m, tau=tau)

    def _controls(self, *, n, m, tau):
        return {"n": _int_slider("workers n", n, 1, 64), "m": _int_slider("blocks m", m, 1, self._d),
                "tau": _int_slider("sent τ", tau, 1, m)}

    def _link(self):
        self.controls["tau"].max = self.controls["m"].value

    def _setup(self, fig):
        ax = fig.subplots()
        x = np.array([0, 1])
        cols = [plotting.STYLE["independent"]["color"], plotting.STYLE["shared"]["color"]]
        bars = ax.bar(x, [1, 1], width=0.5, color=cols, alpha=0.8, label="measured (Monte Carlo)")
        pred, = ax.plot([], [], ls="none", marker="_", ms=40, mew=3, color="k", label="key lemma")
        err, = ax.plot([], [], color="k", lw=1.5)
        ax.set_yscale("log")
        ax.set_xticks(x, ["independent", "shared"])
        ax.set_ylabel(r"$E\|G - \bar g\|^2 / \frac{1}{n}\sum_i \|g_i\|^2$")
        ax.set_xlim(-0.6, 1.6)
        _no_minor_ticks(ax)
        ax.legend(loc="upper left", fontsize=8, ncol=2, markerscale=0.4)
        text = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center", fontsize=10)
        label = fig.text(0.99, 0.99, "", ha="right", va="top", fontsize=9, color="0.3")
        return {"ax": ax, "bars": bars, "pred": pred, "err": err, "text": text, "label": label}

    def _update(self, art, params):
        n, m, tau = params["n"], params["m"], params["tau"]
        G = _variance_vectors(n, self._d, self._seed)
        norm = float(np.mean(np.sum(G**2, axis=1)))
        meas, se, pred = [], [], []
        for s in ("independent", "shared"):
            v, e = _variance_mc(n, self._d, m, tau, s, self._trials, self._seed)
            meas.append(v / norm)
            se.append(e / norm)
            pred.append(theory.aggregation_variance(G, m, tau, s) / norm)
        ax = art["ax"]
        self._label(art, f"n = {n}, m = {m}, τ = {tau}")
        self.last = {"measured": meas, "stderr": se, "predicted": pred}
        if tau == m:
            for b in art["bars"]:
                b.set_height(0)
            art["pred"].set_data([], [])
            art["err"].set_data([], [])
            art["text"].set_text("τ = m: nothing is dropped, no added variance")
            return '<div style="font-size:90%">τ = m: ω = 0, both variances are zero.</div>'
        art["text"].set_text("")
        for b, v in zip(art["bars"], meas):
            b.set_height(v)
        art["pred"].set_data([0, 1], pred)
        xs = [0, 0, np.nan, 1, 1]
        ys = [meas[0] - 2 * se[0], meas[0] + 2 * se[0], np.nan, meas[1] - 2 * se[1], meas[1] + 2 * se[1]]
        art["err"].set_data(xs, np.maximum(ys, 1e-300))
        lo = min(min(meas), min(pred))
        hi = max(max(meas), max(pred))
        ax.set_ylim(_decades(lo, hi)[0], _decades(lo, hi)[1] * 10)
        w = theory.omega(m, tau)
        return (f'<div style="font-size:90%">ω = m/τ − 1 = {w:.3g}. Independent: measured {meas[0]:.3g} ± '
                f"{se[0]:.2g}, predicted ω/n = {pred[0]:.3g}; shared: measured {meas[1]:.3g} ± {se[1]:.2g}, "
                f"predicted ω ‖ḡ‖²/(mean ‖g_i‖²) = {pred[1]:.3g} ({self._trials} draws; ± one standard "
                "error, bars show two).</div>")

    def _frames(self):
        n, m = self.controls["n"].value, self.controls["m"].value
        return [{"n": n, "m": m, "tau": t} for t in _log_taus(m, _MAX_FRAMES) if t < m]


@functools.lru_cache(maxsize=64)
def _variance_vectors(n, d, seed):
    """What workers send in the variance explorer: local gradients of the synthetic ridge problem at x = 0."""
    p = _problem("ridge", n, d, "contiguous", seed)
    return p.local_grads(np.zeros(d))


@functools.lru_cache(maxsize=256)
def _variance_mc(n, d, m, tau, sampling, trials, seed):
    return variance_mc(_variance_vectors(n, d, seed), m, tau, sampling=sampling, trials=trials, seed=seed)


# --------------------------------------------------------------------------- trade-off (chapters 4-8)
class TradeoffExplorer(Explorer):
    """Iterations and numbers sent to accuracy against tau, measured and predicted (chapters 4-8)."""

    name = "tradeoff"
    figsize = (9.5, 3.4)
    adjust: ClassVar[dict] = {"left": 0.08, "right": 0.98, "bottom": 0.15, "top": 0.9, "wspace": 0.35}

    def __init__(self, *, method="ibcd", problem="interpolating", n=10, m=40, tau=4, d=40, eps=1e-4,
                 step_scale=1.0, seed=0):
        self._kind = check_choice("problem", problem, PROBLEMS)
        self._d = _problem_d(self._kind, check_int("d", d, 2, 200))
        self._eps = check_float("eps", eps, positive=True, hi=1.0)
        self._scale = check_float("step_scale", step_scale, positive=True)
        self._seed = check_seed("seed", seed)
        method = _canonical(method)
        n = check_int("n", n, 1, 64)
        m = check_int("m", m, 1, self._d)
        tau = check_int("tau", tau, 1, m)
        super().__init__(method=method, n=n, m=m, tau=tau)

    def _controls(self, *, method, n, m, tau):
        return {"method": W.Dropdown(options=[x for x in METHODS if x != "is-saga"], value=method,
                                     description="method"),
                "n": _int_slider("workers n", n, 1, 64), "m": _int_slider("blocks m", m, 1, self._d),
                "tau": _int_slider("sent τ", tau, 1, m)}

    def _link(self):
        self.controls["tau"].max = self.controls["m"].value

    def _setup(self, fig):
        ax1, ax2 = fig.subplots(1, 2)
        art = {"axes": (ax1, ax2)}
        for ax, key, ylab in ((ax1, "it", "iterations to accuracy"),
                              (ax2, "sent", "numbers sent per worker\nto accuracy")):
            art[f"meas_{key}"], = ax.loglog([], [], ls="none", **plotting.style("ibcd", label="measured"))
            art[f"pred_{key}"], = ax.loglog([], [], **plotting.style("theory", label="theory (ratio)"))
            art[f"cur_{key}"], = ax.loglog([], [], ls="none", marker="o", ms=14, mfc="none", mew=2,
                                           color="k", label="current τ")
            art[f"mn_{key}"] = ax.axvline(1, color="0.5", ls=":", lw=1.5, label=r"$\tau = m/n$")
            ax.set_xlabel(r"blocks sent per worker, $\tau$")
            ax.set_ylabel(ylab)
        ax1.legend(fontsize=8, loc="upper right")
        art["text"] = ax1.text(0.5, 0.5, "", transform=ax1.transAxes, ha="center", va="center",
                               color="#a30000", fontsize=10)
        _no_minor_ticks(ax1, ax2)
        art["label"] = fig.text(0.99, 0.99, "", ha="right", va="top", fontsize=9, color="0.3")
        return art

    def _sweep(self, method, n, m):
        return _tradeoff_sweep(method, self._kind, n, self._d, m, self._eps, self._scale, self._seed)

    def _update(self, art, params):
        method, n, m, tau = _canonical(params["method"]), params["n"], params["m"], params["tau"]
        self._label(art, f"{method}, n = {n}, m = {m}, τ = {tau}")
        try:
            taus, K, ratio = self._sweep(method, n, m)
            if tau in taus:
                k_cur = K[taus.index(tau)]
            else:
                k_cur = _iterations_to(method, self._kind, n, self._d, m, tau, self._eps, self._scale,
                                       self._seed)
        except (ValueError, DivergenceError) as exc:
            for k in ("meas_it", "pred_it", "cur_it", "meas_sent", "pred_sent", "cur_sent"):
                art[k].set_data([], [])
            art["text"].set_text("not available")
            self.last = {"error": exc}
            return _message(str(exc))
        art["text"].set_text("")
        taus_a = np.array(taus, float)
        K = np.array(K, float)
        per = self._d / m  # numbers per block
        st = plotting.style(method)
        K_m = K[-1]
        pred = np.array(ratio) * K_m
        for key, scale in (("it", 1.0), ("sent", None)):
            f = (lambda t, k: k) if scale else (lambda t, k: k * t * per)
            art[f"meas_{key}"].set_data(taus_a, f(taus_a, K))
            art[f"meas_{key}"].set_color(st["color"])
            art[f"meas_{key}"].set_marker(st["marker"])
            art[f"pred_{key}"].set_data(taus_a, f(taus_a, pred))
            art[f"cur_{key}"].set_data([tau], [f(tau, k_cur)] if np.isfinite(k_cur) else [np.nan])
            art[f"mn_{key}"].set_xdata([m / n, m / n])
        for ax, key in zip(art["axes"], ("it", "sent")):
            ys = np.concatenate([art[f"meas_{key}"].get_ydata(), art[f"pred_{key}"].get_ydata()])
            ys = ys[np.isfinite(ys) & (ys > 0)]
            ax.set_xlim(0.8, m * 1.25)
            if ys.size:
                ax.set_ylim(*_decades(ys.min(), ys.max(), pad=1.6))
        self.last = {"taus": taus, "iterations": K, "predicted": pred, "current": k_cur}
        mn = max(1, round(m / n))
        return (f'<div style="font-size:90%">{st["label"]} to {self._eps:.0e}: {_fmt_int(k_cur)} iterations '
                f"at τ = {tau}, {_fmt_int(K_m)} at τ = m; the dashed line is the theory's ratio "
                f"𝓛(τ)/𝓛(m) times the measured count at τ = m. τ = m/n ≈ {mn}.</div>")

    def _frames(self):
        method, m = self.controls["method"].value, self.controls["m"].value
        out = []
        for n in (1, 2, 4, 5, 8, 10, 16, 20, 32, 40):
            if n <= 64:
                out.append({"method": method, "n": n, "m": m, "tau": max(1, m // n)})
        return out


def _sweep_taus(m: int) -> list[int]:
    return _log_taus(m, 8)


@functools.lru_cache(maxsize=512)
def _iterations_to(method, kind, n, d, m, tau, eps, scale, seed) -> float:
    key = (kind, n, d, "contiguous", seed)
    p = _problem(*key)
    step = scale * theory.step_size(p, method, m, tau)
    guess = theory.predicted_iterations(p, method, m, tau, eps, step=step) if scale <= 1 else math.inf
    budget = int(min(20000, max(50, 1.3 * guess if math.isfinite(guess) else 2000)))
    while True:
        h = _run(key, method, m, tau, step, budget, seed)
        k = h.iters_to(eps)
        if k is not None:
            return float(k)
        if budget >= 20000:
            return math.nan
        budget = min(20000, 3 * budget)


@functools.lru_cache(maxsize=128)
def _tradeoff_sweep(method, kind, n, d, m, eps, scale, seed):
    p = _problem(kind, n, d, "contiguous", seed)
    taus = _sweep_taus(m)
    K = [_iterations_to(method, kind, n, d, m, t, eps, scale, seed) for t in taus]
    ratio = [theory.predicted_ratio(p, method, m, t) for t in taus]
    return taus, K, ratio


# --------------------------------------------------------------------------- time (chapter 9)
class TimeExplorer(Explorer):
    """Time to accuracy K(tau) T(tau) for a link, a model size, n and tau (chapter 9)."""

    name = "time"
    figsize = (10.0, 3.5)

    def __init__(self, *, link="10 Gbit/s cloud network, 100 us", model="ResNet-50, 2.6 x 10^7", n=16,
                 m=1024, tau=None, kappa=100.0, r=2.0, eps=1e-6,
                 compute_per_parameter=network.COMPUTE_PER_PARAMETER):
        link = check_choice("link", link, tuple(network.LINKS))
        model = check_choice("model", model, tuple(network.MODELS))
        self._m = check_int("m", m, 1, min(network.MODELS.values()))
        n = check_int("n", n, 2, 256)
        tau = max(1, self._m // n) if tau is None else check_int("tau", tau, 1, self._m)
        self._kappa = check_float("kappa", kappa, positive=True)
        self._r = check_float("r", r, positive=True)
        self._eps = check_float("eps", eps, positive=True, hi=1.0)
        self._cpp = check_float("compute_per_parameter", compute_per_parameter, nonnegative=True)
        lk = network.LINKS[link]
        super().__init__(link=link, model=model, bandwidth=lk["bandwidth"] / 1e9, latency=lk["latency"] * 1e6,
                         n=n, d=network.MODELS[model], tau=tau)

    def _controls(self, *, link, model, bandwidth, latency, n, d, tau):
        return {
            "link": W.Dropdown(options=[*network.LINKS, "custom"], value=link, description="link"),
            "model": W.Dropdown(options=[*network.MODELS, "custom"], value=model, description="model"),
            "n": _int_slider("workers n", n, 2, 256),
            "bandwidth": W.FloatLogSlider(value=bandwidth, base=10, min=0, max=2, step=0.05,
                                          description="Gbit/s", continuous_update=False, style=_style_box()),
            "latency": W.FloatLogSlider(value=latency, base=10, min=0, max=3, step=0.1,
                                        description="latency µs", continuous_update=False, style=_style_box()),
            "d": W.FloatLogSlider(value=d, base=10, min=5, max=9, step=0.1, description="parameters d",
                                  continuous_update=False, style=_style_box(), readout_format=".2g"),
            "tau": _int_slider("sent τ", tau, 1, self._m),
        }

    def _on_change(self, change):
        if self._syncing:
            return
        self._syncing = True
        try:
            c = self.controls
            if change["owner"] is c["link"] and change["new"] in network.LINKS:
                lk = network.LINKS[change["new"]]
                c["bandwidth"].value = lk["bandwidth"] / 1e9
                c["latency"].value = lk["latency"] * 1e6
            elif change["owner"] is c["model"] and change["new"] in network.MODELS:
                c["d"].value = network.MODELS[change["new"]]
            elif change["owner"] in (c["bandwidth"], c["latency"]):
                c["link"].value = "custom"
            elif change["owner"] is c["d"]:
                c["model"].value = "custom"
        finally:
            self._syncing = False
        self.refresh()

    def _setup(self, fig):
        ax1, ax2 = fig.subplots(1, 2)
        ps = plotting.style("ibcd")
        art = {"axes": (ax1, ax2)}
        art["ps"], = ax1.loglog([], [], color=ps["color"], label="parameter server")
        art["ar"], = ax1.loglog([], [], color=ps["color"], ls="--", label="all-reduce / all-gather")
        art["opt"], = ax1.loglog([], [], ls="none", marker="*", ms=14, color="k", label=r"$\tau^\star$ (formula)")
        art["cur"], = ax1.loglog([], [], ls="none", marker="o", ms=12, mfc="none", mew=2, color="k",
                                 label="current τ")
        art["mn"] = ax1.axvline(1, color="0.5", ls=":", lw=1.5, label=r"$\tau = m/n$")
        ax1.set_xlabel(r"blocks sent per worker, $\tau$ (of $m$)")
        ax1.set_ylabel("time to accuracy (s)")
        ax1.legend(fontsize=7, loc="upper center")
        gd = plotting.style("gd")
        art["n_dense_ps"], = ax2.loglog([], [], color=gd["color"], label="dense, parameter server")
        art["n_dense_ar"], = ax2.loglog([], [], color=gd["color"], ls="--", label="dense, all-reduce")
        art["n_sparse_ps"], = ax2.loglog([], [], color=ps["color"], label=r"$\tau = m/n$, parameter server")
        art["n_sparse_ar"], = ax2.loglog([], [], color=ps["color"], ls="--", label=r"$\tau = m/n$, all-gather")
        art["n_cur"] = ax2.axvline(1, color="0.5", ls=":", lw=1.5)
        ax2.set_xlabel("workers n")
        ax2.set_ylabel("time to accuracy (s)")
        ax2.legend(fontsize=7, loc="upper left")
        _no_minor_ticks(ax1, ax2)
        art["label"] = fig.text(0.99, 0.99, "", ha="right", va="top", fontsize=9, color="0.3")
        return art

    def _tta(self, n, d, tau, link, accounting):
        return network.time_to_accuracy(n, d, self._m, tau, bandwidth=link[0], latency=link[1],
                                        kappa=self._kappa, r=min(self._r, n), eps=self._eps,
                                        compute=self._cpp * d, accounting=accounting)

    def _update(self, art, params):
        n, tau = params["n"], min(params["tau"], self._m)
        d = round(params["d"])
        link = (params["bandwidth"] * 1e9, params["latency"] * 1e-6)
        m = self._m
        taus = np.unique(np.round(np.geomspace(1, m, 40)).astype(int))
        ps = np.array([self._tta(n, d, int(t), link, "parameter-server") for t in taus])
        ar = np.array([self._tta(n, d, int(t), link, "all-reduce") for t in taus])
        ax1, ax2 = art["axes"]
        art["ps"].set_data(taus, ps)
        art["ar"].set_data(taus, ar)
        r = min(self._r, n)
        t_star = network.optimal_tau(n, d, m, bandwidth=link[0], latency=link[1], r=r, compute=self._cpp * d)
        t_int = int(np.clip(round(t_star), 1, m))
        art["opt"].set_data([t_star], [self._tta(n, d, t_int, link, "parameter-server")])
        cur = self._tta(n, d, tau, link, "parameter-server")
        art["cur"].set_data([tau], [cur])
        art["mn"].set_xdata([m / n, m / n])
        ax1.set_xlim(0.8, m * 1.25)
        ys = np.concatenate([ps, ar])
        ax1.set_ylim(*_decades(ys.min(), ys.max()))
        ns = np.unique(np.round(np.geomspace(2, 256, 30)).astype(int))
        series = {
            "n_dense_ps": [self._tta(k, d, m, link, "parameter-server") for k in ns],
            "n_dense_ar": [self._tta(k, d, m, link, "all-reduce") for k in ns],
            "n_sparse_ps": [self._tta(k, d, max(1, m // k), link, "parameter-server") for k in ns],
            "n_sparse_ar": [self._tta(k, d, max(1, m // k), link, "all-reduce") for k in ns],
        }
        for k, v in series.items():
            art[k].set_data(ns, v)
        art["n_cur"].set_xdata([n, n])
        allv = np.concatenate([np.asarray(v) for v in series.values()])
        ax2.set_xlim(1.8, 290)
        ax2.set_ylim(*_decades(allv.min(), allv.max()))
        self._label(art, f"{params['bandwidth']:.3g} Gbit/s, {params['latency']:.3g} µs, d = {d:.2g}, n = {n}")
        T = network.round_time(n, d, m, tau, bandwidth=link[0], latency=link[1], compute=self._cpp * d)
        K = network.iterations(self._kappa, r, n, m, tau, self._eps)
        self.last = {"taus": taus, "parameter_server": ps, "all_reduce": ar, "tau_star": t_star,
                     "series": series, "ns": ns}
        return (f'<div style="font-size:90%">Parameter server, τ = {tau}: a round takes {T * 1e3:.3g} ms, '
                f"K(τ) = {K:,.0f} rounds, {cur:.3g} s in all. The time-optimal τ* = √(b c0 / (a c1)) = "
                f"{t_star:.3g} against m/n = {m / n:.3g} (m = {m} blocks, κ = {self._kappa:g}, "
                f"r = {r:g}).</div>")

    def _frames(self):
        base = self.params()
        return [dict(base, bandwidth=b) for b in np.geomspace(1, 100, 9)]


# --------------------------------------------------------------------------- builders
def convergence_explorer(method: str = "ibcd", n: int = 10, m: int | None = None, tau: int | None = None,
                         step_scale: float = 1.0, split: str = "contiguous", seed: int = 0, *,
                         problem: str = "ridge", d: int = 40, iters: int = 800, eps: float = 1e-6
                         ) -> ConvergenceExplorer:
    r"""Convergence explorer: ||x^k - x*||^2 against iterations and numbers sent, with the theorem's bound.

    The run is :func:`blockcd.run` with step ``step_scale * theory.step_size(...)``;
    the dashed line is the bound (start) q^k + floor with q = :func:`blockcd.theory.rate`
    (chapters 4-8), drawn when ``step_scale <= 1``.

    Parameters
    ----------
    method : {'ibcd', 'is-sgd', 'isega', 'is-saga', 'is-asgd'} (or an alias)
    n : int in [1, 64]
    m : int in [1, d] (default d)
    tau : int in [1, m] (default max(1, m // n))
    step_scale : float in [1/16, 256]
        Step as a multiple of the theory's step.
    split : {'iid', 'sorted', 'identical', 'contiguous'}
    seed : int >= 0
    problem : one of :data:`PROBLEMS`
        The synthetic ones are ``problems.synthetic(n, max(100, ceil(2 d / n)), d, cond=10,
        split=split, seed=seed)`` with ``interpolating=True`` ('interpolating'),
        ``heterogeneity=1.0`` ('heterogeneous') or ``loss='logistic', lam=1e-2`` ('logistic');
        'breast cancer' and 'digits' are :func:`blockcd.problems.breast_cancer` and
        :func:`blockcd.problems.digits`.  IS-ASGD needs ``'interpolating'``.
    d : int in [2, 200]
        Dimension of the synthetic problems (the real data sets fix it).
    iters : int in [10, 20000]
    eps : float in (0, 1]
        Accuracy for the iteration counts printed under the figure.
    """
    return ConvergenceExplorer(method=method, problem=problem, n=n, d=d, m=m, tau=tau, step_scale=step_scale,
                               split=split, seed=seed, iters=iters, eps=eps)


def playground(problem: str = "interpolating", method: str = "ibcd", n: int = 10, m: int | None = None,
               tau: int | None = None, step_scale: float = 1.0, split: str = "contiguous", seed: int = 0, *,
               d: int = 40, iters: int = 800, eps: float = 1e-6) -> Playground:
    """The appendix's explorer: every control of :func:`convergence_explorer` plus problem, d and iterations.

    A third panel draws the theory's iterations to ``eps`` against tau
    (:func:`blockcd.theory.predicted_iterations`) and the measured count at the
    current tau.  Arguments as in :func:`convergence_explorer`.
    """
    return Playground(method=method, problem=problem, n=n, d=d, m=m, tau=tau, step_scale=step_scale,
                      split=split, seed=seed, iters=iters, eps=eps)


def template_explorer(n: int = 10, m: int = 40, tau: int | None = None, *, d: int = 40, iters: int = 600,
                      problem: str = "interpolating", seed: int = 0) -> TemplateExplorer:
    """Chapter 1: numbers the master receives per round (n d dense, n tau d/m sparse) and IBCD's curve.

    Parameters
    ----------
    n : int in [1, 64];  m : int in [1, d];  tau : int in [1, m] (default max(1, m // n))
    d : int in [2, 200];  iters : int in [10, 20000]
    problem : {'ridge', 'interpolating', 'heterogeneous', 'logistic'};  seed : int >= 0
    """
    return TemplateExplorer(n=n, m=m, tau=tau, d=d, iters=iters, problem=problem, seed=seed)


def variance_explorer(n: int = 10, m: int = 40, tau: int = 4, *, d: int = 40, trials: int = 400,
                      seed: int = 0) -> VarianceExplorer:
    r"""Chapter 3: Monte-Carlo and exact aggregation variance, independent against shared sampling.

    Independent: (omega/n) (1/n) sum_i ||g_i||^2; shared: omega ||gbar||^2
    (:func:`blockcd.theory.aggregation_variance`), both divided by (1/n) sum_i ||g_i||^2.
    The g_i are the local gradients at x = 0 of the synthetic ridge problem (cond = 10).

    Parameters
    ----------
    n : int in [1, 64];  m : int in [1, d];  tau : int in [1, m]
    d : int in [2, 200];  trials : int in [10, 100000] (Monte-Carlo draws);  seed : int >= 0
    """
    return VarianceExplorer(n=n, m=m, tau=tau, d=d, trials=trials, seed=seed)


def tradeoff_explorer(method: str = "ibcd", n: int = 10, m: int = 40, tau: int = 4, *,
                      problem: str = "interpolating", d: int = 40, eps: float = 1e-4, step_scale: float = 1.0,
                      seed: int = 0) -> TradeoffExplorer:
    r"""Iterations and numbers sent per worker to accuracy ``eps`` against tau (chapters 4-8).

    Measured: first k with ||x^k - x*||^2 <= eps ||x^0 - x*||^2 for tau on a
    geometric grid; predicted: :func:`blockcd.theory.predicted_ratio` times the
    measured count at tau = m.  The sweep is cached per (method, n, m), so moving
    tau is instant.

    Parameters
    ----------
    method : {'ibcd', 'is-sgd', 'isega', 'is-asgd'};  n : int in [1, 64];  m : int in [1, d];
    tau : int in [1, m];  problem : one of :data:`PROBLEMS`;  d : int in [2, 200];
    eps : float in (0, 1];  step_scale : float > 0;  seed : int >= 0
    """
    return TradeoffExplorer(method=method, problem=problem, n=n, m=m, tau=tau, d=d, eps=eps,
                            step_scale=step_scale, seed=seed)


def time_explorer(link: str = "10 Gbit/s cloud network, 100 us", model: str = "ResNet-50, 2.6 x 10^7",
                  n: int = 16, tau: int | None = None, *, m: int = 1024, kappa: float = 100.0, r: float = 2.0,
                  eps: float = 1e-6, compute_per_parameter: float = network.COMPUTE_PER_PARAMETER
                  ) -> TimeExplorer:
    r"""Chapter 9: time to accuracy K(tau) T(tau) against tau and against n.

    T = T_compute/n + alpha + beta (numbers received by the master)
    (:func:`blockcd.network.round_time`, parameter-server and all-reduce
    accounting), K(tau) = 2 kappa (1 + (m/tau - 1) r/n) log(1/eps)
    (:func:`blockcd.network.iterations`), and the time-optimal
    tau* = sqrt(b c0 / (a c1)) (:func:`blockcd.theory.time_optimal_tau`).

    Parameters
    ----------
    link : a key of :data:`blockcd.network.LINKS`;  model : a key of :data:`blockcd.network.MODELS`
    n : int in [2, 256];  tau : int in [1, m] (default m // n);  m : int in [1, 10^5] (blocks)
    kappa, r : floats > 0 (condition number, L_max / L);  eps : float in (0, 1]
    compute_per_parameter : float >= 0
        T_compute = compute_per_parameter * d seconds for one full gradient on one machine.
    """
    return TimeExplorer(link=link, model=model, n=n, m=m, tau=tau, kappa=kappa, r=r, eps=eps,
                        compute_per_parameter=compute_per_parameter)


#: name -> builder, for :func:`show`
EXPLORERS = {
    "template": template_explorer,
    "variance": variance_explorer,
    "convergence": convergence_explorer,
    "tradeoff": tradeoff_explorer,
    "time": time_explorer,
    "playground": playground,
}


def show(name: str, **kwargs) -> None:
    """Display an explorer: a kernel-free moving figure, a note on running live, and the live widget.

    Parameters
    ----------
    name : {'template', 'variance', 'convergence', 'tradeoff', 'time', 'playground'}
    **kwargs
        Defaults of the explorer's controls, passed to its builder
        (e.g. ``show("convergence", method="isega", tau=4)``).
    """
    from IPython.display import HTML, display

    name = check_choice("name", name, tuple(EXPLORERS))
    ex = EXPLORERS[name](**kwargs)
    display(HTML(ex.animation()))
    display(HTML(NOTE))
    display(ex)


# --------------------------------------------------------------------------- benchmark
def _bench_moves(name: str) -> list[dict]:
    """Slider moves the benchmark replays (one control at a time, as a reader moves them)."""
    if name == "template":
        return [{"tau": t} for t in (1, 2, 5, 8, 20, 40, 4)] + [{"n": k} for k in (2, 5, 20, 10)] + \
               [{"m": k} for k in (20, 10, 40)]
    if name == "variance":
        return [{"tau": t} for t in (1, 2, 5, 8, 20, 4)] + [{"n": k} for k in (2, 5, 20, 10)] + \
               [{"m": k} for k in (20, 40)]
    if name == "convergence":
        return [{"tau": t} for t in (1, 2, 8, 10, 20, 40, 4)] + [{"step_scale": s} for s in (2, 4, 0.5, 1)] + \
               [{"method": "isega"}, {"method": "is-sgd"}, {"method": "ibcd"}, {"n": 5}, {"n": 20}, {"n": 10},
                {"split": "iid"}, {"seed": 1}]
    if name == "tradeoff":
        return [{"tau": t} for t in (1, 2, 8, 10, 20, 40, 4)] + [{"n": 5}, {"n": 20}, {"n": 10}, {"m": 20},
                                                                   {"m": 40}, {"method": "isega"}]
    if name == "time":
        return [{"tau": t} for t in (1, 8, 64, 256, 1024, 64)] + [{"bandwidth": b} for b in (1, 3, 30, 100)] + \
               [{"latency": v} for v in (1, 10, 1000)] + [{"n": k} for k in (4, 64, 256, 16)] + \
               [{"d": 1e5}, {"d": 1e9}]
    return [{"tau": t} for t in (1, 2, 8, 20, 4)] + [{"d": 60}, {"d": 40}, {"problem": "breast cancer"},
                                                      {"problem": "digits"}, {"problem": "ridge"},
                                                      {"method": "isega"}, {"n": 20}, {"step_scale": 4}]


def bench(names=None, *, verbose: bool = True) -> dict[str, dict[str, float]]:
    """Median and 90th percentile of the callback time per explorer over its slider moves.

    Builds each explorer with its defaults (building is not timed), then replays
    the moves of :func:`_bench_moves`, one control at a time, through the same
    observer a slider triggers.  Reports wall-clock seconds and the CPU seconds
    of this process (the latter is less sensitive to other processes on the machine).

    Returns
    -------
    dict
        name -> {"n", "median", "p90", "cpu_median", "cpu_p90"} (seconds).
    """
    names = tuple(EXPLORERS) if names is None else tuple(names)
    out = {}
    if verbose:
        print(f"{'explorer':12s} {'moves':>5s} {'median':>9s} {'90th pct':>9s} {'CPU median':>11s} "
              f"{'CPU 90th':>9s}   (milliseconds per callback)", flush=True)
    for name in names:
        ex = EXPLORERS[check_choice("name", name, tuple(EXPLORERS))]()
        if hasattr(ex, "_prewarm"):
            ex._prewarm.join()  # part of building the explorer, as a reader's first look at it
        ex.timings.clear()
        ex.cpu_timings.clear()
        for mv in _bench_moves(name):
            for k, v in mv.items():
                ex.controls[k].value = v
        t, c = np.array(ex.timings), np.array(ex.cpu_timings)
        out[name] = {"n": int(t.size), "median": float(np.median(t)), "p90": float(np.percentile(t, 90)),
                     "cpu_median": float(np.median(c)), "cpu_p90": float(np.percentile(c, 90))}
        if verbose:
            o = out[name]
            print(f"{name:12s} {o['n']:5d} {o['median'] * 1e3:9.1f} {o['p90'] * 1e3:9.1f} "
                  f"{o['cpu_median'] * 1e3:11.1f} {o['cpu_p90'] * 1e3:9.1f}", flush=True)
    return out


def _main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m blockcd.widgets", description=__doc__.split("\n")[0])
    ap.add_argument("--bench", action="store_true", help="time the callbacks of every explorer")
    ap.add_argument("names", nargs="*", help=f"explorers to time (default all: {', '.join(EXPLORERS)})")
    args = ap.parse_args(argv)
    if not args.bench:
        ap.print_help()
        return 0
    mpl.use("Agg")
    bench(args.names or None)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())

"""The convergence explorer of chapters 4-7 and the appendix's playground.

:class:`ConvergenceExplorer` draws ||x^k - x*||^2 against iterations and numbers
sent, with the dense run and the theorem's bound; :class:`Playground` adds the
problem, d and iteration controls and a third panel, the theory's iterations to
accuracy against tau.  Their builders :func:`convergence_explorer` and
:func:`playground` validate the arguments.  Runs and problems come from
:mod:`blockcd.widgets.cache`, the machinery from :mod:`blockcd.widgets.base`.
"""

from __future__ import annotations

import math
from typing import ClassVar

import ipywidgets as W
import matplotlib as mpl
import numpy as np

from .. import plotting, theory
from .._validate import check_choice, check_float, check_int, check_seed
from ..history import BYTES_PER_NUMBER, DivergenceError
from ..registry import BOOK_METHODS as METHODS
from ..registry import canonical
from .base import Explorer
from .cache import (
    PROBLEMS,
    SPLITS,
    cached_problem,
    cached_run,
    predicted_curve,
    problem_d,
    theorem_bound,
)
from .canvas import ABOVE, decades, nice_ceil, no_minor_ticks
from .controls import fmt_int, int_slider, log_taus, message, style_box
from .player import MAX_FRAMES


class ConvergenceExplorer(Explorer):
    """Error against iterations and against numbers sent, with the theorem's bound (chapters 4-7)."""

    name = "convergence"
    figsize = (9.5, 3.5)
    # the right margin leaves room for half of the last tick label of the numbers sent ("10000")
    adjust: ClassVar[dict] = {"left": 0.085, "right": 0.96, "bottom": 0.15, "top": 0.84, "wspace": 0.3}
    show_problem = False
    #: the legend's columns above the left panel (the playground's panels are narrower)
    legend_cols = 3

    def __init__(self, *, method="ibcd", problem="ridge", n=10, d=40, m=None, tau=None, step_scale=1.0,
                 split="contiguous", seed=0, iters=800, eps=1e-6):
        method = canonical(method)
        problem = check_choice("problem", problem, PROBLEMS)
        n = check_int("n", n, 1, 64)
        d = check_int("d", d, 2, 200)
        d_eff = problem_d(problem, d)
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
        c["n"] = int_slider("workers n", n, 1, 64)
        if self.show_problem:
            c["d"] = int_slider("dimension d", d, 2, 200)
        c["m"] = int_slider("blocks m", m, 1, problem_d(problem, d))
        c["tau"] = int_slider("sent τ", tau, 1, m)
        c["step_scale"] = W.FloatLogSlider(value=step_scale, base=2, min=-4, max=8, step=0.5,
                                           description="step / theory", continuous_update=False,
                                           style=style_box())
        c["seed"] = int_slider("seed", seed, 0, 9)
        if self.show_problem:
            c["iters"] = int_slider("iterations", iters, 50, 5000, step=50)
        return c

    def _limits(self, params):
        yield "m", problem_d(params["problem"], params["d"])
        yield "tau", params["m"]
        yield "step_scale", math.log2(self._max_scale(params))

    def _link(self):
        if "d" in self.controls:
            self.controls["d"].disabled = self.params()["problem"] in ("breast cancer", "digits")
        super()._link()

    @classmethod
    def _max_scale(cls, params) -> float:
        """The largest step / theory on the slider: 256, or for IS-ASGD the multiple that reaches 1/L.

        IS-ASGD's momentum is defined for steps up to 1/L only (rho = 1/(eta L) >= 1,
        :func:`blockcd.theory.asgd_parameters`), so its slider stops at the last of
        its half-octave steps below that; other methods may diverge above their
        theory's step, which the explorer then says.
        """
        if canonical(params["method"]) != "is-asgd":
            return 256.0
        try:
            p = cached_problem(*cls._problem_key(params))
            cap = 1.0 / (p.L * theory.step_size(p, "is-asgd", params["m"], params["tau"]))
        except ValueError:  # no interpolation: the readout says why, the slider keeps its range
            return 256.0
        return 2.0 ** min(8.0, max(0.0, math.floor(2 * math.log2(cap) + 1e-9) / 2))

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
        ax1.legend(handles=[art["run_it"], art["dense_it"], art["bound"]], ncol=self.legend_cols, **ABOVE)
        no_minor_ticks(ax1, ax2)
        # few labels on the x axes: a dense run sends tens of thousands of numbers per worker, and
        # five-digit labels at matplotlib's default spacing ran into each other (the playground's
        # panels are narrower still)
        ax1.xaxis.set_major_locator(mpl.ticker.MaxNLocator(nbins=4))
        ax2.xaxis.set_major_locator(mpl.ticker.MaxNLocator(nbins=3))
        return art

    @staticmethod
    def _problem_key(params) -> tuple:
        """The cache key of the problem the controls ``params`` choose (``cached_problem``)."""
        kind = params["problem"]
        return (kind, params["n"], problem_d(kind, params["d"]), params["split"], params["seed"])

    def _compute(self, params):
        """Runs and predictions for one setting; raises DivergenceError / ValueError."""
        method = canonical(params["method"])
        key = self._problem_key(params)
        p = cached_problem(*key)
        m, tau, iters, seed = params["m"], params["tau"], params["iters"], params["seed"]
        step0 = theory.step_size(p, method, m, tau)
        step = params["step_scale"] * step0
        h = cached_run(key, method, m, tau, step, iters, seed)
        dense = cached_run(key, method, m, m, theory.step_size(p, method, m, m), iters, seed)
        bound = theorem_bound(p, method, m, tau, step) if params["step_scale"] <= 1.0 + 1e-12 else None
        return {"problem": p, "method": method, "history": h, "dense": dense, "step": step,
                "step0": step0, "bound": bound}

    def _prefetch(self, params):
        """The problem and both runs of a redraw at ``params``."""
        self._compute(params)

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
            elif method_name(params) == "is-asgd" and params["problem"] != "interpolating":
                head = ("IS-ASGD's theory covers problems whose workers all have a zero gradient at the "
                        "solution (interpolation) only: choose the problem 'interpolating'.")
            else:
                head = "These settings are outside what the method supports."
            art["text"].set_text(head)
            self.last = {"error": exc}
            return message(f"{head} {what}")
        art["text"].set_text("")
        h, dense, method = r["history"], r["dense"], r["method"]
        st = plotting.style(method)
        k = np.arange(h.iters + 1)  # a run stops once below the panel (cache.FLOOR)
        kd = np.arange(dense.iters + 1)
        y = h.dist2 / h.dist2[0]
        yd = dense.dist2 / dense.dist2[0]
        sent = h.bytes_up / BYTES_PER_NUMBER
        sent_d = dense.bytes_up / BYTES_PER_NUMBER
        for key in ("run_it", "run_sent"):
            art[key].set_color(st["color"])
            art[key].set_marker(st["marker"])
            art[key].set_markevery(max(1, params["iters"] // 8))
            art[key].set_label(f"{st['label']}, chosen τ")
        art["run_it"].set_data(k, y)
        art["run_sent"].set_data(sent, y)
        art["dense_it"].set_data(kd, yd)
        art["dense_sent"].set_data(sent_d, yd)
        for key in ("dense_it", "dense_sent"):
            art[key].set_markevery(max(1, params["iters"] // 8))
        ax1.set_xlim(0, params["iters"])
        below = np.flatnonzero(yd < 1e-12)  # where the dense curve leaves the panel
        # fixed while tau moves (the dense run does not depend on tau), so the background is reused
        # rounded up to 1, 2 or 5 x 10^k, so that moving n or m mostly keeps it too
        ax2.set_xlim(0, nice_ceil(sent_d[below[0]] if below.size else sent_d[-1]))
        if r["bound"] is not None:
            start, q, floor = r["bound"]
            kb = np.arange(params["iters"] + 1)
            art["bound"].set_data(kb, start * q**kb + floor)
        else:
            art["bound"].set_data([], [])
        self._legend(ax1, [art["run_it"], art["dense_it"], art["bound"]], ncol=self.legend_cols, **ABOVE)
        self.last = {"iterations": k, "dist2": y, "sent": sent, "history": h, "dense": dense,
                     "bound": r["bound"]}
        p = r["problem"]
        reached = h.iters_to(self.eps)
        theorem = ""
        if r["bound"] is not None:
            pred = theory.predicted_iterations(p, method, params["m"], params["tau"], self.eps, step=r["step"])
            theorem = (f", theorem ≤ {fmt_int(pred)}" if math.isfinite(pred)
                       else f", theorem: {self.eps:.0e} lies inside its neighbourhood")
        parts = [
            f"step γ = {r['step']:.3g} ({params['step_scale']:g} × the theory's {r['step0']:.3g})",
            f"iterations to {self.eps:.0e} (of {params['iters']:,}): measured {fmt_int(reached)}, "
            f"dense {fmt_int(dense.iters_to(self.eps))}"
            + theorem,
            f"numbers sent per worker per iteration: {sent[1]:.3g} of d = {p.d}",
            f"κ = {p.kappa:.3g}, r = {p.r:.3g}",
        ]
        msg = "; ".join(parts) + "."
        if r["bound"] is None:
            msg += " The theorem covers steps up to the theory's; its bound is not drawn."
        elif reached is None and math.isfinite(pred) and pred > 2 * params["iters"]:
            msg += (f" The theory's step is tiny for these settings: the theorem needs up to {fmt_int(pred)} "
                    f"iterations, far more than the {params['iters']:,} drawn, so the curves barely move; "
                    "a larger step / theory shows the method converge, beyond what the theorem promises.")
        if method == "is-asgd":
            msg += (f" IS-ASGD's momentum is defined for steps up to 1/L = {1 / p.L:.3g}; the step slider "
                    "stops below it.")
        if y[-1] > 1.0:
            msg += " " + message("The error grows: this step is above the stable range.")
        return f'<div style="font-size:90%">{msg}</div>'

    def _frames(self):
        base = self.params()
        m = base["m"]
        return [dict(base, tau=t) for t in log_taus(m, MAX_FRAMES)]


    #: what each method's sweep shows, after "on the left, in iterations," (the book's chapters 4 to 7
    #: draw these at their default settings; other methods get the first)
    WATCH: ClassVar[dict] = {
        "ibcd": "the curve at the chosen τ closes in on the dense one as τ grows; on the right, in numbers "
                "sent per worker, see which reaches the bottom first.",
        "is-sgd": "the dense run levels off at the floor the minibatch noise sets, and the chosen τ approaches "
                  "it more slowly the smaller τ is; on the right, in numbers sent per worker, see how early "
                  "each reaches that floor.",
        "isega": "the curve at the chosen τ closes in on the dense one as τ grows; on the right, in numbers "
                 "sent per worker, dense GD at its theory step reaches the bottom with fewer numbers than every "
                 "τ < m (the text says why).",
        "is-asgd": "the curve at the chosen τ closes in on the dense one as τ grows; on the right, in numbers "
                   "sent per worker, every τ < m reaches the bottom with fewer numbers than the dense run, the "
                   "fewer the smaller τ is.",
    }

    def watch(self, frames):
        taus = [f["tau"] for f in frames]
        f = frames[0]
        what = self.WATCH.get(canonical(f["method"]), self.WATCH["ibcd"])
        return (f"τ runs from {taus[0]} to {taus[-1]} = m (n = {f['n']}, step {f['step_scale']:g} × the "
                f"theory's): on the left, in iterations, {what}")


def method_name(params) -> str:
    return canonical(params["method"])


class Playground(ConvergenceExplorer):
    """The appendix's explorer: every control, with the theory's iteration count against tau."""

    name = "playground"
    figsize = (12.0, 3.6)
    adjust: ClassVar[dict] = {"left": 0.07, "right": 0.98, "bottom": 0.15, "top": 0.8, "wspace": 0.3}
    show_problem = True
    legend_cols = 2

    def __init__(self, **kw):
        self._prewarm = _prewarm_sklearn()
        super().__init__(**kw)

    def wait_ready(self) -> None:
        """Wait for the background import of scikit-learn's data sets started when the playground was built."""
        if self._prewarm is not None:
            self._prewarm.join()

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
        ax3.set_xlabel(r"blocks sent, $\tau$")
        ax3.set_ylabel("iterations to accuracy")
        ax3.legend(ncol=2, markerscale=0.6, **dict(ABOVE, loc="lower right", bbox_to_anchor=(1.0, 1.01)))
        no_minor_ticks(ax3)
        art["ax3"] = ax3
        return art

    def _predicted(self, params):
        """The theorem's iteration count against tau for the controls ``params``."""
        return predicted_curve(self._problem_key(params), canonical(params["method"]), params["m"], self.eps)

    def _prefetch(self, params):
        super()._prefetch(params)
        self._predicted(params)

    def _update(self, art, params):
        html = super()._update(art, params)
        ax3 = art["ax3"]
        m, n = params["m"], params["n"]
        art["mark"].set_xdata([m / n, m / n])
        if "history" not in self.last:
            art["pred"].set_data([], [])
            art["meas"].set_data([], [])
            return html
        method = canonical(params["method"])
        taus, pred = self._predicted(params)
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
            ax3.set_ylim(*decades(max(vals.min(), 1), vals.max()))
        self.last["predicted_iterations"] = (taus, pred)
        return html


def _prewarm_sklearn():
    """Import scikit-learn's data sets in the background, so that the first switch to real data is quick
    (None, and nothing started, where the platform has no threads)."""
    import importlib
    import sys
    import threading

    if sys.platform == "emscripten":  # Pyodide: no threads; the import happens at the first switch
        return None
    th = threading.Thread(target=importlib.import_module, args=("sklearn.datasets",), daemon=True)
    try:
        th.start()
    except RuntimeError:  # "can't start new thread"
        return None
    return th


class _SubFigureProxy:
    """Lets :meth:`ConvergenceExplorer._setup` draw into two given axes of a larger figure."""

    def __init__(self, fig, axes):
        self._fig, self._axes = fig, axes

    def subplots(self, *a, **k):
        return self._axes

    def text(self, *a, **k):
        return self._fig.text(*a, **k)


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
    problem : one of ``PROBLEMS``
        The synthetic ones are ``problems.synthetic(n, l, d, cond=10, split=split, seed=seed)``
        with l = max(min(100, ceil(min(2000, 160000 // d) / n)), ceil(2 d / n)) rows per worker (for
        d <= 80: 100 up to n = 20, then about 2000 rows in all; wider problems fewer, about 160,000
        entries in all: what stays in the processor's cache), with ``interpolating=True`` ('interpolating'),
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

"""The trade-off explorer of chapters 4-8: iterations and numbers sent to accuracy against tau.

:class:`TradeoffExplorer` and its builder :func:`tradeoff_explorer` draw the
measured counts (the sweep over tau cached in :mod:`blockcd.widgets.cache`)
against the theory's ratio; the machinery is in :mod:`blockcd.widgets.base`.
"""

from __future__ import annotations

from typing import ClassVar

import ipywidgets as W
import numpy as np

from .. import plotting
from .._validate import check_choice, check_float, check_int, check_seed
from ..history import DivergenceError
from ..registry import BOOK_METHODS as METHODS
from ..registry import canonical, get
from .base import BlocksExplorer
from .cache import PROBLEMS, iterations_to, problem_d, tradeoff_sweep
from .canvas import ABOVE, decades, no_minor_ticks
from .controls import fmt_int, message

#: the methods the explorer offers, the book's, except IS-SAGA and those that need shared data (its
#: problems give every worker its own rows and it has no split control; the convergence explorer has one)
OFFERED = tuple(x for x in METHODS if x != "is-saga" and not get(x).shared_data)


class TradeoffExplorer(BlocksExplorer):
    """Iterations and numbers sent to accuracy against tau, measured and predicted (chapters 4-8)."""

    name = "tradeoff"
    figsize = (9.5, 3.4)
    adjust: ClassVar[dict] = {"left": 0.08, "right": 0.98, "bottom": 0.15, "top": 0.8, "wspace": 0.35}

    def __init__(self, *, method="ibcd", problem="interpolating", n=10, m=40, tau=4, d=40, eps=1e-4,
                 step_scale=1.0, seed=0):
        self._kind = check_choice("problem", problem, PROBLEMS)
        self._d = problem_d(self._kind, check_int("d", d, 2, 200))
        self._eps = check_float("eps", eps, positive=True, hi=1.0)
        self._scale = check_float("step_scale", step_scale, positive=True)
        self._seed = check_seed("seed", seed)
        method = check_choice("method", canonical(method), OFFERED)
        n = check_int("n", n, 1, 64)
        m = check_int("m", m, 1, self._d)
        tau = check_int("tau", tau, 1, m)
        super().__init__(method=method, n=n, m=m, tau=tau)

    def _controls(self, *, method, n, m, tau):
        return {"method": W.Dropdown(options=OFFERED, value=method, description="method"),
                **super()._controls(n=n, m=m, tau=tau)}

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
        ax1.legend(ncol=2, markerscale=0.5, **ABOVE)
        art["text"] = ax1.text(0.5, 0.5, "", transform=ax1.transAxes, ha="center", va="center",
                               color="#a30000", fontsize=10)
        no_minor_ticks(ax1, ax2)
        art["label"] = fig.text(0.99, 0.99, "", ha="right", va="top", fontsize=9, color="0.3")
        return art

    def _sweep(self, method, n, m):
        return tradeoff_sweep(method, self._kind, n, self._d, m, self._eps, self._scale, self._seed)

    def _measured(self, method, n, m, tau):
        """The sweep over tau and the count at the chosen tau."""
        taus, K, ratio = self._sweep(method, n, m)
        if tau in taus:
            return taus, K, ratio, K[taus.index(tau)]
        return taus, K, ratio, iterations_to(method, self._kind, n, self._d, m, tau, self._eps, self._scale,
                                             self._seed)

    def _prefetch(self, params):
        self._measured(canonical(params["method"]), params["n"], params["m"], params["tau"])

    def _update(self, art, params):
        method, n, m, tau = canonical(params["method"]), params["n"], params["m"], params["tau"]
        self._label(art, f"{method}, n = {n}, m = {m}, τ = {tau}")
        try:
            taus, K, ratio, k_cur = self._measured(method, n, m, tau)
        except (ValueError, DivergenceError) as exc:
            for k in ("meas_it", "pred_it", "cur_it", "meas_sent", "pred_sent", "cur_sent"):
                art[k].set_data([], [])
            art["text"].set_text("not available")
            self.last = {"error": exc}
            return message(str(exc))
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
                ax.set_ylim(*decades(ys.min(), ys.max(), pad=1.6))
        self.last = {"taus": taus, "iterations": K, "predicted": pred, "current": k_cur}
        mn = max(1, round(m / n))
        return (f'<div style="font-size:90%">{st["label"]} to {self._eps:.0e}: {fmt_int(k_cur)} iterations '
                f"at τ = {tau}, {fmt_int(K_m)} at τ = m; the dashed line is the theory's ratio "
                f"𝓛(τ)/𝓛(m) times the measured count at τ = m. τ = m/n ≈ {mn}.</div>")

    def _frames(self):
        method, m = self.controls["method"].value, self.controls["m"].value
        out = []
        for n in (1, 2, 4, 5, 8, 10, 16, 20, 32, 40):
            if n <= 64:
                out.append({"method": method, "n": n, "m": m, "tau": max(1, m // n)})
        return out


    def watch(self, frames):
        ns = [f["n"] for f in frames]
        return (f"n runs from {ns[0]} to {ns[-1]} workers with τ = m/n (the circle, on the dotted line): "
                "the measured counts follow the theory's dashed curve, and the circle's cost in iterations "
                "falls towards the dense count at τ = m as n grows.")


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
    tau : int in [1, m];  problem : one of ``PROBLEMS``;  d : int in [2, 200];
    eps : float in (0, 1];  step_scale : float > 0;  seed : int >= 0
    """
    return TradeoffExplorer(method=method, problem=problem, n=n, m=m, tau=tau, d=d, eps=eps,
                            step_scale=step_scale, seed=seed)

"""The explorer of chapter 3: aggregation variance, independent against shared sampling.

:class:`VarianceExplorer` and its builder :func:`variance_explorer` draw the
Monte-Carlo variance (cached in :mod:`blockcd.widgets.cache`) beside the key
lemma's prediction (:func:`blockcd.theory.aggregation_variance`); the machinery
is in :mod:`blockcd.widgets.base`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from matplotlib.legend_handler import HandlerTuple

from .. import plotting, theory
from .._validate import check_int, check_seed
from .base import BlocksExplorer
from .cache import cached_variance_mc, variance_vectors
from .canvas import ABOVE, decades, no_minor_ticks
from .player import MAX_FRAMES


class VarianceExplorer(BlocksExplorer):
    """Measured and predicted aggregation variance, independent against shared sampling (chapter 3)."""

    name = "variance"
    figsize = (7.0, 3.3)
    adjust: ClassVar[dict] = {"left": 0.15, "right": 0.97, "bottom": 0.12, "top": 0.84}

    def __init__(self, *, n=10, m=40, tau=4, d=40, trials=400, seed=0):
        self._d = check_int("d", d, 2, 200)
        self._trials = check_int("trials", trials, 10, 100_000)
        self._seed = check_seed("seed", seed)
        n = check_int("n", n, 1, 64)
        m = check_int("m", m, 1, self._d)
        tau = check_int("tau", tau, 1, m)
        super().__init__(n=n, m=m, tau=tau)

    def _setup(self, fig):
        ax = fig.subplots()
        x = np.array([0, 1])
        cols = [plotting.STYLE["independent"]["color"], plotting.STYLE["shared"]["color"]]
        bars = ax.bar(x, [1, 1], width=0.5, color=cols, alpha=0.8)
        pred, = ax.plot([], [], ls="none", marker="_", ms=40, mew=3, color="k")
        err, = ax.plot([], [], color="k", lw=1.5)
        ax.set_yscale("log")
        ax.set_xticks(x, ["independent", "shared"])
        # one line, no stacked fraction: at the figure's size a \frac squeezes its digits into the ticks
        ax.set_ylabel(r"$E\|G - \bar g\|^2 \,/\, \mathrm{mean}_i \|g_i\|^2$")
        ax.set_xlim(-0.6, 1.6)
        no_minor_ticks(ax)
        # the size of the vectors themselves: the independent bar falls below it once n > omega
        ax.axhline(1.0, color="0.5", ls=":", lw=1.2)
        # one entry per kind of mark, both bar colours in the first, off the data above the axes
        ax.legend([tuple(bars), pred], ["measured (Monte Carlo), ± 2 s.e.", "key lemma",
                                         ], handler_map={tuple: HandlerTuple(ndivide=None, pad=0.2)},
                  ncol=2, markerscale=0.4, **ABOVE)
        text = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center", fontsize=10)
        label = fig.text(0.99, 0.99, "", ha="right", va="top", fontsize=9, color="0.3")
        return {"ax": ax, "bars": bars, "pred": pred, "err": err, "text": text, "label": label}

    def _update(self, art, params):
        n, m, tau = params["n"], params["m"], params["tau"]
        G = variance_vectors(n, self._d, self._seed)
        norm = float(np.mean(np.sum(G**2, axis=1)))
        meas, se, pred = [], [], []
        for s in ("independent", "shared"):
            v, e = cached_variance_mc(n, self._d, m, tau, s, self._trials, self._seed)
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
        ax.set_ylim(*decades(lo, hi, pad=2.0))
        w = theory.omega(m, tau)
        return (f'<div style="font-size:90%">ω = m/τ − 1 = {w:.3g}. Independent: measured {meas[0]:.3g} ± '
                f"{se[0]:.2g}, predicted ω/n = {pred[0]:.3g}; shared: measured {meas[1]:.3g} ± {se[1]:.2g}, "
                f"predicted ω ‖ḡ‖²/(mean ‖g_i‖²) = {pred[1]:.3g} ({self._trials} draws; ± one standard "
                "error, bars show two).</div>")

    def _frames(self):
        """The sweep moves n, as the chapter's text and its exercise do, at the chosen m and tau (tau = m,
        nothing dropped, has nothing to show: then tau = m/2)."""
        n, m, tau = (self.controls[k].value for k in ("n", "m", "tau"))
        if tau == m:
            tau = max(1, m // 2)
        # omega = m/tau - 1 and its neighbours, where the independent bar crosses 1, and the current n
        w = round(m / tau - 1) if tau < m else 1
        ns = sorted({1, 2, 3, 4, 6, 16, 32, 64, n, *(k for k in (w - 1, w, w + 1) if 1 <= k <= 64)})
        while len(ns) > MAX_FRAMES:  # thin the middle, keep 1, 64 and the current n
            ns.remove(next(k for k in (6, 3, 32, 16, 2, 4) if k in ns and k != n))
        return [{"n": k, "m": m, "tau": tau} for k in ns]

    def watch(self, frames):
        f = frames[0]
        w = f["m"] / f["tau"] - 1
        return (f"n runs from {frames[0]['n']} to {frames[-1]['n']} workers at m = {f['m']}, τ = {f['tau']} "
                f"(ω = {w:.3g}): the independent bar falls like ω/n, below the dotted line at 1 once "
                "n > ω, while the shared bar stays high; the black dashes are the key lemma's values.")


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

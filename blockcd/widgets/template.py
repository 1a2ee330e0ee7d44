"""The explorer of chapter 1: numbers the master receives per round, and IBCD's curve dense and sparse.

:class:`TemplateExplorer` and its builder :func:`template_explorer`; problems and
runs come from :mod:`blockcd.widgets.cache`, the machinery from
:mod:`blockcd.widgets.base`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .. import plotting, theory
from .._validate import check_choice, check_int, check_seed
from ..methods import BYTES_PER_NUMBER
from .base import BlocksExplorer
from .cache import PROBLEMS, cached_problem, cached_run
from .canvas import ABOVE, nice_ceil
from .controls import fmt_int


class TemplateExplorer(BlocksExplorer):
    """Numbers the master receives per round, and what sparsification costs in iterations (chapter 1)."""

    name = "template"
    figsize = (9.0, 3.3)
    adjust: ClassVar[dict] = {"left": 0.1, "right": 0.98, "bottom": 0.15, "top": 0.84, "wspace": 0.35}

    def __init__(self, *, n=10, m=40, tau=None, d=40, iters=600, problem="interpolating", seed=0):
        self._d = check_int("d", d, 2, 200)
        self._kind = check_choice("problem", problem, PROBLEMS[:4])
        self._iters = check_int("iters", iters, 10, 20000)
        self._seed = check_seed("seed", seed)
        n = check_int("n", n, 1, 64)
        m = check_int("m", m, 1, self._d)
        tau = max(1, m // n) if tau is None else check_int("tau", tau, 1, m)
        super().__init__(n=n, m=m, tau=tau)

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

    def _runs(self, n, m, tau):
        """The problem, the run at tau and the dense run (tau = m)."""
        key = (self._kind, n, self._d, "contiguous", self._seed)
        p = cached_problem(*key)
        h = cached_run(key, "ibcd", m, tau, theory.step_size(p, "ibcd", m, tau), self._iters, self._seed)
        hd = cached_run(key, "ibcd", m, m, theory.step_size(p, "ibcd", m, m), self._iters, self._seed)
        return p, h, hd

    def _prefetch(self, params):
        self._runs(params["n"], params["m"], params["tau"])

    def _update(self, art, params):
        n, m, tau = params["n"], params["m"], params["tau"]
        d = self._d
        p, h, hd = self._runs(n, m, tau)
        recv = [n * d, n * (h.bytes_up[1] / BYTES_PER_NUMBER)]
        ax1, ax2 = art["axes"]
        for bar, txt, v in zip(art["bars"], art["vals"], recv):
            bar.set_height(v)
            txt.set_position((bar.get_x() + bar.get_width() / 2, v))
            txt.set_text(f"{v:,.0f}")
        ax1.set_ylim(0, nice_ceil(max(recv) * 1.2))  # 1, 2 or 5 x 10^k: most moves keep the background
        # each run stops once below the panel (cache.FLOOR)
        art["dense"].set_data(np.arange(hd.iters + 1), hd.dist2 / hd.dist2[0])
        art["sparse"].set_data(np.arange(h.iters + 1), h.dist2 / h.dist2[0])
        art["sparse"].set_label("IBCD, chosen τ")
        art["sparse"].set_markevery(max(1, self._iters // 8))
        art["dense"].set_markevery(max(1, self._iters // 8))
        ax2.set_xlim(0, self._iters)
        self._legend(ax2, ncol=2, **ABOVE)
        self._label(art, f"n = {n}, m = {m}, τ = {tau}, d = {d}")
        self.last = {"history": h, "dense": hd, "received": recv}
        eps = 1e-6
        return (f'<div style="font-size:90%">Per round the master receives n d = {recv[0]:,.0f} numbers '
                f"dense and n τ d/m = {recv[1]:,.0f} sparse; iterations to {eps:.0e}: dense "
                f"{fmt_int(hd.iters_to(eps))}, sparse {fmt_int(h.iters_to(eps))} (theory ratio "
                f"1 + (m/τ − 1) r/n = {theory.predicted_ratio(p, 'ibcd', m, tau):.3g}, r = {p.r:.3g}).</div>")

    def _frames(self):
        m = self.controls["m"].value
        ns = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 32]
        return [{"n": k, "m": m, "tau": max(1, m // k)} for k in ns]


    def watch(self, frames):
        m = frames[0]["m"]
        ns = [f["n"] for f in frames]
        return (f"n runs from {ns[0]} to {ns[-1]} workers with τ = m/n (m = {m}): the dense bar, n d numbers "
                f"a round, grows with n while the sparsified one stays near d = {self._d}, and the sparsified "
                "curve falls behind the dense one by about 1 + (1 − 1/n) r.")


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

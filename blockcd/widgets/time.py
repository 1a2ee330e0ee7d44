"""The explorer of chapter 9: time to accuracy K(tau) T(tau) for a link, a model size, n and tau.

:class:`TimeExplorer` and its builder :func:`time_explorer` plot the formulas of
:mod:`blockcd.network` (no run of a method, hence no cache); the machinery is in
:mod:`blockcd.widgets.base`.
"""

from __future__ import annotations

from typing import ClassVar

import ipywidgets as W
import numpy as np

from .. import network, plotting
from .._validate import check_choice, check_float, check_int
from .base import Explorer
from .canvas import ABOVE, decades, no_minor_ticks
from .controls import int_slider, style_box


class TimeExplorer(Explorer):
    """Time to accuracy K(tau) T(tau) for a link, a model size, n and tau (chapter 9)."""

    name = "time"
    figsize = (10.0, 3.5)
    adjust: ClassVar[dict] = {"left": 0.08, "right": 0.98, "bottom": 0.15, "top": 0.8, "wspace": 0.3}

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
        self._curves = {}  # (what, sizes, link) -> curves; the explorer's other settings are fixed
        super().__init__(link=link, model=model, bandwidth=lk["bandwidth"] / 1e9, latency=lk["latency"] * 1e6,
                         n=n, d=network.MODELS[model], tau=tau)

    def _controls(self, *, link, model, bandwidth, latency, n, d, tau):
        return {
            # presets only: when the sliders match none, the dropdown is blank (value None)
            "link": W.Dropdown(options=list(network.LINKS), value=link, description="link"),
            "model": W.Dropdown(options=list(network.MODELS), value=model, description="model"),
            "n": int_slider("workers n", n, 2, 256),
            # steps of 1, 2 (2.5), 5 x 10^k that include every preset, so each preset lies on its slider
            "bandwidth": W.SelectionSlider(options=_steps(BANDWIDTHS), value=bandwidth, description="Gbit/s",
                                           continuous_update=False, style=style_box()),
            "latency": W.FloatLogSlider(value=latency, base=10, min=0, max=3, step=0.1,
                                        description="latency µs", continuous_update=False, style=style_box()),
            "d": W.SelectionSlider(options=_steps(SIZES), value=d, description="parameters d",
                                   continuous_update=False, style=style_box()),
            "tau": int_slider("sent τ", tau, 1, self._m),
        }

    def _on_change(self, change):
        if self._syncing:
            return
        self._syncing = True
        try:
            c = self.controls
            if change["owner"] is c["link"] and change["new"] is not None:
                lk = network.LINKS[change["new"]]
                c["bandwidth"].value = lk["bandwidth"] / 1e9
                c["latency"].value = lk["latency"] * 1e6
            elif change["owner"] is c["model"] and change["new"] is not None:
                c["d"].value = network.MODELS[change["new"]]
            elif change["owner"] in (c["bandwidth"], c["latency"]):
                c["link"].value = _preset(network.LINKS, lambda v: (v["bandwidth"] / 1e9, v["latency"] * 1e6),
                                          (c["bandwidth"].value, c["latency"].value))
            elif change["owner"] is c["d"]:
                c["model"].value = _preset(network.MODELS, lambda v: (v,), (c["d"].value,))
        finally:
            self._syncing = False
        self._schedule()

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
        # the star and the circle are drawn large on the curve; in the legend at the text's size
        ax1.legend(ncol=3, markerscale=0.5, **ABOVE)
        gd = plotting.style("gd")
        art["n_dense_ps"], = ax2.loglog([], [], color=gd["color"], label="dense, parameter server")
        art["n_dense_ar"], = ax2.loglog([], [], color=gd["color"], ls="--", label="dense, all-reduce")
        art["n_sparse_ps"], = ax2.loglog([], [], color=ps["color"], label=r"$\tau = m/n$, parameter server")
        art["n_sparse_ar"], = ax2.loglog([], [], color=ps["color"], ls="--", label=r"$\tau = m/n$, all-gather")
        art["n_cur"] = ax2.axvline(1, color="0.5", ls=":", lw=1.5)
        ax2.set_xlabel("workers n")
        ax2.set_ylabel("time to accuracy (s)")
        ax2.legend(ncol=2, **dict(ABOVE, loc="lower right", bbox_to_anchor=(1.0, 1.01)))
        no_minor_ticks(ax1, ax2)
        art["label"] = fig.text(0.99, 0.99, "", ha="right", va="top", fontsize=9, color="0.3")
        return art

    def _tta(self, n, d, tau, link, accounting):
        return network.time_to_accuracy(n, d, self._m, tau, bandwidth=link[0], latency=link[1],
                                        kappa=self._kappa, r=min(self._r, n), eps=self._eps,
                                        compute=self._cpp * d, accounting=accounting)

    def _against_tau(self, n, d, link):
        key = ("tau", n, d, link)
        if len(self._curves) > 512:  # a bound on what a long session keeps
            self._curves.clear()
        if key not in self._curves:
            taus = np.unique(np.round(np.geomspace(1, self._m, 40)).astype(int))
            ps = np.array([self._tta(n, d, int(t), link, "parameter-server") for t in taus])
            ar = np.array([self._tta(n, d, int(t), link, "all-reduce") for t in taus])
            self._curves[key] = (taus, ps, ar)
        return self._curves[key]

    def _against_n(self, d, link):
        key = ("n", d, link)
        if key not in self._curves:
            m = self._m
            ns = np.unique(np.round(np.geomspace(2, 256, 30)).astype(int))
            self._curves[key] = (ns, {
                "n_dense_ps": [self._tta(k, d, m, link, "parameter-server") for k in ns],
                "n_dense_ar": [self._tta(k, d, m, link, "all-reduce") for k in ns],
                "n_sparse_ps": [self._tta(k, d, max(1, m // k), link, "parameter-server") for k in ns],
                "n_sparse_ar": [self._tta(k, d, max(1, m // k), link, "all-reduce") for k in ns],
            })
        return self._curves[key]

    def _update(self, art, params):
        n, tau = params["n"], min(params["tau"], self._m)
        d = round(params["d"])
        link = (params["bandwidth"] * 1e9, params["latency"] * 1e-6)
        m = self._m
        # the curves against tau depend on n, d and the link, those against n on d and the link: moving
        # tau (or n) reuses them (cached), and only the markers move
        taus, ps, ar = self._against_tau(n, d, link)
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
        ax1.set_ylim(*decades(ys.min(), ys.max()))
        ns, series = self._against_n(d, link)
        for k, v in series.items():
            art[k].set_data(ns, v)
        art["n_cur"].set_xdata([n, n])
        allv = np.concatenate([np.asarray(v) for v in series.values()])
        ax2.set_xlim(1.8, 290)
        ax2.set_ylim(*decades(allv.min(), allv.max()))
        self._label(art, f"{params['bandwidth']:.3g} Gbit/s, {params['latency']:.3g} µs, d = {d:.2g}, n = {n}")
        T = network.round_time(n, d, m, tau, bandwidth=link[0], latency=link[1], compute=self._cpp * d)
        K = network.iterations(self._kappa, r, n, m, tau, self._eps)
        self.last = {"taus": taus, "parameter_server": ps, "all_reduce": ar, "tau_star": t_star,
                     "series": series, "ns": ns}
        return (f'<div style="font-size:90%">Parameter server, τ = {tau}: a round takes {T * 1e3:.3g} ms, '
                f"K(τ) = {K:,.0f} rounds, {cur:.3g} s in all. The time-optimal τ* = √(b c0 / (a c1)) = "
                f"{t_star:.3g} against m/n = {m / n:.3g} (m = {m} blocks, κ = {self._kappa:g}, "
                f"r = {r:g}).</div>")

    def watch(self, frames):
        return _watch(frames)

    def _frames(self):
        base = self.params()
        return [dict(base, bandwidth=b) for b in np.geomspace(1, 100, 9)]


#: the bandwidth slider's steps (Gbit/s), 1, 2, 5 x 10^k and the links' presets
BANDWIDTHS = tuple(sorted({1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0} | {v["bandwidth"] / 1e9 for v in network.LINKS.values()}))
#: the model-size slider's steps, 1, 2, 5 x 10^k from 10^5 to 10^9 and the models' presets
SIZES = tuple(sorted({f * 10**e for e in range(5, 10) for f in (1, 2, 5) if f * 10**e <= 10**9}
                     | set(network.MODELS.values())))


def _watch(frames) -> str:
    bw = [f["bandwidth"] for f in frames]
    return (f"the bandwidth runs from {bw[0]:g} to {bw[-1]:g} Gbit/s (n, d and the latency fixed): the star, "
            "the time-optimal τ⋆, moves right and crosses the dotted line τ = m/n as a transfer gets cheap "
            "against the fixed cost of a round.")


def _steps(values) -> list[tuple[str, float]]:
    return [(f"{v:g}", v) for v in values]


def _preset(presets: dict, values, current: tuple):
    """The name of the preset whose slider values are ``current`` (within 1%), or None."""
    for name, v in presets.items():
        if all(abs(a - b) <= 0.01 * abs(a) for a, b in zip(values(v), current)):
            return name
    return None


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

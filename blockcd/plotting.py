"""The book's recurring figures, with one colour and marker per method.

Every chapter draws with these functions so that a method looks the same
everywhere: :data:`STYLE` fixes colour, marker and label per method, and
:func:`setup` applies the book's matplotlib defaults :data:`RC_PARAMS`
(``lw=2``, grid, no top and right spines; lowercase labels and no titles:
captions come from the notebook cell's metadata).  Nothing here
runs a method; pass :class:`~blockcd.History` objects or arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

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


def _ax(ax):
    if ax is None:
        setup()
        _, ax = plt.subplots()
    return ax


def convergence(histories: Sequence, ax=None, *, x: str = "iteration", y: str = "dist2",
                labels: Iterable[str] | None = None, keys: Iterable[str] | None = None,
                relative: bool = True, markevery: int | None = None, **kw):
    """Error against iterations (``x='iteration'``) or blocks / bytes sent up.

    ``y`` is ``'dist2'`` (||x - x*||^2) or ``'gap'`` (f - f*); with
    ``relative=True`` the curve is divided by its value at x0.
    """
    ax = _ax(ax)
    labels = list(labels) if labels is not None else [None] * len(histories)
    keys = list(keys) if keys is not None else [h.method for h in histories]
    for h, lab, key in zip(histories, labels, keys):
        vals = np.asarray(getattr(h, y), dtype=float)
        if relative:
            vals = vals / vals[0]
        xs = {"iteration": np.arange(vals.size), "blocks": h.blocks_up, "bytes": h.bytes_up}[x]
        st = style(key, **kw)
        if lab is not None:
            st["label"] = lab
        st.setdefault("markevery", markevery or max(1, vals.size // 8))
        ax.semilogy(xs, np.maximum(vals, 1e-300), **st)
    ax.set_xlabel({"iteration": "iteration k", "blocks": "blocks sent per worker",
                   "bytes": "bytes sent per worker"}[x])
    ax.set_ylabel({"dist2": r"$\|x^k - x^\star\|^2 / \|x^0 - x^\star\|^2$" if relative else r"$\|x^k - x^\star\|^2$",
                   "gap": r"$(f(x^k) - f^\star) / (f(x^0) - f^\star)$" if relative else r"$f(x^k) - f^\star$"}[y])
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

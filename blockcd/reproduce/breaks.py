"""Experiment 5 of chapter 8, where the match between theory and measurement breaks, and why.

:func:`where_it_breaks` breaks the assumption of the ratio lemma (chapter 8,
``lem-ratios``) in three ways, each with the direction the measured ratio must
move: large r (with the theory's and with tuned steps), kappa below n (ISEGA's
memory term), and tuned instead of theory steps.
"""

from __future__ import annotations

import math

import numpy as np

from .. import plotting, problems, theory
from .core import (
    PLANS,
    TOLERANCE,
    Result,
    Runner,
    batch_size,
    new_figure,
    one_thread,
    predicted,
    varies_by_seed,
)


@one_thread
def where_it_breaks(config="quick", *, seed: int = 0, progress=None, tolerance: float = TOLERANCE) -> Result:
    r"""Where measured and predicted ratios part, and in which direction the theory says they should.

    (a) **Large r**: IBCD on synthetic problems whose workers differ in scale
    (``heterogeneity`` in ``config.breaks_hets``; n = 10, d = m = 40,
    kappa = 10) at tau = m/n.  With the theory step the ratio follows the
    bound 1 + (1 - 1/n) r (check ``within``), which grows with r: m/n blocks
    are not enough.  With the best step (tuned at each tau over powers of 2
    times the theory step) the ratio is far smaller (check ``below``): the
    bound charges every worker the worst smoothness L_max.

    (b) **kappa below n**: ISEGA with kappa = 1.2, n = 25, d = m = 100 (400
    rows per worker).  Its bound is max(step term, memory term 2m/tau); here
    the memory term is the larger.  At tau = m the step is so large
    (gamma mu = 1/kappa) that gradient descent is done in a few iterations,
    and at tau = m/n the shifts, refreshed tau/m of a time, keep a larger
    step from helping: K(m/n)/K(m) exceeds the step-only prediction
    L(tau)/L(m), with the theory step and with the best step alike (check
    ``above``).  The counts at each tau of ``config.breaks_taus`` are
    recorded with both terms of the bound (``info``).

    (c) **Tuned steps**: each method of ``config.tuned_methods`` on the
    heterogeneity-0 problem of (a): the ratio with the best step at each tau
    lies below the predicted one (check ``below``); ``gain`` records
    K(theory step)/K(best step) at tau = m/n.

    Arguments and return value as in :func:`ninety_nine`.
    """
    R = Runner(config, seed, progress, tolerance)
    c = R.config
    S = len(R.seeds)
    R.plan(PLANS["where_it_breaks"](c, S), "where_it_breaks")
    rows = []
    eps = 1e-4

    # (a) large r --------------------------------------------------------
    n, m = 10, 40
    tau = m // n
    a_pts = []
    for het in c.breaks_hets:
        p = problems.synthetic(n, 100, m, interpolating=True, cond=10, heterogeneity=het, seed=R.seed)
        short = f"het={het:g}"
        pred = theory.predicted_ratio(p, "ibcd", m, tau)
        K_m = R.iterations(p, "ibcd", m, m, eps, seeds=R.seeds[:1])
        R.tick(S - 1)
        K_t = R.iterations(p, "ibcd", m, tau, eps)
        rows.append(R.row("where_it_breaks", short, "ibcd", m, tau, eps, K_m, K_t, pred, "L ratio", _p=p, r=p.r,
                          part="large r"))
        sc_m, T_m = R.tuned(p, "ibcd", m, m, eps, K_m)
        sc_t, T_t = R.tuned(p, "ibcd", m, tau, eps, K_t)
        rows.append(R.row("where_it_breaks", short, "ibcd", m, tau, eps, T_m, T_t, pred, "L ratio", _p=p,
                          check="below", step="tuned", r=p.r, part="large r", scale_m=sc_m, scale_tau=sc_t,
                          gain=float(np.mean(K_t) / np.mean(T_t))))
        a_pts.append((p.r, rows[-2], rows[-1]))

    # (b) kappa below n: ISEGA ------------------------------------------
    n_b, m_b = 25, 100
    p_b = problems.synthetic(n_b, 400, m_b, interpolating=True, cond=1.2, seed=R.seed)
    short = f"kappa={p_b.kappa:.2g} n={n_b}"
    tau_b = m_b // n_b
    b_taus = sorted({t for t in c.breaks_taus if 1 <= t <= m_b} | {m_b, tau_b}, reverse=True)
    K_b = {}
    for t in b_taus:
        K_b[t] = R.iterations(p_b, "isega", m_b, t, eps, seeds=R.seeds if t < m_b else R.seeds[:1])
        if t == m_b:
            R.tick(S - 1)
    terms = {}
    for t in b_taus:
        # the two terms of the bound, iterations per factor eps: log(1/eps)/(gamma mu) and log(1/eps) 2m/tau
        terms[t] = (math.log(1 / eps) / (theory.step_size(p_b, "isega", m_b, t) * p_b.mu),
                    math.log(1 / eps) * 2 * m_b / t)
        if t == m_b:
            continue
        pred = theory.predicted_ratio(p_b, "isega", m_b, t)
        rows.append(R.row("where_it_breaks", short, "isega", m_b, t, eps, K_b[m_b], K_b[t], pred,
                          "L ratio (step term only)", _p=p_b, check="above" if t == tau_b else "info",
                          r=p_b.r, part="kappa below n", kappa=p_b.kappa,
                          bound_ratio=predicted(p_b, "isega", m_b, t, eps)[0],
                          step_term=terms[t][0], memory_term=terms[t][1]))
    sc_m, T_m = R.tuned(p_b, "isega", m_b, m_b, eps, K_b[m_b])
    sc_t, T_t = R.tuned(p_b, "isega", m_b, tau_b, eps, K_b[tau_b])
    rows.append(R.row("where_it_breaks", short, "isega", m_b, tau_b, eps, T_m, T_t,
                      theory.predicted_ratio(p_b, "isega", m_b, tau_b), "L ratio (step term only)", _p=p_b,
                      check="above", step="tuned", r=p_b.r, part="kappa below n", kappa=p_b.kappa,
                      scale_m=sc_m, scale_tau=sc_t, gain=float(np.mean(K_b[tau_b]) / np.mean(T_t))))

    # (c) tuned steps -----------------------------------------------------
    n, m = 10, 40
    tau = m // n
    p = problems.synthetic(n, 100, m, interpolating=True, cond=10, heterogeneity=0.0, seed=R.seed)
    short = "het=0"
    c_pts = [("ibcd", r) for r in rows if r["problem"] == short and r["step"] == "tuned"]
    for q in c_pts:
        q[1]["theory_step_ratio"] = next(r["measured_ratio"] for r in rows
                                         if r["problem"] == short and r["step"] == "theory")
    for method in c.tuned_methods:
        b = batch_size(method)
        pred, kind = predicted(p, method, m, tau, eps, batch=b)
        seeds_m = R.seeds if varies_by_seed(method, m, m) else R.seeds[:1]
        K_m = R.iterations(p, method, m, m, eps, seeds=seeds_m, batch=b)
        R.tick(S - len(seeds_m))
        K_t = R.iterations(p, method, m, tau, eps, batch=b)
        sc_m, T_m = R.tuned(p, method, m, m, eps, K_m, batch=b)
        sc_t, T_t = R.tuned(p, method, m, tau, eps, K_t, batch=b)
        rows.append(R.row("where_it_breaks", short, method, m, tau, eps, T_m, T_t, pred, kind, _p=p,
                          check="below", step="tuned", r=p.r, part="tuned step", scale_m=sc_m, scale_tau=sc_t,
                          gain=float(np.mean(K_t) / np.mean(T_t)),
                          theory_step_ratio=float(np.mean(K_t) / np.mean(K_m))))
        c_pts.append((method, rows[-1]))
    R.settle()
    R.close()

    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, axes = new_figure(2, 2, size=(10.5, 10.2))

    def legend_below(ax, **kw):
        """The panel's legend under its x axis, off the data, at a readable size."""
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2, fontsize=10, frameon=False, **kw)

    ax = axes[0, 0]
    ax.set_title("(a) large $r$: IBCD", fontsize=11)
    st = plotting.style("ibcd")
    rs = np.array([q[0] for q in a_pts])
    for j, lab in ((1, "theory step"), (2, "best step")):
        y = np.array([q[j]["measured_ratio"] for q in a_pts])
        lo = np.array([q[j]["measured_min"] for q in a_pts])
        hi = np.array([q[j]["measured_max"] for q in a_pts])
        ax.errorbar(rs, y, yerr=[y - lo, hi - y], ls="none", capsize=3, marker=st["marker"], color=st["color"],
                    mfc=st["color"] if j == 1 else "white", ms=8, label=f"IBCD, {lab}")
    order = np.argsort(rs)
    ax.plot(rs[order], np.array([q[1]["predicted_ratio"] for q in a_pts])[order], "k--", lw=1.5,
            label=r"$m/n$ rule $1 + (m/\tau - 1)\, r/n$")
    ax.set_xlabel(r"$r = L_{\max} / L$")
    ax.set_ylabel(r"$K(m/n) / K(m)$")
    legend_below(ax)

    ax = axes[0, 1]
    ax.set_title(r"(b) $\kappa$ below $n$: ISEGA, ratios", fontsize=11)
    st = plotting.style("isega")
    b_rows = sorted((r for r in rows if r["part"] == "kappa below n" and r["step"] == "theory"),
                    key=lambda r: r["tau"])
    ts = np.array([r["tau"] for r in b_rows])
    y = np.array([r["measured_ratio"] for r in b_rows])
    lo = np.array([r["measured_min"] for r in b_rows])
    hi = np.array([r["measured_max"] for r in b_rows])
    ax.errorbar(ts, y, yerr=[y - lo, hi - y], ls="none", capsize=3, marker=st["marker"], color=st["color"],
                ms=8, label="ISEGA, theory step")
    tuned_b = next(r for r in rows if r["part"] == "kappa below n" and r["step"] == "tuned")
    ax.plot([tau_b], [tuned_b["measured_ratio"]], ls="none", marker=st["marker"], mfc="white", color=st["color"],
            ms=12, label=f"ISEGA, best step (x{tuned_b['scale_tau']:g} at m/n)")
    dense = np.unique(np.round(np.geomspace(1, m_b, 50)).astype(int))
    ax.plot(dense, [theory.predicted_ratio(p_b, "isega", m_b, t) for t in dense], color="k", ls="--",
            lw=1.5, label=r"step term only, $\mathcal{L}(\tau)/\mathcal{L}(m)$")
    ax.plot(dense, [predicted(p_b, "isega", m_b, t, eps)[0] for t in dense], color="#d62728", ls=":", lw=2,
            label="bound with memory term")
    ax.axvline(m_b / n_b, color="0.5", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\tau$ (dotted vertical: $m/n$)")
    ax.set_ylabel(r"$K(\tau) / K(m)$")
    ax.text(0.97, 0.97, rf"$\kappa$ = {p_b.kappa:.2g}, n = {n_b}", transform=ax.transAxes, ha="right", va="top")
    legend_below(ax)

    # the same runs as counts, with the two terms of ISEGA's bound
    ax = axes[1, 0]
    ax.set_title(r"(c) $\kappa$ below $n$: ISEGA, counts", fontsize=11)
    ts = np.array(sorted(K_b))
    y = np.array([np.mean(K_b[t]) for t in ts])
    lo = np.array([np.min(K_b[t]) for t in ts])
    hi = np.array([np.max(K_b[t]) for t in ts])
    ax.errorbar(ts, y, yerr=[y - lo, hi - y], ls="none", capsize=3, marker=st["marker"], color=st["color"],
                ms=8, label="ISEGA, theory step")
    ax.plot(dense, [math.log(1 / eps) / (theory.step_size(p_b, "isega", m_b, t) * p_b.mu) for t in dense],
            color="k", ls="--", lw=1.5, label=r"step term $\log(1/\epsilon)/(\gamma\mu)$")
    ax.plot(dense, [math.log(1 / eps) * 2 * m_b / t for t in dense], color="#d62728", ls=":", lw=2,
            label=r"memory term $\log(1/\epsilon)\,2m/\tau$")
    ax.axvline(m_b / n_b, color="0.5", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\tau$ (dotted vertical: $m/n$)")
    ax.set_ylabel(r"iterations $K(\tau)$")
    ax.text(0.97, 0.97, rf"$\kappa$ = {p_b.kappa:.2g}, n = {n_b}", transform=ax.transAxes, ha="right", va="top")
    legend_below(ax)

    ax = axes[1, 1]
    ax.set_title("(d) tuned steps, alike workers", fontsize=11)
    handles = []
    for j, (method, r) in enumerate(c_pts):
        st = plotting.style(method)
        label = st["label"]
        ax.bar(j - 0.2, r["theory_step_ratio"], width=0.38, color=st["color"], alpha=0.4, hatch="//",
               edgecolor=st["color"])
        ax.bar(j + 0.2, r["measured_ratio"], width=0.38, color=st["color"])
        ax.plot([j - 0.42, j + 0.42], [r["predicted_ratio"]] * 2, color="k", lw=2)
        handles += [Patch(facecolor=st["color"], alpha=0.4, hatch="//", edgecolor=st["color"],
                          label=f"{label}, theory step"),
                    Patch(color=st["color"], label=f"{label}, best step")]
    handles.append(Line2D([], [], color="k", lw=2, label="prediction"))
    ax.set_xticks(range(len(c_pts)), [plotting.style(mm)["label"] for mm, _ in c_pts])
    ax.grid(axis="x", visible=False)
    ax.set_ylabel(r"$K(m/n) / K(m)$")
    legend_below(ax, handles=handles)
    fig.tight_layout(h_pad=2.0)
    return Result("where_it_breaks", rows, fig)

"""Experiments 1-4 of chapter 8, one function each, returning a :class:`~blockcd.reproduce.core.Result`.

Experiment 5 is in ``breaks.py``, 6 in ``variants.py``, 7 in ``decreasing.py`` and 8 in ``part2.py``.

Each runs the library's methods with the theory's steps (and tuned ones where
said), tabulates measured against predicted ratios and draws its figure.
"""

from __future__ import annotations

import math

import numpy as np

from .. import plotting, problems, theory
from ..experiments import variance_mc
from ..methods import run
from .core import (
    PLANS,
    SWEEP_METHODS,
    TOLERANCE,
    Result,
    Runner,
    band,
    batch_size,
    new_figure,
    one_thread,
    plain_log,
    predicted,
    varies_by_seed,
)


@one_thread
def ninety_nine(config="quick", *, seed: int = 0, progress=None, tolerance: float = TOLERANCE) -> Result:
    r"""The 99% figure: n = 100 workers, each sending tau = m/n = 1% of the m blocks.

    IBCD at tau = m (dense gradient descent), tau = m/n and tau = 1 on an
    interpolating synthetic ridge problem (d = m = 200) and on the paper's
    LIBSVM set ``config.nn_real`` (a1a: logistic, lam = 0.1, d = m = 123, so
    m/n = 1.23 and tau = floor(m/n) = 1).  Measured: the iteration factor K(tau)/K(m) against
    the m/n rule 1 + (m/tau - 1) r/n (chapter 4), and the share of blocks
    saved, 1 - tau K(tau) / (m K(m)).  Tolerance: ``tolerance`` (15%).

    Parameters
    ----------
    config : 'quick', 'full' or a :class:`Config`
    seed : int >= 0
        Seed of the problems and first seed of the runs.
    progress : None, True or a tqdm bar
    tolerance : float > 0
        Relative tolerance of the checks.

    Returns
    -------
    Result
        One row per (problem, tau < m); the figure shows error against
        iterations and against blocks sent per worker, median and min-max over
        the seeds.
    """
    R = Runner(config, seed, progress, tolerance)
    c = R.config
    n = 100
    synth = problems.synthetic(n, c.nn_rows, 200, interpolating=True, cond=10, seed=R.seed)
    real = _real_problem(c.nn_real, n, "iid", R.seed)
    cases = [(synth, "synthetic", c.nn_eps), (real, c.nn_real.replace("_", " "), c.real_eps)]
    R.plan(PLANS["ninety_nine"](c, len(R.seeds)), "ninety_nine")
    rows, curves = [], []
    for p, short, eps in cases:
        m = p.d
        taus = sorted({m, max(1, m // n), 1}, reverse=True)
        hist, K = {}, {}
        for tau in taus:
            seeds = R.seeds if varies_by_seed("ibcd", m, tau) else R.seeds[:1]
            if tau == m:
                bound = theory.predicted_iterations(p, "ibcd", m, tau, eps)
                iters = int(max(50, math.ceil(0.5 * bound)))
            else:  # the m/n rule times the dense count, with a margin
                iters = math.ceil(1.25 * theory.predicted_ratio(p, "ibcd", m, tau) * K[m][0])
            if not p.interpolating:
                iters *= 4  # run on to show the neighbourhood where IBCD stops
            while True:
                hs = [run(p, "ibcd", m=m, tau=tau, iters=iters, seed=s) for s in seeds]
                ks = [h.iters_to(eps) for h in hs]
                if all(k is not None for k in ks):
                    break
                iters *= 2
            R.tick(len(R.seeds) if tau < m else 1)
            hist[tau], K[tau] = hs, np.array(ks, dtype=float)
        for tau in taus[1:]:
            pred = theory.predicted_ratio(p, "ibcd", m, tau)
            kind, check = "L ratio", "within"
            if not p.interpolating:
                bound, _ = predicted(p, "ibcd", m, tau, eps)
                if math.isfinite(bound):
                    pred, kind = bound, "bound ratio"
                else:  # the theorem's neighbourhood lies above eps: only the step term's ratio, as a floor
                    check = "above"
            saved = float(1.0 - tau * np.mean(K[tau]) / (m * np.mean(K[m])))
            rows.append(R.row("ninety_nine", short, "ibcd", m, tau, eps, K[m], K[tau], pred, kind, _p=p,
                              check=check, r=p.r, blocks_saved=saved,
                              blocks_saved_predicted=float(1.0 - tau * pred / m),
                              radius=theory.neighbourhood(p, "ibcd", m, tau) / float(hist[tau][0].dist2[0])))
        curves.append((p, short, eps, taus, hist, K))
    R.settle()
    R.close()

    fig, axes = new_figure(2, 2, size=(10.5, 7.4))
    looks = {0: ("gd", {}), 1: ("ibcd", {}), 2: ("ibcd", {"color": "#9ecae1", "marker": "s"})}
    for a, (p, short, eps, taus, hist, K) in enumerate(curves):
        m = p.d
        longest = max(np.max(v) for v in K.values())
        kmax = int(1.15 * longest) if p.interpolating else min(len(hist[1][0].dist2) - 1, int(4 * longest))
        for j, tau in enumerate(taus):
            key, kw = looks[j]
            name = r"$\tau = m$ (dense)" if tau == m else (r"$\tau = 1$" if tau == 1 else r"$\tau = m/n$")
            if tau == 1 and m // n < 1:
                name = r"$\tau = 1 = \lceil m/n \rceil$"
            rel = np.array([h.dist2[: kmax + 1] / h.dist2[0] for h in hist[tau]])
            k = np.arange(rel.shape[1])
            band(axes[a, 0], k, rel, key, f"{name}: {tau} of {m} blocks", **kw)
            band(axes[a, 1], k[1:] * tau, rel[:, 1:], key, name, **kw)
        for ax in axes[a]:
            ax.axhline(eps, color="0.4", ls=":", lw=1.5)
        axes[a, 0].set_xlabel("iteration k")
        axes[a, 1].set_xlabel("blocks sent per worker")
        axes[a, 1].set_xscale("log")
        axes[a, 0].set_ylabel(r"$\|x^k - x^\star\|^2 / \|x^0 - x^\star\|^2$")
        axes[a, 0].legend(fontsize=9, loc="lower left" if p.interpolating else "upper right")
        axes[a, 1].text(0.03, 0.05, f"{short}\nn = {n}, r = {p.r:.2g}", transform=axes[a, 1].transAxes,
                        ha="left", va="bottom")
    fig.tight_layout()
    return Result("ninety_nine", rows, fig)


# ============================================================ experiment 2
def _knee(taus_dense, pred_dense) -> float:
    """tau where the predicted ratio crosses 2 (interpolated in log tau); nan if it never does."""
    t = np.asarray(taus_dense, dtype=float)
    y = np.asarray(pred_dense, dtype=float)
    above = np.flatnonzero(y >= 2.0)
    if above.size == 0 or above[-1] + 1 >= t.size:
        return math.nan
    i = above[-1]
    if y[i] == y[i + 1]:
        return float(t[i])
    w = (y[i] - 2.0) / (y[i] - y[i + 1])
    return float(np.exp(np.log(t[i]) + w * (np.log(t[i + 1]) - np.log(t[i]))))


@one_thread
def iterations_vs_tau(config="quick", *, seed: int = 0, progress=None, tolerance: float = TOLERANCE) -> Result:
    r"""K(tau)/K(m) for each method and number of workers n, with the knee marked.

    Interpolating synthetic ridge problems (d = m = 100, kappa = 10, fixed rows
    per worker, so r grows with n), each method of ``SWEEP_METHODS`` (the book's
    five; the paper's variants have experiment 6, :func:`paper_methods`) at the theory step
    (IS-SGD and IS-SAGA with minibatches of ``BATCH``), for the tau of
    ``config.sweep_taus``.  The prediction is ``L ratio`` for IBCD and IS-SGD
    and ``bound ratio`` for ISEGA, IS-SAGA and IS-ASGD (module docstring).
    The knee is the tau where the predicted ratio reaches 2; for IBCD it is
    :func:`blockcd.theory.knee`, m r/(n + r).  Pairs (method, tau) whose bound
    exceeds ``config.sweep_cap`` iterations are not run.  Tolerance 15%.
    Arguments and return value as in :func:`ninety_nine`.
    """
    R = Runner(config, seed, progress, tolerance)
    c = R.config
    m = 100
    taus = sorted({t for t in c.sweep_taus if 1 <= t <= m} | {m}, reverse=True)
    R.plan(PLANS["iterations_vs_tau"](c, len(R.seeds)), "iterations_vs_tau")
    rows, panels = [], []
    for n in c.sweep_ns:
        p = problems.synthetic(n, c.sweep_rows, m, interpolating=True, cond=10, seed=R.seed)
        short = f"synthetic n={n}"
        lines = {}
        for method in SWEEP_METHODS:
            b = batch_size(method)
            dense = np.unique(np.round(np.geomspace(1, m, 60)).astype(int))
            pred_dense = np.array([predicted(p, method, m, t, c.sweep_eps, batch=b)[0] for t in dense])
            knee = theory.knee(m, n, p.r) if method == "ibcd" else _knee(dense, pred_dense)
            meas = {}
            K_m = None
            for tau in taus:
                bound = theory.predicted_iterations(p, method, m, tau, c.sweep_eps, batch=b)
                if not bound <= c.sweep_cap:
                    break
                seeds = R.seeds if varies_by_seed(method, m, tau) else R.seeds[:1]
                pred, kind = predicted(p, method, m, tau, c.sweep_eps, batch=b)
                K = R.iterations(p, method, m, tau, c.sweep_eps, seeds=seeds, batch=b)
                if len(seeds) < len(R.seeds):
                    R.tick(len(R.seeds) - len(seeds))
                if tau == m:
                    K_m = K
                    continue
                rows.append(R.row("iterations_vs_tau", short, method, m, tau, c.sweep_eps, K_m, K, pred, kind,
                                  _p=p, r=p.r, knee=knee))
                rr = rows[-1]
                meas[tau] = (rr["measured_ratio"], rr["measured_min"], rr["measured_max"])
            lines[method] = (dense, pred_dense, knee, meas)
        panels.append((n, p, lines))
    R.settle()
    R.close()

    ncols = min(len(panels), 2)
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(nrows, ncols, size=(5.2 * ncols, 4.0 * nrows), sharey=True)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (n, p, lines) in zip(axes.flat, panels):
        for method, (dense, pred_dense, knee, meas) in lines.items():
            st = plotting.style(method)
            ax.plot(dense, pred_dense, color=st["color"], ls="--", lw=1.5)
            if meas:
                t = np.array(sorted(meas))
                y = np.array([meas[x][0] for x in t])
                err = np.array([[meas[x][0] - meas[x][1] for x in t], [meas[x][2] - meas[x][0] for x in t]])
                ax.errorbar(t, y, yerr=np.maximum(err, 0), ls="none", capsize=3, lw=1.5,
                            marker=st["marker"], color=st["color"], label=st["label"])
            if np.isfinite(knee):
                ax.plot([knee], [2.0], marker="|", ms=16, mew=2.5, color=st["color"])
        ax.axhline(2.0, color="0.6", lw=1, ls=":")
        ax.axvline(m / n, color="0.5", ls=":", lw=1.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"blocks sent per worker per iteration, $\tau$")
        ax.text(0.97, 0.97, f"n = {n}, r = {p.r:.2g}", transform=ax.transAxes, ha="right", va="top")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"$K(\tau) / K(m)$")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], ls="--", lw=1.5, marker=plotting.style(mm)["marker"], color=plotting.style(mm)["color"],
                      label=plotting.style(mm)["label"]) for mm in SWEEP_METHODS]
    axes[0, 0].legend(handles=handles, fontsize=8, loc="lower left")
    fig.tight_layout()
    return Result("iterations_vs_tau", rows, fig)


# ============================================================ experiment 3
@one_thread
def independent_vs_shared(config="quick", *, seed: int = 0, progress=None,
                          tolerance: float = TOLERANCE) -> Result:
    r"""Independent against shared block choices at the same tau = m/n: the n-fold difference.

    IBCD on interpolating synthetic ridge problems (d = m = 100, kappa = 10),
    n in ``config.shared_ns``.  Independent choices run at the theory step
    1/(2 L(tau)), L(tau) = L + omega L_max/n; shared choices (one mask for all
    workers: randomized block coordinate descent on f) have expected
    smoothness (m/tau) L and run at tau/(2 m L), so the predicted iteration
    ratios are 1 + (m/tau - 1) r/n and m/tau = n.  Also measured: the
    aggregation variance of the key lemma at x0 = 0 (Monte Carlo, 4000
    draws), whose ratio shared/independent is n ||gbar||^2 / mean ||g_i||^2;
    its tolerance is four Monte-Carlo standard errors.  Arguments and return
    value as in :func:`ninety_nine`.
    """
    R = Runner(config, seed, progress, tolerance)
    c = R.config
    m = 100
    eps = 1e-4
    R.plan(PLANS["independent_vs_shared"](c, len(R.seeds)), "independent_vs_shared")
    rows, pts = [], []
    for n in c.shared_ns:
        p = problems.synthetic(n, 100, m, interpolating=True, cond=10, seed=R.seed)
        short = f"synthetic n={n}"
        tau = m // n
        K_m = R.iterations(p, "ibcd", m, m, eps, seeds=R.seeds[:1])
        pred_i = theory.predicted_ratio(p, "ibcd", m, tau)
        K_i = R.iterations(p, "ibcd", m, tau, eps)
        rows.append(R.row("independent_vs_shared", short, "ibcd", m, tau, eps, K_m, K_i, pred_i, "L ratio", _p=p,
                          r=p.r))
        # shared: the theory step for one shared mask, 1/(2 (m/tau) L) = (tau/m) times the dense one
        pred_s = m / tau
        K_s = R.iterations(p, "ibcd", m, tau, eps, sampling="shared")
        rows.append(R.row("independent_vs_shared", short, "ibcd", m, tau, eps, K_m, K_s, pred_s, "m/tau (shared)",
                          _p=p, sampling="shared", r=p.r))
        # the key lemma's variances at x0 = 0
        G = p.local_grads(np.zeros(p.d))
        v_i, se_i = variance_mc(G, m, tau, sampling="independent", trials=4000, seed=R.seed)
        v_s, se_s = variance_mc(G, m, tau, sampling="shared", trials=4000, seed=R.seed)
        t_i = theory.aggregation_variance(G, m, tau, "independent")
        t_s = theory.aggregation_variance(G, m, tau, "shared")
        meas, pred = v_s / v_i, t_s / t_i
        rse = math.hypot(se_s / v_s, se_i / v_i)  # relative standard error of the measured ratio
        tol = 4 * rse
        rows.append({
            "experiment": "independent_vs_shared", "problem": short, "method": "variance",
            "sampling": "shared/independent", "step": "", "n": n, "m": m, "tau": tau, "eps": math.nan,
            "seeds": 4000, "iters_m": math.nan, "iters_tau": math.nan, "measured_ratio": meas,
            "measured_min": meas * (1 - 2 * rse), "measured_max": meas * (1 + 2 * rse), "predicted_ratio": pred,
            "prediction": "key lemma", "rel_error": meas / pred - 1, "check": "within", "tolerance": tol,
            "passed": bool(abs(meas / pred - 1) <= tol), "r": p.r,
        })
        pts.append((n, p, tau, rows[-3], rows[-2], rows[-1]))
    R.settle()
    R.close()

    fig, axes = new_figure(1, 2, size=(10.5, 4.0))
    ns = np.array([q[0] for q in pts])
    ax = axes[0, 0]
    for j, key in ((3, "independent"), (4, "shared")):
        st = plotting.style(key)
        y = np.array([q[j]["measured_ratio"] for q in pts])
        lo = np.array([q[j]["measured_min"] for q in pts])
        hi = np.array([q[j]["measured_max"] for q in pts])
        ax.errorbar(ns, y, yerr=[y - lo, hi - y], ls="none", capsize=3, marker=st["marker"], color=st["color"],
                    label=f"{st['label']} (measured)")
        ax.plot(ns, [q[j]["predicted_ratio"] for q in pts], color=st["color"], ls="--", lw=1.5,
                label=f"{st['label']} (theory)")
    ax.set_ylabel(r"$K(m/n) / K(m)$, IBCD")
    ax2 = axes[0, 1]
    y = np.array([q[5]["measured_ratio"] for q in pts])
    ax2.errorbar(ns, y, yerr=[y - np.array([q[5]["measured_min"] for q in pts]),
                              np.array([q[5]["measured_max"] for q in pts]) - y],
                 ls="none", capsize=3, marker="o", color="k", label="measured (Monte Carlo)")
    ax2.plot(ns, [q[5]["predicted_ratio"] for q in pts], "k--", lw=1.5, label="key lemma")
    ax2.plot(ns, ns, color="0.6", ls=":", lw=1.5, label="n")
    ax2.set_ylabel("variance, shared / independent")
    for a in (ax, ax2):
        plain_log(a, "x")
        plain_log(a, "y")
        a.set_xticks(ns, [str(v) for v in ns])
        a.set_xlabel(r"workers $n$ (at $\tau = m/n$)")
        a.legend(fontsize=8)
    fig.tight_layout()
    return Result("independent_vs_shared", rows, fig)


# ============================================================ experiment 4
def _real_problem(dataset, n, split, seed):
    """Logistic regression (lam = 0.1) on a real data set over ``n`` workers: one of the paper's LIBSVM
    sets by name (:data:`blockcd.problems.PAPER_DATASETS`), or scikit-learn's 'breast_cancer' or 'digits'."""
    if dataset in problems.PAPER_DATASETS:
        return problems.load_libsvm(dataset, n_workers=n, lam=0.1, split=split, seed=seed)
    loaders = {"breast_cancer": problems.breast_cancer, "digits": problems.digits}
    if dataset not in loaders:
        raise ValueError(f"dataset must be one of {(*problems.PAPER_DATASETS, *loaders)}, got {dataset!r}")
    return loaders[dataset](n, lam=0.1, split=split, seed=seed)


def _real_blocks(dataset, d):
    """Blocks m of a real data set: one per feature for the paper's sets; 30 and 60 for scikit-learn's."""
    if dataset in problems.PAPER_DATASETS:
        return d
    return min(30 if dataset == "breast_cancer" else 60, d)


def _floor_row(R, p, short, method, m, tau, batch) -> dict:
    """Where IBCD or IS-SGD stops on data that do not interpolate, against the theorem's bound.

    A run of T = ceil(2 log(100) / (gamma mu)) iterations at the theory step; measured: the mean of
    ||x^k - x*||^2 / ||x^0 - x*||^2 over k >= T/2, averaged over the seeds; predicted: the
    theorem's bound on that expectation for every k >= T/2, (1 - gamma mu)^(T/2) + 2 gamma sigma^2
    / (mu ||x^0 - x*||^2) (:func:`blockcd.theory.neighbourhood`; the first term is at most 0.01).
    Check ``below``.
    """
    step = theory.step_size(p, method, m, tau, batch=batch)
    half = math.ceil(math.log(100.0) / (step * p.mu))
    iters = 2 * half
    levels = []
    for s in R.seeds:
        h = run(p, method, m=m, tau=tau, iters=iters, seed=s, batch=batch)
        levels.append(float(np.mean(h.dist2[half:]) / h.dist2[0]))
        R.tick()
    radius = theory.neighbourhood(p, method, m, tau, batch=batch) / float(h.dist2[0])
    pred = (1.0 - step * p.mu) ** half + radius
    meas = float(np.mean(levels))
    return {
        "experiment": "real_data", "problem": short, "method": method, "sampling": "independent",
        "step": "theory", "n": p.n, "m": m, "tau": tau, "eps": math.nan, "seeds": len(levels),
        "iters_m": math.nan, "iters_tau": float(iters), "measured_ratio": meas,
        "measured_min": float(np.min(levels)), "measured_max": float(np.max(levels)),
        "predicted_ratio": pred, "prediction": "floor vs theorem's bound", "rel_error": meas / pred - 1.0,
        "check": "below", "tolerance": math.nan, "passed": bool(meas < pred), "r": p.r, "radius": radius,
    }


@one_thread
def real_data(config="quick", *, seed: int = 0, progress=None, tolerance: float = TOLERANCE) -> Result:
    r"""The paper's a1a (LIBSVM): the ratios of the methods with shifts, the floors of those without.

    Logistic regression with lam = 0.1 over n = 10 workers, splits ``iid``
    (shuffled) and ``sorted`` (by label: heterogeneous workers); one block
    per feature, m = d = 123, tau = floor(m/n) = 12.
    ISEGA and IS-SAGA converge to x*: K(tau)/K(m) to ``config.real_eps_shifted``
    against the ``bound ratio``, check ``within`` (``tolerance``, 15%).
    IBCD and IS-SGD stop at a neighbourhood of x*, where a count to a fixed
    accuracy measures where the floor lies more than the step: their rows
    measure the floor at tau, the mean relative error over the second half of
    a run, against the theorem's bound on it (``_floor_row``), check
    ``below``.  IS-ASGD needs interpolation (rho0 is infinite here) and is
    not run.  Runs over ``config.real_seeds`` seeds (two in the quick
    configuration).  The constants L, L_max, mu, kappa, r, sigma*^2 and rho0 are
    returned as the table ``constants``.  Arguments and return value as in
    :func:`ninety_nine`.
    """
    R = Runner(config, seed, progress, tolerance)
    c = R.config
    R.seeds = R.seeds[: c.real_seeds or len(R.seeds)]
    n = 10
    methods = ("isega", "is-saga", "ibcd", "is-sgd")
    R.plan(PLANS["real_data"](c, len(R.seeds)), "real_data")
    rows, consts = [], []
    for dataset, split in c.real_sets:
        p = _real_problem(dataset, n, split, R.seed)
        m = _real_blocks(dataset, p.d)
        tau = m // n
        short = f"{dataset.replace('_', ' ')}, {split}"
        s = p.summary()
        consts.append({"problem": short, "n": n, "d": p.d, "m": m, "L": s["L"], "L_max": s["L_max"], "mu": s["mu"],
                       "kappa": s["kappa"], "r": s["r"], "sigma_star2": s["sigma_star2"], "rho0": s["rho0"]})
        for method in methods:
            b = batch_size(method)
            if method in ("ibcd", "is-sgd"):
                rows.append(_floor_row(R, p, short, method, m, tau, b))
                continue
            eps = c.real_eps_shifted
            pred, kind = predicted(p, method, m, tau, eps, batch=b)
            seeds_m = R.seeds if varies_by_seed(method, m, m) else R.seeds[:1]
            K_m = R.iterations(p, method, m, m, eps, seeds=seeds_m, batch=b)
            R.tick(len(R.seeds) - len(seeds_m))
            K_t = R.iterations(p, method, m, tau, eps, batch=b)
            rows.append(R.row("real_data", short, method, m, tau, eps, K_m, K_t, pred, kind, _p=p, r=p.r,
                              L_ratio=theory.predicted_ratio(p, method, m, tau, batch=b)))
    R.settle()
    R.close()

    from matplotlib.lines import Line2D

    present = list(dict.fromkeys(ds for ds, _ in c.real_sets))
    fig, axes = new_figure(1, 2, size=(10.5, 4.2))
    panels = ((axes[0, 0], methods[:2], r"$K(m/n) / K(m)$"),
              (axes[0, 1], methods[2:], r"floor: mean $\|x^k - x^\star\|^2 / \|x^0 - x^\star\|^2$"))
    for ax, group, ylabel in panels:
        ticks, labels = [], []
        for j, method in enumerate(group):
            st = plotting.style(method)
            for di, dataset in enumerate(present):
                x = j * (len(present) + 0.6) + di
                ticks.append(x)
                labels.append(f"{st['label']}\n{dataset.replace('_', ' ')}")
                for dx, split, filled in ((-0.17, "iid", True), (0.17, "sorted", False)):
                    hit = [r for r in rows if r["problem"] == f"{dataset.replace('_', ' ')}, {split}"
                           and r["method"] == method]
                    if not hit:
                        continue
                    r = hit[0]
                    y = r["measured_ratio"]
                    ax.errorbar([x + dx], [y], yerr=[[y - r["measured_min"]], [r["measured_max"] - y]],
                                capsize=3, marker=st["marker"], color=st["color"],
                                mfc=st["color"] if filled else "white", ms=8)
                    ax.plot([x + dx - 0.14, x + dx + 0.14], [r["predicted_ratio"]] * 2, color="k", lw=2)
        ax.set_xticks(ticks, labels)
        ax.set_xlim(min(ticks) - 0.6, max(ticks) + 0.6)
        plain_log(ax)
        ax.grid(axis="x", visible=False)
        ax.set_ylabel(ylabel)
    handles = [Line2D([], [], ls="none", marker="o", color="0.3", label="iid split"),
               Line2D([], [], ls="none", marker="o", color="0.3", mfc="white", label="sorted split"),
               Line2D([], [], color="k", lw=2, label="theory")]
    axes[0, 0].set_title("converge to $x^\\star$: iterations, ratio", fontsize=11)
    axes[0, 1].set_title("stop at a neighbourhood: the floor", fontsize=11)
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.01))
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return Result("real_data", rows, fig, tables={"constants": consts})

"""Experiment 7 of chapter 8: IS-SGD with decreasing steps reaches x* without interpolation (chapter 5).

The paper's Theorem 6 (its Algorithm 6): with steps 1/(a + c t) the weighted
average of the iterates converges at the rate O(1/t) on heterogeneous data,
where a constant step stalls at a neighbourhood of x*.  The checks are those of
chapter 5's section ``thm-is-sgd-decreasing`` on other problems and seeds, and
with the paper's own schedule beside the book's.
"""

from __future__ import annotations

import math

import numpy as np

from .. import plotting, problems, theory
from ..methods import run
from .core import PLANS, TOLERANCE, Result, Runner, new_figure, one_thread

#: minibatch size (the local noise sigma^2 of Theorem 6 is that of one minibatch)
BATCH = 5
#: blocks
M = 40


def _row(problem, n, tau, iters, per_seed, measured, predicted, prediction, check, tolerance, passed, **extra):
    per_seed = np.asarray(per_seed, dtype=float)
    r = {
        "experiment": "decreasing_step", "problem": problem, "method": "is-sgd", "sampling": "independent",
        "step": extra.pop("step", "decreasing"), "n": int(n), "m": M, "tau": int(tau), "eps": math.nan,
        "seeds": int(per_seed.size), "iters_m": math.nan, "iters_tau": float(iters),
        "measured_ratio": float(measured), "measured_min": float(per_seed.min()),
        "measured_max": float(per_seed.max()), "predicted_ratio": float(predicted), "prediction": prediction,
        "rel_error": float(measured / predicted - 1.0), "check": check, "tolerance": float(tolerance),
        "passed": bool(passed),
    }
    r.update(extra)
    return r


def _exponents(curves: np.ndarray, T: int) -> np.ndarray:
    """Per run, minus the slope of log(error) against log(t) over t in [T/3, T] (the rate t^-exponent)."""
    late = np.unique(np.geomspace(T // 3, T, 20).astype(int))
    return np.array([-np.polyfit(np.log(late), np.log(e[late]), 1)[0] for e in curves])


def _rate_row(label, n, tau, T, curves, step, prediction):
    """The exponent of the O(1/t) rate, predicted 1, within three standard errors of its mean."""
    ex = _exponents(curves, T)
    mean, se = float(ex.mean()), float(ex.std(ddof=1) / math.sqrt(ex.size))
    return _row(label, n, tau, T, ex, mean, 1.0, prediction, "within", 3 * se, abs(mean - 1.0) <= 3 * se,
                step=step, exponent_se=se)


@one_thread
def decreasing_step(config="quick", *, seed: int = 0, progress=None, tolerance: float = TOLERANCE) -> Result:
    r"""IS-SGD with ``step='decreasing'`` on heterogeneous, noisy data: below the bound, at the rate 1/t.

    (a) On the synthetic ridge problem with heterogeneous workers and noisy targets (n = 10,
    d = m = 40, b = 5, tau = 10; sigma*^2 > 0, so no interpolation), the mean over seeds of
    f(x_hat_T) - f*, x_hat_T the weighted average of :func:`blockcd.theory.average_weights`,
    as a fraction of :func:`blockcd.theory.decreasing_bound` at T (check ``below``: the mean
    plus three standard errors is under the bound).

    (b) The exponent of the rate: minus the slope of log(f(x_hat_t) - f*) against log t over
    t in [T/3, T], per seed; predicted 1, check ``within`` three standard errors of the mean
    (the ``tolerance`` column, an absolute width here).  The same for the last iterate with the
    paper's own schedule (:func:`blockcd.theory.paper_decreasing_schedule`, passed as a callable).

    (c) The leading term 8 sigma^2/(mu t) of the bound stays when n doubles and tau halves
    (tau = m/n): on one ridge problem split over n = 10 and n = 20 workers, the measured ratio
    of f(x_hat_T) - f* (n = 20 over n = 10) against the ratio of the leading terms, check
    ``within`` three standard errors of the measured ratio (delta method).

    ``tolerance`` is not used: every check here is set by the spread over seeds.  T and the
    seeds are the configuration's ``decreasing`` (quick 6000 iterations, 12 seeds; full 10000, 20).  Arguments and
    return value as in :func:`blockcd.reproduce.ninety_nine`.
    """
    R = Runner(config, seed, progress, tolerance)
    T, S = R.config.decreasing
    seeds = [R.seed + j for j in range(S)]
    R.plan(PLANS["decreasing_step"](R.config, S), "decreasing_step")
    rows = []
    ex_label = "synthetic, heterogeneous, noisy"

    # (a) below the bound, and (b) the exponent ----------------------------
    n, tau = 10, 10
    q = problems.synthetic(n, 20, M, cond=1.5, heterogeneity=1.0, noise=3.0, seed=R.seed + 1)
    avg = []
    for s in seeds:
        avg.append(run(q, "is-sgd", m=M, tau=tau, batch=BATCH, step="decreasing", iters=T, seed=s).gap_avg)
        R.tick()
    avg = np.array(avg)
    bound = float(theory.decreasing_bound(q, M, tau, T, batch=BATCH))
    at_T = avg[:, T]
    mean, se = float(at_T.mean()), float(at_T.std(ddof=1) / math.sqrt(S))
    a, c = theory.decreasing_schedule(q, M, tau, batch=BATCH)
    rows.append(_row(ex_label, n, tau, T, at_T / bound, mean / bound, 1.0, "book's Theorem 6 bound", "below",
                     math.nan, mean + 3 * se < bound, gap=mean, gap_se=se, bound=bound, a=a, c=c,
                     sigma_star2=q.sigma_star2))
    rows.append(_rate_row(ex_label, n, tau, T, avg, "decreasing", "rate 1/t (average)"))
    ap, cp = theory.paper_decreasing_schedule(q, M, tau)
    last = []
    for s in seeds:
        last.append(run(q, "is-sgd", m=M, tau=tau, batch=BATCH, step=lambda k: 1.0 / (ap + cp * k), iters=T,
                        seed=s).gap)
        R.tick()
    last = np.array(last)
    rows.append(_rate_row(ex_label, n, tau, T, last, "paper's schedule", "rate 1/t (last iterate)"))

    # (c) double n, halve tau ------------------------------------------------
    rng = np.random.default_rng(R.seed)
    A = rng.standard_normal((400, 20))
    y = A @ rng.standard_normal(20) + rng.standard_normal(400)   # noisy targets: no interpolation
    mh = 20
    res = {}
    for nw in (10, 20):
        ph = problems.ridge(A, y, n_workers=nw, split="iid", seed=R.seed)
        th = mh // nw
        g = []
        for s in seeds:
            g.append(run(ph, "is-sgd", m=mh, tau=th, batch=BATCH, step="decreasing", iters=T, seed=s).gap_avg[T])
            R.tick()
        lead = 8 * theory.gradient_noise(ph, mh, th, batch=BATCH) / (ph.mu * T)
        res[nw] = (np.array(g), lead, th)
    g10, g20 = res[10][0], res[20][0]
    ratio = float(g20.mean() / g10.mean())
    r_se = ratio * math.hypot(g20.std(ddof=1) / (math.sqrt(S) * g20.mean()),
                              g10.std(ddof=1) / (math.sqrt(S) * g10.mean()))
    predicted = res[20][1] / res[10][1]
    r = _row("ridge, noisy targets", 20, res[20][2], T, g20 / g10, ratio, predicted,
             "leading term, 2n and tau/2", "within", 3 * r_se / predicted,
             abs(ratio - predicted) <= 3 * r_se, ratio_se=r_se, lead_10=res[10][1], lead_20=res[20][1])
    r["m"] = mh
    rows.append(r)
    R.settle()
    R.close()

    fig, axes = new_figure(1, 2, size=(10.5, 4.0))
    ax = axes[0, 0]
    k = np.arange(1, T + 1)
    ax.loglog(k, avg.mean(0)[1:], **plotting.style("is-sgd", label=r"decreasing step, $f(\hat x_t) - f^\star$",
                                                   markevery=0.1))
    ax.loglog(k, last.mean(0)[1:], color="grey", lw=2, label=r"the paper's schedule, $f(x^t) - f^\star$")
    ax.loglog(k, theory.decreasing_bound(q, M, tau, k, batch=BATCH), "k--", lw=1.5, label="the book's bound")
    ax.set_xlabel("iteration t")
    ax.set_ylabel("suboptimality")
    ax.legend(fontsize=8)
    ax2 = axes[0, 1]
    for j, row in enumerate(rows):
        y0 = row["measured_ratio"] / row["predicted_ratio"]
        lo, hi = row["measured_min"] / row["predicted_ratio"], row["measured_max"] / row["predicted_ratio"]
        ax2.errorbar([j], [y0], yerr=[[y0 - lo], [hi - y0]], ls="none", capsize=3, marker="o", ms=8,
                     color=plotting.style("is-sgd").get("color", "k"))
    ax2.axhline(1.0, color="k", lw=1.5, ls="--")
    ax2.set_xticks(range(len(rows)), [f"{row['prediction']}\n({row['step']})\n{row['check']}".replace(" (", "\n(", 1)
                                      for row in rows], fontsize=7)
    ax2.set_ylabel("measured / predicted")
    fig.tight_layout()
    return Result("decreasing_step", rows, fig)

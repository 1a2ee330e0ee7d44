"""The variance-reduced methods' figures of :mod:`blockcd.reproduce.paper`: Figures 1 (= 9), 2 (= 11), 10, 12.

Shared-data ISAGA (Figs. 1 and 10) and ISEGA (Figs. 2 and 12) on the paper's logistic data, with the
measurement helpers of :mod:`blockcd.reproduce.figures`; the conventions are stated once, in the
docstring of :mod:`blockcd.reproduce.paper`.
"""

from __future__ import annotations

import math

from .core import Result, new_figure
from .figures import (
    L_paper,
    band,
    iters_to,
    label_axes,
    logistic_problem,
    nice,
    ratio_row,
    result_row,
    tau_sweep,
)


# ================================================================ Fig. 1 = 9, 10
def _saga_step(p, n, q) -> float:
    """Shared-data ISAGA's figure step 1/(L(3/n + q)) (unscaled), q times that in the book's units."""
    return q / (L_paper(p) * (3.0 / n + q))


def _saga_iters(cfg, N: int) -> int:
    """Iterations of a shared-data ISAGA run on N functions: max(saga_iters, saga_per_row N)."""
    return max(cfg.saga_iters, math.ceil(cfg.saga_per_row * N))


def fig1(ctx) -> Result:
    """Shared-data ISAGA at τ = 1/n against SAGA, step 1/(L(3/n + τ)) (Figure 1 = Figure 9)."""
    cfg = ctx.cfg
    claim = "nτ = 1 does not slow shared-data ISAGA down against SAGA"
    rows = []
    sets = ctx.sets(cfg.saga_data)
    fig, axes = new_figure(1, len(sets))
    for a, name in enumerate(sets):
        data, ax = ctx.data(name), axes[0, a]
        p1 = logistic_problem(data, 1, cfg.lam, seed=ctx.seed, cache=ctx.problems, shared=True)
        iters = _saga_iters(cfg, p1.N)
        base = ctx.curves(p1, "isaga-shared", m=1, tau=1, step=_saga_step(p1, 1, 1.0), iters=iters)
        K0 = iters_to(base, cfg.saga_eps)
        band(ax, base, "saga", "SAGA")
        rows.append(result_row(1, data, "", f"iterations to {cfg.saga_eps:g}", "SAGA", values=K0, method="isaga-shared",
                         n=1, m=1, tau=1, step=_saga_step(p1, 1, 1.0)))
        ns = [n for n in cfg.saga_ns if nice(n, p1.d)]
        for j, n in enumerate(ns):
            p = logistic_problem(data, n, cfg.lam, seed=ctx.seed, cache=ctx.problems, shared=True)
            step = _saga_step(p, n, 1.0 / n)
            cur = ctx.curves(p, "isaga-shared", m=n, tau=1, step=step, iters=iters)
            K = iters_to(cur, cfg.saga_eps)
            band(ax, cur, "isaga-shared", f"ISAGA, n = {n}, τ = 1/{n}", j, len(ns))
            # Corollary 2: O(max(L/mu, N) log 1/eps) at tau = 1/n, SAGA's up to a constant the paper leaves
            # open; "does not slow down" is read as at most 50% more iterations
            rows.append(ratio_row(1, data, claim, "K(ISAGA) / K(SAGA)", f"n = {n}", K, K0, predicted=1.0,
                                   tolerance=0.5, kind="at most", method="isaga-shared", n=n, m=n, tau=1,
                                   step=step))
        ax.set_ylim(cfg.saga_eps / 10, 2)
        label_axes(ax)
    return Result("fig01", rows, fig)


#: why Fig. 10's check is expected not to hold at the quick sizes (chapter 13)
FIG10_WHY = ("expected not to hold at these sizes: down to the quick accuracy the table's refresh rate nq/N, "
             "whose cost of a small q does not shrink with n, sets the pace (chapter 13)")


def fig10(ctx) -> Result:
    """Shared-data ISAGA for several τ, ℓ2 = 0.000025 in the paper: τ matters for small n, less for large n."""
    cfg = ctx.cfg
    N = ctx.data(cfg.saga_data[0]).A.shape[0]
    # fig10_seeds runs per curve unless seeds were asked for: one seed cannot decide this check (PaperConfig)
    seeds = None if ctx.seeds_given else tuple(ctx.seed + j for j in range(cfg.fig10_seeds))
    rows, fig = tau_sweep(ctx, 10, cfg.saga_data[0], "isaga-shared", _saga_step,
                       lambda c: iters_to(c, cfg.fig10_eps), lam=cfg.lam_fig10, shared=True,
                       iters=max(cfg.fig10_iters, math.ceil(cfg.saga_per_row * N)), eps=cfg.fig10_eps,
                       key="isaga-shared", seeds=seeds,
                       claim="τ affects shared-data ISAGA heavily for small n, less as n grows",
                       expected=cfg.fig10_holds,
                       why="" if cfg.fig10_holds else FIG10_WHY)
    return Result("fig10", rows, fig)


# ================================================================ Fig. 2 = 11, 12
def _isega_step(p, n, q) -> float:
    """ISEGA's figure step 1/(L(1 + 1/(nq))) (the paper's g_i is rescaled already: the book's units)."""
    return 1.0 / (L_paper(p) * (1.0 + 1.0 / (n * q)))


def fig2(ctx) -> Result:
    """ISEGA at nτ = 1 for several n against GD at 1/(2L): the figure behind the title (Figure 2 = Figure 11)."""
    cfg = ctx.cfg
    claim = "nτ = 1 does not slow ISEGA down against GD"
    rows = []
    sets = ctx.sets(cfg.data)
    fig, axes = new_figure(1, len(sets))
    for a, name in enumerate(sets):
        data, ax = ctx.data(name), axes[0, a]
        p1 = logistic_problem(data, 1, cfg.lam, seed=ctx.seed, cache=ctx.problems)
        g0 = 1.0 / (2.0 * L_paper(p1))
        base = ctx.curves(p1, "ibcd", m=1, tau=1, step=g0, iters=cfg.isega_iters, seeds=ctx.seeds[:1])
        K0 = iters_to(base, cfg.isega_eps)
        band(ax, base, "gd", "GD, step 1/(2L)")
        rows.append(result_row(2, data, "", f"iterations to {cfg.isega_eps:g}", "GD", values=K0, method="gd", n=1, m=1,
                         tau=1, step=g0))
        ns = [n for n in cfg.isega_ns if nice(n, p1.d)]
        dropped = [n for n in cfg.isega_ns if n not in ns]
        for j, n in enumerate(ns):
            p = logistic_problem(data, n, cfg.lam, seed=ctx.seed, cache=ctx.problems)
            step = _isega_step(p, n, 1.0 / n)
            cur = ctx.curves(p, "isega", m=n, tau=1, step=step, iters=cfg.isega_iters)
            K = iters_to(cur, cfg.isega_eps)
            band(ax, cur, "isega", f"ISEGA, n = {n}, τ = 1/{n}", j, len(ns))
            # Corollary 3: O(L/mu log 1/eps) when L/mu >= n, GD's; "does not slow down": at most 15% more
            rows.append(ratio_row(2, data, claim, "K(ISEGA) / K(GD)", f"n = {n}", K, K0, predicted=1.0,
                                   tolerance=0.15, kind="at most", method="isega", n=n, m=n, tau=1, step=step,
                                   note=f"n {dropped} need d >= n" if dropped else ""))
        ax.set_ylim(cfg.isega_eps / 10, 2)
        label_axes(ax)
    return Result("fig02", rows, fig)


def fig12(ctx) -> Result:
    """ISEGA for several τ: above 1/n little speed-up, the effect of τ diminishing as n grows."""
    cfg = ctx.cfg
    rows, fig = tau_sweep(ctx, 12, cfg.data[0], "isega", _isega_step, lambda c: iters_to(c, cfg.isega_eps),
                       iters=cfg.isega_iters, eps=cfg.isega_eps,
                       key="isega", predict=lambda p, n, q: (1 + 1 / (n * q)) / (1 + 1 / n),
                       claim="τ has a heavy impact on ISEGA for small n, diminishing as n grows; "
                             "increasing τ beyond 1/n yields no significant speed-up")
    return Result("fig12", rows, fig)

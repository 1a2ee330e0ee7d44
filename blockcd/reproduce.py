"""The book's experiment suite: the paper's claims, measured (chapter 8).

Five experiments, each a function that runs seeded methods through
:func:`blockcd.run` (via :func:`blockcd.experiments.iterations_to`), puts the
measured iteration ratios next to what :mod:`blockcd.theory` predicts, draws
a figure with :mod:`blockcd.plotting`, and returns a :class:`Result`:

=========================  ================================================
``ninety_nine``            n = 100 workers, tau = m/n: the 99% figure
``iterations_vs_tau``      K(tau)/K(m) for every method and n, knee marked
``independent_vs_shared``  the n-fold difference between the two samplings
``real_data``              breast cancer and digits, iid and sorted splits
``where_it_breaks``        large r, kappa below n, tuned instead of theory steps
=========================  ================================================

:func:`run_suite` runs a selection, writes each figure (PNG and PDF) and
table (CSV) and returns the results; ``python -m blockcd reproduce`` is its
command line (``python -m blockcd``).  Everything is a function of the
configuration (:data:`QUICK` or :data:`FULL`) and one seed: the problems are
built with that seed and the runs use seeds ``seed, seed + 1, ...``.

Each measured ratio K(tau)/K(m) averages the iterations over the seeds (the
spread is the smallest and largest per-seed ratio) and is compared with a
prediction named in the ``prediction`` column:

* ``L ratio``: the leading term L(tau)/L(m) of :func:`blockcd.theory.predicted_ratio`
  (for IBCD 1 + (m/tau - 1) r/n, the m/n rule), used for IBCD and IS-SGD on
  interpolating problems;
* ``bound ratio``: the ratio of the theorem's iteration bounds,
  :func:`blockcd.theory.predicted_iterations` at tau over the same at m, used
  where another term of the bound matters: the memory term 2m/tau of ISEGA and
  IS-SAGA, the neighbourhood of IBCD and IS-SGD on non-interpolating data, and
  the log(1 - 1/(rho sqrt(kappa))) of IS-ASGD when sqrt(kappa) is small;
* ``m/tau (shared)``: shared block choices, randomized coordinate descent with
  expected smoothness (m/tau) L (experiment 3), and ``key lemma``: the ratio of
  the two aggregation variances (experiment 3, checked to four Monte-Carlo
  standard errors);
* ``L ratio (step term only)``: L(tau)/L(m) where the bound's memory term is
  the larger one (experiment 5).

A check is ``within`` (``|measured/predicted - 1| <= tolerance``, 15% by default,
where the theory's step is the binding constraint: chapter 8, lemma ``lem-ratios``), ``below``
or ``above`` (the direction the theory predicts where the match is expected
to break), or ``info`` (recorded, not checked).  Nothing here changes how a
method runs; the step sizes are the library's.
"""

from __future__ import annotations

import csv
import functools
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import plotting, problems, theory
from ._validate import check_choice, check_float, check_seed
from .experiments import iterations_to, tuned_step, variance_mc
from .methods import run

#: relative tolerance of the ``within`` checks (chapter 8, lemma lem-ratios)
TOLERANCE = 0.15
#: minibatch size of IS-SGD and IS-SAGA throughout the suite
BATCH = 16
#: the five methods, in the book's order
METHODS = ("ibcd", "is-sgd", "isega", "is-saga", "is-asgd")
#: columns of every CSV, in this order (experiment-specific columns follow)
COLUMNS = (
    "experiment", "problem", "method", "sampling", "step", "n", "m", "tau", "eps", "seeds",
    "iters_m", "iters_tau", "measured_ratio", "measured_min", "measured_max",
    "predicted_ratio", "prediction", "rel_error", "check", "tolerance", "passed",
)


@dataclass(frozen=True)
class Config:
    """Sizes of the suite; :data:`QUICK` (the tests, the chapter) or :data:`FULL`.

    Attributes
    ----------
    seeds : runs per random measurement (seeds ``seed .. seed + seeds - 1``)
    nn_rows, nn_eps : rows per worker and accuracy of the n = 100 synthetic problem (experiment 1)
    sweep_ns, sweep_taus, sweep_rows, sweep_eps, sweep_cap : workers, tau grid (m = 100), rows
        per worker and accuracy of experiment 2; a (method, tau) whose bound exceeds
        ``sweep_cap`` iterations is not run
    shared_ns : workers of experiment 3
    real_sets : (dataset, split) pairs of experiment 4
    real_eps : accuracy of IBCD and IS-SGD on real data (they stop at a neighbourhood)
    real_eps_shifted : accuracy of ISEGA and IS-SAGA on real data
    breaks_hets : heterogeneity values of the large-r part of experiment 5
    breaks_taus : tau grid of the kappa-below-n part of experiment 5
    tuned_methods : methods of the tuned-step part of experiment 5
    """

    name: str
    seeds: int
    nn_rows: int
    nn_eps: float
    sweep_ns: tuple
    sweep_taus: tuple
    sweep_rows: int
    sweep_eps: float
    sweep_cap: int
    shared_ns: tuple
    real_sets: tuple
    real_eps: float
    real_eps_shifted: float
    breaks_hets: tuple
    breaks_taus: tuple
    tuned_methods: tuple


QUICK = Config(
    name="quick", seeds=3, nn_rows=100, nn_eps=1e-4,
    sweep_ns=(4, 25), sweep_taus=(4, 25, 100), sweep_rows=100, sweep_eps=1e-4, sweep_cap=6000,
    shared_ns=(4, 10),
    real_sets=(("breast_cancer", "iid"), ("breast_cancer", "sorted")), real_eps=1e-1, real_eps_shifted=1e-2,
    breaks_hets=(0.0, 2.0), breaks_taus=(4, 100), tuned_methods=("isega",),
)
FULL = Config(
    name="full", seeds=5, nn_rows=400, nn_eps=1e-6,
    sweep_ns=(4, 10, 25, 100), sweep_taus=(1, 2, 4, 10, 25, 50, 100), sweep_rows=100, sweep_eps=1e-4,
    sweep_cap=12000,
    shared_ns=(4, 10, 25, 100),
    real_sets=(("breast_cancer", "iid"), ("breast_cancer", "sorted"), ("digits", "iid"), ("digits", "sorted")),
    real_eps=1e-1, real_eps_shifted=1e-3,
    breaks_hets=(0.0, 0.5, 1.0, 1.5, 2.0), breaks_taus=(1, 2, 4, 10, 25, 50, 100),
    tuned_methods=("isega", "is-saga"),
)
CONFIGS = {"quick": QUICK, "full": FULL}


# ------------------------------------------------------------------ results
@dataclass
class Result:
    """What one experiment measured: its table of rows, its figure and notes.

    Attributes
    ----------
    name : the experiment's name (a key of :data:`EXPERIMENTS`)
    rows : list of dicts with the :data:`COLUMNS` (and experiment-specific extras)
    figure : matplotlib Figure
    tables : further tables by name (e.g. the constants of the real data sets)
    """

    name: str
    rows: list
    figure: object = None
    tables: dict = field(default_factory=dict)

    @property
    def checks(self) -> list:
        """The rows that are checked (``check`` other than ``info``)."""
        return [r for r in self.rows if r["check"] != "info"]

    @property
    def passed(self) -> bool:
        """True when every checked row passed."""
        return all(r["passed"] for r in self.checks)

    def row(self, **match) -> dict:
        """The single row whose columns equal ``match`` (e.g. ``row(method='ibcd', tau=2)``)."""
        hits = [r for r in self.rows if all(r.get(k) == v for k, v in match.items())]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} rows of {self.name!r} match {match}")
        return hits[0]

    def table(self, columns: Sequence[str] | None = None, *, checks_only: bool = False) -> str:
        """The rows as aligned text (:func:`summary_table`); by default without ``experiment`` and ``n``."""
        if columns is None:
            columns = ("problem", "method", "tau", "measured", "range", "theory", "error", "check")
        return summary_table([self], checks_only=checks_only, columns=columns)

    def write(self, out) -> list:
        """Write ``<name>.png``, ``<name>.pdf``, ``<name>.csv`` (and one CSV per extra table) to ``out``."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        if self.figure is not None:
            for ext in ("png", "pdf"):
                p = out / f"{self.name}.{ext}"
                # no creation date in the PDF, so a file depends on the data only
                meta = {"CreationDate": None} if ext == "pdf" else {"Software": None}
                self.figure.savefig(p, bbox_inches="tight", metadata=meta)
                paths.append(p)
        paths.append(_write_csv(out / f"{self.name}.csv", self.rows))
        for key, rows in self.tables.items():
            paths.append(_write_csv(out / f"{self.name}_{key}.csv", rows))
        return paths


def _fmt(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "pass" if v else "FAIL"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else f"{float(v):.6g}"
    return "" if v is None else str(v)


def _write_csv(path: Path, rows: Sequence[dict]) -> Path:
    keys = list(COLUMNS) if rows and "experiment" in rows[0] else []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(keys)
        for r in rows:
            w.writerow([_fmt(r.get(k)) for k in keys])
    return path


#: the columns of :func:`summary_table`
TABLE_COLUMNS = ("experiment", "problem", "method", "n", "tau", "measured", "range", "theory", "error", "check")


def summary_table(results: Iterable[Result], *, checks_only: bool = True,
                  columns: Sequence[str] | None = None) -> str:
    """The rows of ``results`` as aligned text, one line per row (per checked row with ``checks_only``).

    Columns (a subset of :data:`TABLE_COLUMNS`, all by default): the experiment, problem, method
    (with the sampling and step when they are not independent / theory), n, tau, ``measured`` (the
    mean ratio K(tau)/K(m) over the seeds), ``range`` (smallest and largest per-seed ratio),
    ``theory`` (the predicted ratio), ``error`` (measured/theory - 1) and ``check`` (the tolerance
    or direction and the verdict, ``pass`` or ``FAIL``).
    """
    columns = TABLE_COLUMNS if columns is None else tuple(columns)
    for c in columns:
        check_choice("columns", c, TABLE_COLUMNS)
    lines = []
    for res in results:
        for r in (res.checks if checks_only else res.rows):
            lo, hi = r["measured_min"], r["measured_max"]
            verdict = "" if r["check"] == "info" else (" pass" if r["passed"] else " FAIL")
            if r["check"] == "within":
                check = f"±{100 * r['tolerance']:.3g}%{verdict}"
            else:
                check = f"{r['check']}{verdict}"
            method = r["method"]
            if r["sampling"] not in ("independent", "shared/independent"):
                method += f", {r['sampling']}"
            if r["step"] not in ("theory", ""):
                method += f", {r['step']}"
            cells = {
                "experiment": res.name, "problem": r["problem"], "method": method, "n": str(r["n"]),
                "tau": str(r["tau"]), "measured": f"{r['measured_ratio']:.3g}",
                "range": "" if (math.isnan(lo) or r["seeds"] == 1) else f"{lo:.3g}-{hi:.3g}",
                "theory": f"{r['predicted_ratio']:.3g}", "error": f"{100 * r['rel_error']:+.1f}%",
                "check": check,
            }
            lines.append(tuple(cells[c] for c in columns))
    widths = [max(len(h), *(len(x[i]) for x in lines)) if lines else len(h) for i, h in enumerate(columns)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*columns), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*x) for x in lines]
    return "\n".join(x.rstrip() for x in out)


# ------------------------------------------------------------------ runner
def _config(config) -> Config:
    if isinstance(config, str):
        return CONFIGS[check_choice("config", config, tuple(CONFIGS))]
    if not isinstance(config, Config):
        raise TypeError(f"config must be 'quick', 'full' or a Config, got {type(config).__name__}")
    return config


class _Runner:
    """Seeds, progress bar and the two measurements every experiment uses."""

    def __init__(self, config, seed, progress, tolerance):
        self.config = _config(config)
        self.seed = check_seed("seed", seed)
        self.seeds = tuple(self.seed + j for j in range(self.config.seeds))
        self.tolerance = check_float("tolerance", tolerance, positive=True)
        self.own_bar = False
        if progress is True:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=0, unit="run", file=sys.stderr, dynamic_ncols=True)
            self.own_bar = True
        elif progress is None or progress is False:
            self.bar = None
        else:
            self.bar = progress
        self.planned = 0
        self.done = 0

    # progress -------------------------------------------------------------
    def plan(self, k: int, label: str) -> None:
        """Announce k more runs (the bar's total is the sum of the plans)."""
        self.planned += k
        if self.bar is not None:
            if not getattr(self.bar, "blockcd_preset", False):
                self.bar.total = (self.bar.total or 0) + k
            self.bar.set_description(label)
            self.bar.refresh()

    def tick(self, k: int = 1) -> None:
        self.done += k
        if self.bar is not None:
            self.bar.update(k)

    def settle(self) -> None:
        """Count planned runs that were not needed (skipped grid points) as done."""
        if self.done < self.planned:
            self.tick(self.planned - self.done)
        self.planned = self.done = 0

    def close(self) -> None:
        if self.own_bar:
            self.bar.close()

    # measurements ---------------------------------------------------------
    def iterations(self, problem, method, m, tau, eps, *, seeds=None, batch=None, step_scale=1.0,
                   sampling="independent", iters_max=200_000) -> np.ndarray:
        """Iterations to ``eps`` for each seed (``nan``: not within ``iters_max``; ``inf``: diverged).

        :func:`blockcd.experiments.iterations_to`, seed by seed (each run stops at
        the accuracy), ticking the progress bar.
        """
        seeds = self.seeds if seeds is None else tuple(seeds)
        out = np.full(len(seeds), np.nan)
        for j, s in enumerate(seeds):
            out[j] = iterations_to(problem, method, m, [tau], eps, seeds=(s,), iters_max=iters_max,
                                   step_scale=step_scale, batch=batch, sampling=sampling, diverged="inf")[0, 0]
            self.tick()
        return out

    def tuned(self, problem, method, m, tau, eps, k_theory, *, batch=None, scales=None):
        """Best step among theory step x ``scales``: :func:`blockcd.experiments.tuned_step`."""
        scales = _SCALES if scales is None else scales
        seeds = self.seeds if _random(method, m, tau) else self.seeds[:1]
        best_scale, best = tuned_step(problem, method, m, tau, eps, scales=scales, seeds=seeds, batch=batch,
                                      k_theory=k_theory)
        self.tick(len(self.seeds) * len(scales))
        return best_scale, best

    # rows -----------------------------------------------------------------
    def row(self, experiment, problem, method, m, tau, eps, K_m, K_tau, predicted, prediction, *,
            check="within", sampling="independent", step="theory", **extra) -> dict:
        K_m = np.asarray(K_m, dtype=float)
        K_tau = np.asarray(K_tau, dtype=float)
        measured = float(np.mean(K_tau) / np.mean(K_m))
        per_seed = K_tau / (K_m if K_m.size == K_tau.size else np.mean(K_m))
        rel = measured / predicted - 1.0
        tol = self.tolerance if check == "within" else math.nan
        if check == "within":
            ok = bool(abs(rel) <= tol)
        elif check == "below":
            ok = bool(measured < predicted)
        elif check == "above":
            ok = bool(measured > predicted)
        elif check == "info":
            ok = None
        else:
            raise ValueError(f"check must be 'within', 'below', 'above' or 'info', got {check!r}")
        if not np.all(np.isfinite(per_seed)) and check != "info":
            ok = False
        r = {
            "experiment": experiment, "problem": problem, "method": method, "sampling": sampling,
            "step": step, "n": int(extra.pop("_p").n), "m": int(m), "tau": int(tau),
            "eps": float(eps), "seeds": int(K_tau.size), "iters_m": float(np.mean(K_m)),
            "iters_tau": float(np.mean(K_tau)), "measured_ratio": measured,
            "measured_min": float(np.min(per_seed)), "measured_max": float(np.max(per_seed)),
            "predicted_ratio": float(predicted), "prediction": prediction, "rel_error": float(rel),
            "check": check, "tolerance": tol, "passed": ok,
        }
        r.update(extra)
        return r


def _one_thread(fn):
    """Run an experiment with one BLAS thread: its products are small, and more threads only contend."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper


def _predicted(problem, method, m, tau, eps, *, batch=None):
    """(predicted K(tau)/K(m), which prediction): see the module docstring."""
    if method in ("ibcd", "is-sgd") and problem.interpolating:
        return theory.predicted_ratio(problem, method, m, tau, batch=batch), "L ratio"
    k_tau = theory.predicted_iterations(problem, method, m, tau, eps, batch=batch)
    k_m = theory.predicted_iterations(problem, method, m, m, eps, batch=batch)
    return k_tau / k_m, "bound ratio"


def _batch(method):
    return BATCH if method in ("is-sgd", "is-saga") else None


def _random(method, m, tau):
    """Whether runs differ between seeds (block choices, or minibatches)."""
    return tau < m or method in ("is-sgd", "is-saga")


def _fig(nrows=1, ncols=1, **kw):
    import matplotlib.pyplot as plt

    plotting.setup()
    w, h = kw.pop("size", (5.0 * ncols, 3.8 * nrows))
    return plt.subplots(nrows, ncols, figsize=(w, h), squeeze=False, **kw)


def _plain_log(ax, which="y"):
    """Log scale with tick labels as plain numbers (2, 5, 10, 20) instead of powers of ten."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    fmt = ScalarFormatter()
    fmt.set_scientific(False)
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(NullFormatter())


def _band(ax, k, curves, key, label, **kw):
    """Median curve over seeds with a min-max band; curves: (seeds, k) relative errors."""
    curves = np.maximum(np.asarray(curves), 1e-300)
    st = plotting.style(key, **kw)
    st["label"] = label
    st.setdefault("markevery", max(1, len(k) // 6))
    ax.semilogy(k, np.median(curves, axis=0), **st)
    if curves.shape[0] > 1:
        ax.fill_between(k, curves.min(axis=0), curves.max(axis=0), color=st["color"], alpha=0.2, lw=0)


# ============================================================ experiment 1
@_one_thread
def ninety_nine(config="quick", *, seed: int = 0, progress=None, tolerance: float = TOLERANCE) -> Result:
    r"""The 99% figure: n = 100 workers, each sending tau = m/n = 1% of the m blocks.

    IBCD at tau = m (dense gradient descent), tau = m/n and tau = 1 on an
    interpolating synthetic ridge problem (d = m = 200) and on the
    breast-cancer set (logistic, lam = 0.1, d = m = 30, so m/n < 1 and
    tau = 1 = ceil(m/n)).  Measured: the iteration factor K(tau)/K(m) against
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
    R = _Runner(config, seed, progress, tolerance)
    c = R.config
    n = 100
    synth = problems.synthetic(n, c.nn_rows, 200, interpolating=True, cond=10, seed=R.seed)
    real = problems.breast_cancer(n, lam=0.1, split="iid", seed=R.seed)
    cases = [(synth, "synthetic", c.nn_eps), (real, "breast cancer", c.real_eps)]
    R.plan(_PLANS["ninety_nine"](c, len(R.seeds)), "ninety_nine")
    rows, curves = [], []
    for p, short, eps in cases:
        m = p.d
        taus = sorted({m, max(1, m // n), 1}, reverse=True)
        hist, K = {}, {}
        for tau in taus:
            seeds = R.seeds if _random("ibcd", m, tau) else R.seeds[:1]
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
            kind = "L ratio"
            if not p.interpolating:
                pred, kind = _predicted(p, "ibcd", m, tau, eps)
            saved = float(1.0 - tau * np.mean(K[tau]) / (m * np.mean(K[m])))
            rows.append(R.row("ninety_nine", short, "ibcd", m, tau, eps, K[m], K[tau], pred, kind, _p=p,
                              r=p.r, blocks_saved=saved, blocks_saved_predicted=float(1.0 - tau * pred / m)))
        curves.append((p, short, eps, taus, hist, K))
    R.settle()
    R.close()

    fig, axes = _fig(2, 2, size=(10.5, 7.4))
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
            _band(axes[a, 0], k, rel, key, f"{name}: {tau} of {m} blocks", **kw)
            _band(axes[a, 1], k[1:] * tau, rel[:, 1:], key, name, **kw)
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


@_one_thread
def iterations_vs_tau(config="quick", *, seed: int = 0, progress=None, tolerance: float = TOLERANCE) -> Result:
    r"""K(tau)/K(m) for each method and number of workers n, with the knee marked.

    Interpolating synthetic ridge problems (d = m = 100, kappa = 10, fixed rows
    per worker, so r grows with n), every method at the theory step
    (IS-SGD and IS-SAGA with minibatches of :data:`BATCH`), for the tau of
    ``config.sweep_taus``.  The prediction is ``L ratio`` for IBCD and IS-SGD
    and ``bound ratio`` for ISEGA, IS-SAGA and IS-ASGD (module docstring).
    The knee is the tau where the predicted ratio reaches 2; for IBCD it is
    :func:`blockcd.theory.knee`, m r/(n + r).  Pairs (method, tau) whose bound
    exceeds ``config.sweep_cap`` iterations are not run.  Tolerance 15%.
    Arguments and return value as in :func:`ninety_nine`.
    """
    R = _Runner(config, seed, progress, tolerance)
    c = R.config
    m = 100
    taus = sorted({t for t in c.sweep_taus if 1 <= t <= m} | {m}, reverse=True)
    R.plan(_PLANS["iterations_vs_tau"](c, len(R.seeds)), "iterations_vs_tau")
    rows, panels = [], []
    for n in c.sweep_ns:
        p = problems.synthetic(n, c.sweep_rows, m, interpolating=True, cond=10, seed=R.seed)
        short = f"synthetic n={n}"
        lines = {}
        for method in METHODS:
            b = _batch(method)
            dense = np.unique(np.round(np.geomspace(1, m, 60)).astype(int))
            pred_dense = np.array([_predicted(p, method, m, t, c.sweep_eps, batch=b)[0] for t in dense])
            knee = theory.knee(m, n, p.r) if method == "ibcd" else _knee(dense, pred_dense)
            meas = {}
            K_m = None
            for tau in taus:
                bound = theory.predicted_iterations(p, method, m, tau, c.sweep_eps, batch=b)
                if not bound <= c.sweep_cap:
                    break
                seeds = R.seeds if _random(method, m, tau) else R.seeds[:1]
                pred, kind = _predicted(p, method, m, tau, c.sweep_eps, batch=b)
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
    fig, axes = _fig(nrows, ncols, size=(5.2 * ncols, 4.0 * nrows), sharey=True)
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
                      label=plotting.style(mm)["label"]) for mm in METHODS]
    axes[0, 0].legend(handles=handles, fontsize=8, loc="lower left")
    fig.tight_layout()
    return Result("iterations_vs_tau", rows, fig)


# ============================================================ experiment 3
@_one_thread
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
    R = _Runner(config, seed, progress, tolerance)
    c = R.config
    m = 100
    eps = 1e-4
    R.plan(_PLANS["independent_vs_shared"](c, len(R.seeds)), "independent_vs_shared")
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

    fig, axes = _fig(1, 2, size=(10.5, 4.0))
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
        _plain_log(a, "x")
        _plain_log(a, "y")
        a.set_xticks(ns, [str(v) for v in ns])
        a.set_xlabel(r"workers $n$ (at $\tau = m/n$)")
        a.legend(fontsize=8)
    fig.tight_layout()
    return Result("independent_vs_shared", rows, fig)


# ============================================================ experiment 4
@_one_thread
def real_data(config="quick", *, seed: int = 0, progress=None, tolerance: float = TOLERANCE) -> Result:
    r"""scikit-learn's breast-cancer and digits sets: each method at tau = m/n against tau = m.

    Logistic regression with lam = 0.1 over n = 10 workers, splits ``iid``
    (shuffled) and ``sorted`` (by label: heterogeneous workers); m = 30
    blocks for breast cancer (d = 30) and m = 60 for digits (d = 61).
    ISEGA and IS-SAGA converge to x* and are measured to
    ``config.real_eps_shifted`` against the ``bound ratio`` (tolerance 15%).
    IBCD and IS-SGD stop at a neighbourhood of x* whose size the theorem
    bounds only up to a constant; they are measured to ``config.real_eps``
    and recorded (``info``) with the bound ratio, which contains the
    neighbourhood, and the step-only ``L_ratio``, but not checked: how far
    above its floor an accuracy lies, and so the count to reach it, depends
    on the floor's actual size.  IS-ASGD needs interpolation (rho0 is
    infinite here) and is not run.  The constants L, L_max, mu, kappa, r,
    sigma*^2 and rho0 are returned as the table ``constants``.  Arguments and
    return value as in :func:`ninety_nine`.
    """
    R = _Runner(config, seed, progress, tolerance)
    c = R.config
    n = 10
    methods = ("ibcd", "is-sgd", "isega", "is-saga")
    R.plan(_PLANS["real_data"](c, len(R.seeds)), "real_data")
    loaders = {"breast_cancer": problems.breast_cancer, "digits": problems.digits}
    rows, consts = [], []
    for dataset, split in c.real_sets:
        p = loaders[dataset](n, lam=0.1, split=split, seed=R.seed)
        m = 30 if dataset == "breast_cancer" else 60
        m = min(m, p.d)
        tau = m // n
        short = f"{dataset.replace('_', ' ')}, {split}"
        s = p.summary()
        consts.append({"problem": short, "n": n, "d": p.d, "m": m, "L": s["L"], "L_max": s["L_max"], "mu": s["mu"],
                       "kappa": s["kappa"], "r": s["r"], "sigma_star2": s["sigma_star2"], "rho0": s["rho0"]})
        for method in methods:
            b = _batch(method)
            eps = c.real_eps if method in ("ibcd", "is-sgd") else c.real_eps_shifted
            pred, kind = _predicted(p, method, m, tau, eps, batch=b)
            seeds_m = R.seeds if _random(method, m, m) else R.seeds[:1]
            K_m = R.iterations(p, method, m, m, eps, seeds=seeds_m, batch=b)
            R.tick(len(R.seeds) - len(seeds_m))
            K_t = R.iterations(p, method, m, tau, eps, batch=b)
            shifted = method in ("isega", "is-saga")
            rows.append(R.row("real_data", short, method, m, tau, eps, K_m, K_t, pred, kind, _p=p, r=p.r,
                              check="within" if shifted else "info",
                              L_ratio=theory.predicted_ratio(p, method, m, tau, batch=b)))
    R.settle()
    R.close()

    present = [d for d in ("breast_cancer", "digits") if any(ds == d for ds, _ in c.real_sets)]
    fig, axes = _fig(1, len(present), size=(5.4 * len(present), 4.0), sharey=True)
    for ax, dataset in zip(axes[0], present):
        name = dataset.replace("_", " ")
        for j, method in enumerate(methods):
            st = plotting.style(method)
            for dx, split, filled in ((-0.15, "iid", True), (0.15, "sorted", False)):
                hit = [r for r in rows if r["problem"] == f"{name}, {split}" and r["method"] == method]
                if not hit:
                    continue
                r = hit[0]
                y = r["measured_ratio"]
                ax.errorbar([j + dx], [y], yerr=[[y - r["measured_min"]], [r["measured_max"] - y]], capsize=3,
                            marker=st["marker"], color=st["color"], mfc=st["color"] if filled else "white", ms=8)
                ax.plot([j + dx - 0.12, j + dx + 0.12], [r["predicted_ratio"]] * 2, color="k", lw=2)
        ax.set_xticks(range(len(methods)), [plotting.style(mm)["label"] for mm in methods])
        _plain_log(ax)
        ax.grid(axis="x", visible=False)
        ax.text(0.03, 0.97, f"{name}, n = {n}", transform=ax.transAxes, ha="left", va="top")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], ls="none", marker="o", color="0.3", label="iid split (measured)"),
               Line2D([], [], ls="none", marker="o", color="0.3", mfc="white", label="sorted split (measured)"),
               Line2D([], [], color="k", lw=2, label="theory")]
    axes[0, 0].legend(handles=handles, fontsize=8, loc="lower right")
    axes[0, 0].set_ylabel(r"$K(m/n) / K(m)$")
    fig.tight_layout()
    return Result("real_data", rows, fig, tables={"constants": consts})


# ============================================================ experiment 5
@_one_thread
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
    R = _Runner(config, seed, progress, tolerance)
    c = R.config
    S = len(R.seeds)
    R.plan(_PLANS["where_it_breaks"](c, S), "where_it_breaks")
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
                          bound_ratio=_predicted(p_b, "isega", m_b, t, eps)[0],
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
        b = _batch(method)
        pred, kind = _predicted(p, method, m, tau, eps, batch=b)
        seeds_m = R.seeds if _random(method, m, m) else R.seeds[:1]
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

    fig, axes = _fig(2, 2, size=(10.5, 7.6))
    ax = axes[0, 0]
    st = plotting.style("ibcd")
    rs = np.array([q[0] for q in a_pts])
    for j, lab in ((1, "theory step"), (2, "best step")):
        y = np.array([q[j]["measured_ratio"] for q in a_pts])
        lo = np.array([q[j]["measured_min"] for q in a_pts])
        hi = np.array([q[j]["measured_max"] for q in a_pts])
        ax.errorbar(rs, y, yerr=[y - lo, hi - y], ls="none", capsize=3, marker=st["marker"], color=st["color"],
                    mfc=st["color"] if j == 1 else "white", label=f"IBCD, {lab}")
    order = np.argsort(rs)
    ax.plot(rs[order], np.array([q[1]["predicted_ratio"] for q in a_pts])[order], "k--", lw=1.5,
            label=r"$1 + (m/\tau - 1)\, r/n$")
    ax.set_xlabel(r"$r = L_{\max} / L$")
    ax.set_ylabel(r"$K(m/n) / K(m)$")
    ax.legend(fontsize=8)

    ax = axes[0, 1]
    st = plotting.style("isega")
    b_rows = sorted((r for r in rows if r["part"] == "kappa below n" and r["step"] == "theory"),
                    key=lambda r: r["tau"])
    ts = np.array([r["tau"] for r in b_rows])
    y = np.array([r["measured_ratio"] for r in b_rows])
    lo = np.array([r["measured_min"] for r in b_rows])
    hi = np.array([r["measured_max"] for r in b_rows])
    ax.errorbar(ts, y, yerr=[y - lo, hi - y], ls="none", capsize=3, marker=st["marker"], color=st["color"],
                label="ISEGA, theory step")
    tuned_b = next(r for r in rows if r["part"] == "kappa below n" and r["step"] == "tuned")
    ax.plot([tau_b], [tuned_b["measured_ratio"]], ls="none", marker=st["marker"], mfc="white", color=st["color"],
            ms=11, label=f"ISEGA, best step (x{tuned_b['scale_tau']:g} at m/n)")
    dense = np.unique(np.round(np.geomspace(1, m_b, 50)).astype(int))
    ax.plot(dense, [theory.predicted_ratio(p_b, "isega", m_b, t) for t in dense], color=st["color"], ls="--",
            lw=1.5, label=r"step term only, $\mathcal{L}(\tau)/\mathcal{L}(m)$")
    ax.plot(dense, [_predicted(p_b, "isega", m_b, t, eps)[0] for t in dense], color="0.3", ls=":", lw=2,
            label="bound with memory term")
    ax.axvline(m_b / n_b, color="0.5", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\tau$")
    ax.set_ylabel(r"$K(\tau) / K(m)$")
    ax.text(0.97, 0.97, rf"$\kappa$ = {p_b.kappa:.2g}, n = {n_b}", transform=ax.transAxes, ha="right", va="top")
    ax.legend(fontsize=8, loc="lower left")

    # the same runs as counts, with the two terms of ISEGA's bound
    ax = axes[1, 1]
    st = plotting.style("isega")
    ts = np.array(sorted(K_b))
    y = np.array([np.mean(K_b[t]) for t in ts])
    lo = np.array([np.min(K_b[t]) for t in ts])
    hi = np.array([np.max(K_b[t]) for t in ts])
    ax.errorbar(ts, y, yerr=[y - lo, hi - y], ls="none", capsize=3, marker=st["marker"], color=st["color"],
                label="ISEGA, theory step")
    ax.plot(dense, [math.log(1 / eps) / (theory.step_size(p_b, "isega", m_b, t) * p_b.mu) for t in dense],
            color=st["color"], ls="--", lw=1.5, label=r"step term $\log(1/\epsilon)/(\gamma\mu)$")
    ax.plot(dense, [math.log(1 / eps) * 2 * m_b / t for t in dense], color="0.3", ls=":", lw=2,
            label=r"memory term $\log(1/\epsilon)\,2m/\tau$")
    ax.axvline(m_b / n_b, color="0.5", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\tau$")
    ax.set_ylabel(r"iterations $K(\tau)$")
    ax.text(0.97, 0.97, rf"$\kappa$ = {p_b.kappa:.2g}, n = {n_b}", transform=ax.transAxes, ha="right", va="top")
    ax.legend(fontsize=8, loc="lower left")

    ax = axes[1, 0]
    for j, (method, r) in enumerate(c_pts):
        st = plotting.style(method)
        ax.bar(j - 0.2, r["theory_step_ratio"], width=0.38, color=st["color"], alpha=0.45)
        ax.bar(j + 0.2, r["measured_ratio"], width=0.38, color=st["color"])
        ax.plot([j - 0.42, j + 0.42], [r["predicted_ratio"]] * 2, color="k", lw=2)
    ax.set_xticks(range(len(c_pts)), [plotting.style(mm)["label"] for mm, _ in c_pts])
    ax.grid(axis="x", visible=False)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="0.5", alpha=0.45, label="theory step"), Patch(color="0.5", label="best step"),
                       Line2D([], [], color="k", lw=2, label="theory")], fontsize=8)
    ax.set_ylabel(r"$K(m/n) / K(m)$")
    fig.tight_layout()
    return Result("where_it_breaks", rows, fig)


# ================================================================== suite
_SCALES = (2, 4, 8, 16, 32, 64)
#: upper bounds on the runs of each experiment (grid points skipped are counted as done)
_PLANS = {
    "ninety_nine": lambda c, S: 2 * (1 + 2 * S),
    "iterations_vs_tau": lambda c, S: len(c.sweep_ns) * len(METHODS) * len(set(c.sweep_taus) | {100}) * S,
    "independent_vs_shared": lambda c, S: len(c.shared_ns) * (1 + 2 * S),
    "real_data": lambda c, S: len(c.real_sets) * 4 * 2 * S,
    "where_it_breaks": lambda c, S: (len(c.breaks_hets) * 2 * S * (1 + len(_SCALES))
                                     + (len(set(c.breaks_taus) | {100, 4}) + 2 * len(_SCALES)) * S
                                     + len(c.tuned_methods) * 2 * S * (1 + len(_SCALES))),
}

#: the experiments by name, in the chapter's order
EXPERIMENTS: dict[str, Callable[..., Result]] = {
    "ninety_nine": ninety_nine,
    "iterations_vs_tau": iterations_vs_tau,
    "independent_vs_shared": independent_vs_shared,
    "real_data": real_data,
    "where_it_breaks": where_it_breaks,
}


def experiment_name(name: str) -> str:
    """Canonical experiment name: case-insensitive, '-' and '_' alike; ValueError if unknown."""
    if not isinstance(name, str):
        raise TypeError(f"experiment name must be a string, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_")
    if key not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    return key


def run_suite(names: Sequence[str] | None = None, *, config="quick", out=None, seed: int = 0,
              tolerance: float = TOLERANCE, progress: bool = True) -> list:
    """Run the experiments ``names`` (all by default) and write their files to ``out``.

    Parameters
    ----------
    names : experiment names (keys of :data:`EXPERIMENTS`; '-' for '_' is accepted)
    config : 'quick', 'full' or a :class:`Config`
    out : directory for ``<name>.png``, ``.pdf``, ``.csv`` and ``summary.csv``; None writes nothing
    seed : int >= 0
    tolerance : float > 0, relative tolerance of the ``within`` checks
    progress : show a tqdm bar over the runs (on stderr)

    Returns
    -------
    list of Result, in the order of :data:`EXPERIMENTS`.
    """
    import matplotlib.pyplot as plt

    keys = list(EXPERIMENTS) if names is None else [experiment_name(x) for x in names]
    keys = [k for k in EXPERIMENTS if k in keys]
    cfg = _config(config)
    seed = check_seed("seed", seed)
    tolerance = check_float("tolerance", tolerance, positive=True)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        total = sum(_PLANS[k](cfg, cfg.seeds) for k in keys)
        bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)
        bar.blockcd_preset = True
    results = []
    try:
        for k in keys:
            res = EXPERIMENTS[k](config, seed=seed, progress=bar, tolerance=tolerance)
            if out is not None:
                res.write(out)
                plt.close(res.figure)
            results.append(res)
    finally:
        if bar is not None:
            bar.close()
    if out is not None:
        _write_csv(Path(out) / "summary.csv", [r for res in results for r in res.checks])
    return results


def main_reproduce(names, *, config, out, seed, tolerance) -> int:
    """The body of ``python -m blockcd reproduce``: run, print the summary, return the exit status."""
    t0 = time.perf_counter()
    results = run_suite(names, config=config, out=out, seed=seed, tolerance=tolerance, progress=True)
    wall = time.perf_counter() - t0
    print(summary_table(results))
    checks = [r for res in results for r in res.checks]
    failed = [r for r in checks if not r["passed"]]
    print()
    print(f"{len(checks) - len(failed)} of {len(checks)} checks passed; "
          f"{config if isinstance(config, str) else config.name} suite, seed {seed}, "
          f"{wall:.0f} s; files in {out}")
    return 1 if failed else 0

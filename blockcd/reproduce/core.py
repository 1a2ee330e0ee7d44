"""The suite's machinery: configurations, results and their tables, the runner that counts iterations.

The experiments themselves are :mod:`blockcd.reproduce.claims`; the suite and
the command line are :mod:`blockcd.reproduce`.
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__, plotting, registry, theory
from .._validate import check_choice, check_float, check_seed
from ..experiments import iterations_to, tuned_step
from .pool import one_thread, spawn_map  # noqa: F401  (the suite's and the paper's)

#: multiples of the theory step tried when tuning (powers of 2)
_SCALES = (2, 4, 8, 16, 32, 64)
#: relative tolerance of the ``within`` checks (chapter 8, lemma lem-ratios)
TOLERANCE = 0.15
#: minibatch size of IS-SGD and IS-SAGA throughout the suite
BATCH = 16
#: the methods a chapter derives, in the book's order
METHODS = registry.BOOK_METHODS
#: the paper's variants the chapters add to the book's five methods; each has its own checks in experiment 6
#: (:func:`blockcd.reproduce.paper_methods`): IBGD sends all blocks or none, distributed ISAGA converges only
#: under interpolation, shared-data ISAGA needs a problem whose workers read all rows
PAPER_METHODS = ("ibgd", "isaga-local", "isaga-shared")
#: the methods of the tau sweep (experiment 2), which runs every one on the same interpolating problems
SWEEP_METHODS = tuple(x for x in METHODS if x not in PAPER_METHODS)
#: columns of every CSV, in this order (experiment-specific columns follow)
COLUMNS = (
    "experiment", "problem", "method", "sampling", "step", "n", "m", "tau", "eps", "seeds",
    "iters_m", "iters_tau", "measured_ratio", "measured_min", "measured_max",
    "predicted_ratio", "prediction", "rel_error", "check", "tolerance", "passed",
)


@dataclass(frozen=True)
class Config:
    """Sizes of the suite; ``QUICK`` (the tests, the chapter) or ``FULL``.

    The fields:

    - ``seeds``: runs per random measurement (seeds ``seed .. seed + seeds - 1``)
    - ``nn_rows``, ``nn_eps``: rows per worker and accuracy of the n = 100 synthetic problem (experiment 1)
    - ``nn_real``: the real data set of experiment 1, a name of :data:`blockcd.problems.PAPER_DATASETS`
    - ``sweep_ns``, ``sweep_taus``, ``sweep_rows``, ``sweep_eps``, ``sweep_cap``: workers, tau grid (m = 100), rows
      per worker and accuracy of experiment 2; a (method, tau) whose bound exceeds
      ``sweep_cap`` iterations is not run
    - ``shared_ns``: workers of experiment 3
    - ``real_seeds``: seeds of experiment 4 (None means ``seeds``; its runs vary little between seeds)
    - ``isaga_shared_seeds``: seeds of shared-data ISAGA in experiment 6 (None means ``seeds``; its ratio
      varies by under 1% between seeds, and its runs are the suite's longest)
    - ``real_sets``: (dataset, split) pairs of experiment 4; a dataset is a name of
      :data:`blockcd.problems.PAPER_DATASETS` (the paper's LIBSVM sets), or 'breast_cancer' or 'digits'
    - ``real_eps``: accuracy of IBCD and IS-SGD on real data (they stop at a neighbourhood)
    - ``real_eps_shifted``: accuracy of ISEGA and IS-SAGA on real data
    - ``breaks_hets``: heterogeneity values of the large-r part of experiment 5
    - ``breaks_taus``: tau grid of the kappa-below-n part of experiment 5
    - ``tuned_methods``: methods of the tuned-step part of experiment 5
    - ``decreasing``: (iterations T, seeds) of experiment 7, IS-SGD with decreasing steps (more seeds
      than ``seeds``: its tolerances are three standard errors, which few seeds estimate poorly)
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
    decreasing: tuple = (6000, 12)
    nn_real: str = "a1a"
    real_seeds: int | None = None
    isaga_shared_seeds: int | None = None


QUICK = Config(
    name="quick", seeds=3, nn_rows=100, nn_eps=1e-4,
    sweep_ns=(4, 25), sweep_taus=(4, 25, 100), sweep_rows=100, sweep_eps=1e-4, sweep_cap=6000,
    shared_ns=(4, 10),
    real_sets=(("a1a", "iid"), ("a1a", "sorted")), real_eps=1e-1, real_eps_shifted=1e-2,
    breaks_hets=(0.0, 2.0), breaks_taus=(4, 100), tuned_methods=("isega",), real_seeds=2, isaga_shared_seeds=1,
)
FULL = Config(
    name="full", seeds=5, nn_rows=400, nn_eps=1e-6,
    sweep_ns=(4, 10, 25, 100), sweep_taus=(1, 2, 4, 10, 25, 50, 100), sweep_rows=100, sweep_eps=1e-4,
    sweep_cap=12000,
    shared_ns=(4, 10, 25, 100),
    real_sets=(("a1a", "iid"), ("a1a", "sorted")),
    real_eps=1e-1, real_eps_shifted=1e-3,
    breaks_hets=(0.0, 0.5, 1.0, 1.5, 2.0), breaks_taus=(1, 2, 4, 10, 25, 50, 100),
    tuned_methods=("isega", "is-saga"), decreasing=(10000, 20),
)
CONFIGS = {"quick": QUICK, "full": FULL}


# ------------------------------------------------------------------ results
@dataclass
class Result:
    """What one experiment measured: its table of rows, its figure and notes.

    Attributes
    ----------
    name
        The experiment's name (a key of :data:`EXPERIMENTS`)
    rows
        List of dicts with the ``COLUMNS`` (and experiment-specific extras)
    figure
        Matplotlib Figure
    tables
        Further tables by name (e.g. the constants of the real data sets)
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

    def write(self, out, info: dict | None = None) -> list:
        """Write ``<name>.png``, ``<name>.pdf``, ``<name>.csv`` (and one CSV per extra table) to ``out``, each
        whole (a temporary name, then renamed); ``info`` (``blockcd.reproduce.outdir.stamp``): the run's
        seed, size, version and command, recorded in every CSV.  The PNG at the book's 150 dpi."""
        from ..styles import RC_PARAMS
        from .outdir import write_atomic

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        if self.figure is not None:
            for ext in ("png", "pdf"):
                p = out / f"{self.name}.{ext}"
                # no creation date in the PDF, so a file depends on the data only
                meta = {"CreationDate": None} if ext == "pdf" else {"Software": None}
                write_atomic(p, draw=lambda tmp, ext=ext, meta=meta: self.figure.savefig(
                    tmp, format=ext, bbox_inches="tight", metadata=meta, dpi=RC_PARAMS["savefig.dpi"]))
                paths.append(p)
        paths.append(write_csv(out / f"{self.name}.csv", self.rows, info))
        for key, rows in self.tables.items():
            paths.append(write_csv(out / f"{self.name}_{key}.csv", rows, info))
        return paths


@dataclass(frozen=True)
class Data:
    """One data set of the paper's figures (:mod:`blockcd.reproduce.paper`): its name, rows and labels.

    Attributes
    ----------
    paper : str
        The paper's name of the set ('a1a', 'mushrooms', 'phishing', 'w1a').
    source : str
        Where it was read: 'bundled' (the copy shipped with the library,
        :data:`blockcd.problems.PAPER_DATASETS`) or the file's path (``--libsvm-dir``).
    A
        Ndarray, shape (N, d) (the sets are small enough to hold dense)
    y
        Ndarray, shape (N,), labels -1 and +1
    """

    paper: str
    source: str
    A: object
    y: np.ndarray

    @property
    def label(self) -> str:
        """How rows and captions name it (the paper's name, 'a1a')."""
        return self.paper


def _fmt(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "pass" if v else "FAIL"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else f"{float(v):.6g}"
    return "" if v is None else str(v)


#: the columns every CSV of a run ends with (:func:`write_csv` with ``info``), then ``blockcd_version``
RUN_COLUMNS = ("run_seed", "run_size", "run_command")


def write_csv(path: Path, rows: Sequence[dict], info: dict | None = None) -> Path:
    """Write ``rows`` to ``path`` whole (a temporary name, then renamed).  The last column names the version
    that wrote the file (CHANGELOG.md); with ``info`` (``blockcd.reproduce.outdir.stamp``) the run's seed,
    size and command come before it, on every row."""
    import io

    from .outdir import write_atomic

    keys = list(COLUMNS) if rows and "experiment" in rows[0] else []
    for r in rows:
        keys += [k for k in r if k not in keys]
    run = [] if info is None else [str(info["seed"]), str(info["size"]), str(info["command"])]
    fh = io.StringIO(newline="")
    w = csv.writer(fh, lineterminator="\n")
    w.writerow([*keys, *(RUN_COLUMNS if info is not None else ()), "blockcd_version"])
    for r in rows:
        w.writerow([*(_fmt(r.get(k)) for k in keys), *run, __version__])
    return write_atomic(path, fh.getvalue())


#: the columns of :func:`summary_table`
TABLE_COLUMNS = ("experiment", "problem", "method", "n", "tau", "measured", "range", "theory", "error", "check")


def summary_table(results: Iterable[Result], *, checks_only: bool = True,
                  columns: Sequence[str] | None = None) -> str:
    """The rows of ``results`` as aligned text, one line per row (per checked row with ``checks_only``).

    Columns (a subset of ``TABLE_COLUMNS``, all by default): the experiment, problem, method
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
def as_config(config) -> Config:
    if isinstance(config, str):
        return CONFIGS[check_choice("config", config, tuple(CONFIGS))]
    if not isinstance(config, Config):
        raise TypeError(f"config must be 'quick', 'full' or a Config, got {type(config).__name__}")
    return config


class Runner:
    """Seeds, progress bar and the two measurements every experiment uses."""

    def __init__(self, config, seed, progress, tolerance):
        self.config = as_config(config)
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
        seeds = self.seeds if varies_by_seed(method, m, tau) else self.seeds[:1]
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


def predicted(problem, method, m, tau, eps, *, batch=None):
    """(predicted K(tau)/K(m), which prediction): see the module docstring."""
    if method in ("ibcd", "is-sgd") and problem.interpolating:
        return theory.predicted_ratio(problem, method, m, tau, batch=batch), "L ratio"
    k_tau = theory.predicted_iterations(problem, method, m, tau, eps, batch=batch)
    k_m = theory.predicted_iterations(problem, method, m, m, eps, batch=batch)
    return k_tau / k_m, "bound ratio"


def batch_size(method):
    return BATCH if method in ("is-sgd", "is-saga") else None


def varies_by_seed(method, m, tau):
    """Whether runs differ between seeds (block choices, or minibatches)."""
    return tau < m or method in ("is-sgd", "is-saga")


def new_figure(nrows=1, ncols=1, **kw):
    import matplotlib.pyplot as plt

    plotting.setup()
    w, h = kw.pop("size", (5.0 * ncols, 3.8 * nrows))
    return plt.subplots(nrows, ncols, figsize=(w, h), squeeze=False, **kw)


def plain_log(ax, which="y"):
    """Log scale with tick labels as plain numbers (2, 5, 10, 20) instead of powers of ten."""
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    fmt = ScalarFormatter()
    fmt.set_scientific(False)
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(NullFormatter())


def band(ax, k, curves, key, label, **kw):
    """Median curve over seeds with a min-max band; curves: (seeds, k) relative errors."""
    curves = np.maximum(np.asarray(curves), 1e-300)
    st = plotting.style(key, **kw)
    st["label"] = label
    st.setdefault("markevery", max(1, len(k) // 6))
    ax.semilogy(k, np.median(curves, axis=0), **st)
    if curves.shape[0] > 1:
        ax.fill_between(k, curves.min(axis=0), curves.max(axis=0), color=st["color"], alpha=0.2, lw=0)


# ============================================================ experiment 1


#: upper bounds on the runs of each experiment (grid points skipped are counted as done)
PLANS = {
    "ninety_nine": lambda c, S: 2 * (1 + 2 * S),
    "iterations_vs_tau": lambda c, S: len(c.sweep_ns) * len(SWEEP_METHODS) * len(set(c.sweep_taus) | {100}) * S,
    "independent_vs_shared": lambda c, S: len(c.shared_ns) * (1 + 2 * S),
    "real_data": lambda c, S: len(c.real_sets) * 4 * 2 * S,
    "where_it_breaks": lambda c, S: (len(c.breaks_hets) * 2 * S * (1 + len(_SCALES))
                                     + (len(set(c.breaks_taus) | {100, 4}) + 2 * len(_SCALES)) * S
                                     + len(c.tuned_methods) * 2 * S * (1 + len(_SCALES))),
    "paper_methods": lambda c, S: 8 * S + 1,
    "decreasing_step": lambda c, S: 4 * c.decreasing[1],
    "paper_part2": lambda c, S: S + (20 if c.name == "full" else 7) * S + 2 * S,
}

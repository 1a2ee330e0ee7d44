"""The book's experiment suite: the paper's claims, measured (chapter 8).

Eight experiments, each a function that runs seeded methods through
:func:`blockcd.run` (via :func:`blockcd.experiments.iterations_to`), puts the
measured iteration ratios next to what :mod:`blockcd.theory` predicts, draws
a figure with :mod:`blockcd.plotting`, and returns a :class:`Result`:

=========================  ================================================
``ninety_nine``            n = 100 workers, tau = m/n: the 99% figure
``iterations_vs_tau``      K(tau)/K(m) for every method and n, knee marked
``independent_vs_shared``  the n-fold difference between the two samplings
``real_data``              the paper's a1a, iid and sorted splits
``where_it_breaks``        large r, kappa below n, tuned instead of theory steps
``paper_methods``          IBGD, distributed and shared-data ISAGA, ISEGA with R
``decreasing_step``        IS-SGD's steps 1/(a + c t): below the bound, rate 1/t
``paper_part2``            non-convex ISGD, IASGD's saturation, asynchronous ISGD
=========================  ================================================

The paper's own twelve figures, regenerated as the paper ran them (its
methods, steps, n and tau, each claim checked), are :mod:`blockcd.reproduce.paper`
(``python -m blockcd reproduce --paper``, chapter 13).

:func:`run_suite` runs a selection, writes each figure (PNG and PDF) and
table (CSV) and returns the results; ``python -m blockcd reproduce`` is its
command line (``python -m blockcd``).  Everything is a function of the
configuration (``QUICK`` or ``FULL``) and one seed: the problems are
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
  the larger one (experiment 5);
* ``rate ratio``: log(1 - theta(m)) / log(1 - theta(tau)) of shared-data ISAGA's
  Theorem 2 (experiment 6), and ``Theorem N bound``: a row whose measured value is
  the iterations as a fraction of that theorem's bound (predicted 1, check ``below``);
  ``error floor vs eps``: distributed ISAGA's mean error late in a run on
  heterogeneous data against eps (check ``above``: it stalls);
* ``book's Theorem 6 bound``, ``rate 1/t`` and ``leading term``: IS-SGD with decreasing
  steps (experiment 7): f(x_hat_T) - f* as a fraction of the bound, the exponent of the rate
  (predicted 1) and the ratio of the bound's leading terms when n doubles and tau halves, each
  checked to three standard errors over the seeds;
* ``Corollary 6 bound``, ``bound ratio at the knee``, ``delays within the model's M`` and
  ``Theorem 9 form: contraction per epoch`` (experiment 8): non-convex ISGD's E||grad f(x_hat)||^2
  as a fraction of the bound (``below``), IS-ASGD's measured K(tau)/K(m) near the knee of its
  minibatch constant against the ratio of Theorem 8's bounds (``within``), and asynchronous ISGD's largest delay over M and its contraction
  per epoch of M arrivals (``below`` 1).

A check is ``within`` (``|measured/predicted - 1| <= tolerance``, 15% by default,
where the theory's step is the binding constraint: chapter 8, lemma ``lem-ratios``), ``below``
or ``above`` (the direction the theory predicts where the match is expected
to break), or ``info`` (recorded, not checked).  Nothing here changes how a
method runs; the step sizes are the library's.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .._validate import check_float, check_int, check_seed
from . import outdir
from .breaks import where_it_breaks
from .claims import independent_vs_shared, iterations_vs_tau, ninety_nine, real_data
from .core import (
    BATCH,
    COLUMNS,
    CONFIGS,
    FULL,
    METHODS,
    PAPER_METHODS,
    PLANS,
    QUICK,
    SWEEP_METHODS,
    TABLE_COLUMNS,
    TOLERANCE,
    Config,
    Result,
    as_config,
    spawn_map,
    summary_table,
    write_csv,
)
from .decreasing import decreasing_step
from .part2 import paper_part2
from .variants import paper_methods

__all__ = [
    "BATCH",
    "COLUMNS",
    "CONFIGS",
    "EXPERIMENTS",
    "FULL",
    "METHODS",
    "PAPER_METHODS",
    "QUICK",
    "SWEEP_METHODS",
    "TABLE_COLUMNS",
    "TOLERANCE",
    "Config",
    "Result",
    "decreasing_step",
    "experiment_name",
    "independent_vs_shared",
    "iterations_vs_tau",
    "main_reproduce",
    "ninety_nine",
    "paper_methods",
    "paper_part2",
    "real_data",
    "run_suite",
    "summary_table",
    "where_it_breaks",
]


# ================================================================== suite
#: the experiments by name, in the chapter's order
EXPERIMENTS: dict[str, Callable[..., Result]] = {
    "ninety_nine": ninety_nine,
    "iterations_vs_tau": iterations_vs_tau,
    "independent_vs_shared": independent_vs_shared,
    "real_data": real_data,
    "where_it_breaks": where_it_breaks,
    "paper_methods": paper_methods,
    "decreasing_step": decreasing_step,
    "paper_part2": paper_part2,
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
              tolerance: float = TOLERANCE, progress: bool = True, jobs: int = 1, replace: bool = False,
              command: str | None = None) -> list:
    """Run the experiments ``names`` (all by default) and write their files to ``out``.

    Parameters
    ----------
    names : experiment names (keys of :data:`EXPERIMENTS`; '-' for '_' is accepted)
    config : 'quick', 'full' or a :class:`Config`
    out : directory for ``<name>.png``, ``.pdf``, ``.csv`` and ``summary.csv``; None writes nothing
    seed : int >= 0
    tolerance : float > 0, relative tolerance of the ``within`` checks
    progress : show a tqdm bar over the runs (on stderr)
    jobs : int >= 1, the experiments run in this many processes at once (each single-threaded); the
        numbers are the same as with ``jobs=1``: each experiment is seeded by ``seed`` alone
    replace : bool, let the run replace the files of another run in ``out`` (``blockcd.reproduce.outdir``:
        ``out`` is checked before any computation, each file written whole, and every CSV and the record
        ``reproduce-run.json`` name the run's seed, size, version and ``command``)
    command : str or None, the command recorded (the command line's, without ``--out``)

    Returns
    -------
    list of Result, in the order of :data:`EXPERIMENTS`.
    """
    import matplotlib.pyplot as plt

    keys = list(EXPERIMENTS) if names is None else [experiment_name(x) for x in names]
    keys = [k for k in EXPERIMENTS if k in keys]
    cfg = as_config(config)
    seed = check_seed("seed", seed)
    tolerance = check_float("tolerance", tolerance, positive=True)
    jobs = check_int("jobs", jobs, 1)
    info = outdir.stamp("suite", cfg.name, seed, command)
    if out is not None:  # before any computation: a bad --out fails now, not after the run
        out = outdir.prepare(out, info, [f"{k}.{e}" for k in keys for e in ("png", "pdf", "csv")] + ["summary.csv"],
                             replace=replace)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        total = sum(PLANS[k](cfg, cfg.seeds) for k in keys)
        bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)
        bar.blockcd_preset = True
    try:
        if jobs == 1:
            results = [EXPERIMENTS[k](config, seed=seed, progress=bar, tolerance=tolerance) for k in keys]
        else:
            results = []
            for k, res in zip(keys, spawn_map(_one_experiment, [(k, config, seed, tolerance) for k in keys],
                                              jobs)):
                results.append(res)
                if bar is not None:
                    bar.update(PLANS[k](cfg, cfg.seeds))   # the experiment's runs, as it ends
    finally:
        if bar is not None:
            bar.close()
    if out is not None:
        files = []
        for res in results:
            extra = [] if tolerance == TOLERANCE else [f"--tolerance {tolerance:g}"]
            files += res.write(out, outdir.for_file(info, f"--only {res.name}", *extra))
            plt.close(res.figure)
        files.append(write_csv(Path(out) / "summary.csv", [r for res in results for r in res.checks], info))
        outdir.finish(out, info, files)
    return results


def _one_experiment(args):
    """One experiment in a worker process, without a bar; its Result (figure included) is pickled."""
    key, config, seed, tolerance = args
    return EXPERIMENTS[key](config, seed=seed, progress=None, tolerance=tolerance)


def main_reproduce(names, *, config, out, seed, tolerance, jobs: int = 1, replace: bool = False,
                   command: str | None = None) -> int:
    """The body of ``python -m blockcd reproduce``: run, print the summary, return the exit status."""
    t0 = time.perf_counter()
    results = run_suite(names, config=config, out=out, seed=seed, tolerance=tolerance, progress=True,
                        jobs=jobs, replace=replace, command=command)
    wall = time.perf_counter() - t0
    print(summary_table(results))
    checks = [r for res in results for r in res.checks]
    failed = [r for r in checks if not r["passed"]]
    print()
    print(f"{len(checks) - len(failed)} of {len(checks)} checks passed; "
          f"{config if isinstance(config, str) else config.name} suite, seed {seed}, "
          f"{wall:.0f} s; files in {out}")
    return 1 if failed else 0

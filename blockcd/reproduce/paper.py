"""The paper's twelve figures, regenerated as the paper ran them (its Sec. 6 and Appendix I).

``python -m blockcd reproduce --paper`` runs :func:`run_paper`: one experiment
per figure of Mishchenko, Hanzely and Richtarik (2019), each returning a
:class:`~blockcd.reproduce.core.Result` whose rows state the paper's claim, the
measured figure of merit (median over the seeds, with the smallest and largest
seed), what it is checked against and with which tolerance, and whether it
passed.  Figures 1 and 9 are the same experiment (the paper says so), as are 2
and 11; each is written under both numbers.

**What the paper states and what it leaves to its plots.**  The text gives the methods, the step sizes, nτ = 1 and the data; the values of
n, τ, the minibatch sizes, o and the regularisation (except Fig. 10's
ℓ2 = 0.000025) are only in its plots, so :class:`PaperConfig` fixes them and
every CSV row records them.  Conventions, in the book's units (τ counts blocks,
q = τ/m is the paper's fraction, every worker's message is rescaled by m/τ):

- **The paper's one L.**  The paper assumes one L for every function it
  samples.  On the quadratic (17) every f_i is 1-smooth.  On logistic
  regression the suite takes L = L_s, the largest smoothness of a single data
  point (‖a_j‖²/4 + λ), which bounds every worker's L_i whatever n: so GD
  and ISEGA at nτ = 1 (Figs. 2 and 11) have the same step, as the paper's text
  says, and a single-point SGD step 1/(5L) is stable.
- **Steps.**  ISEGA's g_i carries the paper's 1/τ already (its Algorithm 2), so
  Figs. 2, 11 and 12 take 1/(L(1 + 1/(nq))) as it is; shared-data ISAGA's worker
  step is unscaled (Algorithm 4), so the paper's γ = 1/(L(3/n + q)) is q γ in
  the book's units (:func:`blockcd.theory.paper_step` makes the same conversion for
  Theorem 2), which at q = 1/n is SAGA's 1/(4L).  ISGD's Algorithm 6 is written
  unscaled too, but the figures' constant 1/(5L) and 1/(3L) are read as steps of the
  rescaled update: read literally, ISGD at τ = 1/n would step n times shorter
  than SGD and could not perform "very similarly"; in these units Theorem 6's
  own first step is 1/(2L(1 + 2ω/n)) ≈ 1/(6L) at nτ = 1
  (:func:`blockcd.theory.paper_decreasing_schedule`).  For IBCD on the quadratic
  (Figs. 3-4) the text says only that GD's step is twice IBCD's; the suite takes
  GD at 1/L and IBCD at 1/(L(1 + 1/(nq))), ISEGA's form, which is 1/(2L) at
  nτ = 1 and never above the book's 1/𝓛(τ) (so IBCD converges linearly
  under interpolation, chapter 4).  CD with the same blocks on every worker takes
  the paper's 1/L (unscaled).  CD with importance sampling is run in two readings:
  the paper's (its App. I.1: one block per iteration with probability proportional
  to L_j, step 1/L_j; :func:`cd_one_block`) and the book's product sampling with the
  steps of :func:`blockcd.theory.cd_steps`; Fig. 3's rows check both against IBCD.
- **IASGD** (Figs. 7-8) is ``'is-asgd'`` with η = 1/(ρL) and ρ by grid search,
  as the paper says, its workers on the minibatch sizes of Fig. 5
  (``_asgd_batches``).  On logistic data the runs stall at a floor, so the
  figure of merit is the floor, as in Figs. 5-6, and the grid picks the rho with
  the lowest one; ASGD is n = 1 with the same minibatch size.
- **Blocks.**  At nτ = 1 (Figs. 1, 2, 3, 5, 7, 9, 11) the d coordinates form m = n
  blocks and each worker sends τ = 1 of them, so nq = 1 exactly (the paper's
  Sec. 3.5, blocks of about d/n coordinates); that needs n <= d, and larger n are
  dropped, with a note, on data with fewer features.  The τ sweeps (Figs. 4, 6,
  8, 10, 12) take m = d coordinates and τ = round(q d) of them; the CSV records
  the q actually run.
- **What is measured.**  Curves are the relative suboptimality
  (f(x^k) - f*)/(f(x^0) - f*) against iterations, the median over the seeds with a
  band from the smallest to the largest.  A linearly converging method's figure
  of merit is the iterations to ``eps`` (per seed; the ratio of two medians
  compares two curves); a constant-step SGD's is its floor, the mean
  suboptimality over the last half of the run.

Data.  The paper's four LIBSVM sets (a1a, mushrooms, phishing, w1a) ship with
the library (:data:`blockcd.problems.PAPER_DATASETS`) and are read from the
installed package by default; with ``libsvm_dir`` holding other copies (named
as the LIBSVM site distributes them) those are read instead and their sizes
checked against the paper's (:data:`PAPER_SETS`).  The labels are mapped to
-1 and +1 (mushrooms has 1 and 2, phishing 0 and 1).  Nothing is downloaded.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import problems
from .._validate import check_choice, check_int, check_seed
from ..history import DivergenceError
from ..methods import run
from . import figures, figures_vr
from . import outdir
from .core import Data, Result, one_thread, spawn_map, write_csv
from .figures import SURPRISES, cd_one_block
from .players import player, scrubber

#: the paper's data sets, name -> (d, N) as its Appendix I states them (the bundled copies,
#: :data:`blockcd.problems.PAPER_DATASETS`, have these sizes)
PAPER_SETS = {x: (v.n_features, v.n_rows) for x, v in problems.PAPER_DATASETS.items()}
#: the figures, in the paper's numbering; 9 is 1 and 11 is 2 (the paper's footnotes)
FIGURES = tuple(range(1, 13))
SAME = {9: 1, 11: 2}


@dataclass(frozen=True)
class PaperConfig:
    """Sizes of the paper's figures: ``PAPER_QUICK`` (the tests, the chapter) or ``PAPER_FULL``.

    The fields:

    - ``name``: 'quick' or 'full'
    - ``seeds``: runs per curve (seeds ``seed .. seed + seeds - 1``); Fig. 10: ``fig10_seeds``
    - ``data``: the paper's sets each logistic figure runs on (keys of :data:`PAPER_SETS`)
    - ``lam``, ``lam_fig10``: the l2 regularisation of the logistic problems, and Fig. 10's (the paper's 0.000025)
    - ``quad_d``, ``quad_ns``, ``quad_o``, ``quad_eps``, ``quad_iters``: the quadratic (17): dimension, workers, columns o of
      each A_i as a multiple of d/n (so n o is the same for every n), accuracy and most iterations
    - ``quad_fracs``: Fig. 4's nq values (q = these / n)
    - ``sgd_ns``, ``sgd_batches``, ``sgd_iters``: Fig. 5's workers, minibatch sizes and iterations
    - ``sweep_ns``, ``sweep_qs``: workers and the paper's fractions tau of the tau sweeps (Figs. 6, 8, 10, 12; 1/n is
      added at each n)
    - ``asgd_rhos``, ``asgd_iters``: IASGD's grid of rho and its iterations (Figs. 7-8; the figure of merit is the floor)
    - ``saga_data``, ``saga_ns``, ``saga_eps``, ``saga_iters``, ``saga_per_row``: shared-data ISAGA (Figs. 1 = 9, 10), whose
      iterations grow with N (SAGA refreshes one of N table entries per iteration): a run takes
      max(saga_iters, saga_per_row N) iterations, and the quick sizes take the smallest set;
      ``fig10_eps`` and ``fig10_iters`` the accuracy and iterations of Fig. 10's sweep (its small tau and
      small l2 make it the longest; at least saga_per_row N)
    - ``isega_ns``, ``isega_eps``, ``isega_iters``: ISEGA (Figs. 2 = 11, 12)
    - ``fig10_seeds``: runs per curve of Fig. 10 when ``run_paper`` is not given ``seeds``: its check
      compares spreads at two n that differ by less than the seeds' own scatter (on a1a seed 0 alone
      passes it, seeds 0 and 1 together fail it), so one seed cannot decide it
    - ``fig10_holds``: whether Fig. 10's check is expected to hold; False at the quick sizes, where the
      book shows why it does not (chapter 13), so that its failure is ``xfail`` and a pass ``XPASS``, a
      surprise; the full sizes expect the paper's claim
    """

    name: str
    seeds: int
    data: tuple
    lam: float
    lam_fig10: float
    quad_d: int
    quad_ns: tuple
    quad_o: float
    quad_eps: float
    quad_iters: int
    quad_fracs: tuple
    sgd_ns: tuple
    sgd_batches: tuple
    sgd_iters: int
    sweep_ns: tuple
    sweep_qs: tuple
    asgd_rhos: tuple
    asgd_iters: int
    saga_data: tuple
    saga_ns: tuple
    saga_eps: float
    saga_iters: int
    saga_per_row: float
    fig10_eps: float
    fig10_iters: int
    isega_ns: tuple
    isega_eps: float
    isega_iters: int
    fig10_seeds: int
    fig10_holds: bool = True


PAPER_QUICK = PaperConfig(
    name="quick", seeds=1, data=("a1a",), lam=1e-3, lam_fig10=2.5e-4,
    quad_d=60, quad_ns=(4, 12), quad_o=2.0, quad_eps=1e-6, quad_iters=2500, quad_fracs=(0.5, 1, 2, 4),
    sgd_ns=(4, 12), sgd_batches=(1, 4), sgd_iters=1000,
    sweep_ns=(2, 12), sweep_qs=(0.25, 0.5, 1.0),
    asgd_rhos=(1, 4, 16), asgd_iters=400,
    saga_data=("a1a",), saga_ns=(4, 12), saga_eps=3e-2, saga_iters=5000, saga_per_row=0.0, fig10_eps=1e-1,
    fig10_iters=2500,
    isega_ns=(4, 12, 50), isega_eps=1e-2, isega_iters=3000, fig10_seeds=2, fig10_holds=False,
)
PAPER_FULL = PaperConfig(
    name="full", seeds=5, data=("a1a", "mushrooms", "phishing", "w1a"), lam=1e-3, lam_fig10=2.5e-4,
    quad_d=120, quad_ns=(10, 20, 40), quad_o=2.0, quad_eps=1e-6, quad_iters=6000,
    quad_fracs=(0.25, 0.5, 1, 2, 4, 8),
    sgd_ns=(10, 20, 50), sgd_batches=(1, 4, 16), sgd_iters=4000,
    sweep_ns=(2, 10, 30), sweep_qs=(0.25, 0.5, 1.0),
    asgd_rhos=(1, 2, 4, 8, 16), asgd_iters=1000,
    saga_data=("a1a", "mushrooms", "phishing", "w1a"), saga_ns=(10, 20, 50), saga_eps=1e-3,
    saga_iters=8000, saga_per_row=8.0, fig10_eps=1e-2, fig10_iters=20000,
    isega_ns=(10, 20, 50, 100), isega_eps=1e-3, isega_iters=8000, fig10_seeds=5,
)
PAPER_CONFIGS = {"quick": PAPER_QUICK, "full": PAPER_FULL}

#: columns of every figure's CSV, in this order
PAPER_COLUMNS = (
    "figure", "data", "claim", "quantity", "curve", "method", "n", "m", "tau", "q", "step", "batch",
    "seeds", "measured", "measured_min", "measured_max", "predicted", "check", "tolerance", "passed",
    "expected", "status", "note",
)


# ------------------------------------------------------------------ data
def check_libsvm_dir(libsvm_dir, names=tuple(PAPER_SETS)) -> Path:
    """The directory holding the paper's LIBSVM files ``names``, checked; ``ValueError`` naming what is wrong.

    Each file must be there (as the LIBSVM site distributes it: a1a, mushrooms, phishing,
    w1a, no extension) and have the paper's number of rows N and at most its d features
    (:data:`PAPER_SETS`).
    """
    if not isinstance(libsvm_dir, (str, Path)):
        raise TypeError(f"libsvm_dir must be a path (str or Path), got {type(libsvm_dir).__name__}")
    root = Path(libsvm_dir)
    if not root.is_dir():
        raise ValueError(f"libsvm_dir must be a directory holding {', '.join(names)}; {str(root)!r} is not one")
    missing = [x for x in names if not (root / x).is_file()]
    if missing:
        raise ValueError(f"libsvm_dir {str(root)!r} lacks {', '.join(missing)}: it must hold the paper's LIBSVM "
                         f"files {', '.join(names)} (named as the LIBSVM site distributes them)")
    for x in names:
        _read_libsvm(root, x)
    return root


def _read_libsvm(root: Path, name: str):
    d, N = PAPER_SETS[name]
    try:
        X, y = problems.read_libsvm(root / name)
    except ValueError as exc:
        raise ValueError(f"libsvm_dir: {exc}") from None
    if X.shape[0] != N or X.shape[1] > d:
        raise ValueError(f"libsvm_dir: {name} has N = {X.shape[0]} rows and {X.shape[1]} features; the paper's "
                         f"{name} has N = {N} and d = {d}")
    labels = np.unique(y)
    if labels.size != 2:
        raise ValueError(f"libsvm_dir: {name} must hold two classes, got {labels.size}")
    if X.shape[1] < d:  # trailing features absent from every row
        import scipy.sparse as sp

        X = sp.hstack([X, sp.csr_matrix((N, d - X.shape[1]))]).tocsr()
    return X.tocsr(), np.where(y == labels[1], 1.0, -1.0)


def load(name: str, libsvm_dir=None) -> Data:
    """The paper's set ``name``: the copy shipped with the library, or the one in ``libsvm_dir`` (checked)."""
    name = check_choice("data", name, tuple(PAPER_SETS))
    if libsvm_dir is not None:
        root = check_libsvm_dir(libsvm_dir, (name,))
        X, y = _read_libsvm(root, name)
        return Data(name, str(root / name), X.toarray(), y)
    X, y = problems.read_libsvm(name)
    # dense: at most 11,055 x 300 numbers, and the simulator's dense path runs these sizes about three
    # times faster than the sparse one (the same numbers up to the order of the sums)
    return Data(name, "bundled", X.toarray(), y)


class _Ctx:
    def __init__(self, config, seed, seeds, libsvm_dir, progress):
        self.cfg = config
        self.seed = seed
        self.seeds = tuple(seed + j for j in range(config.seeds if seeds is None else seeds))
        self.seeds_given = seeds is not None
        self.libsvm_dir = libsvm_dir
        self.progress = progress
        self._data = {}
        self.problems = {}                                  # built once per run (figures.logistic_problem)

    def sets(self, names) -> list:
        """The data sets ``names`` a figure runs on, in order."""
        return list(names)

    def data(self, name) -> Data:
        if name not in self._data:
            self._data[name] = load(name, self.libsvm_dir)
        return self._data[name]

    def curves(self, p, method, *, m, tau, step, iters, batch=None, sampling=None, seeds=None):
        """(seeds, iters + 1) relative suboptimalities; a diverged run is inf from there on."""
        seeds = self.seeds if seeds is None else seeds
        out = np.full((len(seeds), iters + 1), np.inf)
        for j, s in enumerate(seeds):
            try:
                h = run(p, method, m=m, tau=tau, step=step, iters=iters, seed=s, batch=batch, sampling=sampling)
            except DivergenceError:
                continue
            rel = np.maximum(h.gap / h.gap[0], 0.0)
            out[j, : rel.size] = rel
            if self.progress is not None:
                self.progress.update(1)
        return out


PAPER_EXPERIMENTS = {f: getattr(figures_vr if f in (1, 2, 10, 12) else figures, f"fig{f}")
                     for f in (1, 2, 3, 4, 5, 6, 7, 8, 10, 12)}


# ================================================================ suite
def _paper_config(config) -> PaperConfig:
    if isinstance(config, str):
        return PAPER_CONFIGS[check_choice("config", config, tuple(PAPER_CONFIGS))]
    if not isinstance(config, PaperConfig):
        raise TypeError(f"config must be 'quick', 'full' or a PaperConfig, got {type(config).__name__}")
    return config


def _figures(figures) -> list:
    if figures is None:
        return list(FIGURES)
    out = []
    for f in figures:
        f = check_int("figures", f, 1, 12)
        out.append(f)
    return sorted(set(out))


@one_thread
def run_paper(figures=None, *, config="quick", out=None, seed: int = 0, seeds: int | None = None,
              libsvm_dir=None, progress: bool = False, jobs: int = 1, replace: bool = False,
              command: str | None = None) -> list:
    """Regenerate the paper's figures ``figures`` (all twelve by default) and write their files to ``out``.

    Parameters
    ----------
    figures : iterable of int in 1..12, or None (all)
    config : 'quick', 'full' or a :class:`PaperConfig`
    out : directory for ``figNN.png``, ``.pdf``, ``.csv`` per figure and ``paper_summary.csv``; None: nothing written
    seed : int >= 0, the seed of the problems; the runs use seeds ``seed .. seed + seeds - 1``
    seeds : int >= 1 or None (the config's), the runs per curve
    libsvm_dir : directory holding copies of the paper's LIBSVM files (checked, :func:`check_libsvm_dir`),
        or None for the copies shipped with the library
    progress : a tqdm bar over the runs (on stderr; over the figures when ``jobs > 1``)
    jobs : int >= 1, the figures run in this many processes at once (each single-threaded); the numbers
        are the same as with ``jobs=1``, bit for bit: each figure's runs are seeded by ``seed`` alone
    replace, command : as :func:`blockcd.reproduce.run_suite` (``out`` checked before any computation, files
        written whole, the run recorded in every CSV and in ``reproduce-run.json``)

    Returns
    -------
    list of Result, one per figure in the paper's order (9 and 11 repeat 1 and 2 under their own names).
    """
    import matplotlib.pyplot as plt

    cfg = _paper_config(config)
    seed = check_seed("seed", seed)
    if seeds is not None:
        seeds = check_int("seeds", seeds, 1)
    if libsvm_dir is not None:
        check_libsvm_dir(libsvm_dir, cfg.data)
    wanted = _figures(figures)
    jobs = check_int("jobs", jobs, 1)
    sources = list(dict.fromkeys(SAME.get(f, f) for f in wanted))
    info = outdir.stamp("paper", cfg.name, seed, command)
    if out is not None:  # before any computation: a bad --out fails now, not hours later
        out = outdir.prepare(out, info, [f"fig{f:02d}.{e}" for f in wanted for e in ("png", "pdf", "csv")]
                             + ["paper_summary.csv"], replace=replace)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(unit="run" if jobs == 1 else "figure", total=None if jobs == 1 else len(sources),
                   file=sys.stderr, dynamic_ncols=True)
    try:
        if jobs == 1:
            ctx = _Ctx(cfg, seed, seeds, libsvm_dir, bar)
            done = {src: PAPER_EXPERIMENTS[src](ctx) for src in sources}
        else:
            done = _run_parallel(sources, (cfg, seed, seeds, libsvm_dir), jobs, bar)
    finally:
        if bar is not None:
            bar.close()
    results = []
    for f in wanted:
        src = SAME.get(f, f)
        res = done[src]
        if f != src:
            rows = [dict(r, figure=f, note=(r["note"] + "; " if r["note"] else "") + f"the same as Figure {src}")
                    for r in res.rows]
            res = Result(f"fig{f:02d}", rows, res.figure)
        results.append(res)
    if out is not None:
        files = []
        for res in results:
            extra = ([f"--seeds {seeds}"] if seeds is not None else []) + (
                [f"--libsvm-dir {libsvm_dir}"] if libsvm_dir is not None else [])
            files += res.write(out, outdir.for_file(info, f"--figures {int(res.name[3:])}", *extra))
        files.append(write_csv(Path(out) / "paper_summary.csv", [r for res in results for r in res.checks], info))
        outdir.finish(out, info, files)
        for res in {id(r.figure): r for r in results}.values():
            plt.close(res.figure)
    return results


#: rough CPU seconds of each figure at quick size, so that parallel runs start the longest first
_COST = {10: 21, 1: 10, 12: 8, 2: 6}


def _one_figure(args):
    """One figure in a worker process: its own context, no bar; the Result (figure included) is pickled."""
    src, (cfg, seed, seeds, libsvm_dir) = args
    return one_thread(PAPER_EXPERIMENTS[src])(_Ctx(cfg, seed, seeds, libsvm_dir, None))


def _run_parallel(sources, setting, jobs, bar) -> dict:
    """``{figure: Result}`` for ``sources``, run in ``jobs`` spawned processes, longest first."""
    order = sorted(sources, key=lambda f: -_COST.get(f, 1))
    done = {}
    for src, res in zip(order, spawn_map(_one_figure, [(f, setting) for f in order], jobs)):
        done[src] = res
        if bar is not None:
            bar.update(1)
    return done


def paper_table(results, *, checks_only: bool = True) -> str:
    """One line per (checked) row: figure, data, curve, what is measured, median [min-max], prediction, verdict."""
    lines = []
    for res in results:
        for r in (res.checks if checks_only else res.rows):
            lo, hi = r["measured_min"], r["measured_max"]
            band = "" if (r["seeds"] <= 1 or not math.isfinite(lo)) else f" [{lo:.3g}-{hi:.3g}]"
            tol = r["tolerance"]
            if r["check"] == "info":
                verdict = ""
            else:
                how = {"within": f"±{100 * tol:.0f}% of", "at most": f"<= (1+{tol:g}) x",
                       "at least": f">= 1/(1+{tol:g}) x", "below": "<"}[r["check"]]
                verdict = f"{how} {r['predicted']:.3g}: " + r["status"]
            lines.append((f"Fig. {r['figure']}", r["data"], str(r["n"]), r["curve"], r["quantity"],
                          f"{r['measured']:.3g}{band}", verdict))
    head = ("figure", "data", "n", "curve", "measured", "median [seeds]", "check")
    widths = [max(len(h), *(len(x[i]) for x in lines)) if lines else len(h) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*x).rstrip() for x in [head, tuple("-" * w for w in widths), *lines])


_VERDICTS = {"pass": "pass", "FAIL": "FAIL", "xfail": "fails, as expected (xfail)",
             "XPASS": "holds, though expected not to (XPASS)"}


def describe(row: dict) -> str:
    """One checked row as a sentence: data, n, what is measured (median and the seeds' range), the check and
    its verdict, e.g. ``n = 4: K(IBCD) / K(GD) = 2.01 [1.98-2.1], at most 2 (1 + 0.15): pass``."""
    lo, hi = row["measured_min"], row["measured_max"]
    band = f" [{lo:.3g}-{hi:.3g}]" if row["seeds"] > 1 and math.isfinite(lo) else ""
    tol, pred = row["tolerance"], row["predicted"]
    how = {"within": f"within {100 * tol:.0f}% of {pred:.3g}", "at most": f"at most {pred:.3g} (1 + {tol:g})",
           "at least": f"at least {pred:.3g} / (1 + {tol:g})", "below": f"below {pred:.3g}",
           "info": "recorded, not checked"}[row["check"]]
    verdict = "" if row["check"] == "info" else f": {_VERDICTS[row['status']]}"
    where = f"n = {row['n']}: " if row["n"] != "" else ""
    return f"{row['data']}, {where}{row['quantity']} = {row['measured']:.3g}{band}, {how}{verdict}"


def main_paper(*, quick: bool, out, seed: int, seeds, libsvm_dir, figures=None, jobs: int = 1,
               replace: bool = False, command: str | None = None) -> int:
    """The body of ``python -m blockcd reproduce --paper``: run, print each claim and verdict, return the status."""
    cfg = PAPER_QUICK if quick else PAPER_FULL
    where = "the copies shipped with blockcd" if libsvm_dir is None else str(libsvm_dir)
    print(f"the paper's LIBSVM sets ({', '.join(sorted(set(cfg.data) | set(cfg.saga_data)))}) from {where}",
          file=sys.stderr)
    t0 = time.perf_counter()
    results = run_paper(figures, config=cfg, out=out, seed=seed, seeds=seeds, libsvm_dir=libsvm_dir,
                        progress=True, jobs=jobs, replace=replace, command=command)
    wall = time.perf_counter() - t0
    for res in results:
        claims = dict.fromkeys(r["claim"] for r in res.checks)
        for c in claims:
            rs = [r for r in res.checks if r["claim"] == c]
            ok = all(r["passed"] for r in rs)
            expected = all(r["expected"] == "hold" for r in rs)
            verdict = "the data bear it out" if ok else "NOT borne out"
            if not expected:
                verdict += ", as the book expects" if not ok else ", though the book expects it not to be"
            print(f"Fig. {rs[0]['figure']}: {c} -- {verdict} "
                  f"({sum(r['passed'] for r in rs)} of {len(rs)} checks, {rs[0]['data']})")
    print()
    print(paper_table(results))
    checks = [r for res in results for r in res.checks]
    count = {s: sum(r["status"] == s for r in checks) for s in ("pass", "xfail", *SURPRISES)}
    surprises = count["FAIL"] + count["XPASS"]
    print()
    print(f"{count['pass']} of {len(checks)} checks passed, {count['xfail']} failed as expected (xfail), "
          f"{count['FAIL']} failed and {count['XPASS']} passed unexpectedly; paper figures, "
          f"{cfg.name} sizes, seed {seed}, {wall:.0f} s; files in {out}")
    # the status: 0 when every claim comes out as the book says, 1 on any surprise (a FAIL or an XPASS)
    return 1 if surprises else 0


__all__ = [
    "FIGURES",
    "PAPER_COLUMNS",
    "PAPER_CONFIGS",
    "PAPER_EXPERIMENTS",
    "PAPER_FULL",
    "PAPER_QUICK",
    "PAPER_SETS",
    "Data",
    "PaperConfig",
    "cd_one_block",
    "check_libsvm_dir",
    "describe",
    "load",
    "main_paper",
    "paper_table",
    "player",
    "run_paper",
    "scrubber",
]

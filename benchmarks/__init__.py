"""The performance benchmark: ``python -m benchmarks [--quick] [--only CASE ...] [--threads T]``.

It prints one table (case, sizes, measured ratio, target, met or not, the
same ratio from CPU time, notes) for the library's performance targets, every
ratio taken between times measured in the same run:

``floor``
    Time of one IBCD (and ISEGA) iteration over the *gradient floor*, the time
    to compute all n local gradients in the fastest form this machine offers.
    The forms timed: one BLAS matrix-vector product over all rows plus a
    batched product for the per-worker sums (what the library does); the same
    in chunks of workers whose rows fit in a core's L2 cache, so the second
    pass reads them from cache; ``einsum``; a block-diagonal sparse product; a
    per-worker loop; each with the BLAS threads as configured and, if that is
    more than one, with one thread.  The iteration time is the difference between a run of
    K + 1 iterations and a run of one, over K, so set-up and the history
    do not count.
``reference``
    The library against :func:`blockcd.reference.run`, the same rules run as a
    per-worker Python loop, at the sizes of the widgets (n 10 to 100, d <= 200, 20 rows
    per worker; also the widgets' default problem, 100 rows per worker), at the
    floor sizes and on sparse data; the wall time of a whole 500-iteration run
    at widget sizes; and the agreement of the iterates.
``sampling``
    Time to draw the (n, m) block masks of an iteration over the time of the
    iteration; a ``scipy.sparse`` problem must stay sparse (types, and peak
    memory far below a dense copy).
``memory``
    Peak memory (``tracemalloc``) of each method's n = 1000 run against twice
    the data plus the per-worker state it needs (SAGA tables reported apart).
``scale``
    An IBCD iteration at tau = m/n against the full-gradient floor and the
    *partial* floor (the margins plus the sent columns only) on large dense
    and sparse problems, n = 100 and 1000 workers, and memory per worker
    (``benchmarks/scale.py``).
``book``
    Wall time to execute each chapter ``book/*.ipynb`` (in memory, with
    ``nbclient``; the files are not modified).  Not part of ``--quick``.

Timings are medians over repetitions, and the functions compared are called
in alternation, so a change of load on a shared machine affects both sides of
a ratio.  ``--quick`` runs reduced sizes in seconds; it is meant to check that
everything runs and that the iterates agree, not to judge the targets.
``--threads`` limits the BLAS threads (``threadpoolctl``); when
``OPENBLAS_CORETYPE`` or ``OPENBLAS_L2_SIZE`` is set, the floor case is also
re-run in a child process without them and shown in an extra column.

How the reference is compared with the library.  The reference runs the
rules of :mod:`blockcd.rules` worker by worker: each worker regenerates its
own blocks from the seed (:meth:`blockcd.blocks.BlockSampler.worker_blocks`,
what a master or an MPI rank computes for one worker alone) and the master
adds the sent values up.  Agreement (independent and shared sampling, and
tau = m) means a relative difference of at most 1e-12: the two codes add the
same numbers in different orders (per worker, then over workers).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from blockcd import problems, reference, theory
from blockcd.blocks import BlockSampler
from blockcd.methods import run
from blockcd.problems import Problem

from .scale import case_scale
from .timing import Row, _draw, _draw_uniforms, _interleaved, _repeat, at_least, at_most

#: the benchmark's cases, in the order they run
CASES = ("floor", "reference", "sampling", "memory", "scale", "book")
#: environment variables that select OpenBLAS kernels (never changed by the benchmark itself)
BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
#: largest relative difference accepted between the library's and the reference's iterates
AGREEMENT = 1e-12
#: bytes of worker data per chunk in the cache-blocked floor form (half a core's 2 MiB L2)
CHUNK_BYTES = 1 << 20

#: seconds a whole 500-iteration run at the widget sizes may take (what an explorer's redraw can afford)
RUN500 = 0.15
#: (n, rows per worker, d, m, tau) of the gradient-floor targets (tau = m/n, at least 1)
FLOOR_SIZES = [(100, 200, 1000, 1000, 10), (1000, 20, 1000, 100, 1)]
#: what ``--quick`` prints above its table
QUICK_NOTE = ("--quick: reduced sizes, to check that every case runs. Its time and memory rows are not judged "
              "(met '-'): the targets hold for the full sizes (python -m benchmarks). The correctness checks "
              "(the iterates agree with the reference, sparse data stay sparse) are judged at every size.")
#: the widget sizes of the targets (20 rows per worker) and the widgets' default problem (100 rows)
WIDGET_SIZES = [(10, 20, 50, 10, 1), (10, 20, 200, 20, 2), (30, 20, 100, 30, 1), (100, 20, 200, 100, 1),
                (100, 20, 200, 200, 2), (10, 100, 40, 40, 4)]
QUICK_FLOOR_SIZES = [(20, 20, 200, 200, 10), (100, 5, 200, 20, 1)]
QUICK_WIDGET_SIZES = [(10, 20, 50, 10, 1), (30, 20, 60, 30, 1)]


# ------------------------------------------------------------------ the reference
def agreement(problem: Problem, method: str, *, m: int, tau: int, iters: int, seed: int = 0,
              sampling: str = "independent", step: float | None = None) -> float:
    """:func:`blockcd.reference.difference` of a run with these arguments (the benchmark's agreement row)."""
    return reference.difference(problem, method, m=m, tau=tau, iters=iters, seed=seed, sampling=sampling, step=step)


# ------------------------------------------------------------------ problems
def _ready(p: Problem) -> Problem:
    """Compute the constants a run needs (x*, f*) once, outside every timing."""
    p.x_star, p.f_star  # noqa: B018
    return p


def _dense_ridge(n: int, rows: int, d: int, seed: int = 0) -> Problem:
    """Dense ridge regression on Gaussian data, ``rows`` rows per worker, split in order."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n * rows, d))
    b = A @ (rng.standard_normal(d) / math.sqrt(d)) + 0.1 * rng.standard_normal(n * rows)
    return _ready(problems.ridge(A, b, n_workers=n, split="contiguous", name=f"bench ridge n={n} d={d}"))


def _problem(n: int, rows: int, d: int) -> Problem:
    """The widgets' synthetic problem up to d = 200, Gaussian ridge data beyond (quicker to build)."""
    if d <= 200:
        return _ready(problems.synthetic(n, rows, d, cond=10, seed=0))
    return _dense_ridge(n, rows, d)


def _size(n, d, m, tau, rows) -> str:
    return f"n={n} d={d} m={m} tau={tau} l={rows}"


def _floor_forms(p: Problem) -> dict:
    """Ways of computing the (n, d) local gradients of an evenly split dense ridge problem."""
    W = p.workers()
    n, lm, d = W.A3.shape
    A3, A2, t, w = W.A3, W.A2, W.t, W.w
    Q = sp.csr_matrix((np.ones(n * lm), np.arange(n * lm), np.arange(0, n * lm + 1, lm)), shape=(n, n * lm))
    chunk = max(1, CHUNK_BYTES // (lm * d * 8))

    def gemv_matmul(x):
        c = w * (A2 @ x - t)
        return np.matmul(c.reshape(n, 1, lm), A3).reshape(n, d)

    def chunked(x):
        G = np.empty((n, d))
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            c = w[s * lm : e * lm] * (A2[s * lm : e * lm] @ x - t[s * lm : e * lm])
            G[s:e] = np.matmul(c.reshape(e - s, 1, lm), A3[s:e]).reshape(e - s, d)
        return G

    def einsum(x):
        c = w * (A2 @ x - t)
        return np.einsum("nl,nld->nd", c.reshape(n, lm), A3)

    def blockdiag(x):
        Q.data = w * (A2 @ x - t)
        return Q @ A2

    def per_worker(x):
        G = np.empty((n, d))
        for i in range(n):
            rows = slice(i * lm, (i + 1) * lm)
            G[i] = (w[rows] * (A3[i] @ x - t[rows])) @ A3[i]
        return G

    return {
        "gemv + batched matmul": gemv_matmul,
        f"chunked gemv + matmul ({chunk} workers/chunk)": chunked,
        "einsum": einsum,
        "block-diagonal sparse": blockdiag,
        "per-worker gemv": per_worker,
    }


# ------------------------------------------------------------------ cases
def _case_floor(quick: bool, reps: int) -> list[Row]:
    """IBCD and ISEGA iteration time over the gradient floor."""
    K = 5 if quick else 10
    rows = []
    one = _one_thread_controller()
    for n, lm, d, m, tau in QUICK_FLOOR_SIZES if quick else FLOOR_SIZES:
        p = _dense_ridge(n, lm, d)
        x = np.random.default_rng(1).standard_normal(d) / math.sqrt(d)
        forms = _floor_forms(p)
        G0 = forms["gemv + batched matmul"](x)
        for name, f in forms.items():  # every form computes the same gradients
            if not np.allclose(np.asarray(f(x)), G0, rtol=1e-10, atol=1e-12 * np.abs(G0).max()):
                raise AssertionError(f"the floor form {name!r} computes other gradients")
        fns = {name: partial(_repeat, f, x, K) for name, f in forms.items()}
        if one is not None:  # the same forms with one BLAS thread (on a busy machine a second one mostly waits)
            fns.update({name + ", 1 thread": partial(_one_thread, one, _repeat, f, x, K) for name, f in forms.items()})
        floors = list(fns)
        for meth in ("ibcd", "isega"):
            kw = {"m": m, "tau": tau, "step": theory.step_size(p, meth, m, tau)}
            fns[meth + " 1"] = partial(run, p, meth, iters=1, **kw)
            fns[meth] = partial(run, p, meth, iters=K + 1, **kw)
            if one is not None:
                fns[meth + " 1, 1 thread"] = partial(_one_thread, one, run, p, meth, iters=1, **kw)
                fns[meth + ", 1 thread"] = partial(_one_thread, one, run, p, meth, iters=K + 1, **kw)
        fns["ibcd"]()  # warm up
        T = _interleaved(fns, reps)
        for name in floors:
            T.scale(name, 1 / K)
        best = min(floors, key=T.median)
        own = "gemv + batched matmul"
        size = _size(n, d, m, tau, lm)
        for meth, target in (("ibcd", 1.25), ("isega", 1.4)):
            it = T.per_iteration(meth + " 1", meth, K)
            wall, cpu = T.ratio(it, best)
            note = (f"iteration {T.median(it) * 1e3:.1f} ms, floor {T.median(best) * 1e3:.1f} ms ({best}); "
                    f"{_fmt(T.ratio(it, own)[0])} x the library's own form")
            if one is not None:
                it1 = T.per_iteration(meth + " 1, 1 thread", meth + ", 1 thread", K)
                note += f"; with 1 thread {_fmt(T.ratio(it1, best)[0])} x the floor"
            rows.append(Row(f"floor: {meth} iteration / floor", size, wall, f"<= {target}", at_most(wall, target),
                            note, cpu=cpu))
        times = ", ".join(f"{name} {T.median(name) * 1e3:.1f}" for name in floors)
        rows.append(Row("floor: the forms timed (ms)", size, None, "", None, times))
    return rows


def _one_thread_controller():
    """A threadpoolctl controller when numpy's BLAS runs more than one thread (else None)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    controller = ThreadpoolController()
    blas = controller.select(user_api="blas")
    return controller if blas.lib_controllers and max(c.num_threads for c in blas.lib_controllers) > 1 else None


def _one_thread(controller, f, *args, **kwargs) -> None:
    with controller.limit(limits=1, user_api="blas"):
        f(*args, **kwargs)


def _case_reference(quick: bool, reps: int) -> list[Row]:
    """The library against the per-worker reference loop, and the agreement of their iterates."""
    rows = []
    for n, lm, d, m, tau in QUICK_WIDGET_SIZES if quick else WIDGET_SIZES:
        rows += _compare(_problem(n, lm, d), _size(n, d, m, tau, lm), m, tau, 20 if quick else 200, reps,
                         widget=not quick)
    if not quick:
        for n, lm, d, m, tau in FLOOR_SIZES:
            rows += _compare(_problem(n, lm, d), _size(n, d, m, tau, lm), m, tau, 5, reps, widget=False)
    # sparse data, an iid split with unequal worker sizes, logistic loss
    n, d = (20, 300) if quick else (100, 2000)
    rng = np.random.default_rng(3)
    A = sp.random(n * 20 + 7, d, density=0.02, random_state=rng, format="csr")
    p = _ready(problems.logistic(A, rng.standard_normal(A.shape[0]) > 0, n_workers=n, lam=1e-2, seed=1))
    m = d // 10
    rows += _compare(p, f"sparse logistic n={n} d={d} m={m} tau=1", m, 1, 10 if quick else 50, reps, widget=False)
    return rows


def _compare(p: Problem, size: str, m: int, tau: int, K: int, reps: int, widget: bool) -> list[Row]:
    err = max(
        agreement(p, meth, m=m, tau=t, iters=min(K, 30), sampling=s)
        for meth in ("ibcd", "isega")
        for t, s in ((tau, "independent"), (tau, "shared"), (m, "independent"))
    )
    rows = [Row("reference: iterates agree (rel. diff)", size, err, f"<= {AGREEMENT:g}", err <= AGREEMENT, check=True)]
    kw = {"m": m, "tau": tau, "step": theory.step_size(p, "ibcd", m, tau)}
    fns = {"library": partial(run, p, "ibcd", iters=K, **kw),
           "reference": partial(reference.run, p, "ibcd", iters=K, **kw)}
    if widget:
        fns["500"] = partial(run, p, "ibcd", iters=500, **kw)
    T = _interleaved(fns, reps)
    wall, cpu = T.ratio("reference", "library")
    target = 3.0 if widget else 1.0
    rows.append(Row("reference: speed-up over the reference (ibcd)", size, wall, f">= {target:g}",
                    at_least(wall, target), f"library {T.median('library') / K * 1e6:.0f} us/iter, "
                    f"reference {T.median('reference') / K * 1e6:.0f} us/iter", cpu=cpu))
    if widget:
        t500 = T.median("500")
        rows.append(Row("reference: whole 500-iteration run (s)", size, t500, f"<= {RUN500:g}", t500 <= RUN500,
                        cpu=T.median("500", "cpu")))
    return rows


def _case_sampling(quick: bool, reps: int) -> list[Row]:
    """Drawing the (n, m) masks against one IBCD iteration; sparse data stays sparse."""
    rows = []
    sizes = QUICK_WIDGET_SIZES + QUICK_FLOOR_SIZES if quick else WIDGET_SIZES[:-1] + FLOOR_SIZES
    for n, lm, d, m, tau in sizes:
        p = _problem(n, lm, d)
        kw = {"m": m, "tau": tau, "step": theory.step_size(p, "ibcd", m, tau)}
        K = (5 if quick else 50) if d <= 200 else (2 if quick else 5)
        fns = {"masks": partial(_draw, BlockSampler(n, m, tau, 0), itertools.count(), K),
               "uniforms": partial(_draw_uniforms, BlockSampler(n, m, tau, 0), itertools.count(), K),
               "run 1": partial(run, p, "ibcd", iters=1, **kw),
               "run": partial(run, p, "ibcd", iters=K + 1, **kw)}
        T = _interleaved(fns, reps)
        it = T.per_iteration("run 1", "run", K)
        T.scale("masks", 1 / K)
        T.scale("uniforms", 1 / K)
        wall, cpu = T.ratio("masks", it)
        rows.append(Row("sampling: masks / iteration", _size(n, d, m, tau, lm), wall, "<= 0.1", at_most(wall, 0.1),
                        f"masks {T.median('masks') * 1e6:.0f} us, of which the Philox uniforms "
                        f"{T.median('uniforms') * 1e6:.0f} us; iteration {T.median(it) * 1e6:.0f} us", cpu=cpu))
    rows += _sparse_stays_sparse(quick)
    return rows


def _sparse_stays_sparse(quick: bool) -> list[Row]:
    N, d, n = (3000, 600, 20) if quick else (50000, 20000, 100)
    rng = np.random.default_rng(4)
    A = sp.random(N, d, density=5e-4, random_state=rng, format="csr") + sp.eye(N, d, format="csr")
    p = _ready(problems.ridge(A, rng.standard_normal(N), n_workers=n, lam=1e-2, split="iid"))
    dense_bytes = N * d * 8
    m = d // 10
    worst, notes = 0.0, []
    for meth, batch in (("ibcd", None), ("isega", None), ("is-sgd", 4), ("is-saga", 2)):
        step = theory.step_size(p, meth, m, 1, batch=batch)
        tracemalloc.start()
        run(p, meth, m=m, tau=1, step=step, iters=3, batch=batch)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        worst = max(worst, peak / dense_bytes)
        notes.append(f"{meth} {peak / 2**20:.1f} MiB")
    ok = sp.issparse(p.workers().A2) and worst < 0.1
    return [Row("sampling: sparse data not densified (peak / dense size)", f"N={N} d={d} n={n} density 5e-4",
                worst, "< 0.1, data sparse", ok,
                f"a dense copy would take {dense_bytes / 2**20:.0f} MiB; run peaks: {', '.join(notes)}", check=True)]


def _state_bytes(p: Problem, method: str) -> tuple[int, int]:
    """(per-worker state the method needs, SAGA tables) in bytes.

    Every method forms the n local estimates, an (n, d) array; ISEGA and
    IS-SAGA keep the shifts h, another (n, d); IS-SAGA also keeps each
    worker's table of derivatives (n, l_max) and their average abar (n, d),
    reported apart.
    """
    nd = p.n * p.d * 8
    if method == "isega":
        return 2 * nd, 0
    if method == "is-saga":
        return 2 * nd, nd + p.n * p.l_max * 8
    return nd, 0


def _case_memory(quick: bool, reps: int) -> list[Row]:
    """Peak memory of the n = 1000 run against 2 x data + the per-worker state of the method.

    ``tracemalloc`` sees numpy's allocations; the data exist before the run,
    so the peak is the data plus the most the run held at once.  The SAGA
    tables are left out of the comparison and reported in the note.
    """
    n, lm, d, m, tau = QUICK_FLOOR_SIZES[1] if quick else FLOOR_SIZES[1]
    p = _dense_ridge(n, lm, d)
    data = p.data_nbytes
    rows = []
    for meth, batch in (("ibcd", None), ("isega", None), ("is-sgd", 1), ("is-saga", 1), ("is-asgd", None)):
        step = 0.5 / p.L if meth == "is-asgd" else theory.step_size(p, meth, m, tau, batch=batch)
        gc.collect()
        tracemalloc.start()
        run(p, meth, m=m, tau=tau, step=step, iters=3, batch=batch)
        extra = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        state, tables = _state_bytes(p, meth)
        ratio = (data + extra - tables) / (2 * data + state)
        note = f"data {data / 2**20:.1f} MiB, the run holds {extra / 2**20:.1f} MiB at most, state {state / 2**20:.1f} MiB"
        if tables:
            note += f", SAGA tables {tables / 2**20:.1f} MiB (left out)"
        rows.append(Row(f"memory: {meth} peak / (2 data + state)", _size(n, d, m, tau, lm), ratio, "<= 1",
                        ratio <= 1, note))
    return rows


def _case_book(quick: bool, reps: int, root: Path | None = None) -> list[Row]:
    """Execute every chapter (in memory) and time it."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    root = Path(__file__).resolve().parents[1] if root is None else root  # the checkout: benchmarks/ is one down
    chapters = sorted((root / "book").glob("*.ipynb"))
    if not chapters:
        return [Row("book: chapters", str(root / "book"), None, "< 60 s each", None, "no chapters found")]
    rows, total = [], 0.0
    for path in chapters:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}})
        t0 = time.perf_counter()
        try:
            client.execute()
            note = ""
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:  # report it, go on
            what = f"{exc.ename}: {exc.evalue}" if isinstance(exc, CellExecutionError) else type(exc).__name__
            note = f"failed: {what}"[:160]
        dt = time.perf_counter() - t0
        total += dt
        rows.append(Row(f"book: {path.name} (s)", "", dt, "< 60", dt < 60 and not note, note))
    rows.append(Row("book: all chapters (s)", f"{len(chapters)} chapters", total, "< 240", total < 240))
    return rows


_RUNNERS = {"floor": _case_floor, "reference": _case_reference, "sampling": _case_sampling,
            "memory": _case_memory, "scale": case_scale, "book": _case_book}


# ------------------------------------------------------------------ report
@contextlib.contextmanager
def _blas_threads(threads: int | None):
    """Limit the BLAS threads (threadpoolctl) for the duration, or leave them as configured."""
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        yield


def _machine() -> str:
    """One line on Python, numpy's BLAS (kernel, threads), the OpenBLAS variables and the load."""
    parts = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    try:
        from threadpoolctl import threadpool_info

        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        blas.sort(key=lambda i: "numpy" not in i.get("filepath", ""))  # numpy's own first
        if blas:
            i = blas[0]
            parts.append(f"numpy's BLAS: {i.get('internal_api')} {i.get('version')}, kernel "
                         f"{i.get('architecture')}, {i.get('num_threads')} threads")
    except ImportError:
        pass
    parts.append(", ".join(f"{k}={os.environ[k]}" for k in BLAS_ENV if k in os.environ) or "OPENBLAS_* unset")
    if hasattr(os, "getloadavg"):
        parts.append("load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    return "; ".join(parts)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if v == 0 or 1e-3 <= abs(v) < 1e4:
        return f"{v:.3g}"
    return f"{v:.2e}"


#: the widest line the benchmark prints (a terminal of 120 columns)
WIDTH = 120
#: the most characters of each column before it wraps (the notes go on their own lines)
COLUMN_WIDTHS = {"case": 40, "sizes": 26, "measured": 9, "target": 12, "met": 3, "cpu": 9}


def _wrap(text: str, width: int = WIDTH, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False) or [indent.rstrip()]


def _table(rows: list[Row], extra_col: str | None = None) -> str:
    """The rows as a text table no wider than :data:`WIDTH`: one line per row (its long case and
    sizes wrap inside their columns), its notes below it, indented."""
    head = list(COLUMN_WIDTHS) + ([extra_col] if extra_col else [])
    limits = list(COLUMN_WIDTHS.values()) + ([max(9, len(extra_col))] if extra_col else [])
    body = [[r.case, r.sizes, _fmt(r.measured), r.target, r.verdict(), _fmt(r.cpu)]
            + ([_fmt(r.extra.get(extra_col))] if extra_col else []) for r in rows]
    cells = [[_wrap(c, w) for c, w in zip(x, limits)] for x in [head, *body]]
    widths = [max(len(line) for x in cells for line in x[j]) for j in range(len(head))]
    out = []
    for k, x in enumerate(cells):
        for i in range(max(len(c) for c in x)):
            out.append("  ".join((c[i] if i < len(c) else "").ljust(w) for c, w in zip(x, widths)).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
        elif rows[k - 1].note:
            out += _wrap(rows[k - 1].note, indent="    ")
    return "\n".join(out)


def status(rows: list[Row]) -> int:
    """The exit status of ``python -m benchmarks``: 1 when a judged row missed its target, else 0.

    With ``--quick`` only the correctness checks are judged (the other rows' ``met`` is None), so a
    quick run fails only when the iterates disagree or sparse data were densified.
    """
    return 1 if any(r.met is False for r in rows) else 0


def _without_blas_env(args) -> tuple[dict, str] | None:
    """Re-run the floor case with the OpenBLAS variables unset, in a child process.

    Returns the child's ratios by (case, sizes) and its machine line, or None
    when neither variable is set.
    """
    if not any(k in os.environ for k in BLAS_ENV):
        return None
    env = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, "-m", "benchmarks", "--only", "floor", "--reps", str(args.reps), "--json", str(out)]
        if args.quick:
            cmd.append("--quick")
        if args.threads is not None:
            cmd += ["--threads", str(args.threads)]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        got = json.loads(out.read_text())
    return {(r["case"], r["sizes"]): r["measured"] for r in got["rows"]}, got["machine"]


def main(argv=None) -> list[Row]:
    """Run the benchmark (``python -m benchmarks --help``), print its table and return its rows."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description="Performance benchmark of blockcd (see the module docstring).")
    parser.add_argument("--quick", action="store_true", help="reduced sizes, a few seconds, no book")
    parser.add_argument("--only", nargs="+", choices=CASES, metavar="CASE", help=f"cases to run, of {CASES}")
    parser.add_argument("--reps", type=int, default=None, help="repetitions of each timing (default 7; quick 3)")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads for the whole benchmark (default: as configured)")
    parser.add_argument("--json", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reps is None:
        args.reps = 3 if args.quick else 7
    if args.reps < 1:
        parser.error("--reps must be >= 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    cases = args.only or [c for c in CASES if not (args.quick and c == "book")]
    with _blas_threads(args.threads):
        start = _machine()
        print("\n".join(_wrap(start)), flush=True)
        rows: list[Row] = []
        for case in cases:
            t0 = time.perf_counter()
            rows += _RUNNERS[case](args.quick, args.reps)
            print(f"[{case}: {time.perf_counter() - t0:.1f} s]", file=sys.stderr, flush=True)
        machine = _machine()
    extra_col = None
    if "floor" in cases and args.json is None:
        unset = _without_blas_env(args)
        if unset is not None:
            extra_col = "OPENBLAS_* unset"
            for r in rows:
                r.extra[extra_col] = unset[0].get((r.case, r.sizes))
            print("\n".join(_wrap(f"column '{extra_col}': the floor case re-run in a child process: {unset[1]}")))
    if args.quick:
        for r in rows:
            if not r.check:
                r.met = None
    if args.json is not None:
        args.json.write_text(json.dumps({"machine": start, "rows": [r.__dict__ for r in rows]}))
    if args.quick:
        print("\n".join(_wrap(QUICK_NOTE)))
    print(_table(rows, extra_col))
    print("\n".join(_wrap(
        f"measured: ratio of wall-clock medians over {args.reps} interleaved repetitions; cpu: the same from "
        "CPU time, which is steadier when other processes load the machine but counts every BLAS thread (it "
        "exceeds the wall ratio when the floor ran on fewer threads); '-': not measured, when a per-iteration "
        "time (a difference of two runs) came out at or below zero, lost in the noise or below the clock's "
        f"resolution; at the end: {machine.split('; ')[-1]}")))
    verdict = status(rows)
    judged = sum(r.met is not None for r in rows)
    missed = sum(r.met is False for r in rows)
    print(f"{judged} rows judged, {missed} missed: exit status {verdict}")
    return rows


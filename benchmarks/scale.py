"""The benchmark's ``scale`` case: an IBCD iteration at tau = m/n against two floors, at large sizes.

Workers that send tau of m blocks need only those blocks' partial
derivatives (the paper's Sec. 2.2): the margins A_i x take one pass over a
worker's rows, the transposed product only the sent columns.  Timed in the
same interleaved rounds:

- the **full-gradient floor**: the n local gradients in the cheapest full form
  (dense: one BLAS product for the margins, one batched product for the
  per-worker sums; sparse: one CSR product for the margins and one for the n
  weighted row sums, kept sparse);
- the **partial floor**: the margins plus the sent columns only (the entries
  an iteration must compute), with the block choices given;
- the library's IBCD iteration: sampling, the partial gradients, the master's
  sum and step, recording ||x - x*||^2 (``run(..., gap=False)``); the note
  gives it also with f(x^k) recorded, an evaluation no worker performs, which
  on logistic data costs a pass of ``log(1 + e^z)`` over all rows.

Cases: dense ridge, n = 100, d = m = 1000, 200 rows per worker; sparse
logistic, N = 200,000 rows, d = 20,000, 10 non-zeros per row, n = 100 at
(m, tau) = (d, 200) and (1000, 10), and the same data over n = 1000 workers at
(d, 20) and (1000, 1).  The sparse cases run with one BLAS thread: their floors
are scipy's CSR products, which use one thread, and the iteration's only BLAS
calls are length-d dots (||x - x*||^2, the step), where a second thread adds
only a hand-off (on a loaded 2-core machine, 35 ms per dot at d = 20,000
against 0.02 ms on one thread).  Targets: iteration / full floor <= 0.75 (dense) and
<= 0.9 (sparse), iteration / partial floor <= 1.3.  Memory per worker: the
peak a run allocates beyond the data (``tracemalloc``), over n.
"""

from __future__ import annotations

import math
import tracemalloc
from functools import partial

import numpy as np
import scipy.sparse as sp

from blockcd import problems
from blockcd.blocks import BlockSampler, partition
from blockcd.messages import Sent
from blockcd.methods import run
from blockcd.oracle import dphi

from .timing import Row, _interleaved, _repeat, at_most


def _sparse_logistic(N: int, d: int, per_row: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(N), per_row)
    A = sp.csr_matrix((rng.standard_normal(N * per_row), (rows, rng.integers(0, d, N * per_row))), shape=(N, d))
    A.sum_duplicates()
    y = A @ rng.standard_normal(d) + 0.5 * rng.standard_normal(N) > 0
    return problems.logistic(A, y, n_workers=n, lam=1e-3, split="iid", name=f"bench sparse logistic n={n}")


def _step(p) -> float:
    """A small safe step without the theory's constants (the local L_i of 100 workers at d = 20,000 take
    minutes): 1 / (2 (m/tau) max ||a_j||^2 phi''), below every step the theory allows."""
    return 1.0 / (2.0 * p.d * (0.25 * float(p.row_norms2.max()) + p.lam))


def _full_floor(W):
    """The n local gradients at x, cheapest full form (the margins, then the per-worker sums)."""
    if W.layout == "padded":
        def full(x):
            return W.row_sums(W.w * dphi(W.loss, W.margins(x), W.t))
        return full
    N = W.A2.shape[0]
    Q = sp.csr_matrix((np.ones(N), np.arange(N), W.offsets), shape=(W.n, N))

    def full_sparse(x):
        Q.data = W.w * dphi(W.loss, W.margins(x), W.t)  # the library's phi'(z), as in the partial floor
        return Q @ W.A2                                   # (n, d), kept sparse
    return full_sparse


def _partial_floor(W, pairs):
    """The margins, then only the sent entries (who[p], cols[p]), with the choices of successive iterations
    (the same choices every time would find the data they touch in cache)."""
    state = {"k": 0}

    def part(x):
        who, cols = pairs[state["k"] % len(pairs)]
        state["k"] += 1
        return W.partial_grads(x, who, cols)
    return part


def _pairs(p, m, tau, K, seed=0):
    sampler, blocks = BlockSampler(p.n, m, tau, seed), partition(p.d, m)
    sels = [Sent(blocks, None, False, True, sampler.choices(k)) for k in range(K)]
    return [(s.who, s.cols) for s in sels]


def _memory_per_worker(p, m, tau, step) -> float:
    tracemalloc.start()
    run(p, "ibcd", m=m, tau=tau, step=step, iters=3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / p.n


def _case(p, m, tau, reps, K, label, target, step=None, threads=None):
    from . import _blas_threads

    W = p.workers()
    x = np.random.default_rng(1).standard_normal(p.d) / math.sqrt(p.d)
    step = _step(p) if step is None else step
    fns = {"full": partial(_repeat, _full_floor(W), x, K),
           "partial": partial(_repeat, _partial_floor(W, _pairs(p, m, tau, K)), x, K),
           "ibcd 1": partial(run, p, "ibcd", m=m, tau=tau, step=step, iters=1, gap=False),
           "ibcd": partial(run, p, "ibcd", m=m, tau=tau, step=step, iters=K + 1, gap=False),
           "ibcd+f 1": partial(run, p, "ibcd", m=m, tau=tau, step=step, iters=1),
           "ibcd+f": partial(run, p, "ibcd", m=m, tau=tau, step=step, iters=K + 1)}
    with _blas_threads(threads):
        fns["ibcd"]()  # warm up (the sparse data's column-major copy is built once)
        T = _interleaved(fns, reps)
    T.scale("full", 1 / K)
    T.scale("partial", 1 / K)
    it = T.per_iteration("ibcd 1", "ibcd", K)
    it_f = T.per_iteration("ibcd+f 1", "ibcd+f", K)
    size = f"{label} m={m} tau={tau}"
    mem = _memory_per_worker(p, m, tau, step)
    data = p.data_nbytes / p.n
    note = ("1 BLAS thread; " if threads == 1 else "") + (f"iteration {T.median(it) * 1e3:.1f} ms ({T.median(it_f) * 1e3:.1f} ms recording f), full floor {T.median('full') * 1e3:.1f} ms, partial floor "
            f"{T.median('partial') * 1e3:.1f} ms; per worker: data {data / 2**20:.2f} MiB, run peak "
            f"{mem / 2**20:.2f} MiB")
    wall, cpu = T.ratio(it, "full")
    rows = [Row("scale: ibcd iteration / full-gradient floor", size, wall, f"<= {target}", at_most(wall, target), note,
                cpu=cpu)]
    wall, cpu = T.ratio(it, "partial")
    rows.append(Row("scale: ibcd iteration / partial floor", size, wall, "<= 1.3", at_most(wall, 1.3), cpu=cpu))
    return rows


def case_scale(quick: bool, reps: int) -> list[Row]:
    """The ``scale`` case (see the module docstring); ``quick`` shrinks every size by 10 to 100."""
    from . import _dense_ridge

    rows = []
    K = 3 if quick else 5
    n, lm, d = (20, 50, 400) if quick else (100, 200, 1000)
    p = _dense_ridge(n, lm, d)
    rows += _case(p, d, d // n, reps, K, f"dense ridge n={n} d={d} l={lm}", 0.75, step=0.5 / p.L)
    N, d = (4_000, 800) if quick else (200_000, 20_000)
    for n in (10, 100) if quick else (100, 1000):
        p = _sparse_logistic(N, d, 10, n)
        p.x_star, p.f_star  # noqa: B018 - evaluation constants, outside the timings
        for m in (d, d // 20):
            tau = max(1, m // n)
            rows += _case(p, m, tau, reps, K, f"sparse logistic N={N} d={d} n={n}", 0.9, threads=1)
    return rows

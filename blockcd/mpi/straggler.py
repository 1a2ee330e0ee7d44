"""One slow worker, with and without a barrier: synchronous against asynchronous IS-SGD on MPI (chapter 12).

:func:`compare` launches both methods on the same problem, at the same tau, each with its theory's step,
one worker made slow on purpose (``--slow``), and reads from their histories the iterations, the gradients
and the seconds each took to reach an accuracy.  The seconds are the master's, evaluation excluded.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from .. import theory
from .._validate import check_float, check_int, check_seed
from ..history import History
from .cli import build_problem
from .launch import launch, load_measurements


def _first(dist2: np.ndarray, eps: float) -> int | None:
    hit = np.flatnonzero(dist2 <= eps * dist2[0])
    return int(hit[0]) if hit.size else None


def compare(ranks: int = 5, *, slow: float = 0.005, eps: float = 1e-6, m: int = 20, tau: int | None = None,
            rows: int = 40, d: int = 40, batch: int = 4, rounds: int | None = None, arrivals: int | None = None,
            seed: int = 0, wait: float = 600.0, fast: float | None = None) -> dict:
    """Run synchronous and asynchronous IS-SGD on ``ranks`` MPI ranks, the last worker sleeping ``slow`` s per
    gradient, on an interpolating synthetic ridge problem (both reach x*), and measure each to ``eps``.

    Parameters
    ----------
    ranks : int >= 3 (one master and n = ranks - 1 >= 2 workers)
    slow : float >= 0, the straggler's sleep before each gradient (seconds)
    eps : float in (0, 1), the accuracy ||x - x*||^2 <= eps ||x0 - x*||^2
    m, tau : blocks and blocks sent (default tau = m/n, at least 1)
    rows, d, batch : rows per worker, dimension, minibatch size
    rounds : synchronous rounds run (default: 1.5 times the theory's bound to eps)
    arrivals : messages the asynchronous run applies (default 4 n rounds: its stale messages are worth less)
    seed : the data and the runs' seed
    fast : float >= 0, the other workers' sleep before each gradient (default ``slow / 10``): the
        asynchronous run's delays then follow the ratio of the speeds, not how fast this machine
        computes a gradient (with no sleep, an idle machine's fast workers send some 100 messages
        while the straggler computes one, and the stale messages stall IS-SGD above eps)

    Returns
    -------
    dict with, for ``'sync'`` and ``'async'``: ``iterations`` (rounds, or messages applied) and
    ``gradients`` (computed by the workers) to eps, ``seconds`` to eps and ``total_seconds``, ``step``;
    for ``'async'`` also ``max_delay``, ``messages`` per worker and ``history`` (its History, whose
    ``arrivals`` replay it in :func:`blockcd.run`); and ``problem``, ``n``, ``m``, ``tau``, ``slow``.
    A method that does not reach eps has None for its counts.
    """
    ranks = check_int("ranks", ranks, 3)
    slow = check_float("slow", slow, nonnegative=True)
    eps = check_float("eps", eps, positive=True)
    if eps >= 1:
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    seed = check_seed("seed", seed)
    fast = slow / 10 if fast is None else check_float("fast", fast, nonnegative=True)
    n = ranks - 1
    tau = max(1, m // n) if tau is None else tau
    opts = {"problem": "synthetic", "rows_per_worker": rows, "d": d, "interpolating": True, "cond": 5,
            "data_seed": seed}
    problem = build_problem("synthetic", n, **{k: v for k, v in opts.items() if k != "problem"})
    if rounds is None:
        rounds = int(1.5 * theory.predicted_iterations(problem, "is-sgd", m, tau, eps, batch=batch)) + 1
    rounds = check_int("rounds", rounds, 1)
    arrivals = 4 * n * rounds if arrivals is None else check_int("arrivals", arrivals, 1)
    out = {"problem": problem, "n": n, "m": m, "tau": tau, "slow": slow, "fast": fast}
    with tempfile.TemporaryDirectory() as tmp:
        common = dict(opts, m=m, tau=tau, batch=batch, seed=seed, quiet=True, timeout=60.0,
                      slow=[f"{r}:{fast}" for r in range(1, n) if fast] + [f"{n}:{slow}"])
        f_sync, f_async = Path(tmp) / "sync.npz", Path(tmp) / "async.npz"
        launch(ranks, wait=wait, out=f_sync, method="is-sgd", iters=rounds, **common)
        launch(ranks, wait=wait, out=f_async, method="is-sgd-async", iters=arrivals, **common)
        hs, meas = History.load(f_sync), load_measurements(f_sync)
        ha = History.load(f_async)
        with np.load(f_async, allow_pickle=False) as z:
            a_eval, messages = z["mpi_eval"], z["mpi_messages"]
    # synchronous: the master's seconds per round (compute + communication; evaluation is timed apart)
    per_round = meas.compute[0] + meas.comm[0]
    t_sync = np.concatenate(([0.0], np.cumsum(per_round)))
    k = _first(hs.dist2, eps)
    out["sync"] = {"iterations": k, "gradients": None if k is None else n * k,
                   "seconds": None if k is None else float(t_sync[k]), "total_seconds": float(t_sync[-1]),
                   "step": hs.step}
    # asynchronous: the time of each arrival, less the master's evaluations before it
    t_async = np.concatenate(([0.0], ha.times - np.cumsum(a_eval[: ha.times.size])))
    k = _first(ha.dist2, eps)
    out["async"] = {"iterations": k, "gradients": k, "seconds": None if k is None else float(t_async[k]),
                    "total_seconds": float(t_async[-1]), "step": ha.step, "max_delay": int(ha.delays.max()),
                    "messages": messages.astype(int), "history": ha}
    return out

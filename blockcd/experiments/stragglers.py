"""Chapter 12's experiment: asynchronous IS-SGD behind one straggler, against Theorem 9.

Read next: the asynchronous engine it runs, :mod:`blockcd.asynchronous`.
"""

from __future__ import annotations

from .._validate import check_float, check_int, check_seed
from ..asynchronous import Speeds, epoch_rate
from ..methods import run

__all__ = ["straggler_sweep"]


def straggler_sweep(problem, slow_speeds, *, m: int, tau: int, batch: int | None = None, iters: int,
                    eps: float, jitter: float = 0.25, seed: int = 0) -> list[dict]:
    """Asynchronous IS-SGD behind one straggler of each speed in ``slow_speeds`` (chapter 12's Theorem 9 check).

    For each speed s the last of the problem's n workers has speed s and the others speed 1 in the delay
    model :class:`~blockcd.asynchronous.Speeds` (``jitter``, seed ``seed``); the run takes Theorem 9's step with every delay at
    most the model's bound M (:meth:`~blockcd.asynchronous.Speeds.max_delay`) and measures

    - the contraction per epoch of M arrivals, :func:`~blockcd.asynchronous.epoch_rate`, and per arrival, (epoch rate)^(1/M);
    - the arrivals K to ``||x - x*||^2 <= eps ||x^0 - x*||^2`` and the model time they took.

    Parameters
    ----------
    problem : Problem
        The problem (``problem.n`` workers, at least 2).
    slow_speeds : sequence of float
        The straggler's speeds, each in (0, 1].
    m, tau, batch : int
        Blocks, blocks per message and minibatch size, as for :func:`blockcd.run`.
    iters : int
        Arrivals per run, >= 1.
    eps : float
        The accuracy, > 0.
    jitter : float
        The delay model's jitter, in [0, 1).
    seed : int
        The run's and the delay model's seed, >= 0.

    Returns
    -------
    list of dict
        One per speed, in order: ``speed``, ``M``, ``largest_delay``, ``epoch_rate``, ``per_arrival``,
        ``arrivals`` (K, or None if not reached), ``time`` (model time of arrival K, or None) and the run's
        ``history``.
    """
    if not hasattr(problem, "n") or int(problem.n) < 2:
        raise ValueError("problem must be a Problem with at least 2 workers (one of them the straggler)")
    speeds = [check_float("slow_speeds[]", s, positive=True, hi=1.0) for s in slow_speeds]
    if not speeds:
        raise ValueError("slow_speeds must hold at least one speed in (0, 1]")
    iters = check_int("iters", iters, 1)
    eps = check_float("eps", eps, positive=True)
    seed = check_seed("seed", seed)
    n = int(problem.n)
    rows = []
    for s in speeds:
        model = Speeds((1.0,) * (n - 1) + (s,), jitter=jitter, seed=seed)
        M = model.max_delay(n)
        h = run(problem, "is-sgd-async", m=m, tau=tau, batch=batch, iters=iters, seed=seed, delays=model,
                max_delay=M)
        rate = epoch_rate(h, M)
        k = h.iters_to(eps)
        rows.append({"speed": s, "M": M, "largest_delay": int(h.delays.max()), "epoch_rate": rate,
                     "per_arrival": rate ** (1 / M), "arrivals": k,
                     "time": None if k is None else float(h.times[k - 1]), "history": h})
    return rows

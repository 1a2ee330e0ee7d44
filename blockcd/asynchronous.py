"""Asynchronous IS-SGD (the paper's Algorithm 8): arrival orders, delays and the simulator.

There are no rounds: iteration k applies arrival k, a message from worker ``i_k``, computed on
the point the master last sent that worker.  Everything a run does follows from the *arrival
record* (i_0, i_1, ...): the delay delta_k of arrival k (chapter 12) is the number of messages the
master applied since worker i_k received its point, and each worker's j-th message uses its
blocks and minibatch of iteration j, a function of (seed, worker, j) alone.  So a run is
reproduced after the fact from its record (:func:`simulate` with ``delays=record``): the MPI
ranks (``python -m blockcd.mpi --method is-sgd-async``) save theirs in the History.

:class:`Speeds` is the seeded delay model of the simulator: each worker takes
(1 + jitter u)/speed seconds per message, u uniform in [-1, 1], which bounds every delay by
:meth:`Speeds.max_delay` (the M of the paper's Theorem 9).  The update rule itself is
:class:`blockcd.rules.ISSGDAsync`; :func:`blockcd.run` dispatches here.  Chapter 12, whose
experiment behind one straggler is :func:`blockcd.experiments.straggler_sweep`.  Read next: the
MPI ranks that run the same messages (:mod:`blockcd.mpi`).
"""

from __future__ import annotations

import heapq
import math
import numbers
from dataclasses import dataclass

import numpy as np

from ._validate import check_float, check_int, check_seed
from .history import BYTES_PER_NUMBER, History
from .messages import Selection

__all__ = ["Speeds", "arrival_delays", "check_record", "epoch_rate", "simulate"]


@dataclass(frozen=True)
class Speeds:
    """The seeded delay model: worker i takes ``(1 + jitter u) / speeds[i]`` time units per message.

    Parameters
    ----------
    speeds : sequence of n floats > 0 or None
        Relative speeds (None: all 1).  A straggler has a small speed: 0.25 is four times slower.
    jitter : float in [0, 1)
        Spread of each compute time: u is uniform in [-1, 1], drawn from (seed, worker, message).
    seed : int >= 0
        Seed of the compute times (apart from the run's seed, which draws blocks and minibatches).
    """

    speeds: tuple | None = None
    jitter: float = 0.25
    seed: int = 0

    def __post_init__(self):
        if self.speeds is not None:
            v = np.asarray(self.speeds, dtype=float) if _reals(self.speeds) else None
            if v is None or v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)) or np.any(v <= 0):
                raise ValueError(f"speeds must be a sequence of finite floats > 0 (one per worker), "
                                 f"got {self.speeds!r}")
            object.__setattr__(self, "speeds", tuple(float(x) for x in v))
        jitter = check_float("jitter", self.jitter, nonnegative=True)
        if jitter >= 1:
            raise ValueError(f"jitter must be in [0, 1) (a compute time stays > 0), got {jitter}")
        object.__setattr__(self, "jitter", jitter)
        object.__setattr__(self, "seed", check_seed("seed", self.seed))

    def _speeds(self, n: int) -> np.ndarray:
        if self.speeds is None:
            return np.ones(n)
        if len(self.speeds) != n:
            raise ValueError(f"speeds has {len(self.speeds)} entries, the problem has n = {n} workers")
        return np.array(self.speeds)

    def max_delay(self, n: int) -> int:
        r"""The bound M on every delay: :math:`\max_i \sum_{j \ne i} (\lfloor T^{max}_i / T^{min}_j \rfloor + 1)`.

        While worker i computes (at most :math:`T^{max}_i = (1 + jitter)/s_i`), worker j, whose messages
        are at least :math:`T^{min}_j = (1 - jitter)/s_j` apart, delivers at most
        :math:`\lfloor T^{max}_i/T^{min}_j \rfloor + 1` of them; the delay counts those arrivals.
        """
        n = check_int("n", n, 1)
        s = self._speeds(n)
        tmax, tmin = (1 + self.jitter) / s, (1 - self.jitter) / s
        counts = np.floor(tmax[:, None] / tmin[None, :] + 1e-12) + 1.0
        np.fill_diagonal(counts, 0.0)
        return int(counts.sum(axis=1).max())

    def durations(self, n: int, count: int) -> np.ndarray:
        """(n, count): worker i's compute time for each of its first ``count`` messages, the draws that
        :meth:`arrivals` and :meth:`round_times` use."""
        n = check_int("n", n, 1)
        count = check_int("count", count, 0)
        s = self._speeds(n)
        u = np.stack([np.random.default_rng([self.seed, 104729, i]).uniform(-1.0, 1.0, size=count)
                      for i in range(n)])
        return (1.0 + self.jitter * u) / s[:, None]

    def round_times(self, n: int, rounds: int) -> np.ndarray:
        """The synchronous counterpart: round k ends when the slowest worker's k-th computation does, so its
        length is max_i W_i(k), W_i(k) that computation's time; returns the (rounds,) end times."""
        return np.cumsum(self.durations(n, rounds).max(axis=0))

    def arrivals(self, n: int, iters: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``iters`` arrivals: (worker of each, its time), by an event simulation.

        Every worker starts at time 0 on x0; after each message it starts the next at once (the master
        answers instantly).  Ties go to the lower worker index.
        """
        n = check_int("n", n, 1)
        iters = check_int("iters", iters, 0)
        s = self._speeds(n)
        rngs = [np.random.default_rng([self.seed, 104729, i]) for i in range(n)]
        chunks = [np.empty(0) for _ in range(n)]
        used = np.zeros(n, dtype=np.int64)

        def duration(i: int) -> float:
            if used[i] == chunks[i].size:
                chunks[i] = rngs[i].uniform(-1.0, 1.0, size=max(64, 2 * chunks[i].size))
                used[i] = 0
            u = chunks[i][used[i]]
            used[i] += 1
            return (1.0 + self.jitter * u) / s[i]

        heap = [(duration(i), i) for i in range(n)]
        heapq.heapify(heap)
        workers = np.empty(iters, dtype=np.int64)
        times = np.empty(iters)
        for t in range(iters):
            when, i = heapq.heappop(heap)
            workers[t], times[t] = i, when
            heapq.heappush(heap, (when + duration(i), i))
        return workers, times


def _reals(x) -> bool:
    try:
        return all(isinstance(v, (numbers.Real, np.number)) and not isinstance(v, (bool, np.bool_)) for v in x)
    except TypeError:
        return False


def arrival_delays(record, n: int) -> np.ndarray:
    """The delay of each arrival of ``record`` (the worker of each arrival): delta_k = k - s, where worker i_k
    received its point just after arrival s - 1 (s = 0: it started on x0)."""
    record = np.asarray(record)
    since = np.zeros(n, dtype=np.int64)
    out = np.empty(record.size, dtype=np.int64)
    for t, i in enumerate(record):
        out[t] = t - since[i]
        since[i] = t + 1
    return out


def check_record(record, n: int, iters: int, max_delay: int | None = None) -> np.ndarray:
    """Validate an arrival record: at least ``iters`` integers in [0, n - 1], delays at most ``max_delay``."""
    arr = np.asarray(record)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise TypeError(f"delays must be a Speeds model or a 1-D integer array of the worker of each arrival "
                        f"(an arrival record), got {type(record).__name__} of shape {np.shape(record)}")
    if arr.size < iters:
        raise ValueError(f"the arrival record has {arr.size} arrivals, fewer than iters = {iters}")
    arr = arr[:iters].astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= n))
    if bad.size:
        t = int(bad[0])
        raise ValueError(f"arrival {t} of the record is from worker {arr[t]}; workers are 0..{n - 1}")
    if max_delay is not None:
        d = arrival_delays(arr, n)
        over = np.flatnonzero(d > max_delay)
        if over.size:
            t = int(over[0])
            raise ValueError(f"arrival {t} (worker {arr[t]}) has delay {d[t]}, beyond max_delay = {max_delay}: "
                             "the record does not satisfy the delay bound M of Theorem 9")
    return arr


def schedule(delays, n: int, iters: int, seed: int, max_delay: int | None):
    """The arrival record of a run: drawn from a :class:`Speeds` model (None: ``Speeds(seed=seed)``) or a
    given record, checked; returns (record, model times or None, M or None)."""
    if max_delay is not None:
        max_delay = check_int("max_delay", max_delay, 0)
    if delays is None:
        delays = Speeds(seed=seed)
    if isinstance(delays, Speeds):
        record, times = delays.arrivals(n, iters)
        M = delays.max_delay(n)
        if max_delay is not None and M > max_delay:
            raise ValueError(f"the delay model bounds delays by M = {M}, beyond max_delay = {max_delay}")
        return record, times, M
    return check_record(delays, n, iters, max_delay), None, max_delay


def simulate(s, record: np.ndarray, times=None) -> History:
    """Run asynchronous IS-SGD (a validated :class:`blockcd.arguments.Setup`) along an arrival record.

    One arrival per iteration: worker i_t's IS-SGD message at the point it holds, its j-th (blocks and
    minibatch of (seed, i_t, j)), applied by :meth:`blockcd.rules.ISSGDAsync.arrive`.  The History also
    holds ``arrivals`` (the record), ``delays`` and, from a :class:`Speeds` model, ``times``.
    """
    p, rule, blocks = s.problem, s.method.rule, s.blocks
    if rule.own_blocks:
        raise ValueError(f"{s.method.name!r} chooses its own blocks (own_blocks), which the asynchronous engine does "
                         "not support: it regenerates every message's blocks from the seed")
    n = p.n
    workers = [p.worker(i) for i in range(n)]
    sampler, batches, rec = s.sampler(), s.minibatches(), s.recorder()
    state = rule.start(s)
    count = np.zeros(n, dtype=np.int64)
    scale = s.m / s.tau
    mask = np.zeros((n, s.m), dtype=bool)
    for t in range(s.iters):
        if rec.point(t, rule.iterate(state)):
            break
        i = int(record[t])
        chosen = sampler.worker_blocks(int(count[i]), i)
        coords = None if chosen.size == s.m else blocks.coords(chosen)
        idx = None if batches is None else batches.worker(int(count[i]), i)
        values, _ = rule.send(workers[i], None, state.Z[i], idx, Selection(coords))
        mask[i, chosen] = True
        rec.sent(t, mask)
        mask[i, chosen] = False
        g = s.step_at(t)
        rec.stepped(t, g)
        rule.arrive(state, i, coords, values, scale, g)
        count[i] += 1
    else:
        rec.point(s.iters, rule.iterate(state))
    return finish(rec, rule.iterate(state), s.seed, record, times, p)


def finish(rec, x, seed, record, times, problem, **measured) -> History:
    """The History of an asynchronous run: one d-vector down per arrival (to one of n workers), the record."""
    it = rec.last
    if "bytes_down" not in measured:
        measured["bytes_down"] = np.arange(it + 1) * (problem.d * BYTES_PER_NUMBER / problem.n)
    h = rec.history(x, seed, **measured)
    h.arrivals = np.asarray(record[:it], dtype=np.int64).copy()
    h.delays = arrival_delays(h.arrivals, problem.n)
    h.times = None if times is None else np.asarray(times[:it], dtype=float).copy()
    return h


def epoch_rate(h: History, M: int) -> float:
    """The measured contraction of ||x - x*||^2 per epoch of M arrivals: the geometric mean of
    dist2[(e+1)M]/dist2[eM] over the epochs recorded (Theorem 9's rate is per epoch, floor(k/M))."""
    M = check_int("M", M, 1)
    e = h.dist2[::M]
    if e.size < 2:
        raise ValueError(f"the run has {h.iters} iterations, less than one epoch of M = {M}")
    return float(math.exp(np.mean(np.log(e[1:] / e[:-1]))))

"""The simulator: ``run``, every method with all n workers as arrays.

Each iteration the simulator asks the method's rule (:mod:`blockcd.rules`)
for what all n workers send at once: the oracle is ``problem.workers()``
(stacked local data, answers of shape (n, d)), the block choice one (n, m)
mask from :class:`blockcd.blocks.BlockSampler`, and the master's sum
sum_i P_{S_i} D_i one masked reduction (:class:`Sent`).  No Python loop runs
over workers.  What was sent is counted from the masks actually used
(:class:`blockcd.history.Recorder`).  The update rules live in
:mod:`blockcd.rules`, the names in :mod:`blockcd.registry`, the step sizes in
:mod:`blockcd.theory`; a per-worker loop over the same rules is
:mod:`blockcd.reference`.

With tau = m every mask is all-ones, the scale m/tau is exactly 1, and each
method is its dense (non-sparsified) parent, bit for bit.
"""

from __future__ import annotations

import collections
import math
import numbers
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import registry, theory
from ._validate import check_choice, check_float, check_int, check_seed, check_vector
from .blocks import (
    BernoulliSampler,
    Blocks,
    BlockSampler,
    ImportanceSampler,
    Minibatches,
    SharedRows,
    partition,
)
from .history import BLOWUP, BYTES_PER_NUMBER, DivergenceError, History, Recorder
from .problems import Problem
from .rules import Received

__all__ = ["ALIASES", "BLOWUP", "BYTES_PER_NUMBER", "METHODS", "DivergenceError", "History", "Partial", "Sent",
           "Setup", "run", "setup"]

METHODS = registry.METHODS
ALIASES = registry.ALIASES


@dataclass
class Setup:
    """A run's validated arguments, shared by the simulator, the reference and MPI."""

    problem: Problem
    method: registry.Method
    m: int
    tau: int
    step: float
    iters: int
    seed: int
    sampling: str
    batch: int | None
    x0: np.ndarray
    send_indices: bool
    until: float | None
    gap: bool = True
    #: a callable k -> step (None: the constant ``step``); ``step`` is then its value at k = 0
    schedule: object = None
    #: (a, c) of ``step='decreasing'``: the History also records f at the weighted average (None: not)
    average: tuple[float, float] | None = None

    def step_at(self, k: int) -> float:
        """The step of iteration k: the constant ``step``, or the schedule's value, checked (finite, > 0)."""
        if self.schedule is None:
            return self.step
        return _checked_step(self.schedule(k), k)

    @cached_property
    def blocks(self) -> Blocks:
        """The partition of the ``d`` coordinates into ``m`` blocks."""
        return partition(self.problem.d, self.m)

    def sampler(self) -> BlockSampler | BernoulliSampler:
        """A fresh block sampler: the same seed gives every engine the same choices.

        For a Bernoulli method (IBGD) each worker sends all m blocks with probability tau/m, or none.
        """
        if self.method.bernoulli:
            return BernoulliSampler(self.problem.n, self.m, self.tau / self.m, self.seed)
        if self.sampling == "importance":  # coordinate descent: block j with probability p_j, the same for all
            return ImportanceSampler(self.problem.n, theory.cd_probabilities(self.problem, self.m, self.tau),
                                     self.seed)
        return BlockSampler(self.problem.n, self.m, self.tau, self.seed, self.sampling)

    def minibatches(self) -> Minibatches | SharedRows | None:
        """A fresh minibatch stream for the stochastic methods; ``None`` for the others (and for IS-ASGD
        without ``batch``: full local gradients).

        For shared-data ISAGA: n distinct functions of the N per round (:class:`blockcd.blocks.SharedRows`).
        """
        if self.method.shared_data:
            return SharedRows(self.problem.N, self.problem.n, self.seed)
        if self.method.minibatch and self.batch is not None:
            return Minibatches(self.problem.sizes, self.batch, self.seed)
        return None

    def recorder(self) -> Recorder:
        """A recorder of this run's history (suboptimality, gradient norm, blocks sent)."""
        return Recorder(self.problem, method=self.method.name, step=self.step, blocks=self.blocks, tau=self.tau,
                        iters=self.iters, sampling=self.sampling, batch=self.batch,
                        send_indices=self.send_indices, until=self.until, gap=self.gap,
                        counted=self.method.bernoulli or self.method.asynchronous or self.sampling == "importance",
                        schedule=self.schedule is not None,
                        average=self.average)


def setup(problem, method, *, m, tau, step=None, iters, seed=0, sampling=None, batch=None, x0=None,
          send_indices=False, until=None, gap=True, theory_step=True) -> Setup:
    """Validate the arguments of ``run`` once (names and ranges as there) and take the theory's step.

    With ``theory_step=False`` a missing step stays None (an MPI worker, which
    has no use for it, skips the problem's constants).
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a blockcd Problem, got {type(problem).__name__}")
    spec = registry.get(method)
    if problem.reg is not None and not spec.prox:
        takes = _listed(e.name for e in registry.REGISTRY.values() if e.prox)
        raise ValueError(f"{spec.name!r} does not take a regulariser (the problem has reg = {problem.reg!r}): its "
                         f"theory does not cover R; the methods that accept one (a prox step): {takes}")
    if spec.shared_data:
        if not problem.shared_data:
            raise ValueError(f"{spec.name!r} needs shared data: every worker reads all N functions; build the "
                             f"problem with split='identical' (alias 'shared'), got split = {problem.split!r}")
        if problem.n > problem.N:
            raise ValueError(f"{spec.name!r} draws n distinct functions of the N per round: n = {problem.n} "
                             f"workers need n <= N = {problem.N}")
    d = problem.d
    m = check_int("m", m, 1, d)
    tau = check_int("tau", tau, 1, m)
    iters = check_int("iters", iters, 1)
    if not problem.convex:
        if not spec.nonconvex:
            takes = _listed(e.name for e in registry.REGISTRY.values() if e.nonconvex)
            raise ValueError(f"{spec.name!r} does not run on a non-convex problem (problem.convex is False): its "
                             f"theory needs convex f and an x*; the methods whose theory covers it: {takes}")
        if until is not None:
            raise ValueError("until stops at ||x^k - x*||^2 <= until ||x^0 - x*||^2, and a non-convex problem has no "
                             "x*: leave until=None (the history records ||grad f(x^k)||^2)")
    seed = check_seed("seed", seed)
    sampling = spec.samplings[0] if sampling is None else check_choice("sampling", sampling, spec.samplings)
    if not isinstance(send_indices, (bool, np.bool_)):
        raise TypeError(f"send_indices must be True or False, got {send_indices!r}")
    if send_indices and spec.bernoulli:
        raise ValueError(f"send_indices does not apply to {spec.name!r}: a worker sends all m blocks or "
                         "nothing, so there are no block indices to send")
    if spec.minibatch:
        if batch is not None:
            batch = check_int("batch", batch, 1, int(problem.sizes.min()))
        elif not spec.full_batch:
            batch = 1
    elif batch is not None:
        takes = _listed(e.name for e in registry.REGISTRY.values() if e.minibatch)
        raise ValueError(f"batch applies to {takes} only, not to {spec.name!r}")
    if until is not None:
        until = check_float("until", until, positive=True)
    if not isinstance(gap, (bool, np.bool_)):
        raise TypeError(f"gap must be True or False, got {gap!r}")
    schedule = average = None
    if isinstance(step, str):
        if step != "decreasing":
            raise ValueError(f"step must be a float > 0, None, 'decreasing' or a callable k -> step, got {step!r}")
        if not spec.decreasing:
            takes = _listed(e.name for e in registry.REGISTRY.values() if e.decreasing)
            raise ValueError(f"step='decreasing' applies to {takes} only, not to {spec.name!r}: the book has no "
                             "decreasing schedule for its theory; pass a callable k -> step instead")
        if sampling != "independent":
            raise ValueError("step='decreasing' is the theory of independent sampling: sampling must be "
                             f"'independent', got {sampling!r}")
        average = theory.decreasing_schedule(problem, m, tau, batch=batch)
        a, c = average
        schedule = _Decreasing(a, c)
    elif callable(step):
        if not spec.schedules:
            takes = _listed(e.name for e in registry.REGISTRY.values() if e.schedules)
            raise ValueError(f"a step schedule (a callable) applies to {takes}, not to {spec.name!r}, whose "
                             "parameters are set once from the step")
        schedule = step
    if schedule is not None:
        step = _checked_step(schedule(0), 0)
    elif step is None and theory_step and not problem.convex:
        if sampling != "independent":
            raise ValueError("the non-convex theory (the paper's Theorem 7) is for independent sampling: pass "
                             f"step= with sampling = {sampling!r}")
        step = theory.nonconvex_step(problem, m, tau, iters)
    elif step is None and theory_step:
        step = theory.step_size(problem, spec.name, m, tau, batch=batch, sampling=sampling)
    elif step is not None:
        if not isinstance(step, (numbers.Real, np.number)) or isinstance(step, (bool, np.bool_)):
            raise TypeError(f"step must be a float > 0, None, 'decreasing' or a callable k -> step, "
                            f"got {type(step).__name__} {step!r}")
        step = check_float("step", step, positive=True)
    x = np.zeros(d) if x0 is None else check_vector("x0", x0, d, "the problem dimension d").copy()
    return Setup(problem, spec, m, tau, step, iters, seed, sampling, batch, x, bool(send_indices), until, bool(gap),
                 schedule, average)


class _Decreasing:
    """The schedule gamma_k = 1/(a + c k) of ``step='decreasing'`` (:func:`blockcd.theory.decreasing_schedule`)."""

    def __init__(self, a: float, c: float):
        self.a, self.c = a, c

    def __call__(self, k: int) -> float:
        return 1.0 / (self.a + self.c * k)

    def __repr__(self) -> str:
        return f"1/({self.a:.4g} + {self.c:.4g} k)"


def _checked_step(value, k: int) -> float:
    """A schedule's step at iteration k as a float; raises naming k unless it is a finite real > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        raise TypeError(f"the step schedule must return a real number, got {type(value).__name__} {value!r} "
                        f"at iteration k = {k}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"the step schedule returned step = {value} at iteration k = {k}; every step must be "
                         "finite and > 0")
    return value


def _listed(names) -> str:
    """'a', 'b' and 'c'."""
    names = [repr(x) for x in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def run(
    problem: Problem,
    method: str,
    *,
    m: int,
    tau: int,
    step: float | str | Callable[[int], float] | None = None,
    iters: int,
    seed: int = 0,
    sampling: str | None = None,
    batch: int | None = None,
    x0=None,
    send_indices: bool = False,
    until: float | None = None,
    gap: bool = True,
    delays=None,
    max_delay: int | None = None,
) -> History:
    r"""Run one method of the book on ``problem`` and record its history.

    Each iteration, worker i forms a local estimate (its full gradient for
    IBCD/ISEGA/IS-ASGD, a b-minibatch gradient for IS-SGD and for IS-ASGD with
    ``batch``, a SAGA estimate for
    IS-SAGA) and sends tau of the m blocks, rescaled by m/tau; the master
    averages and steps.  IBGD's workers send their whole gradient with
    probability q = tau/m, independently, rescaled by 1/q, or nothing;
    isaga-local's send the blocks of a local SAGA estimate (no shift);
    isaga-shared's (every worker reads all N functions: a problem with
    ``split='identical'``, alias ``'shared'``) send the blocks of grad f_j(x) for
    n distinct functions j drawn each round, and the master keeps one SAGA
    table of the N functions, refreshed with each worker's blocks.  On a
    problem with a regulariser R (``reg=``) ISEGA's master takes a prox step;
    the other methods reject such a problem.  ISEGA and IS-SAGA send the difference to a shift h_i
    and both sides overwrite the sent blocks of h_i.  The rules are
    :mod:`blockcd.rules`; :func:`blockcd.reference.run` runs them worker by worker.

    Parameters
    ----------
    problem : Problem
    method : {'ibcd', 'is-sgd', 'isega', 'is-saga', 'is-asgd', 'cd', 'ibgd', 'isaga-local', 'isaga-shared'}
        (aliases: 'gd'/'dense' = 'ibcd', 'sgd', 'saga', 'asgd'; use tau = m for the dense method)
    m : int, 1 <= m <= d
        Number of blocks.
    tau : int, 1 <= tau <= m
        Blocks each worker sends per iteration (IBGD: in expectation; it sends all m with
        probability tau/m).
    step : float > 0, None, 'decreasing' or callable
        Step size (for IS-ASGD, eta).  None takes :func:`blockcd.theory.step_size`; on a non-convex
        problem (IS-SGD only) :func:`blockcd.theory.nonconvex_step` with t = ``iters``, the paper's
        Theorem 7 step for that horizon (chapter 5).
        ``'decreasing'`` (IS-SGD): the theory's schedule gamma_k = 1/(a + c k) of
        :func:`blockcd.theory.decreasing_schedule`; the History then also records
        ``gap_avg``, f at the weighted average of :func:`blockcd.theory.average_weights`
        (chapter 5).  A callable k -> step (every method but IS-ASGD) is called once per
        iteration k = 0, 1, ...; a value that is not a finite real > 0 raises, naming k.
        With a schedule ``History.steps`` holds the steps used and ``History.step`` the first.
    iters : int >= 1
        The most iterations to run.
    seed : int >= 0
        Seeds the block choices and minibatches: worker i's choice at iteration
        k is a function of (seed, i, k) alone.
    sampling : {'independent', 'shared', 'importance'} or None
        None: the method's first (``'independent'``; ``'shared'`` for ``'cd'``).  'independent' only for
        IBGD, isaga-local and isaga-shared; ``'cd'`` (coordinate descent, the same blocks on every
        worker, per-block steps of :func:`blockcd.theory.cd_steps`; its ``step`` multiplies them, default 1)
        takes 'shared' (uniform tau-nice blocks) or 'importance' (block j with probability p_j proportional
        to its smoothness, tau blocks in expectation)
    batch : int or None, 1 <= batch <= min_i l_i
        Minibatch size for IS-SGD, IS-SAGA and isaga-local (default 1), and for IS-ASGD
        (default None: each worker's full local gradient; b rows drawn without replacement
        give the stochastic local gradients of the paper's Algorithm 7, chapter 7).
    x0 : array (d,) or None (zeros)
    send_indices : bool
        Count tau * ceil(log2 m) index bits per worker per iteration, as when
        the master cannot regenerate the choice from the seed (not for IBGD,
        which sends all blocks or none).
    until : float > 0 or None
        Stop at the first iteration k with ``dist2[k] <= until * dist2[0]``
        (or after ``iters``); the history is then an exact prefix of the full run's.
    gap : bool
        Record f(x^k) - f* (default; on a non-convex problem the history records ||grad f(x^k)||^2
        in ``grad2`` instead, and ``dist2`` and ``gap`` are NaN).  ``False`` leaves ``History.gap`` NaN and
        skips evaluating f, which on large problems costs as much as the
        partial gradients of an iteration.
    delays : :class:`blockcd.asynchronous.Speeds`, integer array or None
        ``'is-sgd-async'`` only (the paper's Algorithm 8; iteration k is the k-th message to
        arrive): the seeded delay model that orders the arrivals (None: ``Speeds(seed=seed)``,
        equal speeds), or an arrival record, the worker of each arrival, e.g.
        ``History.arrivals`` of an MPI run, which the run then replays.
    max_delay : int >= 0 or None
        ``'is-sgd-async'``: reject a record (or model) whose delays exceed it (the M of Theorem 9).

    Returns
    -------
    History
    """
    s = setup(problem, method, m=m, tau=tau, step=step, iters=iters, seed=seed, sampling=sampling, batch=batch,
              x0=x0, send_indices=send_indices, until=until, gap=gap)
    if s.method.asynchronous:
        from . import asynchronous

        record, times, _ = asynchronous.schedule(delays, problem.n, s.iters, s.seed, max_delay)
        with np.errstate(over="ignore", invalid="ignore"):
            return asynchronous.simulate(s, record, times)
    if delays is not None or max_delay is not None:
        takes = _listed(e.name for e in registry.REGISTRY.values() if e.asynchronous)
        raise ValueError(f"delays and max_delay apply to {takes} only, not to {s.method.name!r}, whose "
                         "workers all answer every round")
    with np.errstate(over="ignore", invalid="ignore"):
        return _simulate(s)


def _simulate(s: Setup) -> History:
    p, rule, blocks = s.problem, s.method.rule, s.blocks
    n, tau = p.n, s.tau
    o = p.workers()
    sampler, batches, rec = s.sampler(), s.minibatches(), s.recorder()
    scale = (s.m / tau) / n
    indexed = _indexed(blocks, tau, n)
    partial = tau <= PARTIAL_SHARE * s.m and o.entries >= PARTIAL_ENTRIES
    master = rule.start(s)
    step_at = s.step_at
    worker = rule.worker_init(o, s.x0)
    apart = rule.per_worker
    # tau-nice masks are drawn for several iterations at once (the same numbers; fewer calls), with
    # the workers' (n, tau) block indices where Sent reaches the sent entries by index
    ahead = tau < s.m and isinstance(sampler, BlockSampler) and not sampler.few
    chunks = _Chunks(sampler, s.iters, blocks if indexed or partial else None) if ahead else None
    # and the minibatches too (shared-data ISAGA's rows are drawn per iteration)
    rows = None
    if isinstance(batches, Minibatches):
        rows = _Ahead(lambda k, count: (batches.draw_ahead(k, count),), s.iters,
                      max(1, AHEAD_UNIFORMS // (batches.n * batches.stream.width)))
    stop = getattr(_INTERRUPT, "check", None)
    try:
        for k in range(s.iters):
            if stop is not None and k % INTERRUPT_EVERY == 0 and stop():
                raise Interrupted(f"run interrupted at iteration {k}")
            x = rule.point(master)
            idx = rows.at(k)[0] if rows is not None else None if batches is None else batches.draw(k)
            mask = chosen = picked = pairs = None
            if ahead:
                mask, picked, pairs = chunks.sent(k)
            elif tau < s.m:  # few blocks of many: the indices, never an (n, m) mask
                chosen, mask = (sampler.choices(k), None) if sampler.few else (None, sampler.masks(k))
            total, fx = rule.send(o, worker, x, idx, Sent(blocks, mask, indexed, partial,
                                                           chosen if picked is None else picked, s.gap, pairs))
            if apart:  # the n messages apart (a Received), with the rows the workers sampled
                total.idx = idx
            if rec.point(k, rule.iterate(master), fx):
                return rec.history(rule.iterate(master), s.seed)
            rec.sent(k, mask, chosen)
            g = step_at(k)
            rec.stepped(k, g)
            rule.step(master, total, scale, g, n)
            rule.prox(master, g)
    finally:
        if chunks is not None:
            chunks.close()
    rec.point(s.iters, rule.iterate(master))
    return rec.history(rule.iterate(master), s.seed)


#: uniforms drawn at once when the simulator draws masks ahead (a few hundred kB)
AHEAD_UNIFORMS = 1 << 15
#: a run draws its masks in a second thread, chunks ahead of the iterations, when an iteration draws
#: at least this many uniforms (below it the hand-over costs more than the drawing) and the process
#: may use two cores; those chunks hold this many uniforms
THREAD_UNIFORMS = 1 << 12
THREAD_CHUNK = 1 << 17


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Ahead:
    """Arrays drawn a chunk of iterations at a time: ``at(k)`` -> iteration k's rows of ``draw(k, count)``.

    ``draw(k, count)`` returns a tuple of arrays (or None) whose first axis is
    the ``count`` iterations from k; chunks are drawn in iteration order, each
    from the state the previous one left, so the values are those of one draw
    per iteration, bit for bit, whether drawn in line or (``threaded``) by one
    worker thread kept two chunks ahead: numpy releases the GIL while it fills
    and compares uniforms, so the drawing overlaps the iterations.
    """

    DEPTH = 2

    def __init__(self, draw, iters: int, per: int, threaded: bool = False):
        self.draw, self.iters, self.per = draw, iters, per
        self.threaded = threaded and iters > per
        self.first, self.chunk = 0, None
        self._pool = None
        if self.threaded:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="blockcd masks")
            self._pending = collections.deque()
            self._ahead = 0
            for _ in range(self.DEPTH):
                self._submit()

    def _draw(self, k: int):
        return self.draw(k, min(self.per, self.iters - k))

    def _submit(self) -> None:
        if self._ahead < self.iters:
            self._pending.append(self._pool.submit(self._draw, self._ahead))
            self._ahead += self.per

    def at(self, k: int) -> tuple:
        if self.chunk is None or k - self.first >= len(self.chunk[0]):
            if self._pool is None:
                self.chunk = self._draw(k)
            else:
                self.chunk = self._pending.popleft().result()
                self._submit()
            self.first = k
        j = k - self.first
        return tuple(None if a is None else a[j] for a in self.chunk)

    def close(self) -> None:
        """Stop drawing (a run that ended early leaves chunks nobody reads)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


class _Chunks(_Ahead):
    """The tau-nice masks of a run (:class:`_Ahead`): ``sent(k)`` -> (mask, chosen, pairs) for :class:`Sent`.

    Drawn by a worker thread when an iteration draws at least THREAD_UNIFORMS
    uniforms and the process may use two cores.  ``blocks``: also each
    iteration's sent entries (``who``, ``cols``) as :class:`Sent` takes them
    (``pairs``), for equal blocks, else the (n, tau) sorted block indices
    (:meth:`BlockSampler.choices_of`); None: the masks only.
    """

    def __init__(self, sampler: BlockSampler, iters: int, blocks: Blocks | None):
        self.sampler, self.blocks = sampler, blocks
        #: equal blocks: the coordinates' width, and the workers of the sent entries (the same every iteration)
        self.width = blocks.d // blocks.m if blocks is not None and blocks.equal else None
        self.who = None if self.width is None else np.repeat(np.arange(sampler.n), sampler.tau * self.width)
        per = sampler.rows * sampler.m
        threaded = per >= THREAD_UNIFORMS and _cores() > 1
        super().__init__(self._masks, iters, max(1, (THREAD_CHUNK if threaded else AHEAD_UNIFORMS) // per), threaded)

    def _masks(self, k: int, count: int):
        masks = self.sampler.masks_ahead(k, count)
        if self.blocks is None:
            return masks, None
        idx = self.sampler.choices_of(masks)
        return masks, (idx if self.width is None else _block_cols(idx.reshape(count, -1), self.width))

    def sent(self, k: int) -> tuple:
        """(mask, chosen, pairs) of iteration ``k`` for :class:`Sent`: the indices or the entries, or neither."""
        mask, got = self.at(k)
        if got is None:
            return mask, None, None
        return (mask, None, (self.who, got)) if self.width is not None else (mask, got, None)


#: a run started by a thread that set ``_INTERRUPT.check`` asks it every this many iterations
INTERRUPT_EVERY = 16
#: per thread: ``check``, a function that returns True when the run under way is no longer wanted
#: (an explorer whose controls moved on); :func:`run` then raises :class:`Interrupted`
_INTERRUPT = threading.local()


class Interrupted(Exception):
    """A run stopped because the thread's ``_INTERRUPT.check`` said it is no longer wanted (never otherwise)."""


def _indexed(blocks, tau: int, n: int) -> bool:
    """Whether to reach the sent entries of a full (n, d) array by index: few, wide blocks of a large array.

    Indexing touches about tau/m of the array but costs more per entry, and
    more per call, than the ``where=`` forms, which pass over all of it; it
    was measured to win with equal blocks of >= 4 coordinates, tau <= m/10
    and n d >= 2^15.
    """
    return blocks.equal and blocks.d >= 4 * blocks.m and 10 * tau <= blocks.m and n * blocks.d >= 1 << 15


#: workers compute only their sent entries when tau <= PARTIAL_SHARE m and the data hold at least
#: PARTIAL_ENTRIES stored entries; below that numpy's per-call cost of gathering the sent columns
#: exceeds the arithmetic saved (measured: 1.1-1.4x slower at n d l <= 40,000, 0.3-0.9x above 10^5)
PARTIAL_SHARE = 0.25
PARTIAL_ENTRIES = 1 << 17


def _block_cols(chosen: np.ndarray, width: int) -> np.ndarray:
    """The coordinates of equal blocks of ``width``: shape (..., k) block indices -> (..., k * width), in order."""
    return ((chosen * width)[..., None] + np.arange(width)).reshape(*chosen.shape[:-1], -1)


class Partial:
    """A worker's local estimate on its sent coordinates only (what :meth:`Sent.grads` computes)."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray):
        self.values = values


class Sent:
    """The entries of the n workers' local estimates sent at one iteration, and their sum at the master.

    Built from the (n, m) block mask (None: tau = m, every block).  The sent
    entries are the pairs (``who``, ``cols``), worker by worker in increasing
    coordinate order.  :meth:`grads` asks the oracle for those entries only
    (for tau <= m/4: the margins, then the sent columns), or for the full
    gradients otherwise.  Each coordinate's sum adds, in worker order and
    starting from zero, the entries of the workers that sent its block:
    ``np.bincount`` over the pairs (which adds in the order given) or, for a
    full (n, d) array, ``where=`` over the block mask repeated to coordinates
    (the same numbers in the same order).
    """

    def __init__(self, blocks, mask, indexed: bool, partial: bool = False, chosen=None, want_f: bool = True,
                 pairs=None):
        self.d, self.mask, self.where, self.who, self.cols = blocks.d, mask, None, None, None
        self.want_f = want_f
        self.n = mask.shape[0] if mask is not None else None if chosen is None else chosen.shape[0]
        sparse = mask is not None or chosen is not None
        self.partial = partial and sparse
        if not sparse:
            return
        if not (indexed or self.partial or mask is None):
            self.where = mask if blocks.m == blocks.d else np.repeat(mask, blocks.sizes, axis=1)
        elif pairs is not None:  # (who, cols), computed with the iteration's chunk of masks
            self.who, self.cols = pairs
        else:
            if chosen is None:
                workers, chosen = np.nonzero(mask)
            else:
                workers, chosen = np.repeat(np.arange(chosen.shape[0]), chosen.shape[1]), chosen.ravel()
            if blocks.equal:
                width = blocks.d // blocks.m
                self.who = np.repeat(workers, width)
                self.cols = _block_cols(chosen, width)
            else:
                sizes = blocks.sizes[chosen]
                first = np.cumsum(sizes) - sizes
                self.who = np.repeat(workers, sizes)
                self.cols = np.repeat(blocks.starts[chosen] - first, sizes) + np.arange(int(sizes.sum()))

    def grads(self, o, x, with_f: bool = True):
        """Each worker's local gradient on what it sends (``o.grads`` at tau = m); with f(x) from the same
        margins if ``with_f`` and the run records f (else None)."""
        with_f = with_f and self.want_f
        if not self.partial:
            return o.grads(x, with_f=True) if with_f else (o.grads(x), None)
        vals = o.partial_grads(x, self.who, self.cols, with_f)
        return (Partial(vals[0]), vals[1]) if with_f else (Partial(vals), None)

    def minibatch_grads(self, o, x, idx):
        """Each worker's minibatch gradient over its rows idx, on what it sends."""
        if not self.partial:
            return o.minibatch_grads(x, idx)
        return Partial(o.partial_minibatch_grads(x, idx, self.who, self.cols))

    def _entries(self, D):
        return D.values if isinstance(D, Partial) else D[self.who, self.cols]

    def sent_mask(self, shape) -> np.ndarray:
        """(n, d) booleans: which coordinates each worker sends (all of them at tau = m)."""
        if self.who is None and self.where is None:
            return np.ones(shape, dtype=bool)
        if self.where is not None:
            return np.broadcast_to(self.where, shape)
        M = np.zeros(shape, dtype=bool)
        M[self.who, self.cols] = True
        return M

    def send(self, D):
        """sum_i P_{S_i} D_i: what the master receives, added up."""
        if self.who is None and self.where is None:
            return D.sum(axis=0)
        if self.where is not None and not isinstance(D, Partial):
            return np.add.reduce(D, axis=0, where=self.where)
        return np.bincount(self.cols, weights=self._entries(D), minlength=self.d)

    def send_each(self, D):
        """The n messages apart (:class:`blockcd.rules.Received`, for a ``per_worker`` rule): D on the sent entries."""
        if self.who is None and self.where is None:
            return Received(D.values if isinstance(D, Partial) else D, None)
        if self.where is not None and not isinstance(D, Partial):
            return Received(D, np.broadcast_to(self.where, D.shape))
        values = np.zeros((self.n, self.d))
        values[self.who, self.cols] = self._entries(D)
        return Received(values, self.sent_mask(values.shape))

    def send_shifted(self, G, h):
        """Send D_i = G_i - h_i on the chosen blocks: h_i += P_{S_i} D_i in place, return sum_i P_{S_i} D_i."""
        if self.who is None:
            D = G - h
            np.add(h, D, out=h, where=True if self.where is None else self.where)
            return self.send(D)
        hs = h[self.who, self.cols]
        D = self._entries(G) - hs
        h[self.who, self.cols] = hs + D
        return np.bincount(self.cols, weights=D, minlength=self.d)

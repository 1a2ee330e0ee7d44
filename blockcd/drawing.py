"""The simulator's draws, iteration by iteration: :class:`Draws`.

``for k, sent, idx in Draws(s, o)`` gives, for each iteration k of the run set up
by ``s``, what the n workers send (a :class:`blockcd.messages.Sent`, built from the
block sampler's choices) and the rows they sample (``idx``, None for a method
without minibatches).  Every choice is a function of (seed, worker, iteration)
alone, so how it is drawn changes no number; what is here is speed:

- tau-nice masks drawn for several iterations at once (the same numbers, fewer
  calls), by a second thread when an iteration draws many uniforms;
- minibatches drawn ahead the same way;
- the sent entries reached by index (few wide blocks of a large array) and
  workers computing only their sent entries (``partial``), chosen from the sizes.

A run under way also asks, every :data:`INTERRUPT_EVERY` iterations, whether
it is still wanted (:func:`interrupt_when`).  Read next: :mod:`blockcd.methods`,
whose loop iterates over these draws.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading

import numpy as np

from .blocks import Blocks
from .messages import Sent, block_cols
from .samplers import Sampler

__all__ = ["INTERRUPT_EVERY", "Draws", "Interrupted", "interrupt_when"]

#: a run started inside :func:`interrupt_when` asks its ``check`` every this many iterations
INTERRUPT_EVERY = 16
#: per thread: ``check``, a function that returns True when the run under way is no longer wanted
_INTERRUPT = threading.local()


class Interrupted(Exception):
    """A run stopped because the ``check`` of :func:`interrupt_when` said it is no longer wanted (never otherwise)."""


@contextlib.contextmanager
def interrupt_when(check):
    """Within the ``with`` block, every run this thread starts asks ``check()`` every
    :data:`INTERRUPT_EVERY` iterations and raises :class:`Interrupted` once it returns True.

    What an explorer does when its controls move on while a run for the old values is under
    way (``None``: no check).  The numbers of a run that is not interrupted do not change.
    """
    old = getattr(_INTERRUPT, "check", None)
    _INTERRUPT.check = check
    try:
        yield
    finally:
        _INTERRUPT.check = old


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
    (:meth:`blockcd.blocks.Sampler.choices_of`); None: the masks only.
    """

    def __init__(self, sampler: Sampler, iters: int, blocks: Blocks | None):
        self.sampler, self.blocks = sampler, blocks
        #: equal blocks: the coordinates' width, and the workers of the sent entries (the same every iteration)
        self.width = blocks.d // blocks.m if blocks is not None and blocks.equal else None
        self.who = None  # set from the first chunk's indices (each worker sends as many blocks every time)
        per = sampler.uniforms
        threaded = per >= THREAD_UNIFORMS and _cores() > 1
        super().__init__(self._masks, iters, max(1, (THREAD_CHUNK if threaded else AHEAD_UNIFORMS) // per), threaded)

    def _masks(self, k: int, count: int):
        masks = self.sampler.masks_ahead(k, count)
        if self.blocks is None:
            return masks, None
        idx = self.sampler.choices_of(masks)
        if self.width is None:
            return masks, idx
        if self.who is None:
            self.who = np.repeat(np.arange(self.sampler.n), idx.shape[-1] * self.width)
        return masks, block_cols(idx.reshape(count, -1), self.width)

    def sent(self, k: int) -> tuple:
        """(mask, chosen, pairs) of iteration ``k`` for :class:`Sent`: the indices or the entries, or neither."""
        mask, got = self.at(k)
        if got is None:
            return mask, None, None
        return (mask, None, (self.who, got)) if self.width is not None else (mask, got, None)


class Draws:
    """The draws of a simulator run, one iteration at a time: ``for k, sent, idx in draws``.

    ``sent`` is what the n workers send at iteration k (a :class:`blockcd.messages.Sent`:
    all blocks at tau = m; else built from the masks drawn ahead, the few-block indices or
    the mask of the iteration, as the sampler offers them), ``idx`` the (n, b) rows the
    workers sample (None without minibatches).  Use it in a ``with`` block: a second
    drawing thread, if any, stops when the block ends, also after an early stop.

    Parameters
    ----------
    s : blockcd.arguments.Setup
        The run's set-up (sampler, minibatches, blocks, iters).
    o : blockcd.oracle.Workers
        The workers' oracle (its number of stored entries decides ``partial``).
    """

    def __init__(self, s, o):
        self.s = s
        blocks, tau, n = s.blocks, s.tau, s.problem.n
        self.blocks = blocks
        self.sampler, self.batches = s.sampler(), s.minibatches()
        #: whether the sent entries of a full (n, d) array are reached by index, and whether workers
        #: compute their sent entries only
        self.indexed = _indexed(blocks, tau, n)
        self.partial = tau <= PARTIAL_SHARE * s.m and o.entries >= PARTIAL_ENTRIES
        self.want_f = s.gap
        # a rule that chooses its own blocks (own_blocks) gets none drawn: every iteration is dense here
        self.sparse = tau < s.m and not s.method.rule.own_blocks
        # tau-nice masks are drawn for several iterations at once (the same numbers; fewer calls), with
        # the workers' (n, tau) block indices where Sent reaches the sent entries by index
        self.ahead = self.sparse and self.sampler.draws_ahead
        self.chunks = (_Chunks(self.sampler, s.iters, blocks if self.indexed or self.partial else None)
                       if self.ahead else None)
        # and the minibatches too (shared-data ISAGA's rows are drawn per iteration)
        self.rows = None
        if self.batches is not None and self.batches.draws_ahead:
            b = self.batches
            self.rows = _Ahead(lambda k, count: (b.draw_ahead(k, count),), s.iters,
                               max(1, AHEAD_UNIFORMS // b.uniforms))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self.chunks is not None:
            self.chunks.close()

    def _idx(self, k: int):
        if self.rows is not None:
            return self.rows.at(k)[0]
        return None if self.batches is None else self.batches.draw(k)

    def _sent(self, k: int) -> Sent:
        mask = chosen = pairs = None
        if self.ahead:
            mask, chosen, pairs = self.chunks.sent(k)
        elif self.sparse:  # one iteration at a time, in the sampler's cheaper form (mask or indices)
            mask, chosen = self.sampler.draw(k)
        return Sent(self.blocks, mask, self.indexed, self.partial, chosen, self.want_f, pairs)

    def __iter__(self):
        stop = getattr(_INTERRUPT, "check", None)
        for k in range(self.s.iters):
            if stop is not None and k % INTERRUPT_EVERY == 0 and stop():
                raise Interrupted(f"run interrupted at iteration {k}")
            idx = self._idx(k)
            yield k, self._sent(k), idx

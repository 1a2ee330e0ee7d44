"""Counter-based random streams: the uniforms of (seed, purpose, worker, iteration).

Reproducibility contract: the uniforms that pick worker ``i``'s blocks at
iteration ``k`` are a function of (seed, purpose, worker, iteration) alone.
They come from numpy's counter-based ``Philox`` generator: the simulator draws
all workers' uniforms of one iteration in a single call, and
:meth:`CounterStream.worker_uniforms` regenerates one worker's uniforms on its
own by advancing the counter to the (iteration, worker) offset, which is what a
master (or an MPI rank) does without hearing from the others.  Every sampler
of :mod:`blockcd.samplers` and :mod:`blockcd.blocks` draws from one of these.
"""

from __future__ import annotations

import numpy as np

from ._validate import check_int, check_seed

#: purposes of the random streams of one run (part of the Philox key)
PURPOSE_BLOCKS = 0
PURPOSE_SAMPLES = 1
PURPOSE_FEW_BLOCKS = 2
PURPOSE_FEW_FALLBACK = 3
PURPOSE_DDP = 4  # blockcd.torch: one stream per gradient bucket, key (seed, 4, bucket index)
PURPOSE_BERNOULLI = 5  # IBGD: whether worker i sends at iteration k
PURPOSE_SHARED_ROWS = 6  # shared-data ISAGA: the n distinct functions of iteration k
PURPOSE_IMPORTANCE = 7  # coordinate descent with importance sampling: which blocks all workers send at k


class CounterStream:
    """Uniform draws indexed by (iteration, worker), from one Philox key.

    Each iteration consumes ``rows * 4q`` 64-bit outputs, where
    ``q = ceil(width / 4)`` counter steps are reserved per row, so worker
    ``i``'s uniforms at iteration ``k`` start at counter offset
    ``(k * rows + i) * q``: :meth:`draw` gives all rows at once and
    :meth:`worker_uniforms` regenerates one row alone, bit for bit.
    """

    def __init__(self, seed: int, purpose: int | tuple[int, ...], rows: int, width: int):
        self.seed = check_seed("seed", seed)
        self.rows = check_int("rows", rows, 1)
        self.width = check_int("width", width, 1)
        # a tuple purpose (e.g. (PURPOSE_DDP, bucket)) keys one stream per bucket of a DDP model
        purpose = tuple(purpose) if isinstance(purpose, tuple) else (purpose,)
        self.key = np.random.SeedSequence([self.seed, *purpose]).generate_state(2, np.uint64)
        self.q = -(-self.width // 4)
        self._gen = np.random.Generator(np.random.Philox(key=self.key))
        self._next = 0

    def draw(self, k: int) -> np.ndarray:
        """All rows' uniforms for iteration ``k`` (shape (rows, width)).

        Iterations must be drawn in order 0, 1, 2, ... (the simulator does);
        use :meth:`worker_uniforms` for random access.
        """
        if k != self._next:
            bg = np.random.Philox(key=self.key)
            bg.advance(k * self.rows * self.q)
            self._gen = np.random.Generator(bg)
        self._next = k + 1
        u = self._gen.random((self.rows, 4 * self.q))
        return u[:, : self.width] if 4 * self.q != self.width else u

    def draw_ahead(self, k: int, count: int) -> np.ndarray:
        """The uniforms of iterations ``k, ..., k + count - 1`` in one call, shape (count * rows, width).

        The same numbers as ``count`` calls of :meth:`draw`: an iteration takes
        ``rows * 4q`` outputs, a whole number of Philox blocks, so the stream
        runs on from one iteration to the next either way; one call saves the
        per-call cost of the others (the simulator draws a few iterations ahead).
        """
        if k != self._next:
            bg = np.random.Philox(key=self.key)
            bg.advance(k * self.rows * self.q)
            self._gen = np.random.Generator(bg)
        self._next = k + count
        u = self._gen.random((count * self.rows, 4 * self.q))
        return u[:, : self.width] if 4 * self.q != self.width else u

    def worker_uniforms(self, k: int, i: int) -> np.ndarray:
        """Row ``i``'s uniforms at iteration ``k``, computed without the other rows."""
        bg = np.random.Philox(key=self.key)
        bg.advance((int(k) * self.rows + int(i)) * self.q)
        return np.random.Generator(bg).random(self.width)

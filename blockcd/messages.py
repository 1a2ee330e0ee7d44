"""What the workers send: all n workers at once (:class:`Sent`), or one worker (:class:`Selection`).

A rule (:mod:`blockcd.rules`) computes its message through a selection ``sel``
and hands it to ``sel.send`` (or ``sel.send_shifted``, ``sel.send_each``); the
two forms here answer those calls.

- :class:`Selection` is one worker's: its sent coordinates; ``send`` returns the
  values that go on the wire, and the master adds them with :func:`add_sent`.  The
  per-worker reference (:mod:`blockcd.reference`), the asynchronous engine
  (:mod:`blockcd.asynchronous`) and the MPI ranks (:mod:`blockcd.mpi`) use it.
- :class:`Sent` is all n workers' at one iteration of the simulator
  (:mod:`blockcd.methods`): built from the (n, m) block mask, or the (n, tau) block
  indices, its ``send`` returns the master's sum sum_i P_{S_i} D_i directly.

Either computes a worker's estimate on the sent coordinates only (a
:class:`Partial`) when that is cheaper.

A rule that chooses its own blocks (``own_blocks = True``, e.g. top-k) gets a
selection with no blocks yet (``Sent.own``, ``Selection.own``): its estimate is the
whole local gradient, ``sel.blocks`` and ``sel.tau`` are the partition and the run's
tau, :meth:`Sent.block_norms2` measures the blocks, and :meth:`Sent.choose` (or
:meth:`Selection.choose`) fixes the blocks sent; then ``send``, ``send_shifted``,
``send_each`` and ``sent_mask`` answer as for drawn blocks, and the engine counts
what was chosen (``mask``, ``chosen``).  Read next: :mod:`blockcd.methods` (the
simulator's loop) or :mod:`blockcd.reference` (the same rules, worker by worker).
"""

from __future__ import annotations

import numpy as np

from .rules import Received

__all__ = ["Partial", "Selection", "Sent", "add_sent", "block_cols", "block_norms2", "chosen_mask"]


def block_cols(chosen: np.ndarray, width: int) -> np.ndarray:
    """The coordinates of equal blocks of ``width``: shape (..., k) block indices -> (..., k * width), in order."""
    return ((chosen * width)[..., None] + np.arange(width)).reshape(*chosen.shape[:-1], -1)


def block_norms2(blocks, U) -> np.ndarray:
    """Squared norm of every block of U along its last axis: shape (..., d) -> (..., m).

    Each block's squares are added in coordinate order (``np.add.reduceat``), row by row, so one
    worker's row gives the same numbers alone (d,) as within all n workers' (n, d).
    """
    U = np.asarray(U)
    return np.add.reduceat(U * U, blocks.starts, axis=-1)


def chosen_mask(chosen, m: int, n: int | None = None) -> np.ndarray:
    """The blocks a rule chose, as booleans: (m,) for one worker (n None), else (n, m).

    ``chosen`` holds block indices, distinct in each row ((c,) for one worker, (n, c) for all n),
    or is already a boolean mask of that shape.  Raises TypeError or ValueError naming ``chosen``.
    """
    shape = (m,) if n is None else (n, m)
    c = np.asarray(chosen)
    if c.dtype == bool:
        if c.shape != shape:
            raise ValueError(f"chosen as a boolean mask must have shape {shape}, got {c.shape}")
        return c.copy()
    if not np.issubdtype(c.dtype, np.integer):
        raise TypeError(f"chosen must hold block indices (integers) or be a boolean mask, got dtype {c.dtype}")
    rows = 1 if n is None else n
    if c.ndim != len(shape) or (n is not None and c.shape[0] != n):
        want = "(c,)" if n is None else f"({n}, c)"
        raise ValueError(f"chosen must have shape {want}: c block indices" + (" per worker" if n else "")
                         + f", got shape {c.shape}")
    if c.size and (c.min() < 0 or c.max() >= m):
        raise ValueError(f"chosen must hold block indices in [0, {m - 1}], got {int(c.min())}..{int(c.max())}")
    mask = np.zeros((rows, m), dtype=bool)
    flat = c.reshape(rows, -1)
    np.put_along_axis(mask, flat, True, axis=1)
    if mask.sum() != flat.size:
        raise ValueError("chosen must not repeat a block index within a worker's choice")
    return mask[0] if n is None else mask


def _pairs(blocks, workers: np.ndarray, chosen: np.ndarray):
    """(who, cols) of the sent entries: worker ``workers[j]`` sends block ``chosen[j]``, in that order."""
    if blocks.equal:
        width = blocks.d // blocks.m
        return np.repeat(workers, width), block_cols(chosen, width)
    sizes = blocks.sizes[chosen]
    first = np.cumsum(sizes) - sizes
    return np.repeat(workers, sizes), np.repeat(blocks.starts[chosen] - first, sizes) + np.arange(int(sizes.sum()))


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
        self.blocks = blocks
        #: a rule with its own blocks (:meth:`own`), the run's tau (None when the engine drew the blocks)
        self.tau = None
        #: the blocks sent, as given, the (n, m) ``mask`` and/or the (n, tau) block indices ``chosen``
        #: (both None: every block), what the recorder counts
        self.chosen = chosen
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
            self.who, self.cols = _pairs(blocks, workers, chosen)

    @classmethod
    def own(cls, blocks, n: int, tau: int, want_f: bool = True) -> Sent:
        """The n workers' selection for a rule that chooses its own blocks: none chosen yet.

        Until :meth:`choose`, :meth:`grads` gives the whole local gradients; ``tau`` is the run's
        tau (the number of blocks the run asks each worker to send), ``blocks`` the partition.
        """
        sel = cls(blocks, None, False, want_f=want_f)
        sel.n, sel.tau = n, tau
        return sel

    def block_norms2(self, U) -> np.ndarray:
        """(n, m): the squared norm of each block of each worker's row of U (:func:`block_norms2`)."""
        return block_norms2(self.blocks, U)

    def choose(self, chosen) -> None:
        """Fix the blocks the n workers send (a rule with ``own_blocks``): ``chosen`` an (n, c) array of
        block indices, distinct in each row, or an (n, m) boolean mask (then each worker may send a
        different number of blocks).  The engine counts them from ``mask``."""
        if self.tau is None:
            raise TypeError("choose() is for a rule with own_blocks = True; this iteration's blocks were drawn "
                            "by the engine")
        if self.mask is not None:
            raise ValueError("choose() fixes the blocks once per iteration; they are already chosen")
        mask = chosen_mask(chosen, self.blocks.m, self.n)
        self.mask = mask
        self.partial = False
        if mask.all():  # every block: the dense sums, as at tau = m
            return
        self.who, self.cols = _pairs(self.blocks, *np.nonzero(mask))

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


class Selection:
    """The coordinates one worker sends (``None``: all of them, tau = m).

    :meth:`grads` and :meth:`minibatch_grads` compute the worker's estimate on
    those coordinates only (a :class:`Partial`); :meth:`send`
    and :meth:`send_shifted` turn an estimate, partial or full, into the values
    that go on the wire.
    """

    def __init__(self, coords: np.ndarray | None, blocks=None, tau: int | None = None):
        self.coords = coords
        #: the partition, for a rule with its own blocks (:meth:`own`)
        self.blocks = blocks
        #: the run's tau, for a rule with its own blocks (:meth:`own`)
        self.tau = tau
        #: the sorted block indices a rule with its own blocks chose (None until :meth:`choose`)
        self.chosen = None

    @classmethod
    def own(cls, blocks, tau: int) -> Selection:
        """One worker's selection for a rule that chooses its own blocks: until :meth:`choose`, every
        coordinate (so :meth:`grads` gives the whole local gradient)."""
        return cls(None, blocks, tau)

    def block_norms2(self, u) -> np.ndarray:
        """(m,): the squared norm of each block of u (:func:`block_norms2`)."""
        return block_norms2(self.blocks, u)

    def choose(self, chosen) -> None:
        """Fix the blocks this worker sends (a rule with ``own_blocks``): ``chosen`` a (c,) array of
        distinct block indices or an (m,) boolean mask.  :attr:`chosen` then holds them sorted, and
        ``coords`` their coordinates (None when all m blocks are chosen)."""
        if self.tau is None:
            raise TypeError("choose() is for a rule with own_blocks = True; this worker's blocks were drawn "
                            "by the engine")
        if self.chosen is not None:
            raise ValueError("choose() fixes the blocks once per message; they are already chosen")
        mask = chosen_mask(chosen, self.blocks.m)
        self.chosen = np.flatnonzero(mask)
        self.coords = None if self.chosen.size == self.blocks.m else self.blocks.coords(self.chosen)

    def grads(self, o, x, with_f: bool = True):
        """grad f_i(x) on the sent coordinates, and None: f is the master's evaluation, not a worker's."""
        if self.coords is None:
            return o.grads(x), None
        return Partial(o.partial_grads(x, self.coords)), None

    def minibatch_grads(self, o, x, idx):
        """The minibatch gradient over the local rows idx, on the sent coordinates."""
        if self.coords is None:
            return o.minibatch_grads(x, idx)
        return Partial(o.partial_minibatch_grads(x, idx, self.coords))

    def _entries(self, g):
        return g.values if isinstance(g, Partial) else g[self.coords]

    def sent_mask(self, shape) -> np.ndarray:
        """(d,) booleans: which coordinates this worker sends."""
        if self.coords is None:
            return np.ones(shape, dtype=bool)
        M = np.zeros(shape, dtype=bool)
        M[self.coords] = True
        return M

    def send(self, g) -> np.ndarray:
        """The values of g on the chosen coordinates: what goes on the wire."""
        return g if self.coords is None else self._entries(g)

    def send_each(self, g) -> np.ndarray:
        """For a ``per_worker`` rule: the same values as :meth:`send` (the engine keeps them apart)."""
        return self.send(g)

    def send_shifted(self, g, h: np.ndarray) -> np.ndarray:
        """Send D = g - h on the chosen coordinates and overwrite h there (h += D)."""
        c = self.coords
        if c is None:
            D = g - h
            h += D
            return D
        D = self._entries(g) - h[c]
        h[c] += D
        return D


def add_sent(total: np.ndarray, coords: np.ndarray | None, values: np.ndarray) -> None:
    """The master's sum: add one worker's values on its coordinates into ``total``."""
    if coords is None:
        total += values
    else:
        total[coords] += values

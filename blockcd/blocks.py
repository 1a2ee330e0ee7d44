"""Blocks and the unbiased block sparsifier; the rows each worker samples.

This module holds the partition of the d coordinates into m contiguous blocks,
the sparsifier C(g) = (m/tau) P_S g (book chapter 3), the minibatches of a
worker's rows and shared-data ISAGA's draw of n distinct functions, and the
variance factor of a minibatch.  It knows nothing about losses or methods.
Which blocks each worker sends is the module ``blockcd.samplers`` (one
protocol, :class:`Sampler`, and the samplers that implement it); the random
streams behind every choice, a function of (seed, worker, iteration) alone, are
``blockcd.streams`` (:class:`CounterStream`).  Both are re-exported here, and
documented under this module's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._validate import check_choice, check_int, check_rows
from .samplers import (  # noqa: F401 - re-exported (blockcd.blocks.BlockSampler, ...)
    FEW_M,
    SAMPLINGS,
    BernoulliSampler,
    BlockSampler,
    ImportanceSampler,
    Sampler,
    first_distinct,
    nice_mask,
)
from .streams import (  # noqa: F401 - re-exported (blockcd.blocks.CounterStream, ...)
    PURPOSE_BERNOULLI,
    PURPOSE_BLOCKS,
    PURPOSE_DDP,
    PURPOSE_FEW_BLOCKS,
    PURPOSE_FEW_FALLBACK,
    PURPOSE_IMPORTANCE,
    PURPOSE_SAMPLES,
    PURPOSE_SHARED_ROWS,
    CounterStream,
)


@dataclass(frozen=True)
class Blocks:
    """A partition of ``d`` coordinates into ``m`` contiguous blocks.

    Block sizes differ by at most one: the first ``d % m`` blocks have
    ``ceil(d/m)`` coordinates, the others ``floor(d/m)``.
    """

    d: int
    m: int
    sizes: np.ndarray = field(repr=False)
    starts: np.ndarray = field(repr=False)
    block_of: np.ndarray = field(repr=False)

    @classmethod
    def make(cls, d: int, m: int) -> Blocks:
        d = check_int("d", d, 1)
        m = check_int("m", m, 1, d)
        sizes = np.full(m, d // m, dtype=np.int64)
        sizes[: d % m] += 1
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        block_of = np.repeat(np.arange(m), sizes)
        for arr in (sizes, starts, block_of):
            arr.setflags(write=False)
        return cls(d, m, sizes, starts, block_of)

    @property
    def equal(self) -> bool:
        """True when every block has the same size (d divisible by m)."""
        return self.d % self.m == 0

    def expand(self, block_mask: np.ndarray) -> np.ndarray:
        """Turn an (n, m) block mask into the (n, d) coordinate mask."""
        return block_mask[:, self.block_of]

    def coords(self, chosen: np.ndarray) -> np.ndarray:
        """Sorted coordinates of the blocks ``chosen`` (sorted block indices)."""
        if self.equal:
            bs = self.d // self.m
            return (chosen[:, None] * bs + np.arange(bs)).ravel()
        keep = np.zeros(self.m, dtype=bool)
        keep[chosen] = True
        return np.flatnonzero(keep[self.block_of])


def partition(d: int, m: int) -> Blocks:
    """Split ``d`` coordinates into ``m`` contiguous blocks (sizes differ by at most one).

    Raises ``ValueError`` unless ``1 <= m <= d``.
    """
    return Blocks.make(d, m)


class Minibatches:
    """b-nice minibatches of each worker's local rows, a function of (seed, worker, iteration).

    ``draw(k)`` gives all n workers' row numbers of iteration ``k`` at once,
    shape (n, b); ``worker(k, i)`` regenerates worker i's alone, bit for bit.
    With b = 1 the row is ``floor(u l_i)`` of one uniform; with b > 1 the b
    smallest of ``l_max`` uniforms among the worker's l_i rows.
    """

    def __init__(self, sizes, batch: int, seed: int = 0):
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.n = self.sizes.size
        self.l_max = int(self.sizes.max())
        self.b = check_int("batch", batch, 1, int(self.sizes.min()))
        width = 1 if self.b == 1 else self.l_max
        self.stream = CounterStream(seed, PURPOSE_SAMPLES, self.n, width)
        #: the simulator draws several iterations at once (:meth:`draw_ahead`); uniforms per iteration
        self.draws_ahead, self.uniforms = True, self.n * width
        self._invalid = None
        if self.b > 1 and np.any(self.sizes < self.l_max):
            self._invalid = np.arange(self.l_max)[None, :] >= self.sizes[:, None]

    def draw(self, k: int) -> np.ndarray:
        """(n, b) local row numbers each worker samples at iteration k."""
        return self.draw_ahead(k, 1)[0]

    def draw_ahead(self, k: int, count: int) -> np.ndarray:
        """(count, n, b): :meth:`draw` of iterations k, ..., k + count - 1, bit for bit, from one draw."""
        u = self.stream.draw_ahead(k, count).reshape(count, self.n, -1)
        if self.b == 1:
            return np.minimum((u * self.sizes[:, None]).astype(np.int64), self.sizes[:, None] - 1)
        if self._invalid is not None:
            u = np.where(self._invalid, 2.0, u)
        return np.argpartition(u, self.b - 1, axis=-1)[..., : self.b]

    def worker(self, k: int, i: int) -> np.ndarray:
        """(b,) local row numbers worker i samples at iteration k, computed without the others."""
        u = self.stream.worker_uniforms(k, i)
        li = int(self.sizes[i])
        if self.b == 1:
            return np.array([min(int(u[0] * li), li - 1)])
        if li < self.l_max:
            u = np.where(np.arange(self.l_max) >= li, 2.0, u)
        return np.argpartition(u, self.b - 1)[: self.b]


class SharedRows:
    """n distinct functions of the N per iteration, drawn without replacement: shared-data ISAGA's sampling.

    At iteration k the N uniforms of one counter stream (a function of
    (seed, k) alone) order the functions; worker i takes the i-th smallest,
    so j_1, ..., j_n are a uniformly random ordered n-subset of the N.  ``draw(k)``
    gives all n at once, shape (n, 1); ``worker(k, i)`` regenerates worker i's
    alone, bit for bit (it draws the same N uniforms: every worker must know
    the others' choices to avoid them).
    """

    def __init__(self, N: int, n: int, seed: int = 0):
        self.N = check_int("N", N, 1)
        self.n = check_int("n", n, 1, self.N)
        self.stream = CounterStream(seed, PURPOSE_SHARED_ROWS, 1, self.N)
        #: drawn one iteration at a time (:meth:`draw`)
        self.draws_ahead, self.uniforms = False, self.N

    def _pick(self, u: np.ndarray) -> np.ndarray:
        j = np.argpartition(u, self.n - 1)[: self.n] if self.n < self.N else np.arange(self.N)
        return j[np.argsort(u[j], kind="stable")]

    def draw(self, k: int) -> np.ndarray:
        """(n, 1): row i is the function worker i samples at iteration k."""
        return self._pick(self.stream.draw(k)[0])[:, None]

    def worker(self, k: int, i: int) -> np.ndarray:
        """(1,): the function worker i samples at iteration k, from (seed, k) alone."""
        return self._pick(self.stream.worker_uniforms(k, 0))[i : i + 1]


def minibatch_theta(l, b: int):
    r"""The variance factor of a b-minibatch drawn without replacement from l rows.

    .. math:: \theta = \frac{l - b}{b\,(l - 1)},

    so that the mean of b of l vectors, drawn without replacement, has variance
    :math:`\theta` times the variance of one of them (0 at b = l; 1 at b = 1).
    Chapters 5 and 6 use it in the minibatch constants (:math:`\theta L_s \le
    \mathcal{L}_{\text{loc}}`).

    Parameters
    ----------
    l : int or array of ints >= b
        Rows per worker (one per worker for an array); l = 1 gives 0.
    b : int >= 1
        Minibatch size.

    Returns
    -------
    float, or ndarray of floats of the shape of ``l``
    """
    b = check_int("b", b, 1)
    la = np.asarray(l)
    if not np.issubdtype(la.dtype, np.number) or np.any(la < b):
        raise ValueError(f"l must hold row counts >= b = {b}, got {l!r}")
    la = la.astype(float)
    theta = np.where(la > 1, (la - b) / (b * np.maximum(la - 1, 1)), 0.0)
    return float(theta) if theta.ndim == 0 else theta


def sparsify(
    G: np.ndarray,
    m: int,
    tau: int,
    rng: np.random.Generator | int | None = None,
    sampling: str = "independent",
) -> np.ndarray:
    r"""Apply the block sparsifier to every row of ``G``.

    Row ``i`` becomes :math:`C_i(g_i) = \frac{m}{\tau} P_{S_i} g_i`, where
    :math:`S_i` is a tau-nice sample of the ``m`` contiguous blocks, drawn
    independently per row (``sampling='independent'``) or once for all rows
    (``'shared'``).  Then :math:`\mathbb{E}\,C(g) = g` and
    :math:`\mathbb{E}\|C(g) - g\|^2 = (m/\tau - 1)\|g\|^2` (chapter 3).

    Parameters
    ----------
    G : array of shape (n, d)
        One vector per worker (a 1-D array is treated as one worker).
    m : int
        Number of blocks, ``1 <= m <= d``.
    tau : int
        Blocks kept per row, ``1 <= tau <= m``.
    rng : numpy Generator or int seed
        Source of randomness (an int seeds ``numpy.random.default_rng``).
    sampling : {'independent', 'shared'}

    Returns
    -------
    ndarray of shape (n, d) (or (d,) for a 1-D input), a new array.
    """
    G, one_d = check_rows("G", G)
    n, d = G.shape
    blocks = partition(d, m)
    tau = check_int("tau", tau, 1, blocks.m)
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    if rng is None or isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        rng = np.random.default_rng(rng)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator or an int seed, got {type(rng).__name__}")
    rows = n if sampling == "independent" else 1
    mask = nice_mask(rng.random((rows, blocks.m)), tau)
    coord = blocks.expand(mask)
    out = np.where(coord, G * (blocks.m / tau), 0.0)
    return out[0] if one_d else out

"""Blocks, tau-nice sampling and the unbiased block sparsifier.

This module holds the partition of the d coordinates into m contiguous blocks,
the counter-based random stream that decides which blocks each worker sends,
and the sparsifier C(g) = (m/tau) P_S g (book chapter 3).  It knows nothing
about losses or methods.

Reproducibility contract: the uniforms that pick worker ``i``'s blocks at
iteration ``k`` are a function of (seed, purpose, worker, iteration) alone.
They come from numpy's counter-based ``Philox`` generator: the simulator draws
all workers' uniforms of one iteration in a single call, and
:meth:`CounterStream.worker_uniforms` regenerates one worker's uniforms on its
own by advancing the counter to the (iteration, worker) offset, which is what a
master (or an MPI rank) does without hearing from the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._validate import check_choice, check_float, check_int, check_rows, check_seed

SAMPLINGS = ("independent", "shared")

#: purposes of the random streams of one run (part of the Philox key)
PURPOSE_BLOCKS = 0
PURPOSE_SAMPLES = 1
PURPOSE_FEW_BLOCKS = 2
PURPOSE_FEW_FALLBACK = 3
PURPOSE_DDP = 4  # blockcd.torch: one stream per gradient bucket, key (seed, 4, bucket index)
PURPOSE_BERNOULLI = 5  # IBGD: whether worker i sends at iteration k
PURPOSE_SHARED_ROWS = 6  # shared-data ISAGA: the n distinct functions of iteration k
PURPOSE_IMPORTANCE = 7  # coordinate descent with importance sampling: which blocks all workers send at k
#: block choices are drawn from about tau uniforms, not m, when m >= FEW_M and 16 tau <= m
FEW_M = 512


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


def nice_mask(u: np.ndarray, tau: int) -> np.ndarray:
    """Boolean mask of the ``tau`` smallest entries of each row of ``u``.

    With ``u`` uniform this is a tau-nice sampling of the columns: every
    ``tau``-subset equally likely, independently across rows.
    """
    rows, m = u.shape
    if tau == m:
        return np.ones((rows, m), dtype=bool)
    # The tau smallest entries of a row are those <= its tau-th smallest value:
    # one comparison, about twice as fast as scattering argpartition's indices.
    # A tie at that value (probability about m^2 / 2^53 per row of uniforms) or
    # a NaN would select too many or too few; argpartition then decides, as before.
    if tau == 1:
        kth = u.min(axis=1, keepdims=True)
    elif tau <= 3:  # the tau-th smallest: the smallest once tau - 1 minima are set aside one by one
        # (no select: about twice as fast as a partition for tau <= 3).  kth is the tau-th order
        # statistic, ties or not; the mask {u <= kth} then holds exactly tau entries unless the
        # (tau+1)-th equals it, and argpartition below decides those rows, as it did before.
        w = u.copy()
        r = np.arange(rows)
        for _ in range(tau - 1):
            w[r, w.argmin(axis=1)] = np.inf
        kth = w.min(axis=1, keepdims=True)
    else:
        kth = np.partition(u, tau - 1, axis=1)[:, tau - 1 : tau]
    mask = u <= kth
    if np.count_nonzero(mask) == rows * tau and not np.isnan(kth).any():
        return mask
    idx = np.argpartition(u, tau - 1, axis=1)[:, :tau]
    mask = np.zeros((rows, m), dtype=bool)
    np.put_along_axis(mask, idx, True, axis=1)
    return mask


def first_distinct(u: np.ndarray, m: int, tau: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``tau`` distinct values of floor(u m) in each row, sorted: (indices (rows, tau), ok (rows,)).

    Reading uniform draws in order and keeping each value not seen before is
    sampling without replacement, so the kept ``tau`` values are a uniformly
    random tau-subset of {0, ..., m-1}.  ``ok`` is False for a row whose
    draws hold fewer than ``tau`` distinct values (its indices are then
    meaningless and the caller draws that row again another way).
    """
    rows = u.shape[0]
    v = np.minimum((u * m).astype(np.int64), m - 1)
    order = np.argsort(v, axis=1, kind="stable")
    sv = np.take_along_axis(v, order, axis=1)
    new = np.ones_like(sv, dtype=bool)
    new[:, 1:] = sv[:, 1:] != sv[:, :-1]                 # first occurrence of each value (stable sort)
    keep = np.empty_like(new)
    np.put_along_axis(keep, order, new, axis=1)         # ... back in draw order
    ok = keep.sum(axis=1) >= tau
    keep &= np.cumsum(keep, axis=1) <= tau
    keep[~ok] = False
    keep[~ok, :tau] = True                              # placeholder shape for rows the caller redraws
    return np.sort(v[keep].reshape(rows, tau), axis=1), ok


class BlockSampler:
    """tau-nice block choices for ``n`` workers, independent or shared.

    ``choices(k)`` returns the (n, tau) sorted block indices of iteration
    ``k`` and ``masks(k)`` the (n, m) boolean mask; with ``sampling='shared'``
    all rows are the same choice (one draw per iteration, as in libraries that
    share a random-k mask).  Worker i's choice is a function of (seed, i, k)
    alone, and :meth:`worker_blocks` regenerates it without the others.

    Two exact ways of drawing a tau-subset, chosen by (m, tau) only:

    - the ``tau`` smallest of ``m`` uniforms (:func:`nice_mask`), for small m;
    - with few blocks of many (``m >= FEW_M`` and ``16 tau <= m``), the first
      ``tau`` distinct values of ``W = tau + ceil(2 tau^2/m) + 16`` uniform
      integers (:func:`first_distinct`), which touches O(tau) numbers, not m;
      a row whose W draws hold fewer than tau distinct values (fewer than one
      in 10^6 rows) draws again from the m uniforms of another stream.
    """

    def __init__(self, n: int, m: int, tau: int, seed: int = 0, sampling: str = "independent"):
        self.n = check_int("n", n, 1)
        self.m = check_int("m", m, 1)
        self.tau = check_int("tau", tau, 1, self.m)
        self.sampling = check_choice("sampling", sampling, SAMPLINGS)
        self.rows = self.n if self.sampling == "independent" else 1
        self.few = self.m >= FEW_M and 16 * self.tau <= self.m
        if self.few:
            width = self.tau + -(-2 * self.tau * self.tau // self.m) + 16
            self.stream = CounterStream(seed, PURPOSE_FEW_BLOCKS, self.rows, width)
            self.fallback = CounterStream(seed, PURPOSE_FEW_FALLBACK, self.rows, self.m)
        else:
            self.stream = CounterStream(seed, PURPOSE_BLOCKS, self.rows, self.m)
        self._ones = np.ones((self.n, self.m), dtype=bool)

    def _few(self, u: np.ndarray, k: int, rows) -> np.ndarray:
        idx, ok = first_distinct(u, self.m, self.tau)
        for j in np.flatnonzero(~ok):
            w = self.fallback.worker_uniforms(k, rows[j])
            idx[j] = np.sort(np.argpartition(w, self.tau - 1)[: self.tau])
        return idx

    def choices(self, k: int) -> np.ndarray | None:
        """The (n, tau) sorted block indices of iteration ``k`` (None at tau = m: every block)."""
        if self.tau == self.m:
            return None
        if self.few:
            idx = self._few(self.stream.draw(k), k, np.arange(self.rows))
        else:
            idx = np.nonzero(nice_mask(self.stream.draw(k), self.tau))[1].reshape(self.rows, self.tau)
        return np.broadcast_to(idx, (self.n, self.tau)) if self.sampling == "shared" else idx

    def masks(self, k: int) -> np.ndarray:
        """The (n, m) boolean block mask of iteration ``k`` (all workers' choices in one draw)."""
        if self.tau == self.m:
            return self._ones
        if self.few:
            mask = np.zeros((self.rows, self.m), dtype=bool)
            np.put_along_axis(mask, self._few(self.stream.draw(k), k, np.arange(self.rows)), True, axis=1)
        else:
            mask = nice_mask(self.stream.draw(k), self.tau)
        if self.sampling == "shared":
            mask = np.broadcast_to(mask, (self.n, self.m))
        return mask

    def masks_ahead(self, k: int, count: int) -> np.ndarray:
        """The block masks of iterations ``k, ..., k + count - 1``, shape (count, n, m): ``masks`` of each, bit for bit.

        One draw and one :func:`nice_mask` for all of them (each row is decided by its
        own uniforms, so rows drawn together choose what they choose alone).  Not for
        the few-blocks draw (``self.few``), whose rows may draw again one by one.
        """
        if self.few:
            raise ValueError("masks_ahead does not apply to the few-blocks draw (m >= FEW_M and 16 tau <= m)")
        if self.tau == self.m:
            return np.broadcast_to(self._ones, (count, self.n, self.m))
        mask = nice_mask(self.stream.draw_ahead(k, count), self.tau).reshape(count, self.rows, self.m)
        return np.broadcast_to(mask, (count, self.n, self.m)) if self.sampling == "shared" else mask

    def choices_of(self, masks: np.ndarray) -> np.ndarray:
        """The sorted block indices, shape (..., n, tau), of tau-nice ``masks`` of shape (..., n, m).

        ``np.nonzero(masks[j])[1]`` of each iteration, reshaped, from one
        ``flatnonzero`` over all of them (every row holds exactly tau blocks;
        about ten times quicker than ``nonzero`` iteration by iteration).
        """
        if masks.shape[-1] != self.m or masks.shape[-2] != self.n:
            raise ValueError(f"masks must have shape (..., n, m) = (..., {self.n}, {self.m}), got {masks.shape}")
        if self.sampling == "shared":  # one row, repeated
            one = masks[..., :1, :]
            idx = (np.flatnonzero(one) % self.m).reshape(*one.shape[:-1], self.tau)
            return np.broadcast_to(idx, (*masks.shape[:-1], self.tau))
        return (np.flatnonzero(masks) % self.m).reshape(*masks.shape[:-1], self.tau)

    def worker_blocks(self, k: int, i: int) -> np.ndarray:
        """Sorted block indices worker ``i`` sends at iteration ``k`` (regenerated alone)."""
        if self.tau == self.m:
            return np.arange(self.m)
        row = 0 if self.sampling == "shared" else check_int("i", i, 0, self.n - 1)
        u = self.stream.worker_uniforms(k, row)
        if self.few:
            return self._few(u[None, :], k, [row])[0]
        return np.sort(np.argpartition(u, self.tau - 1)[: self.tau])


class BernoulliSampler:
    """All blocks or none: worker i sends its whole vector with probability ``q``, independently.

    The choice of IBGD (chapter 4's Bernoulli variant, Algorithm 3 of
    Mishchenko et al.): worker i sends at iteration k when its uniform
    u_{ik} < q, a function of (seed, i, k) alone (one Philox stream of its
    own purpose), so the master regenerates who sends without a message.
    As :class:`BlockSampler` (without its (n, tau) ``choices``): ``masks(k)`` is the (n, m)
    mask whose rows are all True (the worker sends) or all False, and
    :meth:`worker_blocks` gives all m blocks or none.  Each block is sent
    with probability q, as under a tau-nice choice with tau = q m, so the
    sparsifier (1/q) b_i g_i is unbiased with variance (1/q - 1) ||g_i||^2:
    the key lemma holds unchanged with omega = 1/q - 1.

    Parameters
    ----------
    n : int >= 1
        Workers.
    m : int >= 1
        Blocks (a sender sends all of them).
    q : float in (0, 1]
        Probability that a worker sends (``blockcd.run`` takes q = tau/m).
    seed : int >= 0
    """

    #: never the few-blocks draw of :class:`BlockSampler`
    few = False

    def __init__(self, n: int, m: int, q: float, seed: int = 0):
        self.n = check_int("n", n, 1)
        self.m = check_int("m", m, 1)
        q = check_float("q", q, positive=True)
        if q > 1.0:
            raise ValueError(f"q must be a probability in (0, 1], got {q}")
        self.q = q
        self.stream = CounterStream(seed, PURPOSE_BERNOULLI, self.n, 1)
        self._all = np.arange(self.m)
        self._none = np.zeros(0, dtype=np.int64)

    def senders(self, k: int) -> np.ndarray:
        """(n,) booleans: which workers send at iteration ``k`` (all workers' draws at once)."""
        return self.stream.draw(k)[:, 0] < self.q

    def masks(self, k: int) -> np.ndarray:
        """The (n, m) block mask of iteration ``k``: row i all True if worker i sends, else all False."""
        return np.repeat(self.senders(k)[:, None], self.m, axis=1)

    def worker_sends(self, k: int, i: int) -> bool:
        """Whether worker ``i`` sends at iteration ``k`` (regenerated alone)."""
        i = check_int("i", i, 0, self.n - 1)
        return bool(self.stream.worker_uniforms(k, i)[0] < self.q)

    def worker_blocks(self, k: int, i: int) -> np.ndarray:
        """The blocks worker ``i`` sends at iteration ``k``: all m, or none (an empty array)."""
        return self._all if self.worker_sends(k, i) else self._none


class ImportanceSampler:
    """The same blocks on every worker, block j with its own probability p_j: coordinate descent's importance sampling.

    At iteration k block j is in the shared set when u_{kj} < p_j, independently over the blocks (a
    product sampling); the m uniforms are a function of (seed, k) alone (one Philox stream of its own
    purpose), so every worker, and the master, regenerates the set without a message.  With p_j
    proportional to the blocks' smoothness constants L_j (:func:`blockcd.theory.cd_probabilities`),
    sum_j p_j = tau blocks are sent in expectation.  As :class:`BlockSampler` (without ``choices``):
    ``masks(k)`` is the (n, m) mask, every row the same; :meth:`worker_blocks` gives the set.

    Parameters
    ----------
    n : int >= 1
        Workers.
    p : array (m,) of probabilities in (0, 1]
        Probability that block j is sent.
    seed : int >= 0
    """

    #: never the few-blocks draw of :class:`BlockSampler`
    few = False

    def __init__(self, n: int, p, seed: int = 0):
        self.n = check_int("n", n, 1)
        p = np.asarray(p, dtype=np.float64)
        if p.ndim != 1 or p.size < 1 or not np.all((p > 0) & (p <= 1)):
            raise ValueError("p must be a 1-D array of probabilities in (0, 1], one per block")
        self.p, self.m = p, p.size
        self.stream = CounterStream(seed, PURPOSE_IMPORTANCE, 1, self.m)

    def masks(self, k: int) -> np.ndarray:
        """The (n, m) block mask of iteration ``k``: one draw, the same row for every worker."""
        return np.broadcast_to(self.stream.draw(k)[0] < self.p, (self.n, self.m))

    def worker_blocks(self, k: int, i: int) -> np.ndarray:
        """The sorted blocks worker ``i`` (every worker) sends at iteration ``k``, regenerated alone."""
        check_int("i", i, 0, self.n - 1)
        return np.flatnonzero(self.stream.worker_uniforms(k, 0) < self.p)


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

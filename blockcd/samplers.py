"""Block samplers: which blocks each worker sends at each iteration (book chapters 1 and 3).

Every sampler implements one protocol, :class:`Sampler`: the masks of iteration k
(``masks``), the masks of several iterations ahead (``masks_ahead``), worker i's
blocks of iteration k alone (``worker_blocks``), and iteration k's choice in its
cheapest form (``draw``).  Each draws from a counter-based stream
(``blockcd.streams``), so that any worker's choice is a function of (seed, worker,
iteration) alone.  :meth:`blockcd.arguments.Setup.sampler` chooses a run's sampler, in
one place: :class:`BlockSampler` (tau-nice, independent or shared),
:class:`BernoulliSampler` (IBGD: all blocks or none) or :class:`ImportanceSampler`
(coordinate descent's importance sampling).
"""

from __future__ import annotations

import numpy as np

from ._validate import check_choice, check_float, check_int
from .streams import (
    PURPOSE_BERNOULLI,
    PURPOSE_BLOCKS,
    PURPOSE_FEW_BLOCKS,
    PURPOSE_FEW_FALLBACK,
    PURPOSE_IMPORTANCE,
    CounterStream,
)

SAMPLINGS = ("independent", "shared")
#: block choices are drawn from about tau uniforms, not m, when m >= FEW_M and 16 tau <= m
FEW_M = 512


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


class Sampler:
    """The protocol every block sampler implements: which blocks each of ``n`` workers sends.

    Every choice is a function of (seed, worker, iteration) alone, so the engines (the
    simulator's :class:`blockcd.drawing.Draws`, the per-worker reference, the asynchronous
    engine, the MPI ranks) ask for it in whichever form suits them and get the same blocks;
    none of them tests a sampler's type or internals.

    Attributes
    ----------
    n : int
        Workers.
    m : int
        Blocks.
    draws_ahead : bool
        Whether the simulator should draw several iterations at once (:meth:`masks_ahead`)
        rather than one at a time (:meth:`draw`).
    uniforms : int
        Uniforms one iteration draws (the simulator sizes its chunks of iterations by it).
    """

    n: int
    m: int
    draws_ahead = False
    uniforms = 1

    def masks(self, k: int) -> np.ndarray:  # pragma: no cover - abstract
        """The (n, m) boolean block mask of iteration ``k``: row i, the blocks worker i sends."""
        raise NotImplementedError

    def masks_ahead(self, k: int, count: int) -> np.ndarray:
        """The masks of iterations k, ..., k + count - 1, shape (count, n, m): :meth:`masks` of each, bit for bit."""
        return np.stack([self.masks(k + j) for j in range(count)])

    def worker_blocks(self, k: int, i: int) -> np.ndarray:  # pragma: no cover - abstract
        """The sorted blocks worker ``i`` sends at iteration ``k``, regenerated without the other workers."""
        raise NotImplementedError

    def draw(self, k: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Iteration k's choice in the form cheapest to draw: (the (n, m) mask, None), or (None, the (n, tau)
        sorted block indices) for a sampler whose workers each send tau blocks."""
        return self.masks(k), None

    def choices_of(self, masks: np.ndarray) -> np.ndarray | None:
        """The sorted block indices, shape (..., n, tau), of ``masks`` of shape (..., n, m) whose rows each hold
        tau blocks; None for a sampler whose workers send different numbers of blocks."""
        return None


class BlockSampler(Sampler):
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
        self._few_blocks = self.m >= FEW_M and 16 * self.tau <= self.m
        #: the simulator draws several iterations at once (:meth:`masks_ahead`), except on the few-blocks path
        self.draws_ahead = not self._few_blocks
        self.uniforms = self.rows * self.m
        if self._few_blocks:
            width = self.tau + -(-2 * self.tau * self.tau // self.m) + 16
            self.stream = CounterStream(seed, PURPOSE_FEW_BLOCKS, self.rows, width)
            self.fallback = CounterStream(seed, PURPOSE_FEW_FALLBACK, self.rows, self.m)
        else:
            self.stream = CounterStream(seed, PURPOSE_BLOCKS, self.rows, self.m)
        self._ones = np.ones((self.n, self.m), dtype=bool)

    def _few(self, u: np.ndarray, k: int, rows) -> np.ndarray:
        """The few-blocks draw of ``rows``: the first tau distinct of W uniform integers, drawn again from m
        uniforms of the fallback stream where W held fewer than tau."""
        idx, ok = first_distinct(u, self.m, self.tau)
        for j in np.flatnonzero(~ok):
            w = self.fallback.worker_uniforms(k, rows[j])
            idx[j] = np.sort(np.argpartition(w, self.tau - 1)[: self.tau])
        return idx

    def choices(self, k: int) -> np.ndarray | None:
        """The (n, tau) sorted block indices of iteration ``k`` (None at tau = m: every block)."""
        if self.tau == self.m:
            return None
        if self._few_blocks:
            idx = self._few(self.stream.draw(k), k, np.arange(self.rows))
        else:
            idx = np.nonzero(nice_mask(self.stream.draw(k), self.tau))[1].reshape(self.rows, self.tau)
        return np.broadcast_to(idx, (self.n, self.tau)) if self.sampling == "shared" else idx

    def masks(self, k: int) -> np.ndarray:
        """The (n, m) boolean block mask of iteration ``k`` (all workers' choices in one draw)."""
        if self.tau == self.m:
            return self._ones
        if self._few_blocks:
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
        own uniforms, so rows drawn together choose what they choose alone).  On the
        few-blocks path (``draws_ahead`` False), each iteration's masks, stacked.
        """
        if self._few_blocks:
            return super().masks_ahead(k, count)
        if self.tau == self.m:
            return np.broadcast_to(self._ones, (count, self.n, self.m))
        mask = nice_mask(self.stream.draw_ahead(k, count), self.tau).reshape(count, self.rows, self.m)
        return np.broadcast_to(mask, (count, self.n, self.m)) if self.sampling == "shared" else mask

    def draw(self, k: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Iteration k's choice in its cheaper form: (None, the (n, tau) indices of :meth:`choices`) with few
        blocks of many, else (the (n, m) mask, None)."""
        return (None, self.choices(k)) if self._few_blocks else (self.masks(k), None)

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
        if self._few_blocks:
            return self._few(u[None, :], k, [row])[0]
        return np.sort(np.argpartition(u, self.tau - 1)[: self.tau])


class BernoulliSampler(Sampler):
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

    def __init__(self, n: int, m: int, q: float, seed: int = 0):
        self.n = check_int("n", n, 1)
        self.m = check_int("m", m, 1)
        q = check_float("q", q, positive=True)
        if q > 1.0:
            raise ValueError(f"q must be a probability in (0, 1], got {q}")
        self.q = q
        self.stream = CounterStream(seed, PURPOSE_BERNOULLI, self.n, 1)
        self.uniforms = self.n
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


class ImportanceSampler(Sampler):
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

    def __init__(self, n: int, p, seed: int = 0):
        self.n = check_int("n", n, 1)
        p = np.asarray(p, dtype=np.float64)
        if p.ndim != 1 or p.size < 1 or not np.all((p > 0) & (p <= 1)):
            raise ValueError("p must be a 1-D array of probabilities in (0, 1], one per block")
        self.p, self.m = p, p.size
        self.stream = CounterStream(seed, PURPOSE_IMPORTANCE, 1, self.m)
        self.uniforms = self.m

    def masks(self, k: int) -> np.ndarray:
        """The (n, m) block mask of iteration ``k``: one draw, the same row for every worker."""
        return np.broadcast_to(self.stream.draw(k)[0] < self.p, (self.n, self.m))

    def worker_blocks(self, k: int, i: int) -> np.ndarray:
        """The sorted blocks worker ``i`` (every worker) sends at iteration ``k``, regenerated alone."""
        check_int("i", i, 0, self.n - 1)
        return np.flatnonzero(self.stream.worker_uniforms(k, 0) < self.p)

"""What the MPI ranks send each other: message tags and the packed block indices.

A worker's message is the values of its tau blocks (tag ``TAG_VALUES``) and, with
``--send-indices``, the indices of those blocks packed into
ceil(tau ceil(log2 m) / 8) bytes (tag ``TAG_INDICES``, chapter 10).  Asynchronous
IS-SGD adds the master's answer to one worker and the order to stop.  A rule that
chooses its own blocks (``own_blocks``) always sends their indices, sorted, and the
master reads how many from the message (:func:`unpack_chosen`).
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_int

#: message tags (values, packed indices)
TAG_VALUES = 1
TAG_INDICES = 2
#: asynchronous IS-SGD, the master's answer to one worker (its new point), and the order to stop
TAG_POINT = 3
TAG_STOP = 4


def _index_bits(m: int) -> int:
    return math.ceil(math.log2(m)) if m > 1 else 1


def pack_indices(idx, m: int) -> np.ndarray:
    r"""Pack block indices into :math:`\lceil \tau \lceil\log_2 m\rceil / 8\rceil` bytes.

    The message ``--send-indices`` adds to a worker's values (chapter 10): each
    index takes :math:`\lceil\log_2 m\rceil` bits (least significant first),
    the bits of all tau indices are concatenated and padded to whole bytes, so
    the size is that of :func:`blockcd.theory.index_bits` rounded up to bytes.

    Parameters
    ----------
    idx : array of ints, shape (tau,)
        Block indices, each in ``0 .. m - 1``.
    m : int >= 1
        Number of blocks.

    Returns
    -------
    ndarray of uint8
    """
    m = check_int("m", m, 1)
    idx = np.asarray(idx)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"idx must be a 1-D array of integers, got {idx.dtype} of shape {idx.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= m):
        raise ValueError(f"idx must hold block indices in [0, {m - 1}]")
    bits = _index_bits(m)
    b = (idx.astype(np.int64)[:, None] >> np.arange(bits)) & 1
    return np.packbits(b.astype(np.uint8).ravel())


def unpack_indices(buf, tau: int, m: int) -> np.ndarray:
    """The tau block indices packed by :func:`pack_indices` (int64 array of shape (tau,)).

    Raises ``ValueError`` if ``buf`` is shorter than tau ceil(log2 m) bits.
    """
    m = check_int("m", m, 1)
    tau = check_int("tau", tau, 1, m)
    buf = np.asarray(buf, dtype=np.uint8)
    bits = _index_bits(m)
    if buf.size * 8 < tau * bits:
        raise ValueError(f"buf holds {buf.size} bytes, fewer than the {tau * bits} bits of {tau} indices")
    b = np.unpackbits(buf)[: tau * bits].reshape(tau, bits).astype(np.int64)
    return b @ (1 << np.arange(bits))


def unpack_chosen(buf, m: int) -> np.ndarray:
    """The sorted, distinct block indices packed by :func:`pack_indices` when their number is not known
    in advance (a rule's own choice): the longest strictly increasing run of indices from the start.

    The padding bits are zeros, which decode to index 0, which cannot follow an index of a strictly
    increasing run; so the count is read from the indices themselves.  Raises ``ValueError`` if ``buf``
    is not the packing of such indices (an index >= m, or a byte count that is not ceil(c ceil(log2 m) / 8)).
    """
    m = check_int("m", m, 1)
    buf = np.asarray(buf, dtype=np.uint8)
    bits = _index_bits(m)
    count = buf.size * 8 // bits
    idx = np.unpackbits(buf)[: count * bits].reshape(count, bits).astype(np.int64) @ (1 << np.arange(bits))
    c = count if count < 2 else 1 + int(np.argmin(np.append(np.diff(idx) > 0, False)))
    chosen = idx[:c]
    if chosen.size and chosen.max() >= m or math.ceil(c * bits / 8) != buf.size:
        raise ValueError(f"buf ({buf.size} bytes) is not the packing of sorted block indices in [0, {m - 1}]")
    return chosen

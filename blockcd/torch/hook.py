"""The DDP communication hook: tau of m blocks of each gradient bucket, chosen per rank.

:class:`~blockcd.torch.SparsificationState` holds the hook's settings, the counter-based
streams that choose each rank's blocks, ISEGA's shifts (when asked for) and
the byte counters; :func:`~blockcd.torch.sparsify_hook` is the function registered with
``DistributedDataParallel.register_comm_hook``.  Launching processes and the
training command live in ``blockcd.torch.launch`` and
:mod:`blockcd.torch.train`.

Rank ``i``'s blocks of bucket ``b`` at step ``k`` are ``nice_mask`` of row
``i`` of the uniforms drawn at iteration ``k`` from
``CounterStream(seed, (PURPOSE_DDP, b), n, m)``: a function of
(seed, rank, step, bucket index) alone, so every rank regenerates every other
rank's choice and only values travel (book chapter 11).
"""

import numpy as np
import torch
import torch.distributed as dist

from .._validate import check_choice, check_int, check_seed
from ..blocks import PURPOSE_DDP, SAMPLINGS, CounterStream, nice_mask, partition


def allreduce_bytes(values: int, n: int, itemsize: int) -> float:
    """Bytes one rank sends (and receives) in a bandwidth-optimal all-reduce of ``values`` numbers.

    A ring all-reduce (reduce-scatter, then all-gather) moves ``2 (n-1)/n`` of the
    buffer through each rank's link in each direction, the least any all-reduce
    can move (Patarasuk and Yuan 2009); zero for ``n = 1``.
    """
    return 2.0 * (n - 1) / n * values * itemsize


def allgather_bytes(values: int, n: int, itemsize: int) -> int:
    """Bytes one rank sends (and receives) in an all-gather of ``values`` numbers per rank.

    Each rank's buffer must reach the ``n - 1`` others, and it must receive
    theirs: ``(n-1) * values * itemsize`` each way, in a ring or direct exchange.
    """
    return (n - 1) * values * itemsize


class SparsificationState:
    r"""Settings and memory of :func:`~blockcd.torch.sparsify_hook`.

    Each gradient bucket of ``N`` values is cut into ``m`` contiguous blocks
    (``blockcd.partition(N, m)``); rank ``i`` sends the values of ``tau`` of
    them and the hook returns

    .. math::

        \bar h + \frac{m}{\tau n} \sum_{j=1}^{n} P_{S_j}(g_j - h_j),

    with :math:`h_j = 0` unless ``shifts=True`` (ISEGA/DIANA shifts, updated as
    :math:`h_j \leftarrow h_j + P_{S_j}(g_j - h_j)`); :math:`\bar h` is their mean.
    ``tau = m`` is the dense all-reduce, bit for bit.

    Parameters
    ----------
    process_group : torch.distributed.ProcessGroup or None
        The group that averages (``None``: the default group).
    m : int
        Blocks per bucket, ``m >= 1``; every bucket must hold at least ``m`` values.
    tau : int
        Blocks each rank sends per bucket, ``1 <= tau <= m``.
    seed : int
        Run seed (non-negative); with the rank, step and bucket index it decides the blocks.
    sampling : {'independent', 'shared'}
        ``'independent'``: each rank its own blocks, values exchanged by all-gather.
        ``'shared'``: one choice for all ranks (the rand-k of gradient-compression
        libraries), values summed by all-reduce.
    shifts : bool
        Keep ISEGA's per-rank shift, so that heterogeneous data converge.

    Attributes
    ----------
    step : int
        Steps (backward passes) finished.
    bytes_sent : list of float
        Per finished step, summed over buckets: the bytes this rank sent.
    bytes_received : list of float
        Per finished step, summed over buckets: the bytes this rank received.
    dense_bytes : list of float
        Per finished step, summed over buckets: what a dense all-reduce of the same buckets
        would have moved each way.
    """

    def __init__(
        self,
        process_group: "dist.ProcessGroup | None" = None,
        *,
        m: int,
        tau: int,
        seed: int = 0,
        sampling: str = "independent",
        shifts: bool = False,
    ):
        if process_group is not None and not isinstance(process_group, dist.ProcessGroup):
            raise TypeError(
                f"process_group must be a torch.distributed.ProcessGroup or None, got {type(process_group).__name__}")
        self.process_group = process_group
        self.m = check_int("m", m, 1)
        self.tau = check_int("tau", tau, 1, self.m)
        self.seed = check_seed("seed", seed)
        self.sampling = check_choice("sampling", sampling, SAMPLINGS)
        if not isinstance(shifts, (bool, np.bool_)):
            raise TypeError(f"shifts must be True or False, got {type(shifts).__name__} {shifts!r}")
        self.shifts = bool(shifts)
        self.step = 0
        self.bytes_sent: list[float] = []
        self.bytes_received: list[float] = []
        self.dense_bytes: list[float] = []
        self._current = [0.0, 0.0, 0.0]
        self._buckets: dict[int, _Bucket] = {}

    # ------------------------------------------------------------ counters
    @property
    def total_bytes_sent(self) -> float:
        """Bytes this rank has sent over all steps (the sum of ``bytes_sent``)."""
        return float(sum(self.bytes_sent))

    @property
    def total_bytes_received(self) -> float:
        """Bytes this rank has received over all steps (the sum of ``bytes_received``)."""
        return float(sum(self.bytes_received))

    @property
    def total_dense_bytes(self) -> float:
        """Bytes the dense all-reduce would have moved for this rank over the same steps."""
        return float(sum(self.dense_bytes))

    def _count(self, sent: float, received: float, dense: float) -> None:
        self._current[0] += sent
        self._current[1] += received
        self._current[2] += dense

    def _end_step(self) -> None:
        self.bytes_sent.append(self._current[0])
        self.bytes_received.append(self._current[1])
        self.dense_bytes.append(self._current[2])
        self._current = [0.0, 0.0, 0.0]
        self.step += 1

    # ------------------------------------------------------------ blocks
    def masks(self, bucket_index: int, step: int) -> np.ndarray:
        """The (n, m) boolean block mask of every rank for bucket ``bucket_index`` at ``step``.

        Regenerated from (seed, bucket, step) without touching the state: what each
        rank computes inside the hook (for ``tau = m``, all blocks).
        """
        n = dist.get_world_size(self.process_group)
        if self.tau == self.m:
            return np.ones((n, self.m), dtype=bool)
        rows = n if self.sampling == "independent" else 1
        stream = CounterStream(self.seed, (PURPOSE_DDP, check_int("bucket_index", bucket_index, 0)), rows, self.m)
        mask = nice_mask(stream.draw(check_int("step", step, 0)), self.tau)
        return np.broadcast_to(mask, (n, self.m))

    def _bucket(self, index: int, numel: int, signature, n: int) -> "_Bucket":
        b = self._buckets.get(index)
        if b is None or b.numel != numel or b.signature != signature:
            # new bucket, or DDP rebuilt its buckets after the first step: fresh blocks and shifts
            if numel < self.m:
                raise ValueError(
                    f"m must be at most the bucket's size: bucket {index} holds {numel} values, m = {self.m} "
                    f"(allowed: 1 <= m <= {numel}); lower m or merge buckets (DDP's bucket_cap_mb)")
            rows = n if self.sampling == "independent" else 1
            b = _Bucket(index, numel, signature, partition(numel, self.m),
                        CounterStream(self.seed, (PURPOSE_DDP, index), rows, self.m), rows)
            self._buckets[index] = b
        return b

    # ------------------------------------------------------------ the exchange
    def reduce(self, buffer: torch.Tensor, bucket_index: int = 0, *, last: bool = True,
               signature=None) -> torch.futures.Future[torch.Tensor]:
        """Average ``buffer`` (this rank's flat gradients of one bucket) across the group.

        What :func:`~blockcd.torch.sparsify_hook` runs on ``bucket.buffer()``; exposed so that the
        exchange can be driven without a model (tests, the chapter's Monte Carlo).
        ``last`` ends the step.  Returns a future of the averaged tensor (``buffer``
        itself is overwritten).
        """
        if not isinstance(buffer, torch.Tensor) or not buffer.is_floating_point():
            raise TypeError(f"the bucket must be a floating-point torch.Tensor, got "
                            f"{getattr(buffer, 'dtype', type(buffer).__name__)}")
        group = self.process_group
        n = dist.get_world_size(group)
        rank = dist.get_rank(group)
        numel = buffer.numel()
        size = buffer.element_size()
        if self.tau == self.m:
            # the dense path: what DDP's reducer does without a hook (multiply by 1/n, then sum)
            b = self._bucket(bucket_index, numel, signature, n)
            dense = allreduce_bytes(numel, n, size)
            self._count(dense, dense, dense)
            if last:
                self._end_step()
            buffer.mul_(1.0 / n)
            return dist.all_reduce(buffer, group=group, async_op=True).get_future().then(lambda f: buffer)
        b = self._bucket(bucket_index, numel, signature, n)
        flat = buffer.view(-1)
        idx, rows = b.coordinates(self.step, self.tau)  # (rows, tau * width) indices, padding -> numel
        if self.shifts:
            b.ensure_shifts(flat)
            diff = flat - b.h_own[:numel]
        else:
            diff = flat
        padded = torch.cat([diff, diff.new_zeros(1)])
        own = idx[rank if rows > 1 else 0]
        message = torch.index_select(padded, 0, own)  # (index_select: 3x faster than padded[own])
        # the all-reduce of shared sampling sums in place: keep this rank's values for its shift
        own_values = message.clone() if self.shifts and rows == 1 else message
        width = message.numel()
        dense = allreduce_bytes(numel, n, size)
        scale = self.m / (self.tau * n)
        if rows > 1:
            parts = [torch.empty_like(message) for _ in range(n)]
            work = dist.all_gather(parts, message, group=group, async_op=True)
            self._count(allgather_bytes(width, n, size), allgather_bytes(width, n, size), dense)
            coords = idx.reshape(-1)
        else:
            parts = [message]
            work = dist.all_reduce(message, group=group, async_op=True)
            self._count(allreduce_bytes(width, n, size), allreduce_bytes(width, n, size), dense)
            coords = own
        if last:
            self._end_step()

        def aggregate(_fut) -> torch.Tensor:
            total = flat.new_zeros(numel + 1)
            total.index_add_(0, coords, torch.cat(parts))  # the sum of P_{S_j}(g_j - h_j)
            total = total[:numel]
            if self.shifts:
                out = b.h_mean + scale * total
                b.h_mean.add_(total, alpha=1.0 / n)
                # h_i + P_{S_i}(g_i - h_i); padding slots add zeros to the spare last entry
                b.h_own.index_add_(0, own, own_values)
            else:
                out = scale * total
            flat.copy_(out)
            return buffer

        return work.get_future().then(aggregate)


class _Bucket:
    """One bucket's partition into blocks, its stream of block choices and its shifts."""

    def __init__(self, index, numel, signature, blocks, stream, rows):
        self.index, self.numel, self.signature = index, numel, signature
        self.blocks, self.stream, self.rows = blocks, stream, rows
        self.width = int(blocks.sizes.max())
        self._offsets = np.arange(self.width)
        self.h_own: torch.Tensor | None = None
        self.h_mean: torch.Tensor | None = None

    def mask(self, step: int, tau: int) -> np.ndarray:
        if tau == self.blocks.m:
            return np.ones((self.rows, self.blocks.m), dtype=bool)
        return nice_mask(self.stream.draw(step), tau)

    def coordinates(self, step: int, tau: int) -> tuple[torch.Tensor, int]:
        """Coordinates of each row's tau blocks, ``width`` slots per block (short blocks padded with ``numel``)."""
        mask = self.mask(step, tau)
        chosen = np.nonzero(mask)[1].reshape(self.rows, tau)  # sorted block numbers per row
        start = self.blocks.starts[chosen][..., None] + self._offsets
        valid = self._offsets < self.blocks.sizes[chosen][..., None]
        idx = np.where(valid, start, self.numel).reshape(self.rows, tau * self.width)
        return torch.from_numpy(idx), self.rows

    def ensure_shifts(self, flat: torch.Tensor) -> None:
        if self.h_own is None or self.h_own.dtype != flat.dtype:
            self.h_own = flat.new_zeros(self.numel + 1)  # a spare last entry takes the padding slots
            self.h_mean = torch.zeros_like(flat)


def sparsify_hook(state: SparsificationState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: the unbiased average of tau of m blocks per rank.

    Register with ``ddp_model.register_comm_hook(state, sparsify_hook)``; see
    :class:`~blockcd.torch.SparsificationState` for the formula.  The bucket's parameters
    are part of its identity: when DDP rebuilds its buckets after the first
    step, a changed bucket starts with fresh shifts.
    """
    if not isinstance(state, SparsificationState):
        raise TypeError(f"state must be a SparsificationState, got {type(state).__name__}")
    signature = tuple(id(p) for p in bucket.parameters())
    return state.reduce(bucket.buffer(), bucket.index(), last=bucket.is_last(), signature=signature)

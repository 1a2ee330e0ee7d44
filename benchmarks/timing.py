"""The benchmark's clock: interleaved repetitions, medians and ratios, and the rows of its table."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field

import numpy as np

from blockcd.blocks import BlockSampler


# ------------------------------------------------------------------ timing
class _Times:
    """Wall-clock and CPU times (seconds) of repeated calls, by name."""

    def __init__(self, names):
        self.wall = {name: [] for name in names}
        self.cpu = {name: [] for name in names}

    def median(self, name: str, clock: str = "wall") -> float:
        return float(np.median(getattr(self, clock)[name]))

    def ratio(self, num: str, den: str) -> tuple[float | None, float | None]:
        """(wall, cpu) ratios of the medians; None for a clock on which either median is not positive.

        A time from :meth:`per_iteration` is a difference of two runs: when the iterations cost less
        than the noise between the runs, or than the clock's resolution (``process_time`` ticks in
        milliseconds on some systems), the difference can be zero or negative, and a ratio of it
        would be meaningless (a negative "fraction of an iteration").  Such a ratio is not reported.
        """
        out = []
        for c in ("wall", "cpu"):
            a, b = self.median(num, c), self.median(den, c)
            out.append(a / b if a > 0 and b > 0 else None)
        return tuple(out)

    def scale(self, name: str, factor: float) -> None:
        for clock in (self.wall, self.cpu):
            clock[name] = [t * factor for t in clock[name]]

    def per_iteration(self, short: str, long: str, iters: int) -> str:
        """Add ``long + '/it'`` = (long run - short run) / iters, paired per round, and return its name.

        The difference removes what a run costs once (set-up, the last recorded
        point, the history), leaving the cost of ``iters`` iterations.
        """
        for clock in (self.wall, self.cpu):
            clock[long + "/it"] = [(a - b) / iters for a, b in zip(clock[long], clock[short])]
        return long + "/it"


def _interleaved(fns: dict, reps: int) -> _Times:
    """Call every function once per round, ``reps`` rounds, and record its times.

    Alternating the functions within each round exposes them to the same
    machine load, so the ratios of their medians are steadier than the times.
    """
    T = _Times(fns)
    for _ in range(reps):
        for name, fn in fns.items():
            gc.collect()
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            T.wall[name].append(time.perf_counter() - w0)
            T.cpu[name].append(time.process_time() - c0)
    return T


def _repeat(f, x, k: int) -> None:
    for _ in range(k):
        f(x)


def _draw(sampler: BlockSampler, ks, k: int) -> None:
    """Draw the masks of the next ``k`` iterations, in order, as a run does."""
    for _ in range(k):
        sampler.masks(next(ks))


def _draw_uniforms(sampler: BlockSampler, ks, k: int) -> None:
    """Only the Philox draws of the next ``k`` iterations."""
    for _ in range(k):
        sampler.stream.draw(next(ks))


def at_most(value: float | None, target: float) -> bool | None:
    """``value <= target``, or None when nothing was measured."""
    return None if value is None else value <= target


def at_least(value: float | None, target: float) -> bool | None:
    """``value >= target``, or None when nothing was measured."""
    return None if value is None else value >= target


@dataclass
class Row:
    """One line of the benchmark's table (``met`` None: a line for information, or not judged).

    ``check`` marks a correctness check (the iterates agree, sparse data stay sparse), judged at every
    size; the other targets are about time and memory at the full sizes, and ``--quick`` does not
    judge them.
    """

    case: str
    sizes: str
    measured: float | None
    target: str
    met: bool | None
    note: str = ""
    cpu: float | None = None
    extra: dict = field(default_factory=dict)
    check: bool = False

    def verdict(self) -> str:
        """'yes', 'NO', or '-' for a row without a target or not judged."""
        return "-" if self.met is None else ("yes" if self.met else "NO")

"""What every MPI rank runs beside its method: the clock, the watchdog, aborting, the history file.

Shared by the synchronous rank programs (:mod:`blockcd.mpi.ranks`) and the asynchronous ones
(:mod:`blockcd.mpi.arrivals`).  Nothing here imports ``mpi4py``: the communicator is passed in.
"""

import sys
import threading
import time
from pathlib import Path

import numpy as np

from .cli import EXIT_TIMEOUT


class Clock:
    """Splits a rank's wall time per iteration into compute and communication."""

    def __init__(self, iters):
        self.compute = np.zeros(iters)
        self.comm = np.zeros(iters)
        self.last = time.perf_counter()

    def lap(self, kind: np.ndarray, k: int) -> None:
        now = time.perf_counter()
        kind[k] += now - self.last
        self.last = now


class Watchdog:
    """Aborts the job when no iteration completes within ``timeout`` seconds."""

    def __init__(self, comm, rank, role, timeout):
        self.comm, self.rank, self.role, self.timeout = comm, rank, role, timeout
        self.k = -1
        self.waiting = None  # what the rank is waiting for (named in the abort message), if it says
        self.beat = time.monotonic()
        self.done = threading.Event()
        if timeout > 0:
            threading.Thread(target=self._watch, daemon=True).start()

    def tick(self, k):
        self.k = k
        self.beat = time.monotonic()

    def _watch(self):
        while not self.done.wait(min(1.0, self.timeout / 10)):
            if time.monotonic() - self.beat > self.timeout:
                what = "" if self.waiting is None else f", waiting for {self.waiting}"
                say(f"rank {self.rank} ({self.role}): no progress for {self.timeout:g} s in iteration "
                     f"{self.k}{what} (--timeout); aborting the job")
                abort(self.comm, EXIT_TIMEOUT)


def say(msg: str) -> None:
    print(f"blockcd.mpi: {msg}", file=sys.stderr, flush=True)


# MPI_Abort kills every rank at once, and the launcher may stop forwarding a rank's stderr before
# the line it has just written reaches the terminal; a short pause first lets the message through.
ABORT_GRACE = 0.5


def abort(comm, code: int) -> None:
    """Abort the whole job with ``code`` once the message just printed has had time to be forwarded."""
    time.sleep(ABORT_GRACE)
    comm.Abort(code)


def inject(fail):
    rank, k, how = fail
    if how == "hang":
        while True:
            time.sleep(3600)
    raise RuntimeError(f"injected failure (--fail-at {rank}:{k})")


def summary(hist) -> str:
    """What the summary line says of the run: ||x - x*||^2, or ||grad f||^2 on a non-convex problem."""
    if hist.grad2 is None:
        return f"||x - x*||^2 from {hist.dist2[0]:.3g} to {hist.dist2[-1]:.3g}"
    return f"||grad f(x)||^2 from {hist.grad2[0]:.3g} to {hist.grad2[-1]:.3g}"


def save(path, hist, extras):
    """Write the History and the MPI extras to ``path`` whole: into a temporary file, then renamed."""
    import os

    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
    try:
        hist.save(tmp)
        with np.load(tmp, allow_pickle=False) as z:
            arrays = {key: z[key] for key in z.files}
        arrays.update(extras)
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()

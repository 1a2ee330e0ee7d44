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


#: how many times the slowest round so far a round may take before the default watchdog (no
#: ``--timeout``) aborts the job, and never less than TIMEOUT_FLOOR seconds (see :class:`Watchdog`)
TIMEOUT_FACTOR = 100
TIMEOUT_FLOOR = 120.0


class Watchdog:
    """Aborts the job when no iteration completes within the time allowed, naming the rank, the iteration
    and what it waits for.

    ``timeout`` seconds (``--timeout T``; 0: never), or, with ``timeout=None`` (the default), a limit
    that follows the job: :data:`TIMEOUT_FACTOR` times the slowest round seen so far, and at least
    :data:`TIMEOUT_FLOOR` seconds.  Why these numbers: a round's time varies with the load of the
    machine.  Measured on 2 cores shared with other work (5 ranks, 1,000-3,000 rounds), single rounds
    took up to 135 times the median (282 ms against 2 ms) and up to 33 times the slowest of the first
    ten; so a limit of 100 times the slowest round *so far* is not reached by a job that is merely slow
    once its rounds take a second or more, and below that the floor rules: 2 minutes is 400 times
    the slowest round measured, it covers the first rounds (no time measured yet, caches cold), and
    it is short against the hours a stuck job would hold its nodes.  Pass ``--timeout`` for a job
    whose rounds you know; ``--timeout 0`` never aborts.

    A worker (``patient=True``) waits a quarter of the limit longer, and at least one second more, than
    the master: when a worker stalls, the master, which knows whom it waits for (``waiting``), speaks
    first and names it.
    """

    def __init__(self, comm, rank, role, timeout, patient=False):
        self.comm, self.rank, self.role, self.timeout = comm, rank, role, timeout
        self.patient = patient
        self.k = -1
        self.waiting = None  # what the rank is waiting for (named in the abort message), if it says
        self.beat = time.monotonic()
        self.slowest = 0.0
        self.done = threading.Event()
        if timeout is None or timeout > 0:
            threading.Thread(target=self._watch, daemon=True).start()

    def limit(self) -> float:
        """Seconds a round may take now: ``timeout``, or the default's rule (a worker waits longer)."""
        if self.timeout is not None:
            return self.timeout
        return max(TIMEOUT_FLOOR, TIMEOUT_FACTOR * self.slowest)

    def tick(self, k):
        now = time.monotonic()
        if k > 0:  # round k - 1 has ended
            self.slowest = max(self.slowest, now - self.beat)
        self.k = k
        self.beat = now

    def _watch(self):
        while not self.done.wait(min(1.0, self.limit() / 10)):
            limit = self.limit()
            grace = max(1.0, limit / 4) if self.patient else 0.0
            if time.monotonic() - self.beat > limit + grace:
                what = "" if self.waiting is None else f", waiting for {self.waiting}"
                why = ("--timeout" if self.timeout is not None else
                       f"the default --timeout: {TIMEOUT_FACTOR} times the slowest round so far "
                       f"({self.slowest:.3g} s), at least {TIMEOUT_FLOOR:g} s")
                say(f"rank {self.rank} ({self.role}): no progress for {limit:.3g} s in iteration "
                    f"{self.k}{what} ({why}); aborting the job")
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

"""Start K Gloo processes on this machine, run a function in each, and always stop them.

:func:`spawn` is what the training command, the tests and the chapter use to
run a function on K ranks: a rendezvous store on 127.0.0.1 at a port the
operating system picks, Gloo on the loopback interface, one thread per rank,
a Gloo timeout on every collective, and a wall-clock guard on the whole job.
A rank that raises ends the job with an error that names it; a job that
outlives the guard is killed.  Nothing here knows about models or hooks.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from .._validate import check_float, check_int

HOST = "127.0.0.1"
#: the loopback interface, for Gloo's connections between ranks
LOOPBACK = "lo" if sys.platform.startswith("linux") else "lo0"


class RankFailed(RuntimeError):
    """A rank raised or exited early; the message names the rank and its error."""


def _entry(rank: int, nprocs: int, port: int, gloo_timeout: float, outdir: str, fn, args) -> None:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", LOOPBACK)
    os.environ.update(MASTER_ADDR=HOST, MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(nprocs))
    torch.set_num_threads(1)
    timeout = timedelta(seconds=gloo_timeout)
    store = dist.TCPStore(HOST, port, nprocs, is_master=False, timeout=timeout)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=nprocs, timeout=timeout)
    try:
        result = fn(rank, nprocs, *args)
    except BaseException:
        # when it failed, before its connections close and make its peers fail too
        (Path(outdir) / f"failed{rank}").write_text(str(time.monotonic_ns()))
        raise
    finally:
        dist.destroy_process_group()
    with open(Path(outdir) / f"rank{rank}.pkl", "wb") as f:
        pickle.dump(result, f)


def _report(ctx, outdir: str) -> str:
    """Name the rank that failed first (its peers then fail on the broken connection) and its traceback."""
    failed = []
    for rank, path in enumerate(ctx.error_files):
        mark = Path(outdir) / f"failed{rank}"
        if path and os.access(path, os.R_OK) and mark.exists():
            with open(path, "rb") as f:
                failed.append((int(mark.read_text()), rank, pickle.load(f)))
    if not failed:
        return "a rank failed without a traceback"
    failed.sort()
    _, first, trace = failed[0]
    last = trace.strip().splitlines()[-1]
    others = ", ".join(str(r) for _, r, _ in failed[1:])
    also = f" (then rank(s) {others})" if others else ""
    return f"rank {first} failed first{also}: {last}\n{trace}"


def spawn(fn: Callable[..., Any], nprocs: int, args: tuple = (), *, timeout: float = 300.0,
          gloo_timeout: float = 60.0) -> list[Any]:
    """Run ``fn(rank, nprocs, *args)`` in ``nprocs`` Gloo processes; return the results by rank.

    ``fn`` must be importable (a module-level function) and its result picklable.
    The process group is initialised before ``fn`` runs and destroyed after.
    Raises :class:`RankFailed` if a rank fails (the others are stopped) and
    ``TimeoutError`` if the job runs longer than ``timeout`` seconds (all ranks
    are killed); a collective that waits longer than ``gloo_timeout`` seconds
    fails on its rank.
    """
    nprocs = check_int("nprocs", nprocs, 1)
    timeout = check_float("timeout", timeout, positive=True)
    gloo_timeout = check_float("gloo_timeout", gloo_timeout, positive=True)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    # the rendezvous store lives in this process, on a port the operating system picks
    store = dist.TCPStore(HOST, 0, nprocs, is_master=True, wait_for_workers=False,
                          timeout=timedelta(seconds=gloo_timeout))
    outdir = tempfile.mkdtemp(prefix="blockcd-torch-")
    ctx = mp.start_processes(_entry, args=(nprocs, store.port, gloo_timeout, outdir, fn, tuple(args)),
                             nprocs=nprocs, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout
    try:
        while not ctx.join(timeout=0.2):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the {nprocs}-rank job ran longer than {timeout:g} s; its ranks were killed")
        results = []
        for rank in range(nprocs):
            with open(Path(outdir) / f"rank{rank}.pkl", "rb") as f:
                results.append(pickle.load(f))
        return results
    except mp.ProcessRaisedException:
        time.sleep(0.5)  # the peers' tracebacks, for the report
        raise RankFailed(_report(ctx, outdir)) from None
    except mp.ProcessExitedException as exc:
        raise RankFailed(f"rank {exc.error_index} exited with status {exc.exit_code}") from None
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.terminate()
        for p in ctx.processes:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        del store
        shutil.rmtree(outdir, ignore_errors=True)

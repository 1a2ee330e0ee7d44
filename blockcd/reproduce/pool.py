"""How ``reproduce`` runs experiments in parallel: spawned processes, one BLAS thread each.

:func:`spawn_map` runs a module-level function over items in spawned processes and, interrupted,
ends them at once; :func:`one_thread` limits an experiment to one BLAS thread.  Used by
:func:`blockcd.reproduce.run_suite` and :func:`blockcd.reproduce.paper.run_paper` with ``jobs > 1``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence


def one_thread(fn):
    """Run an experiment with one BLAS thread: its products are small, and more threads only contend."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper


def spawn_map(fn, items: Sequence, jobs: int):
    """``fn(item)`` for each of ``items``, in their order, in ``min(jobs, len(items))`` spawned processes.

    A generator: each result comes as soon as it and every result before it are done.  ``fn`` must
    be a module-level function (spawned workers import it); ``run_suite`` and ``run_paper`` run
    their experiments through it with ``jobs > 1``.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=multiprocessing.get_context("spawn"))
    try:
        yield from pool.map(fn, items)
    except BaseException:
        # Ctrl-C (or an error): end the workers now; a plain shutdown would wait for every queued item,
        # since a worker process that catches the interrupt goes on with the next
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(5)
        raise
    pool.shutdown()

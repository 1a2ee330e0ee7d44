"""Asynchronous IS-SGD on MPI ranks (the paper's Algorithm 8): no rounds, each message applied on arrival.

What ``mpiexec -n K python -m blockcd.mpi --method is-sgd-async`` runs once the command line is
checked (:func:`blockcd.mpi.ranks.main` dispatches here): the master applies each worker's message as
it arrives and answers that worker alone; the History it writes records the arrivals, which
:func:`blockcd.run` replays (:mod:`blockcd.asynchronous`).
"""

import json
import time

import numpy as np

from ..messages import Selection
from .job import inject, save, summary
from .wire import TAG_POINT, TAG_STOP, TAG_VALUES


def worker(comm, cfg, own, parts, watchdog, fail, slow):
    """Asynchronous worker i (rank i + 1): compute on the point it holds, send its tau blocks with a non-blocking
    send, wait for the master's answer (a new point, or the order to stop); its j-th message uses the blocks
    and minibatch of (seed, i, j).  Returns (messages sent, bytes sent, compute and communication seconds)."""
    from mpi4py import MPI

    i = own.index
    rule, blocks, sampler, batches = parts
    x = np.array(cfg.x0, dtype=np.float64)
    st = MPI.Status()
    k, up, t_compute, t_comm = 0, 0, 0.0, 0.0
    while True:
        watchdog.tick(k)
        t0 = time.perf_counter()
        if fail is not None and fail[1] == k:
            inject(fail)
        if slow:
            time.sleep(slow)
        chosen = sampler.worker_blocks(k, i)
        coords = None if chosen.size == cfg.m else blocks.coords(chosen)
        idx = None if batches is None else batches.worker(k, i)
        vals, _ = rule.send(own, None, x, idx, Selection(coords))
        vals = np.ascontiguousarray(vals, dtype=np.float64)
        t1 = time.perf_counter()
        req = comm.Isend(vals, dest=0, tag=TAG_VALUES)
        comm.Recv(x, source=0, tag=MPI.ANY_TAG, status=st)
        req.Wait()
        up += vals.nbytes
        t_compute += t1 - t0
        t_comm += time.perf_counter() - t1
        k += 1
        if st.Get_tag() == TAG_STOP:
            return k, up, t_compute, t_comm


def master(comm, cfg, s, watchdog, fail):
    """The asynchronous master: apply each message as it arrives (from any worker), answer that worker alone with
    a non-blocking send; after ``iters`` arrivals, answer every worker's last message with the order to stop.

    Records every arrival: the worker, its delay, the time.  With ``--max-delay M`` a worker whose answer is
    more than M arrivals overdue stops the job, named."""
    from mpi4py import MPI

    problem, rule, blocks = s.problem, s.method.rule, s.blocks
    n, d = problem.n, problem.d
    sampler, rec = s.sampler(), s.recorder()      # the minibatches are the workers' own
    state = rule.start(s, cfg.x0.copy())
    scale = cfg.m / cfg.tau
    count = np.zeros(n, dtype=np.int64)
    since = np.zeros(n, dtype=np.int64)
    record = np.empty(cfg.iters, dtype=np.int64)
    times = np.empty(cfg.iters)
    mask = np.zeros((n, cfg.m), dtype=bool)
    buf = np.empty(d)
    out = [np.empty(d) for _ in range(n)]
    reqs = [MPI.REQUEST_NULL] * n
    st = MPI.Status()
    eval_time = np.zeros(cfg.iters + 1)
    down = 0
    t_start = time.perf_counter()
    for t in range(cfg.iters):
        watchdog.tick(t)
        if fail is not None and fail[1] == t:
            inject(fail)
        t0 = time.perf_counter()
        rec.point(t, rule.iterate(state))
        eval_time[t] = time.perf_counter() - t0
        if cfg.max_delay is not None:
            late = np.flatnonzero(t - since > cfg.max_delay)
            if late.size:
                j = int(late[np.argmax((t - since)[late])])      # the most overdue
                raise RuntimeError(f"worker {j + 1} (rank {j + 1}) has not answered for {t - since[j]} arrivals, "
                                   f"more than --max-delay {cfg.max_delay}")
        watchdog.waiting = "a message from any worker"
        comm.Recv(buf, source=MPI.ANY_SOURCE, tag=TAG_VALUES, status=st)
        i = st.Get_source() - 1
        chosen = sampler.worker_blocks(int(count[i]), i)
        coords = None if chosen.size == cfg.m else blocks.coords(chosen)
        size = d if coords is None else coords.size
        if st.Get_count(MPI.DOUBLE) != size:
            raise RuntimeError(f"worker {i + 1} (rank {i + 1}) sent {st.Get_count(MPI.DOUBLE)} numbers in its message "
                               f"{count[i]}, expected {size}")
        times[t] = time.perf_counter() - t_start
        record[t] = i
        mask[i, chosen] = True
        rec.sent(t, mask)
        mask[i, chosen] = False
        g = s.step_at(t)
        rec.stepped(t, g)
        z = rule.arrive(state, i, coords, buf[:size], scale, g)
        reqs[i].Wait()                                   # the previous answer to worker i has left
        out[i][:] = z
        reqs[i] = comm.Isend(out[i], dest=i + 1, tag=TAG_POINT)
        down += out[i].nbytes
        count[i] += 1
        since[i] = t + 1
    t0 = time.perf_counter()
    rec.point(cfg.iters, rule.iterate(state))
    eval_time[cfg.iters] = time.perf_counter() - t0
    # every worker has one message on its way (or about to be): answer each with the order to stop
    stop = np.empty(0)
    stopped = np.zeros(n, dtype=bool)
    for _ in range(n):
        left = np.flatnonzero(~stopped)
        watchdog.tick(cfg.iters)
        watchdog.waiting = "the last message of " + ", ".join(f"worker {j + 1} (rank {j + 1})" for j in left)
        comm.Recv(buf, source=MPI.ANY_SOURCE, tag=TAG_VALUES, status=st)
        i = st.Get_source() - 1
        reqs[i].Wait()
        reqs[i] = comm.Isend(stop, dest=i + 1, tag=TAG_STOP)
        stopped[i] = True
    MPI.Request.Waitall(reqs)
    watchdog.waiting = None
    t0 = time.perf_counter()
    x = rule.iterate(state)
    eval_time[cfg.iters] = time.perf_counter() - t0
    return rec, x, record, times, eval_time, down


def run(comm, cfg, argv, rank, ranks, own, parts, watchdog, fail, slow, t_setup):
    """Asynchronous IS-SGD on the ranks: the run, then every rank's counters to the master, then the History."""
    from mpi4py import MPI

    from ..asynchronous import finish

    t0 = time.perf_counter()
    if rank == 0:
        rec, x, record, times, eval_time, down = master(comm, cfg, cfg.run, watchdog, fail)
        mine = np.zeros(4)
    else:
        mine = np.array(worker(comm, cfg, own, parts, watchdog, fail, slow), dtype=float)
    wall = time.perf_counter() - t0
    watchdog.done.set()
    row = np.concatenate((mine, [t_setup, wall]))
    table = np.empty((ranks, row.size)) if rank == 0 else None
    comm.Gather(row, table, root=0)
    hosts = comm.gather(MPI.Get_processor_name(), root=0)
    if rank != 0:
        return 0
    problem, it = cfg.run.problem, cfg.iters
    # the counters of the messages applied (a worker's last message, answered with stop, is not counted)
    hist = finish(rec, x, cfg.seed, record, times, problem)
    if cfg.out is not None:
        meta = {
            "ranks": ranks, "problem": cfg.problem_name, "problem_options": cfg.problem_options,
            "send_indices": False, "argv": list(argv), "hosts": hosts,
            "mpi_library": MPI.Get_library_version().strip().splitlines()[0],
            "setup_seconds": table[:, 4].tolist(), "wall_seconds": table[:, 5].tolist(),
            "asynchronous": True, "slow": {str(k): v for k, v in cfg.slow.items()}, "max_delay": cfg.max_delay,
        }
        save(cfg.out, hist, {
            "mpi_meta": np.array(json.dumps(meta)),
            "mpi_messages": table[1:, 0],       # messages each worker sent, its last (answered with stop) included
            "mpi_up": table[1:, 1],             # bytes each worker sent, all messages
            "mpi_compute": table[1:, 2],        # seconds each worker computed (a straggler's sleep included)
            "mpi_comm": table[1:, 3],           # seconds each worker spent sending and waiting for the answer
            "mpi_eval": eval_time,
            "mpi_down": np.array(float(down)),
        })
    if not cfg.quiet:
        print(f"blockcd.mpi: {cfg.method} on {ranks} ranks (n = {ranks - 1} workers), m = {cfg.m}, "
              f"tau = {cfg.tau}, {it} arrivals in {wall:.3g} s (messages per worker "
              + ", ".join(str(int(v)) for v in table[1:, 0]) + f"; largest delay {int(hist.delays.max())}): "
              + summary(hist)
              + (f"; wrote {cfg.out}" if cfg.out is not None else ""), flush=True)
    return 0

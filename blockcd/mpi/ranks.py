"""The MPI rank programs: the master (rank 0) and the workers.

What ``mpiexec -n K python -m blockcd.mpi`` runs on each rank (see the
package docstring of :mod:`blockcd.mpi`).  Imports ``mpi4py`` only inside
the ranks.  The command line is :mod:`blockcd.mpi.cli`, the message formats
:mod:`blockcd.mpi.wire`, the asynchronous method's ranks :mod:`blockcd.mpi.arrivals`, the
clock, watchdog and history file :mod:`blockcd.mpi.job`, the launcher and the measurements
:mod:`blockcd.mpi.launch`.
"""


import json
import sys
import time
from collections.abc import Sequence

import numpy as np

from .. import theory
from ..messages import Selection, add_sent
from ..rules import Received
from . import agree, arrivals
from .cli import EXIT_FAILED, EXIT_USAGE, UsageError, configure, progress
from .job import Clock, Watchdog, abort, inject, save, say, summary
from .wire import TAG_INDICES, TAG_VALUES, pack_indices, unpack_chosen, unpack_indices


# ---------------------------------------------------------------- the ranks
def _worker(comm, cfg, own, parts, watchdog, fail, slow=0.0):
    """Worker i (rank i + 1): receive the point, send the values of its tau blocks (the rule's message)."""
    i = own.index
    rule, blocks, sampler, batches = parts
    dense = cfg.tau == cfg.m
    state = rule.worker_init(own, cfg.x0)
    x = np.empty(own.d)
    up = np.zeros(cfg.iters)
    clock = Clock(cfg.iters)
    for k in range(cfg.iters):
        watchdog.tick(k)
        watchdog.waiting = "the master's point (rank 0)"
        comm.Bcast(x, root=0)
        watchdog.waiting = None
        clock.lap(clock.comm, k)
        if fail is not None and fail[1] == k:
            inject(fail)
        if slow:  # --slow: a straggler made slow on purpose
            time.sleep(slow)
        if rule.own_blocks:  # the rule chooses the blocks: their values, then their indices
            up[k] = _send_own(comm, cfg, own, rule, state, x, None if batches is None else batches.worker(k, i),
                              blocks, clock, k)
            continue
        chosen = None if dense else sampler.worker_blocks(k, i)
        if chosen is not None and chosen.size == 0:  # IBGD: this round the worker sends nothing, no message
            clock.lap(clock.compute, k)
            continue
        idx = None if batches is None else batches.worker(k, i)
        coords = None if chosen is None or chosen.size == cfg.m else blocks.coords(chosen)
        vals, _ = rule.send(own, state, x, idx, Selection(coords))
        clock.lap(clock.compute, k)
        if cfg.send_indices and not dense:
            packed = pack_indices(chosen, cfg.m)
            comm.Send(packed, dest=0, tag=TAG_INDICES)
            up[k] += packed.nbytes
        comm.Send(vals, dest=0, tag=TAG_VALUES)
        up[k] += vals.nbytes
        clock.lap(clock.comm, k)
    return clock, up


def _send_own(comm, cfg, own, rule, state, x, idx, blocks, clock, k) -> int:
    """A worker's message under a rule that chooses its own blocks: the values, then (0 < c < m blocks)
    their sorted indices, which the master cannot regenerate.  Returns the bytes sent."""
    sel = Selection.own(blocks, cfg.tau)
    vals, _ = rule.send(own, state, x, idx, sel)
    if sel.chosen is None:
        raise RuntimeError(f"the rule {type(rule).__name__} has own_blocks = True but its send() did not call "
                           "sel.choose(...): the master cannot tell which blocks were sent")
    vals = np.ascontiguousarray(vals, dtype=np.float64)
    clock.lap(clock.compute, k)
    comm.Send(vals, dest=0, tag=TAG_VALUES)
    sent = vals.nbytes
    if 0 < sel.chosen.size < cfg.m:
        packed = pack_indices(sel.chosen, cfg.m)
        comm.Send(packed, dest=0, tag=TAG_INDICES)
        sent += packed.nbytes
    clock.lap(clock.comm, k)
    return sent


def _receive_own(comm, n, blocks):
    """The master's side of :func:`_send_own`: each worker's values and chosen blocks, the size of the
    message first (``Probe``).  Returns (coordinates per worker, None: all; values; the (n, m) mask)."""
    from mpi4py import MPI

    coords, bufs, mask = [], [], np.zeros((n, blocks.m), dtype=bool)
    st = MPI.Status()
    for i in range(n):
        comm.Probe(source=i + 1, tag=TAG_VALUES, status=st)
        b = np.empty(st.Get_count(MPI.DOUBLE))
        comm.Recv(b, source=i + 1, tag=TAG_VALUES)
        if b.size == blocks.d:
            chosen, c = np.arange(blocks.m), None
        elif b.size == 0:
            chosen = c = np.zeros(0, dtype=np.int64)
        else:
            comm.Probe(source=i + 1, tag=TAG_INDICES, status=st)
            packed = np.empty(st.Get_count(MPI.BYTE), dtype=np.uint8)
            comm.Recv(packed, source=i + 1, tag=TAG_INDICES)
            chosen = unpack_chosen(packed, blocks.m)
            c = blocks.coords(chosen)
            if c.size != b.size:
                raise RuntimeError(f"worker {i + 1} (rank {i + 1}) sent {b.size} values for blocks {chosen.tolist()}, "
                                   f"which hold {c.size} coordinates")
        mask[i, chosen] = True
        coords.append(c)
        bufs.append(b)
    return coords, bufs, mask



def _wait_all(reqs, statuses, senders, watchdog) -> None:
    """``Waitall``, one request after the other, telling the watchdog whose message it waits for (named if
    it fires: a worker that has not sent)."""
    for j, r in enumerate(reqs):
        watchdog.waiting = f"worker {senders[j] + 1} (rank {senders[j] + 1})"
        if statuses is None:
            r.Wait()
        else:
            r.Wait(statuses[j])
    watchdog.waiting = None


def _master_setup(problem, cfg):
    """The step (theory's by default); raises ValueError if none applies (or, for IS-ASGD, eta > 1/L)."""
    step = cfg.step
    if not problem.convex:  # only IS-SGD gets here: setup() refused the others
        if step is None:
            if cfg.sampling != "independent":
                raise ValueError("the non-convex theory (the paper's Theorem 7) is for independent sampling: pass "
                                 "--step to run another")
            step = theory.nonconvex_step(problem, cfg.m, cfg.tau, cfg.iters)
        return step
    if step is None:
        step = theory.step_size(problem, cfg.method, cfg.m, cfg.tau, batch=cfg.batch, sampling=cfg.sampling)
    if cfg.method == "is-asgd":
        theory.asgd_parameters(problem, step)
    _ = problem.x_star, problem.f_star  # evaluation constants, computed before the clock starts
    return step



def _master(comm, cfg, s, watchdog, fail):
    """The master (rank 0): broadcast the rule's point, evaluate, regenerate the blocks, receive, add, step."""
    from mpi4py import MPI

    problem, rule, blocks = s.problem, s.method.rule, s.blocks
    n, d = problem.n, problem.d
    sampler = s.sampler()
    dense = cfg.tau == cfg.m
    bernoulli = s.method.bernoulli
    apart = rule.per_worker
    batches = s.minibatches() if apart else None
    scale = (cfg.m / cfg.tau) / n
    rec = s.recorder()
    eval_time = np.zeros(cfg.iters + 1)
    state = rule.start(s, cfg.x0.copy())
    down = np.zeros(cfg.iters)
    nbytes_idx = len(pack_indices(np.zeros(cfg.tau, dtype=np.int64), cfg.m))
    idx_bufs = [np.empty(nbytes_idx, dtype=np.uint8) for _ in range(n)]
    clock = Clock(cfg.iters)
    for k in range(cfg.iters):
        watchdog.tick(k)
        if fail is not None and fail[1] == k:
            inject(fail)
        point = np.ascontiguousarray(rule.point(state))
        clock.lap(clock.compute, k)
        comm.Bcast(point, root=0)
        down[k] = point.nbytes
        clock.lap(clock.comm, k)
        # while the workers compute: evaluate x^k (timed apart) and regenerate their block choices
        t0 = time.perf_counter()
        rec.point(k, rule.iterate(state))
        eval_time[k] = time.perf_counter() - t0
        clock.last = time.perf_counter()
        # senders: the workers that send this round, in order; coords[j]: sender j's coordinates (None: all)
        senders = range(n)
        if rule.own_blocks:
            coords = None  # the workers' own choice, read from their messages below
        elif dense:
            coords = [None] * n
        elif bernoulli:
            # IBGD: who sends is regenerated from the seed; a sender sends its whole gradient
            senders = np.flatnonzero(sampler.senders(k))
            coords = [None] * senders.size
        elif not cfg.send_indices:
            # all n choices in one draw, as the simulator makes them; row i is
            # what worker i computed alone with worker_blocks(k, i)
            chosen = sampler.choices(k)
            coords = [blocks.coords(chosen[i]) for i in range(n)]
        clock.lap(clock.compute, k)
        if rule.own_blocks:
            coords, bufs, mask = _receive_own(comm, n, blocks)
            clock.lap(clock.comm, k)
            rec.sent(k, mask)
        else:
            if cfg.send_indices and not dense:
                _wait_all([comm.Irecv(idx_bufs[i], source=i + 1, tag=TAG_INDICES) for i in range(n)], None,
                          list(range(n)), watchdog)
                clock.lap(clock.comm, k)
                coords = [blocks.coords(unpack_indices(idx_bufs[i], cfg.tau, cfg.m)) for i in range(n)]
                clock.lap(clock.compute, k)
            bufs = [np.empty(d if c is None else c.size) for c in coords]
            statuses = [MPI.Status() for _ in bufs]
            reqs = [comm.Irecv(b, source=i + 1, tag=TAG_VALUES) for i, b in zip(senders, bufs)]
            _wait_all(reqs, statuses, list(senders), watchdog)
            clock.lap(clock.comm, k)
            for i, st, b in zip(senders, statuses, bufs):
                if st.Get_count(MPI.DOUBLE) != b.size:
                    raise RuntimeError(f"worker {i + 1} (rank {i + 1}) sent {st.Get_count(MPI.DOUBLE)} numbers at "
                                       f"iteration {k}, expected {b.size}")
        if bernoulli:  # the blocks received, counted as the simulator counts them
            mask = None
            if not dense:
                mask = np.zeros((n, cfg.m), dtype=bool)
                mask[senders] = True
            rec.sent(k, mask)
        if apart:  # the master keeps each worker's message apart, with the rows it sampled (regenerated)
            total = Received.gather(d, zip(coords, bufs), batches.draw(k))
        else:
            total = np.zeros(d)
            for c, b in zip(coords, bufs):
                add_sent(total, c, b)
        g = s.step_at(k)
        rec.stepped(k, g)
        rule.step(state, total, scale, g, n)
        rule.prox(state, g)
        clock.lap(clock.compute, k)
    watchdog.tick(cfg.iters)
    x = rule.iterate(state)
    t0 = time.perf_counter()
    rec.point(cfg.iters, x)
    eval_time[cfg.iters] = time.perf_counter() - t0
    return clock, down, rec, eval_time, x


def _history(cfg, rec, x, up_rounds, down):
    """The History with the measured counters (cumulative, entry 0 = start)."""
    zero = np.zeros(1)
    return rec.history(x, cfg.seed, bytes_up=np.concatenate((zero, np.cumsum(up_rounds.mean(axis=1)))),
                       bytes_down=np.concatenate((zero, np.cumsum(down))), bytes_up_workers=up_rounds.sum(axis=0))



def _disagree(comm, rank, cfg, mine) -> bool:
    """Compare every rank's arguments and rows at the master (:mod:`blockcd.mpi.agree`); True, on every
    rank, if they differ (the master has then said how, naming the ranks)."""
    described = agree.exchange(comm, mine)
    verdict = np.zeros(1, dtype=np.int64)
    if rank == 0:
        problem, cache = cfg.run.problem, {}

        def expected(i):
            key = 0 if problem.split == "identical" else i  # every worker holds the same rows
            if key not in cache:
                cache[key] = agree.data_digest(problem.worker(i))
            return cache[key]

        lines = agree.compare(described[0], described[1:], expected)
        if lines:
            print("blockcd.mpi: error: the ranks disagree, so the job would compute a wrong result or hang:\n  "
                  + "\n  ".join(lines[:20]) + (f"\n  ... and {len(lines) - 20} more" if len(lines) > 20 else "")
                  + "\n(give every rank the same arguments and the same data)", file=sys.stderr, flush=True)
        verdict[0] = bool(lines)
    comm.Bcast(verdict, root=0)
    return bool(verdict[0])


def _run(comm, argv):
    from mpi4py import MPI

    rank, ranks = comm.Get_rank(), comm.Get_size()
    role = "master" if rank == 0 else f"worker {rank}"
    t_start = time.perf_counter()
    # 1. every rank checks the command line and builds the problem on its own: no message yet
    error = None
    try:
        cfg = configure(argv, ranks, show=rank == 0, rank=rank)
    except SystemExit as exc:  # --help
        return exc.code or 0
    except (UsageError, ValueError, TypeError, OSError) as exc:  # OSError: a data or --x0 file
        error = exc
    # what this rank will run (the arguments and, on a worker, its rows), before the master sets the step
    own = None
    if error is None:
        own = cfg.run.problem.worker(rank - 1) if rank else None  # a worker's own rows, kept below
        mine = agree.describe(cfg, own)
    # 2. the master's checks that need the whole problem (the theory's step, IS-ASGD's eta <= 1/L)
    if rank == 0 and error is None:
        try:
            with progress("master: the theory's step, L and x* (to measure the error)", not cfg.quiet):
                cfg.run.step = _master_setup(cfg.run.problem, cfg)
        except ValueError as exc:
            error = exc
    # 3. one status word per rank, summed: all ranks stop together, even if their checks disagreed
    #    (say, a data file missing on one node); the master, or else each failing rank, says why
    failed = np.zeros(ranks, dtype=np.int64)
    failed[rank] = error is not None
    comm.Allreduce(MPI.IN_PLACE, failed, op=MPI.SUM)
    if failed.any():
        if error is not None and (rank == 0 or not failed[0]):
            where = "" if rank == 0 else f"rank {rank} ({role}): "
            hint = " (see --help)" if isinstance(error, UsageError) else ""
            print(f"blockcd.mpi: error: {where}{error}{hint}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    # 4. the ranks agree: the same arguments everywhere, and each worker the rows the master expects
    t_agree = time.perf_counter()
    if _disagree(comm, rank, cfg, mine):
        return EXIT_USAGE
    t_agree = time.perf_counter() - t_agree
    fail = cfg.fail_at if cfg.fail_at is not None and cfg.fail_at[0] == rank else None
    if rank != 0:
        # a worker keeps its own rows and drops the rest of the problem
        s = cfg.run
        parts = (s.method.rule, s.blocks, s.sampler(), s.minibatches())
        s.problem = None
    watchdog = Watchdog(comm, rank, role, cfg.timeout, patient=rank != 0 and not cfg.run.method.asynchronous)
    slow = cfg.slow.get(rank, 0.0)
    comm.Barrier()
    t_setup = time.perf_counter() - t_start
    if cfg.run.method.asynchronous:
        return arrivals.run(comm, cfg, argv, rank, ranks, own if rank else None, None if rank == 0 else parts,
                          watchdog, fail, slow, t_setup)
    t0 = time.perf_counter()
    if rank == 0:
        clock, down, rec, eval_time, x = _master(comm, cfg, cfg.run, watchdog, fail)
        up = np.zeros(cfg.iters)
    else:
        clock, up = _worker(comm, cfg, own, parts, watchdog, fail, slow)
    wall = time.perf_counter() - t0
    watchdog.done.set()

    # telemetry, after the run and not counted: every rank's timings and counters to the master
    row = np.concatenate((clock.compute, clock.comm, up, [t_setup, wall]))
    table = np.empty((ranks, row.size)) if rank == 0 else None
    comm.Gather(row, table, root=0)
    hosts = comm.gather(MPI.Get_processor_name(), root=0)
    if rank != 0:
        return 0
    it = cfg.iters
    compute, comm_t, up_all = table[:, :it], table[:, it:2 * it], table[1:, 2 * it:3 * it].T
    hist = _history(cfg, rec, x, up_all, down)
    if cfg.out is not None:
        meta = {
            "ranks": ranks,
            "problem": cfg.problem_name,
            "problem_options": cfg.problem_options,
            "send_indices": cfg.send_indices,
            "argv": list(argv),
            "hosts": hosts,
            "mpi_library": MPI.Get_library_version().strip().splitlines()[0],
            "setup_seconds": table[:, 3 * it].tolist(),
            "agree_seconds": t_agree,
            "wall_seconds": table[:, 3 * it + 1].tolist(),
        }
        save(cfg.out, hist, {
            "mpi_meta": np.array(json.dumps(meta)),
            "mpi_compute": compute,
            "mpi_comm": comm_t,
            "mpi_eval": eval_time,
            "mpi_up": up_all,
            "mpi_down": down,
        })
    if not cfg.quiet:
        per_up = up_all.mean()
        print(f"blockcd.mpi: {cfg.method} on {ranks} ranks (n = {ranks - 1} workers), m = {cfg.m}, "
              f"tau = {cfg.tau}, {it} iterations: {summary(hist)}; "
              f"{per_up:.0f} bytes up per worker and {down.mean():.0f} down per round"
              + (f"; wrote {cfg.out}" if cfg.out is not None else ""), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mpiexec -n K python -m blockcd.mpi ...``; returns the exit status.

    A rank that raises prints ``blockcd.mpi: rank R (role) failed: Error: message``
    and calls ``MPI_Abort``, which ends every rank with a non-zero status.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        from mpi4py import MPI
    except ImportError:
        say("needs mpi4py and an MPI library: python -m pip install mpi4py mpich")
        return EXIT_USAGE
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        return _run(comm, argv)
    except BaseException as exc:  # noqa: BLE001 - any failure must end the whole job, never hang it
        role = "master" if rank == 0 else f"worker {rank}"
        say(f"rank {rank} ({role}) failed: {type(exc).__name__}: {exc}")
        abort(comm, EXIT_FAILED)
        return EXIT_FAILED

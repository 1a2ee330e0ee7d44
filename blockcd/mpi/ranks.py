"""The MPI rank programs: the master (rank 0) and the workers.

What ``mpiexec -n K python -m blockcd.mpi`` runs on each rank (see the
package docstring of :mod:`blockcd.mpi`).  Imports ``mpi4py`` only inside
the ranks.  The command line is :mod:`blockcd.mpi.cli`, the message formats
:mod:`blockcd.mpi.wire`, the launcher and the measurements :mod:`blockcd.mpi.launch`.
"""


import json
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .. import theory
from ..messages import Selection, add_sent
from ..rules import Received
from .cli import EXIT_FAILED, EXIT_TIMEOUT, EXIT_USAGE, UsageError, configure, progress
from .wire import TAG_INDICES, TAG_POINT, TAG_STOP, TAG_VALUES, pack_indices, unpack_indices


class _Clock:
    """Splits a rank's wall time per iteration into compute and communication."""

    def __init__(self, iters):
        self.compute = np.zeros(iters)
        self.comm = np.zeros(iters)
        self.last = time.perf_counter()

    def lap(self, kind: np.ndarray, k: int) -> None:
        now = time.perf_counter()
        kind[k] += now - self.last
        self.last = now


class _Watchdog:
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
                _say(f"rank {self.rank} ({self.role}): no progress for {self.timeout:g} s in iteration "
                     f"{self.k}{what} (--timeout); aborting the job")
                _abort(self.comm, EXIT_TIMEOUT)


def _say(msg: str) -> None:
    print(f"blockcd.mpi: {msg}", file=sys.stderr, flush=True)


# MPI_Abort kills every rank at once, and the launcher may stop forwarding a rank's stderr before
# the line it has just written reaches the terminal; a short pause first lets the message through.
ABORT_GRACE = 0.5


def _abort(comm, code: int) -> None:
    """Abort the whole job with ``code`` once the message just printed has had time to be forwarded."""
    time.sleep(ABORT_GRACE)
    comm.Abort(code)


# ---------------------------------------------------------------- the ranks
def _worker(comm, cfg, own, parts, watchdog, fail, slow=0.0):
    """Worker i (rank i + 1): receive the point, send the values of its tau blocks (the rule's message)."""
    i = own.index
    rule, blocks, sampler, batches = parts
    dense = cfg.tau == cfg.m
    state = rule.worker_init(own, cfg.x0)
    x = np.empty(own.d)
    up = np.zeros(cfg.iters)
    clock = _Clock(cfg.iters)
    for k in range(cfg.iters):
        watchdog.tick(k)
        comm.Bcast(x, root=0)
        clock.lap(clock.comm, k)
        if fail is not None and fail[1] == k:
            _inject(fail)
        if slow:  # --slow: a straggler made slow on purpose
            time.sleep(slow)
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


def _worker_async(comm, cfg, own, parts, watchdog, fail, slow):
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
            _inject(fail)
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


def _master_async(comm, cfg, s, watchdog, fail):
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
            _inject(fail)
        t0 = time.perf_counter()
        rec.point(t, rule.iterate(state))
        eval_time[t] = time.perf_counter() - t0
        if cfg.max_delay is not None:
            late = np.flatnonzero(t - since > cfg.max_delay)
            if late.size:
                j = int(late[np.argmax((t - since)[late])])      # the most overdue
                raise RuntimeError(f"worker {j} (rank {j + 1}) has not answered for {t - since[j]} arrivals, "
                                   f"more than --max-delay {cfg.max_delay}")
        watchdog.waiting = "a message from any worker"
        comm.Recv(buf, source=MPI.ANY_SOURCE, tag=TAG_VALUES, status=st)
        i = st.Get_source() - 1
        chosen = sampler.worker_blocks(int(count[i]), i)
        coords = None if chosen.size == cfg.m else blocks.coords(chosen)
        size = d if coords is None else coords.size
        if st.Get_count(MPI.DOUBLE) != size:
            raise RuntimeError(f"worker {i} (rank {i + 1}) sent {st.Get_count(MPI.DOUBLE)} numbers in its message "
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
        watchdog.waiting = "the last message of " + ", ".join(f"worker {j} (rank {j + 1})" for j in left)
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


def _inject(fail):
    rank, k, how = fail
    if how == "hang":
        while True:
            time.sleep(3600)
    raise RuntimeError(f"injected failure (--fail-at {rank}:{k})")


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


def _progress(hist) -> str:
    """What the summary line says of the run: ||x - x*||^2, or ||grad f||^2 on a non-convex problem."""
    if hist.grad2 is None:
        return f"||x - x*||^2 from {hist.dist2[0]:.3g} to {hist.dist2[-1]:.3g}"
    return f"||grad f(x)||^2 from {hist.grad2[0]:.3g} to {hist.grad2[-1]:.3g}"


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
    clock = _Clock(cfg.iters)
    for k in range(cfg.iters):
        watchdog.tick(k)
        if fail is not None and fail[1] == k:
            _inject(fail)
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
        if dense:
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
        if cfg.send_indices and not dense:
            MPI.Request.Waitall([comm.Irecv(idx_bufs[i], source=i + 1, tag=TAG_INDICES) for i in range(n)])
            clock.lap(clock.comm, k)
            coords = [blocks.coords(unpack_indices(idx_bufs[i], cfg.tau, cfg.m)) for i in range(n)]
            clock.lap(clock.compute, k)
        bufs = [np.empty(d if c is None else c.size) for c in coords]
        statuses = [MPI.Status() for _ in bufs]
        reqs = [comm.Irecv(b, source=i + 1, tag=TAG_VALUES) for i, b in zip(senders, bufs)]
        MPI.Request.Waitall(reqs, statuses)
        clock.lap(clock.comm, k)
        for i, st, b in zip(senders, statuses, bufs):
            if st.Get_count(MPI.DOUBLE) != b.size:
                raise RuntimeError(f"worker {i} (rank {i + 1}) sent {st.Get_count(MPI.DOUBLE)} numbers at "
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


def _save(path, hist, extras):
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


def _run(comm, argv):
    from mpi4py import MPI

    rank, ranks = comm.Get_rank(), comm.Get_size()
    role = "master" if rank == 0 else f"worker {rank - 1}"
    t_start = time.perf_counter()
    # 1. every rank checks the command line and builds the problem on its own: no message yet
    error = None
    try:
        cfg = configure(argv, ranks, show=rank == 0, rank=rank)
    except SystemExit as exc:  # --help
        return exc.code or 0
    except (UsageError, ValueError, TypeError, OSError) as exc:  # OSError: a data or --x0 file
        error = exc
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
    fail = cfg.fail_at if cfg.fail_at is not None and cfg.fail_at[0] == rank else None
    if rank != 0:
        # a worker keeps its own rows and drops the rest of the problem
        s = cfg.run
        own = s.problem.worker(rank - 1)
        parts = (s.method.rule, s.blocks, s.sampler(), s.minibatches())
        s.problem = None
    watchdog = _Watchdog(comm, rank, role, cfg.timeout)
    slow = cfg.slow.get(rank, 0.0)
    comm.Barrier()
    t_setup = time.perf_counter() - t_start
    if cfg.run.method.asynchronous:
        return _run_async(comm, cfg, argv, rank, ranks, own if rank else None, None if rank == 0 else parts,
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
            "wall_seconds": table[:, 3 * it + 1].tolist(),
        }
        _save(cfg.out, hist, {
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
              f"tau = {cfg.tau}, {it} iterations: {_progress(hist)}; "
              f"{per_up:.0f} bytes up per worker and {down.mean():.0f} down per round"
              + (f"; wrote {cfg.out}" if cfg.out is not None else ""), flush=True)
    return 0


def _run_async(comm, cfg, argv, rank, ranks, own, parts, watchdog, fail, slow, t_setup):
    """Asynchronous IS-SGD on the ranks: the run, then every rank's counters to the master, then the History."""
    from mpi4py import MPI

    from ..asynchronous import finish

    t0 = time.perf_counter()
    if rank == 0:
        rec, x, record, times, eval_time, down = _master_async(comm, cfg, cfg.run, watchdog, fail)
        mine = np.zeros(4)
    else:
        mine = np.array(_worker_async(comm, cfg, own, parts, watchdog, fail, slow), dtype=float)
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
        _save(cfg.out, hist, {
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
              + _progress(hist)
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
        _say("needs mpi4py and an MPI library: python -m pip install mpi4py mpich")
        return EXIT_USAGE
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        return _run(comm, argv)
    except BaseException as exc:  # noqa: BLE001 - any failure must end the whole job, never hang it
        role = "master" if rank == 0 else f"worker {rank - 1}"
        _say(f"rank {rank} ({role}) failed: {type(exc).__name__}: {exc}")
        _abort(comm, EXIT_FAILED)
        return EXIT_FAILED

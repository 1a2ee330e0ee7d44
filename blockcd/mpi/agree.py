"""Do the ranks of one job agree?  A digest of each rank's configuration and data, compared once.

Every rank parses its own command line and builds (or reads) its own data, so two nodes can disagree
without any error: another ``--seed`` or ``--lam`` on one of them, a data file whose copy differs.  Such
a job would finish with status 0 and a wrong result, or hang, or crash inside MPI.  After the set-up
each rank describes what it will run (:func:`describe`: the run's arguments and the shape and
SHA-256 of the rows it holds, plain JSON) and the master compares every worker's description with
its own and with the rows it expects that worker to hold (:func:`compare`); a difference stops the
job before the first round, naming the rank and the difference.  The exchange itself is
:func:`exchange` (bytes only, no pickle).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import scipy.sparse as sp

#: the run's arguments every rank must share, with the flag that sets each (in the messages)
FLAGS = {"method": "--method", "m": "--m", "tau": "--tau", "iters": "--iters", "seed": "--seed",
         "sampling": "--sampling", "batch": "--batch", "send_indices": "--send-indices", "step": "--step",
         "x0": "--x0", "problem": "--problem", "options": "the problem's options", "max_delay": "--max-delay"}


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.data if a.size else b"")
    return h.hexdigest()[:16]


def data_digest(worker) -> dict:
    """What a worker's rows are: the shape and stored entries of A, the targets, loss and lambda,
    with a SHA-256 of their bytes (first 16 hex digits)."""
    A = worker.A
    if sp.issparse(A):
        A = A.tocsr()
        arrays = (A.indptr, A.indices, A.data)
        kind = f"sparse, {A.nnz} stored entries"
    else:
        arrays = (A,)
        kind = "dense"
    return {"shape": list(A.shape), "kind": kind,
            "sha256": _digest(*arrays, worker.t, np.array([worker.lam, worker.nonconvex or 0.0])),
            "loss": worker.loss}


def describe(cfg, worker=None) -> dict:
    """A rank's description: the run's arguments (``cfg``, a checked command line) and, on a worker
    rank, :func:`data_digest` of its rows."""
    s = cfg.run
    options = {k: v for k, v in cfg.problem_options.items() if k != "path"}  # the file may sit elsewhere
    step = s.step if s.schedule is None else repr(s.schedule)
    config = {"method": s.method.name, "m": s.m, "tau": s.tau, "iters": s.iters, "seed": s.seed,
              "sampling": s.sampling, "batch": s.batch, "send_indices": s.send_indices,
              "step": step, "x0": _digest(s.x0), "problem": cfg.problem_name, "options": options,
              "max_delay": cfg.max_delay}
    return {"config": json.loads(json.dumps(config, default=str)),
            "data": None if worker is None else data_digest(worker)}


def compare(mine: dict, others: list[dict], expected) -> list[str]:
    """The master's comparison: ``others[r - 1]`` is rank r's description, ``expected(i)`` the
    :func:`data_digest` of the rows worker i should hold.  Returns one line per difference."""
    lines = []
    for r, theirs in enumerate(others, start=1):
        who = f"rank {r} (worker {r})"
        for key, flag in FLAGS.items():
            a, b = mine["config"].get(key), theirs["config"].get(key)
            if a != b:
                lines.append(f"{who} has {flag} {_show(b)} where the master (rank 0) has {_show(a)}")
        want, got = expected(r - 1), theirs["data"]
        if got != want:
            diff = [f"{k} {_show(got.get(k))} instead of {_show(want.get(k))}" for k in want if got.get(k) != want[k]]
            lines.append(f"{who} holds rows that differ from what the master expects of worker {r - 1}: "
                         + ", ".join(diff))
    return lines


def _show(v) -> str:
    text = json.dumps(v) if not isinstance(v, str) else v
    return text if len(text) <= 60 else text[:57] + "..."


def exchange(comm, mine: dict) -> list[dict] | None:
    """Every rank's description at the master (rank 0; None elsewhere), sent as JSON bytes."""
    from mpi4py import MPI

    data = np.frombuffer(json.dumps(mine).encode(), dtype=np.uint8)
    rank, ranks = comm.Get_rank(), comm.Get_size()
    sizes = np.zeros(ranks, dtype=np.int64)
    comm.Gather(np.array([data.size], dtype=np.int64), sizes, root=0)
    buf = np.empty(int(sizes.sum()), dtype=np.uint8) if rank == 0 else None
    comm.Gatherv(data, [buf, sizes, MPI.BYTE] if rank == 0 else None, root=0)
    if rank != 0:
        return None
    ends = np.cumsum(sizes)
    return [json.loads(buf[e - s:e].tobytes().decode()) for s, e in zip(sizes, ends)]

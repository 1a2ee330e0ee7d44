"""The book's measurements of the hook on real ranks: Monte Carlo, bit-for-bit, timing, training.

:func:`book_job` is the one job chapter 11 runs (starting ranks costs seconds,
so everything is measured in one): the hook's average over many draws on the
network's real gradients at initialisation, a hook-less DDP run against the
hook at ``tau = m``, the time of one bucket's exchange against the dense
all-reduce, and the training comparison of :func:`blockcd.torch.train.train_rank`.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.distributed as dist

from .hook import SparsificationState, sparsify_hook
from .launch import spawn
from .train import METHODS, check_methods, digits_shards, network, options_dict, train_rank


def local_gradient(rank: int, n: int, options: dict) -> torch.Tensor:
    """This rank's flat gradient of the mean training loss's share at the initial network (no DDP)."""
    shards, _ = digits_shards(n, options["split"], options["data_seed"])
    X, y = shards[rank]
    model = network(options["hidden"], options["seed"])
    n_train = sum(len(s[1]) for s in shards)
    loss = torch.nn.functional.cross_entropy(model(X), y, reduction="sum") * (n / n_train)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return torch.cat([g.reshape(-1) for g in grads])


def draws(g: torch.Tensor, m: int, tau: int, sampling: str, count: int, seed: int) -> np.ndarray:
    """``count`` averages of the hook on the same gradients (steps 0, 1, ...), as a (count, d) array."""
    state = SparsificationState(m=m, tau=tau, seed=seed, sampling=sampling)
    return np.stack([state.reduce(g.clone()).wait().numpy() for _ in range(count)])


def exchange_seconds(g: torch.Tensor, m: int, tau: int, repeats: int, seed: int) -> dict[str, float]:
    """Median wall time of one bucket's exchange: dense all-reduce, and the hook shared and independent."""
    n = dist.get_world_size()
    states = {s: SparsificationState(m=m, tau=tau, seed=seed, sampling=s) for s in ("shared", "independent")}
    times: dict[str, list[float]] = {"dense": [], "shared": [], "independent": []}
    for _ in range(repeats):
        for name, spent in times.items():
            buf = g.clone()
            dist.barrier()
            t0 = time.perf_counter()
            if name == "dense":
                buf.mul_(1.0 / n)
                dist.all_reduce(buf)
            else:
                states[name].reduce(buf).wait()
            spent.append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}


def dense_equivalence(rank: int, n: int, options: dict, steps: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Parameters after ``steps`` steps of hook-less DDP and of DDP with the hook at tau = m."""
    shards, _ = digits_shards(n, options["split"], options["data_seed"])
    X, y = shards[rank]
    out = []
    for hooked in (False, True):
        model = network(options["hidden"], options["seed"])
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        if hooked:
            ddp.register_comm_hook(SparsificationState(m=options["m"], tau=options["m"]), sparsify_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=options["lr"])
        for _ in range(steps):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(ddp(X), y).backward()
            opt.step()
        out.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
    return out[0], out[1]


def book_job(rank: int, n: int, methods, options: dict, mc_draws: int = 1000, repeats: int = 200) -> dict | None:
    """Everything chapter 11 measures, on ``n`` ranks; rank 0 returns it, the others None."""
    torch.set_num_threads(1)
    g = local_gradient(rank, n, options)
    rows = [torch.empty_like(g) for _ in range(n)]
    dist.all_gather(rows, g)  # for the prediction only: the hook never sends whole gradients
    m, tau, seed = options["m"], options["tau"], options["seed"]
    mc = {s: draws(g, m, tau, s, mc_draws, seed) for s in ("independent", "shared")}
    plain, hooked = dense_equivalence(rank, n, options)
    same = np.array([np.array_equal(plain, hooked)], dtype=np.float64)
    dist.all_reduce(torch.from_numpy(same), op=dist.ReduceOp.MIN)  # on every rank
    seconds = exchange_seconds(g, m, tau, repeats, seed)
    records = train_rank(rank, n, methods, options)
    if rank != 0:
        return None
    return {"G": torch.stack(rows).double().numpy(), "mc": mc, "bit_for_bit": bool(same[0]),
            "exchange_seconds": seconds, "records": {r.method: r for r in records}}


def run_book(ranks: int = 4, methods=tuple(METHODS), *, m: int = 32, tau: int | None = None, steps: int = 300,
             lr: float = 0.5, hidden: int = 32, split: str = "sorted", seed: int = 0, data_seed: int = 0,
             mc_draws: int = 1000, repeats: int = 200, timeout: float = 300.0) -> dict:
    """Run :func:`book_job` on ``ranks`` spawned Gloo processes; return rank 0's measurements and the options."""
    from .._validate import check_int

    ranks = check_int("ranks", ranks, 1)
    options = options_dict(m, tau, steps, lr, hidden, split, seed, data_seed, ranks)
    out = spawn(book_job, ranks, (check_methods(methods), options, check_int("mc_draws", mc_draws, 2),
                                  check_int("repeats", repeats, 1)), timeout=timeout)[0]
    out["options"] = dict(options, ranks=ranks)
    return out

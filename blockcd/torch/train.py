"""Train a two-layer network on scikit-learn's digits with DDP: dense, shared and independent blocks.

``python -m blockcd.torch.train`` spawns K Gloo processes on this machine
(or, under ``torchrun --nproc-per-node K -m blockcd.torch.train``, runs as one
of torchrun's ranks), trains the same network with each method in turn and
writes one CSV row per method and step: training loss, test accuracy, bytes
sent and received by a rank, what a dense all-reduce would have moved, and the
step's wall time.  :func:`run` does the same from Python (book chapter 11).

Each rank holds a fixed shard of the 1,347 training digits and takes full
gradient steps on it (no minibatches), so the only randomness in a run is the
hook's block choice, and the same seed gives the same numbers.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

from .._validate import check_choice, check_float, check_int, check_seed
from .hook import SparsificationState, allreduce_bytes, sparsify_hook
from .launch import spawn

#: the methods compared, as (sampling, shifts); dense is DDP without a hook
__all__ = ["METHODS", "SPLITS", "TEST_SIZE", "Record", "digits_shards", "main", "network", "run", "summary", "train_rank",
           "write_csv"]

METHODS = {
    "dense": None,
    "shared": ("shared", False),
    "independent": ("independent", False),
    "independent-shifts": ("independent", True),
}
SPLITS = ("sorted", "iid")
TEST_SIZE = 450


@dataclass
class Record:
    """What one method's run measured, one entry per step (losses: steps + 1 points, from x^0)."""

    method: str
    n: int
    m: int
    tau: int
    params: int
    loss: np.ndarray
    test_accuracy: np.ndarray
    bytes_sent: np.ndarray
    bytes_received: np.ndarray
    dense_bytes: np.ndarray
    seconds: np.ndarray = field(repr=False)

    def steps_to(self, loss: float) -> int | None:
        """First step k with training loss <= ``loss`` (None if never reached)."""
        hit = np.flatnonzero(self.loss <= loss)
        return int(hit[0]) if hit.size else None

    def bytes_to(self, loss: float) -> float | None:
        """Bytes one rank sent before reaching ``loss`` (None if never reached)."""
        k = self.steps_to(loss)
        return None if k is None else float(self.bytes_sent[:k].sum())


def digits_shards(n: int, split: str = "sorted", seed: int = 0):
    """Rank-wise training shards and the test set of scikit-learn's digits (pixels scaled to [0, 1]).

    ``split='sorted'`` gives each rank a contiguous range of labels (heterogeneous
    ranks); ``'iid'`` a random share.  Returns ``(shards, (X_test, y_test))`` with
    ``shards[i] = (X_i, y_i)``.
    """
    from sklearn.datasets import load_digits

    n = check_int("n", n, 1)
    split = check_choice("split", split, SPLITS)
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(check_seed("seed", seed)).permutation(len(y))
    test, train = order[:TEST_SIZE], order[TEST_SIZE:]
    if split == "sorted":
        train = train[np.argsort(y[train], kind="stable")]
    parts = np.array_split(train, n)
    as_t = lambda rows: (torch.tensor(X[rows] / 16.0, dtype=torch.float32), torch.tensor(y[rows]))
    return [as_t(p) for p in parts], as_t(test)


def network(hidden: int = 32, seed: int = 0) -> torch.nn.Module:
    """64 pixels -> ``hidden`` tanh units -> 10 classes, initialised from ``seed``."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 10))


def train_rank(rank: int, n: int, methods, options: dict) -> list[Record] | None:
    """Train each method on this rank's shard; rank 0 returns the records, the others None."""
    torch.set_num_threads(1)
    shards, (X_test, y_test) = digits_shards(n, options["split"], options["data_seed"])
    X, y = shards[rank]
    n_train = sum(len(s[1]) for s in shards)
    records = []
    for method in methods:
        model = network(options["hidden"], options["seed"])
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        params = sum(p.numel() for p in model.parameters())
        m, tau = options["m"], options["tau"]
        state = None
        if METHODS[method] is not None:
            sampling, shifts = METHODS[method]
            state = SparsificationState(m=m, tau=tau, seed=options["seed"], sampling=sampling, shifts=shifts)
            ddp.register_comm_hook(state, sparsify_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=options["lr"])
        steps = options["steps"]
        local = np.zeros(steps + 1)
        acc = np.zeros(steps + 1)
        seconds = np.zeros(steps)
        for k in range(steps + 1):
            if rank == 0:
                with torch.no_grad():
                    acc[k] = (model(X_test).argmax(1) == y_test).double().mean().item()
            if k == steps:
                with torch.no_grad():
                    local[k] = torch.nn.functional.cross_entropy(model(X), y, reduction="sum").item()
                break
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=False)
            out = ddp(X)
            loss = torch.nn.functional.cross_entropy(out, y, reduction="sum")
            local[k] = loss.item()
            (loss * (n / n_train)).backward()  # the hook averages over ranks: the mean over all rows
            opt.step()
            seconds[k] = time.perf_counter() - t0
        # evaluation, not part of the method: the global loss and the slowest rank's step time
        both = torch.from_numpy(np.stack([local, np.r_[seconds, 0.0]]))
        dist.all_reduce(both[0])
        dist.all_reduce(both[1], op=dist.ReduceOp.MAX)
        if state is None:
            dense = np.full(steps, allreduce_bytes(params, n, 4))
            sent = received = dense
        else:
            sent, received, dense = (np.asarray(a) for a in (state.bytes_sent, state.bytes_received,
                                                              state.dense_bytes))
        records.append(Record(method, n, m, tau if state is not None else m, params,
                              both[0].numpy() / n_train, acc, sent, received, dense, both[1].numpy()[:steps]))
        del ddp
    return records if rank == 0 else None


def options_dict(m, tau, steps, lr, hidden, split, seed, data_seed, n) -> dict:
    m = check_int("m", m, 1)
    tau = max(1, m // n) if tau is None else check_int("tau", tau, 1, m)
    return {"m": m, "tau": tau, "steps": check_int("steps", steps, 1), "lr": check_float("lr", lr, positive=True),
                "hidden": check_int("hidden", hidden, 1), "split": check_choice("split", split, SPLITS),
                "seed": check_seed("seed", seed), "data_seed": check_seed("data_seed", data_seed)}


def check_methods(methods) -> list[str]:
    if isinstance(methods, str):
        methods = [methods]
    return [check_choice("methods", mth, METHODS) for mth in methods]


def run(ranks: int = 4, methods=tuple(METHODS), *, m: int = 32, tau: int | None = None, steps: int = 300,
        lr: float = 0.5, hidden: int = 32, split: str = "sorted", seed: int = 0, data_seed: int = 0,
        timeout: float = 300.0) -> dict[str, Record]:
    """Train with each method on ``ranks`` spawned Gloo processes; return the records by method.

    ``tau=None`` takes ``m // ranks``.  All methods run in one job, one after the other.
    """
    ranks = check_int("ranks", ranks, 1)
    methods = check_methods(methods)
    options = options_dict(m, tau, steps, lr, hidden, split, seed, data_seed, ranks)
    results = spawn(train_rank, ranks, (methods, options), timeout=timeout)
    return {r.method: r for r in results[0]}


def write_csv(records, path) -> None:
    """One row per method and step (the last row of a method: the final loss and accuracy)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["method", "n", "m", "tau", "step", "train_loss", "test_accuracy", "bytes_sent",
                    "bytes_received", "dense_allreduce_bytes", "seconds"])
        for r in records.values():
            for k in range(len(r.loss)):
                last = k == len(r.loss) - 1
                w.writerow([r.method, r.n, r.m, r.tau, k, f"{r.loss[k]:.6g}", f"{r.test_accuracy[k]:.4f}"]
                           + (["", "", "", ""] if last else
                              [f"{r.bytes_sent[k]:.0f}", f"{r.bytes_received[k]:.0f}", f"{r.dense_bytes[k]:.0f}",
                               f"{r.seconds[k]:.6f}"]))


def summary(records, target: float) -> str:
    """The table the command prints: per method its final loss, test accuracy, steps and megabytes sent to
    reach the loss ``target``, and milliseconds per step."""
    lines = [(f"{'method':20s} {'final loss':>10s} {'test acc':>8s} {'steps to':>8s} {'MB sent to':>10s} "
             f"{'ms/step':>8s}"), f"{'':20s} {'':>10s} {'':>8s} {target:>8.3g} {target:>10.3g}"]
    for r in records.values():
        k, b = r.steps_to(target), r.bytes_to(target)
        lines.append(f"{r.method:20s} {r.loss[-1]:10.4f} {r.test_accuracy[-1]:8.3f} "
                     f"{'-' if k is None else k:>8} {'-' if b is None else f'{b / 1e6:.3f}':>10} "
                     f"{1e3 * np.median(r.seconds):8.2f}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m blockcd.torch.train", description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4, help="processes to spawn (ignored under torchrun)")
    p.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {', '.join(METHODS)}")
    p.add_argument("--m", "--blocks", dest="m", type=int, default=32,
                   help="blocks per gradient bucket (spell it --blocks under torchrun, whose parser takes --m "
                        "for a prefix of its own options)")
    p.add_argument("--tau", type=int, default=None, help="blocks sent per rank (default m // ranks)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=0.5, help="SGD step size")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--split", default="sorted", choices=SPLITS)
    p.add_argument("--seed", type=int, default=0, help="network initialisation and block choices")
    p.add_argument("--data-seed", type=int, default=0, help="train/test split")
    p.add_argument("--target", type=float, default=0.2, help="training loss for the summary's steps and bytes")
    p.add_argument("--timeout", type=float, default=600.0, help="wall-clock guard of the job (seconds)")
    p.add_argument("--out", default="ddp.csv", help="CSV file written by rank 0")
    return p


def main(argv=None) -> int:
    """``python -m blockcd.torch.train``: parse ``argv``, train each method, print :func:`summary`; the exit
    status (0 on success)."""
    args = _parser().parse_args(argv)
    methods = [s.strip() for s in args.methods.split(",") if s.strip()]
    try:
        methods = check_methods(methods)
        if "RANK" in os.environ and "WORLD_SIZE" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
            # under torchrun: this process is one rank; the group comes from torchrun's environment
            n = int(os.environ["WORLD_SIZE"])
            options = options_dict(args.m, args.tau, args.steps, args.lr, args.hidden, args.split, args.seed,
                               args.data_seed, n)
            dist.init_process_group("gloo", timeout=timedelta(seconds=60))
            try:
                out = train_rank(dist.get_rank(), n, methods, options)
            finally:
                dist.destroy_process_group()
            if out is None:
                return 0
            records = {r.method: r for r in out}
        else:
            records = run(args.ranks, methods, m=args.m, tau=args.tau, steps=args.steps, lr=args.lr,
                          hidden=args.hidden, split=args.split, seed=args.seed, data_seed=args.data_seed,
                          timeout=args.timeout)
    except (TypeError, ValueError) as exc:
        print(f"blockcd.torch.train: error: {exc}", file=sys.stderr)
        return 2
    write_csv(records, args.out)
    print(summary(records, args.target))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

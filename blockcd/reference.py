"""The per-worker reference: the rules of :mod:`blockcd.rules` run worker by worker.

``run`` is the master/worker template written to be read: each worker
holds its own local problem (``problem.worker(i)``), regenerates its own
block choice and minibatch from (seed, worker, iteration), and sends the
values of its tau blocks; the master adds them up and steps.  It takes the
arguments of :func:`blockcd.run` and returns the same ``History``;
the simulator gives the same iterates up to the order of floating-point sums
(chapters 4-7 assert 1e-12).  The MPI ranks (:mod:`blockcd.mpi`) use
one worker's message form, :class:`blockcd.messages.Selection`, and the master's
sum, :func:`blockcd.messages.add_sent`, as this loop does.  It is slow on purpose:
a plain loop over workers.  A rule that chooses its own blocks (``own_blocks``) gets
:meth:`blockcd.messages.Selection.own` instead of drawn blocks and the loop counts
what it chose.

Read this loop first, with the rule it runs (:class:`blockcd.rules.IBCD`); then the
simulator, :func:`blockcd.run` (:mod:`blockcd.methods`), which runs the same loop
with all n workers as arrays.
"""

from __future__ import annotations

import numpy as np

from .arguments import setup
from .history import History
from .messages import Selection, add_sent
from .rules import Received


def run(problem, method: str, *, m: int, tau: int, step=None, iters: int, seed: int = 0,
        sampling: str | None = None, batch: int | None = None, x0=None, until: float | None = None) -> History:
    """Run ``method`` as a loop over workers; arguments and result as :func:`blockcd.run`."""
    s = setup(problem, method, m=m, tau=tau, step=step, iters=iters, seed=seed, sampling=sampling,
              batch=batch, x0=x0, until=until)
    if s.method.asynchronous:
        raise ValueError(f"{s.method.name!r} has no rounds to loop over: its engine is already one worker's message "
                         "at a time (blockcd.asynchronous.simulate), and MPI runs are replayed by it")
    rule, blocks, n = s.method.rule, s.blocks, problem.n
    sampler, batches, rec = s.sampler(), s.minibatches(), s.recorder()
    workers = [problem.worker(i) for i in range(n)]
    states = [rule.worker_init(w, s.x0) for w in workers]
    master = rule.start(s)
    apart, own = rule.per_worker, rule.own_blocks
    for k in range(s.iters):
        x = rule.point(master)                                # broadcast
        total = np.zeros(problem.d)
        mask = np.zeros((n, s.m), dtype=bool)
        messages, rows = [], []
        for i, (w, state) in enumerate(zip(workers, states)):
            if own:                                           # the rule chooses worker i's blocks itself
                idx = None if batches is None else batches.worker(k, i)
                values, chosen, coords = _own_message(rule, w, state, x, idx, blocks, s.tau)
                mask[i, chosen] = True
            else:
                chosen = sampler.worker_blocks(k, i)          # worker i's tau blocks, from (seed, i, k)
                mask[i, chosen] = True
                if chosen.size == 0:                          # IBGD: this round worker i sends nothing
                    continue
                coords = None if chosen.size == s.m else blocks.coords(chosen)
                idx = None if batches is None else batches.worker(k, i)
                values, _ = rule.send(w, state, x, idx, Selection(coords))
            if apart:                                         # the master keeps worker i's message apart
                messages.append((coords, values))
                rows.append(idx)
            else:
                add_sent(total, coords, values)               # the master receives and adds
        if apart:
            total = Received.gather(problem.d, messages, np.stack(rows))
        if rec.point(k, rule.iterate(master)):
            break
        rec.sent(k, None if s.tau == s.m and not own else mask)
        g = s.step_at(k)                                      # the step of round k (a schedule's, checked)
        rec.stepped(k, g)
        rule.step(master, total, (s.m / s.tau) / n, g, n)
        rule.prox(master, g)                                  # x = prox_{step R}(x), if the problem has R
    else:
        rec.point(s.iters, rule.iterate(master))
    return rec.history(rule.iterate(master), s.seed)


def _own_message(rule, o, state, x, idx, blocks, tau):
    """Worker i's message under a rule that chooses its own blocks: (values, its sorted block indices,
    their coordinates; None: all m blocks)."""
    sel = Selection.own(blocks, tau)
    values, _ = rule.send(o, state, x, idx, sel)
    if sel.chosen is None:
        raise RuntimeError(f"the rule {type(rule).__name__} has own_blocks = True but its send() did not call "
                           "sel.choose(...): the engine cannot tell which blocks were sent")
    return values, sel.chosen, sel.coords


def difference(problem, method: str, **kwargs) -> float:
    r"""Largest relative difference between :func:`blockcd.run` and ``run`` with the same arguments.

    The largest of :math:`\max_k |\Delta\|x^k - x^\star\|^2| / \|x^0 - x^\star\|^2`,
    :math:`\max_k |\Delta(f(x^k) - f^\star)| / |f(x^0) - f^\star|` and
    :math:`\|\Delta x^K\| / \|x^K\|` (on a non-convex problem, which has no x*,
    :math:`\max_k |\Delta\|\nabla f(x^k)\|^2| / \|\nabla f(x^0)\|^2` replaces the first two).  The two add the same numbers in different
    orders (per worker, then over workers), so it is a few units of rounding,
    far below 1e-12, for every method.
    """
    from .methods import run as simulate

    lib = simulate(problem, method, **kwargs)
    ref = run(problem, method, **kwargs)
    if lib.grad2 is not None:  # a non-convex problem: no x*, compare ||grad f(x^k)||^2 instead
        e_dist = np.max(np.abs(lib.grad2 - ref.grad2)) / lib.grad2[0]
        e_gap = 0.0
    else:
        e_dist = np.max(np.abs(lib.dist2 - ref.dist2)) / lib.dist2[0]
        e_gap = np.max(np.abs(lib.gap - ref.gap)) / abs(lib.gap[0])
    e_x = np.linalg.norm(lib.x - ref.x) / max(np.linalg.norm(lib.x), 1e-300)
    e_avg = 0.0 if lib.gap_avg is None else np.max(np.abs(lib.gap_avg - ref.gap_avg)) / abs(lib.gap_avg[0])
    return float(max(e_dist, e_gap, e_x, e_avg))

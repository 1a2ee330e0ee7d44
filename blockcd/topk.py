"""A rule that chooses its own blocks: top-k with error feedback.

The worked example of ``Rule.own_blocks`` (see :mod:`blockcd.rules`, whose rules all let the engine
draw the blocks): a data-dependent choice that no sampler can make.  Read next: the simulator's loop,
:mod:`blockcd.methods`, which hands such a rule an empty selection and counts what it sent.
"""

from __future__ import annotations

import numpy as np

from .rules import Rule, State


class TopKErrorFeedback(Rule):
    r"""Top-k with error feedback: a rule that chooses its own blocks (the worked example of ``own_blocks``).

    Worker i keeps a residual :math:`e_i` (at the start 0).  Each round it forms
    :math:`u_i = \nabla f_i(x) + e_i`, sends the k = tau blocks of :math:`u_i` of largest norm (ties:
    the lower block index), :math:`P_{S_i} u_i`, and keeps the rest,
    :math:`e_i \leftarrow u_i - P_{S_i} u_i`; the master steps on the plain average,
    :math:`x^+ = x - \gamma \frac1n \sum_i P_{S_i} u_i` (no m/tau rescaling: top-k is biased, and the
    residual returns what was held back in later rounds; Stich, Cordonnier and Jaggi 2018, "Sparsified
    SGD with memory").  With tau = m nothing is held back and it is gradient descent.  The blocks
    depend on the data, so no sampler can draw them: the rule declares ``own_blocks = True``, the
    engines draw nothing, and ``History.blocks_up`` and the bytes count what it sent (k blocks per
    worker and round, their coordinates, and their indices).  It has no theory step: pass ``step=``.

    The whole rule, as a user would write it::

        import numpy as np
        from blockcd.rules import Rule, State

        class TopKErrorFeedback(Rule):
            name = "topk-ef"
            own_blocks = True                      # the rule chooses the blocks; the engine draws none

            def worker_init(self, o, x0):
                return State(e=np.zeros(o.shape))  # the residual e_i (all workers' rows in the simulator)

            def send(self, o, w, x, idx, sel):
                g, fx = sel.grads(o, x)            # the whole local gradient: no block is chosen yet
                u = g + w.e
                norms = sel.block_norms2(u)        # (..., m): each block's squared norm
                sel.choose(np.argsort(-norms, axis=-1, kind="stable")[..., : sel.tau])
                w.e = np.where(sel.sent_mask(u.shape), 0.0, u)   # keep what was not sent
                return sel.send(u), fx

            def step(self, s, total, scale, step, n):
                s.x = s.x - step * (total / n)     # the plain average of what arrived

    Run it by registering it and calling :func:`blockcd.run` with its name (below,
    :func:`blockcd.mpi.load_method` registers it from its module path); :func:`blockcd.reference.run`
    and ``python -m blockcd.mpi --method blockcd.topk:TopKErrorFeedback`` run the same rule (any
    importable rule of yours runs on MPI that way).

    Examples
    --------
    >>> import blockcd
    >>> name = blockcd.mpi.load_method("blockcd.topk:TopKErrorFeedback")   # registered as 'topk-ef'
    >>> p = blockcd.problems.synthetic(4, 30, 23, interpolating=True, cond=3, seed=1)
    >>> h = blockcd.run(p, name, m=10, tau=2, step=0.5 / p.L, iters=400, until=1e-14)
    >>> h.iters, float(h.blocks_up[-1] / h.iters)   # exactly tau = 2 blocks per worker and round
    (74, 2.0)
    >>> [int(b) for b in h.bytes_up_workers]        # 8 bytes a coordinate, 1 byte of indices a round
    [2810, 2818, 2858, 2818]
    """

    name = "topk-ef"
    own_blocks = True

    def worker_init(self, o, x0):
        return State(e=np.zeros(o.shape))

    def send(self, o, w, x, idx, sel):
        g, fx = sel.grads(o, x)
        u = g + w.e
        norms = sel.block_norms2(u)
        sel.choose(np.argsort(-norms, axis=-1, kind="stable")[..., : sel.tau])
        w.e = np.where(sel.sent_mask(u.shape), 0.0, u)
        return sel.send(u), fx

    def step(self, s, total, scale, step, n):
        s.x = s.x - step * (total / n)

"""The update rules: each method of the book, written once.

A rule says what the master broadcasts (:meth:`Rule.point`), what worker i
computes from its own data and state and sends (:meth:`Rule.send`: the tau
blocks it chose), and how the master steps on the aggregate
(:meth:`Rule.step`, then :meth:`Rule.prox` when the problem has a regulariser).  The same rule runs in
three engines:

- the vectorised simulator (:func:`blockcd.run`): ``o`` is
  ``problem.workers()``, all n workers as arrays, and ``sel`` the (n, m) block
  mask of the iteration, whose ``send`` returns the master's sum
  sum_i P_{S_i} D_i directly;
- the per-worker reference (:func:`blockcd.reference.run`), a plain loop over
  workers, and the MPI ranks (:mod:`blockcd.mpi`): ``o`` is
  ``problem.worker(i)`` and ``sel`` worker i's coordinates, whose ``send``
  returns the values worker i puts on the wire; the engine adds them up.

A worker computes its estimate through ``sel`` (``sel.grads(o, x)``,
``sel.minibatch_grads(o, x, idx)``), which asks the oracle for the sent
coordinates only when that is cheaper: the margins take one pass over the
rows, the transposed product only the sent columns.  So ``send`` returns a
message in the engine's own terms, and ``step``
receives ``total`` = sum_i P_{S_i} D_i (unscaled) with ``scale`` = m/(tau n).
``send`` also returns f(x) when it came for free with the gradients (the
simulator records it), else None.  A rule never draws random numbers: the
engine draws the block choices and minibatches (``idx``) from the seed.

A rule whose master needs each worker's message apart, not only their sum
(``per_worker = True``: shared-data ISAGA, whose table entry j_i takes worker
i's blocks), sends through ``sel.send_each`` instead of ``sel.send``; every
engine then hands ``step`` a :class:`Received` (the n messages as rows of an
(n, d) array, which coordinates each worker sent, and the rows ``idx`` the
workers sampled) in place of ``total``.  The other rules never build it.

A rule that chooses its own blocks (``own_blocks = True``: top-k, or any choice that
depends on the data) gets from every engine a selection with no blocks yet: its
``sel.grads`` is the whole local gradient, ``sel.blocks`` the partition,
``sel.tau`` the run's tau and ``sel.block_norms2(U)`` each block's squared norm.
It calls ``sel.choose(chosen)`` once, with the block indices each worker sends
(the simulator: an (n, c) array or an (n, m) mask; one worker: a (c,) array), and
then sends as any rule does.  The engine draws no blocks for it and counts what
was chosen: ``History.blocks_up`` the blocks each worker sent (their mean), the
bytes their coordinates and, since the master cannot regenerate a choice it did
not draw, ceil(c ceil(log2 m) / 8) bytes of indices for a worker that sends
0 < c < m blocks.  :class:`blockcd.topk.TopKErrorFeedback` is the worked example.

The master's state ``s`` is a ``types.SimpleNamespace`` (``State`` here) that the rule
creates in :meth:`Rule.master_init` (or :meth:`Rule.start`) and alone reads and writes: the
engines only pass it to ``point``, ``step``, ``prox`` and ``iterate``.  It holds ``x``, the
iterate, unless the rule overrides ``point`` and ``iterate`` (IS-ASGD keeps ``w``, ``v``, ``y``);
``reg``, the problem's regulariser, when the master takes a prox step (:meth:`Rule.prox`); and
whatever else the master keeps: the shifts' average ``hbar`` (ISEGA), a SAGA ``table`` and its
``avg``, the parameters of IS-ASGD.  A worker's state (:meth:`Rule.worker_init`, ``w`` in
:meth:`Rule.send`) is another namespace (or None) of that worker's own: its shift ``h``, its table.

Adding a method is one rule here and one call, :func:`blockcd.registry.register` (which
takes the rule, its capabilities and, optionally, its theory row).  This module
imports nothing from the rest of the library: what a rule needs from the theory
(coordinate descent's per-block steps, IS-ASGD's parameters) reaches it through the
run's set-up ``s`` (:class:`blockcd.arguments.Setup`).  Read next: the per-worker
reference, :mod:`blockcd.reference`, which runs these rules in a plain loop.
"""

from __future__ import annotations

from types import SimpleNamespace as State

import numpy as np


class Received:
    """The n workers' messages of one round, apart: what a ``per_worker`` rule's master steps on.

    Attributes
    ----------
    values
        (n, d) array; row i holds what worker i sent on its coordinates (entries outside ``mask`` are not read)
    mask
        (n, d) booleans, True where worker i sent (None: every worker sent every coordinate, tau = m)
    idx
        (n, b) array of the rows the workers sampled this round (None for a method without samples)
    """

    __slots__ = ("idx", "mask", "values")

    def __init__(self, values: np.ndarray, mask: np.ndarray | None, idx=None):
        self.values, self.mask, self.idx = values, mask, idx

    @classmethod
    def gather(cls, d: int, messages, idx=None) -> Received:
        """From the messages (coords, values) of workers 0..n-1 as they arrive (coords None: all d)."""
        messages = list(messages)
        values = np.zeros((len(messages), d))
        dense = all(c is None for c, _ in messages)
        mask = None if dense else np.zeros((len(messages), d), dtype=bool)
        for i, (c, v) in enumerate(messages):
            if c is None:
                values[i] = v
                if mask is not None:
                    mask[i] = True
            else:
                values[i, c] = v
                mask[i, c] = True
        return cls(values, mask, idx)


class Rule:
    """A method's update rule; subclasses override what differs from plain IBCD-style averaging."""

    #: registry name (see :mod:`blockcd.registry`)
    name = ""
    #: whether the master steps on each worker's message apart (a :class:`Received`), not on their sum
    per_worker = False
    #: whether the rule chooses the blocks each worker sends (``sel.choose``); the engine then draws none
    own_blocks = False

    def master_init(self, x0: np.ndarray, problem, step: float) -> State:
        """The master's state at the start (by default just the iterate x)."""
        return State(x=x0)

    def start(self, s, x0: np.ndarray | None = None) -> State:
        """The master's state for the run set up by ``s`` (a :class:`blockcd.arguments.Setup`): what the engines
        call; by default ``master_init`` (x0: the start if not ``s.x0``)."""
        return self.master_init(s.x0 if x0 is None else x0, s.problem, s.step)

    def point(self, s: State) -> np.ndarray:
        """What the master broadcasts this round (by default the iterate)."""
        return s.x

    def iterate(self, s: State) -> np.ndarray:
        """The iterate x^k that the history records."""
        return s.x

    def worker_init(self, o, x0: np.ndarray) -> State | None:
        """A worker's own state at the start (none by default)."""
        return None

    def send(self, o, w, x, idx, sel):  # pragma: no cover - abstract
        """The message (through ``sel``) and f(x) if known; see the module docstring."""
        raise NotImplementedError

    def step(self, s: State, total: np.ndarray, scale: float, step: float, n: int) -> None:
        """x+ = x - step (m/(tau n)) sum_i P_{S_i} g_i."""
        s.x = s.x - step * (total * scale)

    def prox(self, s: State, step: float) -> None:
        """After :meth:`step`, x+ = prox_{step R}(x+) when the master holds a regulariser R (``s.reg``).

        Every engine calls it after each step; it does nothing for a state
        without R (only the methods registered with ``prox=True`` accept a
        problem with R, and only they put it in their state).
        """
        reg = getattr(s, "reg", None)
        if reg is not None:
            s.x = reg.prox(s.x, step)


class IBCD(Rule):
    """Independent block coordinate descent (chapter 4): worker i sends (m/tau) P_{S_i} grad f_i(x)."""

    name = "ibcd"

    def send(self, o, w, x, idx, sel):
        G, fx = sel.grads(o, x)  # worker i's gradient on the blocks it sends (the margins, then those columns)
        return sel.send(G), fx


class CD(Rule):
    """Coordinate descent on f, the paper's baseline: every worker sends the same blocks, the master steps per block.

    The engine draws one set of blocks for all workers (uniform tau-nice, ``sampling='shared'``, or
    block j with its own probability, ``'importance'``: :class:`blockcd.blocks.ImportanceSampler`);
    worker i sends P_S grad f_i(x) unscaled, and the master takes
    x_j+ = x_j - step w_j (1/n) sum_i grad_j f_i(x) on the sent blocks, w_j of
    :func:`blockcd.theory.cd_steps` (1/L, or 1/v_j with importance sampling), which reach the rule
    through the run's set-up (``s.cd_steps``).
    """

    name = "cd"

    def start(self, s, x0=None):
        w = np.repeat(s.cd_steps, s.blocks.sizes)  # the theory's per-block steps, per coordinate
        return State(x=s.x0 if x0 is None else x0, w=w)

    def send(self, o, w, x, idx, sel):
        G, fx = sel.grads(o, x)
        return sel.send(G), fx

    def step(self, s, total, scale, step, n):
        s.x = s.x - step * (s.w * total) / n


class IBGD(IBCD):
    """IBGD (Bernoulli gradient descent): worker i sends its whole gradient with probability q = tau/m, or nothing.

    The rule is IBCD's: the engine's choice (:class:`blockcd.blocks.BernoulliSampler`)
    gives a worker all m blocks or none, and the master's scale m/(tau n) = 1/(q n)
    makes the average unbiased.  A worker that sends nothing computes nothing.
    """

    name = "ibgd"


class ISSGD(Rule):
    """IS-SGD (chapter 5): as IBCD with a b-minibatch gradient of worker i's own rows."""

    name = "is-sgd"

    def send(self, o, w, x, idx, sel):
        return sel.send(sel.minibatch_grads(o, x, idx)), None


class ISSGDAsync(ISSGD):
    r"""Asynchronous IS-SGD (the paper's Algorithm 8): a worker sends IS-SGD's message; the master applies each
    message alone, on arrival, and answers that worker only.

    Worker i computes its b-minibatch gradient at the point :math:`z_i` it last received and sends its
    tau blocks (``send``, IS-SGD's).  The master keeps every worker's local iterate
    :math:`x_i = z_i - \gamma \frac{m}{\tau} (g_i)_{U_i}` and their average :math:`w = \frac1n \sum_i x_i`;
    on an arrival from worker i (:meth:`arrive`) it replaces :math:`x_i`, moves w by
    :math:`(x_i^{new} - x_i^{old})/n` and sends :math:`z_i = \mathrm{prox}_{\gamma R}(w)` back to worker i.
    The iterate is :math:`\mathrm{prox}_{\gamma R}(w)`.  Were all n workers to compute on the same point,
    the n arrivals would make one step of IS-SGD.  Engines: :mod:`blockcd.asynchronous` and the MPI ranks.
    """

    name = "is-sgd-async"

    def master_init(self, x0, problem, step):
        n = problem.n
        return State(w=x0.copy(), X=np.tile(x0, (n, 1)), Z=np.tile(x0, (n, 1)), reg=problem.reg, gamma=step, n=n)

    def point(self, s: State) -> np.ndarray:
        return self.iterate(s)

    def iterate(self, s: State) -> np.ndarray:
        return s.w if s.reg is None else s.reg.prox(s.w, s.gamma)

    def step(self, s, total, scale, step, n):  # pragma: no cover - the engines call arrive
        raise TypeError("is-sgd-async has no synchronous step: its engines apply each message with arrive()")

    def arrive(self, s: State, i: int, coords, values, scale: float, step: float) -> np.ndarray:
        """Apply worker i's message (its values on ``coords``, None: all d) with ``scale`` = m/tau; returns
        the point to send back to worker i (kept as its z_i)."""
        new = s.Z[i].copy()
        if coords is None:
            new -= step * (scale * values)
        else:
            new[coords] -= step * (scale * values)
        s.w += (new - s.X[i]) / s.n
        s.X[i] = new
        s.gamma = step
        s.Z[i] = self.iterate(s)
        return s.Z[i]


class ISEGA(Rule):
    """ISEGA (chapter 6): send P_{S_i}(grad f_i(x) - h_i), overwrite those blocks of h_i; g = hbar + sum.

    The master keeps hbar = mean_i h_i and moves it by the same sent blocks.
    With a regulariser R on the problem (``problem.reg``) the master's step is
    x+ = prox_{step R}(x - step g) (the paper's Algorithm 2); the workers never see R.
    """

    name = "isega"

    def master_init(self, x0, problem, step):
        return State(x=x0, hbar=np.zeros(x0.shape), reg=problem.reg)

    def worker_init(self, o, x0):
        return State(h=np.zeros(o.shape))

    def estimate(self, o, w, x, idx, sel):
        """The local estimate the shift is subtracted from, on the sent blocks: grad f_i(x) (and f(x))."""
        return sel.grads(o, x)

    def send(self, o, w, x, idx, sel):
        g, fx = self.estimate(o, w, x, idx, sel)
        return sel.send_shifted(g, w.h), fx

    def step(self, s, total, scale, step, n):
        g = s.hbar + total * scale
        s.hbar = s.hbar + total / n
        s.x = s.x - step * g


class ISSAGA(ISEGA):
    """IS-SAGA (chapter 6): ISEGA's shifts around worker i's local SAGA estimate.

    Worker i keeps one scalar phi'(a_j^T x) per local row j (its table) and
    the table's mean gradient ``avg``; with rows idx it estimates
    g_i = (1/b) sum_{j in idx} (grad f_ij(x) - table_j) + avg (+ lam x), then
    refreshes those rows of the table.  No communication is involved.
    """

    name = "is-saga"

    def worker_init(self, o, x0):
        table = o.derivs(x0)
        return State(h=np.zeros(o.shape), table=table, avg=o.table_average(table))

    def estimate(self, o, w, x, idx, sel):
        # the whole estimate: its table mean must move on every coordinate anyway (b rows, not l)
        new = o.sample_derivs(x, idx)
        old = o.take(w.table, idx)
        g = o.combine(idx, (new - old) / idx.shape[-1]) + w.avg
        if o.lam:
            g = g + o.lam * x
        o.put(w.table, idx, new)
        w.avg = w.avg + o.combine(idx, (new - old) / o.row_sizes)
        return g, None


class ISAGALocal(Rule):
    """Distributed ISAGA (the paper's Algorithm 5): local SAGA tables, block sampling, no shift.

    Worker i keeps a table of d-vectors alpha_ij, one per local row (at the
    start grad phi_ij(x0)), and their mean ``avg``.  With rows idx it forms
    g_i = (1/b) sum_{j in idx} (grad phi_ij(x) - alpha_ij) + avg (+ lam x) and
    sends the chosen blocks (rescaled by the master, as IBCD); then it
    refreshes *the sent blocks only* of alpha_ij and of their mean.  Without a
    shift the sum of what arrives is unbiased for grad f(x) but its variance
    at x* is (omega/n) (1/n) sum_i ||grad f_i(x*)||^2: it converges to x* only
    under interpolation (the paper's Assumption 2).
    """

    name = "isaga-local"
    #: numbers the vector tables of all workers may hold (8 bytes each, 2 GiB)
    MAX_TABLE = 1 << 28

    def worker_init(self, o, x0):
        size = (o.n * o.l_max if hasattr(o, "l_max") else o.l) * o.d  # all workers' tables, or one worker's
        if size > self.MAX_TABLE:
            raise ValueError(f"isaga-local keeps one d-vector per local row: {size} numbers exceed "
                             f"{self.MAX_TABLE}; use is-saga (scalar tables) on a problem this large")
        return State(table=o.gradient_table(x0), avg=o.table_average(o.derivs(x0)))

    def send(self, o, w, x, idx, sel):
        new = o.sample_derivs(x, idx)[..., None] * o.row_data(idx)   # grad phi_ij(x) for the rows idx
        old = np.take_along_axis(w.table, idx[..., None], axis=-2)
        diff = new - old
        g = diff.mean(axis=-2) + w.avg
        if o.lam:
            g = g + o.lam * x
        M = sel.sent_mask(g.shape)                                  # the coordinates of the sent blocks
        np.put_along_axis(w.table, idx[..., None], np.where(M[..., None, :], new, old), axis=-2)
        w.avg = w.avg + np.where(M, diff.sum(axis=-2), 0.0) / o.row_sizes
        return sel.send(g), None


class ISAGAShared(Rule):
    r"""ISAGA with shared data (the paper's Algorithm 4): one SAGA table of N d-vectors, block sampling.

    Every worker reads all N functions f_j (a problem with ``split='identical'``,
    alias ``'shared'``).  Each round the engine draws n distinct functions
    j_1, ..., j_n without replacement (:class:`blockcd.blocks.SharedRows`);
    worker i computes grad f_{j_i}(x) on its tau sampled blocks and sends those
    blocks.  The master holds the table alpha_1, ..., alpha_N (at the start
    grad f_j(x^0)) and its mean ``avg``; with worker i's blocks U_i it forms
    P_{U_i}(grad f_{j_i}(x) - alpha_{j_i} + avg), steps on their sum rescaled
    by m/(tau n) as IBCD, and overwrites the blocks U_i of alpha_{j_i} with what
    worker i sent (the j_i are distinct, so no entry is written twice).

    The mean is avg = (1/N) sum_j alpha_j, and the code divides by N.  The
    paper's Algorithm 4 writes (1/n) sum_{j=1}^N alpha_j in its line 12, but its
    line 2 sets the same mean with 1/N, its section 4.1 calls it "the average of
    all alpha", and only 1/N makes the estimate SAGA's unbiased one,
    E[grad f_{j_i}(x) - alpha_{j_i}] + avg = grad f(x) (j_i is uniform over the
    N functions), on which SAGA's analysis, and so Theorem 2's, rests.  With 1/n
    the estimate is off by (N/n - 1) avg: zero at x* once the table holds the
    gradients there (x* stays a fixed point), but not on the way, so the
    theorem's guarantee does not cover that variant.

    With tau = m it is minibatch SAGA with n samples drawn without
    replacement.  The table costs N d numbers at the master; a worker keeps no state.
    """

    name = "isaga-shared"
    per_worker = True
    #: numbers the table may hold (8 bytes each, 2 GiB)
    MAX_TABLE = 1 << 28

    def master_init(self, x0, problem, step):
        if not problem.shared_data:
            raise ValueError(f"isaga-shared needs shared data (every worker reads all N functions, split="
                             f"'identical' or 'shared'), got split = {problem.split!r}")
        o = problem.worker(0)  # shared data: one worker's rows are all N functions
        if o.l * o.d > self.MAX_TABLE:
            raise ValueError(f"isaga-shared keeps one d-vector per function: N d = {o.l * o.d} numbers exceed "
                             f"{self.MAX_TABLE}")
        table = o.gradient_table(x0)
        if o.lam:
            table = table + o.lam * x0
        return State(x=x0, table=table, avg=table.mean(axis=0))

    def send(self, o, w, x, idx, sel):
        return sel.send_each(sel.minibatch_grads(o, x, idx)), None  # grad f_{j_i}(x) on the blocks U_i

    def step(self, s, got, scale, step, n):
        J = got.idx[:, 0]
        old = s.table[J]
        if got.mask is None:
            diff = got.values - old
            s.table[J] = got.values
            g = (diff + s.avg).sum(axis=0)
        else:
            diff = np.where(got.mask, got.values - old, 0.0)
            s.table[J] = np.where(got.mask, got.values, old)
            g = np.where(got.mask, diff + s.avg, 0.0).sum(axis=0)
        s.avg = s.avg + diff.sum(axis=0) / s.table.shape[0]
        s.x = s.x - step * (g * scale)


class ISASGD(Rule):
    """IS-ASGD (chapter 7): accelerated SGD under strong growth (Vaswani, Bach and Schmidt 2019).

    y = alpha v + (1 - alpha) w is broadcast; with g the IBCD aggregate at y,
    w+ = y - eta g and v+ = beta v + (1 - beta) y - gamma eta g.  Worker i
    sends its full local gradient at y, or with ``batch=b`` (rows ``idx``) its
    b-minibatch gradient: the stochastic local gradients of the paper's Algorithm 7.
    """

    name = "is-asgd"

    def start(self, s, x0=None):
        x0 = s.x0 if x0 is None else x0
        alpha, beta, gamma = s.asgd_parameters  # the theory's, from the step (chapter 7)
        return State(w=x0, v=x0.copy(), y=None, alpha=alpha, beta=beta, gamma=gamma)

    def point(self, s):
        s.y = s.alpha * s.v + (1.0 - s.alpha) * s.w
        return s.y

    def iterate(self, s):
        return s.w

    def send(self, o, w, y, idx, sel):
        G = sel.grads(o, y, with_f=False)[0] if idx is None else sel.minibatch_grads(o, y, idx)
        return sel.send(G), None

    def step(self, s, total, scale, step, n):
        g = total * scale
        y = s.y
        s.w = y - step * g
        s.v = s.beta * s.v + (1.0 - s.beta) * y - s.gamma * step * g


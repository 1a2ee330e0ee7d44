"""The simulator: :func:`run`, every method with all n workers as arrays.

Each iteration the simulator asks the method's rule (:mod:`blockcd.rules`)
for what all n workers send at once: the oracle is ``problem.workers()``
(stacked local data, answers of shape (n, d)), the block choice one (n, m)
mask from :class:`blockcd.blocks.BlockSampler`, and the master's sum
sum_i P_{S_i} D_i one masked reduction (:class:`Sent`).  No Python loop runs
over workers.  What was sent is counted from the masks actually used
(:class:`blockcd.history.Recorder`).  The update rules live in
:mod:`blockcd.rules`, the names in :mod:`blockcd.registry`, the step sizes in
:mod:`blockcd.theory`; a per-worker loop over the same rules is
:mod:`blockcd.reference`.

With tau = m every mask is all-ones, the scale m/tau is exactly 1, and each
method is its dense (non-sparsified) parent, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import registry, theory
from ._validate import check_choice, check_float, check_int, check_seed, check_vector
from .blocks import Blocks, BlockSampler, Minibatches, partition
from .history import BLOWUP, BYTES_PER_NUMBER, DivergenceError, History, Recorder
from .problems import Problem

__all__ = ["ALIASES", "BLOWUP", "BYTES_PER_NUMBER", "METHODS", "DivergenceError", "History", "Sent", "run"]

METHODS = registry.METHODS
ALIASES = registry.ALIASES


@dataclass
class Setup:
    """A run's validated arguments, shared by the simulator, the reference and MPI."""

    problem: Problem
    method: registry.Method
    m: int
    tau: int
    step: float
    iters: int
    seed: int
    sampling: str
    batch: int | None
    x0: np.ndarray
    send_indices: bool
    until: float | None

    @cached_property
    def blocks(self) -> Blocks:
        return partition(self.problem.d, self.m)

    def sampler(self) -> BlockSampler:
        return BlockSampler(self.problem.n, self.m, self.tau, self.seed, self.sampling)

    def minibatches(self) -> Minibatches | None:
        return Minibatches(self.problem.sizes, self.batch, self.seed) if self.method.minibatch else None

    def recorder(self) -> Recorder:
        return Recorder(self.problem, method=self.method.name, step=self.step, blocks=self.blocks, tau=self.tau,
                        iters=self.iters, sampling=self.sampling, batch=self.batch,
                        send_indices=self.send_indices, until=self.until)


def setup(problem, method, *, m, tau, step=None, iters, seed=0, sampling="independent", batch=None, x0=None,
          send_indices=False, until=None, theory_step=True) -> Setup:
    """Validate the arguments of :func:`run` once (names and ranges as there) and take the theory's step.

    With ``theory_step=False`` a missing step stays None (an MPI worker, which
    has no use for it, skips the problem's constants).
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a blockcd Problem, got {type(problem).__name__}")
    spec = registry.get(method)
    d = problem.d
    m = check_int("m", m, 1, d)
    tau = check_int("tau", tau, 1, m)
    iters = check_int("iters", iters, 1)
    seed = check_seed("seed", seed)
    sampling = check_choice("sampling", sampling, spec.samplings)
    if not isinstance(send_indices, (bool, np.bool_)):
        raise TypeError(f"send_indices must be True or False, got {send_indices!r}")
    if spec.minibatch:
        batch = 1 if batch is None else check_int("batch", batch, 1, int(problem.sizes.min()))
    elif batch is not None:
        takes = " and ".join(repr(e.name) for e in registry.REGISTRY.values() if e.minibatch)
        raise ValueError(f"batch applies to {takes} only, not to {spec.name!r}")
    if until is not None:
        until = check_float("until", until, positive=True)
    if step is None and theory_step:
        step = theory.step_size(problem, spec.name, m, tau, batch=batch, sampling=sampling)
    elif step is not None:
        step = check_float("step", step, positive=True)
    x = np.zeros(d) if x0 is None else check_vector("x0", x0, d, "the problem dimension d").copy()
    return Setup(problem, spec, m, tau, step, iters, seed, sampling, batch, x, bool(send_indices), until)


def run(
    problem: Problem,
    method: str,
    *,
    m: int,
    tau: int,
    step: float | None = None,
    iters: int,
    seed: int = 0,
    sampling: str = "independent",
    batch: int | None = None,
    x0=None,
    send_indices: bool = False,
    until: float | None = None,
) -> History:
    r"""Run one method of the book on ``problem`` and record its history.

    Each iteration, worker i forms a local estimate (its full gradient for
    IBCD/ISEGA/IS-ASGD, a b-minibatch gradient for IS-SGD, a SAGA estimate for
    IS-SAGA) and sends tau of the m blocks, rescaled by m/tau; the master
    averages and steps.  ISEGA and IS-SAGA send the difference to a shift h_i
    and both sides overwrite the sent blocks of h_i.  The rules are
    :mod:`blockcd.rules`; :func:`blockcd.reference.run` runs them worker by worker.

    Parameters
    ----------
    problem : Problem
    method : {'ibcd', 'is-sgd', 'isega', 'is-saga', 'is-asgd'}
        (aliases: 'gd'/'dense' = 'ibcd', 'sgd', 'saga', 'asgd'; use tau = m for the dense method)
    m : int, 1 <= m <= d
        Number of blocks.
    tau : int, 1 <= tau <= m
        Blocks each worker sends per iteration.
    step : float > 0 or None
        Step size (for IS-ASGD, eta).  None takes :func:`blockcd.theory.step_size`.
    iters : int >= 1
        The most iterations to run.
    seed : int >= 0
        Seeds the block choices and minibatches: worker i's choice at iteration
        k is a function of (seed, i, k) alone.
    sampling : {'independent', 'shared'}
    batch : int or None
        Minibatch size for IS-SGD (default 1) and IS-SAGA (default 1).
    x0 : array (d,) or None (zeros)
    send_indices : bool
        Count tau * ceil(log2 m) index bits per worker per iteration, as when
        the master cannot regenerate the choice from the seed.
    until : float > 0 or None
        Stop at the first iteration k with ``dist2[k] <= until * dist2[0]``
        (or after ``iters``); the history is then an exact prefix of the full run's.

    Returns
    -------
    History
    """
    s = setup(problem, method, m=m, tau=tau, step=step, iters=iters, seed=seed, sampling=sampling, batch=batch,
              x0=x0, send_indices=send_indices, until=until)
    with np.errstate(over="ignore", invalid="ignore"):
        return _simulate(s)


def _simulate(s: Setup) -> History:
    p, rule, blocks = s.problem, s.method.rule, s.blocks
    n, tau = p.n, s.tau
    o = p.workers()
    sampler, batches, rec = s.sampler(), s.minibatches(), s.recorder()
    scale = (s.m / tau) / n
    indexed = _indexed(blocks, tau, n)
    master = rule.master_init(s.x0, p, s.step)
    worker = rule.worker_init(o, s.x0)
    for k in range(s.iters):
        x = rule.point(master)
        idx = None if batches is None else batches.draw(k)
        mask = None if tau == s.m else sampler.masks(k)
        total, fx = rule.send(o, worker, x, idx, Sent(blocks, mask, indexed))
        if rec.point(k, rule.iterate(master), fx):
            return rec.history(rule.iterate(master), s.seed)
        rec.sent(k, mask)
        rule.step(master, total, scale, s.step, n)
    rec.point(s.iters, rule.iterate(master))
    return rec.history(rule.iterate(master), s.seed)


def _indexed(blocks, tau: int, n: int) -> bool:
    """Whether to reach the sent entries by index: few, wide blocks of a large (n, d) array.

    Indexing touches about tau/m of the array but costs more per entry, and
    more per call, than the ``where=`` forms, which pass over all of it; it
    was measured to win with equal blocks of >= 4 coordinates, tau <= m/10
    and n d >= 2^15.
    """
    return blocks.equal and blocks.d >= 4 * blocks.m and 10 * tau <= blocks.m and n * blocks.d >= 1 << 15


class Sent:
    """The entries of the (n, d) array of local estimates sent at one iteration.

    Built from the (n, m) block mask (None: tau = m, every block).  Each
    coordinate's sum adds, in worker order and starting from zero, the entries
    of the workers that sent its block: over the whole array with ``where=``
    (the block mask repeated to coordinates), or, with ``indexed``, through the
    (worker, coordinate) indices of the sent entries and ``np.bincount``
    (which adds in the order given).  Both add the same numbers in the same
    order, which are the nonzero terms of the sum of the masked array, so the
    iterates do not depend on the form.
    """

    def __init__(self, blocks, mask, indexed: bool):
        self.d, self.mask, self.where, self.rows, self.cols = blocks.d, mask, None, None, None
        if mask is None:
            return
        if indexed:
            workers, chosen = np.nonzero(mask)
            width = blocks.d // blocks.m
            self.rows = workers[:, None]
            self.cols = (chosen * width)[:, None] + np.arange(width)
        else:
            self.where = mask if blocks.m == blocks.d else np.repeat(mask, blocks.sizes, axis=1)

    def send(self, D):
        """sum_i P_{S_i} D_i: what the master receives, added up."""
        if self.mask is None:
            return D.sum(axis=0)
        if self.rows is None:
            return np.add.reduce(D, axis=0, where=self.where)
        return np.bincount(self.cols.ravel(), weights=D[self.rows, self.cols].ravel(), minlength=self.d)

    def send_shifted(self, G, h):
        """Send D_i = G_i - h_i on the chosen blocks: h_i += P_{S_i} D_i in place, return sum_i P_{S_i} D_i."""
        if self.rows is None:
            D = G - h
            np.add(h, D, out=h, where=True if self.mask is None else self.where)
            return self.send(D)
        hs = h[self.rows, self.cols]
        D = G[self.rows, self.cols] - hs
        h[self.rows, self.cols] = hs + D
        return np.bincount(self.cols.ravel(), weights=D.ravel(), minlength=self.d)

"""The simulator: ``run``, every method with all n workers as arrays.

Each iteration has the shape of the per-worker reference (:mod:`blockcd.reference`):
the master broadcasts ``rule.point``, the workers send (``rule.send``: here all n
at once, the oracle ``problem.workers()`` answering for every worker, and
``sent`` the blocks they send, a :class:`blockcd.messages.Sent` whose ``send`` is
the master's sum sum_i P_{S_i} D_i, one masked reduction), the history records
x^k and what was sent, the master steps (``rule.step``) and takes its prox
(``rule.prox``).  No Python loop runs over workers.  The update rules live in
:mod:`blockcd.rules`, the names in :mod:`blockcd.registry`, the validated
arguments in :mod:`blockcd.arguments`, the block choices and minibatches of each
iteration in :mod:`blockcd.drawing`.  A rule that chooses its own blocks
(``own_blocks``, e.g. :class:`blockcd.topk.TopKErrorFeedback`) gets an empty
selection each iteration (``Sent.own``) instead of drawn blocks and fixes them
itself; the history counts the blocks it chose.

With tau = m every mask is all-ones, the scale m/tau is exactly 1, and each
method is its dense (non-sparsified) parent, bit for bit.

Read first: the rule (:class:`blockcd.rules.IBCD`) and the per-worker reference
(:func:`blockcd.reference.run`); then this loop; the speed machinery (drawing
ahead, partial sends) is in :mod:`blockcd.drawing` and :mod:`blockcd.messages`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np

from . import asynchronous, registry
from ._validate import listed
from .arguments import Setup, setup
from .drawing import Draws
from .history import BLOWUP, BYTES_PER_NUMBER, DivergenceError, History
from .messages import Sent
from .problems import Problem

__all__ = ["ALIASES", "BLOWUP", "BYTES_PER_NUMBER", "METHODS", "DivergenceError", "History", "run"]

METHODS = registry.METHODS
ALIASES = registry.ALIASES


def run(
    problem: Problem,
    method: str,
    *,
    m: int,
    tau: int,
    step: float | str | Callable[[int], float] | None = None,
    iters: int,
    seed: int = 0,
    sampling: str | None = None,
    batch: int | None = None,
    x0=None,
    send_indices: bool = False,
    until: float | None = None,
    gap: bool = True,
    delays=None,
    max_delay: int | None = None,
) -> History:
    r"""Run one method of the book on ``problem`` and record its history.

    Each iteration, worker i forms a local estimate (its full gradient for
    IBCD/ISEGA/IS-ASGD, a b-minibatch gradient for IS-SGD and for IS-ASGD with
    ``batch``, a SAGA estimate for
    IS-SAGA) and sends tau of the m blocks, rescaled by m/tau; the master
    averages and steps.  IBGD's workers send their whole gradient with
    probability q = tau/m, independently, rescaled by 1/q, or nothing;
    isaga-local's send the blocks of a local SAGA estimate (no shift);
    isaga-shared's (every worker reads all N functions: a problem with
    ``split='identical'``, alias ``'shared'``) send the blocks of grad f_j(x) for
    n distinct functions j drawn each round, and the master keeps one SAGA
    table of the N functions, refreshed with each worker's blocks.  On a
    problem with a regulariser R (``reg=``) ISEGA's master takes a prox step;
    the other methods reject such a problem.  ISEGA and IS-SAGA send the difference to a shift h_i
    and both sides overwrite the sent blocks of h_i.  The rules are
    :mod:`blockcd.rules`; :func:`blockcd.reference.run` runs them worker by worker.

    Parameters
    ----------
    problem : Problem
    method : str
        One of ``'ibcd'``, ``'is-sgd'``, ``'isega'``, ``'is-saga'``, ``'is-asgd'``, ``'cd'``, ``'ibgd'``,
        ``'isaga-local'``, ``'isaga-shared'``, ``'is-sgd-async'`` (:data:`blockcd.registry.METHODS`),
        or an alias: ``'gd'`` and ``'dense'`` for ``'ibcd'``, ``'sgd'``, ``'saga'`` and ``'asgd'`` for
        ``'is-sgd'``, ``'is-saga'`` and ``'is-asgd'`` (:data:`blockcd.registry.ALIASES`); use tau = m
        for the dense method.
    m : int, 1 <= m <= d
        Number of blocks.
    tau : int, 1 <= tau <= m
        Blocks each worker sends per iteration (IBGD: in expectation; it sends all m with
        probability tau/m).
    step : float > 0, None, 'decreasing' or callable
        Step size (for IS-ASGD, eta).  None takes :func:`blockcd.theory.step_size`; on a non-convex
        problem (IS-SGD only) :func:`blockcd.theory.nonconvex_step` with t = ``iters``, the paper's
        Theorem 7 step for that horizon (chapter 5).
        ``'decreasing'`` (IS-SGD): the theory's schedule gamma_k = 1/(a + c k) of
        :func:`blockcd.theory.decreasing_schedule`; the History then also records
        ``gap_avg``, f at the weighted average of :func:`blockcd.theory.average_weights`
        (chapter 5).  A callable k -> step (every method but IS-ASGD) is called once per
        iteration k = 0, 1, ...; a value that is not a finite real > 0 raises, naming k.
        With a schedule ``History.steps`` holds the steps used and ``History.step`` the first.
    iters : int >= 1
        The most iterations to run.
    seed : int >= 0
        Seeds the block choices and minibatches: worker i's choice at iteration
        k is a function of (seed, i, k) alone.
    sampling : {'independent', 'shared', 'importance'} or None
        None: the method's first (``'independent'``; ``'shared'`` for ``'cd'``).  'independent' only for
        IBGD, isaga-local and isaga-shared; ``'cd'`` (coordinate descent, the same blocks on every
        worker, per-block steps of :func:`blockcd.theory.cd_steps`; its ``step`` multiplies them, default 1)
        takes 'shared' (uniform tau-nice blocks) or 'importance' (block j with probability p_j proportional
        to its smoothness, tau blocks in expectation)
    batch : int or None, 1 <= batch <= min_i l_i
        Minibatch size for IS-SGD, IS-SAGA and isaga-local (default 1), and for IS-ASGD
        (default None: each worker's full local gradient; b rows drawn without replacement
        give the stochastic local gradients of the paper's Algorithm 7, chapter 7).
    x0 : array (d,) or None (zeros)
    send_indices : bool
        Count tau * ceil(log2 m) index bits per worker per iteration, as when
        the master cannot regenerate the choice from the seed (not for IBGD,
        which sends all blocks or none).
    until : float > 0 or None
        Stop at the first iteration k with ``dist2[k] <= until * dist2[0]``
        (or after ``iters``); the history is then an exact prefix of the full run's.
    gap : bool
        Record f(x^k) - f* (default; on a non-convex problem the history records ||grad f(x^k)||^2
        in ``grad2`` instead, and ``dist2`` and ``gap`` are NaN).  ``False`` leaves ``History.gap`` NaN and
        skips evaluating f, which on large problems costs as much as the
        partial gradients of an iteration.
    delays : :class:`blockcd.asynchronous.Speeds`, integer array or None
        ``'is-sgd-async'`` only (the paper's Algorithm 8; iteration k is the k-th message to
        arrive): the seeded delay model that orders the arrivals (None: ``Speeds(seed=seed)``,
        equal speeds), or an arrival record, the worker of each arrival, e.g.
        ``History.arrivals`` of an MPI run, which the run then replays.
    max_delay : int >= 0 or None
        ``'is-sgd-async'``: reject a record (or model) whose delays exceed it (the M of Theorem 9).

    Returns
    -------
    History
    """
    s = setup(problem, method, m=m, tau=tau, step=step, iters=iters, seed=seed, sampling=sampling, batch=batch,
              x0=x0, send_indices=send_indices, until=until, gap=gap)
    if s.until is not None:
        warn_unreachable(s)
    if s.method.asynchronous:
        record, times, _ = asynchronous.schedule(delays, problem.n, s.iters, s.seed, max_delay)
        with np.errstate(over="ignore", invalid="ignore"):
            return asynchronous.simulate(s, record, times)
    if delays is not None or max_delay is not None:
        takes = listed(e.name for e in registry.REGISTRY.values() if e.asynchronous)
        raise ValueError(f"delays and max_delay apply to {takes} only, not to {s.method.name!r}, whose "
                         "workers all answer every round")
    with np.errstate(over="ignore", invalid="ignore"):
        return _simulate(s)


class UnreachableWarning(UserWarning):
    """``until`` asks for an accuracy inside the neighbourhood of x* that the method's theory bounds."""


@contextlib.contextmanager
def quiet_unreachable():
    """A context in which :class:`UnreachableWarning` is not shown: for callers that count an accuracy not
    reached themselves (``iterations_to``'s nan, the explorers' curves)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreachableWarning)
        yield


def warn_unreachable(s: Setup) -> None:
    """Warn (:class:`UnreachableWarning`) when ``until`` asks for less than the ball E||x - x*||^2 <= R that
    the method reaches on this problem (:func:`blockcd.theory.neighbourhood`, R = 2 step sigma^2 / mu > 0: IBCD
    and IS-SGD at tau < m where the workers' gradients do not all vanish at x*, sigma*^2 > 0)."""
    import warnings

    from . import theory

    p = s.problem
    if not p.convex or s.schedule is not None or s.step is None:
        return
    try:
        radius = theory.neighbourhood(p, s.method.name, s.m, s.tau, step=s.step, batch=s.batch)
    except (ValueError, TypeError):  # no such row for this method, or no constant for this problem
        return
    if not radius > 0:
        return
    diff = s.x0 - p.x_star
    target = s.until * float(diff @ diff)
    if radius > target:
        warnings.warn(
            f"{s.method.name} with tau = {s.tau} of m = {s.m} reaches only a neighbourhood of x* on this problem: "
            f"its theory bounds E||x^k - x*||^2 by {radius:.3g} (sigma*^2 = {p.sigma_star2:.3g} > 0: the workers' "
            f"gradients do not all vanish at x*), above the until = {s.until:g} target {target:.3g}, so the run "
            "may stop at iters without reaching it; tau = m, or a method with shifts (isega, is-saga), reaches "
            "any accuracy", UnreachableWarning, stacklevel=3)


def _simulate(s: Setup) -> History:
    p, rule = s.problem, s.method.rule
    o = p.workers()                                        # all n workers' oracles as arrays
    rec = s.recorder()
    master = rule.start(s)
    worker = rule.worker_init(o, s.x0)
    scale = (s.m / s.tau) / p.n
    own = rule.own_blocks                                  # the rule chooses the blocks; none are drawn
    with Draws(s, o) as draws:
        for k, sent, idx in draws:                         # the blocks and rows of iteration k
            if own:
                sent = Sent.own(s.blocks, p.n, s.tau, sent.want_f)
            x = rule.point(master)                         # broadcast
            total, fx = rule.send(o, worker, x, idx, sent)  # the workers send; the master adds up
            if own and sent.mask is None:
                raise RuntimeError(f"the rule {type(rule).__name__} has own_blocks = True but its send() did not "
                                   "call sel.choose(...): the engine cannot tell which blocks were sent")
            if rule.per_worker:                            # the n messages apart, with the rows sampled
                total.idx = idx
            if rec.point(k, rule.iterate(master), fx):     # record x^k (stops at ``until``)
                return rec.history(rule.iterate(master), s.seed)
            rec.sent(k, sent.mask, sent.chosen)
            g = s.step_at(k)
            rec.stepped(k, g)
            rule.step(master, total, scale, g, p.n)        # step
            rule.prox(master, g)                           # x = prox_{step R}(x), if the problem has R
    rec.point(s.iters, rule.iterate(master))
    return rec.history(rule.iterate(master), s.seed)

"""A run's validated arguments: :func:`setup` checks what :func:`blockcd.run` was given, once.

Every engine starts here: the simulator (:mod:`blockcd.methods`), the per-worker
reference (:mod:`blockcd.reference`), the asynchronous engine
(:mod:`blockcd.asynchronous`) and the MPI ranks (:mod:`blockcd.mpi`) call
:func:`setup` and read the :class:`Setup` it returns: the problem, the method's
registry entry, m, tau, the step (the theory's by default), the seed, and fresh
samplers (:meth:`Setup.sampler`, :meth:`Setup.minibatches`) that give every engine
the same choices.  What a rule needs from the theory (coordinate descent's per-block
steps, IS-ASGD's parameters) it reads here too (:attr:`Setup.cd_steps`,
:attr:`Setup.asgd_parameters`), so that :mod:`blockcd.rules` imports nothing.
Read next: :mod:`blockcd.reference`, the plainest engine.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import registry, theory
from ._validate import check_choice, check_float, check_int, check_seed, check_vector, listed
from .blocks import (
    BernoulliSampler,
    Blocks,
    BlockSampler,
    ImportanceSampler,
    Minibatches,
    Sampler,
    SharedRows,
    partition,
)
from .history import Recorder
from .problems import Problem

__all__ = ["Setup", "setup"]


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
    gap: bool = True
    #: a callable k -> step (None for the constant ``step``); ``step`` is then its value at k = 0
    schedule: object = None
    #: (a, c) of ``step='decreasing'``, for which the History also records f at the weighted average (None otherwise)
    average: tuple[float, float] | None = None

    def step_at(self, k: int) -> float:
        """The step of iteration k: the constant ``step``, or the schedule's value, checked (finite, > 0)."""
        if self.schedule is None:
            return self.step
        return _checked_step(self.schedule(k), k)

    @cached_property
    def blocks(self) -> Blocks:
        """The partition of the ``d`` coordinates into ``m`` blocks."""
        return partition(self.problem.d, self.m)

    @cached_property
    def cd_steps(self) -> np.ndarray:
        """Coordinate descent's per-block steps w_j (:func:`blockcd.theory.cd_steps`), for its rule."""
        return theory.cd_steps(self.problem, self.m, self.tau, self.sampling)

    @property
    def asgd_parameters(self) -> tuple[float, float, float]:
        """IS-ASGD's (alpha, beta, gamma) at the run's step (:func:`blockcd.theory.asgd_parameters`), for its rule."""
        return theory.asgd_parameters(self.problem, self.step)

    def sampler(self) -> Sampler:
        """A fresh block sampler (:class:`blockcd.blocks.Sampler`): the same seed gives every engine the same
        choices.  The one place where a run's sampler is chosen.

        For a Bernoulli method (IBGD) each worker sends all m blocks with probability tau/m, or none.
        """
        if self.method.bernoulli:
            return BernoulliSampler(self.problem.n, self.m, self.tau / self.m, self.seed)
        if self.sampling == "importance":  # coordinate descent: block j with probability p_j, the same for all
            return ImportanceSampler(self.problem.n, theory.cd_probabilities(self.problem, self.m, self.tau),
                                     self.seed)
        return BlockSampler(self.problem.n, self.m, self.tau, self.seed, self.sampling)

    def minibatches(self) -> Minibatches | SharedRows | None:
        """A fresh minibatch stream for the stochastic methods; ``None`` for the others (and for IS-ASGD
        without ``batch``: full local gradients).

        For shared-data ISAGA: n distinct functions of the N per round (:class:`blockcd.blocks.SharedRows`).
        """
        if self.method.shared_data:
            return SharedRows(self.problem.N, self.problem.n, self.seed)
        if self.method.minibatch and self.batch is not None:
            return Minibatches(self.problem.sizes, self.batch, self.seed)
        return None

    def recorder(self) -> Recorder:
        """A recorder of this run's history (suboptimality, gradient norm, blocks sent)."""
        return Recorder(self.problem, method=self.method.name, step=self.step, blocks=self.blocks, tau=self.tau,
                        iters=self.iters, sampling=self.sampling, batch=self.batch,
                        send_indices=self.send_indices, until=self.until, gap=self.gap,
                        counted=self.method.bernoulli or self.method.asynchronous or self.sampling == "importance",
                        schedule=self.schedule is not None,
                        average=self.average, own=self.method.rule.own_blocks)


def setup(problem, method, *, m, tau, step=None, iters, seed=0, sampling=None, batch=None, x0=None,
          send_indices=False, until=None, gap=True, theory_step=True) -> Setup:
    """Validate the arguments of ``run`` once (names and ranges as there) and take the theory's step.

    With ``theory_step=False`` a missing step stays None (an MPI worker, which
    has no use for it, skips the problem's constants).
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a blockcd Problem, got {type(problem).__name__}")
    spec = registry.get(method)
    if problem.reg is not None and not spec.prox:
        takes = listed(e.name for e in registry.REGISTRY.values() if e.prox)
        raise ValueError(f"{spec.name!r} does not take a regulariser (the problem has reg = {problem.reg!r}): its "
                         f"theory does not cover R; the methods that accept one (a prox step): {takes}")
    if spec.shared_data:
        if not problem.shared_data:
            raise ValueError(f"{spec.name!r} needs shared data: every worker reads all N functions; build the "
                             f"problem with split='identical' (alias 'shared'), got split = {problem.split!r}")
        if problem.n > problem.N:
            raise ValueError(f"{spec.name!r} draws n distinct functions of the N per round: n = {problem.n} "
                             f"workers need n <= N = {problem.N}")
    d = problem.d
    m = check_int("m", m, 1, d)
    tau = check_int("tau", tau, 1, m)
    if isinstance(method, str) and method.strip().lower() in registry.DENSE_ALIASES and tau != m:
        raise ValueError(f"method {method!r} is the dense method, every block sent: it needs tau = m = {m}, got "
                         f"tau = {tau}; for tau < m ask for 'ibcd'")
    iters = check_int("iters", iters, 1)
    if not problem.convex:
        if not spec.nonconvex:
            takes = listed(e.name for e in registry.REGISTRY.values() if e.nonconvex)
            raise ValueError(f"{spec.name!r} does not run on a non-convex problem (problem.convex is False): its "
                             f"theory needs convex f and an x*; the methods whose theory covers it: {takes}")
        if until is not None:
            raise ValueError("until stops at ||x^k - x*||^2 <= until ||x^0 - x*||^2, and a non-convex problem has no "
                             "x*: leave until=None (the history records ||grad f(x^k)||^2)")
    seed = check_seed("seed", seed)
    sampling = spec.samplings[0] if sampling is None else check_choice("sampling", sampling, spec.samplings)
    if not isinstance(send_indices, (bool, np.bool_)):
        raise TypeError(f"send_indices must be True or False, got {send_indices!r}")
    if send_indices and spec.bernoulli:
        raise ValueError(f"send_indices does not apply to {spec.name!r}: a worker sends all m blocks or "
                         "nothing, so there are no block indices to send")
    if spec.minibatch:
        if batch is not None:
            batch = check_int("batch", batch, 1, int(problem.sizes.min()))
        elif not spec.full_batch:
            batch = 1
    elif batch is not None:
        takes = listed(e.name for e in registry.REGISTRY.values() if e.minibatch)
        raise ValueError(f"batch applies to {takes} only, not to {spec.name!r}")
    if until is not None:
        until = check_float("until", until, positive=True)
        if not until < 1:
            raise ValueError(f"until must be in (0, 1) (an accuracy relative to the start, "
                             f"||x^k - x*||^2 <= until ||x^0 - x*||^2), got {until}")
    if not isinstance(gap, (bool, np.bool_)):
        raise TypeError(f"gap must be True or False, got {gap!r}")
    schedule = average = None
    if isinstance(step, str):
        if step != "decreasing":
            raise ValueError(f"step must be a float > 0, None, 'decreasing' or a callable k -> step, got {step!r}")
        if not spec.decreasing:
            takes = listed(e.name for e in registry.REGISTRY.values() if e.decreasing)
            raise ValueError(f"step='decreasing' applies to {takes} only, not to {spec.name!r}: the book has no "
                             "decreasing schedule for its theory; pass a callable k -> step instead")
        if sampling != "independent":
            raise ValueError("step='decreasing' is the theory of independent sampling: sampling must be "
                             f"'independent', got {sampling!r}")
        average = theory.decreasing_schedule(problem, m, tau, batch=batch)
        a, c = average
        schedule = _Decreasing(a, c)
    elif callable(step):
        if not spec.schedules:
            takes = listed(e.name for e in registry.REGISTRY.values() if e.schedules)
            raise ValueError(f"a step schedule (a callable) applies to {takes}, not to {spec.name!r}, whose "
                             "parameters are set once from the step")
        schedule = step
    if schedule is not None:
        step = _checked_step(schedule(0), 0)
    elif step is None and theory_step and not problem.convex:
        if sampling != "independent":
            raise ValueError("the non-convex theory (the paper's Theorem 7) is for independent sampling: pass "
                             f"step= with sampling = {sampling!r}")
        step = theory.nonconvex_step(problem, m, tau, iters)
    elif step is None and theory_step:
        step = theory.step_size(problem, spec.name, m, tau, batch=batch, sampling=sampling)
    elif step is not None:
        if not isinstance(step, (numbers.Real, np.number)) or isinstance(step, (bool, np.bool_)):
            raise TypeError(f"step must be a float > 0, None, 'decreasing' or a callable k -> step, "
                            f"got {type(step).__name__} {step!r}")
        step = check_float("step", step, positive=True)
    x = np.zeros(d) if x0 is None else check_vector("x0", x0, d, "the problem dimension d").copy()
    return Setup(problem, spec, m, tau, step, iters, seed, sampling, batch, x, bool(send_indices), until, bool(gap),
                 schedule, average)


class _Decreasing:
    """The schedule gamma_k = 1/(a + c k) of ``step='decreasing'`` (:func:`blockcd.theory.decreasing_schedule`)."""

    def __init__(self, a: float, c: float):
        self.a, self.c = a, c

    def __call__(self, k: int) -> float:
        return 1.0 / (self.a + self.c * k)

    def __repr__(self) -> str:
        return f"1/({self.a:.4g} + {self.c:.4g} k)"


def _checked_step(value, k: int) -> float:
    """A schedule's step at iteration k as a float; raises naming k unless it is a finite real > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        raise TypeError(f"the step schedule must return a real number, got {type(value).__name__} {value!r} "
                        f"at iteration k = {k}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"the step schedule returned step = {value} at iteration k = {k}; every step must be "
                         "finite and > 0")
    return value

"""The registry of methods: names, aliases, rules and capabilities, in one place.

:func:`blockcd.run`, :mod:`blockcd.theory`, :mod:`blockcd.mpi`, the
reference, the widgets and ``reproduce`` all look a method up here
(:func:`get`, :func:`canonical`).  Adding a method is one rule in
:mod:`blockcd.rules` and one :class:`Method` entry below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import rules
from ._validate import check_choice


@dataclass(frozen=True)
class TheoryRow:
    r"""One method's theory: the formulas :mod:`blockcd.theory` looks up by the method's name.

    Every field is a function of plain arguments (the problem ``p``, blocks ``m``, ``tau``, and the
    others named below, all validated before the call), a number, a string saying why the method
    has no such formula, or ``None`` (not given).  Asking the theory for a field that is a string or
    ``None`` raises a ``ValueError`` naming the method and the field, never another method's numbers.
    The book's rows are :data:`blockcd.theory.rows.ROWS`, one function each with its formula and chapter.

    Attributes
    ----------
    smoothness : callable (p, m, tau, batch, sampling) -> float
        The expected smoothness :math:`\mathcal{L}(\tau)` (:func:`blockcd.theory.expected_smoothness`).
    step_factor : float
        The theory's step is ``step_factor / smoothness`` (:func:`blockcd.theory.step_size`): 1/2 or 1 in the book.
    rate : callable (p, m, tau, step, batch) -> float
        Contraction per iteration at ``step`` (:func:`blockcd.theory.rate`).
    neighbourhood : callable (p, m, tau, step, batch) -> float
        Radius of the ball E||x - x*||^2 reaches (:func:`blockcd.theory.neighbourhood`).
    target : callable (p, m, tau, eps, step, batch, x0, D0) -> float
        What rate^K must reach for E||x^K - x*||^2 <= eps D0, D0 = ||x0 - x*||^2, i.e. eps D0 over the
        Lyapunov function's start; <= 0 when no K does (:func:`blockcd.theory.predicted_iterations`).
    ratio : callable (p, m, tau, batch, method) -> float
        K(tau)/K(m) from the leading term (:func:`blockcd.theory.predicted_ratio`); ``method`` is the name,
        to look up the method's other rows (e.g. :func:`blockcd.theory.rows.smoothness_ratio`).
    samplings : tuple of str
        The block samplings ``smoothness`` covers.
    step : callable (p, m, tau, batch, sampling) -> float, optional
        A step not of the form ``step_factor / smoothness`` (coordinate descent's multiplier 1).
    paper_step : callable (p, m, tau) -> float, optional
        The paper's theorem's step in the book's units (:func:`blockcd.theory.paper_step`).
    paper_iterations : callable (p, m, tau, eps, step, x0) -> float, optional
        The paper's iteration count at ``step`` (:func:`blockcd.theory.paper_iterations`).
    """

    smoothness: Callable | str | None = None
    step_factor: float | str | None = None
    rate: Callable | str | None = None
    neighbourhood: Callable | str | None = None
    target: Callable | str | None = None
    ratio: Callable | str | None = None
    samplings: tuple[str, ...] = ("independent", "shared")
    step: Callable | str | None = None
    paper_step: Callable | str | None = None
    paper_iterations: Callable | str | None = None


@dataclass(frozen=True)
class Method:
    """One method and what it supports.

    Attributes
    ----------
    name : the registry name, e.g. ``'isega'``
    title : how the book writes it, e.g. ``'ISEGA'``
    rule : its :class:`blockcd.rules.Rule`
    aliases : other names accepted (the dense parent, run with tau = m)
    samplings : block samplings its theory covers; the first is the default (``sampling=None``)
    minibatch : whether workers may use b-minibatches of their rows (``batch=``)
    full_batch : whether ``batch=None`` means each worker's full local gradient (IS-ASGD) rather than
        b = 1 (the stochastic methods, whose estimate is a minibatch by definition)
    shifts : whether workers keep a shift h_i (converges on heterogeneous data)
    prox : whether the master takes a prox step, so the problem may carry a regulariser R
        (``problems.ridge(..., reg=R)``); the others reject such a problem
    bernoulli : whether a worker sends all m blocks with probability tau/m, or none
        (:class:`blockcd.blocks.BernoulliSampler`), instead of tau of the m blocks
    shared_data : whether every worker reads all N functions (a problem with ``split='identical'``, alias
        ``'shared'``) and the engine draws n distinct of them per round (:class:`blockcd.blocks.SharedRows`)
    decreasing : whether the theory gives a decreasing schedule (``step='decreasing'``,
        :func:`blockcd.theory.decreasing_schedule`)
    schedules : whether ``step`` may be a callable k -> step (not IS-ASGD, whose parameters are set
        once from the step)
    asynchronous : whether the master applies each worker's message on arrival, with no rounds
        (:mod:`blockcd.asynchronous`; ``delays=`` gives the order of arrivals)
    nonconvex : whether its theory covers a smooth non-convex f (``problems.nonconvex``; the paper's
        Theorem 7, :func:`blockcd.theory.nonconvex_step`); the others reject such a problem
    chapter : the chapter that derives it ("" while no chapter does)
    baseline : a method the paper compares against, not one of the book's (``'cd'``, coordinate descent with
        the same blocks on every worker): it has its own steps and is left out of :data:`BOOK_METHODS`
    theory : the :class:`TheoryRow` of a method registered with one (:func:`register`); None for the book's
        methods, whose rows are :data:`blockcd.theory.rows.ROWS`, and for a method registered without theory
    """

    name: str
    title: str
    rule: rules.Rule
    aliases: tuple[str, ...] = ()
    samplings: tuple[str, ...] = ("independent", "shared")
    minibatch: bool = False
    full_batch: bool = False
    shifts: bool = False
    prox: bool = False
    bernoulli: bool = False
    shared_data: bool = False
    decreasing: bool = False
    schedules: bool = True
    asynchronous: bool = False
    nonconvex: bool = False
    chapter: str = ""
    baseline: bool = False
    theory: TheoryRow | None = None


_ENTRIES = (
    Method("ibcd", "IBCD", rules.IBCD(), aliases=("gd", "dense"), chapter="04_ibcd"),
    Method("is-sgd", "IS-SGD", rules.ISSGD(), aliases=("sgd",), minibatch=True, decreasing=True,
           nonconvex=True, chapter="05_is_sgd"),
    Method("isega", "ISEGA", rules.ISEGA(), shifts=True, prox=True, chapter="06_heterogeneous"),
    Method("is-saga", "IS-SAGA", rules.ISSAGA(), aliases=("saga",), minibatch=True, shifts=True,
           chapter="06b_is_saga"),
    Method("is-asgd", "IS-ASGD", rules.ISASGD(), aliases=("asgd",), minibatch=True, full_batch=True,
           schedules=False, chapter="07_is_asgd"),
    Method("cd", "CD", rules.CD(), samplings=("shared", "importance"), chapter="03_key_lemma", baseline=True),
    Method("ibgd", "IBGD", rules.IBGD(), samplings=("independent",), bernoulli=True, chapter="04_ibcd"),
    Method("isaga-local", "distributed ISAGA", rules.ISAGALocal(), samplings=("independent",), minibatch=True,
           chapter="06b_is_saga"),
    Method("isaga-shared", "shared-data ISAGA", rules.ISAGAShared(), samplings=("independent",), shared_data=True,
           chapter="06b_is_saga"),
    Method("is-sgd-async", "asynchronous IS-SGD", rules.ISSGDAsync(), samplings=("independent",), minibatch=True,
           prox=True, asynchronous=True, chapter="12_async"),
)

#: name -> Method
REGISTRY: dict[str, Method] = {e.name: e for e in _ENTRIES}
#: the method names, in the book's order
METHODS: tuple[str, ...] = tuple(REGISTRY)
#: the synchronous methods a chapter of the book derives (the widgets and ``reproduce`` sweep these; not the
#: asynchronous method, which has no rounds to sweep, nor the baselines)
BOOK_METHODS: tuple[str, ...] = tuple(e.name for e in _ENTRIES if e.chapter and not e.asynchronous and not e.baseline)
#: alias -> name
ALIASES: dict[str, str] = {a: e.name for e in _ENTRIES for a in e.aliases}


def canonical(method) -> str:
    """The registry name of ``method`` (case-insensitive; aliases resolved).

    Raises ``TypeError`` for a non-string, ``ValueError`` for an unknown name.
    """
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, one of {METHODS}, got {type(method).__name__}")
    name = method.lower()
    return check_choice("method", ALIASES.get(name, name), METHODS)


def get(method) -> Method:
    """The :class:`Method` entry of ``method`` (a name or an alias)."""
    return REGISTRY[canonical(method)]

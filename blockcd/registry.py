"""The registry of methods: names, aliases, rules and capabilities, in one place.

:func:`blockcd.run`, :mod:`blockcd.theory`, :mod:`blockcd.mpi`, the
reference, the widgets and ``reproduce`` all look a method up here
(:func:`get`, :func:`canonical`).  Adding a method is one rule in
:mod:`blockcd.rules` and one :class:`Method` entry below.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import rules
from ._validate import check_choice


@dataclass(frozen=True)
class Method:
    """One method and what it supports.

    Attributes
    ----------
    name
        The registry name, e.g. ``'isega'``
    title
        How the book writes it, e.g. ``'ISEGA'``
    rule
        Its :class:`blockcd.rules.Rule`
    aliases
        Other names accepted (the dense parent, run with tau = m)
    samplings
        Block samplings its theory covers; the first is the default (``sampling=None``)
    minibatch
        Whether workers may use b-minibatches of their rows (``batch=``)
    full_batch
        Whether ``batch=None`` means each worker's full local gradient (IS-ASGD) rather than
        b = 1 (the stochastic methods, whose estimate is a minibatch by definition)
    shifts
        Whether workers keep a shift h_i (converges on heterogeneous data)
    prox
        Whether the master takes a prox step, so the problem may carry a regulariser R
        (``problems.ridge(..., reg=R)``); the others reject such a problem
    bernoulli
        Whether a worker sends all m blocks with probability tau/m, or none
        (:class:`blockcd.blocks.BernoulliSampler`), instead of tau of the m blocks
    shared_data
        Whether every worker reads all N functions (a problem with ``split='identical'``, alias
        ``'shared'``) and the engine draws n distinct of them per round (:class:`blockcd.blocks.SharedRows`)
    decreasing
        Whether the theory gives a decreasing schedule (``step='decreasing'``,
        :func:`blockcd.theory.decreasing_schedule`)
    schedules
        Whether ``step`` may be a callable k -> step (not IS-ASGD, whose parameters are set
        once from the step)
    asynchronous
        Whether the master applies each worker's message on arrival, with no rounds
        (:mod:`blockcd.asynchronous`; ``delays=`` gives the order of arrivals)
    nonconvex
        Whether its theory covers a smooth non-convex f (``problems.nonconvex``; the paper's
        Theorem 7, :func:`blockcd.theory.nonconvex_step`); the others reject such a problem
    chapter
        The chapter that derives it ("" while no chapter does)
    baseline
        A method the paper compares against, not one of the book's (``'cd'``, coordinate descent with
        the same blocks on every worker): it has its own steps and is left out of :data:`BOOK_METHODS`
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

"""The registry of methods: names, aliases, rules, capabilities and theory rows, in one place.

:func:`blockcd.run`, :mod:`blockcd.theory`, :mod:`blockcd.mpi`, the
reference, the widgets and ``reproduce`` all look a method up here
(:func:`get`, :func:`canonical`).  The book's methods are the :class:`Method`
entries below, their theory the rows of :mod:`blockcd.theory.rows`.

Adding a method is one call, :func:`register` (a rule, see
:class:`blockcd.rules.Rule`; its capabilities; optionally its
:class:`TheoryRow`), after which the simulator, the per-worker reference and
the theory all know it by name; :func:`unregister` removes it, and
:func:`registered` does both around a ``with`` block.  For example IBCD whose
master averages the sent blocks as they are, without the factor m/tau (the
paper's unscaled form, whose Theorem 1 gives its step and rate)::

    import blockcd
    from blockcd import problems, registry, rules

    class Unscaled(rules.IBCD):
        \"""IBCD without the rescaling: x+ = x - step (1/n) sum_i P_{S_i} grad f_i(x).\"""

        def step(self, s, total, scale, step, n):
            s.x = s.x - step * (total / n)

    def smoothness(p, m, tau, batch, sampling):
        \"""Theorem 1 in the paper's units: L_max (q + 2 (1 - q)/n), q = tau/m.\"""
        q = tau / m
        return p.L_max * (q + 2 * (1 - q) / p.n)

    def rate(p, m, tau, step, batch):
        \"""Theorem 1's contraction: 1 - q step mu.\"""
        return 1 - (tau / m) * step * p.mu

    row = registry.TheoryRow(smoothness=smoothness, step_factor=0.5, rate=rate, samplings=("independent",))
    p = problems.synthetic(4, 30, 40, interpolating=True, cond=10)
    with registry.registered("ibcd-unscaled", Unscaled(), samplings=("independent",), theory=row):
        h = blockcd.run(p, "ibcd-unscaled", m=8, tau=2, iters=200)        # the theory's step
        r = blockcd.reference.run(p, "ibcd-unscaled", m=8, tau=2, iters=200)

Without ``theory=`` such a method runs only with an explicit ``step=``: asked
for a step, the theory raises a ``ValueError`` naming the rows it lacks.
"""

from __future__ import annotations

import contextlib
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass, fields

from . import rules
from ._validate import check_choice, listed


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
    smoothness : callable
        Called as ``smoothness(p, m, tau, batch, sampling)``, a float. The expected smoothness
        :math:`\mathcal{L}(\tau)` (:func:`blockcd.theory.expected_smoothness`).
    step_factor : float
        The theory's step is ``step_factor / smoothness`` (:func:`blockcd.theory.step_size`): 1/2 or 1 in the book.
    rate : callable
        Called as ``rate(p, m, tau, step, batch)``, a float. Contraction per iteration at ``step``
        (:func:`blockcd.theory.rate`).
    neighbourhood : callable
        Called as ``neighbourhood(p, m, tau, step, batch)``, a float. Radius of the ball E||x - x*||^2
        reaches (:func:`blockcd.theory.neighbourhood`).
    target : callable
        Called as ``target(p, m, tau, eps, step, batch, x0, D0)``, a float. What rate^K must reach for
        E||x^K - x*||^2 <= eps D0, D0 = ||x0 - x*||^2, i.e. eps D0 over the Lyapunov function's start; <=
        0 when no K does (:func:`blockcd.theory.predicted_iterations`).
    ratio : callable
        Called as ``ratio(p, m, tau, batch, method)``, a float. K(tau)/K(m) from the leading term
        (:func:`blockcd.theory.predicted_ratio`); ``method`` is the name, to look up the method's other
        rows (e.g. :func:`blockcd.theory.rows.smoothness_ratio`).
    samplings : tuple of str
        The block samplings ``smoothness`` covers.
    step : callable, optional
        Called as ``step(p, m, tau, batch, sampling)``, a float. A step not of the form ``step_factor /
        smoothness`` (coordinate descent's multiplier 1).
    paper_step : callable, optional
        Called as ``paper_step(p, m, tau)``, a float. The paper's theorem's step in the book's units
        (:func:`blockcd.theory.paper_step`).
    paper_iterations : callable, optional
        Called as ``paper_iterations(p, m, tau, eps, step, x0)``, a float. The paper's iteration count at
        ``step`` (:func:`blockcd.theory.paper_iterations`).
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
    theory : TheoryRow or None
        The theory row of a method registered with one (:func:`register`); None for the book's
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

#: name -> Method (the book's methods, then those added by :func:`register`)
REGISTRY: dict[str, Method] = {e.name: e for e in _ENTRIES}
#: the methods built into the library, in the book's order (every registered name is in :func:`names`)
METHODS: tuple[str, ...] = tuple(REGISTRY)
#: the synchronous methods a chapter of the book derives (the widgets and ``reproduce`` sweep these; not the
#: asynchronous method, which has no rounds to sweep, nor the baselines)
BOOK_METHODS: tuple[str, ...] = tuple(e.name for e in _ENTRIES if e.chapter and not e.asynchronous and not e.baseline)
#: the aliases that name the dense method, IBCD with tau = m; a run asked by one of them needs tau = m
DENSE_ALIASES = ("gd", "dense")
#: alias -> name
ALIASES: dict[str, str] = {a: e.name for e in _ENTRIES for a in e.aliases}
#: the block samplings a registered method may name (``'importance'`` is coordinate descent's own)
SAMPLINGS = ("independent", "shared")
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def names() -> tuple[str, ...]:
    """Every registered method's name: the built-in :data:`METHODS`, then those added by :func:`register`."""
    return tuple(REGISTRY)


def canonical(method) -> str:
    """The registry name of ``method`` (case-insensitive; aliases resolved).

    Raises ``TypeError`` for a non-string, ``ValueError`` for an unknown name.
    """
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, one of {names()}, got {type(method).__name__}")
    name = method.lower()
    return check_choice("method", ALIASES.get(name, name), names())


def get(method) -> Method:
    """The :class:`Method` entry of ``method`` (a name or an alias)."""
    return REGISTRY[canonical(method)]


def register(name: str, rule: rules.Rule, *, title: str | None = None, aliases=(), samplings=SAMPLINGS,
             minibatch: bool = False, full_batch: bool = False, shifts: bool = False, prox: bool = False,
             schedules: bool = True, chapter: str = "", theory: TheoryRow | None = None) -> Method:
    """Add a method: after this call :func:`blockcd.run`, :func:`blockcd.reference.run` and
    :mod:`blockcd.theory` know it by ``name``.

    Parameters
    ----------
    name : str
        Lower-case letters, digits and single hyphens, starting with a letter (e.g. ``'ibcd-unscaled'``);
        not a registered name or alias.
    rule : blockcd.rules.Rule
        An instance of a :class:`~blockcd.rules.Rule` subclass that defines ``send`` (the master's
        state it creates is documented there).
    title : str, optional
        How tables and figures write it (default: ``name``).
    aliases : tuple of str
        Other names accepted for it (the same form as ``name``).
    samplings : tuple of str
        The block samplings it runs with, from ``('independent', 'shared')``; the first is the default.
    minibatch, full_batch, shifts, prox, schedules : bool
        As :class:`Method`: workers may take b-minibatches (``batch=``), ``batch=None`` means full local
        gradients (needs ``minibatch``), workers keep shifts, the master takes a prox step (a problem with
        a regulariser is accepted), ``step`` may be a callable k -> step.
    chapter : str
        The chapter that derives it, if any.
    theory : TheoryRow, optional
        Its theory row.  Without one (or without its ``smoothness`` and ``step_factor``) the theory has no
        step for it: :func:`blockcd.run` then needs an explicit ``step=``, and asking
        :mod:`blockcd.theory` for a missing formula raises a ``ValueError`` naming it.

    Returns
    -------
    Method
        The new entry (also ``get(name)``).

    Raises ``TypeError`` for an argument of the wrong type and ``ValueError`` for a name already taken or a
    value out of range, each naming the parameter.  The methods that need an engine of their own (Bernoulli
    choices, shared data, asynchronous arrivals) and the theory's decreasing and non-convex steps are the
    book's methods' only.
    """
    name = _new_name("name", name)
    if isinstance(rule, type):
        raise TypeError(f"rule must be an instance of a blockcd.rules.Rule subclass, e.g. {rule.__name__}(), "
                        f"not the class {rule.__name__}")
    if not isinstance(rule, rules.Rule):
        raise TypeError(f"rule must be an instance of a blockcd.rules.Rule subclass, got {type(rule).__name__}")
    if type(rule).send is rules.Rule.send:
        raise TypeError(f"rule {type(rule).__name__} must define send(o, w, x, idx, sel) (see blockcd.rules)")
    if title is None:
        title = name
    elif not isinstance(title, str) or not title:
        raise TypeError(f"title must be a non-empty string, got {title!r}")
    if isinstance(aliases, str) or not isinstance(aliases, (tuple, list)):
        raise TypeError(f"aliases must be a tuple of strings, got {aliases!r}")
    aliases = tuple(_new_name("aliases", a) for a in aliases)
    if name in aliases or len(set(aliases)) != len(aliases):
        raise ValueError(f"aliases must be distinct from each other and from name {name!r}, got {aliases!r}")
    samplings = _samplings("samplings", samplings)
    flags = {"minibatch": minibatch, "full_batch": full_batch, "shifts": shifts, "prox": prox,
             "schedules": schedules}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{key} must be True or False, got {value!r}")
    if full_batch and not minibatch:
        raise ValueError("full_batch=True needs minibatch=True (it says what batch=None means for a minibatch method)")
    if not isinstance(chapter, str):
        raise TypeError(f"chapter must be a string, got {chapter!r}")
    if theory is not None:
        _check_row(theory)
    entry = Method(name, title, rule, aliases=aliases, samplings=samplings, chapter=chapter, theory=theory,
                   **flags)
    REGISTRY[name] = entry
    ALIASES.update(dict.fromkeys(aliases, name))
    return entry


def unregister(name: str) -> None:
    """Remove a method added by :func:`register` (with its aliases); the book's methods stay."""
    name = canonical(name)
    if name in METHODS:
        raise ValueError(f"{name!r} is one of the library's methods ({listed(METHODS)}) and cannot be unregistered")
    entry = REGISTRY.pop(name)
    for a in entry.aliases:
        ALIASES.pop(a, None)


@contextlib.contextmanager
def registered(name: str, rule: rules.Rule, **options):
    """:func:`register` for the ``with`` block (which receives the :class:`Method`), :func:`unregister` after it,
    also after an error: ``with registry.registered("mine", Mine(), theory=row): blockcd.run(...)``."""
    entry = register(name, rule, **options)
    try:
        yield entry
    finally:
        unregister(entry.name)


def _new_name(what: str, name) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a string, got {type(name).__name__} {name!r}")
    if not _NAME.fullmatch(name):
        raise ValueError(f"{what} must be lower-case letters, digits and single hyphens, starting with a letter "
                         f"(e.g. 'ibcd-unscaled'), got {name!r}")
    if name in REGISTRY or name in ALIASES:
        taken = "a method" if name in REGISTRY else f"an alias of {ALIASES[name]!r}"
        raise ValueError(f"{what}: {name!r} is already registered ({taken}); choose another name"
                         + ("" if name in METHODS or ALIASES.get(name) in METHODS else
                            " or unregister it first"))
    return name


def _samplings(what: str, samplings) -> tuple[str, ...]:
    if isinstance(samplings, str) or not isinstance(samplings, (tuple, list)) or not samplings:
        raise TypeError(f"{what} must be a non-empty tuple from {SAMPLINGS}, got {samplings!r}")
    for x in samplings:
        check_choice(what, x, SAMPLINGS)
    if len(set(samplings)) != len(samplings):
        raise ValueError(f"{what} must not repeat a sampling, got {tuple(samplings)!r}")
    return tuple(samplings)


def _check_row(row) -> None:
    if not isinstance(row, TheoryRow):
        raise TypeError(f"theory must be a blockcd.registry.TheoryRow (or None), got {type(row).__name__}")
    for f in fields(TheoryRow):
        value = getattr(row, f.name)
        if f.name == "samplings":
            _samplings("theory.samplings", value)
        elif f.name == "step_factor":
            if value is not None and not isinstance(value, str) and (
                    isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0):
                raise ValueError(f"theory.step_factor must be a number > 0 (the step is step_factor / L(tau)), "
                                 f"a string saying why there is none, or None; got {value!r}")
        elif value is not None and not isinstance(value, str) and not callable(value):
            raise TypeError(f"theory.{f.name} must be a function (see blockcd.registry.TheoryRow), a string "
                            f"saying why there is none, or None; got {type(value).__name__}")

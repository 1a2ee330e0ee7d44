"""A method of your own on MPI: ``--method package.module:Name`` imports your rule on every rank.

``python -m blockcd.mpi --method mypkg.rules:MyRule ...`` (or ``mpiexec -n K python -m blockcd.mpi``)
imports ``mypkg.rules`` on each rank, takes ``MyRule`` from it and runs it as any method of the
book: the module must be importable on every rank (installed, or on ``PYTHONPATH``).  ``MyRule`` is
a subclass of :class:`blockcd.rules.Rule` (made with no arguments), an instance of one, or a
:class:`blockcd.registry.Method` entry (to say what it supports: minibatches, samplings, ...).  A rule
that chooses its own blocks (``own_blocks = True``) sends their indices with its values
(:func:`blockcd.mpi.wire.unpack_chosen`).  :func:`load_method` is what each rank calls; call it in
your own process too (a notebook, a test) to run the same method with :func:`blockcd.run`.
"""

from __future__ import annotations

import importlib
import inspect

from .. import registry, rules

__all__ = ["is_path", "load_method"]


def is_path(method: str) -> bool:
    """Whether ``--method`` names a rule by its module path (``package.module:Name``), not a registered name."""
    return isinstance(method, str) and ":" in method


def load_method(path: str) -> str:
    """Import the rule at ``path`` (``'package.module:Name'``), register it if it is not, return its name.

    Raises
    ------
    ValueError
        if ``path`` is not of the form ``module:Name``, the module does not import, it has no ``Name``,
        the rule has no name, or its name is taken by another method.
    TypeError
        if the object is not a rule (a :class:`blockcd.rules.Rule` subclass or instance, or a
        :class:`blockcd.registry.Method`).
    """
    if not is_path(path):
        raise ValueError(f"--method {path!r}: a module path reads 'package.module:Name' (a rule class in an "
                         "importable module)")
    module_name, _, attr = path.partition(":")
    if not module_name or not attr or ":" in attr:
        raise ValueError(f"--method {path!r}: a module path reads 'package.module:Name' (a rule class in an "
                         "importable module)")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - whatever the user's module raises, say where it came from
        raise ValueError(f"--method {path!r}: module {module_name!r} does not import ({type(exc).__name__}: "
                         f"{exc}); is it installed or on PYTHONPATH on every rank?") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"--method {path!r}: module {module_name!r} ({getattr(module, '__file__', '?')}) has no "
                         f"attribute {attr!r}") from None
    entry = _entry(path, obj)
    known = registry.REGISTRY.get(entry.name)
    if known is not None:
        if type(known.rule) is not type(entry.rule):
            raise ValueError(f"--method {path!r}: its rule is named {entry.name!r}, the name of another method "
                             f"({type(known.rule).__module__}.{type(known.rule).__name__}); give it its own name")
        return known.name
    _register(entry)
    return entry.name


def _entry(path: str, obj) -> registry.Method:
    """The registry entry of ``obj``: a Method, a Rule instance, or a Rule subclass made with no arguments."""
    if isinstance(obj, registry.Method):
        entry = obj
    else:
        if inspect.isclass(obj) and issubclass(obj, rules.Rule):
            try:
                obj = obj()
            except TypeError as exc:
                raise ValueError(f"--method {path!r}: the rule class must be made with no arguments ({exc}); "
                                 "export an instance or a blockcd.registry.Method instead") from None
        if not isinstance(obj, rules.Rule):
            raise TypeError(f"--method {path!r} is not a rule: expected a subclass or an instance of "
                             f"blockcd.rules.Rule, or a blockcd.registry.Method, got {type(obj).__name__}")
        entry = None
    rule = obj.rule if entry is not None else obj
    name = entry.name if entry is not None else rule.name
    if not isinstance(name, str) or not name or ":" in name or name != name.lower():
        raise ValueError(f"--method {path!r}: the rule needs a name (its class attribute ``name``, a non-empty "
                         f"lower-case string without ':'), got {name!r}")
    return entry if entry is not None else registry.Method(name, name, rule)


def _register(entry: registry.Method) -> None:
    """Add ``entry`` to the registry: through ``registry.register`` where the library has it (with the
    options a user's method may set), else entered into the table as the library's own methods are."""
    register = getattr(registry, "register", None)
    if register is None:
        registry.REGISTRY[entry.name] = entry
        registry.METHODS = tuple(registry.REGISTRY)
        return
    engines = [f for f in ("bernoulli", "shared_data", "asynchronous", "decreasing", "nonconvex", "baseline")
               if getattr(entry, f, False)]
    if engines:
        raise ValueError(f"method {entry.name!r} sets {engines}: engines and steps that only the book's own "
                         "methods have")
    options = {f: getattr(entry, f) for f in ("title", "aliases", "samplings", "minibatch", "full_batch", "shifts",
                                              "prox", "schedules", "chapter")}
    if getattr(entry, "theory", None) is not None:
        options["theory"] = entry.theory
    register(entry.name, entry.rule, **options)

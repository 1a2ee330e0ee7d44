"""The docstrings say what the API reference shows: napoleon reads them as they are meant.

The reference (``book/api.md`` and its pages under ``book/api/``) is built by Sphinx autodoc with
napoleon.  Three ways of writing a numpydoc docstring that read well in ``help()`` render wrong
there, and are checked here on the source, without a build (the browser test
``tests/test_html.py`` checks the rendered pages):

- ``a, b : int`` in an Attributes section: the field splits the names into a type ``a,`` and a
  name ``b`` ("b (a,) - ...");
- ``name : a description`` in an Attributes section: the description reads as the type;
- a colon in the first line of an attribute's ``#:`` comment or of a property's docstring:
  napoleon cuts the line there into a type and a description ("Type: ...").
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

pytest.importorskip("sphinx", reason="the book's toolchain (requirements.txt)")

from sphinx.ext.napoleon import Config
from sphinx.ext.napoleon.docstring import NumpyDocstring
from sphinx.pycode import ModuleAnalyzer

import blockcd
from blockcd import registry

#: as in _config.yml
CONFIG = Config(napoleon_use_param=False, napoleon_use_rtype=False, napoleon_use_ivar=True,
                napoleon_google_docstring=False)
#: a type written in an Attributes entry is a few words ("ndarray (n,) or None"); more is a description
TYPE_WORDS = 5


def _modules():
    names = [m.name for m in pkgutil.walk_packages(blockcd.__path__, "blockcd.")
             if not m.name.endswith("__main__") and not any(p.startswith("_") for p in m.name.split(".")[1:])]
    out = [blockcd]
    for name in names:
        try:
            out.append(importlib.import_module(name))
        except ImportError:  # an optional extra (torch, mpi4py) is not installed
            continue
    return out


def _docstrings():
    """(qualified name, docstring, what) of every public module, class, function, method, property
    and documented (``#:``) attribute the library defines."""
    for mod in _modules():
        yield mod.__name__, mod.__doc__, "module"
        try:
            analyzer = ModuleAnalyzer.for_module(mod.__name__)
            analyzer.analyze()
            attr_docs = analyzer.attr_docs
        except Exception:  # noqa: BLE001 (a module without source)
            attr_docs = {}
        for (scope, attr), lines in attr_docs.items():
            if not attr.startswith("_") and not scope.startswith("_"):
                yield f"{mod.__name__}.{scope + '.' if scope else ''}{attr}", "\n".join(lines), "attribute"
        for n, obj in vars(mod).items():
            if n.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{mod.__name__}.{n}", obj.__doc__, "function"
            elif inspect.isclass(obj):
                yield f"{mod.__name__}.{n}", obj.__doc__, "class"
                for a, v in vars(obj).items():
                    if a.startswith("_"):
                        continue
                    if isinstance(v, property):
                        yield f"{mod.__name__}.{n}.{a}", v.__doc__, "property"
                    elif inspect.isfunction(v):
                        yield f"{mod.__name__}.{n}.{a}", v.__doc__, "method"


DOCSTRINGS = [(name, doc, what) for name, doc, what in _docstrings() if doc]


def _napoleon(name, doc, what):
    short = name.rsplit(".", 1)[-1]
    return NumpyDocstring(inspect.cleandoc(doc), CONFIG, what=what, name=short).lines()


def test_the_library_has_docstrings_to_check():
    whats = {w for _, _, w in DOCSTRINGS}
    assert len(DOCSTRINGS) > 300 and whats >= {"module", "class", "function", "method", "property", "attribute"}


def test_attributes_are_documented_one_per_entry():
    grouped, described = [], []
    for name, doc, what in DOCSTRINGS:
        if what != "class":
            continue
        for line in _napoleon(name, doc, what):
            m = re.match(r":ivar ([^:]*):", line)
            if m and "," in m.group(1):
                grouped.append(f"{name}: {m.group(1)}")
            m = re.match(r":vartype ([^:]*): (.*)", line)
            if m and len(m.group(2).split()) > TYPE_WORDS:
                described.append(f"{name}.{m.group(1)}: {m.group(2)[:60]}")
    assert not grouped, f"Attributes entries naming several attributes (one per entry): {grouped}"
    assert not described, f"Attributes entries whose description sits where the type goes: {described}"


def test_no_attribute_docstring_reads_as_type_and_description():
    bad = [f"{name}: {line[7:70]}" for name, doc, what in DOCSTRINGS if what in ("attribute", "property")
           for line in _napoleon(name, doc, what) if line.startswith(":type:")]
    assert not bad, f"a colon in the first line makes napoleon render 'Type: <text before it>': {bad}"


def test_run_names_every_registry_method_and_alias():
    doc = blockcd.run.__doc__
    section = doc[doc.index("method :"):doc.index("m : int")]
    missing = [m for m in (*registry.METHODS, *registry.ALIASES) if f"``'{m}'``" not in section]
    assert not missing, f"blockcd.run's docstring does not list {missing} under 'method'"

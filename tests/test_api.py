"""The API reference (book/api.md and its pages, book/api/*.md) documents every public name of the library.

Reads the Sphinx inventory of the built book (``_build/html/objects.inv``,
made by the README's build command) and checks that every public function,
class and method of every public module is in it, under its own module or
the top level.  Without a build the module is skipped, except when
``BLOCKCD_REQUIRE_BROWSER=1`` (set by ``.ci/run``, which builds first).
"""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INVENTORY = ROOT / "_build" / "html" / "objects.inv"
MODULES = ["blockcd.blocks", "blockcd.problems", "blockcd.oracle", "blockcd.regularizers", "blockcd.rules", "blockcd.registry",
           "blockcd.methods", "blockcd.arguments", "blockcd.messages", "blockcd.drawing", "blockcd.reference", "blockcd.history", "blockcd.theory", "blockcd.experiments",
           "blockcd.compressors", "blockcd.comparison", "blockcd.network", "blockcd.plotting", "blockcd.styles", "blockcd.diagrams", "blockcd.report", "blockcd.mpi", "blockcd.reproduce",
           "blockcd.widgets", "blockcd.torch", "blockcd.torch.train", "blockcd.torch.measure"]

if not INVENTORY.exists():
    if os.environ.get("BLOCKCD_REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"{INVENTORY} is missing: build the book first (README build command)")
    pytest.skip("the book is not built (README build command)", allow_module_level=True)


@pytest.fixture(scope="module")
def documented() -> set[str]:
    from sphinx.util.inventory import InventoryFile

    with INVENTORY.open("rb") as f:
        inv = InventoryFile.load(f, "", lambda base, uri: uri)
    return {name for kind, entries in inv.items() if kind.startswith("py:") for name in entries}


def public_names(module_name: str):
    """Qualified names of the module's public functions and classes (its ``__all__``, or what it defines),
    and of their public methods and properties (with those of the mixins a class is built from: its
    blockcd bases that are not public names of the module)."""
    if module_name.startswith("blockcd.torch"):
        pytest.importorskip("torch", reason='blockcd.torch needs torch (pip install -e ".[torch]")')
    mod = importlib.import_module(module_name)
    exported = getattr(mod, "__all__", None)
    names = exported or [n for n in vars(mod) if not n.startswith("_")]
    for n in names:
        obj = getattr(mod, n)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if exported is None and obj.__module__ != module_name:
            continue  # imported, documented where it is defined
        yield obj.__qualname__, obj
        if inspect.isclass(obj):
            mixins = [k for k in obj.__mro__[1:] if k.__module__.startswith("blockcd.")
                      and getattr(mod, k.__name__, None) is not k]
            for cls in (obj, *mixins):
                for a, v in vars(cls).items():
                    if not a.startswith("_") and (inspect.isfunction(v) or isinstance(v, property)):
                        yield obj.__qualname__ + "." + a, v


def _is_documented(module_name, qualname, obj, documented) -> bool:
    """Under the module, the submodule that defines it, or the top level (blockcd.run, blockcd.History)."""
    home = getattr(obj, "__module__", None) or module_name
    return any(f"{where}.{qualname}" in documented for where in (module_name, home, "blockcd"))


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_name_is_in_the_api_reference(module_name, documented):
    names = list(public_names(module_name))
    assert names, module_name
    missing = [q for q, obj in names if not _is_documented(module_name, q, obj, documented)]
    assert not missing, f"not in the API reference (book/api/): {missing}"


def test_the_top_level_names_are_documented_there_too(documented):
    import blockcd

    for n in ("run", "History", "DivergenceError", "sparsify", "partition"):
        assert getattr(blockcd, n) is not None and f"blockcd.{n}" in documented, n

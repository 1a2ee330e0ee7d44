"""The library's shape: no import circle among its modules, no private name imported across modules.

Imports are read from the source with ``ast``, at every level (a function-level import counts:
it is a dependency all the same, only a later one).  ``from . import x`` and ``from .p import x``
with ``x`` a module count as importing ``x``; a package's ``__init__`` imported on the way to a
submodule does not (every module would otherwise depend on ``blockcd`` itself).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "blockcd"
#: a module of the library may be this long (about 500 lines)
MAX_LINES = 500
#: packages being reorganised on their own (their circle, figures <-> paper, and their modules'
#: shared private helpers are closed there); every other module is held to the rules below
APART: tuple[str, ...] = ()


def _apart(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in APART)


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _resolve(name: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = _package(name, path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str, path: Path):
    """(imported module, names imported from it, line) for every import of ``name``, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "blockcd":
                    yield a.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(name, path, node)
            if target.split(".")[0] != "blockcd":
                continue
            plain = []
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:
                    yield sub, (), node.lineno
                else:
                    plain.append(a.name)
            if plain:
                yield target, tuple(plain), node.lineno


def _graph() -> dict[str, set[str]]:
    graph = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for target, _, _ in _imports(name, path):
            if target in MODULES and target != name:
                graph[name].add(target)
    return graph


def _cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_among_the_librarys_modules():
    assert [c for c in _cycles(_graph()) if not all(_apart(m) for m in c)] == []


def test_the_circle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_rules_import_nothing_from_the_library():
    assert _graph()["blockcd.rules"] == set()


def test_no_module_imports_another_modules_private_name():
    found = []
    for name, path in MODULES.items():
        for target, names, line in _imports(name, path):
            if target == name or _apart(name) and _apart(target):
                continue
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    found.append(f"{path.relative_to(ROOT.parent)}:{line} imports {n} from {target}")
    assert found == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_much_over_500_lines(name):
    lines = MODULES[name].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{name} has {lines} lines"

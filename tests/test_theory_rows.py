"""Each method's theory is one row (``blockcd.theory.rows.ROWS``): the table and the registry hold the
same methods, a missing formula is an error naming the method and the field, and no function of
``blockcd.theory`` branches on a method's name."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from blockcd import problems, registry, theory
from blockcd.registry import TheoryRow

THEORY = Path(__file__).resolve().parents[1] / "blockcd" / "theory"


@pytest.fixture(scope="module")
def het():
    return problems.synthetic(6, 30, 40, heterogeneity=0.5, cond=10)


def test_the_table_and_the_registry_hold_the_same_methods():
    assert set(theory.ROWS) == {name for name, e in registry.REGISTRY.items() if e.theory is None}
    assert set(theory.ROWS) == set(registry.METHODS)
    for name, row in theory.ROWS.items():
        assert isinstance(row, TheoryRow), name
        for f in fields(TheoryRow):  # every field of every row is given: a formula, a number or a reason
            value = getattr(row, f.name)
            assert value is not None or f.name in ("step", "paper_step", "paper_iterations"), (name, f.name)
        assert set(row.samplings) <= {"independent", "shared"}
        assert row.step is not None or row.step_factor in (0.5, 1.0), name


def _name_branches(path: Path) -> list[int]:
    """Lines of if/elif/ternary tests comparing a method's name with a string literal."""
    def named(n):
        return (isinstance(n, ast.Name) and n.id in ("method", "name")) or (
            isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) in ("method_name",
                                                                                                 "canonical"))

    def literal(n):
        return (isinstance(n, ast.Constant) and isinstance(n.value, str)) or (
            isinstance(n, (ast.Tuple, ast.List, ast.Set)) and all(literal(e) for e in n.elts))

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.If, ast.IfExp))
            and any(isinstance(c, ast.Compare) and named(c.left) and any(literal(x) for x in c.comparators)
                    for c in ast.walk(n.test))]


def test_no_theory_function_branches_on_a_method_name(tmp_path):
    found = {p.name: _name_branches(p) for p in sorted(THEORY.glob("*.py"))}
    assert not any(found.values()), found
    probe = tmp_path / "probe.py"  # the check can fail: a branch on the name is seen
    probe.write_text("def f(method):\n    x = 0 if method in ('a', 'b') else 1\n    if method == 'ibcd':\n"
                     "        return 1\n")
    assert sorted(_name_branches(probe)) == [2, 3]


@pytest.mark.parametrize(("fn", "method", "field"), [
    (lambda p: theory.rate(p, "cd", 10, 2), "cd", "rate"),
    (lambda p: theory.expected_smoothness(p, "cd", 10, 2), "cd", "smoothness"),
    (lambda p: theory.predicted_iterations(p, "cd", 10, 2, 1e-3), "cd", "target"),
    (lambda p: theory.rate(p, "is-sgd-async", 10, 2), "is-sgd-async", "rate"),
    (lambda p: theory.neighbourhood(p, "is-sgd-async", 10, 2), "is-sgd-async", "neighbourhood"),
    (lambda p: theory.predicted_iterations(p, "is-sgd-async", 10, 2, 1e-3), "is-sgd-async", "target"),
    (lambda p: theory.paper_iterations(p, "is-sgd-async", 10, 2, 1e-3), "is-sgd-async", "paper_iterations"),
])
def test_a_formula_a_method_lacks_is_an_error_naming_both(het, fn, method, field):
    """Never another method's numbers (cd's rate was 1 - mu, is-sgd-async's iterations IS-ASGD's)."""
    with pytest.raises(theory.MissingTheory, match=rf"^'{method}' has no .*field '{field}'"):
        fn(het)


def test_a_sampling_a_row_does_not_cover_is_an_error(het):
    with pytest.raises(ValueError, match="is-sgd-async's theory covers independent choices only"):
        theory.step_size(het, "is-sgd-async", 10, 2, sampling="shared")


def test_the_rows_give_the_functions_numbers(het):
    """The public functions are their rows evaluated (same numbers, bit for bit)."""
    from blockcd.theory import rows

    m, tau = 10, 2
    L = rows.ibcd_smoothness(het, m, tau, None, "independent")
    assert theory.expected_smoothness(het, "ibcd", m, tau) == L == het.L + (m / tau - 1) * het.L_max / het.n
    assert theory.step_size(het, "ibcd", m, tau) == 1.0 / (2.0 * L)
    assert theory.step_size(het, "isega", m, tau) == 1.0 / rows.isega_smoothness(het, m, tau, None, "independent")
    g = theory.step_size(het, "isega", m, tau)
    assert theory.rate(het, "isega", m, tau) == max(1 - g * het.mu, 1 - tau / (2 * m))
    assert theory.step_size(het, "cd", m, tau, sampling="importance") == 1.0

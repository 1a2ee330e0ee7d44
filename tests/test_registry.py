"""Registering a method is one public call: ``blockcd.registry.register`` (and ``unregister``,
``registered``), seen by the simulator, the per-worker reference and the theory."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import blockcd
from blockcd import problems, reference, registry, rules, theory


class Half(rules.IBCD):
    """IBCD at half the step: x+ = x - (step/2) (m/(tau n)) sum_i P_{S_i} grad f_i(x)."""

    def step(self, s, total, scale, step, n):
        s.x = s.x - step * (total * scale)
        s.x = s.x + (step / 2) * (total * scale)


@pytest.fixture(scope="module")
def p():
    return problems.synthetic(4, 20, 24, heterogeneity=0.5, cond=10, seed=1)


@pytest.fixture
def clean():
    """The registry as it was, whatever a test did."""
    before, aliases = dict(registry.REGISTRY), dict(registry.ALIASES)
    yield
    registry.REGISTRY.clear(), registry.REGISTRY.update(before)
    registry.ALIASES.clear(), registry.ALIASES.update(aliases)


def test_the_docstring_example_runs_and_the_engines_agree(clean):
    doc = registry.__doc__
    code = textwrap.dedent(doc[doc.index("    import blockcd"):doc.index("Without ``theory=``")])
    ns: dict = {}
    exec(compile(code, "blockcd.registry docstring", "exec"), ns)  # noqa: S102
    h, r = ns["h"], ns["r"]
    assert h.method == "ibcd-unscaled" and h.step == pytest.approx(1 / (2 * ns["smoothness"](ns["p"], 8, 2, None, "")))
    assert np.max(np.abs(h.x - r.x)) < 1e-12 and h.dist2[-1] < 1e-2 * h.dist2[0]
    assert "ibcd-unscaled" not in registry.names()                   # registered() removed it


def test_registered_method_is_seen_by_run_reference_and_theory(p, clean):
    row = registry.TheoryRow(smoothness=theory.rows.ibcd_smoothness, step_factor=0.5,
                             rate=theory.rows.plain_rate, samplings=("independent", "shared"))
    entry = registry.register("ibcd-half", Half(), aliases=("half",), theory=row)
    assert registry.get("HALF") is entry and "ibcd-half" in registry.names() and "ibcd-half" not in registry.METHODS
    step = theory.step_size(p, "half", 6, 2)
    assert step == theory.step_size(p, "ibcd", 6, 2)                 # the row's formulas: IBCD's
    half = blockcd.run(p, "ibcd-half", m=6, tau=2, iters=30, seed=3)
    ref = reference.run(p, "ibcd-half", m=6, tau=2, iters=30, seed=3)
    ibcd = blockcd.run(p, "ibcd", m=6, tau=2, iters=30, seed=3, step=step / 2)
    assert half.step == step and np.allclose(half.x, ref.x, rtol=0, atol=1e-12)
    assert np.allclose(half.x, ibcd.x, rtol=0, atol=1e-12)           # half the step is IBCD at step/2
    with pytest.raises(theory.MissingTheory, match="'ibcd-half' has no .*'target'.*registered without one"):
        theory.predicted_iterations(p, "ibcd-half", 6, 2, 1e-3)
    registry.unregister("half")
    assert "ibcd-half" not in registry.REGISTRY and "half" not in registry.ALIASES
    with pytest.raises(ValueError, match="method must be one of"):
        blockcd.run(p, "ibcd-half", m=6, tau=2, iters=3, step=0.1)


def test_without_theory_rows_a_run_needs_step(p, clean):
    with registry.registered("ibcd-half", Half()) as entry:
        assert entry.theory is None
        with pytest.raises(ValueError, match=r"^'ibcd-half' has no theory row for smoothness and step_factor.*"
                                             r"pass step= to blockcd.run"):
            blockcd.run(p, "ibcd-half", m=6, tau=2, iters=3)
        assert blockcd.run(p, "ibcd-half", m=6, tau=2, iters=3, step=0.01).step == 0.01
    assert "ibcd-half" not in registry.names()


def test_registered_removes_the_method_after_an_error(clean):
    with pytest.raises(RuntimeError), registry.registered("ibcd-half", Half()):
        raise RuntimeError
    assert "ibcd-half" not in registry.names()


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: registry.register("ibcd", Half()), ValueError, r"^name: 'ibcd' is already registered \(a method\)"),
    (lambda: registry.register("gd", Half()), ValueError, r"an alias of 'ibcd'"),
    (lambda: registry.register("My method", Half()), ValueError, r"^name must be lower-case letters"),
    (lambda: registry.register(3, Half()), TypeError, r"^name must be a string"),
    (lambda: registry.register("x", Half), TypeError, r"e\.g\. Half\(\), not the class Half"),
    (lambda: registry.register("x", object()), TypeError, r"^rule must be an instance"),
    (lambda: registry.register("x", rules.Rule()), TypeError, r"must define send"),
    (lambda: registry.register("x", Half(), aliases="y"), TypeError, r"^aliases must be a tuple"),
    (lambda: registry.register("x", Half(), aliases=("x",)), ValueError, r"^aliases must be distinct"),
    (lambda: registry.register("x", Half(), samplings=("importance",)), ValueError, r"^samplings must be one of"),
    (lambda: registry.register("x", Half(), samplings=()), TypeError, r"^samplings must be a non-empty tuple"),
    (lambda: registry.register("x", Half(), minibatch=1), TypeError, r"^minibatch must be True or False"),
    (lambda: registry.register("x", Half(), full_batch=True), ValueError, r"^full_batch=True needs minibatch"),
    (lambda: registry.register("x", Half(), title=""), TypeError, r"^title must be a non-empty string"),
    (lambda: registry.register("x", Half(), theory={}), TypeError, r"^theory must be a blockcd.registry.TheoryRow"),
    (lambda: registry.register("x", Half(), theory=registry.TheoryRow(step_factor=0)), ValueError,
     r"^theory.step_factor must be a number > 0"),
    (lambda: registry.register("x", Half(), theory=registry.TheoryRow(rate=2)), TypeError,
     r"^theory.rate must be a function"),
    (lambda: registry.unregister("ibcd"), ValueError, r"^'ibcd' is one of the library's methods"),
    (lambda: registry.unregister("nope"), ValueError, r"^method must be one of"),
])
def test_register_checks_its_arguments(clean, call, error, message):
    with pytest.raises(error, match=message):
        call()
    assert registry.names() == registry.METHODS                      # nothing half-registered


def test_the_rules_document_the_master_state():
    doc = rules.__doc__
    assert "The master's state ``s`` is a ``types.SimpleNamespace``" in doc and "register" in doc

"""The committed notebook outputs do not depend on how a third-party library renders text.

Strict nbval compares every stored text output with a fresh run, so an output written by a
highlighter (Pygments' HTML or LaTeX), or a repr whose form changed between numpy versions, fails
on a machine with newer packages even though every number is the same.  The book shows code as
Markdown (highlighted when the book is built) and prints numbers with explicit formats.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))

#: text a third-party renderer writes, which changes with its version
RENDERED = {
    "Pygments HTML": re.compile(r'<div class="highlight"|<span class="(?:k|n|o|p|mi|mf|s1|s2)">'),
    "Pygments LaTeX": re.compile(r"\\begin\{Verbatim\}|\\PY\{"),
    "numpy scalar repr": re.compile(r"\bnp\.(?:float|int|uint|bool)\w*\("),
    "object address": re.compile(r"\bat 0x[0-9a-fA-F]{6,}"),
}


def _texts(nb):
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            if "text" in out:
                yield i, "stream", "".join(out["text"])
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    yield i, mime, "".join(value) if isinstance(value, list) else value


def rendered_by_third_party(nb) -> list[str]:
    """Where a notebook's stored text outputs hold text a third-party renderer wrote."""
    found = []
    for i, mime, text in _texts(nb):
        for what, pattern in RENDERED.items():
            if pattern.search(text):
                found.append(f"cell {i} ({mime}): {what}")
    return found


def test_the_check_sees_a_highlighted_output():
    # the output IPython's Code object stored before: Pygments' HTML and LaTeX
    nb = {"cells": [{"cell_type": "code", "outputs": [{"output_type": "execute_result", "data": {
        "text/html": ['<div class="highlight"><pre><span class="k">class</span> IBCD</pre></div>'],
        "text/latex": ["\\begin{Verbatim}[commandchars=\\\\\\{\\}]\n\\PY{k}{class}"],
        "text/plain": ["class IBCD"]}}]}]}
    assert rendered_by_third_party(nb) == ["cell 0 (text/html): Pygments HTML", "cell 0 (text/latex): Pygments LaTeX"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_are_the_books_own_text(path):
    found = rendered_by_third_party(json.loads(path.read_text(encoding="utf-8")))
    assert not found, f"{path.name}: stored outputs rendered by a third-party library: {found}"


def test_a_rule_is_shown_as_markdown():
    from IPython.core.interactiveshell import InteractiveShell

    from blockcd import report

    data, _ = InteractiveShell.instance().display_formatter.format(report.source("ibcd"))
    assert set(data) == {"text/plain", "text/markdown"}
    assert data["text/markdown"].startswith("```python\nclass IBCD(Rule):\n")
    assert data["text/markdown"].endswith("\n```")
    assert data["text/plain"] == data["text/markdown"][len("```python\n"):-len("\n```")]


def _code_cells(nb):
    return [cell for cell in nb["cells"] if cell["cell_type"] == "code"]


def run_order_problems(nb) -> list[str]:
    """Where a notebook's stored outputs do not come from one clean run, top to bottom.

    The book is built from the stored outputs (``_config.yml``): they must be what executing the
    notebook from a fresh kernel gives, cell after cell, which the execution counts 1, 2, ... show.
    """
    counts = [cell.get("execution_count") for cell in _code_cells(nb)]
    expected = list(range(1, len(counts) + 1))
    if counts == expected:
        return []
    return [f"code cell {k} has execution count {c}, expected {e}"
            for k, (c, e) in enumerate(zip(counts, expected)) if c != e]


def missing_widget_state(nb) -> list[str]:
    """Widget views in the outputs whose model has no stored state (the HTML would show nothing)."""
    state = (nb.get("metadata", {}).get("widgets", {})
             .get("application/vnd.jupyter.widget-state+json", {}).get("state", {}))
    missing = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if view and view.get("model_id") not in state:
                missing.append(f"cell {i}: widget {view.get('model_id')}")
    return missing


def test_the_run_order_check_sees_a_cell_run_again():
    nb = {"cells": [{"cell_type": "code", "execution_count": c, "outputs": []} for c in (1, 2, 4, 3)]}
    assert run_order_problems(nb) == ["code cell 2 has execution count 4, expected 3",
                                      "code cell 3 has execution count 3, expected 4"]
    nb["cells"][3]["execution_count"] = None
    assert run_order_problems(nb)[-1] == "code cell 3 has execution count None, expected 4"


def test_the_widget_state_check_sees_a_view_without_state():
    view = {"application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2}}
    nb = {"metadata": {}, "cells": [{"cell_type": "code", "outputs": [{"data": view}]}]}
    assert missing_widget_state(nb) == ["cell 0: widget abc"]
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"abc": {}}}}
    assert missing_widget_state(nb) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_come_from_one_clean_run(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems = run_order_problems(nb) + missing_widget_state(nb)
    assert not problems, (f"{path.name}: the stored outputs are not one run from a fresh kernel "
                          f"(re-execute it: jupyter nbconvert --execute --inplace): {problems}")


# ---------------------------------------------- outputs that move with the CPU's floating-point kernel
def _sanitized(text: str) -> str:
    """``text`` as strict nbval compares it, through tests/nbval-sanitize.cfg's rules in their order."""
    from nbval.plugin import get_sanitize_patterns

    rules = get_sanitize_patterns((BOOK.parent / "tests" / "nbval-sanitize.cfg").read_text(encoding="utf-8"))
    for regex, replace in rules:
        text = re.sub(regex, replace, text)
    return text


@pytest.mark.parametrize("one, other", [
    # chapter 12: OpenBLAS's Haswell and Sandybridge kernels (a round-off measurement and its share)
    ("relative difference from IS-SGD's x^1: measured 8.2e-17 <= 1.0e-14 (1% of the bound)",
     "relative difference from IS-SGD's x^1: measured 4.1e-17 <= 1.0e-14 (0% of the bound)"),
    # chapter 5: a difference that cancels exactly on one kernel
    ("simulator vs per-worker reference, largest relative difference:\n"
     "    measured 1.78e-16 <= 1e-12 (0% of the bound)",
     "simulator vs per-worker reference, largest relative difference:\n"
     "    measured 0 <= 1e-12 (0% of the bound)"),
    ("x: measured 0.0e+00 <= 1.0e-14 (0% of the bound)", "x: measured 2.2e-16 <= 1.0e-14 (2% of the bound)"),
])
def test_round_off_printed_by_two_processors_compares_equal(one, other):
    assert _sanitized(one) == _sanitized(other)


@pytest.mark.parametrize("one, other", [
    ("x: measured 0.5 <= 1 (50% of the bound)", "x: measured 0.6 <= 1 (60% of the bound)"),
    ("x: measured 2.2e-10 <= 1e-8 (2% of the bound)", "x: measured 0 <= 1e-8 (0% of the bound)"),
    ("per arrival 0.9931", "per arrival 0.9932"),
])
def test_a_measurement_above_round_off_is_still_compared(one, other):
    assert _sanitized(one) != _sanitized(other)

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

"""Nothing the reader is shown scrolls sideways: code and printed lines fit the book's column.

In the HTML at a 1,400-px window a code box holds about 88 characters and an output box about
100 (at the book's 0.77rem monospace, ``_static/reading.css``); ``tests/test_html.py`` measures the
boxes in pixels in Chromium, and this module is its quick check on the stored notebooks, without a
browser and before a build.  These tests read the stored notebooks (nothing is executed): every
line of a code cell the page shows (not tagged ``remove-input`` or ``hide-input``) has at most 88
characters, and
every line of what the page prints (streams, and each output's text as the page renders it:
plain text or the code block of a Markdown output, not an image or HTML) at most 100.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))

#: chapters whose own fixes are pending elsewhere: (chapter, test) -> why it still fails
PENDING = {
}

CODE_WIDTH = 88
PRINTED_WIDTH = 100
HIDDEN = {"remove-input", "hide-input", "remove-cell"}
#: the output types the page renders instead of the plain text, when an output carries them
RICHER = ("text/html", "image/png", "image/svg+xml", "image/jpeg", "application/vnd.jupyter.widget-view+json",
          "text/latex")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def long_code_lines(nb, width: int = CODE_WIDTH) -> list[str]:
    """The visible code lines longer than ``width``, as ``cell i: line``."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or HIDDEN & set(cell.get("metadata", {}).get("tags", [])):
            continue
        found += [f"cell {i}: {line}" for line in _text(cell["source"]).splitlines() if len(line) > width]
    return found


def printed_lines(out) -> list[str]:
    """The lines an output shows on the page as text (none for a figure or an HTML output)."""
    if out.get("output_type") == "stream":
        return _text(out["text"]).splitlines()
    data = out.get("data", {})
    if "text/markdown" in data:
        # the book's Markdown outputs are fenced code blocks (a rule's source), shown line by line
        return [line for line in _text(data["text/markdown"]).splitlines() if not line.startswith("```")]
    if any(mime in data for mime in RICHER):
        return []
    return _text(data.get("text/plain", "")).splitlines()


def long_printed_lines(nb, width: int = PRINTED_WIDTH) -> list[str]:
    """The printed lines longer than ``width``, as ``cell i: line``."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if "remove-output" in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            found += [f"cell {i}: {line}" for line in printed_lines(out) if len(line) > width]
    return found


def test_the_checks_see_a_long_line_and_only_where_the_page_shows_it():
    long = "x = " + "1 + " * 30 + "1"
    nb = {"cells": [
        {"cell_type": "code", "metadata": {}, "source": [long], "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["a" * 101 + "\n", "b" * 100 + "\n"]},
            {"output_type": "display_data", "data": {"image/png": "", "text/plain": ["c" * 200]}},
            {"output_type": "display_data", "data": {"text/markdown": ["```python\n" + "d" * 101 + "\n```"],
                                                      "text/plain": ["d" * 101]}}]},
        {"cell_type": "code", "metadata": {"tags": ["hide-input"]}, "source": [long], "outputs": []},
        {"cell_type": "markdown", "metadata": {}, "source": [long]}]}
    assert long_code_lines(nb) == [f"cell 0: {long}"]
    assert long_printed_lines(nb) == ["cell 0: " + "a" * 101, "cell 0: " + "d" * 101]


def _cases(kind: str):
    return [pytest.param(p, id=p.stem, marks=[pytest.mark.xfail(strict=True, reason=PENDING[p.stem, kind])]
                         if (p.stem, kind) in PENDING else []) for p in NOTEBOOKS]


@pytest.mark.parametrize("path", _cases("code"))
def test_visible_code_fits_the_column(path):
    found = long_code_lines(json.loads(path.read_text(encoding="utf-8")))
    assert not found, f"{path.name}: {len(found)} code lines over {CODE_WIDTH} characters:\n" + "\n".join(found)


@pytest.mark.parametrize("path", _cases("printed"))
def test_printed_lines_fit_the_column(path):
    found = long_printed_lines(json.loads(path.read_text(encoding="utf-8")))
    assert not found, f"{path.name}: {len(found)} printed lines over {PRINTED_WIDTH} characters:\n" + "\n".join(found)


def test_a_long_check_line_is_wrapped_with_its_verdict_whole(capsys):
    from blockcd import report

    label = "  largest ratio of the left side to the right side, over every state the run visited"
    assert report.below(label, 0.9866, 1.0, spec=".4f")
    assert report.agree("short", 24, 24, tol=0)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [label + ":", "      measured 0.9866 <= 1.0000 (99% of the bound)",
                     "short: measured 24, predicted 24 (difference 0.0e+00, within 0e+00)"]
    long_label = ("the same comparison, named at such length that its label alone is wider than "
                  "the hundred characters of the column")
    assert not report.agree(long_label, 1.2, 1.0, rel=0.15)
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= PRINTED_WIDTH for line in lines) and len(lines) == 3, lines
    assert lines[-1] == "    measured 1.2, predicted 1 (+20.0%, within 15%)  FAILS"


@pytest.mark.parametrize(("method", "members"), [
    ("ibcd", None), ("is-sgd", None), ("isega", None), ("is-saga", None), ("is-asgd", None),
    ("is-sgd-async", ["send", "arrive"])])  # as the chapters show them
def test_a_rule_shown_says_what_its_arguments_hold_and_fits(method, members):
    import inspect

    from blockcd import registry, report

    shown = str(report.source(method, members))
    assert all(len(line) <= PRINTED_WIDTH for line in shown.splitlines()), shown
    send = inspect.signature(type(registry.get(method).rule).send)
    note = shown.split("    def send(")[0] if "    def send(" in shown else shown
    comments = " ".join(line.strip("# ") for line in note.splitlines() if line.strip().startswith("#"))
    for arg in list(send.parameters)[1:]:
        assert f" {arg} " in f" {comments} ", (arg, comments)

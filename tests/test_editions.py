"""The student's and the instructor's editions (``BLOCKCD_SOLUTIONS``, book/_ext/latex_book.py).

The student's HTML (``BLOCKCD_SOLUTIONS=none jupyter-book build . --path-output _build/student``)
must hold none of the solutions' text, which the default HTML holds (folded) on the same pages.
Skipped when that edition was not built, except under ``BLOCKCD_REQUIRE_STUDENT=1`` (set by
``.ci/run``, which builds it).
"""

import html as htmllib
import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import latex_book  # noqa: E402

STUDENT = ROOT / "_build" / "student" / "_build" / "html"
DEFAULT = ROOT / "_build" / "html"


def test_the_edition_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv("BLOCKCD_SOLUTIONS", raising=False)
    assert latex_book.solutions() == "hidden" and not latex_book.instructor()
    monkeypatch.setenv("BLOCKCD_SOLUTIONS", "none")
    assert latex_book.solutions() == "none" and not latex_book.instructor()
    monkeypatch.setenv("BLOCKCD_SOLUTIONS", "inline")
    assert latex_book.instructor()
    monkeypatch.setenv("BLOCKCD_SOLUTIONS", "student")
    with pytest.raises(ValueError, match="BLOCKCD_SOLUTIONS must be one of hidden, inline, none"):
        latex_book.solutions()


def solution_phrases() -> dict[str, list[str]]:
    """For each chapter, a phrase of five plain words from each solution, found nowhere else in it."""
    found = {}
    pattern = r"\{solution-start\}[^\n]*\n(.*?)\{solution-end\}"
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        rest = " ".join(re.sub(pattern, " ", text, flags=re.DOTALL).split())
        for body in re.findall(pattern, text, flags=re.DOTALL):
            for markup in (r"^```[^\n]*$", r"^:[^\n]*$", r"\$\$.*?\$\$", r"\$[^$]*\$", r"\{[\w:-]+\}`[^`\n]*`",
                           r"`[^`\n]*`"):  # fences, options, maths, roles, code
                body = re.sub(markup, "\x00", body, flags=re.DOTALL | re.MULTILINE)
            runs = [" ".join(r.split()[:5]) for r in re.split(r"[\x00()\[\]:;,.*]", body) if len(r.split()) >= 5]
            runs = [r for r in runs if r not in rest]
            if runs:
                found.setdefault(path.stem, []).append(runs[0])
    return found


def page_text(path: Path) -> str:
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", page)).replace("\u2019", "'").split())


def test_the_solutions_are_found_in_the_sources():
    phrases = solution_phrases()
    assert sum(map(len, phrases.values())) >= 75, {k: len(v) for k, v in phrases.items()}


def test_the_students_html_has_no_solution():
    if not (STUDENT / "index.html").exists():
        msg = f"the student's edition is not built ({STUDENT}): BLOCKCD_SOLUTIONS=none jupyter-book build ."
        if os.environ.get("BLOCKCD_REQUIRE_STUDENT") == "1":
            raise AssertionError(msg)
        pytest.skip(msg)
    leaked, shown = [], 0
    for chapter, phrases in solution_phrases().items():
        student = page_text(STUDENT / "book" / f"{chapter}.html")
        assert "Exercise" in student, chapter  # the exercises stay
        leaked += [(chapter, p) for p in phrases if p in student]
        if (DEFAULT / "book" / f"{chapter}.html").exists():
            default = page_text(DEFAULT / "book" / f"{chapter}.html")
            shown += sum(p in default for p in phrases)
    assert not leaked, f"{len(leaked)} solutions in the student's HTML: {leaked[:5]}"
    if (DEFAULT / "index.html").exists():
        # the same phrases are found where the solutions are kept: the check can see them
        assert shown >= 0.8 * sum(map(len, solution_phrases().values())), shown
    assert "student's edition, without solutions" in (STUDENT / "book" / "04_ibcd.html").read_text(encoding="utf-8")

"""The chapters as a student reads them: exercises at three levels, each with its solution.

Every chapter of the book's numbered parts (the pages ``_toc.yml`` lists under a
numbered caption, sections included) ends with exercises marked ★ (a one-minute
check with numbers), ★★ (a derivation) and ★★★ (a proof or an open
exploration).  The mark opens the exercise's first line, followed by a short
title in parentheses, e.g. ``★ (Bytes for a real model.) ...``.  These tests
read the notebooks' markdown; they do not execute anything.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from live.lab import explorer_cells

ROOT = Path(__file__).resolve().parents[1]


def numbered_chapters() -> list[str]:
    """The notebooks of the numbered parts of ``_toc.yml``, sections included, in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    out: list[str] = []

    def walk(entries):
        for e in entries or []:
            out.append(e["file"])
            walk(e.get("sections"))

    for part in toc["parts"]:
        if part.get("numbered"):
            walk(part["chapters"])
    return [f + ".ipynb" for f in out]


CHAPTERS = numbered_chapters()
#: an exercise: the directive's line, then its body up to exercise-end (or, for the one-block form, its fence)
_EXERCISE = re.compile(r"^(`{3,}|:{3,})\{exercise-start\}[^\n]*\n(.*?)^(?:`{3,}|:{3,})\{exercise-end\}"
                       r"|^(`{3,}|:{3,})\{exercise\}[^\n]*\n(.*?)^\3\s*$", re.MULTILINE | re.DOTALL)
_LEVEL = re.compile(r"^(★{1,3}) \(([^)]+)\)")


def _markdown(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def exercises(path: Path) -> list[dict]:
    """Each exercise of a chapter: label, level (1-3 or None), title and body."""
    out = []
    for m in _EXERCISE.finditer(_markdown(path)):
        body = m.group(2) if m.group(2) is not None else m.group(4)
        label = re.search(r"^:label:\s*(\S+)", body, re.MULTILINE)
        text = "\n".join(line for line in body.splitlines()
                         if line.strip() and not re.match(r"^(:[a-z-]+:|`{3,}|:{3,})", line)).strip()
        level = _LEVEL.match(text)
        out.append({"label": label.group(1) if label else None, "level": len(level.group(1)) if level else None,
                    "title": level.group(2) if level else text[:60], "body": text})
    return out


def test_the_numbered_parts_list_the_chapters():
    assert len(CHAPTERS) >= 14 and all((ROOT / c).exists() for c in CHAPTERS), CHAPTERS


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_has_a_level_a_title_and_a_solution(chapter):
    path = ROOT / chapter
    exs = exercises(path)
    assert exs, f"{chapter}: no exercises"
    unmarked = [e["title"] for e in exs if e["level"] is None]
    assert not unmarked, f"{chapter}: exercises without a ★ level and a (title): {unmarked}"
    md = _markdown(path)
    solved = set(re.findall(r"\{solution(?:-start)?\}\s+(\S+)", md))
    missing = [e["label"] for e in exs if e["label"] not in solved]
    assert not missing, f"{chapter}: exercises without a solution: {missing}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_exercises_come_at_three_levels(chapter):
    levels = [e["level"] for e in exercises(ROOT / chapter)]
    counts = {k: levels.count(k) for k in (1, 2, 3)}
    assert counts[1] >= 2, f"{chapter}: {counts[1]} one-minute ★ checks (two or three wanted)"
    assert counts[2] >= 1, f"{chapter}: no ★★ derivation"
    assert counts[3] >= 1, f"{chapter}: no ★★★ proof or exploration"


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if explorer_cells(ROOT / c)])
def test_a_chapter_with_an_explorer_has_an_exercise_that_uses_it(chapter):
    uses = [e["label"] for e in exercises(ROOT / chapter) if re.search(r"\bexplorer\b", e["body"], re.IGNORECASE)]
    assert uses, f"{chapter} shows an explorer but no exercise asks the reader to use it"


def test_the_exercise_parser_reads_a_known_exercise():
    """The parser itself: chapter 11's first exercise is a ★ numbers check with its title."""
    exs = exercises(ROOT / "book/11_ddp.ipynb")
    first = next(e for e in exs if e["label"] == "ex-ddp-numbers")
    assert first["level"] == 1 and first["title"] == "Bytes for a real model."

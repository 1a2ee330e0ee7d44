"""Each chapter's reading and running time, as ``book/_ext/reading_time.py`` computes and prints them,
and the length rule: no chapter has more than ``MAX_WORDS`` words of running prose before its
exercises."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import reading_time as rt  # noqa: E402

CHAPTERS = sorted(p for p in (ROOT / "book").glob("*.ipynb") if rt.is_chapter(p.stem))


def notebook(*cells) -> dict:
    return {"cells": [dict(cell_type=kind, metadata=meta, source=src) for kind, src, meta in cells]}


def test_prose_words_counts_what_a_reader_reads():
    nb = notebook(
        ("markdown", "# A title\n\nTwo words $x^2 + y$ here.\n\n$$\na + b = c\n$$\n<!-- a comment -->", {}),
        ("code", "print('code is not prose')", {"mystnb": {"figure": {"caption": "A caption of six words."}}}),
        ("markdown", "```{prf:lemma} Its title\n:label: lem-x\n\nThe body, see {prf:ref}`lem-y`.\n```\n"
                     "```python\nnot = prose\n```\nSee {doc}`chapter 4 <04_ibcd>`.", {}),
        ("markdown", "Last words.\n\n## Exercises\n\nNot counted at all.", {}),
        ("markdown", "Nor this.", {}),
    )
    # "A title" 2, "Two words formula here" 4, caption 5 (the "A" counts), "Its title" 2,
    # "The body see Lemma 3.1" 5, "See chapter 4" 3, "Last words" 2
    assert rt.prose_words(nb) == 2 + 4 + 5 + 2 + 5 + 3 + 2


def test_running_seconds_adds_the_cells_recorded_times():
    def timed(busy, idle):
        return {"execution": {"iopub.status.busy": busy, "iopub.status.idle": idle}}

    nb = notebook(("code", "a", timed("2026-12-06T00:00:00.000Z", "2026-12-06T00:00:01.500Z")),
                  ("markdown", "text", {}),
                  ("code", "b", timed("2026-12-06T00:00:05.000Z", "2026-12-06T00:00:07.000Z")),
                  ("code", "c", {}))
    assert rt.running_seconds(nb) == pytest.approx(3.5)
    assert rt.run_date(nb) == "6 December 2026"
    assert rt.running_seconds(notebook(("code", "a", {}))) is None


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_chapter_is_over_the_word_limit(path):
    words = rt.prose_words(json.loads(path.read_text(encoding="utf-8")))
    print(f"{path.stem}: {words:,} words before the exercises")
    assert 300 <= words <= rt.MAX_WORDS, words


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_has_its_run_timed(path):
    seconds = rt.running_seconds(json.loads(path.read_text(encoding="utf-8")))
    assert seconds is not None and seconds > 0, "no cell of the stored run has its execution time"


def test_the_built_chapters_show_their_times():
    html = ROOT / "_build" / "html" / "book"
    if not (html / "01_template.html").exists():
        pytest.skip("no HTML built (jupyter-book build .)")
    for path in CHAPTERS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        page = re.sub(r"\s+", " ", (html / f"{path.stem}.html").read_text(encoding="utf-8"))
        words = f"Reading time: about {rt.minutes(rt.prose_words(nb))} minutes"
        assert words in page, (path.stem, words)
        assert "blockcd-reading-time" in page and "Running it:" in page, path.stem

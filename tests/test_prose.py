"""Slips a reader sees in the rendered book, caught in the sources.

A bare ``{prf:ref}`label``` renders the noun and the number ("Theorem 4.1"), a bare
``{ref}`ex-...``` renders "Exercise 9.3" and a bare ``{numref}`fig-...``` "Fig. 1.2": a
noun written right before such a role is printed twice ("exercise Exercise 9.3").  The
bibliography is rendered from ``book/references.bib`` without a LaTeX engine, so a command
such as ``\\emph{...}`` shows up raw in the bibliography and in every citation's tooltip.
These tests read the notebooks' markdown cells and the Markdown pages; when a built HTML
book exists in ``_build/html`` they also scan its pages for the rendered symptoms (``BLOCKCD_HTML_DIR`` names another
built book).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
HTML = Path(os.environ.get("BLOCKCD_HTML_DIR", ROOT / "_build" / "html"))

_NOUN = r"(?:exercises?|theorems?|lemmas?|corollar(?:y|ies)|propositions?|definitions?|algorithms?|figures?|fig\.|tables?|sections?|equations?)"
#: a noun right before a role that renders its own noun (no explicit text: no ``<label>``)
_BEFORE_ROLE = re.compile(_NOUN + r"\s+\{(?:prf:ref|ref|numref)\}`[^`<]+`", re.IGNORECASE)
#: the same noun twice in a row, as rendered text would show it
_DOUBLED = re.compile(r"\b(" + _NOUN + r")\s+\1(?=\s|\d)", re.IGNORECASE)
#: what a doubled role looks like once rendered: the noun twice, then the number ("exercise Exercise 9.3")
_RENDERED = re.compile(r"\b(" + _NOUN + r")\s+\1\s*(?=\d)", re.IGNORECASE)
#: a LaTeX command (a backslash and letters); escapes such as \% and accents such as {\v{c}} are fine
_LATEX = re.compile(r"\\(?!(?:[vcuHkrdb]|[oOlLij]|ss|aa|AA|ae|AE|oe|OE)(?![A-Za-z]))[A-Za-z]+")

#: places a parallel revision of a chapter fixes; each entry must still be present, so the list shrinks
KNOWN: set[tuple[str, str]] = set()


def sources() -> list[tuple[str, str]]:
    """(file name, markdown) for every notebook's markdown cells and every Markdown page of the book."""
    out = []
    for path in sorted(BOOK.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        md = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        out.append((path.name, md))
    out += [(p.name, p.read_text(encoding="utf-8")) for p in sorted(BOOK.glob("*.md"))]
    return out


def slips(text: str) -> list[str]:
    """The doubled nouns in one source, as short excerpts with single spaces."""
    found = [m.group(0) for m in _BEFORE_ROLE.finditer(text)] + [m.group(0) for m in _DOUBLED.finditer(text)]
    return [re.sub(r"\s+", " ", f) for f in found]


@pytest.mark.parametrize("name, text", sources(), ids=[n for n, _ in sources()])
def test_no_noun_is_printed_twice(name, text):
    bad = [s for s in slips(text) if (name, s) not in KNOWN]
    assert not bad, f"{name}: a noun right before a role that prints it again: {bad}"


def test_the_known_slips_are_still_there():
    """An entry of KNOWN that has been fixed must leave the list."""
    texts = dict(sources())
    gone = [k for k in KNOWN if k[1] not in slips(texts.get(k[0], ""))]
    assert not gone, f"fixed, remove from KNOWN: {gone}"


def test_the_checker_catches_the_slips():
    assert slips("as exercise {ref}`ex-downlink` shows") == ["exercise {ref}`ex-downlink`"]
    assert slips("by Theorem {prf:ref}`thm-ibcd`") == ["Theorem {prf:ref}`thm-ibcd`"]
    assert slips("the theorem Theorem 4.1 says") == ["theorem Theorem"]
    assert _RENDERED.search("as exercise Exercise 9.3 shows") and not _RENDERED.search("the figures figures (all")
    assert slips("see {ref}`the exercise <ex-downlink>`, and Theorem 4.1") == []
    assert _LATEX.findall(r"Richt{\'a}rik, Sto{\v{c}}es, \emph{Title}") == [r"\emph"]


def test_the_bibliography_has_no_latex_commands():
    bib = (BOOK / "references.bib").read_text(encoding="utf-8")
    bad = sorted(set(_LATEX.findall(bib)))
    assert not bad, f"references.bib: LaTeX commands the HTML prints raw: {bad}"


def test_the_built_pages_show_no_doubled_noun_and_no_raw_latex():
    if not HTML.is_dir():
        pytest.skip("no built book in _build/html")
    bad = []
    for page in sorted(HTML.rglob("*.html")):
        text = re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8", errors="replace"))
        text = re.sub(r"\s+", " ", text)
        hits = [m.group(0) for m in _RENDERED.finditer(text)] + re.findall(r"\\emph\b|\\textit\b|\\textbf\b", text)
        if hits:
            bad.append((str(page.relative_to(HTML)), sorted(set(hits))[:5]))
    assert not bad, bad

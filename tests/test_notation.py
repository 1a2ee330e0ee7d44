"""The notation page (book/notation.md) says where each symbol is defined, and it is.

Every row of a table with a "defined in" column names places: a chapter
(``{doc}`chapter 4 <04_ibcd>```), optionally narrowed to a section (``§4.5``, numbered
as the HTML numbers it: the ``##`` headings of a chapter in order, then its sections with
a page of their own), or a theorem or definition (``{prf:ref}`label```, standing for the
section that holds it).  A symbol cell holds one or more formulas; the name of each is
the part before its first ``=``, split at commas.  The tests check that each name occurs
in at least one of the places its row names, and that each place holds at least one of
the row's names: a wrong chapter or section fails.  The table of second meanings is held
to the same rule for the chapter it names.  Nothing is executed; the notebooks' markdown
is read.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "notation.md"

_DOC = re.compile(r"\{doc\}`[^`<]*<([^>`]+)>`(?:,?\s*§(\d+)\.(\d+))?")
_PRF = re.compile(r"\{prf:ref\}`([^`]+)`")


def _norm(s: str) -> str:
    """A formula without braces, spaces and thin spaces, so that ``L_{\\max}`` and ``L_\\max`` compare equal."""
    return re.sub(r"\\[,;!]|[{}\s]", "", s)


def _markdown(doc: str) -> str:
    path = ROOT / "book" / (doc + ".ipynb")
    if not path.exists():
        return (ROOT / "book" / (doc + ".md")).read_text(encoding="utf-8")
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@lru_cache(maxsize=1)
def sections() -> tuple[dict[tuple[int, int], str], dict[str, int], dict[str, tuple[int, int]]]:
    """The numbered chapters cut into sections: {(chapter, section): markdown}, each chapter's
    number by document, and the section each document starts (a chapter's own text before its
    first heading is section 0)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files: list[tuple[str, str | None]] = []

    def walk(entries, parent=None):
        for e in entries or []:
            files.append((e["file"].removeprefix("book/"), parent))
            walk(e.get("sections"), e["file"].removeprefix("book/"))

    for part in toc["parts"]:
        if part.get("numbered"):
            walk(part["chapters"])
    text: dict[tuple[int, int], str] = {}
    number: dict[str, int] = {}
    start: dict[str, tuple[int, int]] = {}
    chapter, sec = 0, 0
    for doc, parent in files:
        if parent is None:
            chapter, sec = chapter + 1, 0
            number[doc] = chapter
        else:
            sec += 1
            number[doc] = number[parent]
        key = (number[doc], sec)
        start[doc] = key
        text[key] = ""
        for line in _markdown(doc).splitlines():
            if parent is None and line.startswith("## "):
                sec += 1
                key = (chapter, sec)
                text[key] = ""
            text[key] += line + "\n"
    return text, number, start


def _chapter_text(doc: str) -> str:
    text, number, start = sections()
    if doc not in number:
        return _markdown(doc)
    if start[doc][1] > 0:   # a section with a page of its own
        return text[start[doc]]
    return "".join(v for (c, s), v in text.items() if c == number[doc] and (c, s) >= start[doc]
                   and not any(start[d][0] == c and start[d][1] > 0 and s >= start[d][1] for d in start))


def _label_text(label: str) -> str:
    text, _, _ = sections()
    hits = [v for v in text.values() if re.search(rf"^:label:\s*{re.escape(label)}\s*$", v, re.MULTILINE)]
    assert len(hits) == 1, f"{label}: found in {len(hits)} sections"
    return hits[0]


def places(cell: str) -> list[tuple[str, str]]:
    """The places a "defined in" cell names: (description, markdown)."""
    out = []
    for m in _DOC.finditer(cell):
        doc, c, s = m.group(1), m.group(2), m.group(3)
        if c is None:
            out.append((doc, _chapter_text(doc)))
        else:
            text, number, _ = sections()
            assert number.get(doc) == int(c), f"§{c}.{s} is not in {doc} (chapter {number.get(doc)})"
            out.append((f"{doc} §{c}.{s}", text[(int(c), int(s))]))
    for m in _PRF.finditer(cell):
        out.append((m.group(1), _label_text(m.group(1))))
    return out


def names(cell: str) -> list[str]:
    """The symbols a cell defines: in each formula, the part before its first ``=``, split at commas."""
    out = []
    for formula in re.findall(r"\$([^$]+)\$", cell):
        head = formula.split("=")[0]
        out += [p.strip() for p in head.split(",") if p.strip()]
    return out


def rows(header: str) -> list[list[str]]:
    """The rows of every table of the page whose header has the column ``header``, as cells."""
    out, columns = [], None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            columns = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if columns is None:
            columns = cells
            continue
        if set(line) <= set("|- "):
            continue
        if header in columns:
            out.append(dict(zip(columns, cells)))
    return out


DEFINED = rows("defined in")
ELSEWHERE = rows("where")


def test_the_page_has_its_tables():
    assert len(DEFINED) >= 50, len(DEFINED)
    assert len(ELSEWHERE) >= 4, len(ELSEWHERE)
    assert all(places(r["defined in"]) for r in DEFINED), [r["symbol"] for r in DEFINED if not places(r["defined in"])]


@pytest.mark.parametrize("row", DEFINED, ids=[r["symbol"][:40] for r in DEFINED])
def test_each_symbol_is_defined_where_the_table_says(row):
    symbols = names(row["symbol"])
    assert symbols, f"no formula in {row['symbol']!r}"
    where = places(row["defined in"])
    for name in symbols:
        assert any(_norm(name) in _norm(text) for _, text in where), \
            f"{name} does not occur in {[d for d, _ in where]}"
    for desc, text in where:
        assert any(_norm(name) in _norm(text) for name in symbols), f"{desc} holds none of {symbols}"


@pytest.mark.parametrize("row", [r for r in ELSEWHERE if _DOC.search(r["where"])],
                         ids=[r["symbol"][:40] for r in ELSEWHERE if _DOC.search(r["where"])])
def test_each_second_meaning_occurs_where_the_table_says(row):
    symbols = names(row["symbol"])
    for desc, text in places(row["where"]):
        assert any(_norm(name) in _norm(text) for name in symbols), f"{desc} holds none of {symbols}"


def test_the_checker_catches_a_wrong_section():
    """omega is defined in chapter 1, section 1.6, and does not occur in section 1.2."""
    right = places("{doc}`chapter 1 <01_template>` §1.6")[0][1]
    wrong = places("{doc}`chapter 1 <01_template>` §1.2")[0][1]
    assert _norm(r"\omega") in _norm(right) and _norm(r"\omega") not in _norm(wrong)


# ------------------------------------------------ clashes the page does not list
# A chapter *defines* a letter when it writes it, with or without a subscript, equal to a formula that
# builds it (a fraction, sum, max, min, expectation, norm, root, ...), e.g. $T = 2\lceil\dots\rceil$ or
# $H_i = \dots$; a setting such as $\tau = m/n$ or $n = 4$ is not a definition. A letter that two chapters
# define by formulas with nothing in common is a clash unless the page lists a second meaning of it
# (a row of the table of second meanings naming one of those chapters, or one of its rows for a proof,
# an exercise or the paper) or it was read and found to be one quantity restated (REVIEWED, with why).
_HEAD = r"(?<![A-Za-z\\^_{])(\\[A-Za-z]+|[A-Za-z])(_\{[^{}]*\}|_\\?[A-Za-z0-9]+)?"
_DEFINES = re.compile(_HEAD + r"(?:\([^()=]*\))?\s*=\s*((?:\\frac|\\sum|\\max|\\min|\\mathbb\{E\}|\\lVert|"
                      r"\\operatorname|\\sqrt|\\prod|[0-9]?\\lceil)[^,$]{0,60})")
_GREEK = {"\\" + g for g in (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta kappa lambda mu nu xi pi varpi rho "
    "sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega"
).split()}
REVIEWED = {
    "C": "the sparsifier, written m/τ P_S or P_S/q",
    "C_i": "worker i's sparsifier, in its forms for IBCD and IBGD",
    "D": "f - f*, and its expectation along a run",
    "G": "the master's average of the sparsified vectors",
    "K": "the iterations to an accuracy, each chapter's own way of writing the minimum",
    "R": "the regulariser and the radius R(τ) have rows of their own",
    "\\gamma": "a step, each method's own value",
    "\\omega": "m/τ - 1, and the paper's ω at its step",
    "\\tau": "the blocks sent, each chapter's value of it",
    "c": "the Lyapunov coefficient of each theorem",
    "f": "the objective, each problem's own", "f_i": "worker i's loss, each problem's own",
    "g": "the averaged estimator, each method's own", "g_i": "worker i's estimator, each method's own",
    "h": "the mean of the shifts",
}


def definitions() -> dict[str, dict[str, set[str]]]:
    """{letter with its subscript: {chapter file: the formulas it is set equal to}} over every chapter."""
    out: dict[str, dict[str, set[str]]] = {}
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        for a, b in re.findall(r"\$\$(.+?)\$\$|\$([^$]+)\$", _markdown(path.stem), re.S):
            for m in _DEFINES.finditer(a or b):
                if m.group(1).startswith("\\") and m.group(1) not in _GREEK:
                    continue
                key = m.group(1) + re.sub(r"[{}\s]", "", m.group(2) or "")
                out.setdefault(key, {}).setdefault(path.stem, set()).add(_norm(m.group(3))[:25])
    return out


def clashes(defs) -> dict[str, list[str]]:
    """The letters two chapters define by formulas with nothing in common: {letter: chapters}."""
    out = {}
    for key, per in defs.items():
        chs = sorted(per)
        if any(not (per[x] & per[y]) for i, x in enumerate(chs) for y in chs[i + 1:]):
            out[key] = chs
    return out


def _listed(key: str, chapters: list[str]) -> bool:
    base = re.match(r"\\?[A-Za-z]+", key).group(0)
    for row in ELSEWHERE:
        if "symbol" not in row:
            continue
        if base not in {re.match(r"\\?[A-Za-z]*", n).group(0) for n in names(row["symbol"])}:
            continue
        docs = {m.group(1) for m in _DOC.finditer(row["where"])}
        if not docs or docs & set(chapters):
            return True
    return False


def test_every_letter_two_chapters_define_differently_is_listed_or_reviewed():
    found = clashes(definitions())
    assert len(found) >= 10, found                      # the finder finds: the restated ones at least
    unlisted = {k: v for k, v in found.items() if k not in REVIEWED and not _listed(k, v)}
    assert not unlisted, f"letters defined differently in two chapters, not on the notation page: {unlisted}"
    stale = sorted(set(REVIEWED) - set(found))
    assert not stale, f"REVIEWED letters no longer defined in two chapters: {stale}"


def test_the_clash_finder_catches_a_new_meaning():
    """A letter set equal to two unrelated formulas in two chapters is found, and T's second meaning (the
    iterations of a run in chapters 8 and 13) is found and listed."""
    defs = {"Z": {"01_template": {_norm(r"\frac{1}{n}")}}, }
    defs["Z"]["09_time"] = {_norm(r"\sum_i x_i")}
    assert clashes(defs) == {"Z": ["01_template", "09_time"]} and not _listed("Z", ["01_template", "09_time"])
    assert {"01_template", "08_experiments"} <= set(clashes(definitions())["T"])
    assert _listed("T", ["08_experiments"]) and not _listed("T", ["01_template"])

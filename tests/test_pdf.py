"""The whole book as one PDF (``jupyter-book build . --builder pdflatex``), read back as text.

Reads ``_build/latex/book.pdf`` with poppler's ``pdftotext`` and ``pdfinfo`` (Debian:
poppler-utils) and compares its numbers with the HTML's in ``_build/html`` (the README's build
command): the chapters in the contents, the figures' captions, the theorems' (lemmas', ...) titles
and the exercises; that every table row of the HTML is in the PDF's text; and, from LaTeX's log
``_build/latex/book.log``, that nothing is set into the margin or below the page (no overfull
box beyond :data:`HBOX_LIMIT`).  Skipped when no PDF was built, except when ``BLOCKCD_REQUIRE_PDF=1`` (set by
``.ci/run``, which builds both), where a missing PDF, HTML or poppler fails.
"""

from __future__ import annotations

import html as htmllib
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "_build" / "latex" / "book.pdf"
HTML = ROOT / "_build" / "html"
LOG = ROOT / "_build" / "latex" / "book.log"
REQUIRED = os.environ.get("BLOCKCD_REQUIRE_PDF") == "1"
#: the most a line may stick out into the margin, in points (an overfull \hbox)
HBOX_LIMIT = 10.0
#: the most a page's last box may reach below the text block, in points (an overfull \vbox).  A
#: framed code block or exercise box that LaTeX splits across two pages can end a few points
#: below the last line (framed.sty leaves its bottom rule and padding out of the split's height:
#: 1.6-2.9 pt, five times in 389 pages on 7 December 2026), inside the bottom margin and far
#: from the footer.  Anything larger is a page that runs off, as the results table's 710 pt did.
VBOX_LIMIT = 3.0
#: 389 pages on 7 December 2026 (solutions left out); the instructor's copy had 421 on 6 December
PAGES = (200, 600)

for what, missing in (("the PDF", not PDF.exists()), ("pdftotext", shutil.which("pdftotext") is None),
                      ("the HTML", not (HTML / "index.html").exists())):
    if missing:
        msg = f"{what} is missing (jupyter-book build . --builder pdflatex; Debian: poppler-utils)"
        if REQUIRED:
            raise RuntimeError(msg + "; BLOCKCD_REQUIRE_PDF=1 demands the PDF test")
        pytest.skip(msg, allow_module_level=True)


@cache
def text() -> str:
    return subprocess.run(["pdftotext", "-layout", str(PDF), "-"], check=True, capture_output=True,
                          text=True).stdout


def words(s: str, k: int) -> str:
    """The first k words of s, whitespace collapsed (the PDF breaks lines where the HTML does not)."""
    return " ".join(s.split()[:k])


@cache
def html_pages() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted((HTML / "book").glob("*.html"))}


def plain(fragment: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_page_count_is_sane():
    out = subprocess.run(["pdfinfo", str(PDF)], check=True, capture_output=True, text=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", out, flags=re.MULTILINE).group(1))
    assert PAGES[0] <= pages <= PAGES[1], f"{pages} pages, expected {PAGES}"


def test_no_unresolved_reference_and_no_output_repr():
    # "??" is LaTeX's unresolved reference; a display object without a picture prints its repr
    body = text()
    assert "??" not in body, [ln for ln in body.splitlines() if "??" in ln][:5]
    assert "<IPython.core.display" not in body, body.count("<IPython.core.display")


def test_every_explorer_prints_as_its_static_frame():
    # each explorer's output is its sweep's frame (a picture) and the note saying so, once per explorer
    from blockcd.widgets.registry import NOTE_PRINT

    shows = sum(len(re.findall(r"widgets\.show\(", p.read_text())) for p in (ROOT / "book").glob("*.ipynb"))
    assert " ".join(text().split()).count(words(NOTE_PRINT, 7)) == shows >= 8


def test_chapters_numbered_as_in_the_html():
    # the HTML's navigation (on every page; the glance page's here): "<a ...>1. The template: ...</a>"; the PDF's contents: "1 The template: ... 15"
    nav = re.findall(r'toctree-l1[^"]*"><a class="reference internal" href="[^"]+">(\d+)\. ([^<]+)</a>',
                     html_pages()["glance"])
    chapters = {int(k): words(htmllib.unescape(t), 3) for k, t in nav}
    assert len(chapters) >= 12, chapters
    contents = {}
    for line in text().splitlines()[:400]:
        m = re.match(r"^(\d+)\s{1,3}(\S.*?)\s+\d+$", line)
        if m and int(m.group(1)) not in contents:
            contents[int(m.group(1))] = words(m.group(2), 3)
    assert contents == chapters


def test_figures_numbered_as_in_the_html():
    # HTML: <span class="caption-number">Fig. 2.1 </span><span class="caption-text">The issue, ...
    body = " ".join(text().split())
    found = 0
    for page in html_pages().values():
        for number, caption in re.findall(r'<span class="caption-number">Fig\. ([\d.]+) </span>'
                                          r'<span class="caption-text">(.*?)</span>', page, flags=re.DOTALL):
            start = words(plain(caption), 3)
            if "\\(" in start or not start:  # maths reads differently in the PDF's text
                continue
            assert f"Fig. {number}: {start}" in body, (number, start)
            found += 1
    assert found >= 30, found


def test_theorems_numbered_as_in_the_html():
    # sphinx-proof: <span class="caption-number">Theorem 4.2.1 </span> (SGD under expected smoothness)
    body = " ".join(text().split())
    pattern = (r'<span class="caption-number">((?:Theorem|Lemma|Proposition|Corollary|Definition|Assumption)'
               r' [\d.]+) </span>\s*\(([^<]*?)\)')
    found = 0
    for page in html_pages().values():
        for label, title in re.findall(pattern, page):
            title = words(plain(title), 3)
            if "\\(" in title:
                continue
            assert f"{label} ({title}" in body, (label, title)
            found += 1
    assert found >= 15, found
    assert "Lemma 8.1 (Constants cancel in ratios)" in body  # chapter 8's lemmas are numbered


def test_exercises_numbered_as_in_the_html():
    pattern = r'<span class="caption-number">Exercise ([\d.]+) </span>'
    in_html = {n for page in html_pages().values() for n in re.findall(pattern, page)}
    in_pdf = set(re.findall(r"^\s*Exercise (\d+(?:\.\d+)+)\s*$", text(), flags=re.MULTILINE))
    assert len(in_html) >= 80, len(in_html)
    assert in_pdf == in_html, (sorted(in_html - in_pdf)[:5], sorted(in_pdf - in_html)[:5])


def test_version_on_the_title_page():
    import blockcd

    first_page = text().split("\f", 1)[0]
    assert f"Release {blockcd.__version__}" in first_page


def overfull_boxes(log: str) -> list[tuple[str, float, str]]:
    """Every overfull box LaTeX reports: (``"hbox"`` or ``"vbox"``, points, where)."""
    found = re.findall(r"^Overfull \\(hbox|vbox) \((\d+(?:\.\d+)?)pt too (?:wide|high)\)(.*)$", log,
                       flags=re.MULTILINE)
    return [(kind, float(points), where.strip()) for kind, points, where in found]


def too_big(boxes: list[tuple[str, float, str]]) -> list[tuple[str, float, str]]:
    return [b for b in boxes if b[1] > (VBOX_LIMIT if b[0] == "vbox" else HBOX_LIMIT)]


def test_overfull_boxes_are_read_from_the_log():
    log = ("Overfull \\hbox (944.32178pt too wide) in alignment at lines 17048--17061\n"
           "Overfull \\hbox (3.5pt too wide) in paragraph at lines 5--5\n"
           "Underfull \\hbox (badness 10000) in paragraph at lines 6--6\n"
           "Overfull \\vbox (0.96335pt too high) detected at line 6170\n"
           "Overfull \\vbox (3.2pt too high) detected at line 6171\n"
           "Overfull \\vbox (710.48416pt too high) has occurred while \\output is active []\n")
    boxes = overfull_boxes(log)
    assert [(k, p) for k, p, _ in boxes] == [("hbox", 944.32178), ("hbox", 3.5), ("vbox", 0.96335),
                                             ("vbox", 3.2), ("vbox", 710.48416)]
    assert [p for _, p, _ in too_big(boxes)] == [944.32178, 3.2, 710.48416]


def test_nothing_is_set_into_the_margin_or_below_the_page():
    assert LOG.exists(), f"{LOG} is missing: the LaTeX log of the PDF build"
    boxes = overfull_boxes(LOG.read_text(encoding="utf-8", errors="replace"))
    bad = too_big(boxes)
    assert not bad, (f"{len(bad)} overfull boxes (hbox > {HBOX_LIMIT} pt, vbox > {VBOX_LIMIT} pt): "
                     f"{bad[:8]}")


def normalised(s: str) -> str:
    """Text as both editions print it, to compare: hyphens left out (the PDF breaks words at line
    ends, "mem-ory", and at their own hyphens), quotes made straight, whitespace collapsed."""
    s = re.sub(r"-\s*\n", "", s).replace("-", "")
    for curly, straight in (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\u00ad", "")):
        s = s.replace(curly, straight)
    return " ".join(s.split())


@cache
def reading_order_text() -> str:
    # pdftotext's reading order keeps a table cell's wrapped lines together (-layout interleaves
    # the columns of a row)
    return normalised(subprocess.run(["pdftotext", str(PDF), "-"], check=True, capture_output=True,
                                     text=True).stdout)


def printed(phrase: str, body: str) -> bool:
    """Whether the PDF's text has the phrase: as it stands, or, for four words or more, its words in
    order with at most six other words between two of them, or in two parts of at least two words
    each. pdftotext reads a line that holds a fraction in the order of the fraction's lines, and a
    table cell's lines in the order of the cells beside them: "at the" and "extrapolated point"
    come out apart."""
    phrase = normalised(phrase)
    if phrase in body:
        return True
    words = phrase.split()
    if len(words) < 4:
        return False
    gap = r"(?:\s+\S+){0,6}?\s+"
    if re.search(gap.join(re.escape(w) for w in words), body):
        return True
    return any(" ".join(words[:k]) in body and " ".join(words[k:]) in body for k in range(2, len(words) - 1))


def cell_phrases(cell_html: str) -> list[str]:
    """The runs of at least three plain words in a table cell (maths and punctuation split them),
    each cut to its first six words: what the PDF must print too."""
    text = plain(re.sub(r"\\\(.*?\\\)|\\\[.*?\\\]", "\x00", cell_html, flags=re.DOTALL))
    runs = []
    for run in re.split(r"[\x00()\[\]:;,.]", text):
        words = [w for w in run.split() if re.search(r"\w", w)]
        words = words[1:] if words and not re.match(r"\w", words[0]) else words
        if len(words) >= 3:
            runs.append(" ".join(words[:6]))
    return runs


def html_table_rows() -> dict[str, list[list[str]]]:
    """Each page's table body rows, each as its cells' phrases."""
    rows = {}
    for name, page in html_pages().items():
        for table in re.findall(r"<table.*?</table>", page, flags=re.DOTALL):
            for body in re.findall(r"<tbody>(.*?)</tbody>", table, flags=re.DOTALL):
                for row in re.findall(r"<tr.*?</tr>", body, flags=re.DOTALL):
                    cells = re.findall(r"<td.*?</td>", row, flags=re.DOTALL)
                    rows.setdefault(name, []).append([p for c in cells for p in cell_phrases(c)])
    return rows


def test_printed_tolerates_a_fraction_between_words_but_not_a_missing_word():
    body = normalised("the step 1 2L(tau) at the 1 n extrapolated point y, and more")
    assert printed("at the extrapolated point", body)
    assert not printed("at the interpolated point", body)
    assert printed("at the extrapolated point", normalised("P(y) at the\nother cell\n" * 20 + "extrapolated point y"))
    assert not printed("the extrapolated", "the x extrapolated")  # short phrases only as they stand


def test_cell_phrases():
    cell = '<td><p>\\(L\\) smoothness constant of \\(f\\), (largest eigenvalue of its Hessian)</p></td>'
    assert cell_phrases(cell) == ["smoothness constant of", "largest eigenvalue of its Hessian"]


@pytest.mark.parametrize("page", ["results", "notation"])
def test_the_reference_tables_have_all_their_rows(page):
    rows = html_table_rows()[page]
    assert len(rows) >= {"results": 10, "notation": 60}[page], len(rows)
    body = reading_order_text()
    missing = [p for row in rows for p in row if not printed(p, body)]
    assert not missing, f"{len(missing)} cells of {page}'s tables are not in the PDF: {missing[:6]}"


def test_every_table_row_of_the_html_is_in_the_pdf():
    body = reading_order_text()
    rows = [(name, row) for name, page_rows in html_table_rows().items() for row in page_rows]
    assert len(rows) >= 150, len(rows)
    missing = [(name, row[0]) for name, row in rows if row and not any(printed(p, body) for p in row)]
    assert not missing, f"{len(missing)} table rows of the HTML are not in the PDF: {missing[:6]}"

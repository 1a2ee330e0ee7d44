"""What an instructor needs around the book: the licences, how to cite it (``CITATION.cff`` and the
landing page's BibTeX entry, both at the release's version and date), where to report a mistake,
the changelog in the book, and the course plan."""

import re
from datetime import datetime
from pathlib import Path

import blockcd

ROOT = Path(__file__).resolve().parents[1]
INTRO = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")


def release_date() -> str:
    """The date of the newest CHANGELOG entry, ISO: "## 0.3.1 (6 December 2026)" gives 2026-12-06."""
    version, date = re.search(r"^## (\S+) \(([^)]+)\)", (ROOT / "CHANGELOG.md").read_text(),
                              flags=re.MULTILINE).groups()
    assert version == blockcd.__version__
    return datetime.strptime(date, "%d %B %Y").strftime("%Y-%m-%d")


def test_the_licences_cover_code_and_text():
    code = (ROOT / "LICENSE").read_text()
    text = (ROOT / "LICENSE-TEXT.md").read_text()
    assert code.startswith("MIT License") and "The blockcd authors" in code
    assert "CC BY 4.0" in text and "The blockcd authors" in text and "LICENSE" in text
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^license = \{ text = "MIT" \}$', pyproject, flags=re.MULTILINE)
    assert 'authors = [{ name = "The blockcd authors" }]' in pyproject
    assert 'author: "The blockcd authors"' in (ROOT / "_config.yml").read_text()


def test_citation_file_is_this_release():
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r'^version: "(.+)"$', cff, flags=re.MULTILINE).group(1) == blockcd.__version__
    assert re.search(r'^date-released: "(.+)"$', cff, flags=re.MULTILINE).group(1) == release_date()
    assert re.search(r'^repository-code: "(.+)"$', cff, flags=re.MULTILINE).group(1) == blockcd.__url__
    assert re.search(r'^  - name: "The blockcd authors"$', cff, flags=re.MULTILINE)
    assert "  - MIT\n  - CC-BY-4.0\n" in cff


def test_landing_page_bibtex_is_this_release():
    entry = re.search(r"```bibtex\n(@book\{.*?\n\})\n```", INTRO, flags=re.DOTALL).group(1)
    assert f"edition   = {{version {blockcd.__version__}}}" in entry
    day = datetime.strptime(release_date(), "%Y-%m-%d")
    assert f"Version {blockcd.__version__}, {day.day} {day:%B %Y}" in entry
    assert f"year      = {{{day.year}}}" in entry
    assert f"url       = {{{blockcd.__url__}}}" in entry
    assert "author    = {{The blockcd authors}}" in entry


def test_errata_and_changelog_are_in_the_book():
    # where to report a mistake: the repository's issues, on the landing page
    assert f"<{blockcd.__url__}/issues>" in INTRO and "(errata)=" in INTRO
    urls = set(re.findall(r"https://github\.com/[^\s>)}]+", INTRO))
    assert urls <= {blockcd.__url__, f"{blockcd.__url__}/issues"}, urls
    # the changelog is a page of the book, included from CHANGELOG.md, and linked from the landing page
    assert "```{include} ../CHANGELOG.md" in (ROOT / "book" / "changelog.md").read_text()
    assert "book/changelog" in (ROOT / "_toc.yml").read_text() and "{doc}`changelog`" in INTRO


def test_course_plan_has_six_to_eight_lectures_each_with_exercises():
    course = (ROOT / "book" / "course.md").read_text(encoding="utf-8")
    assert "book/course" in (ROOT / "_toc.yml").read_text()
    plan = course.split("(course-plan)=", 1)[1].split("\n## ", 2)[1]
    rows = [r for r in plan.splitlines() if re.match(r"^\| \d+\. ", r)]
    assert 6 <= len(rows) <= 8, len(rows)
    labels = set()
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 5, row
        assert cells[2] in ("core", "optional"), row
        assert cells[3], row  # prerequisites
        found = re.findall(r"\{ref\}`(ex-[\w-]+)`", cells[4])
        assert len(found) >= 3, row
        labels.update(found)
    # every exercise named exists in a chapter
    sources = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "book").glob("*.ipynb"))
    missing = [label for label in labels if f":label: {label}\\n" not in sources]
    assert not missing, missing

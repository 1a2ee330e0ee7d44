"""One version everywhere: ``blockcd.__version__`` is the one the package, the command line, the
changelog, ``reproduce``'s CSVs and the book's footer name."""

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

import blockcd
from blockcd.reproduce.core import write_csv

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_a_release_number():
    assert re.fullmatch(r"\d+\.\d+\.\d+", blockcd.__version__), blockcd.__version__


def test_pyproject_reads_the_library_version():
    text = (ROOT / "pyproject.toml").read_text()
    assert not re.search(r"^version\s*=\s*\"", text, flags=re.MULTILINE), "a second version in pyproject.toml"
    assert re.search(r'^dynamic = \["version"\]$', text, flags=re.MULTILINE)
    assert re.search(r'^version = \{ attr = "blockcd.__version__" \}$', text, flags=re.MULTILINE)


def test_command_line_prints_the_version():
    out = subprocess.run([sys.executable, "-m", "blockcd", "--version"], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == f"blockcd {blockcd.__version__}"


def test_changelog_newest_entry_is_this_version():
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert headings and headings[0] == blockcd.__version__, headings[:3]


def test_reproduce_csv_names_the_version(tmp_path):
    path = write_csv(tmp_path / "x.csv", [{"a": 1, "b": 2.5}, {"a": 3, "b": float("nan")}])
    rows = list(csv.DictReader(path.read_text().splitlines()))
    assert [r["blockcd_version"] for r in rows] == [blockcd.__version__] * 2
    assert [r["a"] for r in rows] == ["1", "3"] and rows[1]["b"] == ""


def test_every_page_footer_names_the_version():
    pages = sorted((ROOT / "_build" / "html" / "book").glob("*.html"))
    if not pages:
        pytest.skip("no HTML built (jupyter-book build .)")
    for page in pages:
        assert f"blockcd {blockcd.__version__}, built " in page.read_text(encoding="utf-8"), page.name

"""The benchmark (``python -m benchmarks``): it runs, and the library agrees with its reference.

No timing is asserted here (the machine is shared); only that every case
runs at the reduced sizes of ``--quick`` and that the straightforward
per-worker reference reproduces the library's iterates (the reference itself
is tested against the simulator for every method in ``test_methods.py``).
"""

import json
import subprocess
import sys

import nbformat
import numpy as np
import pytest

import benchmarks as bench
import blockcd
from benchmarks import AGREEMENT, Row, agreement
from blockcd import problems, reference


@pytest.fixture(scope="module")
def quick_rows():
    return bench.main(["--quick", "--reps", "1"])


def test_quick_benchmark_runs_every_case(quick_rows, capsys):
    cases = {r.case.split(":")[0] for r in quick_rows}
    assert cases == {"floor", "reference", "sampling", "memory", "scale"}  # --quick leaves the book out
    timed = [r for r in quick_rows if r.measured is not None and not r.case.startswith("reference: iterates")]
    assert timed and all(np.isfinite(r.measured) for r in timed)


def test_quick_benchmark_iterates_agree_with_the_reference(quick_rows):
    agree = [r for r in quick_rows if r.case.startswith("reference: iterates agree")]
    assert len(agree) == 3  # two widget sizes and the sparse logistic problem
    for r in agree:
        assert r.met and r.measured <= AGREEMENT, (r.sizes, r.measured)


def test_quick_benchmark_keeps_sparse_data_sparse(quick_rows):
    (row,) = [r for r in quick_rows if r.case.startswith("sampling: sparse")]
    assert row.met, row.note


def _problem(kind: str):
    return problems.synthetic(4, 15, 12, cond=5, seed=1)


def test_agreement_detects_other_block_choices():
    # another seed sends other blocks: the check must see it (a check that always passes would not)
    p = _problem("dense ridge")
    lib = blockcd.run(p, "ibcd", m=6, tau=1, iters=25, seed=0)
    other = reference.run(p, "ibcd", m=6, tau=1, iters=25, seed=1)
    assert np.max(np.abs(lib.dist2 - other.dist2)) / lib.dist2[0] > 1e-6
    assert agreement(p, "ibcd", m=6, tau=1, iters=25) <= AGREEMENT


def test_table_lists_every_row_with_its_verdict():
    rows = [Row("floor: a", "n=1", 1.1, "<= 1.25", True, "note a", cpu=1.2),
            Row("memory: b", "n=2", 3.0, "<= 1", False), Row("forms", "n=3", None, "", None)]
    text = bench._table(rows).splitlines()
    assert text[0].split()[:6] == ["case", "sizes", "measured", "target", "met", "cpu"]
    assert len(text) == 2 + len(rows)
    assert text[2].split()[-4:] == ["yes", "1.2", "note", "a"]
    assert " NO " in text[3] and text[4].split()[-1] == "-"


def test_module_entry_point_answers_help():
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "--quick" in proc.stdout and "--only" in proc.stdout


@pytest.mark.parametrize("argv", [["--only", "everything"], ["--reps", "0"], ["--threads", "0"]])
def test_main_rejects_bad_arguments(argv):
    with pytest.raises(SystemExit):
        bench.main(argv)


def test_json_output_round_trips(tmp_path):
    out = tmp_path / "rows.json"
    rows = bench.main(["--quick", "--only", "memory", "--json", str(out)])
    got = json.loads(out.read_text())
    assert [r["case"] for r in got["rows"]] == [r.case for r in rows]
    assert "numpy" in got["machine"]


def test_book_case_times_each_chapter_and_reports_failures(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    ok, bad = nbformat.v4.new_notebook(), nbformat.v4.new_notebook()
    ok.cells = [nbformat.v4.new_code_cell("x = 1 + 1")]
    bad.cells = [nbformat.v4.new_code_cell("raise RuntimeError('chapter fails')")]
    nbformat.write(ok, book / "01_ok.ipynb")
    nbformat.write(bad, book / "02_bad.ipynb")
    rows = bench._case_book(False, 1, root=tmp_path)
    assert [r.case for r in rows] == ["book: 01_ok.ipynb (s)", "book: 02_bad.ipynb (s)", "book: all chapters (s)"]
    assert rows[0].met and rows[0].note == ""
    assert not rows[1].met and "RuntimeError: chapter fails" in rows[1].note
    assert rows[2].measured == pytest.approx(rows[0].measured + rows[1].measured)


def test_book_case_without_chapters(tmp_path):
    (row,) = bench._case_book(False, 1, root=tmp_path)
    assert row.met is None and row.note == "no chapters found"


def test_book_case_finds_the_checkout_by_default(monkeypatch):
    """Without ``root`` the case times the repository's own chapters (book/ beside the blockcd package),
    not a book/ inside the package; the chapters' execution is stubbed out here."""
    from pathlib import Path

    import nbclient

    monkeypatch.setattr(nbclient.NotebookClient, "execute", lambda self, **kw: None)
    rows = bench._case_book(False, 1)
    chapters = sorted((Path(__file__).resolve().parents[1] / "book").glob("*.ipynb"))
    assert [r.case for r in rows] == [f"book: {p.name} (s)" for p in chapters] + ["book: all chapters (s)"]
    assert len(chapters) >= 13

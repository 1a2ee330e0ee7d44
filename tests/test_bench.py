"""The benchmark (``python -m benchmarks``): it runs, and the library agrees with its reference.

No timing is asserted here (the machine is shared); only that every case
runs at the reduced sizes of ``--quick`` and that the straightforward
per-worker reference reproduces the library's iterates (the reference itself
is tested against the simulator for every method in ``test_methods.py``).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_quick_benchmark_judges_only_its_correctness_checks(quick_rows):
    # the time and memory targets are about the full sizes: a quick run leaves them unjudged ('-')
    judged = [r for r in quick_rows if r.met is not None]
    assert judged and all(r.check for r in judged), [r.case for r in judged if not r.check]
    assert all(r.verdict() == "-" for r in quick_rows if not r.check)
    assert bench.status(quick_rows) == 0


def test_quick_benchmark_reports_no_negative_ratio(quick_rows):
    # a ratio whose per-iteration time came out <= 0 (noise, clock resolution) is not reported
    values = [(r.case, r.sizes, v) for r in quick_rows for v in (r.measured, r.cpu) if v is not None]
    assert values and all(v >= 0 for _, _, v in values), [x for x in values if x[2] < 0]


def test_quick_benchmark_output_fits_120_columns(quick_rows, capsys):
    bench.main(["--quick", "--only", "memory", "--reps", "1"])
    out = capsys.readouterr().out
    assert "rows are not judged" in " ".join(out.split()) and " NO " not in out
    wide = [line for line in out.splitlines() if len(line) > bench.WIDTH]
    assert not wide, f"{len(wide)} lines wider than {bench.WIDTH}: {wide[:2]}"
    assert len(bench._table(quick_rows).splitlines()) > len(quick_rows)  # notes on lines of their own
    assert max(len(line) for line in bench._table(quick_rows).splitlines()) <= bench.WIDTH


def test_ratio_of_a_time_at_or_below_zero_is_not_reported():
    from benchmarks.timing import _Times

    T = _Times(["one", "run", "masks"])
    # the K = 2 extra iterations took less than the noise: the run of 3 looks faster than the run of 1
    T.wall.update({"one": [1.0, 1.0, 1.0], "run": [0.9, 1.0, 0.95], "masks": [0.1] * 3})
    T.cpu.update({"one": [0.01] * 3, "run": [0.02] * 3, "masks": [0.0] * 3})  # cpu: 10 ms ticks, masks below
    it = T.per_iteration("one", "run", 2)
    assert T.median(it) < 0
    assert T.ratio("masks", it) == (None, None)
    assert T.ratio("run", "one") == (pytest.approx(0.95), pytest.approx(2.0))
    row = Row("sampling: masks / iteration", "n=1", None, "<= 0.1", bench.at_most(None, 0.1))
    assert row.met is None and row.verdict() == "-"


def test_exit_status_is_nonzero_only_when_a_judged_target_is_missed():
    ok = Row("floor: a", "n=1", 1.1, "<= 1.25", True)
    info = Row("floor: forms", "n=1", None, "", None)
    missed = Row("memory: b", "n=2", 3.0, "<= 1", False)
    assert bench.status([ok, info]) == 0
    assert bench.status([ok, info, missed]) == 1
    assert bench.status([]) == 0


def test_module_exit_status_follows_the_rows(tmp_path):
    # a full run whose memory target is missed must fail the command; one that meets it must not
    code = ("import sys, benchmarks\n"
            "from benchmarks import Row\n"
            "met = sys.argv[1] == 'met'\n"
            "benchmarks._RUNNERS['memory'] = lambda quick, reps: [Row('memory: x', 'n=1', 1.0, '<= 1', met)]\n"
            "sys.argv = ['benchmarks', '--only', 'memory', '--reps', '1']\n"
            "import runpy; runpy.run_module('benchmarks', run_name='__main__')\n")
    script = tmp_path / "run.py"
    script.write_text(code)
    root = str(Path(bench.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for arg, expected in (("met", 0), ("missed", 1)):
        proc = subprocess.run([sys.executable, str(script), arg], capture_output=True, text=True, check=False,
                              env=env)
        assert proc.returncode == expected, (arg, proc.stdout[-500:], proc.stderr[-500:])
        assert f"exit status {expected}" in proc.stdout


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
    assert text[0].split() == ["case", "sizes", "measured", "target", "met", "cpu"]
    assert len(text) == 2 + len(rows) + 1  # the header, its rule, a line per row and row a's note
    assert text[2].split()[-2:] == ["yes", "1.2"] and text[3] == "    note a"
    assert text[4].split()[-2:] == ["NO", "-"] and text[5].split()[-2:] == ["-", "-"]


def test_table_wraps_long_cells_and_notes_within_120_columns():
    long = Row("sampling: sparse data not densified (peak / dense size)", "N=50000 d=20000 n=100 density 5e-4",
               0.01, "< 0.1, data sparse", True, "word " * 80, cpu=0.02)
    text = bench._table([long], extra_col="OPENBLAS_* unset").splitlines()
    assert max(len(line) for line in text) <= bench.WIDTH
    assert sum(line.startswith("    word") for line in text) >= 3  # the note, wrapped below the row
    assert "densified" in "".join(text) and "5e-4" in "".join(text)  # the wrapped cells keep their words


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

"""History: equality, what a saved file records, save/load agreeing on the suffix, and the errors
for a file that is not a history."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import blockcd
from blockcd import History


@pytest.fixture(scope="module")
def problem():
    return blockcd.problems.synthetic(4, 15, 8, interpolating=True, cond=5, seed=1)


@pytest.fixture(scope="module")
def run(problem):
    return blockcd.run(problem, "ibcd", m=8, tau=2, iters=60, seed=3)


def test_equality_compares_every_field_exactly(problem, run):
    again = blockcd.run(problem, "ibcd", m=8, tau=2, iters=60, seed=3)
    assert run == again and (run != again) is False
    assert run != blockcd.run(problem, "ibcd", m=8, tau=2, iters=60, seed=4)   # other seed, other iterates
    changed = dataclasses.replace(again, dist2=again.dist2.copy())
    changed.dist2[-1] = np.nextafter(changed.dist2[-1], 1.0)                   # one ulp in one entry
    assert run != changed
    assert run != dataclasses.replace(again, step=float(np.nextafter(again.step, 1.0)))
    assert run != dataclasses.replace(again, x=again.x.astype(np.float32))      # same values, other dtype
    assert run != dataclasses.replace(again, steps=np.ones(60))                # None against an array
    assert (run == "ibcd") is False
    # NaN equals NaN in place (a non-convex history's dist2 and gap are NaN)
    nan = dataclasses.replace(again, gap=np.full_like(again.gap, np.nan))
    assert nan == dataclasses.replace(again, gap=np.full_like(again.gap, np.nan))
    with pytest.raises(TypeError):
        hash(run)


def test_the_saved_file_records_problem_iterations_version_and_seed(tmp_path, problem, run):
    assert run.problem == {"name": problem.name, "loss": "ridge", "N": problem.N, "n": 4, "d": 8,
                           "lam": problem.lam, "split": problem.split, "sparse": False, "reg": None,
                           "nonconvex": 0.0}
    assert run.iters_asked == 60 and run.version == blockcd.__version__ and run.seed == 3
    stopped = blockcd.run(problem, "ibcd", m=8, tau=2, iters=5000, seed=3, until=1e-3)
    assert stopped.iters < stopped.iters_asked == 5000
    path = run.save(tmp_path / "h.npz")
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
    assert meta["problem"] == run.problem and meta["iters_asked"] == 60 and meta["seed"] == 3
    assert meta["version"] == blockcd.__version__
    assert History.load(path) == run


def test_save_and_load_agree_on_the_suffix(tmp_path, run):
    (tmp_path / "out").mkdir()
    written = run.save(tmp_path / "out" / "x")
    assert written == tmp_path / "out" / "x.npz" and written.exists()
    assert History.load(tmp_path / "out" / "x") == run
    assert History.load(str(tmp_path / "out" / "x.npz")) == run


def test_a_file_of_an_older_version_loads_without_the_new_fields(tmp_path, run):
    meta = {k: getattr(run, k) for k in History._REQUIRED}
    np.savez(tmp_path / "old.npz", meta=np.array(json.dumps(meta)), dist2=run.dist2, gap=run.gap,
             blocks_up=run.blocks_up, bytes_up=run.bytes_up, bytes_down=run.bytes_down, x=run.x)
    old = History.load(tmp_path / "old.npz")
    assert old.problem is None and old.version is None and old.iters_asked is None
    assert np.array_equal(old.dist2, run.dist2)


@pytest.mark.parametrize("kind, words", [
    ("text", ["not a history file", "History.save"]),
    ("plain npz", ["no 'meta'", "['a']", "History.save"]),
    ("npy", ["holds one array", "History.save"]),
    ("bad meta", ["JSON header"]),
    ("meta without fields", ["lacks the fields", "method"]),
])
def test_a_file_that_is_not_a_history_is_named_with_what_was_expected(tmp_path, kind, words):
    path = tmp_path / ("f.npy" if kind == "npy" else "f.npz")
    if kind == "text":
        path.write_text("1 2 3\n")
    elif kind == "plain npz":
        np.savez(path, a=np.ones(3))
    elif kind == "npy":
        np.save(path, np.ones(3))
    elif kind == "bad meta":
        np.savez(path, meta=np.array("{not json"))
    else:
        np.savez(path, meta=np.array(json.dumps({"n": 1})))
    with pytest.raises(ValueError) as e:
        History.load(path)
    assert str(path) in str(e.value)
    for w in words:
        assert w in str(e.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nor .*nothere.npz"):
        History.load(tmp_path / "nothere")


def test_iters_to_never_counts_a_start_that_is_not_finite(run):
    """A history whose dist2[0] is inf (every entry inf) never reached a target: None, not 0; and
    compare_runs names no winner from it."""
    from blockcd.comparison import compare_runs

    bad = dataclasses.replace(run, dist2=np.full_like(run.dist2, np.inf), gap=np.full_like(run.gap, np.inf))
    assert bad.iters_to(0.5) is None
    assert run.iters_to(0.5) is not None
    c = compare_runs({"overflow": bad, "fine": run}, eps=0.5)
    assert c.results[0].iterations is None and c.winners["iterations"] == "fine"


def _rewrite(run, path, meta_change=None, **arrays):
    """``run`` saved to ``path`` with some meta fields and arrays replaced (a malformed history file)."""
    run.save(path)
    with np.load(path, allow_pickle=False) as z:
        content = {k: z[k] for k in z.files}
    meta = json.loads(str(content["meta"]))
    meta.update(meta_change or {})
    content.update(meta=np.array(json.dumps(meta)), **arrays)
    np.savez(path, **content)
    return path


@pytest.mark.parametrize("meta, arrays, words", [
    ({"n": "four"}, {}, "field 'n' must be an integer >= 1, got 'four'"),
    ({"tau": -3}, {}, "field 'tau' must be an integer >= 1, got -3"),
    ({"tau": 9}, {}, "field 'tau' must be at most m = 8"),
    ({"method": 42}, {}, "field 'method' must be a non-empty string, got 42"),
    ({"step": -1.0}, {}, "field 'step' must be a finite number > 0"),
    ({"seed": 1.5}, {}, "field 'seed' must be an integer >= 0"),
    ({"batch": "all"}, {}, "field 'batch' must be None or an integer >= 1"),
    ({"problem": [1, 2]}, {}, "field 'problem' must be None or a dict of plain values"),
    ({}, {"dist2": np.array(["a", "b"])}, "field 'dist2' must be an array of real numbers"),
    ({}, {"dist2": np.ones((61, 2))}, "field 'dist2' must be a 1-D array (shape (61, 2) read)"),
    ({}, {"dist2": np.ones(10)}, "field 'gap' must be of length 10 (the iterations recorded), not 61"),
    ({}, {"x": np.ones(3)}, "field 'x' must be of length 8 (d), not 3"),
    ({}, {"bytes_up_workers": np.ones(7)}, "field 'bytes_up_workers' must be of length 4 (n), not 7"),
])
def test_a_malformed_history_file_is_refused_naming_the_file_and_the_field(tmp_path, run, meta, arrays, words):
    """Each field checked on load: a file that parses but holds a wrong field used to load and be drawn."""
    path = _rewrite(run, tmp_path / "h.npz", meta, **arrays)
    with pytest.raises(ValueError) as e:
        History.load(path)
    assert str(path) in str(e.value) and words in str(e.value), str(e.value)


def test_a_truncated_or_corrupted_history_file_is_one_value_error_naming_it(tmp_path, run):
    """A cut file (an interrupted copy) used to raise a bare BadZipFile without the file's name."""
    full = run.save(tmp_path / "full.npz").read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(full[: len(full) // 2])
    flipped = tmp_path / "flipped.npz"
    flipped.write_bytes(full[:200] + bytes(b ^ 0xFF for b in full[200:400]) + full[400:])
    for path in (cut, flipped):
        with pytest.raises(ValueError, match=rf"{path.name}' is not a history file"):
            History.load(path)


def test_a_deeply_nested_meta_and_a_text_file_give_clear_errors(tmp_path):
    """A meta of 100,000 nested lists used to raise RecursionError; a text file, numpy's advice to load
    with allow_pickle (unsafe, and wrong here): neither is repeated."""
    deep = tmp_path / "deep.npz"
    np.savez(deep, meta=np.array("[" * 100_000 + "]" * 100_000))
    with pytest.raises(ValueError, match="deep.npz' is not a history file: its 'meta' is not the JSON header"):
        History.load(deep)
    text = tmp_path / "t.npz"
    text.write_text("method,n\nibcd,4\n")
    with pytest.raises(ValueError) as e:
        History.load(text)
    assert "t.npz' is not a history file" in str(e.value) and "allow_pickle" not in str(e.value)

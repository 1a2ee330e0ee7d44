"""blockcd.comparison.compare_runs: iterations and bytes to an accuracy, final error, who wins."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import blockcd
from blockcd.comparison import compare_runs


@pytest.fixture(scope="module")
def runs():
    p = blockcd.problems.synthetic(4, 20, 12, interpolating=True, cond=5, seed=0)
    return [blockcd.run(p, "ibcd", m=12, tau=t, iters=600, seed=0) for t in (3, 12)]


def test_rows_are_what_each_history_recorded(runs):
    c = compare_runs(runs, eps=1e-8)
    for r, h in zip(c.results, runs):
        k = h.iters_to(1e-8)
        assert k is not None and r.iterations == k
        assert r.bytes == h.bytes_up[k] and r.blocks == h.blocks_up[k] == k * h.tau
        assert r.final == h.dist2[-1] / h.dist2[0] and r.recorded == 600
    assert [r.name for r in c.results] == ["IBCD, τ = 3", "IBCD, τ = 12"]


def test_winners_are_the_minima(runs):
    c = compare_runs(runs, eps=1e-8)
    sparse, dense = c.results
    # tau = m (gradient descent) needs fewer iterations; tau = m/n sends fewer bytes to get there
    assert dense.iterations < sparse.iterations and sparse.bytes < dense.bytes
    assert c.winners["iterations"] == dense.name and c.winners["bytes"] == sparse.name
    assert c.winners["final"] == min(c.results, key=lambda r: r.final).name
    text = c.table()
    assert f"fewest bytes to 1e-08: {sparse.name}" in text and str(sparse.iterations) in text
    assert str(c) == text


def test_a_run_that_does_not_reach_the_accuracy(runs):
    short = blockcd.run(blockcd.problems.synthetic(4, 20, 12, interpolating=True, cond=5, seed=0), "ibcd",
                        m=12, tau=3, iters=5, seed=0)
    c = compare_runs({"short": short, "long": runs[0]}, eps=1e-8)
    assert c.result("short").iterations is None and c.result("short").bytes is None
    assert c.winners["bytes"] == "long" and "not reached" in c.table()
    alone = compare_runs([short], eps=1e-8)
    assert alone.winners["bytes"] is None and "no run reached it" in alone.table()
    with pytest.raises(KeyError, match="short"):
        c.result("nobody")


def test_plot_draws_both_panels_with_the_accuracy(runs):
    c = compare_runs(runs, eps=1e-8)
    try:
        a, b = c.plot()
        assert len(a.lines) == len(b.lines) == 3        # two runs and the accuracy
        assert np.array_equal(b.lines[0].get_xdata(), runs[0].bytes_up[: len(b.lines[0].get_xdata())])
        assert a.lines[2].get_ydata()[0] == 1e-8
    finally:
        plt.close("all")


@pytest.mark.parametrize("args, kwargs, error, words", [
    ((), {"eps": 0}, ValueError, "eps"),
    ((), {"eps": 1.5}, ValueError, "eps must be in (0, 1)"),
    ((), {"y": "loss"}, ValueError, "y must be one of"),
    ((), {"y": "grad2"}, ValueError, "no grad2"),
    ((), {"names": ["a"]}, ValueError, "names must be 2 strings"),
    ((), {"names": ["a", "a"]}, ValueError, "names must differ"),
])
def test_arguments_are_checked(runs, args, kwargs, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        compare_runs(runs, *args, **kwargs)
    with pytest.raises(TypeError, match="histories"):
        compare_runs([])
    with pytest.raises(TypeError, match=r"histories\[0\]"):
        compare_runs([1])


def test_the_compressors_moved_and_the_old_name_is_gone():
    from pathlib import Path

    from blockcd import compressors

    assert callable(compressors.top_k) and callable(compressors.iterations_over_workers)
    # no chapter imports blockcd.compare any more, so the old name is not kept
    assert not (Path(blockcd.__file__).parent / "compare.py").exists()

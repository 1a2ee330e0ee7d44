"""Rules that choose their own blocks (``own_blocks``): top-k with error feedback, counted from what it sent.

The worked example is :class:`blockcd.topk.TopKErrorFeedback`.  Checked here: it converges on a small
least-squares problem, sends exactly k = tau blocks per worker and round, the history counts the bytes
of the blocks it chose (and their indices), the engines draw no blocks for it, and the simulator and
the per-worker reference give the same run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import blockcd
from blockcd import problems, reference, registry, rules, topk
from blockcd.blocks import BlockSampler
from blockcd.messages import Selection, Sent, chosen_mask

#: the simulator and the reference add the same numbers in different orders: a few units of rounding
#: per step, far below this (the bound every method's comparison uses, chapters 4-7)
RTOL = 1e-12


class Recorded(topk.TopKErrorFeedback):
    """Top-k EF that keeps, per call of ``send``, the (n, m) or (m,) mask of the blocks it chose."""

    name = "topk-ef-recorded"

    def __init__(self):
        self.masks = []

    def send(self, o, w, x, idx, sel):
        out = super().send(o, w, x, idx, sel)
        self.masks.append(sel.mask.copy() if isinstance(sel, Sent) else chosen_mask(sel.chosen, sel.blocks.m))
        return out


class Threshold(topk.TopKErrorFeedback):
    """Error feedback that sends every block whose squared norm is at least the mean: as many blocks as the
    data say, a different number per worker (the variable-count path of the protocol).  Keeps the (n, m)
    masks it chose in the simulator (``masks``)."""

    name = "threshold-ef"

    def __init__(self):
        self.masks = []

    def send(self, o, w, x, idx, sel):
        g, fx = sel.grads(o, x)
        u = g + w.e
        norms = sel.block_norms2(u)
        sel.choose(norms >= norms.mean(axis=-1, keepdims=True))
        w.e = np.where(sel.sent_mask(u.shape), 0.0, u)
        if isinstance(sel, Sent):
            self.masks.append(sel.mask.copy())
        return sel.send(u), fx


class StochasticTopK(topk.TopKErrorFeedback):
    """Top-k with error feedback on each worker's b-minibatch gradient (the rows ``idx`` the engine draws)."""

    name = "topk-ef-sgd"

    def send(self, o, w, x, idx, sel):
        u = sel.minibatch_grads(o, x, idx) + w.e
        sel.choose(np.argsort(-sel.block_norms2(u), axis=-1, kind="stable")[..., : sel.tau])
        w.e = np.where(sel.sent_mask(u.shape), 0.0, u)
        return sel.send(u), None


class Forgets(rules.IBCD):
    """A rule that says it chooses its blocks and never does."""

    name = "forgets"
    own_blocks = True


@pytest.fixture
def register(monkeypatch):
    """Enter rules in the registry for one test only (the table is restored afterwards)."""
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    monkeypatch.setattr(registry, "METHODS", registry.METHODS)

    def enter(rule, **options):
        if hasattr(registry, "register"):
            registry.register(rule.name, rule, **options)
        else:  # a library without register(): entered as the library's own methods are
            registry.REGISTRY[rule.name] = registry.Method(rule.name, rule.name, rule, **options)
            registry.METHODS = tuple(registry.REGISTRY)
        return rule.name

    return enter


@pytest.fixture(scope="module")
def problem():
    # d = 23 over m = 10 blocks: sizes 3, 3, 3, 2, ..., so the bytes depend on which blocks are sent;
    # interpolating: every f_i is minimised at x*, so error feedback converges linearly
    return problems.synthetic(4, 30, 23, interpolating=True, cond=3, seed=1)


def _kw(p, **kw):
    return dict({"m": 10, "tau": 2, "step": 0.5 / p.L, "iters": 400, "until": 1e-14, "seed": 0}, **kw)


def test_topk_ef_converges_sending_exactly_k_blocks_counted_from_what_it_sent(problem, register):
    rule = Recorded()
    h = blockcd.run(problem, register(rule), **_kw(problem))
    k = h.iters
    assert h.dist2[-1] <= 1e-14 * h.dist2[0] and k < 400, (k, h.dist2[-1] / h.dist2[0])
    masks = np.array(rule.masks[:k])                      # (k, n, m): what each worker sent each round
    assert masks.shape == (k, 4, 10)
    np.testing.assert_array_equal(masks.sum(axis=2), 2)   # exactly k = tau = 2 blocks per worker and round
    assert len({m.tobytes() for m in masks}) > k // 2     # the choice follows the data, round after round
    np.testing.assert_array_equal(h.blocks_up, 2.0 * np.arange(k + 1))
    sizes = blockcd.blocks.partition(23, 10).sizes
    index = math.ceil(2 * math.ceil(math.log2(10)) / 8)  # two 4-bit indices: 1 byte per worker and round
    per_worker = 8 * (masks @ sizes) + index              # (k, n) bytes of the chosen blocks, plus their indices
    assert len(np.unique(per_worker)) > 1                 # uneven blocks: the bytes depend on the choice
    np.testing.assert_allclose(np.diff(h.bytes_up), per_worker.mean(axis=1), rtol=1e-15)
    np.testing.assert_array_equal(h.bytes_up_workers, per_worker.sum(axis=0))


def test_topk_ef_simulator_and_reference_agree(problem, register):
    name = register(topk.TopKErrorFeedback())
    h = blockcd.run(problem, name, **_kw(problem))
    r = reference.run(problem, name, **_kw(problem))
    assert h.iters == r.iters and h.iters < 400
    assert np.max(np.abs(h.dist2 - r.dist2)) <= RTOL * h.dist2[0]
    assert np.max(np.abs(h.gap - r.gap)) <= RTOL * h.gap[0]
    assert np.linalg.norm(h.x - r.x) <= RTOL * np.linalg.norm(h.x)
    for field in ("blocks_up", "bytes_up", "bytes_up_workers", "bytes_down"):
        np.testing.assert_array_equal(getattr(h, field), getattr(r, field), err_msg=field)


def test_no_block_is_drawn_for_a_rule_that_chooses_its_own(problem, register, monkeypatch):
    name = register(topk.TopKErrorFeedback())

    def refuse(*args, **kwargs):
        raise AssertionError("a sampler was asked for blocks")

    for method in ("masks", "masks_ahead", "choices", "worker_blocks"):
        monkeypatch.setattr(BlockSampler, method, refuse)
    for engine in (blockcd.run, reference.run):
        h = engine(problem, name, **_kw(problem, iters=20, until=None))
        assert h.iters == 20


def test_topk_ef_with_every_block_is_gradient_descent(problem, register):
    name = register(topk.TopKErrorFeedback())
    kw = {"m": 10, "tau": 10, "step": 0.5 / problem.L, "iters": 60, "seed": 0}
    h, g = blockcd.run(problem, name, **kw), blockcd.run(problem, "ibcd", **kw)
    assert np.max(np.abs(h.dist2 - g.dist2)) <= RTOL * g.dist2[0]
    np.testing.assert_array_equal(h.bytes_up, g.bytes_up)      # all d values, no index
    np.testing.assert_array_equal(h.blocks_up, g.blocks_up)


def test_a_variable_number_of_blocks_is_counted_per_worker(problem, register):
    rule = Threshold()
    name = register(rule)
    h = blockcd.run(problem, name, **_kw(problem, iters=60, until=None))
    r = reference.run(problem, name, **_kw(problem, iters=60, until=None))
    for field in ("blocks_up", "bytes_up", "bytes_up_workers"):
        np.testing.assert_array_equal(getattr(h, field), getattr(r, field), err_msg=field)
    assert np.max(np.abs(h.dist2 - r.dist2)) <= RTOL * h.dist2[0]
    masks = np.array(rule.masks)                          # (60, n, m): the simulator's choices
    c = masks.sum(axis=2)
    assert len(np.unique(c)) > 1                          # the workers send different numbers of blocks
    np.testing.assert_allclose(np.diff(h.blocks_up), c.mean(axis=1), rtol=1e-15)
    sizes = blockcd.blocks.partition(23, 10).sizes
    index = np.where((c > 0) & (c < 10), np.ceil(c * 4 / 8), 0)   # c indices of 4 bits, whole bytes
    np.testing.assert_array_equal(h.bytes_up_workers, (8 * (masks @ sizes) + index).sum(axis=0))


def test_a_rule_that_does_not_choose_is_refused(problem, register):
    name = register(Forgets())
    for engine in (blockcd.run, reference.run):
        with pytest.raises(RuntimeError, match="did not call sel.choose"):
            engine(problem, name, m=10, tau=2, step=0.01, iters=3)


def test_choose_checks_its_argument():
    blocks = blockcd.blocks.partition(23, 10)
    with pytest.raises(TypeError, match="own_blocks = True"):
        Selection(None).choose(np.array([1]))             # blocks drawn by the engine: nothing to choose
    sel = Selection.own(blocks, 2)
    with pytest.raises(ValueError, match=r"in \[0, 9\]"):
        sel.choose(np.array([3, 10]))
    with pytest.raises(ValueError, match="repeat"):
        sel.choose(np.array([3, 3]))
    with pytest.raises(TypeError, match="integers"):
        sel.choose(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="shape"):
        sel.choose(np.zeros(9, dtype=bool))
    sel.choose(np.array([7, 0]))
    np.testing.assert_array_equal(sel.chosen, [0, 7])     # kept sorted, as the wire sends them
    np.testing.assert_array_equal(sel.coords, [0, 1, 2, 17, 18])
    with pytest.raises(ValueError, match="already chosen"):
        sel.choose(np.array([1]))
    every = Sent.own(blocks, 3, 2)
    with pytest.raises(ValueError, match=r"\(3, c\)"):
        every.choose(np.array([1, 2]))
    every.choose(np.array([[0, 1], [2, 9], [9, 4]]))
    assert every.mask.sum() == 6 and every.mask[1, 9] and every.mask[2, 4]


def test_the_api_reference_example_runs_and_its_code_is_the_rule(problem, register):
    """The docstring of TopKErrorFeedback: its examples print what they say, and the rule as a user would
    write it (its literal block) runs the same numbers as the library's class."""
    import doctest
    import textwrap

    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = doctest.DocTestFinder().find(topk.TopKErrorFeedback, "TopKErrorFeedback", globs={})
    for t in tests:
        runner.run(t)
    assert runner.tries >= 4 and runner.failures == 0, runner.summarize()
    doc = topk.TopKErrorFeedback.__doc__
    start = doc.index("::\n") + 3
    block = textwrap.dedent(doc[start:doc.index("\n    Run it by")])
    namespace = {}
    exec(compile(block, "TopKErrorFeedback's docstring", "exec"), namespace)  # noqa: S102
    written = namespace["TopKErrorFeedback"]
    assert written is not topk.TopKErrorFeedback and written.own_blocks
    written.name = "topk-ef-as-written"
    kw = _kw(problem)
    mine, theirs = blockcd.run(problem, register(written()), **kw), blockcd.run(problem, "topk-ef", **kw)
    mine.method = theirs.method
    assert mine == theirs


def test_the_asynchronous_engine_refuses_a_rule_that_chooses_its_blocks(problem, monkeypatch):
    rule = topk.TopKErrorFeedback()
    table = dict(registry.REGISTRY)
    table["topk-async"] = registry.Method("topk-async", "top-k, asynchronous", rule, samplings=("independent",),
                                          asynchronous=True)
    monkeypatch.setattr(registry, "REGISTRY", table)
    monkeypatch.setattr(registry, "METHODS", tuple(table))
    with pytest.raises(ValueError, match="regenerates every message's blocks"):
        blockcd.run(problem, "topk-async", m=10, tau=2, step=0.01, iters=5)


def test_minibatches_with_own_blocks_agree_between_engines(problem, register):
    """The engine still draws the rows (idx) of a minibatch method that chooses its own blocks."""
    name = register(StochasticTopK(), minibatch=True)
    kw = _kw(problem, iters=60, until=None, batch=2, step=0.2 / problem.L)
    h, r = blockcd.run(problem, name, **kw), reference.run(problem, name, **kw)
    assert h.batch == 2 and h.dist2[-1] < 0.1 * h.dist2[0]
    assert np.max(np.abs(h.dist2 - r.dist2)) <= RTOL * h.dist2[0]
    for field in ("blocks_up", "bytes_up", "bytes_up_workers"):
        np.testing.assert_array_equal(getattr(h, field), getattr(r, field), err_msg=field)
    other = blockcd.run(problem, name, **dict(kw, seed=1))   # other rows, other blocks, other numbers
    assert not np.array_equal(other.x, h.x)

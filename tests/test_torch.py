"""blockcd.torch: the DDP hook against the library's sparsifier, its statistics, its bytes and its failures.

Skipped without torch (``pip install -e ".[torch]"``), except when
``BLOCKCD_REQUIRE_TORCH=1`` (set by ``.ci/run``), where a missing torch fails.
Every job runs in Gloo processes on 127.0.0.1 started by
:func:`blockcd.torch.spawn`, which stops them all when the job ends, fails or
outlives its wall-clock guard.  Starting ranks costs seconds (each imports
torch), so one 3-rank job computes what most tests compare, once per session.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import assert_mc, mean_se

if os.environ.get("BLOCKCD_REQUIRE_TORCH") == "1":
    import torch
else:
    pytest.importorskip("torch", reason='torch is not installed (pip install -e ".[torch]")')

import torch
import torch.distributed as dist

import blockcd
from blockcd import theory
from blockcd.blocks import PURPOSE_DDP, CounterStream
from blockcd.torch import RankFailed, SparsificationState, allgather_bytes, allreduce_bytes, spawn

N_RANKS = 3
#: buckets of uneven block sizes: 23 = 3+3+3+3+3+3+3+2 and 19 = 3+3+3+2+2+2+2+2 over m = 8
SIZES = (23, 19)
M, TAU, SEED = 8, 2, 5
#: Monte-Carlo draws per configuration (a few seconds of 3-rank all-gathers)
T = 800
CASES = [("independent", False), ("shared", False), ("independent", True), ("shared", True)]


def _grad(rank: int, step: int, bucket: int, size: int) -> np.ndarray:
    """The gradient rank ``rank`` feeds the hook (a fixed function of its arguments)."""
    return np.random.default_rng([rank, step, bucket]).standard_normal(size)


def _mc_grads(n: int, same: bool) -> np.ndarray:
    base = np.random.default_rng(99).standard_normal(SIZES[0]) + 0.5
    noise = np.random.default_rng(98).standard_normal((n, SIZES[0]))
    return np.tile(base, (n, 1)) if same else base + 0.7 * noise


class _Recorder:
    """Wraps torch.distributed's collectives to record the buffers the hook hands them."""

    def __init__(self):
        self.calls = []
        self._gather, self._reduce = dist.all_gather, dist.all_reduce

    def gather(self, outs, tensor, *args, **kw):
        self.calls.append(("gather", tensor.numel() * tensor.element_size(),
                           [o.numel() * o.element_size() for o in outs]))
        return self._gather(outs, tensor, *args, **kw)

    def reduce(self, tensor, *args, **kw):
        self.calls.append(("reduce", tensor.numel() * tensor.element_size(), None))
        return self._reduce(tensor, *args, **kw)

    def __enter__(self):
        dist.all_gather, dist.all_reduce = self.gather, self.reduce
        return self

    def __exit__(self, *exc):
        dist.all_gather, dist.all_reduce = self._gather, self._reduce


def _ddp_params(tau, steps, n):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    net = torch.nn.parallel.DistributedDataParallel(model)
    if tau is not None:
        from blockcd.torch import sparsify_hook

        net.register_comm_hook(SparsificationState(m=10, tau=tau), sparsify_hook)
    opt = torch.optim.SGD(net.parameters(), lr=0.3)
    gen = torch.Generator().manual_seed(dist.get_rank())
    x, y = torch.randn(20, 5, generator=gen), torch.randint(0, 3, (20,), generator=gen)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()


def _job(rank: int, n: int) -> dict:
    """Everything the module compares, computed on every rank of one job."""
    out = {"exact": {}, "mc": {}, "calls": {}, "bytes": {}}
    for sampling, shifts in CASES:
        state = SparsificationState(m=M, tau=TAU, seed=SEED, sampling=sampling, shifts=shifts)
        results = []
        with _Recorder() as rec:
            for k in range(4):
                for b, size in enumerate(SIZES):
                    g = torch.from_numpy(_grad(rank, k, b, size))
                    results.append(state.reduce(g, b, last=b == len(SIZES) - 1).wait().numpy().copy())
        out["exact"][sampling, shifts] = results
        out["calls"][sampling, shifts] = rec.calls
        out["bytes"][sampling, shifts] = (state.bytes_sent, state.bytes_received, state.dense_bytes, state.step)
    for sampling in ("independent", "shared"):
        for same in (False, True):
            state = SparsificationState(m=M, tau=TAU, seed=SEED + 1, sampling=sampling)
            g = _mc_grads(n, same)[rank]
            draws = np.stack([state.reduce(torch.from_numpy(g.copy())).wait().numpy() for _ in range(T)])
            out["mc"][sampling, same] = draws if rank == 0 else None
    out["ddp"] = (_ddp_params(None, 4, n), _ddp_params(10, 4, n), _ddp_params(4, 4, n))
    return out


@pytest.fixture(scope="module")
def job():
    return spawn(_job, N_RANKS, timeout=300)


def _uniforms(bucket: int, step: int, rows: int) -> np.random.Generator:
    """A numpy Generator positioned where the hook's stream draws bucket ``bucket`` at ``step``."""
    stream = CounterStream(SEED, (PURPOSE_DDP, bucket), rows, M)
    bg = np.random.Philox(key=stream.key)
    bg.advance(step * rows * stream.q)
    return np.random.Generator(bg)


# ------------------------------------------------------------------ the average
@pytest.mark.parametrize("sampling", ["independent", "shared"])
def test_hook_average_equals_blockcd_sparsified_mean(job, sampling):
    """Same uniforms (m = 8: one row of the stream is exactly blockcd.sparsify's draw), same average."""
    rows = N_RANKS if sampling == "independent" else 1
    for rank in range(N_RANKS):
        results = job[rank]["exact"][sampling, False]
        for k in range(4):
            for b, size in enumerate(SIZES):
                G = np.stack([_grad(i, k, b, size) for i in range(N_RANKS)])
                expected = blockcd.sparsify(G, M, TAU, rng=_uniforms(b, k, rows), sampling=sampling).mean(axis=0)
                np.testing.assert_allclose(results[2 * k + b], expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sampling", ["independent", "shared"])
def test_shifts_follow_isega(job, sampling):
    """h-bar + (m/(tau n)) sum_j P_j(g_j - h_j), then h_j += P_j(g_j - h_j), written out in numpy."""
    rows = N_RANKS if sampling == "independent" else 1
    blocks = {b: blockcd.partition(size, M) for b, size in enumerate(SIZES)}
    h = {b: np.zeros((N_RANKS, size)) for b, size in enumerate(SIZES)}
    for k in range(4):
        for b, size in enumerate(SIZES):
            from blockcd.blocks import nice_mask

            mask = nice_mask(_uniforms(b, k, rows).random((rows, M)), TAU)
            P = np.broadcast_to(blocks[b].expand(mask), (N_RANKS, size))
            G = np.stack([_grad(i, k, b, size) for i in range(N_RANKS)])
            D = np.where(P, G - h[b], 0.0)
            expected = h[b].mean(axis=0) + M / (TAU * N_RANKS) * D.sum(axis=0)
            h[b] = h[b] + D
            for rank in range(N_RANKS):
                np.testing.assert_allclose(job[rank]["exact"][sampling, True][2 * k + b], expected,
                                           rtol=1e-12, atol=1e-13)


def test_every_rank_returns_the_same_average(job):
    for case in CASES:
        for rank in range(1, N_RANKS):
            for a, b in zip(job[0]["exact"][case], job[rank]["exact"][case]):
                np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ statistics (fixed seed, SE tolerances)
@pytest.mark.parametrize("sampling", ["independent", "shared"])
def test_unbiased(job, sampling):
    """Mean of T = 800 draws within Z = 4.5 standard errors (std / sqrt T, per coordinate) of the mean gradient."""
    draws = job[0]["mc"][sampling, False]
    est, se = mean_se(draws)
    assert_mc(est, se, _mc_grads(N_RANKS, False).mean(axis=0), what=f"{sampling} mean")


@pytest.mark.parametrize("sampling", ["independent", "shared"])
@pytest.mark.parametrize("same", [False, True])
def test_variance_matches_key_lemma(job, sampling, same):
    """E||G - gbar||^2 = (omega/n) mean_i ||g_i||^2 (independent), omega ||gbar||^2 (shared), within 4.5 SE."""
    G = _mc_grads(N_RANKS, same)
    sq = np.sum((job[0]["mc"][sampling, same] - G.mean(axis=0)) ** 2, axis=1)
    est, se = mean_se(sq)
    assert_mc(est, se, theory.aggregation_variance(G, M, TAU, sampling), what=f"{sampling} variance")


def test_shared_over_independent_variance_is_n(job):
    """Identical gradients on every rank: the lemma's ratio is exactly n.

    The ratio of two independent Monte-Carlo means has, by the delta method, the
    relative standard error sqrt((se_s/v_s)^2 + (se_i/v_i)^2); allowed: 4.5 of them.
    """
    G = _mc_grads(N_RANKS, True)
    v = {}
    for sampling in ("independent", "shared"):
        v[sampling] = mean_se(np.sum((job[0]["mc"][sampling, True] - G.mean(axis=0)) ** 2, axis=1))
    (vi, si), (vs, ss) = v["independent"], v["shared"]
    ratio = vs / vi
    rel_se = np.hypot(ss / vs, si / vi)
    assert abs(ratio - N_RANKS) <= 4.5 * rel_se * ratio, (ratio, N_RANKS, rel_se)


# ------------------------------------------------------------------ tau = m is DDP
def test_tau_equal_m_is_plain_ddp_bit_for_bit(job):
    for rank in range(N_RANKS):
        plain, hooked, sparse = job[rank]["ddp"]
        np.testing.assert_array_equal(plain, hooked)
        assert not np.array_equal(plain, sparse)  # the sparse run differs: the comparison can fail


# ------------------------------------------------------------------ bytes
@pytest.mark.parametrize("case", CASES)
def test_bytes_counted_equal_bytes_handed_to_the_collectives(job, case):
    """Sent: (n-1) copies of the rank's gathered buffer, or 2(n-1)/n of an all-reduced one; received alike."""
    n = N_RANKS
    for rank in range(n):
        sent, received, dense, steps = job[rank]["bytes"][case]
        calls = job[rank]["calls"][case]
        assert steps == 4 and len(calls) == 4 * len(SIZES)
        exp_sent, exp_recv = [], []
        for k in range(4):
            s = r = 0.0
            for kind, nbytes, outs in calls[2 * k: 2 * k + 2]:
                if kind == "gather":
                    s += (n - 1) * nbytes
                    r += sum(outs) - outs[rank]
                else:
                    s += 2 * (n - 1) / n * nbytes
                    r += 2 * (n - 1) / n * nbytes
            exp_sent.append(s)
            exp_recv.append(r)
        np.testing.assert_allclose(sent, exp_sent, rtol=1e-15)
        np.testing.assert_allclose(received, exp_recv, rtol=1e-15)
        np.testing.assert_allclose(dense, [allreduce_bytes(sum(SIZES), n, 8)] * 4, rtol=1e-15)


def test_message_size_is_tau_largest_blocks():
    """No indices travel: a rank's message is tau blocks of the largest block size, 8 bytes per float64."""
    assert allgather_bytes(TAU * 3, N_RANKS, 8) == (N_RANKS - 1) * TAU * 3 * 8
    assert allreduce_bytes(10, 1, 4) == 0.0


# ------------------------------------------------------------------ arguments
@pytest.mark.parametrize("kw, exc, words", [
    ({"m": 8, "tau": 0}, ValueError, "tau must be an integer in [1, 8]"),
    ({"m": 8, "tau": 9}, ValueError, "tau must be an integer in [1, 8]"),
    ({"m": 0, "tau": 1}, ValueError, "m must be an integer in [1, inf]"),
    ({"m": 8.0, "tau": 2}, TypeError, "m must be an integer"),
    ({"m": 8, "tau": "2"}, TypeError, "tau must be an integer"),
    ({"m": 8, "tau": 2, "sampling": "random-k"}, ValueError, "sampling must be one of"),
    ({"m": 8, "tau": 2, "sampling": None}, TypeError, "sampling must be a string"),
    ({"m": 8, "tau": 2, "seed": -1}, ValueError, "seed must be an integer in [0,"),
    ({"m": 8, "tau": 2, "shifts": "yes"}, TypeError, "shifts must be True or False"),
])
def test_bad_arguments_rejected(kw, exc, words):
    with pytest.raises(exc) as info:
        SparsificationState(**kw)
    assert words in str(info.value)


def test_bad_process_group_rejected():
    with pytest.raises(TypeError, match="process_group must be a torch.distributed.ProcessGroup"):
        SparsificationState("world", m=4, tau=1)


@pytest.fixture
def one_rank_group():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_bucket_smaller_than_m_rejected(one_rank_group):
    state = SparsificationState(m=8, tau=2)
    with pytest.raises(ValueError, match=r"m must be at most the bucket's size: bucket 0 holds 5 values.*1 <= m <= 5"):
        state.reduce(torch.zeros(5))


def test_non_float_bucket_rejected(one_rank_group):
    with pytest.raises(TypeError, match="floating-point"):
        SparsificationState(m=2, tau=1).reduce(torch.zeros(5, dtype=torch.int64))


def test_one_rank_is_identity_in_expectation_free_case(one_rank_group):
    """n = 1, tau = m: the average is the gradient itself, and nothing is sent."""
    state = SparsificationState(m=4, tau=4)
    g = torch.arange(9.0)
    assert torch.equal(state.reduce(g.clone()).wait(), g)
    assert state.bytes_sent == [0.0] and state.step == 1


# ------------------------------------------------------------------ failures end the job
def _raise_on_rank_1(rank, n):
    if rank == 1:
        raise RuntimeError("injected failure")
    dist.barrier()  # rank 0 waits for rank 1, which never comes
    return rank


def _sleep(rank, n):
    time.sleep(600)


def test_failing_rank_ends_the_job_with_its_name():
    t0 = time.monotonic()
    with pytest.raises(RankFailed, match="rank 1 failed first.*: RuntimeError: injected failure"):
        spawn(_raise_on_rank_1, 2, timeout=120, gloo_timeout=20)
    assert time.monotonic() - t0 < 120


def test_stalled_job_is_killed_at_the_guard():
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="ran longer than 6 s"):
        spawn(_sleep, 2, timeout=6)
    assert time.monotonic() - t0 < 30


# ------------------------------------------------------------------ the training command
def test_training_command_spawned_and_under_torchrun(tmp_path):
    """Same seed, same numbers: the command's own spawn and torchrun give the same CSV."""
    args = ["-m", "blockcd.torch.train", "--methods", "dense,independent", "--steps", "3", "--blocks", "16"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    a = subprocess.run([sys.executable, *args, "--ranks", "2", "--out", str(tmp_path / "a.csv")],
                       capture_output=True, text=True, timeout=300, env=env, check=False)
    assert a.returncode == 0, a.stderr
    b = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "2", *args, "--out", str(tmp_path / "b.csv")],
                       capture_output=True, text=True, timeout=300, env=dict(env, GLOO_SOCKET_IFNAME="lo"), check=False)
    assert b.returncode == 0, b.stderr
    rows = lambda p: [line.rsplit(",", 1)[0] for line in p.read_text().splitlines()]
    assert rows(tmp_path / "a.csv") == rows(tmp_path / "b.csv")
    assert len(rows(tmp_path / "a.csv")) == 1 + 2 * 4


def test_training_command_rejects_bad_arguments(tmp_path):
    p = subprocess.run([sys.executable, "-m", "blockcd.torch.train", "--tau", "99", "--m", "8",
                        "--out", str(tmp_path / "x.csv")], capture_output=True, text=True, timeout=120,
                       check=False)
    assert p.returncode == 2 and "tau must be an integer in [1, 8]" in p.stderr

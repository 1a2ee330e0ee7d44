"""blockcd.mpi: real MPI runs against the simulator, message counts, faults and bad arguments.

Every test that launches a job calls ``mpiexec`` (from the ``mpich`` wheel in
requirements.txt).  None is skipped when MPI is missing: the suite fails with
the command that installs it.  Jobs run under a wall-clock guard (the
``timeout`` of :func:`blockcd.mpi.launch`) so a hang fails instead of blocking;
that guard is a safety net, not a timing assertion.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

import blockcd
from blockcd import mpi, theory
from blockcd.blocks import BernoulliSampler, BlockSampler, partition

#: wall-clock guard of one job (seconds); jobs take a few seconds on a loaded 2-core machine
GUARD = 300.0
#: iterates agree up to the order of floating-point sums (1e-16 per operation, amplified by
#: at most the few dozen iterations run here): the issue's bound
RTOL = 1e-10

BASE = {"problem": "synthetic", "rows_per_worker": 20, "d": 13, "heterogeneity": 0.5, "data_seed": 3}
INTERP = {"problem": "synthetic", "rows_per_worker": 20, "d": 12, "interpolating": True, "cond": 5,
          "data_seed": 1}
#: one case per method (d = 13 over m = 5 blocks: uneven block sizes 3,3,3,2,2)
METHOD_CASES = {
    "ibcd": dict(BASE, method="ibcd", m=5, tau=2, iters=30, seed=7),
    "dense": dict(BASE, method="dense", m=5, tau=5, iters=30, seed=7),
    "is-sgd": dict(BASE, method="is-sgd", m=5, tau=2, iters=30, seed=7),
    "isega": dict(BASE, method="isega", m=5, tau=2, iters=30, seed=7),
    "is-saga": dict(BASE, method="is-saga", m=5, tau=2, batch=2, iters=30, seed=7),
    "is-asgd": dict(INTERP, method="is-asgd", m=6, tau=2, iters=30, seed=7),
    "ibgd": dict(BASE, method="ibgd", m=5, tau=2, iters=30, seed=7),
    "isaga-local": dict(BASE, method="isaga-local", m=5, tau=2, batch=2, step=0.02, iters=30, seed=7),
    # shared data: every rank reads all N = 20 n rows; the master keeps each worker's blocks apart
    "isaga-shared": dict(BASE, split="shared", method="isaga-shared", m=5, tau=2, iters=30, seed=7),
}


@pytest.fixture(scope="session", autouse=True)
def _mpi_installed():
    """Fail (not skip) with the install command when MPI is missing: CI installs it from requirements.txt."""
    try:
        mpi.mpiexec(2)
        import mpi4py  # noqa: F401
    except (FileNotFoundError, ImportError) as exc:
        pytest.fail(f"MPI is not installed ({exc}); run: python -m pip install -r requirements.txt", pytrace=False)


_RUNS: dict = {}


def _run(tmp_path_factory, ranks: int, case: dict, key: str):
    """Launch one job (cached per session) and return (History, Measurements, the problem, case)."""
    if (key, ranks) not in _RUNS:
        out = tmp_path_factory.mktemp("mpi") / f"{key}-{ranks}.npz"
        proc = mpi.launch(ranks, wait=GUARD, check=False, out=out, quiet=True, **case)
        assert proc.returncode == 0, f"job failed ({proc.returncode}):\n{proc.stderr}"
        options = {k: v for k, v in case.items() if k in mpi.PROBLEMS[case["problem"]]}
        problem = mpi.build_problem(case["problem"], ranks - 1, **options)
        _RUNS[key, ranks] = (blockcd.History.load(out), mpi.load_measurements(out), problem, case)
    return _RUNS[key, ranks]


def _simulate(problem, case: dict, x0=None) -> blockcd.History:
    kw = {k: case[k] for k in ("m", "tau", "iters", "seed", "step", "sampling", "batch", "send_indices")
          if k in case}
    return blockcd.run(problem, case["method"], x0=x0, **kw)


def _assert_same(h: blockcd.History, s: blockcd.History, problem) -> None:
    """The MPI history equals the simulator's: iterates to RTOL, counters exactly."""
    for name in ("method", "n", "d", "m", "tau", "seed", "sampling", "batch"):
        assert getattr(h, name) == getattr(s, name), name
    assert h.step == pytest.approx(s.step, rel=1e-14)
    rel = np.abs(h.dist2 - s.dist2) / s.dist2
    assert rel.max() <= RTOL, f"dist2 differs by {rel.max():.3g} relative"
    assert np.linalg.norm(h.x - s.x) <= RTOL * np.linalg.norm(s.x)
    # f(x) - f*: the rounding of f(x) is relative to |f(x)| <= |f*| + gap[0], not to the gap itself
    np.testing.assert_allclose(h.gap, s.gap, rtol=RTOL, atol=RTOL * (abs(problem.f_star) + abs(s.gap[0])))
    np.testing.assert_array_equal(h.blocks_up, s.blocks_up)
    np.testing.assert_array_equal(h.bytes_down, s.bytes_down)
    np.testing.assert_allclose(h.bytes_up, s.bytes_up, rtol=1e-14)
    np.testing.assert_array_equal(h.bytes_up_workers, s.bytes_up_workers)


# ---------------------------------------------------------------- the simulator's iterates, every method
@pytest.mark.parametrize("ranks", [3, 5])
@pytest.mark.parametrize("key", list(METHOD_CASES))
def test_iterates_match_simulator(tmp_path_factory, key, ranks):
    h, _, problem, case = _run(tmp_path_factory, ranks, METHOD_CASES[key], key)
    assert h.n == ranks - 1
    _assert_same(h, _simulate(problem, case), problem)


EXTRA_CASES = {
    # uneven worker sizes (569 rows over 4 workers: padding rows), logistic, sorted split, b > 1, d = 30 over 7
    "is-saga-uneven": {"problem": "breast-cancer", "lam": 0.05, "split": "sorted", "method": "is-saga",
                       "m": 7, "tau": 2, "batch": 3, "iters": 25, "seed": 2},
    # every worker holds all rows (the shared storage layout), minibatches
    "is-sgd-identical": dict(BASE, split="identical", method="is-sgd", m=5, tau=1, batch=2, iters=25, seed=4),
    # one mask shared by all workers, indices sent
    "ibcd-shared-indices": dict(BASE, method="ibcd", m=5, tau=2, sampling="shared", send_indices=True,
                                iters=25, seed=5),
    # a fixed step
    "isega-step": dict(BASE, method="isega", m=13, tau=3, step=0.05, iters=25, seed=6),
    # a regulariser: the master's prox step, separable and not
    "isega-l1": dict(BASE, method="isega", m=5, tau=2, reg="l1:0.05", iters=30, seed=3),
    "isega-l2norm": dict(BASE, split="sorted", method="isega", m=5, tau=1, reg="l2norm:0.05", iters=30, seed=3),
    # the theory's decreasing schedule 1/(a + c k): the master steps with gamma_k, records it and f(x_hat)
    "is-sgd-decreasing": dict(BASE, method="is-sgd", m=5, tau=2, batch=2, step="decreasing", iters=30, seed=8),
    # stochastic local gradients of IS-ASGD (the paper's Algorithm 7): each rank draws its own b rows
    "is-asgd-batch": dict(INTERP, method="is-asgd", m=6, tau=2, batch=3, iters=25, seed=5),
}


@pytest.mark.parametrize("key", list(EXTRA_CASES))
def test_iterates_match_simulator_layouts(tmp_path_factory, key):
    h, _, problem, case = _run(tmp_path_factory, 5, EXTRA_CASES[key], key)
    _assert_same(h, _simulate(problem, case), problem)


def test_sparse_data_and_x0(tmp_path):
    """A LIBSVM file (sparse storage) read on every rank, and a starting point from a .npy file."""
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    A = rng.standard_normal((60, 20)) * (rng.random((60, 20)) < 0.3)
    b = rng.standard_normal(60)
    path = tmp_path / "data.svm"
    dump_svmlight_file(A, b, str(path))
    x0 = rng.standard_normal(20)
    np.save(tmp_path / "x0.npy", x0)
    case = {"problem": "libsvm", "path": str(path), "loss": "ridge", "lam": 0.1, "n_features": 20,
            "method": "isega", "m": 6, "tau": 2, "iters": 25, "seed": 1}
    out = tmp_path / "h.npz"
    proc = mpi.launch(4, wait=GUARD, check=False, out=out, quiet=True, x0=tmp_path / "x0.npy", **case)
    assert proc.returncode == 0, proc.stderr
    problem = mpi.build_problem("libsvm", 3, path=str(path), loss="ridge", lam=0.1, n_features=20)
    assert problem.sparse
    _assert_same(blockcd.History.load(out), _simulate(problem, case, x0=x0), problem)


def test_decreasing_schedule_steps_and_average(tmp_path_factory):
    """--step decreasing: the steps gamma_k = 1/(a + c k) of the theory and f at the weighted average, as
    the simulator records them (the steps exactly: both evaluate the same formula)."""
    h, _, problem, case = _run(tmp_path_factory, 5, EXTRA_CASES["is-sgd-decreasing"], "is-sgd-decreasing")
    s = _simulate(problem, case)
    a, c = theory.decreasing_schedule(problem, case["m"], case["tau"], batch=case["batch"])
    np.testing.assert_array_equal(h.steps, 1.0 / (a + c * np.arange(case["iters"])))
    np.testing.assert_array_equal(h.steps, s.steps)
    assert h.steps[-1] < h.steps[0]  # it decreases: c = mu/2 > 0
    np.testing.assert_allclose(h.gap_avg, s.gap_avg, rtol=RTOL,
                               atol=RTOL * (abs(problem.f_star) + abs(s.gap_avg[0])))


def test_nonconvex_problem_runs_is_sgd_as_the_simulator(tmp_path_factory):
    """--nonconvex W: the workers keep their rows, the master takes Theorem 7's step for t = iters and
    records ||grad f(x^k)||^2 and the dissimilarity nu^2 as the simulator does; dist2 has no x* (NaN)."""
    case = {"problem": "breast-cancer", "lam": 0.01, "split": "sorted", "nonconvex": 0.5, "method": "is-sgd",
            "m": 6, "tau": 2, "batch": 2, "iters": 25, "seed": 3}
    h, _, problem, _ = _run(tmp_path_factory, 4, case, "is-sgd-nonconvex")
    assert not problem.convex and problem.nonconvex == 0.5
    s = _simulate(problem, case)
    assert h.step == pytest.approx(theory.nonconvex_step(problem, 6, 2, 25), rel=1e-14) == s.step
    assert np.all(np.isnan(h.dist2)) and h.grad2[-1] < h.grad2[0]
    np.testing.assert_allclose(h.grad2, s.grad2, rtol=RTOL)
    np.testing.assert_allclose(h.nu2, s.nu2, rtol=RTOL)
    assert np.linalg.norm(h.x - s.x) <= RTOL * np.linalg.norm(s.x)
    np.testing.assert_array_equal(h.blocks_up, s.blocks_up)


def test_nonconvex_problem_refuses_other_methods_and_a_regulariser():
    proc = mpi.launch(3, wait=GUARD, check=False, problem="breast-cancer", lam=0.01, nonconvex=0.5,
                      method="ibcd", m=6, tau=2, iters=5)
    assert proc.returncode == mpi.EXIT_USAGE
    assert "'ibcd' does not run on a non-convex problem" in proc.stderr and "'is-sgd'" in proc.stderr
    with pytest.raises(ValueError, match="--nonconvex takes no --reg"):
        mpi.build_problem("synthetic", 3, loss="logistic", lam=0.1, nonconvex=0.5, reg="l1:0.1")
    with pytest.raises(ValueError, match="--nonconvex must be > 0"):
        mpi.build_problem("synthetic", 3, loss="logistic", lam=0.1, nonconvex=-1.0)


# ---------------------------------------------------------------- asynchronous IS-SGD
STRAGGLER_SLEEP = 0.01   # seconds worker 3 sleeps before each gradient
ASYNC = dict(BASE, lam=0.1, method="is-sgd-async", m=5, tau=2, batch=2, iters=240, seed=7)


def _async(tmp_path_factory, key, **options):
    if (key, 5) not in _RUNS:
        out = tmp_path_factory.mktemp("mpi") / f"{key}.npz"
        case = dict(ASYNC, **options)
        proc = mpi.launch(5, wait=GUARD, check=False, out=out, quiet=True, timeout=60, **case)
        assert proc.returncode == 0, f"job failed ({proc.returncode}):\n{proc.stderr}"
        problem = mpi.build_problem("synthetic", 4, **{k: v for k, v in case.items() if k in mpi.PROBLEMS["synthetic"]})
        with np.load(out, allow_pickle=False) as z:
            extras = {k: z[k] for k in z.files if k.startswith("mpi_")}
        _RUNS[key, 5] = (blockcd.History.load(out), extras, problem, case)
    return _RUNS[key, 5]


@pytest.mark.parametrize("key, options", [("straggler", {"slow": f"4:{STRAGGLER_SLEEP}"}), ("l1", {"reg": "l1:0.05"})])
def test_async_run_is_replayed_by_the_simulator(tmp_path_factory, key, options):
    """No barrier: the master applies each message as it arrives and answers that worker alone.  The History
    holds the arrival record; the simulator, given it, reproduces the iterates (to 1e-10, the issue's bound;
    the same operations in the same order, so in fact exactly)."""
    h, extras, problem, case = _async(tmp_path_factory, key, **options)
    assert h.arrivals.shape == (case["iters"],) and set(h.arrivals) == {0, 1, 2, 3}
    kw = {k: case[k] for k in ("m", "tau", "iters", "seed", "batch")}
    r = blockcd.run(problem, "is-sgd-async", delays=h.arrivals, **kw)
    assert np.max(np.abs(r.dist2 - h.dist2)) <= RTOL * h.dist2[0]
    assert np.linalg.norm(r.x - h.x) <= RTOL * np.linalg.norm(h.x)
    np.testing.assert_array_equal(r.delays, h.delays)
    np.testing.assert_array_equal(r.blocks_up, h.blocks_up)
    # every worker sent one message per arrival of its own, plus its last, answered with the order to stop
    np.testing.assert_array_equal(extras["mpi_messages"], np.bincount(h.arrivals, minlength=4) + 1)
    assert np.all(np.diff(h.times) >= 0)


def test_async_straggler_sends_less_and_is_late(tmp_path_factory):
    """Worker 3 (rank 4) sleeps 10 ms before each gradient: the others deliver most of the messages, and its
    messages arrive late (while it computes, the others' keep arriving).  Medians, since on a loaded machine
    the scheduler can hold back any rank now and then.  Each fast worker waits mostly for the other two fast
    ones, so their median delay is about 2; the straggler's is the number of arrivals during its sleep.
    The sleep is long against a fast round (about 2.5 ms on 2 cores with 5 busy-polling ranks; measured
    medians 13-19 quiet and under a load of 3): at 3 ms it was 6-8, too close to the threshold."""
    h, extras, _, _ = _async(tmp_path_factory, "straggler", slow=f"4:{STRAGGLER_SLEEP}")
    counts = np.bincount(h.arrivals, minlength=4)
    assert counts[3] < counts[:3].min() / 2
    median = [np.median(h.delays[h.arrivals == i]) for i in range(4)]
    assert median[3] > 2 * max(median[:3]) and median[3] > 2 * 3   # several times n - 1 = 3
    assert extras["mpi_compute"][3] >= STRAGGLER_SLEEP * (counts[3] + 1)   # its sleeps, counted as compute


def test_async_max_delay_stops_the_job_naming_the_rank(tmp_path):
    """--max-delay M: a worker more than M arrivals overdue ends the job, named with its rank; no history is
    written.  Worker 3 sleeps 50 ms per gradient, so it is late at once; on a loaded machine the scheduler
    may hold back a fast worker as long, so the test asks for a late worker correctly named, not which."""
    out = tmp_path / "h.npz"
    proc = mpi.launch(5, wait=GUARD, check=False, out=out, quiet=True, timeout=60,
                      **dict(ASYNC, slow="4:0.05", max_delay=6))
    assert proc.returncode == mpi.EXIT_FAILED, proc.stderr
    hit = re.search(r"worker (\d) \(rank (\d)\) has not answered for 7 arrivals, more than --max-delay 6",
                    proc.stderr)
    assert hit and int(hit.group(2)) == int(hit.group(1)), proc.stderr   # worker i is rank i
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("fail, code, message", [
    ("2:5", mpi.EXIT_FAILED, "rank 2 (worker 2) failed: RuntimeError: injected failure (--fail-at 2:5)"),
    ("3:4:hang", mpi.EXIT_TIMEOUT, "rank 3 (worker 3): no progress for 2 s in iteration 4"),
])
def test_async_failing_worker_ends_the_job(tmp_path, fail, code, message):
    """A raising worker aborts the job at once; a hanging one is caught by its watchdog within --timeout.
    Either way the status is non-zero, the rank is named, and no partial history is written."""
    out = tmp_path / "h.npz"
    proc = mpi.launch(5, wait=GUARD, check=False, out=out, quiet=True, **dict(ASYNC, fail_at=fail, timeout=2))
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


# ---------------------------------------------------------------- counted bytes against the formula
def test_bytes_per_round_match_formula(tmp_path_factory):
    """Each worker sends 8 bytes per coordinate of its tau blocks, plus ceil(tau ceil(log2 m) / 8) index bytes."""
    _, meas, problem, case = _run(tmp_path_factory, 5, EXTRA_CASES["ibcd-shared-indices"], "ibcd-shared-indices")
    n, m, tau = problem.n, case["m"], case["tau"]
    blocks = partition(problem.d, m)
    sampler = BlockSampler(n, m, tau, case["seed"], case["sampling"])
    index_bytes = math.ceil(theory.index_bits(m, tau) / 8)
    assert index_bytes == 1  # 2 indices of 3 bits each
    expected = np.array([[8 * blocks.sizes[sampler.worker_blocks(k, i)].sum() + index_bytes for i in range(n)]
                         for k in range(case["iters"])])
    assert meas.bytes_up.shape == (case["iters"], n)
    np.testing.assert_array_equal(meas.bytes_up, expected)
    np.testing.assert_array_equal(meas.bytes_down, np.full(case["iters"], 8 * problem.d))


@pytest.mark.parametrize("key, per_round", [("is-asgd", lambda d, m, tau: 8 * tau * d // m),
                                            ("dense", lambda d, m, tau: 8 * d)])
def test_bytes_equal_blocks_and_dense(tmp_path_factory, key, per_round):
    """Equal blocks: 8 tau d/m bytes per worker per round; dense (tau = m): 8 d; indices are never sent."""
    h, meas, problem, case = _run(tmp_path_factory, 3, METHOD_CASES[key], key)
    d, m, tau = problem.d, case["m"], case["tau"]
    if key == "is-asgd":
        assert d % m == 0
    np.testing.assert_array_equal(meas.bytes_up, np.full((case["iters"], problem.n), per_round(d, m, tau)))
    np.testing.assert_array_equal(h.bytes_up, per_round(d, m, tau) * np.arange(case["iters"] + 1))


def test_isaga_shared_workers_send_their_blocks_of_one_function(tmp_path_factory):
    """Shared-data ISAGA: worker i sends the 8 |U_i| bytes of its tau blocks every round (the master
    regenerates U_i and the function j_i from the seed and keeps each message apart for table entry j_i)."""
    h, meas, problem, case = _run(tmp_path_factory, 5, METHOD_CASES["isaga-shared"], "isaga-shared")
    assert problem.shared_data and problem.N == 20 * problem.n
    n, m, tau = problem.n, case["m"], case["tau"]
    blocks = partition(problem.d, m)
    sampler = BlockSampler(n, m, tau, case["seed"])
    expected = np.array([[8 * blocks.sizes[sampler.worker_blocks(k, i)].sum() for i in range(n)]
                         for k in range(case["iters"])])
    np.testing.assert_array_equal(meas.bytes_up, expected)
    np.testing.assert_array_equal(h.bytes_up_workers, expected.sum(axis=0))


def test_ibgd_workers_send_whole_gradients_or_no_message(tmp_path_factory):
    """IBGD: worker i sends one message of 8 d bytes when its draw says so (the master regenerates who),
    else no message at all; the history counts what arrived."""
    h, meas, problem, case = _run(tmp_path_factory, 5, METHOD_CASES["ibgd"], "ibgd")
    n, m, d = problem.n, case["m"], problem.d
    sends = np.array([BernoulliSampler(n, m, case["tau"] / m, case["seed"]).senders(k) for k in range(case["iters"])])
    assert 0 < sends.mean() < 1
    np.testing.assert_array_equal(meas.bytes_up, 8 * d * sends)
    np.testing.assert_array_equal(h.blocks_up, m * np.concatenate(([0.0], np.cumsum(sends.mean(axis=1)))))


def test_measurements_are_complete(tmp_path_factory):
    _, meas, _, case = _run(tmp_path_factory, 5, METHOD_CASES["isega"], "isega")
    K, it = 5, case["iters"]
    assert meas.compute.shape == meas.comm.shape == (K, it)
    assert meas.evaluation.shape == (it + 1,)
    assert np.all(meas.compute >= 0) and np.all(meas.comm >= 0)
    assert np.all(meas.compute.sum(axis=1) > 0) and np.all(meas.comm.sum(axis=1) > 0)
    assert meas.meta["ranks"] == K and meas.meta["problem"] == "synthetic"
    per = meas.per_iteration()
    assert set(per) == {"master", "workers"} and all(len(v) == 2 for v in per.values())


# ---------------------------------------------------------------- faults
def _fail(ranks, **options):
    case = dict(BASE, method="isega", m=5, tau=2, iters=20, quiet=True)
    case.update(options)
    return mpi.launch(ranks, wait=GUARD, check=False, **case)


@pytest.mark.parametrize("rank, role", [(2, "worker 2"), (0, "master")])
def test_raising_rank_stops_the_job(rank, role):
    proc = _fail(4, fail_at=f"{rank}:3")
    assert proc.returncode == mpi.EXIT_FAILED
    assert f"rank {rank} ({role}) failed: RuntimeError: injected failure (--fail-at {rank}:3)" in proc.stderr


def test_stalled_rank_is_aborted():
    proc = _fail(3, fail_at="1:2:hang", timeout=2)
    assert proc.returncode == mpi.EXIT_TIMEOUT
    # the first rank whose watchdog fires (any of them: all wait on the stalled one) names itself
    assert "no progress for 2 s in iteration" in proc.stderr and "(--timeout); aborting the job" in proc.stderr


def test_divergence_names_the_step():
    proc = _fail(3, step=50.0)
    assert proc.returncode == mpi.EXIT_FAILED
    assert "rank 0 (master) failed: DivergenceError: isega diverged at iteration" in proc.stderr
    assert "with step = 50" in proc.stderr


# ---------------------------------------------------------------- invalid arguments
@pytest.mark.parametrize("options, message", [
    ({"tau": 6}, "tau must be an integer in [1, 5], got 6"),
    ({"method": "newton"}, "method must be one of"),
    ({"batch": 2}, "batch applies to 'is-sgd', 'is-saga', 'is-asgd', 'isaga-local' and 'is-sgd-async' only, not to 'isega'"),
    ({"sampling": "random"}, "sampling must be one of"),
    ({"m": 14}, "m must be an integer in [1, 13], got 14"),
    ({"cond": 0.5}, "cond must be >= 1"),
    ({"fail_at": "7:1"}, "--fail-at rank must be an integer in [0, 2], got 7"),
    ({"out": "history.txt"}, "--out must end in .npz"),
    ({"problem": "digits"}, "--rows-per-worker, --d, --heterogeneity do not apply to --problem digits"),
    ({"bogus": 1}, "unrecognized arguments: --bogus 1"),
    ({"method": "is-asgd"}, "IS-ASGD's theory needs interpolation"),
    ({"method": "ibgd", "send_indices": True}, "--send-indices does not apply to 'ibgd'"),
    ({"method": "ibcd", "reg": "l1:0.1"}, "'ibcd' does not take a regulariser"),
    ({"method": "isaga-shared"}, "'isaga-shared' needs shared data: every worker reads all N functions"),
    ({"method": "isaga-shared", "split": "shared", "sampling": "shared"}, "sampling must be one of ('independent',)"),
    ({"reg": "l3:0.1"}, "reg must be KIND:WEIGHT"),
    ({"x0": "no-such-start.npy"}, "No such file or directory: 'no-such-start.npy'"),
    ({"step": "slow"}, "argument --step: expected a number or 'decreasing', got 'slow'"),
    ({"step": "decreasing"}, "step='decreasing' applies to 'is-sgd' only, not to 'isega'"),
    ({"max_delay": 5}, "--max-delay applies to is-sgd-async only, not to 'isega'"),
    ({"method": "is-sgd-async", "max_delay": 0}, "--max-delay must be an integer in [1, inf], got 0"),
    ({"slow": "0:0.1"}, "--slow rank (a worker) must be an integer in [1, 2], got 0"),
    ({"slow": "1:-1"}, "argument --slow: expected RANK:SECONDS (seconds >= 0), got '1:-1'"),
])
def test_invalid_arguments_are_rejected(options, message):
    """Every rank rejects the command line; the message is printed once, the status is 2, nothing runs."""
    proc = _fail(3, **options)
    assert proc.returncode == mpi.EXIT_USAGE, proc.stderr
    assert proc.stderr.count("blockcd.mpi: error:") == 1, proc.stderr
    assert message in proc.stderr
    assert "Abort" not in proc.stderr and proc.stdout == ""


def test_launch_rejects_a_callable_step():
    """A schedule written in Python cannot cross the command line: launch says so before starting a job."""
    with pytest.raises(TypeError, match="not a callable schedule"):
        mpi.launch(3, method="is-sgd", m=5, tau=2, iters=3, step=lambda k: 0.1)


def test_one_rank_is_not_enough():
    """Started without mpiexec (one rank), the module says how to launch it."""
    proc = subprocess.run([sys.executable, "-m", "blockcd.mpi", "--method", "ibcd", "--m", "4", "--tau", "1",
                           "--iters", "3"], check=False, capture_output=True, text=True, timeout=GUARD)
    assert proc.returncode == mpi.EXIT_USAGE
    assert "needs at least 2 MPI ranks" in proc.stderr and "mpiexec -n K" in proc.stderr


# ---------------------------------------------------------------- pieces that run without MPI
@pytest.mark.parametrize("m, tau", [(2, 1), (5, 2), (8, 3), (1000, 125), (1000, 999), (1 << 20, 7)])
def test_index_packing_round_trip(m, tau):
    rng = np.random.default_rng(m)
    idx = np.sort(rng.choice(m, tau, replace=False))
    buf = mpi.pack_indices(idx, m)
    assert buf.dtype == np.uint8 and buf.nbytes == math.ceil(theory.index_bits(m, tau) / 8)
    np.testing.assert_array_equal(mpi.unpack_indices(buf, tau, m), idx)


def test_index_packing_rejects_bad_input():
    with pytest.raises(ValueError, match=r"block indices in \[0, 4\]"):
        mpi.pack_indices(np.array([1, 5]), 5)
    with pytest.raises(TypeError, match="1-D array of integers"):
        mpi.pack_indices(np.array([1.0, 2.0]), 5)
    with pytest.raises(ValueError, match="fewer than the 6 bits of 2 indices"):
        mpi.unpack_indices(np.zeros(0, dtype=np.uint8), 2, 5)


def test_build_problem_rejects_foreign_options():
    with pytest.raises(ValueError, match="--path does not apply to --problem synthetic"):
        mpi.build_problem("synthetic", 2, path="x.svm")
    with pytest.raises(ValueError, match="problem must be one of"):
        mpi.build_problem("mnist", 2)
    with pytest.raises(ValueError, match="needs --path"):
        mpi.build_problem("libsvm", 2)


def test_launch_command(monkeypatch):
    monkeypatch.delenv("BLOCKCD_MPIEXEC", raising=False)
    cmd = mpi.mpiexec(5)
    assert cmd[-2:] == ["-n", "5"] and cmd[0].endswith("mpiexec")
    monkeypatch.setenv("BLOCKCD_MPIEXEC", "srun --mpi=pmi2")
    assert mpi.mpiexec(9) == ["srun", "--mpi=pmi2", "-n", "9"]
    with pytest.raises(ValueError, match="ranks must be an integer in"):
        mpi.mpiexec(1)


def test_load_measurements_rejects_simulator_history(tmp_path):
    p = blockcd.problems.synthetic(2, 10, 4)
    h = blockcd.run(p, "ibcd", m=2, tau=1, iters=3)
    h.save(tmp_path / "sim.npz")
    with pytest.raises(ValueError, match="holds no MPI measurements"):
        mpi.load_measurements(tmp_path / "sim.npz")


@pytest.mark.parametrize("suffix, sparse, ranks", [(".npz", False, 2), (".npz", True, 3), (".npy", False, 2)])
def test_your_own_arrays_saved_with_one_call(tmp_path, suffix, sparse, ranks):
    """--problem arrays: A and b saved by blockcd.problems.save_arrays (dense or CSR .npz, or .npy), the
    master reading every row and each worker only its own; the same iterates as the simulator."""
    import scipy.sparse as sp

    rng = np.random.default_rng(4)
    A = rng.standard_normal((80, 15))
    if sparse:
        A = sp.csr_matrix(A * (rng.random((80, 15)) < 0.4))
    b = rng.standard_normal(80)
    path = blockcd.problems.save_arrays(tmp_path / f"data{suffix}", A, b)
    case = {"problem": "arrays", "path": str(path), "lam": 0.1, "split": "iid", "data_seed": 2,
            "method": "ibcd", "m": 5, "tau": 2, "iters": 25, "seed": 3}
    out = tmp_path / "h.npz"
    proc = mpi.launch(ranks, wait=GUARD, check=False, out=out, quiet=True, **case)
    assert proc.returncode == 0, proc.stderr
    problem = mpi.build_problem("arrays", ranks - 1, path=str(path), lam=0.1, split="iid", data_seed=2)
    assert problem.sparse == sparse and problem.N == 80 and problem.d == 15
    h = blockcd.History.load(out)
    assert h.problem["name"] == path.name and h.problem["lam"] == 0.1
    _assert_same(h, _simulate(problem, case), problem)


def test_arrays_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, a=np.ones(3))
    proc = mpi.launch(2, wait=GUARD, check=False, problem="arrays", path=str(bad), method="ibcd", m=2, tau=1,
                      iters=2)
    assert proc.returncode == mpi.EXIT_USAGE, proc.stderr
    assert str(bad) in proc.stderr and "save_arrays" in proc.stderr, proc.stderr
    with pytest.raises(ValueError, match="needs --path"):
        mpi.build_problem("arrays", 2)
    with pytest.raises(ValueError, match="--n-features does not apply to --problem arrays"):
        mpi.build_problem("arrays", 2, path=str(bad), n_features=3)


def test_a_long_setup_step_says_so_and_a_quick_one_does_not(capsys):
    import time

    from blockcd.mpi.cli import progress

    with progress("computing x*", after=0.05):
        time.sleep(0.3)
    err = capsys.readouterr().err
    assert "blockcd.mpi: computing x* ..." in err and re.search(r"computing x\*: done in \d+\.\d s", err), err
    with progress("reading a small file", after=5.0):
        pass
    with progress("quiet", show=False, after=0.0):
        time.sleep(0.05)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- a method of the user's, by its module path
USER_RULES = '''
from blockcd.topk import TopKErrorFeedback


class TopK(TopKErrorFeedback):
    """Top-k with error feedback under a name of the user's, in a module outside the library: the ranks
    import it by its path and it chooses its own blocks (the rule's body is the library's)."""

    name = "user-topk"


NOT_A_RULE = 3
'''


@pytest.fixture
def user_rules(tmp_path, monkeypatch):
    """The module ``user_rules`` in tmp_path, importable by every rank (PYTHONPATH) and by this process;
    the ranks talk over the loopback interface only; the registry is restored afterwards."""
    import os

    from blockcd import registry

    (tmp_path / "user_rules.py").write_text(USER_RULES, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("HYDRA_IFACE", "lo")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
    monkeypatch.setattr(registry, "METHODS", registry.METHODS)
    return tmp_path


def test_a_users_rule_runs_from_its_module_path_as_in_the_simulator(user_rules):
    """--method user_rules:TopK: each rank imports the rule; it chooses its own blocks, sends their values and
    indices, and the run equals the simulator's (iterates to RTOL, blocks and bytes exactly)."""
    problem = mpi.build_problem("synthetic", 2, rows_per_worker=20, d=13, heterogeneity=0.5, data_seed=3)
    case = dict(BASE, method="user_rules:TopK", m=5, tau=2, step=0.5 / problem.L, iters=30, seed=7)
    out = user_rules / "topk.npz"
    proc = mpi.launch(3, wait=GUARD, check=False, out=out, quiet=True, **case)
    assert proc.returncode == 0, proc.stderr
    h, measured = blockcd.History.load(out), mpi.load_measurements(out)
    assert h.method == mpi.load_method("user_rules:TopK") == "user-topk"
    _assert_same(h, _simulate(problem, dict(case, method="user-topk")), problem)
    # each worker sent exactly 2 of the blocks 3,3,3,2,2 each round, and one byte of two 3-bit indices
    np.testing.assert_array_equal(h.blocks_up, 2.0 * np.arange(31))
    assert set(np.unique(measured.bytes_up)) <= {8 * 4 + 1, 8 * 5 + 1, 8 * 6 + 1}
    assert len(np.unique(measured.bytes_up)) > 1


def test_a_module_path_that_is_not_a_rule_is_refused(user_rules):
    for path, message in [("no_such_module_here:TopK", "does not import"),
                          ("user_rules:Missing", "has no attribute 'Missing'"),
                          ("user_rules", "a module path reads 'package.module:Name'")]:
        with pytest.raises(ValueError, match=message):
            mpi.load_method(path)
    with pytest.raises(TypeError, match="is not a rule"):
        mpi.load_method("user_rules:NOT_A_RULE")
    proc = mpi.launch(2, wait=GUARD, check=False, method="user_rules:NOT_A_RULE", m=5, tau=2, iters=3, **BASE)
    assert proc.returncode == mpi.EXIT_USAGE, proc.stderr
    assert "user_rules:NOT_A_RULE' is not a rule" in proc.stderr, proc.stderr
    proc = mpi.launch(2, wait=GUARD, check=False, method="no_such_module_here:TopK", m=5, tau=2, iters=3, **BASE)
    assert proc.returncode == mpi.EXIT_USAGE and "does not import" in proc.stderr, proc.stderr


# ---------------------------------------------------------------- ranks that disagree, a stalled rank
def _mpmd(master: dict, worker: dict, workers: int = 2) -> subprocess.CompletedProcess:
    """One job whose master (rank 0) and workers (ranks 1..) were given different flags (MPMD:
    ``mpiexec -n 1 ... : -n W ...``), on the loopback interface, under the wall-clock guard."""
    import os

    from blockcd.mpi.launch import _flag

    def command(options):
        return [sys.executable, "-m", "blockcd.mpi"] + [a for k, v in options.items() for a in _flag(k, v)]

    args = mpi.mpiexec(2)[:1] + ["-n", "1"] + command(master) + [":", "-n", str(workers)] + command(worker)
    env = dict(os.environ, OMP_NUM_THREADS="1", HYDRA_IFACE="lo")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=GUARD)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        pytest.fail(f"the job hung:\n{err}")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


AGREE = dict(BASE, method="ibcd", m=5, tau=2, iters=20, seed=0, quiet=True)


@pytest.mark.parametrize("change, message", [
    ({"seed": 1}, "rank 1 (worker 1) has --seed 1 where the master (rank 0) has 0"),
    ({"data_seed": 4}, "rank 2 (worker 2) has the problem's options"),
    ({"method": "isega"}, "rank 1 (worker 1) has --method isega where the master (rank 0) has ibcd"),
    ({"lam": 0.5}, "the problem's options"),
    ({"sampling": "shared"}, "has --sampling shared where the master (rank 0) has independent"),
    ({"tau": 3}, "has --tau 3 where the master (rank 0) has 2"),
    ({"m": 4}, "has --m 4 where the master (rank 0) has 5"),
    ({"iters": 25}, "has --iters 25 where the master (rank 0) has 20"),
    ({"send_indices": True}, "has --send-indices true where the master (rank 0) has false"),
])
def test_ranks_that_disagree_stop_naming_the_rank_and_the_difference(change, message):
    """A worker given another flag than the master: the job ends before its first round with the usage
    status, naming the rank and the difference (it used to finish with status 0 and a wrong result,
    crash inside MPI, or hang)."""
    proc = _mpmd(AGREE, dict(AGREE, **change))
    assert proc.returncode == mpi.EXIT_USAGE, proc.stderr
    assert "the ranks disagree" in proc.stderr and message in proc.stderr, proc.stderr


def test_a_data_file_that_differs_on_one_node_stops_the_job(tmp_path):
    """--problem arrays from two copies of a file, one with its rows scaled: the workers reading the
    other copy are named, with the checksum that differs; identical copies run."""
    rng = np.random.default_rng(5)
    A, b = rng.standard_normal((40, 10)), rng.standard_normal(40)
    good = blockcd.problems.save_arrays(tmp_path / "a.npz", A, b)
    same = blockcd.problems.save_arrays(tmp_path / "same.npz", A, b)
    scaled = blockcd.problems.save_arrays(tmp_path / "b.npz", 2 * A, b)
    case = dict(problem="arrays", lam=0.1, split="contiguous", method="ibcd", m=5, tau=2, iters=10, quiet=True)
    proc = _mpmd(dict(case, path=str(good)), dict(case, path=str(scaled)))
    assert proc.returncode == mpi.EXIT_USAGE, proc.stderr
    for r in (1, 2):
        assert (f"rank {r} (worker {r}) holds rows that differ from what the master expects of worker {r - 1}: "
                "sha256") in proc.stderr, proc.stderr
    proc = _mpmd(dict(case, path=str(good)), dict(case, path=str(same)))
    assert proc.returncode == 0, proc.stderr


def test_a_stalled_worker_is_named_by_the_master():
    """A worker that hangs in round 2: the master's watchdog fires first and names the rank it waits for."""
    proc = _fail(4, fail_at="2:2:hang", timeout=2)
    assert proc.returncode == mpi.EXIT_TIMEOUT
    assert ("rank 0 (master): no progress for 2 s in iteration 2, waiting for worker 2 (rank 2) (--timeout)"
            in proc.stderr), proc.stderr


def test_the_default_timeout_follows_the_slowest_round(monkeypatch):
    """No --timeout: the watchdog is on, at TIMEOUT_FACTOR times the slowest round so far and at least
    TIMEOUT_FLOOR seconds; when it fires it names the rank, the iteration and the rule."""
    import threading

    from blockcd.mpi import cli, job

    cfg = cli.configure(["--method", "ibcd", "--m", "5", "--tau", "2", "--iters", "3"], 3, show=False)
    assert cfg.timeout is None
    aborted, said = threading.Event(), []

    class Comm:
        def Abort(self, code):
            said.append(code)
            aborted.set()

    monkeypatch.setattr(job, "ABORT_GRACE", 0.0)
    monkeypatch.setattr(job, "say", said.append)
    w = job.Watchdog(Comm(), 0, "master", None)
    assert w.limit() == job.TIMEOUT_FLOOR == 120.0
    w.slowest = 5.0
    assert w.limit() == 100 * 5.0
    w.done.set()     # this one's thread stops here, before it could fire 500 s later in another test
    monkeypatch.setattr(job, "TIMEOUT_FLOOR", 0.3)
    w = job.Watchdog(Comm(), 0, "master", None)
    w.tick(0)
    w.tick(1)        # round 0 took microseconds: the limit is the floor, 0.3 s
    assert w.slowest < 0.003
    w.waiting = "worker 1 (rank 1)"
    assert aborted.wait(5.0), "the default watchdog did not fire"
    w.done.set()
    assert said[-1] == job.EXIT_TIMEOUT
    assert said[0].startswith("rank 0 (master): no progress for 0.3 s in iteration 1, waiting for worker 1 "
                              "(rank 1) (the default --timeout: 100 times the slowest round so far"), said


@pytest.mark.parametrize("argv, message", [
    (["--lam", "-1"], "--lam must be >= 0, got -1.0"),
    (["--data-seed", "-2"], "--data-seed must be an integer in [0, 9223372036854775807], got -2"),
    (["--seed", "-2"], "--seed must be an integer in [0, 9223372036854775807], got -2"),
])
def test_errors_name_the_flag_and_help_shows_the_defaults(argv, message, capsys):
    """An MPI usage error used to name the Python argument (``lam must be >= 0``) where the user typed a flag."""
    from blockcd.mpi import cli

    with pytest.raises(mpi.UsageError) as e:
        cli.configure(["--method", "ibcd", "--m", "5", "--tau", "2", "--iters", "3", *argv], 3, show=False)
    assert str(e.value) == message
    with pytest.raises(SystemExit):
        cli.configure(["--help"], 3)
    text = " ".join(capsys.readouterr().out.split())
    assert "seed of the block choices and minibatches (default: 0)" in text
    assert "independent or shared ('cd': shared) (default: independent)" in text

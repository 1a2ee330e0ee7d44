"""Bad input: every public function names the offending parameter; diverging runs say why.

Each case asserts the exception type AND that the message names the
parameter (``pytest.raises(..., match=...)``).
"""

import numpy as np
import pytest
from conftest import data

import blockcd
from blockcd import problems, regularizers, theory
from blockcd.blocks import BlockSampler, partition
from blockcd.experiments import variance_mc
from blockcd.methods import History

A0, B0 = data(23, 7, seed=11)  # 23 rows: 4 workers hold 6, 6, 6, 5
NAN = float("nan")
INF = float("inf")


def with_entry(arr, idx, value):
    arr = np.array(arr, dtype=float)
    arr[idx] = value
    return arr


@pytest.fixture(scope="module")
def P():
    return {
        "ridge": problems.ridge(A0, B0, n_workers=4, lam=0.1),  # d = 7, not interpolating
        "interp": problems.synthetic(4, 6, 5, interpolating=True, seed=4),  # d = 5
        "shared": problems.ridge(A0, B0, n_workers=4, lam=0.1, split="shared"),  # d = 7, N = 23 read by all
    }


def run(P, **kw):
    args = {"method": "ibcd", "m": 7, "tau": 2, "iters": 5}
    args.update(kw)
    problem = args.pop("problem", P["ridge"])
    method = args.pop("method")
    return blockcd.run(problem, method, **args)


# (id, call taking the problems dict, exception type, regex the message must match)
CASES = [
    # --- run: blocks and sampling
    ("tau-zero", lambda P: run(P, tau=0), ValueError, r"\btau must be an integer in \[1, 7\]"),
    ("tau-above-m", lambda P: run(P, m=4, tau=5), ValueError, r"\btau must be an integer in \[1, 4\]"),
    ("tau-float", lambda P: run(P, tau=2.0), TypeError, r"\btau must be an integer"),
    ("tau-bool", lambda P: run(P, tau=True), TypeError, r"\btau must be an integer"),
    ("tau-string", lambda P: run(P, tau="2"), TypeError, r"\btau must be an integer"),
    ("m-zero", lambda P: run(P, m=0, tau=1), ValueError, r"^m must be an integer in \[1, 7\]"),
    ("m-above-d", lambda P: run(P, m=8, tau=1), ValueError, r"^m must be an integer in \[1, 7\]"),
    ("sampling-unknown", lambda P: run(P, sampling="random"), ValueError, r"\bsampling must be one of"),
    ("method-unknown", lambda P: run(P, method="adam"), ValueError, r"\bmethod must be one of"),
    ("method-not-string", lambda P: run(P, method=3), TypeError, r"\bmethod must be a string"),
    ("ibgd-tau-zero", lambda P: run(P, method="ibgd", tau=0), ValueError, r"\btau must be an integer in \[1, 7\]"),
    ("ibgd-shared", lambda P: run(P, method="ibgd", sampling="shared"), ValueError,
     r"^sampling must be one of \('independent',\)"),
    ("ibgd-send-indices", lambda P: run(P, method="ibgd", send_indices=True), ValueError,
     r"^send_indices does not apply to 'ibgd'"),
    # --- run: shared-data ISAGA needs every worker to read all N functions, n <= N of them, and no R
    ("isaga-shared-not-shared", lambda P: run(P, method="isaga-shared"), ValueError,
     (r"^'isaga-shared' needs shared data: every worker reads all N functions; build the problem with "
      r"split='identical' \(alias 'shared'\), got split = 'iid'")),
    ("isaga-shared-n-above-N", lambda P: run(P, problem=problems.ridge(A0[:5], B0[:5], n_workers=8, split="shared"),
                                             method="isaga-shared"), ValueError,
     r"^'isaga-shared' draws n distinct functions of the N per round: n = 8 workers need n <= N = 5"),
    ("isaga-shared-sampling-shared", lambda P: run(P, problem=P["shared"], method="isaga-shared", sampling="shared"),
     ValueError, r"^sampling must be one of \('independent',\)"),
    ("isaga-shared-batch", lambda P: run(P, problem=P["shared"], method="isaga-shared", batch=2), ValueError,
     r"\bbatch applies to 'is-sgd', 'is-saga', 'is-asgd', 'isaga-local' and 'is-sgd-async' only, not to 'isaga-shared'"),
    ("isaga-shared-reg", lambda P: run(P, problem=problems.ridge(A0, B0, n_workers=4, split="shared",
                                                                 reg=regularizers.l1(0.1)), method="isaga-shared"),
     ValueError, r"^'isaga-shared' does not take a regulariser"),
    ("isaga-shared-theory-not-shared", lambda P: theory.step_size(P["ridge"], "isaga-shared", 7, 2), ValueError,
     r"isaga-shared's theory \(the paper's Theorem 2\) is for shared data.*got split = 'iid'"),
    ("split-not-string", lambda P: problems.ridge(A0, B0, n_workers=4, split=["shared"]), TypeError,
     r"\bsplit must be"),
    # --- run: step, iterations, seed, start
    ("step-zero", lambda P: run(P, step=0.0), ValueError, r"\bstep must be > 0"),
    ("step-negative", lambda P: run(P, step=-0.1), ValueError, r"\bstep must be > 0"),
    ("step-nan", lambda P: run(P, step=NAN), ValueError, r"\bstep must be finite"),
    ("step-inf", lambda P: run(P, step=INF), ValueError, r"\bstep must be finite"),
    ("step-string", lambda P: run(P, step="big"), ValueError, r"\bstep must be a float > 0, None, 'decreasing'"),
    ("iters-zero", lambda P: run(P, iters=0), ValueError, r"\biters must be an integer in \[1, inf\]"),
    ("iters-float", lambda P: run(P, iters=2.5), TypeError, r"\biters must be an integer"),
    ("seed-negative", lambda P: run(P, seed=-1), ValueError, r"\bseed must be an integer in \[0, "),
    ("x0-length", lambda P: run(P, x0=np.zeros(6)), ValueError, r"\bx0 must have shape \(7,\)"),
    ("x0-nan", lambda P: run(P, x0=with_entry(np.zeros(7), 3, NAN)), ValueError, r"\bx0 contains NaN or inf"),
    ("send-indices-not-bool", lambda P: run(P, send_indices="yes"), TypeError, r"\bsend_indices must be True or False"),
    ("problem-not-problem", lambda P: blockcd.run((A0, B0), "ibcd", m=7, tau=2, iters=5), TypeError,
     r"\bproblem must be a blockcd Problem"),
    # --- run: minibatches
    ("batch-above-rows", lambda P: run(P, method="is-sgd", batch=6), ValueError,
     r"\bbatch must be an integer in \[1, 5\]"),
    ("batch-zero", lambda P: run(P, method="is-saga", batch=0), ValueError, r"\bbatch must be an integer in \[1, 5\]"),
    ("batch-for-ibcd", lambda P: run(P, method="ibcd", batch=2), ValueError, r"\bbatch applies to 'is-sgd', 'is-saga', 'is-asgd', 'isaga-local' and 'is-sgd-async' only"),
    ("batch-for-isega", lambda P: run(P, method="isega", batch=2), ValueError, r"\bbatch applies to"),
    # --- run: IS-ASGD needs interpolation (theory step) and eta <= 1/L
    ("asgd-theory-step-not-interpolating", lambda P: run(P, method="is-asgd"), ValueError,
     r"interpolation.*sigma\*\^2 = .* > 0"),
    ("asgd-step-above-1-over-L", lambda P: run(P, problem=P["interp"], method="is-asgd", m=5, step=2 / P["interp"].L),
     ValueError, r"\bstep \(eta\) must be <= 1/L"),
    # --- problems: workers
    ("n-workers-zero", lambda P: problems.ridge(A0, B0, n_workers=0), ValueError, r"\bn_workers must be an integer in \[1, 23\]"),
    ("more-workers-than-rows", lambda P: problems.ridge(A0, B0, n_workers=24), ValueError,
     r"\bn_workers must be an integer in \[1, 23\]"),
    ("n-workers-float", lambda P: problems.logistic(A0, B0 > 0, n_workers=2.0, lam=0.1), TypeError,
     r"\bn_workers must be an integer"),
    ("synthetic-n-workers-zero", lambda P: problems.synthetic(0, 5, 3), ValueError, r"\bn_workers must be an integer"),
    ("synthetic-rows-zero", lambda P: problems.synthetic(3, 0, 3), ValueError, r"\brows_per_worker must be an integer"),
    # --- problems: data
    ("A-nan", lambda P: problems.ridge(with_entry(A0, (2, 3), NAN), B0, n_workers=4), ValueError, r"^A contains NaN or inf"),
    ("A-inf", lambda P: problems.logistic(with_entry(A0, (0, 0), -INF), B0 > 0, n_workers=4, lam=0.1), ValueError,
     r"^A contains NaN or inf"),
    ("b-nan", lambda P: problems.ridge(A0, with_entry(B0, 5, NAN), n_workers=4), ValueError, r"^b contains NaN or inf"),
    ("b-inf", lambda P: problems.ridge(A0, with_entry(B0, 0, INF), n_workers=4), ValueError, r"^b contains NaN or inf"),
    ("y-nan", lambda P: problems.logistic(A0, with_entry(B0 > 0, 1, NAN), n_workers=4, lam=0.1), ValueError,
     r"^y contains NaN or inf"),
    ("b-length", lambda P: problems.ridge(A0, B0[:-1], n_workers=4), ValueError, r"^b must have shape \(23,\) to match"),
    ("y-length", lambda P: problems.logistic(A0, (B0 > 0)[:20], n_workers=4, lam=0.1), ValueError, r"^y must have shape \(23,\)"),
    ("A-one-dimensional", lambda P: problems.ridge(B0, B0, n_workers=4), ValueError, r"^A must be 2-D"),
    ("A-three-dimensional", lambda P: problems.ridge(A0[None], B0, n_workers=4), ValueError, r"^A must be 2-D"),
    ("A-string", lambda P: problems.ridge("data.csv", B0, n_workers=4), TypeError, r"^A must be a 2-D array"),
    ("A-empty", lambda P: problems.ridge(np.zeros((0, 3)), np.zeros(0), n_workers=1), ValueError,
     r"^A must have at least one row"),
    # --- problems: options
    ("split-unknown", lambda P: problems.ridge(A0, B0, n_workers=4, split="random"), ValueError, r"\bsplit must be one of"),
    ("lam-negative", lambda P: problems.ridge(A0, B0, n_workers=4, lam=-1.0), ValueError, r"\blam must be >= 0"),
    ("lam-nan", lambda P: problems.ridge(A0, B0, n_workers=4, lam=NAN), ValueError, r"\blam must be finite"),
    ("logistic-lam-zero", lambda P: problems.logistic(A0, B0 > 0, n_workers=4, lam=0.0), ValueError,
     r"\blam must be > 0 for logistic"),
    ("logistic-three-classes", lambda P: problems.logistic(A0, np.arange(23) % 3, n_workers=4, lam=0.1), ValueError,
     r"^y must hold exactly two classes.*got 3"),
    ("logistic-one-class", lambda P: problems.logistic(A0, np.ones(23), n_workers=4, lam=0.1), ValueError,
     r"^y must hold exactly two classes"),
    ("synthetic-cond-below-1", lambda P: problems.synthetic(3, 5, 3, cond=0.5), ValueError, r"\bcond must be >= 1"),
    ("synthetic-heterogeneity-negative", lambda P: problems.synthetic(3, 5, 3, heterogeneity=-1.0), ValueError,
     r"\bheterogeneity must be >= 0"),
    ("synthetic-interpolating-logistic", lambda P: problems.synthetic(3, 5, 3, loss="logistic", interpolating=True, lam=0.1),
     ValueError, r"\binterpolating=True needs loss='ridge'"),
    ("synthetic-too-few-rows", lambda P: problems.synthetic(2, 2, 5), ValueError, r"\bnot strongly convex.*lam > 0"),
    ("loss-unknown", lambda P: problems.load_libsvm("nowhere.svm", n_workers=2, loss="hinge"), ValueError,
     r"\bloss must be one of"),
    ("not-strongly-convex", lambda P: problems.ridge(A0[:5], B0[:5], n_workers=2).mu, ValueError,
     r"not strongly convex.*lam > 0"),
    # --- the oracle
    ("x-length", lambda P: P["ridge"].f(np.zeros(3)), ValueError, r"^x must have shape \(7,\)"),
    ("x-nan-grad", lambda P: P["ridge"].grad(with_entry(np.zeros(7), 0, NAN)), ValueError, r"^x contains NaN"),
    ("idx-shape", lambda P: P["ridge"].minibatch_grads(np.zeros(7), np.zeros((3, 1), dtype=int)), ValueError,
     r"^idx must have shape \(n=4, b\)"),
    ("idx-out-of-range", lambda P: P["ridge"].minibatch_grads(np.zeros(7), np.full((4, 1), 5)), ValueError,
     r"^idx holds a row number outside"),
    ("local-smoothness-batch", lambda P: P["ridge"].local_smoothness(0), ValueError, r"\bbatch must be an integer"),
    # --- blocks and the sparsifier
    ("sparsify-3d", lambda P: blockcd.sparsify(np.ones((2, 3, 4)), 2, 1, 0), ValueError, r"^G must have shape \(n, d\)"),
    ("sparsify-nan", lambda P: blockcd.sparsify(with_entry(np.ones((2, 4)), (1, 1), NAN), 2, 1, 0), ValueError,
     r"^G contains NaN or inf"),
    ("sparsify-string", lambda P: blockcd.sparsify("G", 2, 1, 0), TypeError, r"^G must be a numeric array"),
    ("sparsify-m-above-d", lambda P: blockcd.sparsify(np.ones((2, 4)), 5, 1, 0), ValueError, r"^m must be an integer in \[1, 4\]"),
    ("sparsify-tau-above-m", lambda P: blockcd.sparsify(np.ones((2, 4)), 2, 3, 0), ValueError,
     r"^tau must be an integer in \[1, 2\]"),
    ("sparsify-sampling", lambda P: blockcd.sparsify(np.ones((2, 4)), 2, 1, 0, sampling="all"), ValueError,
     r"\bsampling must be one of"),
    ("sparsify-rng", lambda P: blockcd.sparsify(np.ones((2, 4)), 2, 1, rng="seed"), TypeError,
     r"^rng must be a numpy.random.Generator"),
    ("partition-m-zero", lambda P: partition(5, 0), ValueError, r"^m must be an integer in \[1, 5\]"),
    ("partition-d-zero", lambda P: partition(0, 1), ValueError, r"^d must be an integer"),
    ("sampler-tau-above-m", lambda P: BlockSampler(3, 4, 5), ValueError, r"^tau must be an integer in \[1, 4\]"),
    ("sampler-n-zero", lambda P: BlockSampler(0, 4, 2), ValueError, r"^n must be an integer"),
    ("sampler-sampling", lambda P: BlockSampler(3, 4, 2, sampling="iid"), ValueError, r"\bsampling must be one of"),
    ("worker-out-of-range", lambda P: BlockSampler(3, 4, 2).worker_blocks(0, 3), ValueError, r"^i must be an integer in \[0, 2\]"),
    # --- theory
    ("omega-tau-above-m", lambda P: theory.omega(4, 5), ValueError, r"^tau must be an integer in \[1, 4\]"),
    ("coverage-n-zero", lambda P: theory.coverage(4, 2, 0), ValueError, r"^n must be an integer"),
    ("step-size-method", lambda P: theory.step_size(P["ridge"], "newton", 7, 1), ValueError, r"\bmethod must be one of"),
    ("step-size-m-above-d", lambda P: theory.step_size(P["ridge"], "ibcd", 8, 1), ValueError,
     r"^m must be an integer in \[1, 7\]"),
    ("rho-not-interpolating", lambda P: theory.rho(P["ridge"], 7, 1), ValueError, r"interpolation"),
    ("knee-r-negative", lambda P: theory.knee(10, 2, -1.0), ValueError, r"^r must be > 0"),
    ("time-optimal-c1-zero", lambda P: theory.time_optimal_tau(1.0, 2.0, 4, 10, 1.0, 0.0), ValueError, r"^c1 must be > 0"),
    ("predicted-iterations-eps", lambda P: theory.predicted_iterations(P["ridge"], "ibcd", 7, 7, 0.0), ValueError,
     r"^eps must be > 0"),
    ("predicted-iterations-x0", lambda P: theory.predicted_iterations(P["ridge"], "ibcd", 7, 7, 1e-3, x0=np.ones(3)),
     ValueError, r"^x0 must have shape \(7,\)"),
    ("aggregation-variance-m", lambda P: theory.aggregation_variance(np.ones((2, 3)), 4, 1), ValueError,
     r"^m must be an integer in \[1, 3\]"),
    ("aggregation-variance-3d", lambda P: theory.aggregation_variance(np.ones((2, 3, 4)), 2, 1), ValueError,
     r"^G must have shape \(n, d\)"),
    ("iters-to-eps", lambda P: run(P).iters_to(-1.0), ValueError, r"^eps must be > 0"),
    ("variance-mc-trials", lambda P: variance_mc(np.ones((2, 4)), 2, 1, trials=1), ValueError, r"^trials must be an integer"),
]


@pytest.mark.parametrize("call,exc,match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_names_the_parameter(P, call, exc, match):
    with pytest.raises(exc, match=match):
        call(P)


def test_enough_distinct_bad_input_cases():
    assert len({c[0] for c in CASES}) == len(CASES) >= 30


# ---------------------------------------------------------------- divergence
@pytest.mark.parametrize("method,batch", [("ibcd", None), ("is-sgd", 2), ("isega", None), ("is-saga", 3),
                                          ("ibgd", None), ("isaga-local", 1), ("isaga-shared", None)])
def test_divergence_names_the_step_and_the_theory_step(method, batch):
    p = problems.ridge(A0, B0, n_workers=4, lam=0.1, split="shared" if method == "isaga-shared" else "sorted")
    m, tau = 7, 2
    safe = theory.step_size(p, method, m, tau, batch=batch)
    for factor in (100.0, 1e150):
        step = factor * safe
        with pytest.raises(blockcd.DivergenceError) as info:
            blockcd.run(p, method, m=m, tau=tau, step=step, iters=2000, batch=batch)
        msg = str(info.value)
        assert f"step = {step:.4g}" in msg, msg
        assert f"the largest step the theory allows here is {safe:.4g}" in msg, msg
        assert method in msg
    # the theory step itself does not diverge
    h = blockcd.run(p, method, m=m, tau=tau, iters=200, batch=batch)
    assert np.all(np.isfinite(h.dist2)) and h.dist2[-1] < h.dist2[0]


def test_divergence_of_is_asgd_names_the_step():
    # eta <= 1/L is checked up front; just below it, far above the theory's eta, the iterates blow up
    p = problems.synthetic(4, 6, 5, interpolating=True, heterogeneity=1.0, seed=4)
    safe = theory.step_size(p, "is-asgd", 5, 1)
    step = 0.999 / p.L
    assert step > 5 * safe
    with pytest.raises(blockcd.DivergenceError, match=r"step = .*theory allows here is") as info:
        blockcd.run(p, "is-asgd", m=5, tau=1, step=step, iters=5000)
    assert f"{step:.4g}" in str(info.value) and f"{safe:.4g}" in str(info.value)


def test_divergence_error_is_a_floating_point_error():
    assert issubclass(blockcd.DivergenceError, FloatingPointError)


def test_history_load_rejects_pickles(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, meta=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ValueError, match="pickle"):
        History.load(path)


@pytest.fixture(scope="module")
def SGD_P():
    return problems.synthetic(4, 10, 8, heterogeneity=1.0, seed=0)


@pytest.mark.parametrize("schedule, exc, match", [
    (lambda k: -0.1, ValueError, r"step = -0\.1 at iteration k = 0"),
    (lambda k: 0.1 if k < 3 else float("nan"), ValueError, r"step = nan at iteration k = 3"),
    (lambda k: 0.1 if k < 5 else np.inf, ValueError, r"step = inf at iteration k = 5"),
    (lambda k: 0.1 if k < 2 else 0.0, ValueError, r"step = 0\.0 at iteration k = 2"),
    (lambda k: "0.1", TypeError, r"must return a real number.*iteration k = 0"),
    (lambda k: None if k == 4 else 0.1, TypeError, r"NoneType None at iteration k = 4"),
])
@pytest.mark.parametrize("engine", [blockcd.run, blockcd.reference.run])
def test_a_bad_step_schedule_names_the_iteration(SGD_P, schedule, exc, match, engine):
    with pytest.raises(exc, match=match):
        engine(SGD_P, "is-sgd", m=4, tau=1, step=schedule, iters=10)


@pytest.mark.parametrize("method", ["ibcd", "isega", "is-saga", "is-asgd", "ibgd"])
def test_decreasing_is_for_is_sgd_only(SGD_P, method):
    with pytest.raises(ValueError, match=r"step='decreasing' applies to 'is-sgd' only"):
        blockcd.run(SGD_P, method, m=4, tau=1, step="decreasing", iters=5)


@pytest.mark.parametrize("step, exc, match", [
    ("decreasin", ValueError, r"step must be a float > 0, None, 'decreasing' or a callable"),
    ([0.1], TypeError, r"step must be a float > 0, None, 'decreasing' or a callable"),
    (-1.0, ValueError, r"step must be > 0"),
])
def test_bad_step_is_rejected(SGD_P, step, exc, match):
    with pytest.raises(exc, match=match):
        blockcd.run(SGD_P, "is-sgd", m=4, tau=1, step=step, iters=5)


def test_is_asgd_rejects_a_schedule(SGD_P):
    with pytest.raises(ValueError, match=r"not to 'is-asgd'"):
        blockcd.run(SGD_P, "is-asgd", m=4, tau=4, step=lambda k: 0.1, iters=5)


def test_decreasing_needs_independent_sampling(SGD_P):
    with pytest.raises(ValueError, match=r"sampling must be 'independent'"):
        blockcd.run(SGD_P, "is-sgd", m=4, tau=1, step="decreasing", sampling="shared", iters=5)


# ---------------------------------------------------------------- silent answers made errors (issue: nothing silently wrong)
def test_a_start_whose_error_overflows_is_refused():
    """x0 = 1e200: ||x0 - x*||^2 overflows to inf; the run used to record inf everywhere, no divergence,
    and stop at k = 0 as 'converged' under until=."""
    p = problems.synthetic(4, 10, 6, seed=1)
    for kw in ({}, {"until": 1e-6}):
        with pytest.raises(ValueError, match=r"start point's error \|\|x0 - x\*\|\|\^2 = inf is not a finite"):
            blockcd.run(p, "ibcd", m=3, tau=1, iters=5, x0=np.full(6, 1e200), **kw)
    with pytest.raises(ValueError, match="start point's error"):
        blockcd.reference.run(p, "ibcd", m=3, tau=1, iters=5, x0=np.full(6, 1e200))


@pytest.mark.parametrize("alias", ["gd", "dense", "GD"])
def test_the_dense_aliases_refuse_tau_below_m(alias):
    """'gd' and 'dense' name the dense method: with tau < m they used to run sparse IBCD silently."""
    p = problems.synthetic(4, 10, 6, seed=1)
    with pytest.raises(ValueError, match=rf"method {alias!r} is the dense method.*tau = m = 3, got tau = 2"):
        blockcd.run(p, alias, m=3, tau=2, iters=5)
    assert blockcd.run(p, alias, m=3, tau=3, iters=5).tau == 3


@pytest.mark.parametrize("until", [1.0, 2.0])
def test_until_is_a_relative_accuracy_below_one(until):
    """until = 2 used to stop at k = 0 ('reached'): it must lie in (0, 1), as compare_runs' eps."""
    p = problems.synthetic(4, 10, 6, seed=1)
    with pytest.raises(ValueError, match=r"until must be in \(0, 1\)"):
        blockcd.run(p, "ibcd", m=3, tau=1, iters=5, until=until)

"""The non-convex problem and the paper's Theorem 7 (chapter 5, "Without convexity").

The oracle against finite differences, the smoothness constant against Hessian
eigenvalues, the errors where convex theory has no answer, the history's
||grad f(x^k)||^2, and the bound and the tau threshold measured over seeds with
tolerances from standard errors.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import Z

import blockcd
from blockcd import History, problems, reference, theory
from blockcd.oracle import dpsi, psi


def _data(N=200, d=12, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, d))
    y = np.sign(A @ rng.standard_normal(d) + 0.5 * rng.standard_normal(N))
    return A, y


@pytest.fixture(scope="module")
def P():
    A, y = _data()
    return problems.nonconvex(A, y, n_workers=5, w=0.5, split="sorted", seed=0)


def _fd_grad(f, x, h=1e-6):
    E = np.eye(x.size)
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in E])


# ------------------------------------------------------------------ the oracle
@pytest.mark.parametrize("layout", ["dense", "sparse", "uneven"])
def test_gradients_match_finite_differences(layout):
    A, y = _data(N=203 if layout == "uneven" else 200)
    if layout == "sparse":
        A = sp.csr_matrix(np.where(np.abs(A) > 0.7, A, 0.0))
    p = problems.nonconvex(A, y, n_workers=5, w=0.7, lam=0.01, seed=1)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = 1.5 * rng.standard_normal(p.d)
        # central differences of a smooth f: error O(h^2 f''') ~ 1e-10; rounding ~ 1e-16/h ~ 1e-10
        assert np.allclose(p.grad(x), _fd_grad(p.f, x), atol=1e-7)
        G = np.asarray(p.local_grads(x))
        assert np.allclose(G.mean(axis=0), p.grad(x), atol=1e-13)
        for i in (0, p.n - 1):
            w = p.worker(i)
            assert np.allclose(w.grads(x), G[i], atol=1e-13)
            assert np.allclose(w.grads(x), _fd_grad(w.f, x), atol=1e-7)
            cols = np.array([0, 3, p.d - 1])
            assert np.allclose(w.partial_grads(x, cols), G[i, cols], atol=1e-13)
        idx = np.tile(np.arange(int(p.sizes.min())), (p.n, 1))  # the first l_min rows of every worker
        full = np.all(p.sizes == p.sizes[0])                       # then they are all its rows
        B = p.minibatch_grads(x, idx)
        assert np.allclose(B[0], p.worker(0).minibatch_grads(x, idx[0]), atol=1e-13)
        assert not full or np.allclose(B, G, atol=1e-12)


def test_psi_and_its_derivatives():
    x = np.linspace(-4, 4, 4001)
    w = 0.3
    assert np.allclose(dpsi(w, x), np.gradient(w * x**2 / (1 + x**2), x), atol=1e-5)
    second = w * (2 - 6 * x**2) / (1 + x**2) ** 3
    assert np.isclose(second.max(), 2 * w) and np.isclose(second.min(), -w / 2, atol=1e-6)
    assert np.isclose(psi(w, np.array([1.0, -1.0])), w)


def test_hessian_matches_the_gradient_and_L_bounds_its_eigenvalues(P):
    rng = np.random.default_rng(3)
    lo = math.inf
    for scale in (0.3, 1.0, 3.0):
        for _ in range(10):
            x = scale * rng.standard_normal(P.d)
            H = P.hessian(x)
            ev = np.linalg.eigvalsh(H)
            assert ev[-1] <= P.L * (1 + 1e-12) and -ev[0] <= P.L * (1 + 1e-12)
            assert ev[0] >= -P.nonconvex / 2 - 1e-12            # psi'' >= -w/2, the data part is PSD
            lo = min(lo, ev[0])
        x = rng.standard_normal(P.d)
        J = np.array([(P.grad(x + 1e-6 * e) - P.grad(x - 1e-6 * e)) / 2e-6 for e in np.eye(P.d)])
        assert np.allclose(J, P.hessian(x), atol=1e-7)
    assert lo < 0                                                # f is not convex
    # L is attained up to the data: at x = 0 psi'' = 2w on every coordinate
    assert np.linalg.eigvalsh(P.hessian(np.zeros(P.d)))[-1] >= 0.5 * P.L


def test_dissimilarity_bound_holds_everywhere(P):
    rng = np.random.default_rng(4)
    worst = max(P.dissimilarity(s * rng.standard_normal(P.d)) for s in (0.1, 1, 10, 100) for _ in range(25))
    assert worst <= P.nu2_bound
    A, y = _data()
    same = problems.nonconvex(A, y, n_workers=4, w=0.5, split="identical")
    assert same.nu2_bound == 0.0 and same.dissimilarity(rng.standard_normal(same.d)) < 1e-25
    assert problems.nonconvex(A, A @ np.ones(A.shape[1]), n_workers=4, loss="ridge").nu2_bound == math.inf


def test_local_variance_bound(P):
    l = int(P.sizes.min())
    assert theory.local_variance_bound(P, l) == 0.0
    rng = np.random.default_rng(5)
    x = rng.standard_normal(P.d)
    b = 4
    G = np.asarray(P.local_grads(x))
    draws = np.array([P.minibatch_grads(x, np.array([rng.choice(l, b, replace=False) for _ in range(P.n)]))
                      for _ in range(4000)])
    per_draw = np.mean(np.sum((draws - G) ** 2, axis=2), axis=1)   # 4000 independent draws of the average
    var, se = per_draw.mean(), per_draw.std(ddof=1) / np.sqrt(per_draw.size)
    assert var - Z * se <= theory.local_variance_bound(P, b)


# ------------------------------------------------------------------ no x*
def test_constants_that_need_x_star_raise(P):
    assert P.convex is False and problems.breast_cancer(4).convex is True
    for name in ("x_star", "f_star", "mu", "sigma_star2"):
        with pytest.raises(ValueError, match=r"non-convex.*no x\*.*grad2"):
            getattr(P, name)
    assert P.f_lower == 0.0 and P.f(np.zeros(P.d)) > 0
    s = P.summary()
    assert "mu" not in s and s["nu2_bound"] == P.nu2_bound


def test_methods_and_theory_that_need_convexity_say_so(P):
    with pytest.raises(ValueError, match=r"'ibcd' does not run on a non-convex problem.*'is-sgd'"):
        blockcd.run(P, "ibcd", m=4, tau=1, iters=5, step=0.1)
    with pytest.raises(ValueError, match=r"until .* no x\*"):
        blockcd.run(P, "is-sgd", m=4, tau=1, iters=5, until=1e-3)
    with pytest.raises(ValueError, match="non-convex"):
        blockcd.run(P, "is-sgd", m=4, tau=1, iters=50, step="decreasing")
    with pytest.raises(ValueError, match="independent sampling"):
        blockcd.run(P, "is-sgd", m=4, tau=1, iters=50, sampling="shared")
    for f in (theory.step_size, theory.expected_smoothness):
        with pytest.raises(ValueError, match="non-convex .*nonconvex_step"):
            f(P, "is-sgd", 4, 1)
    h = blockcd.run(P, "is-sgd", m=4, tau=1, iters=50)
    with pytest.raises(ValueError, match="non-convex problem, which has no x\\*: use History.grad2"):
        h.iters_to(1e-3)


@pytest.mark.parametrize("kwargs, err, match", [
    ({"w": 0.0}, ValueError, "w must be > 0"),
    ({"w": -1.0}, ValueError, "w must be > 0"),
    ({"w": "big"}, TypeError, "w must be"),
    ({"loss": "hinge"}, ValueError, "loss must be one of"),
    ({"lam": -1.0}, ValueError, "lam must be >= 0"),
])
def test_bad_problem_arguments(kwargs, err, match):
    A, y = _data()
    with pytest.raises(err, match=match):
        problems.nonconvex(A, y, n_workers=4, **kwargs)


def test_bad_theory_arguments(P):
    with pytest.raises(ValueError, match=r"t must be >= n \(q \+ 2\(1 - q\)/n\)\^2 / q"):
        theory.nonconvex_step(P, 4, 1, 2)
    with pytest.raises(ValueError, match=r"t must be an integer in \[1, inf\]"):
        theory.nonconvex_step(P, 4, 1, 0)
    with pytest.raises(ValueError, match="tau must be"):
        theory.nonconvex_step(P, 4, 5, 100)
    with pytest.raises(ValueError, match=r"step must be <= 1/\(L \(1 \+ omega/n\)\)"):
        theory.nonconvex_bound(P, 4, 1, 100, step=10.0)
    with pytest.raises(ValueError, match="nu2 must be >= 0"):
        theory.paper_nonconvex_bound(P, 4, 1, 100, nu2=-1.0)
    with pytest.raises(ValueError, match="base must be > 0"):
        theory.nonconvex_threshold(P, 4, 0.1, 0.0)


# ------------------------------------------------------------------ the history
def test_history_records_the_gradient_norm(P, tmp_path):
    T = 60
    h = blockcd.run(P, "is-sgd", m=4, tau=1, batch=3, iters=T, seed=7)
    assert h.step == theory.nonconvex_step(P, 4, 1, T)           # the Theorem 7 step for the horizon
    assert np.all(np.isnan(h.dist2)) and np.all(np.isnan(h.gap))
    assert h.grad2.shape == h.nu2.shape == (T + 1,)
    g = P.grad(h.x)
    assert np.isclose(h.grad2[-1], g @ g, rtol=1e-12)
    assert np.isclose(h.grad2[0], P.grad(np.zeros(P.d)) @ P.grad(np.zeros(P.d)), rtol=1e-12)
    assert np.isclose(h.nu2[0], P.dissimilarity(np.zeros(P.d)), rtol=1e-12)
    again = blockcd.run(P, "is-sgd", m=4, tau=1, batch=3, iters=T, seed=7)
    assert np.array_equal(h.grad2, again.grad2) and np.array_equal(h.x, again.x)   # bit for bit
    h.save(tmp_path / "h.npz")
    back = History.load(tmp_path / "h.npz")
    assert np.array_equal(back.grad2, h.grad2) and np.array_equal(back.nu2, h.nu2)
    convex = blockcd.run(problems.breast_cancer(4), "is-sgd", m=5, tau=1, iters=5)
    assert convex.grad2 is None and convex.nu2 is None


@pytest.mark.parametrize("tau, batch", [(1, 2), (2, None), (4, 40)])
def test_reference_agrees_with_the_simulator(P, tau, batch):
    diff = reference.difference(P, "is-sgd", m=4, tau=tau, batch=batch, iters=40, seed=3)
    assert diff < 1e-12


# ------------------------------------------------------------------ Theorem 7 measured
@pytest.fixture(scope="module")
def Q():
    A, y = _data(N=400, d=20, seed=1)
    return problems.nonconvex(A, y, n_workers=10, w=0.5, split="sorted", seed=0)


def test_gradient_norm_below_the_bounds(Q):
    """E||grad f(x-hat_T)||^2, the mean over k = 0..T of grad2, over 8 seeds, below both bounds.

    Each seed's mean is one independent draw; the tolerance is Z standard errors of the mean over seeds.
    """
    m, T, l = 20, 400, int(Q.sizes.min())
    for tau in (1, 2, 20):
        hs = [blockcd.run(Q, "is-sgd", m=m, tau=tau, batch=l, iters=T, seed=s) for s in range(8)]
        M = np.array([h.grad2.mean() for h in hs])
        est, se = M.mean(), M.std(ddof=1) / np.sqrt(len(M))
        nu2 = max(h.nu2.max() for h in hs)
        assert nu2 <= Q.nu2_bound
        for bound in (theory.paper_nonconvex_bound(Q, m, tau, T), theory.paper_nonconvex_bound(Q, m, tau, T, nu2=nu2),
                      theory.nonconvex_bound(Q, m, tau, T, batch=l, nu2=nu2)):
            assert est - Z * se <= bound
    # with minibatches the book's bound carries the local variance
    hs = [blockcd.run(Q, "is-sgd", m=m, tau=2, batch=4, iters=T, seed=s) for s in range(8)]
    M = np.array([h.grad2.mean() for h in hs])
    assert M.mean() - Z * M.std(ddof=1) / np.sqrt(8) <= theory.nonconvex_bound(Q, m, 2, T, batch=4)


def test_past_the_threshold_a_larger_tau_does_not_help():
    """Fixed step, short horizon: the gain of tau = m over tau is below 2 past the predicted threshold.

    M(tau) is a mean over 6 seeds with standard error S(tau); M(m) is deterministic (exact local gradients,
    every block sent), so the ratio M(tau)/M(m) has standard error S(tau)/M(m), and Z of them are allowed.
    """
    A, y = _data(N=800, d=20, seed=0)
    p = problems.nonconvex(A, y, n_workers=10, w=0.5, split="sorted", seed=0)
    m, T, l = 20, 30, int(p.sizes.min())
    step = 1.0 / (p.L * (1 + (m - 1) / p.n))                    # allowed at every tau
    M, S, nu2 = {}, {}, 0.0
    for tau in (1, 2, 4, 5, 10, 20):
        hs = [blockcd.run(p, "is-sgd", m=m, tau=tau, batch=l, iters=T, step=step, seed=s) for s in range(6)]
        v = np.array([h.grad2.mean() for h in hs])
        M[tau], S[tau] = v.mean(), v.std(ddof=1) / np.sqrt(len(v))
        nu2 = max(nu2, max(h.nu2.max() for h in hs))
    t_star = theory.nonconvex_threshold(p, m, step, M[20], nu2=nu2, batch=l)
    assert 1 < t_star < m
    for tau, v in M.items():
        if tau >= t_star:
            assert v / M[20] - Z * S[tau] / M[20] <= 2
    assert M[1] / M[20] - Z * S[1] / M[20] > 2                  # below it, sending more does help


def test_convergence_plot_draws_grad2_and_refuses_dist2(P):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from blockcd import plotting

    h = blockcd.run(P, "is-sgd", m=4, tau=1, iters=20)
    fig, ax = plt.subplots()
    plotting.convergence([h], ax, y="grad2")
    assert "nabla f" in ax.get_ylabel()
    with pytest.raises(ValueError, match="non-convex problem has none: use y='grad2'"):
        plotting.convergence([h], ax)
    with pytest.raises(ValueError, match="y must be one of"):
        plotting.convergence([h], ax, y="loss")
    plt.close(fig)

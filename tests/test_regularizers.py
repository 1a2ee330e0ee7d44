"""Regularisers, composite problems and ISEGA's prox step.

The prox operators are checked against their definition (the prox point
minimises R(y) + ||y - x||^2/(2 step)), the composite minimisers against
their optimality conditions and, for ridge + l1, against scikit-learn's
``Lasso``; ISEGA with l1 and with the non-separable l2norm converges linearly
to the composite minimiser; every other method rejects a problem with R.
"""

import numpy as np
import pytest

import blockcd
from blockcd import problems, reference, registry, theory
from blockcd import regularizers as R

EPS = 1e-10


def lasso_data(seed=0, N=120, d=15):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, d))
    b = A @ (rng.standard_normal(d) * (rng.random(d) < 0.5)) + 0.3 * rng.standard_normal(N)
    return A, b


@pytest.fixture(scope="module")
def composite():
    """Heterogeneous (sorted) ridge with l1 and with l2norm, and logistic with l1: 4 workers, d = 15."""
    A, b = lasso_data()
    return {
        "ridge-l1": problems.ridge(A, b, n_workers=4, reg=R.l1(0.05), split="sorted"),
        "ridge-l2norm": problems.ridge(A, b, n_workers=4, reg=R.l2norm(1.0), split="sorted"),
        "logistic-l1": problems.logistic(A, b > 0, n_workers=4, lam=0.01, reg=R.l1(0.02), split="sorted"),
    }


# ---------------------------------------------------------------- prox operators
@pytest.mark.parametrize("reg", [R.l1(0.7), R.l2norm(0.7), R.l1(0.0)], ids=repr)
def test_prox_minimises_its_definition(reg):
    """prox_{s R}(x) = argmin_y R(y) + ||y - x||^2/(2 s): no nearby or random point does better."""
    rng = np.random.default_rng(1)
    for step in (0.1, 1.0, 5.0):
        for scale in (0.1, 1.0, 10.0):  # inside and outside the thresholds
            x = scale * rng.standard_normal(6)
            p = reg.prox(x, step)

            def obj(y, x=x, step=step):
                return reg(y) + np.sum((y - x) ** 2) / (2 * step)

            others = [p + 1e-4 * rng.standard_normal(6) for _ in range(50)] + [rng.standard_normal(6) * scale]
            others += [np.zeros(6), x]
            assert all(obj(p) <= obj(y) + 1e-15 for y in others)


def test_prox_formulas_and_values():
    x = np.array([3.0, -0.5, 0.2, -2.0])
    assert np.array_equal(R.l1(1.0).prox(x, 0.5), [2.5, -0.0, 0.0, -1.5])
    assert R.l1(2.0)(x) == 2.0 * 5.7
    n = np.linalg.norm(x)
    assert R.l2norm(2.0)(x) == pytest.approx(2.0 * n, rel=1e-15)
    assert np.allclose(R.l2norm(1.0).prox(x, 1.0), x * (1 - 1 / n), rtol=1e-15)
    assert np.array_equal(R.l2norm(1.0).prox(x, n), np.zeros(4))  # at the threshold: 0
    # l2norm moves every coordinate at once (not separable), l1 each on its own
    assert R.l1(1.0).separable and not R.l2norm(1.0).separable
    assert R.parse("l1:0.5") == R.l1(0.5) and R.parse("l2norm:2") == R.l2norm(2.0)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: R.l1(-1.0), ValueError, r"^w must be >= 0"),
    (lambda: R.l2norm("a"), TypeError, r"^w must be a real number"),
    (lambda: R.l1(1.0).prox(np.ones(3), 0.0), ValueError, r"^step must be > 0"),
    (lambda: R.l1(1.0).prox(np.ones((2, 3)), 1.0), ValueError, r"^x must be a finite 1-D array"),
    (lambda: R.parse("l3:1"), ValueError, r"^reg must be KIND:WEIGHT"),
    (lambda: R.parse("l1:abc"), ValueError, r"^reg's weight must be a number"),
    (lambda: problems.ridge(np.eye(3), np.ones(3), n_workers=1, reg="l1"), TypeError, r"^reg must be None or"),
    (lambda: R.prox_gradient(lambda x: x, 1.0, 1.0, "l1", np.ones(2)), TypeError, r"^reg must be a blockcd"),
])
def test_bad_arguments_name_the_parameter(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------------- composite minimisers
def test_ridge_l1_minimiser_equals_scikit_learn_lasso():
    """With lam = 0 and even workers, f = (1/(2N))||Ax - b||^2 + w||x||_1 is Lasso's objective (alpha = w)."""
    from sklearn.linear_model import Lasso

    A, b = lasso_data()
    w = 0.05
    p = problems.ridge(A, b, n_workers=4, reg=R.l1(w), split="sorted")
    lasso = Lasso(alpha=w, fit_intercept=False, tol=1e-15, max_iter=10**6).fit(A, b)
    assert 0 < np.sum(p.x_star != 0) < p.d  # a sparse minimiser: the l1 term is active
    # scikit-learn's coordinate descent stops on its duality gap (tol); ours certifies 1e-13 relative
    assert np.linalg.norm(lasso.coef_ - p.x_star) <= 1e-10 * np.linalg.norm(p.x_star)
    assert p.f_star == pytest.approx(0.5 * np.mean((A @ lasso.coef_ - b) ** 2) + w * np.abs(lasso.coef_).sum(),
                                     rel=1e-12)


@pytest.mark.parametrize("key", ["ridge-l1", "ridge-l2norm", "logistic-l1"])
def test_composite_minimiser_meets_its_optimality_conditions_to_1e12(composite, key):
    """-grad F(x*) in dR(x*): for l1, grad_j = -w sign(x_j) on the support and |grad_j| <= w off it;
    for l2norm, grad = -w x/||x||.  An error e in x* moves grad F by up to L e, so 1e-12 L ||x*||."""
    p = composite[key]
    x, g, w = p.x_star, p.grad(p.x_star), p.reg.weight
    tol = 1e-12 * p.L * np.linalg.norm(x)
    if p.reg.kind == "l1":
        on = x != 0
        assert 0 < on.sum() < p.d
        assert np.max(np.abs(g[on] + w * np.sign(x[on]))) <= tol
        assert np.max(np.abs(g[~on])) <= w + tol
    else:
        assert np.linalg.norm(x) > 0
        assert np.linalg.norm(g + w * x / np.linalg.norm(x)) <= tol
    # f includes R; f* = f(x*); x* minimises f (random nearby points are no better)
    assert p.f(x) == pytest.approx(p.workers().f(x) + p.reg(x), rel=1e-15)
    assert p.f_star == p.f(x)
    rng = np.random.default_rng(0)
    assert all(p.f(x + 1e-3 * rng.standard_normal(p.d)) >= p.f_star for _ in range(20))
    assert p.summary()["reg"] == repr(p.reg)


def test_a_large_weight_gives_the_zero_minimiser():
    A, b = lasso_data()
    p = problems.ridge(A, b, n_workers=2, reg=R.l2norm(1e3))
    assert np.array_equal(p.x_star, np.zeros(p.d)) and p.f_star == p.f(np.zeros(p.d))


# ---------------------------------------------------------------- ISEGA with a prox step
@pytest.mark.parametrize("key", ["ridge-l1", "ridge-l2norm", "logistic-l1"])
@pytest.mark.parametrize("tau", [1, 3])
def test_isega_with_prox_converges_linearly_to_the_composite_minimiser(composite, key, tau):
    """Heterogeneous workers (sigma*^2 > 0), R separable or not: ISEGA reaches EPS within the book's bound,
    and also at the paper's step (Theorem 3) within the paper's bound."""
    p, m = composite[key], 15
    assert p.sigma_star2 > 1e-3
    K = theory.predicted_iterations(p, "isega", m, tau, EPS)
    h = blockcd.run(p, "isega", m=m, tau=tau, iters=int(K) + 1, seed=1)
    k = h.iters_to(EPS)
    assert k is not None and k <= K, (k, K)
    half = len(h.dist2) // 2  # linear: it keeps contracting after the first half
    assert h.dist2[-1] <= 1e-3 * h.dist2[half] or h.dist2[-1] <= 1e-25 * h.dist2[0]
    Kp = theory.paper_iterations(p, "isega", m, tau, EPS)
    hp = blockcd.run(p, "isega", m=m, tau=tau, iters=int(Kp) + 1, seed=1, step=theory.paper_step(p, "isega", m, tau))
    assert hp.iters_to(EPS) is not None and hp.iters_to(EPS) <= Kp


def test_isega_with_prox_simulator_equals_the_reference(composite):
    for key in ("ridge-l2norm", "logistic-l1"):
        assert reference.difference(composite[key], "isega", m=4, tau=1, iters=40, seed=2) <= 1e-12


def test_isega_at_tau_m_is_proximal_gradient_descent(composite):
    p, iters = composite["ridge-l2norm"], 50
    step = theory.step_size(p, "isega", 15, 15)
    h = blockcd.run(p, "isega", m=15, tau=15, iters=iters)
    x = np.zeros(p.d)
    for _ in range(iters):
        x = p.reg.prox(x - step * p.local_grads(x).mean(axis=0), step)
    # the shifts change the summation (hbar + mean(G - h)): equal to rounding
    assert np.linalg.norm(h.x - x) <= 1e-13 * np.linalg.norm(x)


@pytest.mark.parametrize("method", [m for m in blockcd.METHODS if not registry.get(m).prox])
def test_methods_whose_theory_has_no_R_reject_it_naming_those_that_accept_one(composite, method):
    p = composite["ridge-l1"]
    with pytest.raises(ValueError, match=rf"^'{method}' does not take a regulariser .* accept one \(a prox step\): "
                                         r"'isega' and 'is-sgd-async'$"):
        blockcd.run(p, method, m=5, tau=1, iters=3)
    with pytest.raises(ValueError, match="does not take a regulariser"):
        reference.run(p, method, m=5, tau=1, iters=3)

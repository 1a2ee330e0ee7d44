"""Problems: splits across workers, the oracle (f, gradients, minibatches) and the constants.

Every constant is recomputed here from the raw data with plain numpy (an
explicit Hessian, explicit per-worker matrices), independently of the
library's storage layout (padded, sparse, shared).
"""

import itertools

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from conftest import data, worker_rows

from blockcd import problems

SPLITS = ("iid", "sorted", "contiguous", "identical")


# --------------------------------------------------------- reference oracle
def pm1(y):
    """Labels mapped to -1/+1 as the library documents (larger value -> +1)."""
    return np.where(y == np.unique(y)[1], 1.0, -1.0)


def ref_local_grad(p, A, t, i, x):
    """grad f_i(x) from worker i's raw rows: ridge (1/l) A_i^T (A_i x - b_i) or logistic, plus lam x."""
    r = worker_rows(p, i)
    Ai, ti = A[r], t[r]
    if p.loss == "ridge":
        g = Ai.T @ (Ai @ x - ti) / len(r)
    else:
        yi = pm1(t)[r]
        g = -Ai.T @ (yi / (1 + np.exp(yi * (Ai @ x)))) / len(r)
    return g + p.lam * x


def ref_f(p, A, t, x):
    vals = []
    for i in range(p.n):
        r = worker_rows(p, i)
        z = A[r] @ x
        if p.loss == "ridge":
            vals.append(0.5 * np.mean((z - t[r]) ** 2))
        else:
            vals.append(np.mean(np.logaddexp(0, -pm1(t)[r] * z)))
    return np.mean(vals) + 0.5 * p.lam * x @ x


def worker_hessians(p, A):
    """Data Hessians A_i^T A_i / l_i of each worker (without lam or the logistic factor)."""
    return [A[worker_rows(p, i)].T @ A[worker_rows(p, i)] / len(worker_rows(p, i)) for i in range(p.n)]


def build(loss, A, t, n, split, lam=None, seed=3):
    if loss == "ridge":
        return problems.ridge(A, t, n_workers=n, lam=0.1 if lam is None else lam, split=split, seed=seed)
    return problems.logistic(A, (t > 0).astype(float), n_workers=n, lam=0.05 if lam is None else lam,
                             split=split, seed=seed)


def target(loss, t):
    return t if loss == "ridge" else (t > 0).astype(float)


# ------------------------------------------------------------------- splits
@pytest.mark.parametrize("N,n", [(23, 4), (10, 3), (7, 7), (100, 9), (5, 1)])
@pytest.mark.parametrize("split", ["iid", "sorted", "contiguous"])
def test_split_sizes_differ_by_at_most_one_and_no_row_is_dropped(N, n, split):
    A, b = data(N, 3, seed=N)
    p = problems.ridge(A, b, n_workers=n, split=split, lam=0.1)
    assert p.n == n and p.sizes.shape == (n,)
    assert p.sizes.sum() == N
    assert p.sizes.max() - p.sizes.min() <= 1
    assert np.array_equal(np.sort(p.order), np.arange(N))  # a permutation: every row exactly once
    assert np.array_equal(p.offsets, np.concatenate(([0], np.cumsum(p.sizes))))
    # and each worker really holds those rows: its local gradient is the one of its rows
    x = np.random.default_rng(0).standard_normal(3)
    G = p.local_grads(x)
    for i in range(n):
        assert np.allclose(G[i], ref_local_grad(p, A, b, i, x), rtol=1e-12, atol=1e-13)


def test_iid_split_is_a_seeded_shuffle_and_contiguous_keeps_the_order():
    A, b = data(40, 3)
    p1 = problems.ridge(A, b, n_workers=4, split="iid", seed=1)
    p1b = problems.ridge(A, b, n_workers=4, split="iid", seed=1)
    p2 = problems.ridge(A, b, n_workers=4, split="iid", seed=2)
    assert np.array_equal(p1.order, p1b.order)
    assert not np.array_equal(p1.order, p2.order)
    assert not np.array_equal(p1.order, np.arange(40))
    assert np.array_equal(problems.ridge(A, b, n_workers=4, split="contiguous").order, np.arange(40))


@pytest.mark.parametrize("N,n", [(23, 4), (40, 5)])
def test_sorted_split_orders_worker_targets(N, n):
    A, b = data(N, 3, seed=5)
    p = problems.ridge(A, b, n_workers=n, split="sorted", lam=0.1)
    ranges = [(b[worker_rows(p, i)].min(), b[worker_rows(p, i)].max()) for i in range(n)]
    for (lo1, hi1), (lo2, hi2) in itertools.pairwise(ranges):
        assert hi1 <= lo2
    # logistic: the -1 labels fill the first workers, the +1 labels the last ones
    y = (b > 0.3).astype(float)
    q = problems.logistic(A, y, n_workers=n, lam=0.1, split="sorted")
    labels = np.concatenate([y[worker_rows(q, i)] for i in range(n)])
    assert np.all(np.diff(labels) >= 0)


def test_identical_split_gives_every_worker_all_rows():
    A, b = data(12, 4)
    p = problems.ridge(A, b, n_workers=20, split="identical", lam=0.1)  # more workers than rows is fine here
    assert p.n == 20 and np.all(p.sizes == 12)
    x = np.random.default_rng(1).standard_normal(4)
    G = p.local_grads(x)
    assert G.shape == (20, 4)
    assert np.allclose(G, p.grad(x), rtol=1e-13, atol=1e-14)
    assert p.rho0 == 1.0
    assert p.sigma_star2 == pytest.approx(0.0, abs=1e-25)
    assert p.L_max == pytest.approx(p.L, rel=1e-12)


# ------------------------------------------------------------------- oracle
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("loss", ["ridge", "logistic"])
def test_oracle_f_grad_local_grads(loss, split, sparse, uneven_data):
    A, t = uneven_data
    t = target(loss, t)
    p = build(loss, sp.csr_matrix(A) if sparse else A, t, 4, split)
    rng = np.random.default_rng(2)
    for _ in range(3):
        x = rng.standard_normal(7)
        G, fx = p.local_grads(x, with_f=True)
        assert G.shape == (4, 7)
        assert fx == pytest.approx(p.f(x), rel=1e-13)
        assert p.f(x) == pytest.approx(ref_f(p, A, t, x), rel=1e-12)
        for i in range(4):
            assert np.allclose(G[i], ref_local_grad(p, A, t, i, x), rtol=1e-11, atol=1e-13)
        assert np.allclose(p.grad(x), G.mean(axis=0), rtol=1e-12, atol=1e-14)
        # central finite differences: truncation O(h^2 f''') ~ 1e-10, rounding O(eps f / h) ~ 1e-10
        h = 1e-5
        E = np.eye(7) * h
        fd = np.array([(p.f(x + e) - p.f(x - e)) / (2 * h) for e in E])
        assert np.allclose(fd, p.grad(x), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("loss", ["ridge", "logistic"])
@pytest.mark.parametrize("sparse", [False, True])
def test_minibatch_grads(loss, sparse):
    # even split: the full local batch b = l_i is the local gradient
    A, t = data(20, 5, seed=4)
    t = target(loss, t)
    p = build(loss, sp.csr_matrix(A) if sparse else A, t, 4, "iid")
    x = np.random.default_rng(3).standard_normal(5)
    full = np.tile(np.arange(5), (4, 1))
    assert np.allclose(p.minibatch_grads(x, full), p.local_grads(x), rtol=1e-12, atol=1e-14)
    # a reordered full batch too
    assert np.allclose(p.minibatch_grads(x, full[:, ::-1]), p.local_grads(x), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("loss", ["ridge", "logistic"])
def test_minibatch_of_single_rows_on_uneven_splits(loss, split, uneven_data):
    A, t = uneven_data
    t = target(loss, t)
    for AA in (A, sp.csr_matrix(A)):
        p = build(loss, AA, t, 4, split)
        x = np.random.default_rng(4).standard_normal(7)
        idx = np.array([[0, 4], [5, 1], [2, 2], [4, 3]])  # local row numbers (worker 3 holds 5 rows, or all)
        MB = p.minibatch_grads(x, idx)
        for i in range(4):
            rows = worker_rows(p, i)[idx[i]]
            ref = np.mean([ref_local_grad_row(p, A, t, r, x) for r in rows], axis=0)
            assert np.allclose(MB[i], ref, rtol=1e-12, atol=1e-13)


def ref_local_grad_row(p, A, t, r, x):
    a = A[r]
    if p.loss == "ridge":
        return a * (a @ x - t[r]) + p.lam * x
    y = pm1(t)[r]
    return -y * a / (1 + np.exp(y * (a @ x))) + p.lam * x


# ---------------------------------------------------------------- constants
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("loss", ["ridge", "logistic"])
def test_smoothness_and_convexity_constants_from_explicit_hessians(loss, split, uneven_data):
    A, t = uneven_data
    p = build(loss, A, target(loss, t), 4, split)
    c = 1.0 if loss == "ridge" else 0.25  # bound on phi''
    His = worker_hessians(p, A)
    H = np.mean(His, axis=0)
    ev = np.linalg.eigvalsh(H)
    assert p.L == pytest.approx(c * ev[-1] + p.lam, rel=1e-12)
    if loss == "ridge":
        assert p.mu == pytest.approx(ev[0] + p.lam, rel=1e-10)
    else:
        assert p.mu == p.lam
    Li = np.array([c * np.linalg.eigvalsh(Hi)[-1] + p.lam for Hi in His])
    assert np.allclose(p.L_i, Li, rtol=1e-12)
    assert p.L_max == pytest.approx(Li.max(), rel=1e-12)
    assert p.r == pytest.approx(Li.max() / p.L, rel=1e-12)
    assert 1 - 1e-12 <= p.r <= p.n + 1e-12
    assert p.kappa == pytest.approx(p.L / p.mu, rel=1e-15)
    Ls = np.array([c * max(A[r] @ A[r] for r in worker_rows(p, i)) + p.lam for i in range(4)])
    assert np.allclose(p.L_sample, Ls, rtol=1e-12)
    # expected smoothness of b-minibatches interpolates between L_sample (b = 1) and L_i (b = l_i)
    assert np.allclose(p.local_smoothness(1), p.L_sample, rtol=1e-12)
    if split != "identical":
        even = problems.ridge(A[:20], t[:20], n_workers=4, lam=0.1, split=split)  # l_i = 5 everywhere
        assert np.allclose(even.local_smoothness(5), even.L_i, rtol=1e-12)
    # for logistic, the true Hessian at any point lies between mu I and L I
    if loss == "logistic":
        rng = np.random.default_rng(0)
        for _ in range(3):
            x = rng.standard_normal(7)
            Ht = np.zeros((7, 7))
            for i in range(4):
                r = worker_rows(p, i)
                s = 1 / (1 + np.exp(-A[r] @ x))
                Ht += (A[r].T * (s * (1 - s))) @ A[r] / len(r) / 4
            evt = np.linalg.eigvalsh(Ht + p.lam * np.eye(7))
            assert p.mu - 1e-12 <= evt[0] and evt[-1] <= p.L + 1e-12


@pytest.mark.parametrize("loss", ["ridge", "logistic"])
@pytest.mark.parametrize("split", ["iid", "sorted", "identical"])
def test_x_star_has_zero_gradient(loss, split, uneven_data):
    A, t = uneven_data
    p = build(loss, A, target(loss, t), 4, split)
    g0 = np.linalg.norm(p.grad(np.zeros(7)))
    assert np.linalg.norm(p.grad(p.x_star)) <= 1e-10 * g0
    assert p.f_star == p.f(p.x_star)
    # and it is the minimum: f grows in every direction
    rng = np.random.default_rng(1)
    for _ in range(10):
        assert p.f(p.x_star + 1e-3 * rng.standard_normal(7)) > p.f_star
    if loss == "ridge":  # the normal equations, solved independently
        His = worker_hessians(p, A)
        H = np.mean(His, axis=0) + p.lam * np.eye(7)
        c = np.mean([A[worker_rows(p, i)].T @ t[worker_rows(p, i)] / p.sizes[i] for i in range(4)], axis=0)
        assert np.allclose(p.x_star, np.linalg.solve(H, c), rtol=1e-10, atol=1e-12)


def test_logistic_x_star_to_full_accuracy_on_badly_scaled_rows():
    # rows of very different scales: a trust-region solver alone stops at ||grad|| ~ 1e-8 relative
    A, b = data(20, 7, seed=51)
    A *= np.linspace(0.5, 2.0, 20)[:, None]
    for split in ("sorted", "iid"):
        p = problems.logistic(A, (b > 0).astype(float), n_workers=3, lam=0.05, split=split)
        assert np.linalg.norm(p.grad(p.x_star)) <= 1e-10 * np.linalg.norm(p.grad(np.zeros(7)))
        assert np.linalg.norm(p.local_grads_star.sum(axis=0)) <= 1e-10 * np.linalg.norm(p.local_grads_star)


def test_sigma_star2(uneven_data):
    A, b = uneven_data
    het = problems.ridge(A, b, n_workers=4, lam=0.1, split="sorted")
    Gs = np.array([ref_local_grad(het, A, b, i, het.x_star) for i in range(4)])
    assert het.sigma_star2 == pytest.approx(np.mean(np.sum(Gs**2, axis=1)), rel=1e-9)
    assert het.sigma_star2 > 1e-2 and not het.interpolating
    # interpolating: a consistent system with lam = 0 (N > d): every local gradient vanishes at x*
    x_true = np.random.default_rng(9).standard_normal(7)
    ip = problems.ridge(A, A @ x_true, n_workers=4, split="sorted")
    assert np.allclose(ip.x_star, x_true, rtol=1e-10)
    assert ip.sigma_star2 <= 1e-20 * ip.L**2 * (x_true @ x_true)
    assert ip.interpolating
    syn = problems.synthetic(4, 10, 5, interpolating=True, heterogeneity=0.5, seed=1)
    assert syn.interpolating and syn.sigma_star2 <= 1e-20
    assert problems.synthetic(4, 10, 5, heterogeneity=0.5, seed=1).sigma_star2 > 1e-3


def test_synthetic_has_the_requested_condition_number():
    for cond in (1.0, 7.0, 100.0):
        p = problems.synthetic(4, 10, 6, cond=cond, seed=2)
        assert p.kappa == pytest.approx(cond, rel=1e-10)
        assert p.L == pytest.approx(1.0, rel=1e-10)
    # heterogeneity spreads the local smoothness constants
    assert problems.synthetic(4, 10, 6, heterogeneity=1.0).r > 2 * problems.synthetic(4, 10, 6).r


# ------------------------------------------------------------ strong growth
@pytest.fixture(scope="module")
def interpolating_quadratic():
    A, _ = data(23, 7, seed=21)
    A *= np.linspace(0.3, 2.0, 23)[:, None]  # rows of different scales: rho0 well above 1
    x_true = np.random.default_rng(22).standard_normal(7)
    p = problems.ridge(A, A @ x_true, n_workers=4, split="sorted")
    return p, A


def test_rho0_is_the_top_generalised_eigenvalue(interpolating_quadratic):
    p, A = interpolating_quadratic
    His = worker_hessians(p, A)
    H = np.mean(His, axis=0)
    M = np.mean([Hi @ Hi for Hi in His], axis=0)
    w, V = sla.eigh(M, H @ H)
    assert p.rho0 == pytest.approx(w[-1], rel=1e-8)
    assert p.rho0 > 1.5

    def ratio(x):
        G = p.local_grads(x)
        g = p.grad(x)
        return np.mean(np.sum(G**2, axis=1)) / (g @ g)

    # the inequality (1/n) sum ||grad f_i(x)||^2 <= rho0 ||grad f(x)||^2 at random points ...
    rng = np.random.default_rng(5)
    ratios = np.array([ratio(p.x_star + rng.standard_normal(7) * 10.0 ** rng.uniform(-2, 2)) for _ in range(500)])
    assert np.all(ratios >= 1 - 1e-10)  # Jensen: the mean of squares dominates the square of the mean
    assert np.all(ratios <= p.rho0 * (1 + 1e-9))
    # ... is tight along the top generalised eigenvector, and nearly tight close to it
    v = V[:, -1]
    assert ratio(p.x_star + v) == pytest.approx(p.rho0, rel=1e-8)
    near = [ratio(p.x_star + v + 0.05 * np.linalg.norm(v) * rng.standard_normal(7)) for _ in range(50)]
    assert max(near) <= p.rho0 * (1 + 1e-9)
    assert max(near) >= 0.95 * p.rho0
    # a random search alone already comes close to the constant
    assert ratios.max() >= 0.5 * p.rho0


def test_rho0_infinite_without_interpolation(uneven_data):
    A, b = uneven_data
    assert problems.ridge(A, b, n_workers=4, lam=0.1).rho0 == np.inf
    assert problems.ridge(A, b, n_workers=4, lam=0.1, split="identical").rho0 == 1.0


# ---------------------------------------------------------- dense vs sparse
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("loss", ["ridge", "logistic"])
def test_dense_and_sparse_data_give_the_same_problem(loss, split):
    A, t = data(23, 7, seed=31, sparsity=0.4)
    t = target(loss, t)
    D = build(loss, A, t, 4, split)
    S = build(loss, sp.csr_matrix(A), t, 4, split)
    assert S.sparse and not D.sparse
    x = np.random.default_rng(6).standard_normal(7)
    assert S.f(x) == pytest.approx(D.f(x), rel=1e-13)
    assert np.allclose(S.grad(x), D.grad(x), rtol=1e-12, atol=1e-14)
    assert np.allclose(S.local_grads(x), D.local_grads(x), rtol=1e-12, atol=1e-14)
    idx = np.array([[0, 3], [1, 1], [4, 2], [0, 4]])
    assert np.allclose(S.minibatch_grads(x, idx), D.minibatch_grads(x, idx), rtol=1e-12, atol=1e-14)
    for name in ("L", "mu", "L_max", "f_star", "sigma_star2", "rho0"):
        assert getattr(S, name) == pytest.approx(getattr(D, name), rel=1e-9, abs=1e-14), name
    for name in ("L_i", "L_sample", "x_star", "sizes"):
        assert np.allclose(getattr(S, name), getattr(D, name), rtol=1e-9, atol=1e-12), name
    assert np.allclose(S.local_smoothness(2), D.local_smoothness(2), rtol=1e-12)


# --------------------------------------------------------------- real data
def test_breast_cancer_and_digits_load():
    bc = problems.breast_cancer(5, split="sorted")
    assert (bc.N, bc.d, bc.n, bc.loss) == (569, 30, 5, "logistic")
    assert bc.sizes.sum() == 569 and bc.sizes.max() - bc.sizes.min() <= 1
    assert np.linalg.norm(bc.grad(bc.x_star)) <= 1e-10 * np.linalg.norm(bc.grad(np.zeros(30)))
    assert bc.sigma_star2 > 0 and bc.mu == 1e-2 and bc.L > bc.mu
    dg = problems.digits(7)
    assert (dg.N, dg.n, dg.loss) == (1797, 7, "logistic")
    assert 50 < dg.d <= 64  # constant pixels dropped
    assert 1 <= dg.r <= dg.n and dg.mu == 1e-2


@pytest.mark.parametrize("loss", ["logistic", "ridge"])
def test_load_libsvm_reads_a_file_into_the_same_problem(tmp_path, loss):
    A, t = data(23, 7, seed=41, sparsity=0.4)
    y = np.where(t > 0, 1.0, -1.0) if loss == "logistic" else t
    path = tmp_path / "small.svm"
    with open(path, "w") as fh:  # LIBSVM format: one-based indices, zeros omitted
        for row, label in zip(A, y):
            feats = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0)
            fh.write(f"{float(label)!r} {feats}\n")
    p = problems.load_libsvm(path, n_workers=4, loss=loss, lam=0.05, split="iid", seed=3, n_features=7)
    q = build(loss, A, y, 4, "iid", lam=0.05)
    assert p.sparse and (p.N, p.d, p.n) == (23, 7, 4)
    assert np.array_equal(p.order, q.order)
    x = np.random.default_rng(7).standard_normal(7)
    assert p.f(x) == pytest.approx(q.f(x), rel=1e-13)
    assert np.allclose(p.local_grads(x), q.local_grads(x), rtol=1e-12, atol=1e-14)
    for name in ("L", "mu", "L_max", "f_star"):
        assert getattr(p, name) == pytest.approx(getattr(q, name), rel=1e-9), name
    assert np.allclose(p.x_star, q.x_star, rtol=1e-8, atol=1e-10)


# the paper's four sets as the package ships them: rows, features, label counts (+1 after the mapping)
# and non-zeros, counted independently of the library from the files' text (their PROVENANCE.md)
BUNDLED = {"a1a": (1605, 123, 395, 22249), "mushrooms": (8124, 112, 4208, 170604),
           "phishing": (11055, 68, 6157, 331650), "w1a": (2477, 300, 72, 28410)}


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_the_papers_sets_load_by_name_with_their_sizes_and_labels(name, monkeypatch):
    import socket
    from pathlib import Path

    import blockcd

    def no_network(*args, **kwargs):
        raise AssertionError("loading a bundled set touched the network")

    monkeypatch.setattr(socket, "socket", no_network)
    N, d, pos, nnz = BUNDLED[name]
    info = problems.PAPER_DATASETS[name]
    assert (info.n_rows, info.n_features) == (N, d)
    package = Path(blockcd.__file__).resolve().parent
    assert info.path.is_file() and package in info.path.parents  # inside the installed package
    X, y = problems.read_libsvm(name)
    assert X.shape == (N, d) and X.nnz == nnz
    assert set(np.unique(y)) == {-1.0, 1.0} and int((y == 1).sum()) == pos
    p = problems.load_libsvm(name, n_workers=4, lam=1e-3)
    assert p.sparse and (p.N, p.d, p.n) == (N, d, 4) and p.name == f"{name} (logistic)"
    # the same problem as the file read by path (its own labels, mapped by the builder)
    q = problems.load_libsvm(info.path, n_workers=4, lam=1e-3, n_features=d)
    x = np.random.default_rng(1).standard_normal(d) / 10
    assert p.f(x) == pytest.approx(q.f(x), rel=1e-13)


def test_a_bundled_set_accepts_only_its_own_n_features():
    assert problems.read_libsvm("a1a", n_features=123)[0].shape == (1605, 123)
    with pytest.raises(ValueError, match="n_features must be 123"):
        problems.read_libsvm("a1a", n_features=120)
    with pytest.raises(TypeError, match="path must be a path"):
        problems.read_libsvm(3)


def test_libsvm_errors_name_the_file_the_line_and_what_was_expected(tmp_path):
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:2 3:4\n-1 2:5\n1 2:x 4:1\n")
    with pytest.raises(ValueError, match=r"bad\.svm.*line 3: expected index:value pairs.*'2:x'"):
        problems.load_libsvm(bad, n_workers=2)
    bad.write_text("hello world\n")
    with pytest.raises(ValueError, match=r"bad\.svm.*line 1: expected a label \(a number\).*'hello'"):
        problems.load_libsvm(bad, n_workers=2)
    npz = tmp_path / "arrays.npz"
    np.savez(npz, A=np.arange(50.0))
    binary = tmp_path / "noise.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    for path, what in ((npz, "zip archive"), (binary, "binary file")):
        with pytest.raises(ValueError) as err:
            problems.load_libsvm(path, n_workers=2)
        msg = str(err.value)
        assert path.name in msg and what in msg
        assert "\\x" not in msg and len(msg) < 300, msg  # no bytes dumped into the message
    with pytest.raises(ValueError, match="is neither"):
        problems.load_libsvm(tmp_path / "absent.svm", n_workers=2)
    bad.write_text("1 1:2\n-1 9:5\n")
    with pytest.raises(ValueError, match="bad.svm.*n_features"):  # every line reads; the whole does not
        problems.load_libsvm(bad, n_workers=2, n_features=5)


def test_a_compressed_user_file_reads_as_the_plain_one(tmp_path):
    import bz2
    import gzip

    text = "1 1:0.5 3:2\n-1 2:1\n1 1:1 2:-1\n-1 3:0.25\n"
    plain = tmp_path / "small.svm"
    plain.write_text(text)
    (tmp_path / "small.svm.bz2").write_bytes(bz2.compress(text.encode()))
    (tmp_path / "small.svm.gz").write_bytes(gzip.compress(text.encode()))
    X0, y0 = problems.read_libsvm(plain)
    for name in ("small.svm.bz2", "small.svm.gz"):
        X, y = problems.read_libsvm(tmp_path / name)
        assert (X != X0).nnz == 0 and np.array_equal(y, y0)
    assert np.array_equal(y0, [1.0, -1.0, 1.0, -1.0])  # a user's labels stay as written


# ------------------------------------------------------ the per-worker oracle
@pytest.mark.parametrize("problem", [
    problems.synthetic(3, 7, 5),
    problems.synthetic(3, 7, 5, split="identical"),
    problems.breast_cancer(4, split="iid"),
    problems.ridge(np.kron(np.eye(2), np.ones((5, 3))) + 0.1, np.arange(10.0), n_workers=3, lam=0.1, split="iid"),
    problems.logistic(sp.random(23, 6, density=0.5, random_state=0, format="csr"), np.arange(23) % 2, n_workers=4,
                      lam=0.1),
], ids=["padded", "identical", "breast-cancer", "uneven", "sparse"])
def test_worker_i_answers_as_row_i_of_the_stacked_oracle(problem):
    """problem.worker(i), from its own rows only, gives row i of every answer of problem.workers():
    gradients, minibatch gradients, per-row derivatives, SAGA table means; for each storage layout."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(problem.d)
    W = problem.workers()
    G, fx = W.grads(x, with_f=True)
    assert fx == pytest.approx(problem.f(x), rel=1e-14)
    idx = np.array([[0, 1]] * problem.n)
    Gb, Db = W.minibatch_grads(x, idx), W.sample_derivs(x, idx)
    table = W.derivs(x)
    avg = W.table_average(table)
    np.testing.assert_allclose(avg, G - problem.lam * x, rtol=1e-12, atol=1e-14)  # a fresh table's mean
    for i in range(problem.n):
        w = problem.worker(i)
        assert w.A.shape == (problem.sizes[i], problem.d) and w.t.shape == (problem.sizes[i],)
        np.testing.assert_allclose(w.grads(x), G[i], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(w.minibatch_grads(x, idx[i]), Gb[i], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(w.sample_derivs(x, idx[i]), Db[i], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(w.derivs(x), table[i, : problem.sizes[i]], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(w.table_average(w.derivs(x)), avg[i], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match=r"i must be an integer in \[0, "):
        problem.worker(problem.n)


@pytest.mark.parametrize("which", ["A dense", "A sparse", "b", "b list"])
def test_complex_data_is_refused_not_cut_to_its_real_part(which):
    """ridge(A + 1j A, b) used to keep the real part with only numpy's ComplexWarning."""
    A, b = data(12, 4, seed=2)
    args = {"A dense": (A + 1j * A, b), "A sparse": (sp.csr_matrix(A + 1j * A), b),
            "b": (A, b + 1j), "b list": (A, [complex(v, 1) for v in b])}[which]
    name = "A" if which.startswith("A") else "b"
    with pytest.raises(TypeError, match=rf"{name} holds complex numbers \(complex128\); blockcd's problems are real"):
        problems.ridge(*args, n_workers=2)
    with pytest.raises(TypeError, match="holds complex numbers"):
        problems.save_arrays("unused.npz", *args)


def test_each_workers_L_i_takes_the_cheaper_eigenvalue_method(monkeypatch):
    """A worker of 1,000 sparse rows: the dense eigh of its 1,000 x 1,000 Gram matrix costs k^3, Lanczos
    about 4,000 (nnz + k) operations, 20 times less here; L_i used to take the eigh up to k = 3,000 (a
    cubic cliff: seconds a worker at k = 2,000), and must now take Lanczos there, with the same value,
    and the eigh for small workers."""
    import scipy.linalg

    from blockcd.problems import smoothness

    A = sp.random(2000, 20000, density=0.0005, format="csr", random_state=3)
    b = np.random.default_rng(3).standard_normal(2000)
    p = problems.ridge(A, b, n_workers=2, split="contiguous", lam=0.1)
    dense = np.array([scipy.linalg.eigh((p.worker(i).A @ p.worker(i).A.T).toarray(), eigvals_only=True)[-1]
                      for i in range(2)])

    def refuse(*args, **kwargs):
        raise AssertionError("the dense eigh was taken for a 1,000-row worker")

    monkeypatch.setattr(smoothness.sla, "eigh", refuse)
    expected = dense / p.sizes + 0.1
    np.testing.assert_allclose(p.L_i, expected, rtol=1e-10)
    monkeypatch.undo()
    small = problems.ridge(A[:400], b[:400], n_workers=2, split="contiguous", lam=0.1)
    calls, eigh = [], scipy.linalg.eigh
    monkeypatch.setattr(smoothness.sla, "eigh", lambda K, **kw: calls.append(K.shape) or eigh(K, **kw))
    assert small.L_i.shape == (2,) and calls == [(200, 200), (200, 200)]


def test_the_objective_does_not_depend_on_the_blas_thread_count():
    """Workers.f summed its N = 11,055 weighted losses (phishing) with a BLAS dot, which OpenBLAS runs on
    several threads above 10,000 entries: on a loaded machine 22 ms against 0.3 ms on one thread (most of
    a GD iteration), and its last bits changed with the thread count (16 of 20 points).  Now one fixed-order
    sum: the same bits on 1 and 2 threads."""
    from threadpoolctl import threadpool_limits

    p = problems.load_libsvm("phishing", n_workers=10, loss="logistic", lam=1e-3)
    o = p.workers()
    for s in range(10):
        x = np.random.default_rng(s).standard_normal(p.d)
        with threadpool_limits(limits=1):
            one = o.f(x)
        with threadpool_limits(limits=2):
            two = o.f(x)
        assert one == two, (s, one, two)


def test_a_libsvm_path_that_does_not_exist_says_so(tmp_path):
    with pytest.raises(ValueError, match=r"'data/nope.svm' is neither: no such file"):
        problems.load_libsvm("data/nope.svm", n_workers=2)
    with pytest.raises(ValueError, match=r"is neither: a directory"):
        problems.load_libsvm(tmp_path, n_workers=2)

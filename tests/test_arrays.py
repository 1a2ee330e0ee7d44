"""blockcd.problems.save_arrays / load_arrays / from_arrays: your own A and b in a file that each MPI
rank reads only its rows of (dense or CSR .npz, or .npy), with no pickle."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from blockcd import problems


def data(sparse: bool, N=103, d=17, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, d))
    if sparse:
        A[rng.random((N, d)) < 0.7] = 0.0
        A = sp.csr_matrix(A)
    b = rng.standard_normal(N)
    return A, b


def dense(A):
    return A.toarray() if sp.issparse(A) else np.asarray(A)


@pytest.mark.parametrize("suffix, sparse", [(".npz", False), (".npz", True), (".npy", False)])
def test_round_trip_all_rows_and_some(tmp_path, suffix, sparse):
    A, b = data(sparse)
    path = problems.save_arrays(tmp_path / f"x{suffix}", A, b)
    assert path == tmp_path / f"x{suffix}"
    B, c, N = problems.load_arrays(path)
    assert N == 103 and sp.issparse(B) == sparse
    assert np.array_equal(dense(B), dense(A)) and np.array_equal(c, b)
    for rows in (np.array([5, 1, 100, 7]), np.arange(20, 40), slice(3, 9), np.arange(0)):
        B, _, _ = problems.load_arrays(path, rows=rows)
        assert np.array_equal(dense(B), dense(A)[rows])


def test_save_adds_npz_and_refuses_sparse_npy(tmp_path):
    A, b = data(True)
    assert problems.save_arrays(tmp_path / "x", A, b) == tmp_path / "x.npz"
    with pytest.raises(ValueError, match="sparse A needs an .npz"):
        problems.save_arrays(tmp_path / "x.npy", A, b)
    with pytest.raises(ValueError, match="b"):
        problems.save_arrays(tmp_path / "y.npz", A, b[:-1])


def test_the_npz_members_are_mapped_not_read(tmp_path):
    from blockcd.problems import arrays

    A, b = data(False)
    path = problems.save_arrays(tmp_path / "x.npz", A, b)
    import zipfile

    with zipfile.ZipFile(path) as zf:
        M = arrays._member(path, zf, "A")
    assert isinstance(M, np.memmap) and np.array_equal(np.asarray(M), A)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss, split", [("ridge", "iid"), ("ridge", "contiguous"), ("logistic", "sorted"),
                                         ("ridge", "identical")])
def test_a_worker_reads_its_rows_and_gets_the_whole_problems_worker(tmp_path, sparse, loss, split):
    A, b = data(sparse)
    if loss == "logistic":
        b = np.sign(b) + (b == 0)
    path = problems.save_arrays(tmp_path / "x.npz", A, b)
    kw = {"n_workers": 4, "loss": loss, "lam": 0.1, "split": split, "seed": 3}
    whole = problems.from_arrays(path, **kw)
    build = problems.ridge if loss == "ridge" else problems.logistic
    ref = build(A, b, n_workers=4, lam=0.1, split=split, seed=3)
    assert np.allclose(whole.x_star, ref.x_star, rtol=0, atol=1e-12) and whole.name == "x.npz"
    for i in range(4):
        part = problems.from_arrays(path, worker=i, **kw)
        w, v = part.worker(i), whole.worker(i)
        assert np.array_equal(dense(w.A), dense(v.A)) and np.array_equal(w.t, v.t)
        assert sp.issparse(w.A) == sparse
        assert np.array_equal(part.sizes, whole.sizes) and part.n == 4 and part.d == 17
        with pytest.raises(ValueError, match="only worker"):
            part.worker((i + 1) % 4)


@pytest.mark.parametrize("kind, words", [
    ("text", "not an .npz archive"), ("plain", "holds ['a', 'b']"), ("npy1d", "of shape (3,)"),
    ("badshape", "A has shape"), ("missing", "no data file"),
])
def test_a_file_that_is_not_of_save_arrays_is_named(tmp_path, kind, words):
    path = tmp_path / ("f.npy" if kind == "npy1d" else "f.npz")
    if kind == "text":
        path.write_text("1 2 3\n")
    elif kind == "plain":
        np.savez(path, a=np.ones(3), b=np.ones(3))
    elif kind == "npy1d":
        np.save(path, np.ones(3))
    elif kind == "badshape":
        np.savez(path, A=np.ones((4, 2)), b=np.ones(3))
    error = FileNotFoundError if kind == "missing" else ValueError
    with pytest.raises(error) as e:
        problems.load_arrays(path)
    assert str(path) in str(e.value) and words in str(e.value), str(e.value)

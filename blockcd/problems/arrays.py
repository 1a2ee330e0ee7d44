"""Your own arrays in a file the MPI ranks can read, each only its own rows.

:func:`save_arrays` writes a data matrix A (dense or scipy.sparse) and its targets b in one call;
:func:`load_arrays` reads them back, all rows or only some, and :func:`from_arrays` builds the
:class:`~blockcd.problems.Problem` on them (``mpiexec -n K python -m blockcd.mpi --problem arrays
--path FILE`` does it on every rank: the master reads every row, each worker only its own).

Two formats, neither with pickle:

* ``.npz`` (numpy's uncompressed zip): a dense A as the member ``A``, a sparse one as CSR
  members ``data``, ``indices``, ``indptr`` and ``shape``, and the targets as ``b``.  The
  members are stored, not compressed, so a rank maps them from the file (``numpy.memmap``) and
  reads the bytes of its own rows only.
* ``.npy``: one dense (N, d + 1) array, A with b as its last column, mapped with
  ``numpy.load(mmap_mode='r')``.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._validate import check_int, check_matrix, check_vector
from ..oracle import Worker
from .core import Problem

__all__ = ["from_arrays", "load_arrays", "save_arrays"]

_EXPECTED = ("an .npz written by blockcd.problems.save_arrays (members A and b, or data, indices, indptr, "
             "shape and b) or an .npy holding [A | b]")


def save_arrays(path, A, b) -> Path:
    """Write A (dense or scipy.sparse, shape (N, d)) and b (shape (N,)) for :func:`load_arrays`.

    ``path`` ends in ``.npz`` (dense or sparse A; ``.npz`` is added when the suffix is missing)
    or ``.npy`` (dense A only: one (N, d + 1) array, b the last column).  The values are stored
    as float64, uncompressed, without pickle.  Returns the path written.

    Example::

        blockcd.problems.save_arrays("data.npz", A, b)
        # mpiexec -n 5 python -m blockcd.mpi --problem arrays --path data.npz --method ibcd ...
    """
    A = check_matrix("A", A)
    b = check_vector("b", b, A.shape[0], "the rows of A")
    path = Path(path)
    if path.suffix not in (".npz", ".npy"):
        path = path.with_name(path.name + ".npz")
    if path.suffix == ".npy":
        if sp.issparse(A):
            raise ValueError(f"a sparse A needs an .npz file (an .npy holds one dense array), got {str(path)!r}")
        np.save(path, np.column_stack((A, b)), allow_pickle=False)
        return path
    if sp.issparse(A):
        A = sp.csr_matrix(A)
        A.sort_indices()
        np.savez(path, data=A.data, indices=A.indices.astype(np.int64), indptr=A.indptr.astype(np.int64),
                 shape=np.array(A.shape, dtype=np.int64), b=b)
    else:
        np.savez(path, A=np.ascontiguousarray(A), b=b)
    return path


def _member(path: Path, zf: zipfile.ZipFile, name: str):
    """The array ``name`` of the archive, mapped from the file when stored uncompressed (else read)."""
    try:
        info = zf.getinfo(name + ".npy")
    except KeyError:
        raise ValueError(f"{str(path)!r} has no member {name!r}: expected {_EXPECTED}") from None
    if info.compress_type != zipfile.ZIP_STORED:
        with zf.open(info) as f:
            return np.lib.format.read_array(f, allow_pickle=False)
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        local = f.read(30)
        if local[:4] != b"PK\x03\x04":
            raise ValueError(f"{str(path)!r}: member {name!r} has a damaged zip header")
        n_name, n_extra = struct.unpack("<HH", local[26:30])
        f.seek(info.header_offset + 30 + n_name + n_extra)
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        if dtype.hasobject:
            raise ValueError(f"{str(path)!r}: member {name!r} holds Python objects (pickle), not numbers")
        offset = f.tell()
    if int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C")


def _rows_index(rows, N: int):
    if rows is None:
        return None
    if isinstance(rows, slice):
        return np.arange(N)[rows]
    idx = np.asarray(rows)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise TypeError("rows must be None, a slice or a 1-D array of row indices")
    if idx.size and (idx.min() < 0 or idx.max() >= N):
        raise ValueError(f"rows must be row indices in [0, {N}), got values in [{idx.min()}, {idx.max()}]")
    return idx


def _csr_rows(data, indices, indptr, idx, d: int):
    """The rows ``idx`` of a CSR matrix held as (mapped) arrays, reading only their entries."""
    starts, ends = np.asarray(indptr[idx], dtype=np.int64), np.asarray(indptr[idx + 1], dtype=np.int64)
    lengths = ends - starts
    new_ptr = np.concatenate(([0], np.cumsum(lengths)))
    if idx.size and np.all(idx[1:] == idx[:-1] + 1):   # one contiguous range: one slice of each array
        lo, hi = int(starts[0]), int(ends[-1])
        vals, cols = np.array(data[lo:hi], dtype=np.float64), np.array(indices[lo:hi], dtype=np.int64)
    else:
        take = np.repeat(starts - new_ptr[:-1], lengths) + np.arange(new_ptr[-1])
        vals, cols = np.array(data[take], dtype=np.float64), np.array(indices[take], dtype=np.int64)
    return sp.csr_matrix((vals, cols, new_ptr), shape=(idx.size, d))


def load_arrays(path, rows=None):
    """Read ``(A, b)`` written by :func:`save_arrays`: all rows, or only ``rows``.

    Parameters
    ----------
    path : str or Path
        An ``.npz`` or ``.npy`` file of :func:`save_arrays` (no pickle is read).
    rows : None, slice or 1-D int array
        The rows to read (in this order); only their bytes are read from the file.  ``b`` is
        returned whole (N numbers) either way.

    Returns
    -------
    (A, b, N)
        A as stored (dense float64 array or CSR matrix) restricted to ``rows``, the full
        targets b of shape (N,) and the number of rows N of the file.

    Raises
    ------
    FileNotFoundError
        naming the file if it does not exist.
    ValueError
        naming the file and what was expected, for a file that is not of :func:`save_arrays`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no data file {str(path)!r} (expected {_EXPECTED})")
    if path.suffix == ".npy":
        try:
            M = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError as exc:
            raise ValueError(f"{str(path)!r} is not a numeric .npy array ({exc}); expected {_EXPECTED}") from None
        if M.ndim != 2 or M.shape[1] < 2 or M.dtype.kind not in "fiu":
            raise ValueError(f"{str(path)!r} holds a {M.dtype} array of shape {M.shape}; expected {_EXPECTED}")
        N = M.shape[0]
        idx = _rows_index(rows, N)
        b = np.array(M[:, -1], dtype=np.float64)
        A = np.array(M[:, :-1] if idx is None else M[idx, :-1], dtype=np.float64)
        return A, b, N
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ValueError(f"{str(path)!r} is not an .npz archive; expected {_EXPECTED}") from None
    with zf:
        names = {n[:-4] for n in zf.namelist() if n.endswith(".npy")}
        b = np.array(_member(path, zf, "b"), dtype=np.float64)
        if b.ndim != 1:
            raise ValueError(f"{str(path)!r}: b must be 1-D, got shape {b.shape}")
        N = b.size
        idx = _rows_index(rows, N)
        if "A" in names:
            M = _member(path, zf, "A")
            if M.ndim != 2 or M.shape[0] != N:
                raise ValueError(f"{str(path)!r}: A has shape {M.shape}, expected ({N}, d) for the {N} targets b")
            A = np.array(M if idx is None else M[idx], dtype=np.float64)
        elif {"data", "indices", "indptr", "shape"} <= names:
            shape = tuple(int(v) for v in np.asarray(_member(path, zf, "shape")))
            if len(shape) != 2 or shape[0] != N:
                raise ValueError(f"{str(path)!r}: the CSR shape is {shape}, expected ({N}, d) for the {N} targets b")
            data, indices = _member(path, zf, "data"), _member(path, zf, "indices")
            indptr = np.asarray(_member(path, zf, "indptr"), dtype=np.int64)
            if indptr.shape != (N + 1,) or indptr[-1] != data.size or indices.size != data.size:
                raise ValueError(f"{str(path)!r}: data, indices and indptr do not form a CSR matrix of {N} rows")
            A = _csr_rows(data, indices, indptr, np.arange(N) if idx is None else idx, shape[1])
        else:
            raise ValueError(f"{str(path)!r} holds {sorted(names)}; expected {_EXPECTED}")
    return A, b, N


class _Rows(Problem):
    """A problem of which one worker's rows are loaded (an MPI worker rank): its :meth:`worker` is
    that worker's own problem; the constants of the whole problem are the master's to compute."""

    def worker(self, i: int) -> Worker:
        i = check_int("i", i, 0, self.n - 1)
        if i != self._own_index:
            raise ValueError(f"only worker {self._own_index}'s rows were read from {self.name!r}, not worker {i}'s")
        return Worker(self._own_A, self._own_t, loss=self.loss, lam=self.lam, index=i, nonconvex=self.nonconvex)


def from_arrays(path, *, n_workers: int, loss: str = "ridge", lam: float = 0.0, split: str = "iid",
                seed: int = 0, reg=None, worker: int | None = None, name: str | None = None) -> Problem:
    """The problem on the arrays of ``path`` (:func:`save_arrays`): :func:`ridge` or :func:`logistic`.

    ``worker=None`` reads every row (the master, a notebook, a test).  ``worker=i`` reads only
    worker i's rows, those ``split`` and ``seed`` give it (the targets b, N numbers, are read
    whole, for the split): the returned problem's :meth:`~Problem.worker` ``(i)`` is worker i's
    problem, identical to that of the whole problem, and nothing else of it is to be used.

    Other parameters as :func:`blockcd.problems.ridge` (``loss='ridge'``, targets b) and
    :func:`blockcd.problems.logistic` (``loss='logistic'``, labels b).
    """
    from .builders import logistic, ridge

    if loss not in ("ridge", "logistic"):
        raise ValueError(f"loss must be one of ('ridge', 'logistic'), got {loss!r}")
    name = name or Path(path).name
    build = ridge if loss == "ridge" else logistic
    if worker is None:
        A, b, _ = load_arrays(path)
        return build(A, b, n_workers=n_workers, lam=lam, split=split, seed=seed, name=name, reg=reg)
    # the split alone, on an empty matrix of the file's shape: which rows are worker i's
    _, b, N = load_arrays(path, rows=np.arange(0))
    d = _width(path)
    layout = _Rows(sp.csr_matrix((N, d)), b, n_workers=n_workers, loss=loss, lam=lam, split=split, seed=seed,
                   name=name, reg=reg)
    worker = check_int("worker", worker, 0, layout.n - 1)
    if layout.split == "identical":      # every worker holds every row
        rows = np.arange(N)
    else:
        rows = layout.order[layout.offsets[worker]:layout.offsets[worker + 1]]
    A_own, _, _ = load_arrays(path, rows=rows)
    own = Problem.worker(layout, worker)     # the targets as the problem holds them (-1/+1 for logistic)
    layout._own_index, layout._own_A, layout._own_t = worker, A_own, own.t
    return layout


def _width(path) -> int:
    """d, the number of columns of A in the file, without reading A."""
    path = Path(path)
    if path.suffix == ".npy":
        return int(np.load(path, mmap_mode="r", allow_pickle=False).shape[1]) - 1
    with zipfile.ZipFile(path) as zf:
        names = {n[:-4] for n in zf.namelist() if n.endswith(".npy")}
        if "A" in names:
            return int(_member(path, zf, "A").shape[1])
        return int(np.asarray(_member(path, zf, "shape"))[1])

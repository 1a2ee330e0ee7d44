"""The workers' oracles: what a worker can compute from its own rows.

A method's rule (:mod:`blockcd.rules`) asks an oracle for local gradients,
minibatch gradients and the per-row derivatives a SAGA table keeps.  Two
oracles answer with the same method names:

- :class:`Workers`, all n workers at once (``problem.workers()``): every
  answer has a leading axis of length n, computed with array operations over
  the stacked data (no loop over workers); the simulator uses it;
- :class:`Worker`, one worker alone (``problem.worker(i)``): its rows ``A``
  and targets ``t`` only; an MPI rank and the per-worker reference use it.

Both losses are generalised linear models,
``f_i(x) = (1/l_i) sum_j phi(a_j^T x; t_j) + (lam/2) ||x||^2`` with
``phi(z; t) = (z - t)^2 / 2`` (ridge) or ``log(1 + exp(-t z))`` (logistic).
A non-convex problem (``problems.nonconvex``) adds the smooth non-convex term
``psi(x) = w sum_j x_j^2 / (1 + x_j^2)`` to every f_i; its gradient is added
where the lam x term is.  The problem's constants (L, mu, x*, ...) live in
:mod:`blockcd.problems`; no method or sampling is known here.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


#: OpenBLAS runs a dot product of more than this many entries on several threads
BLAS_THREADED_DOT = 10_000


def _weighted_sum(w: np.ndarray, v: np.ndarray) -> float:
    """sum_j w_j v_j over all N rows, on one thread: a BLAS dot up to BLAS_THREADED_DOT entries (one thread
    there), einsum (optimize=False: numpy's own loop, no BLAS) beyond.  OpenBLAS threads a longer dot, which
    on a loaded 2-core machine cost 22 ms against 0.2 ms (phishing, N = 11,055: most of a GD iteration) and
    made the last bits of f depend on the thread count."""
    if w.size <= BLAS_THREADED_DOT:
        return float(w @ v)
    return float(np.einsum("i,i->", w, v))


def phi(loss: str, z: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The loss of one row at margin z: (z - t)^2/2 (ridge) or log(1 + exp(-t z)) (logistic)."""
    if loss == "ridge":
        return 0.5 * (z - t) ** 2
    return np.logaddexp(0.0, -t * z)


def dphi(loss: str, z: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Its derivative in z: z - t (ridge) or -t sigmoid(-t z) (logistic)."""
    if loss == "ridge":
        return z - t
    return -t * np.exp(-np.logaddexp(0.0, t * z))


def psi(w: float, x: np.ndarray) -> float:
    """The non-convex term w sum_j x_j^2 / (1 + x_j^2) (chapter 5, "Without convexity")."""
    x2 = x * x
    return float(w * np.sum(x2 / (1.0 + x2)))


def dpsi(w: float, x: np.ndarray) -> np.ndarray:
    """Its gradient, w 2 x_j / (1 + x_j^2)^2 coordinate by coordinate (x may be a selection of coordinates)."""
    return (2.0 * w) * x / (1.0 + x * x) ** 2


def _dense(M):
    return M.toarray() if sp.issparse(M) else M


class Workers:
    """All n workers' oracles at once, over the stacked data of a Problem.

    Row numbers ``idx`` are *local*: ``idx[i]`` holds rows of worker i
    (0 <= idx[i, j] < l_i), shape (n, b).  Nothing is validated here (the
    methods are called every iteration); :class:`blockcd.problems.Problem`
    validates at its public boundary.

    Storage layouts: ``'padded'`` (dense data as (n, l_max, d), zero-weight
    padding rows after row l_i), ``'sparse'`` (one CSR matrix, rows grouped by
    worker), ``'shared'`` (identical split: one matrix that every worker holds).
    """

    def __init__(self, *, loss, lam, layout, A2, A3, t, w, wf, row_base, sizes, offsets, n, d, nonconvex=0.0):
        self.loss, self.lam, self.layout = loss, lam, layout
        #: the weight w of the non-convex term psi in every f_i (0 for none)
        self.nonconvex = nonconvex
        self.A2, self.A3, self.t, self.w, self.wf = A2, A3, t, w, wf
        self.row_base, self.sizes, self.offsets = row_base, sizes, offsets
        self.n, self.d = n, d
        #: shape of a gradient answer, (n, d)
        self.shape = (n, d)
        self.l_max = int(sizes.max())
        #: l_i as a column, to divide (n, b) arrays by each worker's row count
        self.row_sizes = sizes[:, None]
        #: stored entries of the data (non-zeros for sparse data, with padding for dense)
        self.entries = int(A2.nnz if sp.issparse(A2) else A2.size)
        if layout == "sparse":
            N = A2.shape[0]
            self._Q = sp.csr_matrix((np.ones(N), np.arange(N), offsets), shape=(n, N))

    # -------------------------------------------------------- full gradients
    def margins(self, x: np.ndarray) -> np.ndarray:
        """a_j^T x for every stored row."""
        return self.A2 @ x

    def row_sums(self, c: np.ndarray) -> np.ndarray:
        """(n, d): sum_j c_j a_j over each worker's rows (c indexed by stored row)."""
        if self.layout == "padded":
            n, lm, d = self.A3.shape
            return np.matmul(c.reshape(n, 1, lm), self.A3).reshape(n, d)
        if self.layout == "sparse":
            Q = self._Q.copy()
            Q.data = c
            return np.asarray((Q @ self.A2).todense())
        g = self.A2.T @ c
        return np.broadcast_to(np.asarray(g).ravel(), (self.n, self.d))

    def f(self, x: np.ndarray, z: np.ndarray | None = None) -> float:
        """f(x) = (1/n) sum_i f_i(x) (from the margins z = A x when given)."""
        z = self.margins(x) if z is None else z
        fx = _weighted_sum(self.wf, phi(self.loss, z, self.t)) + 0.5 * self.lam * float(x @ x)
        return fx + psi(self.nonconvex, x) if self.nonconvex else fx

    def grads(self, x: np.ndarray, with_f: bool = False):
        """(n, d): row i is grad f_i(x); with ``with_f`` also f(x), from the same margins.

        May be a read-only broadcast view (identical split): do not write into it.
        """
        z = self.margins(x)
        c = self.w * dphi(self.loss, z, self.t)
        G = self.row_sums(c)
        if self.lam:
            G = G + self.lam * x
        if self.nonconvex:
            G = G + dpsi(self.nonconvex, x)
        if not with_f:
            return G
        return G, self.f(x, z)

    # -------------------------------------------------------- per-row oracle
    def rows(self, idx: np.ndarray) -> np.ndarray:
        """Stored row numbers of the local rows idx (n, b)."""
        return self.row_base[:, None] + idx

    def sample_derivs(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """(n, b): phi'(a_j^T x) for the local rows idx of each worker."""
        rows = self.rows(idx)
        if self.layout == "padded":
            z = np.matmul(self.A2[rows], x)
        else:
            z = (self.A2[rows.ravel()] @ x).reshape(rows.shape)
        return dphi(self.loss, z, self.t[rows])

    def combine(self, idx: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """(n, d): sum_j coef[i, j] a_j over the local rows idx[i] of each worker."""
        rows = self.rows(idx)
        n, b = rows.shape
        if self.layout == "padded":
            return np.matmul(coef[:, None, :], self.A2[rows]).reshape(n, self.d)
        Q = sp.csr_matrix((coef.ravel(), np.arange(n * b), np.arange(0, n * b + 1, b)), shape=(n, n * b))
        out = Q @ self.A2[rows.ravel()]
        return np.asarray(_dense(out))

    def minibatch_grads(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """(n, d): row i averages grad f_ij(x) over the b local rows idx[i]."""
        G = self.combine(idx, self.sample_derivs(x, idx) / idx.shape[-1])
        G = G + self.lam * x if self.lam else G
        return G + dpsi(self.nonconvex, x) if self.nonconvex else G

    # ---------------------------------------------------- partial gradients
    def partial_grads(self, x: np.ndarray, who: np.ndarray, cols: np.ndarray, with_f: bool = False):
        """The entries (who[p], cols[p]) of the (n, d) local gradients, without computing the others.

        The margins A x take one pass over the data; the transposed product
        then reads only the sent columns of each worker's rows (chapter 9: a
        worker that sends tau of m blocks computes about tau/m of its
        gradient).  Returns values of shape (P,) (and f(x) with ``with_f``).
        """
        z = self.margins(x)
        c = self.w * dphi(self.loss, z, self.t)
        if self.layout == "padded":
            n, lm, _ = self.A3.shape
            vals = np.einsum("pl,pl->p", self.A3[who, :, cols], c.reshape(n, lm)[who])
        elif self.layout == "sparse":
            vals = self._column_sums(c, who, cols)
        else:
            vals = np.asarray(self.A2.T @ c).ravel()[cols]
        if self.lam:
            vals = vals + self.lam * x[cols]
        if self.nonconvex:
            vals = vals + dpsi(self.nonconvex, x[cols])
        return (vals, self.f(x, z)) if with_f else vals

    def partial_minibatch_grads(self, x: np.ndarray, idx: np.ndarray, who: np.ndarray, cols: np.ndarray):
        """The entries (who[p], cols[p]) of :meth:`minibatch_grads` alone, shape (P,)."""
        rows = self.rows(idx)
        coef = self.sample_derivs(x, idx) / idx.shape[-1]
        Ab = np.asarray(_dense(self.A2[rows[who], np.broadcast_to(cols[:, None], rows[who].shape)]))
        vals = np.einsum("pb,pb->p", Ab, coef[who])  # Ab[p, j]: entry cols[p] of worker who[p]'s row j
        vals = vals + self.lam * x[cols] if self.lam else vals
        return vals + dpsi(self.nonconvex, x[cols]) if self.nonconvex else vals

    def _column_sums(self, c: np.ndarray, who: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """sum_{rows j of worker who[p]} c_j A[j, cols[p]] for sparse data, from a copy sorted by worker.

        The stored entries are kept sorted by (worker, column, row), so those of
        one worker in one column are one run; ``key`` = worker * d + column of
        each entry is sorted, and each (worker, column) pair is found by binary
        search.  The pairs come worker by worker in increasing column order, so
        the searches are in increasing order too (which numpy's search exploits).
        """
        if not hasattr(self, "_by_worker"):
            A = self.A2.tocoo()
            owner = np.searchsorted(self.offsets, A.row, side="right") - 1
            order = np.lexsort((A.row, A.col, owner))
            kind = np.int32 if self.n * self.d < 2**31 else np.int64  # half the bytes searched when it fits
            self._by_worker = (A.data[order], A.row[order], (owner[order] * self.d + A.col[order]).astype(kind))
        data, rows, key = self._by_worker
        q = (who * self.d + cols).astype(key.dtype)
        lo, hi = np.searchsorted(key, q, "left"), np.searchsorted(key, q, "right")
        lens = hi - lo
        total = int(lens.sum())
        if total == 0:
            return np.zeros(q.size)
        starts = np.cumsum(lens) - lens
        pos = np.repeat(lo - starts, lens) + np.arange(total)
        prod = data[pos] * c[rows[pos]]
        out = np.zeros(q.size)
        nz = lens > 0
        out[nz] = np.add.reduceat(prod, starts[nz])
        return out

    # ----------------------------------------------------------- SAGA table
    def derivs(self, x: np.ndarray) -> np.ndarray:
        """(n, l_max) table of phi'(a_j^T x) over each worker's rows (past l_i: row l_i - 1 repeated)."""
        a0 = dphi(self.loss, self.margins(x), self.t) * (self.w > 0)
        local = np.minimum(np.arange(self.l_max)[None, :], self.sizes[:, None] - 1)
        return a0[self.rows(local)]

    def table_average(self, table: np.ndarray) -> np.ndarray:
        """(n, d): (1/l_i) sum_j table[i, j] a_j, the mean of worker i's table of gradients."""
        if self.layout == "padded":
            flat = np.where(self.w > 0, table.ravel(), 0.0)
        elif self.layout == "sparse":
            flat = table[np.arange(self.l_max)[None, :] < self.row_sizes]
        else:
            flat = table[0]
        return np.array(self.row_sums(self.w * flat))

    def row_data(self, idx: np.ndarray) -> np.ndarray:
        """(n, b, d): the data rows a_j of the local rows idx of each worker, dense."""
        rows = self.rows(idx)
        if self.layout == "padded":
            return self.A2[rows]
        return np.asarray(_dense(self.A2[rows.ravel()])).reshape(*rows.shape, self.d)

    def gradient_table(self, x: np.ndarray) -> np.ndarray:
        """(n, l_max, d): the per-row gradients phi'(a_j^T x) a_j of each worker's rows, one d-vector each
        (a SAGA table of vectors, the paper's alpha_ij; past l_i: row l_i - 1 repeated, never sampled)."""
        local = np.minimum(np.arange(self.l_max)[None, :], self.sizes[:, None] - 1)
        return self.derivs(x)[..., None] * self.row_data(local)

    @staticmethod
    def take(table: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Entries idx of each worker's table."""
        return np.take_along_axis(table, idx, axis=-1)

    @staticmethod
    def put(table: np.ndarray, idx: np.ndarray, values: np.ndarray) -> None:
        """Overwrite entries idx of each worker's table (rows of one worker's batch are distinct)."""
        np.put_along_axis(table, idx, values, axis=-1)


class Worker(Workers):
    """One worker's oracle, from its own rows ``A`` (l, d; dense or CSR) and targets ``t`` only.

    The same methods as :class:`Workers` without the leading worker axis:
    ``grads(x)`` is grad f_i(x), shape (d,); ``idx`` is a 1-D array of local rows.
    """

    def __init__(self, A, t, *, loss: str, lam: float, index: int, nonconvex: float = 0.0):
        self.A, self.t = A, t
        self.loss, self.lam, self.index, self.nonconvex = loss, lam, index, nonconvex
        self.l, self.d = A.shape
        self.shape = (self.d,)
        self.row_sizes = self.l

    def margins(self, x):
        return self.A @ x

    def f(self, x, z=None):
        """f_i(x)."""
        z = self.margins(x) if z is None else z
        fx = float(np.mean(phi(self.loss, z, self.t))) + 0.5 * self.lam * float(x @ x)
        return fx + psi(self.nonconvex, x) if self.nonconvex else fx

    def grads(self, x, with_f: bool = False):
        z = self.margins(x)
        g = np.asarray(self.A.T @ (dphi(self.loss, z, self.t) / self.l)).ravel()
        if self.lam:
            g = g + self.lam * x
        if self.nonconvex:
            g = g + dpsi(self.nonconvex, x)
        return (g, self.f(x, z)) if with_f else g

    def sample_derivs(self, x, idx):
        return dphi(self.loss, _dense(self.A[idx]) @ x, self.t[idx])

    def combine(self, idx, coef):
        return np.asarray(coef @ _dense(self.A[idx])).ravel()

    def derivs(self, x):
        return dphi(self.loss, self.margins(x), self.t)

    def partial_grads(self, x, cols, with_f: bool = False):
        """The entries cols of grad f_i(x) alone (the margins, then only those columns)."""
        z = self.margins(x)
        c = dphi(self.loss, z, self.t) / self.l
        if sp.issparse(self.A):
            if not hasattr(self, "_csc"):
                self._csc = self.A.tocsc()
            vals = np.asarray(self._csc[:, cols].T @ c).ravel()
        else:
            vals = c @ self.A[:, cols]
        if self.lam:
            vals = vals + self.lam * x[cols]
        if self.nonconvex:
            vals = vals + dpsi(self.nonconvex, x[cols])
        return (vals, self.f(x, z)) if with_f else vals

    def partial_minibatch_grads(self, x, idx, cols):
        """The entries cols of the minibatch gradient over the local rows idx alone."""
        coef = self.sample_derivs(x, idx) / idx.shape[-1]
        Ab = self.A[idx][:, cols]
        vals = np.asarray(coef @ _dense(Ab)).ravel()
        vals = vals + self.lam * x[cols] if self.lam else vals
        return vals + dpsi(self.nonconvex, x[cols]) if self.nonconvex else vals

    def table_average(self, table):
        return np.asarray(self.A.T @ (table / self.l)).ravel()

    def row_data(self, idx):
        """(b, d): the local rows idx, dense."""
        return np.asarray(_dense(self.A[idx]))

    def gradient_table(self, x):
        """(l, d): phi'(a_j^T x) a_j for each local row."""
        return self.derivs(x)[:, None] * np.asarray(_dense(self.A))

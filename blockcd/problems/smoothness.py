"""The smoothness constants of a :class:`~blockcd.problems.Problem` and the spectrum they come from.

L, mu, kappa, L_i, L_max, r, the per-sample L_sample, the blocks' constants
and the expected smoothness of minibatch estimators, from the curvature bound
A^T W A / n (dense up to ``DENSE_LIMIT``, Lanczos beyond).  A mixin of
:class:`~blockcd.problems.Problem`, which holds the data it reads.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._validate import check_int
from ..blocks import minibatch_theta
from .common import DENSE_LIMIT

#: fraction of nonzero entries above which a sparse block of rows is made dense for the products
#: A^T W A (:meth:`SmoothnessMixin._hess_dense`)
SPARSE_DENSIFY = 0.25
#: a worker's Gram matrix up to this size k = min(rows, d) always takes the dense eigh (0.1 s at k = 512)
GRAM_DENSE = 512
#: beyond it, Lanczos is chosen where its cost, about LANCZOS_COST (nnz + k) operations (20-30 products
#: with A_i and A_i^T, each about 4 nnz, and ARPACK's own work per step), is below the dense eigh's k^3.
#: Measured with one BLAS thread: equal at k = 500, nnz = 30,000 (0.09 s and 0.1 s); at k = 2,000 the
#: eigh takes 4.1-4.4 s and Lanczos 0.05-0.09 s, the same eigenvalue to 4e-16 relative.
LANCZOS_COST = 4000


def top_gram_eigenvalue(A) -> float:
    """The largest eigenvalue of A^T A (= that of A A^T) for a worker's rows ``A`` (dense or CSR): the dense
    ``eigh`` of the smaller Gram matrix, or Lanczos on the product with A and A^T, whichever costs less
    (:data:`GRAM_DENSE`, :data:`LANCZOS_COST`), so that the time grows smoothly with the data."""
    rows, cols = A.shape
    k = min(rows, cols)
    if k == 0:
        return 0.0
    nnz = A.nnz if sp.issparse(A) else A.size
    if k <= GRAM_DENSE or k ** 3 <= LANCZOS_COST * (nnz + k):
        if sp.issparse(A) and k <= DENSE_LIMIT and A.nnz > SPARSE_DENSIFY * rows * cols:
            A = A.toarray()            # rows that full: BLAS, as in _hess_dense
        K = (A @ A.T) if rows <= cols else (A.T @ A)
        return float(sla.eigh(K.toarray() if sp.issparse(K) else K, eigvals_only=True)[-1])
    if rows <= cols:
        op = spla.LinearOperator((rows, rows), matvec=lambda v: A @ (A.T @ v), dtype=np.float64)
    else:
        op = spla.LinearOperator((cols, cols), matvec=lambda v: A.T @ (A @ v), dtype=np.float64)
    return float(spla.eigsh(op, k=1, which="LA", return_eigenvectors=False)[0])


class SmoothnessMixin:
    """L, mu, L_i and the other smoothness constants of :class:`~blockcd.problems.Problem`."""

    def _hess_matvec(self, v: np.ndarray, curv: np.ndarray | float = 1.0) -> np.ndarray:
        """(A^T diag(w * curv) A / n) v, the data part of a Hessian (or its bound)."""
        scale = self._wf * curv
        return np.asarray(self._A2.T @ (scale * (self._A2 @ v))).ravel()

    def _hess_dense(self, curv: np.ndarray | float = 1.0) -> np.ndarray:
        """Dense d x d matrix A^T diag(w * curv) A / n, accumulated in row chunks.

        A sparse chunk with more than :data:`SPARSE_DENSIFY` of its entries nonzero is made dense
        first (at most 2^22 numbers, 32 MB) and multiplied by BLAS: a sparse-times-sparse product
        costs about (nonzeros per row)^2 per row at sparse-matrix speed, more than the dense
        product's d^2 per row at BLAS speed once about a quarter of the entries are nonzero
        (measured at d = 200 and d = 1000; a full 5000 x 200 matrix stored as CSR took 4.2 s for
        the two products of x*, 6 times its dense time).  Sparser chunks stay sparse.
        """
        scale = self._wf * curv
        H = np.zeros((self.d, self.d))
        rows = self._A2.shape[0]
        step = max(1, 2**22 // max(self.d, 1))
        for s in range(0, rows, step):
            Ac = self._A2[s : s + step]
            if sp.issparse(Ac) and Ac.nnz > SPARSE_DENSIFY * Ac.shape[0] * Ac.shape[1]:
                Ac = Ac.toarray()
            if sp.issparse(Ac):
                H += np.asarray((Ac.T @ Ac.multiply(scale[s : s + step, None])).todense())
            else:
                H += Ac.T @ (Ac * scale[s : s + step, None])
        return H

    @cached_property
    def _spectrum(self) -> tuple[float, float]:
        """(largest, smallest) eigenvalue of the curvature bound A^T W A / n (without lam)."""
        if self.d <= DENSE_LIMIT:
            ev = sla.eigh(self._hess_dense(), eigvals_only=True)
            return float(ev[-1]), max(float(ev[0]), 0.0)
        op = spla.LinearOperator((self.d, self.d), matvec=self._hess_matvec, dtype=np.float64)
        hi = spla.eigsh(op, k=1, which="LA", return_eigenvectors=False, tol=1e-10)[0]
        lo = spla.eigsh(op, k=1, which="SA", return_eigenvectors=False, tol=1e-8, maxiter=20 * self.d)[0]
        return float(hi), max(float(lo), 0.0)

    @cached_property
    def L(self) -> float:
        """Smoothness constant of f, the largest eigenvalue of its Hessian bound (dense eigh, or Lanczos for d > 3000).

        With the non-convex term psi, whose second derivative w (2 - 6 x^2)/(1 + x^2)^3 lies in
        [-w/2, 2w] (its extremes at x = 0 and x^2 = 1), every Hessian eigenvalue lies in
        [-w/2, L_0 + 2w] for the convex part's constant L_0, so L = L_0 + 2w bounds the absolute value
        of every eigenvalue.
        """
        return self._curv * self._spectrum[0] + self.lam + 2.0 * self.nonconvex

    @cached_property
    def mu(self) -> float:
        """Strong convexity constant of f (for ridge the smallest Hessian eigenvalue, for logistic lam)."""
        self._need_convex("mu (strong convexity)")
        if self.loss == "ridge":
            mu = self._spectrum[1] + self.lam
        else:
            mu = self.lam
        if mu <= 1e-12 * self.L:
            raise ValueError(
                f"f is not strongly convex (mu = {mu:.3g}): use lam > 0, or at least d = {self.d} "
                "linearly independent rows"
            )
        return mu

    @property
    def kappa(self) -> float:
        """Condition number L / mu."""
        return self.L / self.mu

    @cached_property
    def L_i(self) -> np.ndarray:
        """Smoothness of each local function, ||A_i||_2^2 / l_i * phi'' bound + lam, shape (n,)."""
        if self._layout == "shared":
            top = self._spectrum[0]
            return np.full(self.n, self._curv * top + self.lam)
        if self._layout == "padded" and min(self._A3.shape[1:]) <= GRAM_DENSE:
            _, lm, d = self._A3.shape
            if lm <= d:
                K = np.matmul(self._A3, self._A3.transpose(0, 2, 1))
            else:
                K = np.matmul(self._A3.transpose(0, 2, 1), self._A3)
            top = np.linalg.eigvalsh(K)[:, -1]
        else:  # one worker at a time, each by the cheaper method (top_gram_eigenvalue)
            top = np.empty(self.n)
            for i in range(self.n):  # construction of a constant, not a hot path
                if self._layout == "padded":
                    Ai = self._A3[i, : int(self.sizes[i])]
                else:
                    Ai = self._A2[self.offsets[i] : self.offsets[i + 1]]
                top[i] = top_gram_eigenvalue(Ai)
        return self._curv * np.maximum(top, 0.0) / self.sizes + self.lam + 2.0 * self.nonconvex

    def block_smoothness(self, m: int) -> np.ndarray:
        r"""Smoothness of f along each of the ``m`` contiguous blocks (:func:`blockcd.partition`), shape (m,).

        :math:`L_j = \lambda_{\max}(H_{jj}) + \lambda`, the largest eigenvalue of block j's diagonal block
        of the curvature bound :math:`H = A^\top W A / n` (phi'' bounded by 1 for ridge, 1/4 for logistic);
        at m = d the coordinate-wise constants :math:`H_{jj}`.  Coordinate descent with importance
        sampling picks block j with probability proportional to :math:`L_j` and steps by about
        :math:`1/L_j` there (:func:`blockcd.theory.cd_steps`).  Dense: for d up to ``DENSE_LIMIT``.
        """
        from ..blocks import partition

        blocks = partition(self.d, m)
        if self.d > DENSE_LIMIT:
            raise ValueError(f"block_smoothness forms the d x d curvature matrix: d = {self.d} exceeds "
                             f"{DENSE_LIMIT}")
        H = self._curv * self._hess_dense()
        out = np.empty(blocks.m)
        for j, (s, w) in enumerate(zip(blocks.starts, blocks.sizes)):
            out[j] = sla.eigh(H[s : s + w, s : s + w], eigvals_only=True)[-1] if w > 1 else H[s, s]
        return np.maximum(out, 0.0) + self.lam

    @property
    def L_max(self) -> float:
        """Largest local smoothness constant max_i L_i."""
        return float(self.L_i.max())

    @property
    def r(self) -> float:
        """r = L_max / L, how much less smooth a worker is than the average (1 <= r <= n)."""
        return self.L_max / self.L

    @cached_property
    def row_norms2(self) -> np.ndarray:
        """Squared norms ||a_j||^2 of the storage rows (padding rows are 0)."""
        if sp.issparse(self._A2):
            return np.asarray(self._A2.multiply(self._A2).sum(axis=1)).ravel()
        return np.einsum("ij,ij->i", self._A2, self._A2)

    @cached_property
    def L_sample(self) -> np.ndarray:
        """Per-worker largest per-sample smoothness max_j L_ij, shape (n,)."""
        return self._curv * self._by_worker(self.row_norms2, np.maximum) + self.lam + 2.0 * self.nonconvex

    def _by_worker(self, v: np.ndarray, op) -> np.ndarray:
        """(n,): op (np.maximum or np.add) reduced over each worker's stored rows of v."""
        if self._layout == "padded":
            return op.reduce(v.reshape(self.n, self.l_max), axis=1)
        if self._layout == "sparse":
            return op.reduceat(v, self.offsets[:-1])
        return np.full(self.n, op.reduce(v))

    def worker_means(self, v: np.ndarray) -> np.ndarray:
        """(n,): each worker's mean of a per-row quantity ``v`` (one entry per stored row, padding weighed 0)."""
        return self._by_worker(self._w * v, np.add)

    def local_smoothness(self, batch: int) -> np.ndarray:
        r"""Expected smoothness of each worker's b-nice minibatch estimator, shape (n,).

        For b rows drawn without replacement out of l:
        :math:`\mathcal{L}_i(b) = \frac{l(b-1)}{b(l-1)} L_i + \frac{l-b}{b(l-1)} L_{s,i}`
        (Gower et al. 2019), equal to L_s at b = 1 and to L_i at b = l.
        """
        batch = check_int("batch", batch, 1, int(self.sizes.min()))
        l = self.sizes.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            a = np.where(l > 1, l * (batch - 1) / (batch * (l - 1)), 1.0)
            c = minibatch_theta(l, batch)
        return a * self.L_i + c * self.L_sample

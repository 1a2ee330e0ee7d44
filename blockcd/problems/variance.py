"""How far the gradients of a :class:`~blockcd.problems.Problem` spread, across workers and across rows.

Across workers: the dissimilarity and its bound nu^2 (non-convex problems)
and the strong growth constant rho0.  Across each worker's rows: the variance
of a minibatch gradient at x*, the local Hessians and row covariances of
least squares, and the minibatch growth constants built from them.  A mixin
of :class:`~blockcd.problems.Problem`.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._validate import check_int
from ..oracle import dphi
from .common import DENSE_LIMIT


class VarianceMixin:
    """nu^2, rho0 and the minibatch variance and growth constants of :class:`~blockcd.problems.Problem`."""

    @cached_property
    def nu2_bound(self) -> float:
        r"""A uniform bound nu^2 on the dissimilarity of the workers' functions, for every x
        :math:`\frac1n\sum_i\lVert\nabla f(x) - \nabla f_i(x)\rVert^2 \le \nu^2`
        (the paper's Theorem 7; chapter 5, "Without convexity").

        The terms lam x and psi are the same in every f_i and cancel, and the dissimilarity is at most
        :math:`\frac1n\sum_i\lVert\nabla\ell_i(x)\rVert^2` for the data parts
        :math:`\nabla\ell_i(x) = \frac{1}{l_i}\sum_j\phi'(a_j^\top x)a_j`.  For logistic regression
        :math:`|\phi'| \le 1`, so :math:`\lVert\nabla\ell_i(x)\rVert` is at most the smaller of
        :math:`\frac{1}{l_i}\sum_j\lVert a_j\rVert` and :math:`\lVert A_i\rVert_2/\sqrt{l_i}`.
        0 for identical splits; ``inf`` for ridge (phi' is unbounded).
        """
        if self.split == "identical":
            return 0.0
        if self.loss == "ridge":
            return math.inf
        norms = np.sqrt(self.row_norms2)
        per = self.worker_means(norms)                      # (1/l_i) sum_j ||a_j||
        spectral = (self.L_i - self.lam - 2.0 * self.nonconvex) / self._curv   # ||A_i||_2^2 / l_i
        return float(np.mean(np.minimum(per**2, np.maximum(spectral, 0.0))))

    def dissimilarity(self, x) -> float:
        r""":math:`\frac1n\sum_i\lVert\nabla f_i(x) - \nabla f(x)\rVert^2` at x (the paper's :math:`\nu^2`
        is its supremum over x; :attr:`nu2_bound` bounds it)."""
        G = np.asarray(self.local_grads(x))
        return float(np.mean(np.sum((G - G.mean(axis=0)) ** 2, axis=1)))

    def minibatch_variance_star(self, batch: int) -> float:
        """sigma-bar^2 = (1/n) sum_i E||g_i(x*)||^2 for b-minibatch local estimators g_i (chapter 5)."""
        batch = check_int("batch", batch, 1, int(self.sizes.min()))
        Gs, xs = self.local_grads_star, self.x_star
        deriv = dphi(self.loss, self._margins(xs), self._t)
        # per worker: (1/l) sum_j dphi_j^2 ||a_j||^2 - ||grad f_i(x*) - lam x*||^2
        mom = self.worker_means(deriv**2 * self.row_norms2)
        data = Gs - self.lam * xs
        var = np.maximum(mom - np.sum(data**2, axis=1), 0.0)
        l = self.sizes.astype(float)
        factor = np.where(l > 1, (l - batch) / (batch * np.maximum(l - 1, 1)), 0.0)
        return float(np.mean(np.sum(Gs**2, axis=1) + factor * var))

    @cached_property
    def rho0(self) -> float:
        r"""Worker-level strong growth constant, (1/n) sum ||grad f_i||^2 <= rho0 ||grad f||^2.

        1 for identical splits; for interpolating quadratics the largest
        generalised eigenvalue of (mean_i H_i^2, H^2); ``inf`` where no finite
        constant exists (sigma*^2 > 0).
        """
        if self.split == "identical":
            return 1.0
        if self.loss != "ridge" or not self.interpolating:
            return math.inf
        if self.d > DENSE_LIMIT:
            raise ValueError(f"rho0 is computed densely, for d <= {DENSE_LIMIT}; got d = {self.d}")
        H = self._hess_dense() + self.lam * np.eye(self.d)
        M = np.zeros((self.d, self.d))
        for i in range(self.n):  # constant computed once
            Ai = self._A2[self._row_base[i] : self._row_base[i] + self.sizes[i]]
            if sp.issparse(Ai):
                Ai = Ai.toarray()
            Hi = Ai.T @ Ai / self.sizes[i] + self.lam * np.eye(self.d)
            M += Hi @ Hi
        M /= self.n
        top = sla.eigh(M, H @ H, eigvals_only=True, subset_by_index=[self.d - 1, self.d - 1])
        return max(float(top[0]), 1.0)

    #: numbers the per-worker d x d matrices of :attr:`local_moments` may hold (8 bytes each, 512 MiB)
    MAX_MOMENTS = 1 << 26

    @cached_property
    def local_moments(self) -> tuple[np.ndarray, np.ndarray]:
        r"""Each worker's Hessian and row covariance for least squares, two arrays of shape (n, d, d).

        :math:`H_i = \frac{1}{l_i} A_i^\top A_i + \lambda I`, the Hessian of f_i, and
        :math:`V_i = \frac{1}{l_i}\sum_{j} \lVert a_j\rVert^2 a_j a_j^\top - (H_i - \lambda I)^2`,
        the covariance of the rows' Hessians a_j a_j^T acting on a vector: with every row's residual
        zero at x* (b = A x* row by row), grad f_ij(x) = (a_j a_j^T + lam I)(x - x*) and the
        population variance of the l_i row gradients at x is (x - x*)^T V_i (x - x*).
        Raises ``ValueError`` for logistic regression or when 2 n d^2 exceeds :attr:`MAX_MOMENTS`.
        """
        if self.loss != "ridge":
            raise ValueError("local_moments are those of least squares (loss='ridge'); got loss = "
                             f"{self.loss!r}")
        if 2 * self.n * self.d * self.d > self.MAX_MOMENTS:
            raise ValueError(f"local_moments hold 2 n d^2 = {2 * self.n * self.d * self.d} numbers, more than "
                             f"{self.MAX_MOMENTS}")
        H = np.empty((self.n, self.d, self.d))
        V = np.empty((self.n, self.d, self.d))
        for i in range(self.n):  # constants computed once
            if i and self._layout == "shared":
                H[i], V[i] = H[0], V[0]
                continue
            Ai = self._A2[self._row_base[i] : self._row_base[i] + self.sizes[i]]
            Ai = Ai.toarray() if sp.issparse(Ai) else np.asarray(Ai)
            D = Ai.T @ Ai / self.sizes[i]
            H[i] = D + self.lam * np.eye(self.d)
            V[i] = (Ai * np.einsum("jk,jk->j", Ai, Ai)[:, None]).T @ Ai / self.sizes[i] - D @ D
        return H, V

    @property
    def rows_interpolate(self) -> bool:
        """True when every row's gradient is the same at x* (so a minibatch gradient has no variance there):
        the rows' own variance at x*, (1/n) sum_i (1/l_i) sum_j ||grad f_ij(x*) - grad f_i(x*)||^2, is 0
        relative to L^2 ||x*||^2, and the problem interpolates (:attr:`interpolating`)."""
        if not self.interpolating:
            return False
        scale = self.L**2 * max(float(self.x_star @ self.x_star), 1e-300)
        return self.minibatch_variance_star(1) - self.sigma_star2 <= 1e-18 * scale

    def minibatch_growth(self, batch: int) -> np.ndarray:
        r"""Each worker's local variance constant of a b-minibatch gradient, rho-bar_i, shape (n,).

        The smallest :math:`\bar\rho_i` with
        :math:`\operatorname{Var}[g_i(x)] \le \bar\rho_i \lVert\nabla f_i(x)\rVert^2` for every x
        (the paper's bound (13) with :math:`\bar\sigma^2 = 0`), g_i the mean gradient of b of
        worker i's l_i rows drawn without replacement.  With :attr:`local_moments`,
        :math:`\operatorname{Var}[g_i(x)] = c_i\, e^\top V_i e` with e = x - x* and
        :math:`c_i = \frac{l_i - b}{b(l_i - 1)}`, while :math:`\lVert\nabla f_i(x)\rVert^2 = e^\top H_i^2 e`,
        so :math:`\bar\rho_i = c_i\,\lambda_{\max}(V_i, H_i^2)` (the largest generalised eigenvalue, on
        the range of H_i, outside which both vanish).  0 at b = l_i (the full local gradient).

        ``inf`` where no finite constant with :math:`\bar\sigma^2 = 0` exists: logistic regression, or
        least squares whose rows do not all interpolate (:attr:`rows_interpolate`); there the bound
        needs :math:`\bar\sigma^2 > 0`, which the library does not compute.  Chapter 7.
        """
        batch = check_int("batch", batch, 1, int(self.sizes.min()))
        if self.loss != "ridge" or not self.rows_interpolate:
            return np.full(self.n, math.inf)
        H, V = self.local_moments
        l = self.sizes.astype(float)
        c = np.where(l > 1, (l - batch) / (batch * np.maximum(l - 1, 1)), 0.0)
        out = np.zeros(self.n)
        for i in range(self.n):  # n small eigenproblems, computed on demand
            if c[i] == 0:
                continue
            if i and self._layout == "shared":
                out[i] = out[0]
                continue
            w, U = np.linalg.eigh(H[i])
            keep = w > 1e-12 * w[-1]
            B = U[:, keep] / w[keep]                 # B^T H_i^2 B = I on the range of H_i
            out[i] = c[i] * max(float(np.linalg.eigvalsh(B.T @ V[i] @ B)[-1]), 0.0)
        return out

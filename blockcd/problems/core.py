"""Problems: losses split across n workers, with their smoothness constants.

A :class:`Problem` is the *oracle* of the book: it holds the stacked local data
of all workers and knows f, the gradient, the n local gradients at once,
per-sample gradients for SGD and SAGA, and the constants the theory needs
(L, L_i, L_max, per-sample smoothness, mu, x*, f(x*), sigma*^2, rho0).
It does not know any method or any sampling of blocks; see
:mod:`blockcd.methods` and :mod:`blockcd.blocks`.

Both losses are generalised linear models,

    f_i(x) = (1/l_i) sum_{j in worker i} phi(a_j^T x; t_j) + (lam/2) ||x||^2,
    f(x)   = (1/n) sum_i f_i(x),

with phi(z; t) = (z - t)^2 / 2 (ridge) or log(1 + exp(-t z)) (logistic,
t in {-1, +1}).  The data are stored once, rows grouped by worker: dense data
as an (n, l_max, d) array (zero-weight padding rows when the split is uneven),
sparse data as one CSR matrix, identical splits as the single shared matrix.
A problem may carry a regulariser R (``reg=``, :mod:`blockcd.regularizers`),
held by the master: it then minimises f(x) = (1/n) sum_i f_i(x) + R(x).

A *non-convex* problem (:func:`nonconvex`) adds the smooth term
psi(x) = w sum_j x_j^2 / (1 + x_j^2) to every f_i (a term of f itself, not a
prox term R).  f is then L-smooth but not convex: there is no x*, and the
constants that need one (mu, x*, f*, sigma*^2) raise; a lower bound
``f_lower`` on f and the dissimilarity bound ``nu2_bound`` take their place
(chapter 5, "Without convexity").
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._validate import (
    check_choice,
    check_float,
    check_int,
    check_matrix,
    check_seed,
    check_vector,
)
from ..blocks import minibatch_theta
from ..oracle import Worker, Workers, dphi, dpsi
from ..regularizers import Regularizer, prox_gradient

LOSSES = ("ridge", "logistic")
SPLITS = ("iid", "sorted", "identical", "contiguous")
#: ``split='shared'`` is the paper's name for ``'identical'``: every worker reads all N functions
#: (shared data, N = the number of rows, f = (1/N) sum_j f_j); shared-data ISAGA needs it
SHARED_ALIASES = {"shared": "identical"}

#: dimension up to which eigenvalues and solves are done densely
DENSE_LIMIT = 3000


def _sigmoid(z: np.ndarray) -> np.ndarray:
    # numerically stable logistic function
    return np.exp(-np.logaddexp(0.0, -z))


def split_rows(N: int, n: int) -> np.ndarray:
    """Worker sizes for ``N`` rows over ``n`` workers: differ by at most one, sum to ``N``."""
    sizes = np.full(n, N // n, dtype=np.int64)
    sizes[: N % n] += 1
    return sizes


class Problem:
    """A finite-sum problem distributed over ``n`` workers.

    Build one with :func:`ridge`, :func:`logistic`, :func:`synthetic`,
    :func:`breast_cancer`, :func:`digits` or :func:`load_libsvm`.

    Attributes
    ----------
    n, d : int
        Workers and dimension.
    sizes : ndarray (n,)
        Rows held by each worker, l_i.
    loss, split, lam : str, str, float
    L, L_i, L_max, L_sample, mu, kappa, r, x_star, f_star, sigma_star2, rho0
        Constants of the theory, computed on first use (see each property).
    """

    def __init__(self, A, t, *, n_workers, loss, lam, split, seed, name=None, reg=None, nonconvex=0.0):
        #: the weight w of the non-convex term psi(x) = w sum_j x_j^2/(1 + x_j^2) in every f_i (0: none)
        self.nonconvex = check_float("nonconvex", nonconvex, nonnegative=True)
        if self.nonconvex and reg is not None:
            raise ValueError("a non-convex problem takes no regulariser R (reg must be None): the methods with a "
                             "prox step have a convex theory only")
        if reg is not None and not isinstance(reg, Regularizer):
            raise TypeError(f"reg must be None or a blockcd Regularizer (regularizers.l1(w), regularizers.l2norm(w)), "
                            f"got {type(reg).__name__}")
        #: the regulariser R of f = (1/n) sum_i f_i + R (None: no R), held by the master
        self.reg = reg
        self.loss = check_choice("loss", loss, LOSSES)
        self.split = check_choice("split", SHARED_ALIASES.get(split, split) if isinstance(split, str) else split,
                                  SPLITS)
        self.lam = check_float("lam", lam, nonnegative=True)
        seed = check_seed("seed", seed)
        A = check_matrix("A", A)
        N, d = A.shape
        t = check_vector("b" if loss == "ridge" else "y", t, N, "the rows of A")
        if self.split == "identical":
            n = check_int("n_workers", n_workers, 1)
        else:
            n = check_int("n_workers", n_workers, 1, N)
        if self.loss == "logistic":
            t = _as_pm1(t)
            if self.lam <= 0 and not self.nonconvex:
                raise ValueError(
                    "lam must be > 0 for logistic regression (without it the minimiser may not exist)"
                )
        self.n, self.d, self.N = n, d, N
        self.name = name or f"{loss} (N={N}, d={d})"
        self.sparse = sp.issparse(A)

        # order rows by worker
        if self.split == "identical":
            order = np.arange(N)
            self.sizes = np.full(n, N, dtype=np.int64)
        else:
            rng = np.random.default_rng(seed)
            if self.split == "iid":
                order = rng.permutation(N)
            elif self.split == "sorted":
                # shuffle first so that ties (equal labels) are in random order
                perm = rng.permutation(N)
                order = perm[np.argsort(t[perm], kind="stable")]
            else:  # contiguous
                order = np.arange(N)
            self.sizes = split_rows(N, n)
        self.order = order
        self.offsets = np.concatenate(([0], np.cumsum(self.sizes)))
        self.l_max = int(self.sizes.max())
        A = A[order]
        t = t[order]

        if self.split == "identical":
            self._layout = "shared"
            self._A2 = A
            self._t = t
            self._w = np.full(N, 1.0 / N)
            self._row_base = np.zeros(n, dtype=np.int64)
        elif self.sparse:
            self._layout = "sparse"
            self._A2 = A.tocsr()
            self._t = t
            self._w = np.repeat(1.0 / self.sizes, self.sizes)
            self._row_base = self.offsets[:-1].copy()
        else:
            self._layout = "padded"
            lm = self.l_max
            if np.all(self.sizes == lm):
                A3 = np.ascontiguousarray(A).reshape(n, lm, d)
                t2 = t.reshape(n, lm)
            else:
                A3 = np.zeros((n, lm, d))
                t2 = np.zeros((n, lm))
                for i in range(n):  # construction only, not a hot path
                    s, e = self.offsets[i], self.offsets[i + 1]
                    A3[i, : e - s] = A[s:e]
                    t2[i, : e - s] = t[s:e]
            valid = np.arange(lm)[None, :] < self.sizes[:, None]
            self._A3 = A3
            self._A2 = A3.reshape(n * lm, d)
            self._t = t2.ravel()
            self._w = (valid / self.sizes[:, None]).ravel()
            self._row_base = np.arange(n, dtype=np.int64) * lm

    @cached_property
    def _wf(self) -> np.ndarray:
        """Row weights of f itself: f(x) = sum_j wf_j phi(a_j^T x) + lam/2 ||x||^2."""
        return self._w if self._layout == "shared" else self._w / self.n

    @property
    def _curv(self) -> float:
        """Upper bound on phi'' (1 for ridge, 1/4 for logistic)."""
        return 1.0 if self.loss == "ridge" else 0.25

    def _margins(self, x: np.ndarray) -> np.ndarray:
        return self._A2 @ x

    def _check_x(self, x) -> np.ndarray:
        return check_vector("x", x, self.d, "the problem dimension d")

    # ----------------------------------------------------------- the oracle
    @cached_property
    def _oracle(self) -> Workers:
        return Workers(loss=self.loss, lam=self.lam, layout=self._layout, A2=self._A2,
                       A3=getattr(self, "_A3", None), t=self._t, w=self._w, wf=self._wf,
                       row_base=self._row_base, sizes=self.sizes, offsets=self.offsets, n=self.n, d=self.d,
                       nonconvex=self.nonconvex)

    def workers(self) -> Workers:
        """All n workers' oracles at once (:class:`blockcd.oracle.Workers`): what the simulator asks.

        Its methods take no validated input (they run every iteration): local
        gradients ``grads(x)`` (n, d), minibatch gradients, per-row derivatives
        for SAGA tables, each with a leading axis of length n.
        """
        return self._oracle

    def worker(self, i: int) -> Worker:
        r"""Worker i's own local problem (:class:`blockcd.oracle.Worker`), from its rows alone.

        :math:`f_i(x) = \frac{1}{l_i}\sum_{j} \phi(a_j^\top x; t_j) + \frac{\lambda}{2}\|x\|^2`:
        its rows ``A`` (dense or CSR, copied out of the problem's storage), its
        targets ``t`` (-1/+1 for logistic regression), its gradient, minibatch
        gradients and SAGA-table support, with the same method names as
        :meth:`workers` but no worker axis.  With ``split='identical'`` every
        worker holds all rows.  An MPI rank keeps this and drops the problem.

        Parameters
        ----------
        i : int, 0 <= i < n
        """
        i = check_int("i", i, 0, self.n - 1)
        if self._layout == "shared":
            A, t = self._A2, self._t
        elif self._layout == "sparse":
            s, e = self.offsets[i], self.offsets[i + 1]
            A, t = self._A2[s:e], self._t[s:e]
        else:
            li = int(self.sizes[i])
            A, t = self._A3[i, :li], self._t.reshape(self.n, self.l_max)[i, :li]
        A = A.copy() if sp.issparse(A) else np.array(A)
        return Worker(A, np.array(t), loss=self.loss, lam=self.lam, index=i, nonconvex=self.nonconvex)

    @property
    def data_nbytes(self) -> int:
        """Bytes of the stored data (rows with padding, targets and row weights)."""
        A = self._A2
        size = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes if sp.issparse(A) else A.nbytes
        return int(size + self._t.nbytes + self._w.nbytes)

    def f(self, x) -> float:
        """f(x) = (1/n) sum_i f_i(x) + R(x) (R = ``reg``, if any)."""
        x = self._check_x(x)
        fx = self._oracle.f(x)
        return fx if self.reg is None else fx + self.reg(x)

    def grad(self, x) -> np.ndarray:
        """Gradient of the smooth part (1/n) sum_i f_i at x, shape (d,) (R, if any, is left out)."""
        x = self._check_x(x)
        z = self._margins(x)
        c = self._wf * dphi(self.loss, z, self._t)
        g = np.asarray(self._A2.T @ c).ravel() + self.lam * x
        return g + dpsi(self.nonconvex, x) if self.nonconvex else g

    @property
    def convex(self) -> bool:
        """False for a problem with the non-convex term psi (:func:`nonconvex`), True otherwise."""
        return not self.nonconvex

    def _need_convex(self, what: str) -> None:
        if self.nonconvex:
            raise ValueError(f"{what} does not exist for this problem: f is non-convex (it has the term "
                             f"w sum_j x_j^2/(1 + x_j^2), w = {self.nonconvex:g}), so there is no x*; histories "
                             "record ||grad f(x^k)||^2 (History.grad2) instead, and f_lower bounds f from below")

    def hessian(self, x) -> np.ndarray:
        """The Hessian of the smooth part (1/n) sum_i f_i at x, a dense (d, d) array (for checks; d <= 3000)."""
        x = self._check_x(x)
        if self.d > DENSE_LIMIT:
            raise ValueError(f"hessian is dense, for d <= {DENSE_LIMIT}; got d = {self.d}")
        if self.loss == "ridge":
            curv = 1.0
        else:
            s = _sigmoid(self._margins(x) * self._t)
            curv = s * (1 - s)
        H = self._hess_dense(curv) + self.lam * np.eye(self.d)
        if self.nonconvex:
            x2 = x * x
            H[np.diag_indices(self.d)] += self.nonconvex * (2.0 - 6.0 * x2) / (1.0 + x2) ** 3
        return H

    def local_grads(self, x, *, with_f: bool = False):
        """All n local gradients at once: row i is grad f_i(x), shape (n, d).

        With ``with_f=True`` also returns f(x), computed from the same margins
        at no extra cost.  The result may be a read-only broadcast view (for
        identical splits): do not write into it.
        """
        return self._oracle.grads(self._check_x(x), with_f)

    def minibatch_grads(self, x, idx) -> np.ndarray:
        """Minibatch local gradients: row i averages grad f_ij(x) over j in idx[i].

        ``idx`` has shape (n, b) and holds local row numbers (0 <= idx[i] < l_i).
        """
        x = self._check_x(x)
        idx = np.asarray(idx)
        if idx.ndim != 2 or idx.shape[0] != self.n:
            raise ValueError(f"idx must have shape (n={self.n}, b), got {idx.shape}")
        if np.any(idx < 0) or np.any(idx >= self.sizes[:, None]):
            raise ValueError("idx holds a row number outside 0..l_i - 1 for some worker")
        return self._oracle.minibatch_grads(x, idx)

    # ------------------------------------------------------------ constants
    def _hess_matvec(self, v: np.ndarray, curv: np.ndarray | float = 1.0) -> np.ndarray:
        """(A^T diag(w * curv) A / n) v, the data part of a Hessian (or its bound)."""
        scale = self._wf * curv
        return np.asarray(self._A2.T @ (scale * (self._A2 @ v))).ravel()

    def _hess_dense(self, curv: np.ndarray | float = 1.0) -> np.ndarray:
        """Dense d x d matrix A^T diag(w * curv) A / n, accumulated in row chunks."""
        scale = self._wf * curv
        H = np.zeros((self.d, self.d))
        rows = self._A2.shape[0]
        step = max(1, 2**22 // max(self.d, 1))
        for s in range(0, rows, step):
            Ac = self._A2[s : s + step]
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
        if self._layout == "padded":
            _, lm, d = self._A3.shape
            if lm <= d:
                K = np.matmul(self._A3, self._A3.transpose(0, 2, 1))
            else:
                K = np.matmul(self._A3.transpose(0, 2, 1), self._A3)
            top = np.linalg.eigvalsh(K)[:, -1]
        else:
            top = np.empty(self.n)
            for i in range(self.n):  # construction of a constant, not a hot path
                Ai = self._A2[self.offsets[i] : self.offsets[i + 1]]
                K = (Ai @ Ai.T) if Ai.shape[0] <= self.d else (Ai.T @ Ai)
                if K.shape[0] <= DENSE_LIMIT:
                    top[i] = sla.eigh(K.toarray(), eigvals_only=True)[-1]
                else:
                    top[i] = spla.eigsh(K, k=1, which="LA", return_eigenvectors=False)[0]
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

    @cached_property
    def x_star(self) -> np.ndarray:
        """The minimiser of f (direct solve for ridge; trust-region Newton for logistic).

        With a regulariser R: accelerated proximal gradient from the minimiser
        without R, to a certified 1e-13 relative accuracy
        (:func:`blockcd.regularizers.prox_gradient`).
        """
        self._need_convex("x_star")
        _ = self.mu  # raises if f is not strongly convex
        if self.reg is not None:
            return prox_gradient(self.grad, self.L, self.mu, self.reg, self._smooth_minimiser)
        return self._smooth_minimiser

    @cached_property
    def _smooth_minimiser(self) -> np.ndarray:
        """The minimiser of (1/n) sum_i f_i, without R."""
        if self.loss == "ridge":
            c = np.asarray(self._A2.T @ (self._wf * self._t)).ravel()
            if self.d <= DENSE_LIMIT:
                H = self._hess_dense() + self.lam * np.eye(self.d)
                return sla.solve(H, c, assume_a="pos")
            op = spla.LinearOperator(
                (self.d, self.d), matvec=lambda v: self._hess_matvec(v) + self.lam * v, dtype=np.float64
            )
            x, _ = spla.cg(op, c, rtol=1e-14, maxiter=50 * self.d)
            return x
        def fun(x):
            return self._oracle.f(x), self.grad(x)


        def hess(x):
            z = self._margins(x)
            s = _sigmoid(z * self._t)
            return self._hess_dense(s * (1 - s)) + self.lam * np.eye(self.d)

        def hessp(x, v):
            z = self._margins(x)
            s = _sigmoid(z * self._t)
            return self._hess_matvec(v, s * (1 - s)) + self.lam * v

        x0 = np.zeros(self.d)
        if self.d <= DENSE_LIMIT:
            res = sopt.minimize(fun, x0, jac=True, hess=hess, method="trust-exact", options={"gtol": 1e-13})
        else:
            res = sopt.minimize(fun, x0, jac=True, hessp=hessp, method="Newton-CG", options={"xtol": 1e-15})
            return res.x
        # trust-exact stops once f(x) no longer resolves its own progress (gradient ~1e-8 relative);
        # pure Newton steps finish the job while the gradient keeps shrinking
        x, gx = res.x, self.grad(res.x)
        for _ in range(5):
            x_new = x - sla.solve(hess(x), gx, assume_a="pos")
            g_new = self.grad(x_new)
            if not np.linalg.norm(g_new) < np.linalg.norm(gx):
                break
            x, gx = x_new, g_new
        return x

    @cached_property
    def f_star(self) -> float:
        """f(x*)."""
        self._need_convex("f_star")
        return self.f(self.x_star)

    @property
    def f_lower(self) -> float:
        """A lower bound on inf f: f* for a convex problem, 0 for a non-convex one.

        Every term of a non-convex problem's f is >= 0 (the loss phi, (lam/2)||x||^2 and psi),
        so 0 <= inf f; the bound of the paper's Theorem 7 takes f(x^0) - f_lower for f(x^0) - f*.
        """
        return 0.0 if self.nonconvex else self.f_star

    @cached_property
    def nu2_bound(self) -> float:
        r"""A uniform bound on the dissimilarity, :math:`\frac1n\sum_i\lVert\nabla f(x) - \nabla f_i(x)\rVert^2
        \le \nu^2` for every x (the paper's Theorem 7; chapter 5, "Without convexity").

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

    @cached_property
    def local_grads_star(self) -> np.ndarray:
        """The local gradients at the optimum, grad f_i(x*), shape (n, d) (with R their mean is a
        subgradient of -R at x*, not 0)."""
        return np.array(self._oracle.grads(self.x_star))

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
    def sigma_star2(self) -> float:
        """Heterogeneity at the optimum, sigma*^2 = (1/n) sum_i ||grad f_i(x*)||^2."""
        return float(np.mean(np.sum(self.local_grads_star**2, axis=1)))

    @property
    def shared_data(self) -> bool:
        """True when every worker reads all N rows (``split='identical'``, alias ``'shared'``): then
        f = (1/N) sum_j f_j with f_j(x) = phi(a_j^T x; t_j) + (lam/2) ||x||^2, each f_i = f."""
        return self.split == "identical"

    @property
    def interpolating(self) -> bool:
        """True when every worker's gradient vanishes at x* (sigma*^2 ~ 0, relative to L^2 ||x*||^2)."""
        scale = self.L**2 * max(float(self.x_star @ self.x_star), 1e-300)
        return self.sigma_star2 <= 1e-18 * scale

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

    #: numbers the per-worker d x d matrices of :attr:`local_moments` may hold (8 bytes each: 512 MiB)
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

    def summary(self) -> dict:
        """The constants of the theory in one dict (computes them if needed).

        For a non-convex problem: L, L_max, r, f_lower and nu2_bound (no mu, x* or sigma*^2).
        """
        if self.nonconvex:
            return {"name": self.name, "n": self.n, "d": self.d, "L": self.L, "L_max": self.L_max, "r": self.r,
                    "nonconvex": self.nonconvex, "f_lower": self.f_lower, "nu2_bound": self.nu2_bound}
        return {
            "name": self.name,
            "n": self.n,
            "d": self.d,
            "L": self.L,
            "L_max": self.L_max,
            "mu": self.mu,
            "kappa": self.kappa,
            "r": self.r,
            "sigma_star2": self.sigma_star2,
            "rho0": self.rho0,
            "reg": None if self.reg is None else repr(self.reg),
        }

    def __repr__(self) -> str:
        reg = "" if self.reg is None else f", reg={self.reg!r}"
        if self.nonconvex:
            reg += f", nonconvex={self.nonconvex:g}"
        return f"Problem({self.name!r}, n={self.n}, d={self.d}, split={self.split!r}, lam={self.lam:g}{reg})"


def _as_pm1(y: np.ndarray) -> np.ndarray:
    vals = np.unique(y)
    if vals.size != 2:
        raise ValueError(f"y must hold exactly two classes for logistic regression, got {vals.size} distinct values")
    return np.where(y == vals[1], 1.0, -1.0)


# ---------------------------------------------------------------- builders
def ridge(A, b, *, n_workers: int, lam: float = 0.0, split: str = "iid", seed: int = 0, name=None,
          reg=None) -> Problem:
    r"""Ridge regression split across ``n_workers``.

    :math:`f_i(x) = \frac{1}{2 l_i}\|A_i x - b_i\|^2 + \frac{\lambda}{2}\|x\|^2`;
    the problem minimises :math:`\frac{1}{n}\sum_i f_i(x) + R(x)`.

    Parameters
    ----------
    A : array or scipy.sparse matrix, shape (N, d)
    b : array, shape (N,)
    n_workers : int, 1 <= n_workers <= N (any n >= 1 for ``split='identical'``)
    lam : float >= 0
    split : {'iid', 'sorted', 'identical', 'contiguous'}
        ``iid`` shuffles the rows; ``sorted`` sorts them by target first
        (heterogeneous workers); ``identical`` gives every worker all rows
        (shared data: ``'shared'`` is accepted for it, the setting of
        ``'isaga-shared'``, whose N functions f_j are the rows);
        ``contiguous`` keeps the given order.  Worker sizes differ by at most one.
    seed : int
        Seed of the shuffle.
    reg : Regularizer or None
        A regulariser R held by the master (:mod:`blockcd.regularizers`: ``l1(w)``, ``l2norm(w)``);
        ``f``, ``x_star`` and ``f_star`` then include it.  Only methods whose theory covers R accept such
        a problem (``'isega'``, with a prox step).
    """
    return Problem(A, b, n_workers=n_workers, loss="ridge", lam=lam, split=split, seed=seed, name=name, reg=reg)


def logistic(A, y, *, n_workers: int, lam: float, split: str = "iid", seed: int = 0, name=None,
             reg=None) -> Problem:
    r"""l2-regularised logistic regression split across ``n_workers``.

    :math:`f_i(x) = \frac{1}{l_i}\sum_j \log(1 + e^{-y_j a_j^\top x}) + \frac{\lambda}{2}\|x\|^2`,
    labels ``y`` with two distinct values (mapped to -1, +1).  Arguments as in :func:`ridge`
    (``reg`` included); ``lam`` must be > 0.
    """
    return Problem(A, y, n_workers=n_workers, loss="logistic", lam=lam, split=split, seed=seed, name=name,
                   reg=reg)


def nonconvex(A, y, *, n_workers: int, w: float = 1.0, loss: str = "logistic", lam: float = 0.0,
              split: str = "iid", seed: int = 0, name=None) -> Problem:
    r"""A smooth non-convex problem: a GLM loss plus :math:`\psi(x) = w\sum_j x_j^2/(1 + x_j^2)` in every f_i.

    .. math::

        f_i(x) = \frac{1}{l_i}\sum_j \phi(a_j^\top x; t_j) + \frac{\lambda}{2}\lVert x\rVert^2
        + w\sum_{j=1}^d \frac{x_j^2}{1 + x_j^2},

    the non-convex regulariser of the paper's experiments on non-convex SGD.  :math:`\psi''` takes
    values in [-w/2, 2w], so f is L-smooth with L = L_0 + 2w (L_0 the loss's constant) and not
    convex once w/2 exceeds the loss's curvature in some direction.  ``problem.convex`` is False;
    ``x_star``, ``f_star`` and ``mu`` raise (there is no x*); histories record
    :math:`\lVert\nabla f(x^k)\rVert^2` (``History.grad2``) and the dissimilarity
    (``History.nu2``).  Only IS-SGD, whose theory covers it (the paper's Theorem 7;
    chapter 5, "Without convexity"), runs on it.

    Parameters
    ----------
    A : array or scipy.sparse matrix, shape (N, d)
    y : array, shape (N,)
        Labels (two classes) for ``loss='logistic'``, targets for ``'ridge'``.
    n_workers : int, 1 <= n_workers <= N
    w : float > 0
        Weight of the non-convex term.
    loss : {'logistic', 'ridge'}
    lam : float >= 0
        lam = 0 is allowed for logistic regression: f >= 0 is bounded below without it.
    split, seed, name
        As in :func:`ridge`.
    """
    w = check_float("w", w, positive=True)
    loss = check_choice("loss", loss, LOSSES)
    label = name or f"non-convex {loss} (w = {w:g})"
    return Problem(A, y, n_workers=n_workers, loss=loss, lam=lam, split=split, seed=seed, name=label, nonconvex=w)


def synthetic(
    n_workers: int,
    rows_per_worker: int,
    d: int,
    *,
    loss: str = "ridge",
    cond: float = 10.0,
    heterogeneity: float = 0.0,
    interpolating: bool = False,
    noise: float = 0.1,
    lam: float = 0.0,
    split: str = "contiguous",
    seed: int = 0,
    reg=None,
) -> Problem:
    """A synthetic problem with controlled conditioning and heterogeneity.

    The data matrix has singular values chosen so that the data Hessian
    A^T A / N has eigenvalues spread geometrically from 1 down to ``1/cond``
    (so kappa = cond for ridge with lam = 0 and an even split).  Worker i's
    rows are generated with scale exp(heterogeneity * u_i), u_i evenly spaced
    in [-1, 1], which makes the L_i differ (larger r); for non-interpolating
    ridge, worker i's targets come from its own model x_true + heterogeneity *
    delta_i plus noise, which makes sigma*^2 > 0.  With ``interpolating=True``
    (ridge only) b = A x_true exactly, so grad f_i(x*) = 0 for every worker.

    ``split='contiguous'`` (the default) keeps the generated workers;
    the other splits reshuffle the rows.  ``reg``: a regulariser, as in :func:`ridge`.
    """
    n_workers = check_int("n_workers", n_workers, 1)
    rows_per_worker = check_int("rows_per_worker", rows_per_worker, 1)
    d = check_int("d", d, 1)
    loss = check_choice("loss", loss, LOSSES)
    cond = check_float("cond", cond, positive=True)
    if cond < 1:
        raise ValueError(f"cond must be >= 1, got {cond}")
    heterogeneity = check_float("heterogeneity", heterogeneity, nonnegative=True)
    noise = check_float("noise", noise, nonnegative=True)
    lam = check_float("lam", lam, nonnegative=True)
    seed = check_seed("seed", seed)
    if not isinstance(interpolating, (bool, np.bool_)):
        raise TypeError(f"interpolating must be True or False, got {interpolating!r}")
    if interpolating and loss != "ridge":
        raise ValueError("interpolating=True needs loss='ridge' (a consistent linear system)")
    N = n_workers * rows_per_worker
    if N < d and lam == 0 and loss == "ridge":
        raise ValueError(
            f"n_workers * rows_per_worker = {N} < d = {d}: with lam = 0 the problem is not "
            "strongly convex; use more rows or lam > 0"
        )
    rng = np.random.default_rng(seed)
    u = np.linspace(-1.0, 1.0, n_workers) if n_workers > 1 else np.zeros(1)
    scale = np.repeat(np.exp(heterogeneity * u), rows_per_worker)
    B = rng.standard_normal((N, d)) * scale[:, None]
    U, s, Vt = np.linalg.svd(B, full_matrices=False)
    k = s.size
    target = np.sqrt(N) * np.geomspace(1.0, 1.0 / np.sqrt(cond), k)
    A = (U * target) @ Vt
    x_true = rng.standard_normal(d) / np.sqrt(d)
    if loss == "ridge":
        if interpolating:
            t = A @ x_true
        else:
            shifts = heterogeneity * rng.standard_normal((n_workers, d)) / np.sqrt(d)
            X = x_true + shifts
            t = np.einsum("wld,wd->wl", A.reshape(n_workers, rows_per_worker, d), X).ravel()
            t += noise * rng.standard_normal(N)
        label = "interpolating ridge" if interpolating else "ridge"
    else:
        z = A @ x_true * 3.0 + noise * rng.standard_normal(N)
        t = np.where(z >= 0, 1.0, -1.0)
        label = "logistic"
    name = f"synthetic {label} (n={n_workers}, d={d}, cond={cond:g}, het={heterogeneity:g})"
    return Problem(A, t, n_workers=n_workers, loss=loss, lam=lam, split=split, seed=seed, name=name, reg=reg)


def paper_quadratic(n_workers: int, d: int = 100, o: int = 10, *, seed: int = 0) -> Problem:
    r"""The artificial quadratic of the paper's eq. (17) (Mishchenko, Hanzely and Richtarik 2019, App. I.1).

    .. math::

        f_i(x) = \tfrac12 (x - c)^\top M_i (x - c),\qquad
        M_i = v v^\top + (I - v v^\top)\frac{A_i A_i^\top}{\lambda_{\max}(A_i A_i^\top)}(I - v v^\top),

    :math:`v = v'/\lVert v'\rVert`, the entries of :math:`v' \in \mathbb{R}^d` and
    :math:`A_i \in \mathbb{R}^{d\times o}` independent standard normal.  Every :math:`M_i` has the
    eigenvalue 1 along v and the others in [0, 1], so each f_i is 1-smooth (L_i = L_max = L = 1), and
    every :math:`\nabla f_i` vanishes at x* = c: the paper's Assumptions 1 and 2 (interpolation).
    The paper writes x* = 0; here the minimiser is a standard normal vector c (from the same seed), so
    that the library's start x^0 = 0 is a generic point, at distance ||c|| (the two are the same
    problem shifted by c).  f is mu-strongly convex when the n o columns of the A_i span the
    complement of v (n o >= d - 1, almost surely); else ``ValueError``.

    It is stored as ridge regression with d rows per worker, the rows of :math:`\sqrt d\,M_i^{1/2}`
    (so :math:`A_i^\top A_i/l_i = M_i`) and targets :math:`\sqrt d\,M_i^{1/2} c`.

    Parameters
    ----------
    n_workers : int >= 1
    d : int >= 2, the dimension
    o : int >= 1, the columns of each A_i
    seed : int >= 0
    """
    n = check_int("n_workers", n_workers, 1)
    d = check_int("d", d, 2)
    o = check_int("o", o, 1)
    seed = check_seed("seed", seed)
    if n * o < d - 1:
        raise ValueError(f"n_workers * o = {n * o} < d - 1 = {d - 1}: the M_i then share a null space and f is "
                         "not strongly convex; raise n_workers or o")
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    P = np.eye(d) - np.outer(v, v)
    c = rng.standard_normal(d)
    rows, targets = [], []
    for _ in range(n):  # construction only
        Ai = rng.standard_normal((d, o))
        K = Ai @ Ai.T
        Mi = np.outer(v, v) + P @ (K / np.linalg.eigvalsh(K)[-1]) @ P
        ev, U = np.linalg.eigh((Mi + Mi.T) / 2.0)
        R = (U * np.sqrt(np.maximum(ev, 0.0))) @ U.T * math.sqrt(d)   # sqrt(d) M_i^{1/2}, symmetric
        rows.append(R)
        targets.append(R @ c)
    name = f"paper quadratic (17) (n={n}, d={d}, o={o})"
    return ridge(np.vstack(rows), np.concatenate(targets), n_workers=n, lam=0.0, split="contiguous", seed=seed,
                 name=name)


def standardize(X: np.ndarray) -> np.ndarray:
    """Columns of X centred and scaled to unit standard deviation; constant columns are dropped."""
    X = np.asarray(X, dtype=np.float64)
    sd = X.std(axis=0)
    keep = sd > 0
    return (X[:, keep] - X[:, keep].mean(axis=0)) / sd[keep]


def breast_cancer(n_workers: int, *, lam: float = 1e-2, split: str = "iid", seed: int = 0, reg=None) -> Problem:
    """scikit-learn's breast-cancer set (569 x 30, standardised), logistic regression (``reg`` as in :func:`ridge`)."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return logistic(standardize(X), y, n_workers=n_workers, lam=lam, split=split, seed=seed,
                    name="breast cancer (logistic)", reg=reg)


def digits(n_workers: int, *, lam: float = 1e-2, split: str = "iid", seed: int = 0, reg=None) -> Problem:
    """scikit-learn's digits set (1797 x 64, constant pixels dropped, standardised), 0-4 against 5-9, logistic
    (``reg`` as in :func:`ridge`)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return logistic(standardize(X), (y >= 5).astype(float), n_workers=n_workers, lam=lam, split=split,
                    seed=seed, name="digits 0-4 vs 5-9 (logistic)", reg=reg)


def load_libsvm(
    path,
    *,
    n_workers: int,
    loss: str = "logistic",
    lam: float = 1e-3,
    split: str = "iid",
    seed: int = 0,
    n_features: int | None = None,
    reg=None,
) -> Problem:
    """Read a LIBSVM/svmlight file (scikit-learn's reader) into a sparse problem (``reg`` as in :func:`ridge`)."""
    from sklearn.datasets import load_svmlight_file

    loss = check_choice("loss", loss, LOSSES)
    X, y = load_svmlight_file(str(path), n_features=n_features)
    build = logistic if loss == "logistic" else ridge
    return build(X.tocsr(), y, n_workers=n_workers, lam=lam, split=split, seed=seed,
                 name=f"{path} ({loss})", reg=reg)

"""The :class:`Problem` class: the stacked data of all workers, and the oracle that reads them.

Construction (validation, the order of the rows, the storage layout: padded
dense, CSR or one shared matrix), the oracle (f, the gradient, the Hessian,
the n local gradients at once, minibatch gradients, each worker's own local
problem) and the summary.  The constants of the theory are computed by the
classes it inherits from: :mod:`~blockcd.problems.smoothness` (L, L_i, mu and
the other smoothness constants), :mod:`~blockcd.problems.optimum` (x*, f* and
the gradients there) and :mod:`~blockcd.problems.variance` (how the workers'
and the rows' gradients spread).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .._validate import (
    check_choice,
    check_float,
    check_int,
    check_matrix,
    check_seed,
    check_vector,
)
from ..oracle import Worker, Workers, dphi, dpsi
from ..regularizers import Regularizer
from .common import DENSE_LIMIT, LOSSES, SHARED_ALIASES, SPLITS, sigmoid, split_rows
from .optimum import OptimumMixin
from .smoothness import SmoothnessMixin
from .variance import VarianceMixin


class Problem(SmoothnessMixin, OptimumMixin, VarianceMixin):
    """A finite-sum problem distributed over ``n`` workers.

    Build one with :func:`ridge`, :func:`logistic`, :func:`synthetic`,
    :func:`breast_cancer`, :func:`digits` or :func:`load_libsvm`.

    Attributes
    ----------
    n : int
        Workers.
    d : int
        Dimension.
    N : int
        Rows (functions f_j) in all.
    sizes : ndarray (n,)
        Rows held by each worker, l_i.
    loss : str
        ``'ridge'`` or ``'logistic'``.
    split : str
        How the rows were dealt to the workers (``'identical'`` for the alias ``'shared'``).
    lam : float
        The l2 regularisation.

    Notes
    -----
    The constants of the theory (``L``, ``L_i``, ``L_max``, ``L_sample``, ``mu``, ``kappa``, ``r``,
    ``x_star``, ``f_star``, ``sigma_star2``, ``rho0``) are properties, computed on first use.
    """

    def __init__(self, A, t, *, n_workers, loss, lam, split, seed, name=None, reg=None, nonconvex=0.0):
        #: the weight w of the non-convex term psi(x) = w sum_j x_j^2/(1 + x_j^2) in every f_i (0 for none)
        self.nonconvex = check_float("nonconvex", nonconvex, nonnegative=True)
        if self.nonconvex and reg is not None:
            raise ValueError("a non-convex problem takes no regulariser R (reg must be None): the methods with a "
                             "prox step have a convex theory only")
        if reg is not None and not isinstance(reg, Regularizer):
            raise TypeError(f"reg must be None or a blockcd Regularizer (regularizers.l1(w), regularizers.l2norm(w)), "
                            f"got {type(reg).__name__}")
        #: the regulariser R of f = (1/n) sum_i f_i + R (None for no R), held by the master
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
            s = sigmoid(self._margins(x) * self._t)
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

    @property
    def shared_data(self) -> bool:
        """True when every worker reads all N rows (``split='identical'``, alias ``'shared'``); then
        f = (1/N) sum_j f_j with f_j(x) = phi(a_j^T x; t_j) + (lam/2) ||x||^2, each f_i = f."""
        return self.split == "identical"

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

"""The minimiser of a :class:`~blockcd.problems.Problem` and what holds there.

x* (a direct solve for ridge, trust-region Newton for logistic, accelerated
proximal gradient with a regulariser R), f(x*), the lower bound f_lower, the
local gradients at x*, sigma*^2 and whether the problem interpolates.  A
mixin of :class:`~blockcd.problems.Problem`.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt
import scipy.sparse.linalg as spla

from ..regularizers import prox_gradient
from .common import DENSE_LIMIT, sigmoid


class OptimumMixin:
    """x*, f*, the local gradients at x* and sigma*^2 of :class:`~blockcd.problems.Problem`."""

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
            s = sigmoid(z * self._t)
            return self._hess_dense(s * (1 - s)) + self.lam * np.eye(self.d)

        def hessp(x, v):
            z = self._margins(x)
            s = sigmoid(z * self._t)
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
        """A lower bound on inf f, f* for a convex problem, 0 for a non-convex one.

        Every term of a non-convex problem's f is >= 0 (the loss phi, (lam/2)||x||^2 and psi),
        so 0 <= inf f; the bound of the paper's Theorem 7 takes f(x^0) - f_lower for f(x^0) - f*.
        """
        return 0.0 if self.nonconvex else self.f_star

    @cached_property
    def local_grads_star(self) -> np.ndarray:
        """The local gradients at the optimum, grad f_i(x*), shape (n, d) (with R their mean is a
        subgradient of -R at x*, not 0)."""
        return np.array(self._oracle.grads(self.x_star))

    @cached_property
    def sigma_star2(self) -> float:
        """Heterogeneity at the optimum, sigma*^2 = (1/n) sum_i ||grad f_i(x*)||^2."""
        return float(np.mean(np.sum(self.local_grads_star**2, axis=1)))

    @property
    def interpolating(self) -> bool:
        """True when every worker's gradient vanishes at x* (sigma*^2 ~ 0, relative to L^2 ||x*||^2)."""
        scale = self.L**2 * max(float(self.x_star @ self.x_star), 1e-300)
        return self.sigma_star2 <= 1e-18 * scale

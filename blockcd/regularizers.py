r"""Regularisers R for composite problems min_x (1/n) sum_i f_i(x) + R(x), and their prox.

A :class:`Regularizer` is held by the master only: the workers' oracles
(:mod:`blockcd.oracle`) know the smooth f_i, and a method that takes a prox
step (ISEGA, Algorithm 2 and Theorem 3 of Mishchenko, Hanzely and
Richtarik) applies :meth:`Regularizer.prox` after its gradient step.  Two
regularisers:

- :func:`l1`, :math:`R(x) = w\|x\|_1`: separable, its prox is soft thresholding;
- :func:`l2norm`, :math:`R(x) = w\|x\|_2` (the norm, not its square): *not*
  separable over blocks, so block coordinate descent cannot take its prox on
  the blocks it updates; ISEGA can, because its estimate h_i of each local
  gradient converges to grad f_i(x*).

:func:`prox_gradient` finds the minimiser of a smooth strongly convex F plus R
(the problems' ``x_star`` with ``reg``).  Nothing here knows a method or a
sampling.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import check_float, check_int, check_vector

__all__ = ["Regularizer", "l1", "l2norm", "parse", "prox_gradient"]


class Regularizer:
    """A closed convex regulariser R(x) = w rho(x) with a computable prox.

    Attributes
    ----------
    kind : {'l1', 'l2norm'}
    weight : float >= 0
        The factor w.
    separable : bool
        Whether R is a sum over coordinates (then its prox acts block by block).
    """

    kind = ""
    separable = False

    def __init__(self, weight: float):
        self.weight = check_float("w", weight, nonnegative=True)

    def __call__(self, x) -> float:
        """R(x)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def prox(self, x, step: float) -> np.ndarray:
        r"""prox_{step R}(x) = argmin_y R(y) + ||y - x||^2 / (2 step), a new array."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _args(self, x, step):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1 or not np.all(np.isfinite(x)):
            raise ValueError(f"x must be a finite 1-D array, got shape {x.shape}")
        return x, check_float("step", step, positive=True)

    def __repr__(self) -> str:
        return f"{self.kind}({self.weight:g})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.weight == self.weight

    def __hash__(self) -> int:
        return hash((self.kind, self.weight))


class L1(Regularizer):
    r""":math:`R(x) = w\|x\|_1`; prox: soft thresholding, sign(x) max(|x| - step w, 0)."""

    kind = "l1"
    separable = True

    def __call__(self, x) -> float:
        """w ||x||_1."""
        return self.weight * float(np.sum(np.abs(x)))

    def prox(self, x, step):
        """sign(x) max(|x| - step w, 0), coordinate by coordinate."""
        x, step = self._args(x, step)
        return np.sign(x) * np.maximum(np.abs(x) - step * self.weight, 0.0)


class L2Norm(Regularizer):
    r""":math:`R(x) = w\|x\|_2`; prox: x max(1 - step w / ||x||, 0) (block soft thresholding of all of x)."""

    kind = "l2norm"
    separable = False

    def __call__(self, x) -> float:
        """w ||x||_2."""
        return self.weight * float(np.linalg.norm(x))

    def prox(self, x, step):
        """x max(1 - step w / ||x||_2, 0): shrinks the whole vector towards 0, every block at once."""
        x, step = self._args(x, step)
        norm = float(np.linalg.norm(x))
        if norm <= step * self.weight:
            return np.zeros_like(x)
        return x * (1.0 - step * self.weight / norm)


def l1(w: float) -> Regularizer:
    r"""The regulariser :math:`R(x) = w\|x\|_1` (w >= 0), separable over coordinates."""
    return L1(w)


def l2norm(w: float) -> Regularizer:
    r"""The regulariser :math:`R(x) = w\|x\|_2` (w >= 0), not separable over blocks."""
    return L2Norm(w)


KINDS = {"l1": l1, "l2norm": l2norm}


def parse(spec: str) -> Regularizer:
    """A regulariser from ``'KIND:WEIGHT'``, e.g. ``'l1:0.05'`` or ``'l2norm:0.1'`` (the MPI command line's ``--reg``)."""
    if not isinstance(spec, str):
        raise TypeError(f"reg must be a string KIND:WEIGHT, got {type(spec).__name__}")
    kind, sep, weight = spec.partition(":")
    if not sep or kind not in KINDS:
        raise ValueError(f"reg must be KIND:WEIGHT with KIND one of {tuple(KINDS)}, got {spec!r}")
    try:
        w = float(weight)
    except ValueError:
        raise ValueError(f"reg's weight must be a number, got {weight!r}") from None
    return KINDS[kind](w)


def prox_gradient(grad, L: float, mu: float, reg: Regularizer, x0, *, rtol: float = 1e-13,
                  max_iter: int = 200_000) -> np.ndarray:
    r"""The minimiser of F + R, F smooth (L) and strongly convex (mu), by accelerated proximal gradient.

    FISTA with step 1/L, momentum (k - 1)/(k + 2) and the gradient-based
    restart of O'Donoghue and Candes (2015), which makes it converge linearly
    on strongly convex problems.  It stops at the first prox-gradient point
    :math:`x^+ = \mathrm{prox}_{R/L}(y - \nabla F(y)/L)` with
    :math:`2\|G\|/\mu \le` ``rtol`` :math:`\|x^+\|`, where :math:`G = L(y - x^+)`:
    since :math:`G - \nabla F(y) + \nabla F(x^+) \in \partial(F + R)(x^+)`, strong
    convexity gives :math:`\|x^+ - x^\star\| \le 2\|G\|/\mu`, so the answer is
    within ``rtol`` relative of the minimiser (a certificate, not an estimate).

    Parameters
    ----------
    grad : callable, x -> grad F(x)
    L, mu : float > 0
        Smoothness and strong convexity of F.
    reg : Regularizer
    x0 : array (d,)
        Starting point.
    rtol : float > 0
        Relative accuracy certified on return.
    max_iter : int >= 1

    Raises
    ------
    RuntimeError
        if ``max_iter`` iterations do not certify 1e-12 relative accuracy (the answer
        is then returned only when it meets that).
    """
    L = check_float("L", L, positive=True)
    mu = check_float("mu", mu, positive=True)
    rtol = check_float("rtol", rtol, positive=True)
    max_iter = check_int("max_iter", max_iter, 1)
    if not isinstance(reg, Regularizer):
        raise TypeError(f"reg must be a blockcd Regularizer (regularizers.l1, l2norm), got {type(reg).__name__}")
    x = check_vector("x0", x0, len(np.atleast_1d(x0)), "itself").copy()
    y, t, best = x.copy(), 1.0, (math.inf, x)
    for _ in range(max_iter):
        gy = grad(y)
        x_new = reg.prox(y - gy / L, 1.0 / L)
        G = L * (y - x_new)
        bound = 2.0 * float(np.linalg.norm(G)) / mu
        scale = max(float(np.linalg.norm(x_new)), 1e-300)
        if bound / scale < best[0]:
            best = (bound / scale, x_new)
        if bound <= rtol * scale:
            return x_new
        if float(G @ (x_new - x)) > 0:  # restart: the step went against the momentum
            t, y = 1.0, x_new.copy()
        else:
            t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            y = x_new + ((t - 1.0) / t_new) * (x_new - x)
            t = t_new
        x = x_new
    if best[0] <= 1e-12:
        return best[1]
    raise RuntimeError(f"prox_gradient certified only {best[0]:.3g} relative accuracy in {max_iter} iterations")

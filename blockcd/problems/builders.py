"""The builders of a :class:`~blockcd.problems.Problem` from data or from a recipe.

:func:`ridge`, :func:`logistic` and :func:`nonconvex` split given data across
workers; :func:`synthetic` generates data with a chosen conditioning and
heterogeneity; :func:`paper_quadratic` is the artificial quadratic of the
paper's experiments.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_choice, check_float, check_int, check_seed
from .common import LOSSES
from .core import Problem


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

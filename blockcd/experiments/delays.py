"""Asynchronous IS-SGD under delays: the mean iterate it must follow, and a check that can fail.

On least squares every gradient is affine in the point, and asynchronous IS-SGD's blocks and
minibatches are drawn afresh for every message, independently of the point it was computed on.
So, for a fixed arrival record, the expected iterate follows exactly the same asynchronous method
with full local gradients and no sparsification (chapter 12, ``prop-async-mean``):

.. math:: \\mathbb{E}\\,\\bar x^t = \\bar y^t ,

whatever the delays and the step.  :func:`expected_async_iterate` computes :math:`\\bar y^t`
by its own recursion, written apart from :class:`blockcd.rules.ISSGDAsync`;
:func:`async_mean_check` sets the mean of seeded runs of the library's method beside it, in
standard errors.  A master that applied each message to the current average (asynchronous SGD
without local iterates), forgot the factor ``m/tau`` or ignored the delays would miss it by many
standard errors (``tests/test_delays.py`` runs such masters).  :func:`async_message_check` tests
the fact the proof rests on at every arrival (each message's mean given the past) and so also sees
what moves the last iterate's mean by a few standard errors only: a step 10% too long, a worker that
computes on the current average instead of its stale point.

:func:`epoch_ratios` gives the contraction of ``||x - x*||^2`` over each epoch of ``M`` arrivals
of a run, the quantity Theorem 9's rate is stated in; their geometric mean is
:func:`blockcd.asynchronous.epoch_rate`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._validate import check_float, check_int, check_seed

__all__ = ["async_mean_check", "async_message_check", "epoch_ratios", "expected_async_iterate"]


def _record(record, n: int, iters: int) -> np.ndarray:
    arr = np.asarray(record)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise TypeError(f"record must be a 1-D integer array (the worker of each arrival), got "
                        f"{type(record).__name__} of shape {np.shape(record)}")
    if arr.size < iters:
        raise ValueError(f"record has {arr.size} arrivals, fewer than iters = {iters}")
    arr = arr[:iters].astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"record's workers must be in [0, {n - 1}], got values in [{arr.min()}, {arr.max()}]")
    return arr


def _least_squares(problem) -> None:
    if not hasattr(problem, "loss") or not hasattr(problem, "worker"):
        raise TypeError(f"problem must be a blockcd Problem, got {type(problem).__name__}")
    if problem.loss != "ridge" or getattr(problem, "nonconvex", 0.0) or problem.reg is not None:
        raise ValueError("problem must be least squares (loss='ridge') without a regulariser or a non-convex "
                         "term: the mean iterate follows the full-gradient method only when every gradient is "
                         "affine and the master applies no prox")


def expected_async_iterate(problem, record, step: float, iters: int, x0=None) -> np.ndarray:
    r"""The mean iterate of asynchronous IS-SGD after ``iters`` arrivals of ``record`` (chapter 12).

    On least squares this is :math:`\bar y^t`, asynchronous gradient descent with full local
    gradients along the same record: worker :math:`i_t`'s local iterate becomes
    :math:`u_i - \gamma\nabla f_i(u_i)` at the point :math:`u_i` the master last sent it, the average
    :math:`\bar y` moves by a :math:`1/n` share of the change, and worker :math:`i_t` receives
    :math:`\bar y`.  By ``prop-async-mean`` it equals :math:`\mathbb{E}\,\bar x^t` for every ``m``,
    ``tau`` and minibatch, whatever the delays.

    Parameters
    ----------
    problem : Problem
        Least squares (``loss='ridge'``, any ``lam``), no regulariser.
    record : 1-D int array
        The worker of each arrival (an arrival record, as ``History.arrivals`` or
        ``Speeds.arrivals`` give it), at least ``iters`` long, entries in [0, n - 1].
    step : float
        The book's step, > 0.
    iters : int
        Arrivals, >= 0.
    x0 : array (d,) or None
        The start (zeros, as :func:`blockcd.run`).

    Returns
    -------
    array (d,)
        :math:`\bar y^{\text{iters}}`.
    """
    _least_squares(problem)
    step = check_float("step", step, positive=True)
    iters = check_int("iters", iters, 0)
    n, d = int(problem.n), int(problem.d)
    rec = _record(record, n, iters)
    start = np.zeros(d) if x0 is None else np.asarray(x0, dtype=float)
    if start.shape != (d,) or not np.all(np.isfinite(start)):
        raise ValueError(f"x0 must be a finite vector of length d = {d}, got shape {start.shape}")
    workers = [problem.worker(i) for i in range(n)]
    mean = start.copy()
    local = np.tile(start, (n, 1))          # every worker's local iterate y_i
    held = np.tile(start, (n, 1))           # the point u_i each worker computes on
    for i in rec:
        new = held[i] - step * workers[i].grads(held[i])
        mean += (new - local[i]) / n
        local[i] = new
        held[i] = mean
    return mean


def async_mean_check(problem, record, *, m: int, tau: int, step: float, iters: int,
                     batch: int | None = None, seeds: Sequence[int] = tuple(range(40))) -> dict:
    r"""Seeded runs of asynchronous IS-SGD along ``record``, their mean against :func:`expected_async_iterate`.

    Runs ``blockcd.run(problem, "is-sgd-async", m=m, tau=tau, batch=batch, step=step, iters=iters,
    seed=s, delays=record)`` for each seed, takes the mean :math:`\hat x` of the final iterates and its
    standard error per coordinate, and measures every coordinate's distance from the prediction
    :math:`\bar y` in standard errors (``z``).  With 40 seeds and d coordinates a correct method
    keeps every ``|z|`` below 4 except with a probability of about :math:`3\times10^{-4} d`
    (Student's t with 39 degrees of freedom).

    Parameters
    ----------
    problem, record, step, iters
        As for :func:`expected_async_iterate`.
    m, tau, batch : int
        As for :func:`blockcd.run`.
    seeds : sequence of int
        At least 2 distinct seeds >= 0, one run each.

    Returns
    -------
    dict
        ``predicted`` (:math:`\bar y`), ``measured`` (:math:`\hat x`), ``se`` (per coordinate),
        ``z`` (largest :math:`|\hat x_j - \bar y_j|/\text{se}_j`), ``relative`` (the bias
        :math:`\lVert\hat x - \bar y\rVert / \lVert\bar y - x^\star\rVert`) and ``mean_error`` and
        ``predicted_error``, :math:`\lVert\hat x - x^\star\rVert` and :math:`\lVert\bar y - x^\star\rVert`.
    """
    from ..methods import run

    seeds = [check_seed("seeds[]", s) for s in seeds]
    if len(set(seeds)) < 2:
        raise ValueError(f"seeds must hold at least 2 distinct seeds (a standard error), got {seeds!r}")
    predicted = expected_async_iterate(problem, record, step, iters)
    rec = _record(record, int(problem.n), iters)
    xs = np.array([run(problem, "is-sgd-async", m=m, tau=tau, batch=batch, step=step, iters=iters, seed=s,
                       delays=rec).x for s in seeds])
    measured = xs.mean(axis=0)
    se = xs.std(axis=0, ddof=1) / np.sqrt(len(seeds))
    gap = np.abs(measured - predicted)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, gap / se, np.where(gap > 0, np.inf, 0.0))
    xstar = problem.x_star
    return {"predicted": predicted, "measured": measured, "se": se, "z": float(z.max()),
            "relative": float(np.linalg.norm(measured - predicted) / np.linalg.norm(predicted - xstar)),
            "mean_error": float(np.linalg.norm(measured - xstar)),
            "predicted_error": float(np.linalg.norm(predicted - xstar))}


def _iterates(problem, rec, *, m, tau, batch, step, seed) -> np.ndarray:
    """The average x-bar after every arrival of one library run (rows 0..iters), as recorded."""
    from ..history import Recorder
    from ..methods import run

    seen = []
    original = Recorder.point

    def point(self, k, x, fx=None):
        seen.append(np.array(x, dtype=float))
        return original(self, k, x, fx)

    Recorder.point = point
    try:
        run(problem, "is-sgd-async", m=m, tau=tau, batch=batch, step=step, iters=rec.size, seed=seed,
            delays=rec)
    finally:
        Recorder.point = original
    return np.array(seen)


def async_message_check(problem, record, *, m: int, tau: int, step: float, iters: int,
                        batch: int | None = None, seeds: Sequence[int] = tuple(range(40))) -> dict:
    r"""Every message of seeded asynchronous IS-SGD runs against its conditional mean (chapter 12).

    The proof of ``prop-async-mean`` rests on one fact per arrival: given everything before it and
    the blocks :math:`S` it carries, worker :math:`i`'s message is :math:`\frac m\tau` times a
    minibatch gradient on :math:`S` with mean :math:`\frac m\tau P_S\nabla f_i(z_i)`, at the point
    :math:`z_i` the master last sent it.  This check tests that fact at every arrival instead of its
    consequence at the last one.  From a run's averages :math:`\bar x^0, \dots, \bar x^T` and the
    record alone it rebuilds, as Algorithm 8 defines them, :math:`z_i` (the average after worker
    :math:`i`'s previous arrival), the local iterate :math:`x_i` (moved by
    :math:`n(\bar x^{t+1} - \bar x^t)` on each of its arrivals), the applied message
    :math:`v_t = (z_i - x_i^{\text{new}})/\gamma` and its blocks :math:`S` (its nonzero coordinates), and
    takes the relative residual along the expected message :math:`e_t = \frac m\tau P_S\nabla f_i(z_i)`,

    .. math:: \rho_t = \frac{\langle v_t - e_t,\, e_t\rangle}{\lVert e_t\rVert^2} ,

    the error of the step the master applied along that direction, as a fraction (0 for a correct
    master; 0.1 in expectation for a step 10% too long).  The :math:`\rho_t` are martingale differences
    (mean 0 given the past and :math:`S`), so each run's mean of them has mean 0 and the runs' means
    are independent: a Student t test with ``len(seeds) - 1`` degrees of freedom, as in
    :func:`async_mean_check`, on one number instead of d coordinates.  Dividing by
    :math:`\lVert e_t\rVert^2` weighs every arrival alike, where the final iterate is dominated by
    the first, largest gradients.

    The same residual along :math:`f_t = \frac m\tau P_S(\nabla f_i(\bar x^t) - \nabla f_i(z_i))`,
    the change had the worker computed on the current average instead of its stale point,

    .. math:: \kappa_t = \frac{\langle v_t - e_t,\, f_t\rangle}{\lVert f_t\rVert^2}
              \quad (\text{arrivals with } f_t \ne 0),

    has mean 0 for a master that honours the delays and 1 for one whose workers compute on the
    current average (delays ignored): the second test, on the runs' means of :math:`\kappa_t`.

    Parameters and ``seeds`` as for :func:`async_mean_check`.

    Returns
    -------
    dict
        ``runs`` (one mean of :math:`\rho_t` per seed), ``mean`` (their mean: the step's relative
        error, estimated), ``se`` (its standard error) and ``z`` (:math:`|\text{mean}|/\text{se}`);
        ``delay_runs``, ``delay_mean``, ``delay_se`` and ``delay_z``, the same for :math:`\kappa_t`
        (the share of the delay ignored, estimated).
    """
    _least_squares(problem)
    step = check_float("step", step, positive=True)
    iters = check_int("iters", iters, 1)
    seeds = [check_seed("seeds[]", s) for s in seeds]
    if len(set(seeds)) < 2:
        raise ValueError(f"seeds must hold at least 2 distinct seeds (a standard error), got {seeds!r}")
    n = int(problem.n)
    rec = _record(record, n, iters)
    workers = [problem.worker(i) for i in range(n)]
    runs = np.zeros((2, len(seeds)))
    for r, seed in enumerate(seeds):
        xs = _iterates(problem, rec, m=m, tau=tau, batch=batch, step=step, seed=seed)
        held = np.tile(xs[0], (n, 1))            # z_i: the point worker i computes on
        local = np.tile(xs[0], (n, 1))           # x_i: its local iterate
        rho, kappa = [], []
        for t, i in enumerate(rec):
            new = local[i] + n * (xs[t + 1] - xs[t])
            v = (held[i] - new) / step
            # the message's blocks: its nonzero coordinates (the rest is round-off of n * (x^{t+1} - x^t))
            sent = np.abs(v) > 1e-9 * np.abs(v).max() if np.any(v) else np.zeros(v.shape, bool)
            e = np.where(sent, (m / tau) * workers[i].grads(held[i]), 0.0)
            if e @ e > 0:
                rho.append((v - e) @ e / (e @ e))
            fresh = np.where(sent, (m / tau) * workers[i].grads(xs[t]), 0.0) - e
            if fresh @ fresh > 0:
                kappa.append((v - e) @ fresh / (fresh @ fresh))
            local[i] = new
            held[i] = xs[t + 1]
        runs[:, r] = np.mean(rho) if rho else 0.0, np.mean(kappa) if kappa else 0.0
    mean = runs.mean(axis=1)
    se = runs.std(axis=1, ddof=1) / np.sqrt(len(seeds))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, np.abs(mean) / se, np.where(mean != 0, np.inf, 0.0))
    return {"runs": runs[0], "mean": float(mean[0]), "se": float(se[0]), "z": float(z[0]),
            "delay_runs": runs[1], "delay_mean": float(mean[1]), "delay_se": float(se[1]),
            "delay_z": float(z[1])}

def epoch_ratios(history, M: int) -> np.ndarray:
    """The contraction ||x^{(e+1)M} - x*||^2 / ||x^{eM} - x*||^2 of each epoch of ``M`` arrivals of a run.

    Theorem 9's rate is stated per epoch, floor(t/M); the geometric mean of these ratios is
    :func:`blockcd.asynchronous.epoch_rate`, and a ratio above 1 is an epoch that expanded.

    Parameters
    ----------
    history : History
        A run's history (its ``dist2``).
    M : int
        The epoch's length in arrivals, >= 1.

    Returns
    -------
    array
        One ratio per complete epoch recorded.
    """
    M = check_int("M", M, 1)
    if not hasattr(history, "dist2"):
        raise TypeError(f"history must be a blockcd History, got {type(history).__name__}")
    e = np.asarray(history.dist2, dtype=float)[::M]
    if e.size < 2:
        raise ValueError(f"the run records fewer than M = {M} arrivals, less than one epoch")
    return e[1:] / e[:-1]

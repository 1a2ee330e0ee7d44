"""Sweeps the chapters and ``python -m blockcd reproduce`` share.

Small, seeded loops over :func:`blockcd.run` and the sparsifier: iterations
to an accuracy over a grid of tau (and seeds), and Monte-Carlo estimates of
the aggregation variance of the key lemma.  Each returns plain arrays; the
plotting is in :mod:`blockcd.plotting` and the predictions in
:mod:`blockcd.theory`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._validate import check_choice, check_float, check_int, check_seed
from .blocks import SAMPLINGS, nice_mask, partition
from .methods import run


def iterations_to(
    problem,
    method: str,
    m: int,
    taus: Sequence[int],
    eps: float,
    *,
    seeds: Sequence[int] = (0,),
    iters_max: int = 100_000,
    step_scale: float = 1.0,
    batch: int | None = None,
    sampling: str = "independent",
) -> np.ndarray:
    """Iterations until ||x^k - x*||^2 <= eps ||x^0 - x*||^2, for each tau and seed.

    Runs ``blockcd.run`` with ``step = step_scale * theory step`` for half the
    theory's bound, doubling the run until the accuracy is hit or
    ``iters_max`` is reached.
    Returns an array of shape (len(taus), len(seeds)); ``nan`` where the
    accuracy was not reached within ``iters_max``.
    """
    from . import theory

    eps = check_float("eps", eps, positive=True)
    iters_max = check_int("iters_max", iters_max, 1)
    step_scale = check_float("step_scale", step_scale, positive=True)
    out = np.full((len(taus), len(seeds)), np.nan)
    for a, tau in enumerate(taus):
        step = step_scale * theory.step_size(problem, method, m, tau, batch=batch, sampling=sampling)
        guess = theory.predicted_iterations(problem, method, m, tau, eps, step=step, batch=batch)
        # measured counts are typically 30-60% of the bound: start below it and
        # double (a shorter run is an exact prefix of a longer one, so the
        # count found does not depend on the budget)
        budget = int(min(iters_max, max(50, 0.5 * guess if np.isfinite(guess) else iters_max)))
        for b, seed in enumerate(seeds):
            n_it = budget
            while True:
                h = run(problem, method, m=m, tau=tau, step=step, iters=n_it, seed=seed, batch=batch,
                        sampling=sampling)
                k = h.iters_to(eps)
                if k is not None:
                    out[a, b] = k
                    break
                if n_it >= iters_max:
                    break
                n_it = min(iters_max, 2 * n_it)
    return out


def variance_mc(G, m: int, tau: int, *, sampling: str = "independent", trials: int = 2000,
                seed: int = 0) -> tuple[float, float]:
    """Monte-Carlo estimate of E||(1/n) sum_i C_i(g_i) - gbar||^2 and its standard error.

    Draws ``trials`` independent aggregations of the rows of ``G`` (n, d) in
    one batched operation; compare with :func:`blockcd.theory.aggregation_variance`.
    """
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2:
        raise ValueError(f"G must have shape (n, d), got {G.shape}")
    n, d = G.shape
    blocks = partition(d, m)
    tau = check_int("tau", tau, 1, blocks.m)
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    trials = check_int("trials", trials, 2)
    rng = np.random.default_rng(check_seed("seed", seed))
    gbar = G.mean(axis=0)
    vals = np.empty(trials)
    chunk = max(1, 2**22 // max(n * d, 1))
    for s in range(0, trials, chunk):
        t = min(chunk, trials - s)
        rows = n if sampling == "independent" else 1
        mask = nice_mask(rng.random((t * rows, blocks.m)), tau).reshape(t, rows, blocks.m)
        coord = mask[:, :, blocks.block_of]  # (t, rows, d)
        agg = np.einsum("tnd,nd->td", np.broadcast_to(coord, (t, n, d)), G) * (blocks.m / tau) / n
        vals[s : s + t] = np.sum((agg - gbar) ** 2, axis=1)
    return float(vals.mean()), float(vals.std(ddof=1) / np.sqrt(trials))

"""Sweeps the chapters and ``python -m blockcd reproduce`` share.

Small, seeded loops over :func:`blockcd.run` and the sparsifier: iterations
to an accuracy over a grid of tau (and seeds), the best step on a grid of
multiples of the theory's, and Monte-Carlo estimates of the aggregation
variance of the key lemma.  Each returns plain arrays; the
plotting is in :mod:`blockcd.plotting` and the predictions in
:mod:`blockcd.theory`.

One module a job: ``counts`` (iterations to an accuracy),
``montecarlo`` (Monte-Carlo estimates and exact one-step checks),
``trajectories`` (what a run settles to), ``stragglers`` (chapter 12's
asynchronous runs behind one straggler) and ``delays`` (asynchronous
IS-SGD's mean iterate under delays, chapter 12); every name is available here.
"""

from __future__ import annotations

from . import counts
from .counts import (
    crossing,
    dense_and_sparse,
    iteration_ratios,
    iterations_to,
    mean_iterations,
    rho_grid,
    rho_search,
    tuned_run,
    tuned_step,
)
from .delays import async_mean_check, async_message_check, epoch_ratios, expected_async_iterate
from .montecarlo import (
    composition_identity,
    composition_mc,
    coverage_mc,
    growth_mc,
    is_saga_inequality_ratio,
    isega_inequality_ratios,
    smoothness_ratios,
    variance_mc,
)
from .stragglers import straggler_sweep
from .trajectories import isega_shifts, stationarity, stationary_error, stationary_floor

# bound here rather than imported, so that its doc comment (#:) reaches the API reference, which reads it
# from this file
#: multiples of the theory step that :func:`tuned_run` tries, from the top (chapter 6)
TUNED_SCALES = counts.TUNED_SCALES

__all__ = [
    "TUNED_SCALES",
    "async_mean_check",
    "async_message_check",
    "composition_identity",
    "composition_mc",
    "coverage_mc",
    "crossing",
    "dense_and_sparse",
    "epoch_ratios",
    "expected_async_iterate",
    "growth_mc",
    "is_saga_inequality_ratio",
    "isega_inequality_ratios",
    "isega_shifts",
    "iteration_ratios",
    "iterations_to",
    "mean_iterations",
    "rho_grid",
    "rho_search",
    "smoothness_ratios",
    "stationarity",
    "stationary_error",
    "stationary_floor",
    "straggler_sweep",
    "tuned_run",
    "tuned_step",
    "variance_mc",
]

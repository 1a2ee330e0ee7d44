"""Problems: losses split across n workers, with their smoothness constants (:mod:`blockcd.problems.core`)."""

from __future__ import annotations

from .core import (
    DENSE_LIMIT,
    LOSSES,
    SHARED_ALIASES,
    SPLITS,
    Problem,
    breast_cancer,
    digits,
    load_libsvm,
    logistic,
    nonconvex,
    paper_quadratic,
    ridge,
    split_rows,
    standardize,
    synthetic,
)

__all__ = [
    "DENSE_LIMIT",
    "LOSSES",
    "SHARED_ALIASES",
    "SPLITS",
    "Problem",
    "breast_cancer",
    "digits",
    "load_libsvm",
    "logistic",
    "nonconvex",
    "paper_quadratic",
    "ridge",
    "split_rows",
    "standardize",
    "synthetic",
]

"""Real data sets as problems: scikit-learn's breast-cancer and digits sets, and LIBSVM files.

:func:`standardize` scales the columns; the readers import scikit-learn on use.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_choice
from .builders import logistic, ridge
from .common import LOSSES
from .core import Problem


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

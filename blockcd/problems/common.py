"""What every module of :mod:`blockcd.problems` shares: the losses and splits, the dense limit, the row split.

The names of the losses and of the splits a problem accepts, the dimension up
to which eigenvalues and solves are done densely, a numerically stable
logistic function, and :func:`split_rows`, the worker sizes of an even split.
"""

from __future__ import annotations

import numpy as np

LOSSES = ("ridge", "logistic")
SPLITS = ("iid", "sorted", "identical", "contiguous")
#: ``split='shared'`` is the paper's name for ``'identical'``, where every worker reads all N functions
#: (shared data, N = the number of rows, f = (1/N) sum_j f_j); shared-data ISAGA needs it
SHARED_ALIASES = {"shared": "identical"}

#: dimension up to which eigenvalues and solves are done densely
DENSE_LIMIT = 3000


def sigmoid(z: np.ndarray) -> np.ndarray:
    # numerically stable logistic function
    return np.exp(-np.logaddexp(0.0, -z))


def split_rows(N: int, n: int) -> np.ndarray:
    """Worker sizes for ``N`` rows over ``n`` workers: differ by at most one, sum to ``N``."""
    sizes = np.full(n, N // n, dtype=np.int64)
    sizes[: N % n] += 1
    return sizes

"""Problems: losses split across n workers, with their smoothness constants.

A :class:`Problem` is the *oracle* of the book: it holds the stacked local data
of all workers and knows f, the gradient, the n local gradients at once,
per-sample gradients for SGD and SAGA, and the constants the theory needs
(L, L_i, L_max, per-sample smoothness, mu, x*, f(x*), sigma*^2, rho0).
It does not know any method or any sampling of blocks; see
:mod:`blockcd.methods` and :mod:`blockcd.blocks`.

Both losses are generalised linear models,

    f_i(x) = (1/l_i) sum_{j in worker i} phi(a_j^T x; t_j) + (lam/2) ||x||^2,
    f(x)   = (1/n) sum_i f_i(x),

with phi(z; t) = (z - t)^2 / 2 (ridge) or log(1 + exp(-t z)) (logistic,
t in {-1, +1}).  The data are stored once, rows grouped by worker: dense data
as an (n, l_max, d) array (zero-weight padding rows when the split is uneven),
sparse data as one CSR matrix, identical splits as the single shared matrix.
A problem may carry a regulariser R (``reg=``, :mod:`blockcd.regularizers`),
held by the master: it then minimises f(x) = (1/n) sum_i f_i(x) + R(x).

A *non-convex* problem (:func:`nonconvex`) adds the smooth term
psi(x) = w sum_j x_j^2 / (1 + x_j^2) to every f_i (a term of f itself, not a
prox term R).  f is then L-smooth but not convex: there is no x*, and the
constants that need one (mu, x*, f*, sigma*^2) raise; a lower bound
``f_lower`` on f and the dissimilarity bound ``nu2_bound`` take their place
(chapter 5, "Without convexity").

One module a job: ``core`` (the :class:`Problem` class: the data layout and
the oracle), ``smoothness`` (L, mu, L_i, L_max, the per-sample and block
constants, from the spectrum of the curvature bound), ``optimum`` (x*, f*,
the local gradients at x*, sigma*^2), ``variance`` (the dissimilarity, rho0,
the minibatch variance and growth constants), the last three mixins of
:class:`Problem`; ``builders`` (:func:`ridge`, :func:`logistic`,
:func:`nonconvex`, :func:`synthetic`, :func:`paper_quadratic`), ``datasets``
(:func:`standardize`, :func:`breast_cancer`, :func:`digits`,
:func:`read_libsvm`, :func:`load_libsvm` and the paper's four LIBSVM sets,
:data:`PAPER_DATASETS`, shipped in ``data/``), ``arrays`` (:func:`save_arrays`, :func:`load_arrays`,
:func:`from_arrays`: your own A and b in a file each MPI rank reads its rows of) and ``common`` (the
losses, splits and limits they
share, :func:`split_rows`); every name is available here.
"""

from __future__ import annotations

from . import common, datasets
from .arrays import from_arrays, load_arrays, save_arrays
from .builders import logistic, nonconvex, paper_quadratic, ridge, synthetic
from .common import LOSSES, SPLITS, split_rows
from .core import Problem
from .datasets import PaperDataset, breast_cancer, digits, load_libsvm, read_libsvm, standardize

# the documented constants again, with the comments the API reference shows under blockcd.problems
#: ``split='shared'`` is the paper's name for ``'identical'``, where every worker reads all N functions
#: (shared data, N = the number of rows, f = (1/N) sum_j f_j); shared-data ISAGA needs it
SHARED_ALIASES = common.SHARED_ALIASES

#: dimension up to which eigenvalues and solves are done densely
DENSE_LIMIT = common.DENSE_LIMIT

#: the reference paper's four LIBSVM sets, name -> :class:`PaperDataset` (N rows, d features, the
#: file's labels, the source), shipped with the package; sizes as the paper's Appendix I states
#: them: a1a 1605 x 123, mushrooms 8124 x 112, phishing 11055 x 68, w1a 2477 x 300
PAPER_DATASETS = datasets.PAPER_DATASETS

__all__ = [
    "DENSE_LIMIT",
    "LOSSES",
    "PAPER_DATASETS",
    "SHARED_ALIASES",
    "SPLITS",
    "PaperDataset",
    "Problem",
    "breast_cancer",
    "digits",
    "from_arrays",
    "load_arrays",
    "load_libsvm",
    "logistic",
    "nonconvex",
    "paper_quadratic",
    "read_libsvm",
    "ridge",
    "save_arrays",
    "split_rows",
    "standardize",
    "synthetic",
]

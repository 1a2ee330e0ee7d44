"""Shared fixtures and helpers of the library's test suite.

Statistical checks use fixed seeds, so every run of the suite draws the same
numbers; the tolerances are nevertheless derived from the estimator's standard
error (SE), so that the test would pass with high probability for *any* seed
if the library is right, and fail if it is wrong by more than a few SE.

``Z`` is the number of standard errors allowed.  For an estimator that is
approximately normal (a mean of thousands of independent draws, CLT), the
two-sided tail P(|N(0, 1)| > 4.5) = 6.8e-6, so even a test with 100 such
checks has a false-failure probability below 1e-3 for a random seed.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from blockcd import problems

#: standard errors allowed in Monte-Carlo comparisons (see the module docstring)
Z = 4.5


def assert_mc(estimate, se, truth, *, z=Z, what=""):
    """Assert |estimate - truth| <= z * se elementwise (se: standard error of estimate).

    A rounding allowance of 1e-12 |truth| is added, for the degenerate cases
    where every draw has the same value (SE = 0), e.g. shared sampling with
    tau = m/2, where ||2 P_S g - g|| = ||g|| for every S.
    """
    estimate, se, truth = (np.asarray(a, dtype=float) for a in (estimate, se, truth))
    err = np.abs(estimate - truth)
    bad = err > z * se + 1e-12 * np.abs(truth)
    assert not np.any(bad), (
        f"{what}: Monte-Carlo estimate off by more than {z} SE: "
        f"estimate {estimate[bad] if estimate.ndim else estimate}, truth {truth[bad] if truth.ndim else truth}, "
        f"SE {se[bad] if se.ndim else se}"
    )


def mean_se(samples, axis=0):
    """Sample mean and its standard error std(ddof=1)/sqrt(T) along ``axis``."""
    samples = np.asarray(samples, dtype=float)
    T = samples.shape[axis]
    return samples.mean(axis=axis), samples.std(axis=axis, ddof=1) / np.sqrt(T)


def data(N, d, seed=0, *, sparsity=0.0):
    """A random design matrix (optionally with exact zeros) and a random target."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, d))
    if sparsity:
        A[rng.random((N, d)) < sparsity] = 0.0
    b = rng.standard_normal(N)
    return A, b


def worker_rows(p, i):
    """Row numbers (into the caller's A) that worker i of problem p holds."""
    if p.split == "identical":
        return np.arange(p.N)
    return p.order[p.offsets[i] : p.offsets[i + 1]]


# ------------------------------------------------------------------ problems
# Session-scoped: a Problem caches its constants and is never modified by the
# library (runs only read it), so sharing it across tests is safe and fast.
@pytest.fixture(scope="session")
def uneven_data():
    """23 rows, 7 columns: 4 workers get 6, 6, 6, 5 rows."""
    return data(23, 7, seed=11)


@pytest.fixture(scope="session")
def ridge_uneven(uneven_data):
    A, b = uneven_data
    return problems.ridge(A, b, n_workers=4, lam=0.1, split="iid", seed=3)


@pytest.fixture(scope="session")
def logistic_uneven(uneven_data):
    A, b = uneven_data
    return problems.logistic(A, (b > 0).astype(float), n_workers=4, lam=0.05, split="iid", seed=3)


@pytest.fixture(scope="session")
def het():
    """Heterogeneous ridge (sigma*^2 > 0, r ~ 3.6), small enough for thousands of iterations."""
    return problems.synthetic(4, 15, 8, heterogeneity=1.0, cond=5, seed=1)


@pytest.fixture(scope="session")
def het_small():
    """A smaller heterogeneous ridge (d = 4) on which IS-SAGA's loose theory step still converges quickly."""
    return problems.synthetic(4, 5, 4, heterogeneity=0.3, cond=2, seed=1)


@pytest.fixture(scope="session")
def interp():
    """Interpolating ridge (b = A x_true, grad f_i(x*) = 0), 5 workers of 40 rows, d = 10, kappa = 10."""
    return problems.synthetic(5, 40, 10, interpolating=True, cond=10, seed=2)


@pytest.fixture(scope="session")
def interp_het():
    """Interpolating ridge with uneven worker smoothness (heterogeneity = 0.7 in the row scales)."""
    return problems.synthetic(4, 6, 5, interpolating=True, heterogeneity=0.7, cond=5, seed=4)


# ------------------------------------------------------------------ chapters with an optional dependency
#: notebook -> (module it needs, environment variable that makes it required, install command)
OPTIONAL_NOTEBOOKS = {"11_ddp.ipynb": ("torch", "BLOCKCD_REQUIRE_TORCH", 'pip install -e ".[torch]"')}


def pytest_collection_modifyitems(config, items):
    """Skip, with the reason, the nbval cells of a chapter whose optional package is missing.

    The hook sees every collected item, the notebooks under book/ too.  With the
    environment variable set (``.ci/run`` sets ``BLOCKCD_REQUIRE_TORCH=1``) a
    missing package is an error instead.
    """
    for name, (module, required, install) in OPTIONAL_NOTEBOOKS.items():
        if importlib.util.find_spec(module) is not None:
            continue
        ours = [item for item in items if item.path.name == name]
        if ours and os.environ.get(required) == "1":
            raise pytest.UsageError(f"{name} needs {module}, which is not installed, and {required}=1 demands it")
        for item in ours:
            item.add_marker(pytest.mark.skip(reason=f"{name} needs {module}, which is not installed ({install})"))

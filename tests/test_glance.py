"""The reference table of every method (book/results.md) agrees with blockcd.theory.

The page writes every method's constant, step, floor, rate and K(m/n)/K(m) as closed
forms.  Each test evaluates the page's form and the library's function on the same
problem, so a change on either side that breaks the agreement fails here; the last
tests read the page's table itself (one row per method, the paper's theorem numbers).
"""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from blockcd import problems, registry
from blockcd import theory as T

PAGE = Path(__file__).resolve().parents[1] / "book" / "results.md"
M = 20


@pytest.fixture(scope="module")
def P():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((200, 40))
    b = A @ rng.standard_normal(40) + 0.3 * rng.standard_normal(200)
    return {
        "het": problems.synthetic(10, 50, 40, cond=10, heterogeneity=1.0, seed=0),
        "interp": problems.synthetic(10, 50, 40, cond=10, interpolating=True, seed=0),
        "shared": problems.ridge(A, b, n_workers=10, lam=0.1, split="shared"),
    }


def close(a, b):
    assert math.isclose(a, b, rel_tol=1e-12), (a, b)


@pytest.mark.parametrize("method", ["ibcd", "ibgd"])
def test_ibcd_and_ibgd_rows(P, method):
    p = P["het"]
    n, t = p.n, M // p.n
    w = M / t - 1
    Lt = p.L + w * p.L_max / n
    close(T.expected_smoothness(p, method, M, t), Lt)
    close(T.step_size(p, method, M, t), 1 / (2 * Lt))
    close(T.neighbourhood(p, method, M, t), 2 / (2 * Lt) * w * p.sigma_star2 / (n * p.mu))
    close(T.rate(p, method, M, t), 1 - p.mu / (2 * Lt))
    close(T.predicted_ratio(p, method, M, t), 1 + (1 - 1 / n) * p.r)
    # the paper's form of the constant, L_max (1 + 2 omega / n), is never below the book's
    close(T.paper_step(p, method, M, t), 1 / (2 * p.L_max * (1 + 2 * w / n)))
    assert T.paper_step(p, method, M, t) <= T.step_size(p, method, M, t)


@pytest.mark.parametrize("batch", [1, 5])
def test_is_sgd_row(P, batch):
    p = P["het"]
    n, t = p.n, M // p.n
    Ll = float(p.local_smoothness(batch).max())
    Lt = p.L + (M / t) * Ll / n
    close(T.expected_smoothness(p, "is-sgd", M, t, batch=batch), Lt)
    close(T.step_size(p, "is-sgd", M, t, batch=batch), 1 / (2 * Lt))
    s2 = ((M / t) * p.minibatch_variance_star(batch) - p.sigma_star2) / n
    close(T.neighbourhood(p, "is-sgd", M, t, batch=batch), 2 / (2 * Lt) * s2 / p.mu)
    ratio = (p.L + Ll) / (p.L + Ll / n)
    close(T.predicted_ratio(p, "is-sgd", M, t, batch=batch), ratio)
    assert ratio <= min(n, 1 + Ll / p.L)


def test_isega_row(P):
    p = P["het"]
    n, t = p.n, M // p.n
    Lt = p.L + 6 * (M / t - 1) * p.L_max / n
    close(T.expected_smoothness(p, "isega", M, t), Lt)
    close(T.step_size(p, "isega", M, t), 1 / Lt)
    close(T.rate(p, "isega", M, t), max(1 - p.mu / Lt, 1 - t / (2 * M)))
    close(T.predicted_ratio(p, "isega", M, t), 1 + 6 * (1 - 1 / n) * p.r)
    assert T.neighbourhood(p, "isega", M, t) == 0


@pytest.mark.parametrize("batch", [1, 5])
def test_is_saga_row(P, batch):
    p = P["het"]
    n, t = p.n, M // p.n
    Ll = float(p.local_smoothness(batch).max())
    Lt = p.L + (6 + 36 * (M / t - 1)) * Ll / n
    close(T.expected_smoothness(p, "is-saga", M, t, batch=batch), Lt)
    close(T.step_size(p, "is-saga", M, t, batch=batch), 1 / Lt)
    close(T.rate(p, "is-saga", M, t, batch=batch), max(1 - p.mu / Lt, 1 - batch / (2 * p.l_max), 1 - t / (2 * M)))
    close(T.predicted_ratio(p, "is-saga", M, t, batch=batch), (p.L + (36 * n - 30) * Ll / n) / (p.L + 6 * Ll / n))


@pytest.mark.parametrize("method, key", [("isaga-local", "interp"), ("isaga-shared", "shared")])
def test_isaga_rows(P, method, key):
    p = P[key]
    n, t = p.n, M // p.n
    q = t / M
    Ls = float(p.local_smoothness(1).max())
    Lt = Ls * (1 + 4 * M / (t * n))
    close(T.expected_smoothness(p, method, M, t), Lt)
    close(T.step_size(p, method, M, t), 1 / Lt)
    close(T.step_size(p, method, M, t), q / (Ls * (4 / n + q)))   # the paper's step, times tau/m
    table = 1 / (3 * p.l_max) if method == "isaga-local" else n / (3 * p.N)
    for tau in (t, M):
        qq = tau / M
        close(1 - T.rate(p, method, M, tau), qq * min(p.mu / (Ls * (4 / n + qq)), table))
    # at tau = m/n the paper's Corollaries 4 and 2
    close(1 - T.rate(p, method, M, t), min(p.mu / (5 * Ls), table / n))
    if method == "isaga-local":
        close(T.predicted_ratio(p, method, M, t), 5 * n / (n + 4))
        assert math.isinf(T.predicted_iterations(P["het"], method, M, t, 1e-4))   # needs interpolation
    else:
        assert T.neighbourhood(p, method, M, t) == 0
        kappa = (p.mu / (Ls * (4 / n + 1))) / (q * p.mu / (Ls * (4 / n + q)))
        assert min(kappa, n) - 1e-9 <= T.predicted_ratio(p, method, M, t) <= max(kappa, n) + 1e-9
        close(kappa, 5 * n / (n + 4))


def test_is_asgd_row(P):
    p = P["interp"]
    n, t = p.n, M // p.n
    rho = 1 + (M / t - 1) * p.rho0 / n
    close(T.rho(p, M, t), rho)
    close(T.step_size(p, "is-asgd", M, t), 1 / (rho * p.L))
    close(T.rate(p, "is-asgd", M, t), 1 - 1 / (rho * math.sqrt(p.kappa)))
    close(T.predicted_ratio(p, "is-asgd", M, t), 1 + (1 - 1 / n) * p.rho0)


def test_is_sgd_async_row(P):
    p = P["het"]
    n, t = p.n, M // p.n
    Lt = p.L_max * (1 + 2 * M / (t * n))
    close(T.expected_smoothness(p, "is-sgd-async", M, t), Lt)
    close(T.step_size(p, "is-sgd-async", M, t), 1 / (2 * Lt))
    close(T.paper_step(p, "is-sgd-async", M, t), 1 / (2 * Lt))
    ratio = T.expected_smoothness(p, "is-sgd-async", M, t) / T.expected_smoothness(p, "is-sgd-async", M, M)
    close(ratio, 3 * n / (n + 2))


PAPER = {"ibcd": "Theorem 1", "ibgd": "Theorem 4", "is-sgd": "Theorem 6", "isega": "Theorem 3",
         "isaga-local": "Theorem 5", "isaga-shared": "Theorem 2", "is-asgd": "Theorem 8", "is-saga": "none",
         "is-sgd-async": "Theorem 9", "cd": "none"}


def table_rows():
    text = PAGE.read_text()
    body = text[text.index(":name: tbl-glance"):]
    body = body[: body.index("\n```")]
    rows = re.split(r"\n\* - ", "\n" + body.split("\n", 3)[3].lstrip("\n"))[1:]
    return [[c.strip() for c in re.split(r"\n  - ", r)] for r in rows]


def test_the_table_has_one_row_per_method_with_ten_columns():
    rows = table_rows()
    header, rows = rows[0], rows[1:]
    assert len(header) == 10
    names = [re.search(r'`"([a-z-]+)"`', r[0]).group(1) for r in rows]
    assert sorted(names) == sorted(registry.METHODS)
    for name, row in zip(names, rows):
        assert len(row) == 10, name
        assert f"<{registry.REGISTRY[name].chapter}>`" in row[0], f"{name}: not linked to its chapter"
        assert PAPER[name] in row[8], f"{name}: the paper's theorem should be {PAPER[name]}: {row[8]!r}"
        assert "{prf:ref}" in row[9], f"{name}: the book's theorem is not linked"

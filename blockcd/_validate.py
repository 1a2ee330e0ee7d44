"""Argument checks shared by the public functions of :mod:`blockcd`.

Every public function validates its arguments here, at the boundary, so that
bad input fails with a message naming the parameter and the allowed range
instead of deep inside numpy.  Nothing in this module computes anything.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as an int, or raise if it is not an integer in ``[lo, hi]``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        lo_s = "-inf" if lo is None else str(lo)
        hi_s = "inf" if hi is None else str(hi)
        raise ValueError(f"{name} must be an integer in [{lo_s}, {hi_s}], got {value}")
    return value


def check_float(
    name: str,
    value: Any,
    *,
    positive: bool = False,
    nonnegative: bool = False,
    hi: float | None = None,
) -> float:
    """Return ``value`` as a finite float, optionally checking its sign."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if nonnegative and value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    if hi is not None and value > hi:
        raise ValueError(f"{name} must be <= {hi}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``; raise otherwise."""
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {choices}, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_seed(name: str, value: Any) -> int:
    """Seeds are non-negative integers (they key a counter-based generator)."""
    return check_int(name, value, 0, 2**63 - 1)


def check_real(name: str, value: Any) -> None:
    """Refuse complex input (an array, a sparse matrix, a list of complex numbers): converting it to float
    would keep the real part and drop the rest with only numpy's warning."""
    dtype = getattr(value, "dtype", None)
    if dtype is None and not isinstance(value, (str, bytes)) and value is not None:
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError):
            return
    if dtype is not None and np.dtype(dtype).kind == "c":
        raise TypeError(f"{name} holds complex numbers ({np.dtype(dtype)}); blockcd's problems are real: pass "
                        f"real data (for instance {name}.real, if the imaginary part is meant to be dropped)")


def check_matrix(name: str, A: Any) -> np.ndarray | sp.csr_matrix:
    """Return a 2-D float64 array or CSR matrix with finite entries (complex input is refused)."""
    check_real(name, A)
    if sp.issparse(A):
        A = sp.csr_matrix(A, dtype=np.float64)
        data = A.data
    else:
        if isinstance(A, (str, bytes)) or A is None:
            raise TypeError(f"{name} must be a 2-D array or scipy.sparse matrix, got {type(A).__name__}")
        try:
            A = np.asarray(A, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric 2-D array: {exc}") from None
        data = A
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows = samples, columns = features), got shape {A.shape}")
    if A.shape[0] < 1 or A.shape[1] < 1:
        raise ValueError(f"{name} must have at least one row and one column, got shape {A.shape}")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} contains NaN or inf; clean or impute the data first")
    return A


def check_vector(name: str, v: Any, length: int, length_name: str) -> np.ndarray:
    """Return a finite float64 vector of the given length (complex input is refused)."""
    if isinstance(v, (str, bytes)) or v is None:
        raise TypeError(f"{name} must be a 1-D numeric array, got {type(v).__name__}")
    check_real(name, v)
    try:
        v = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D numeric array: {exc}") from None
    if v.ndim == 2 and 1 in v.shape:
        v = v.ravel()
    if v.ndim != 1 or v.shape[0] != length:
        raise ValueError(f"{name} must have shape ({length},) to match {length_name}, got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or inf")
    return v


def check_rows(name: str, G: Any) -> tuple[np.ndarray, bool]:
    """``G`` as a finite float (n, d) array of one vector per worker, and whether the input was 1-D."""
    if isinstance(G, (str, bytes)) or G is None:
        raise TypeError(f"{name} must be a numeric array of shape (n, d), got {type(G).__name__}")
    check_real(name, G)
    try:
        G = np.asarray(G, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array of shape (n, d): {exc}") from None
    one_d = G.ndim == 1
    if one_d:
        G = G[None, :]
    if G.ndim != 2 or G.shape[0] < 1 or G.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n, d) with n, d >= 1, got {G.shape}")
    if not np.all(np.isfinite(G)):
        raise ValueError(f"{name} contains NaN or inf")
    return G, one_d


def printable(thing, limit: int = 80) -> str:
    """``thing`` as printable text of at most ``limit`` characters (what an error echoes from a file)."""
    text = "".join(c if c.isprintable() else "?" for c in str(thing))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def history_fields_wrong(meta: dict, arrays: dict) -> str | None:
    """What is wrong with the fields of a loaded history (``History.load``): the first field that is not of
    the type, range and length ``History.save`` writes, as text; None when every field is."""
    try:
        _history_fields(meta, arrays)
    except _Wrong as exc:
        return str(exc)
    return None


class _Wrong(Exception):
    pass


def _history_fields(meta: dict, arrays: dict) -> None:
    def bad(name, what):
        raise _Wrong(f"its field {name!r} must be {what}, got {printable(repr(meta.get(name, arrays.get(name))))}")

    for name in ("method", "sampling"):
        if not isinstance(meta[name], str) or not meta[name]:
            bad(name, "a non-empty string")
    for name in ("n", "d", "m", "tau"):
        if not _is_int(meta[name]) or meta[name] < 1:
            bad(name, "an integer >= 1")
    if meta["m"] > meta["d"]:
        bad("m", f"at most d = {meta['d']}")
    if meta["tau"] > meta["m"]:
        bad("tau", f"at most m = {meta['m']}")
    if not _is_int(meta["seed"]) or meta["seed"] < 0:
        bad("seed", "an integer >= 0")
    step = meta["step"]
    if not isinstance(step, (int, float)) or isinstance(step, bool) or not (math.isfinite(step) and step > 0):
        bad("step", "a finite number > 0")
    if meta["batch"] is not None and (not _is_int(meta["batch"]) or meta["batch"] < 1):
        bad("batch", "None or an integer >= 1")
    if meta.get("iters_asked") is not None and (not _is_int(meta["iters_asked"]) or meta["iters_asked"] < 0):
        bad("iters_asked", "None or an integer >= 0")
    if meta.get("version") is not None and not isinstance(meta["version"], str):
        bad("version", "None or a string")
    problem = meta.get("problem")
    if problem is not None and (not isinstance(problem, dict) or any(
            isinstance(v, (dict, list)) for v in problem.values())):
        bad("problem", "None or a dict of plain values")
    length = None
    for name, a in arrays.items():
        if a.dtype.kind not in "iuf":
            bad(name, f"an array of real numbers (dtype {a.dtype} read)")
        if a.ndim != 1:
            bad(name, f"a 1-D array (shape {a.shape} read)")
    length = arrays["dist2"].size
    if length < 1:
        bad("dist2", "a non-empty array")
    want = {"dist2": length, "gap": length, "blocks_up": length, "bytes_up": length, "bytes_down": length,
            "grad2": length, "nu2": length, "gap_avg": length, "steps": length - 1, "arrivals": length - 1,
            "delays": length - 1, "times": length - 1, "x": meta["d"], "x_avg": meta["d"],
            "bytes_up_workers": meta["n"]}
    for name, a in arrays.items():
        if a.size != want[name]:
            of = {"x": "d", "x_avg": "d", "bytes_up_workers": "n"}.get(name, "the iterations recorded")
            bad(name, f"of length {want[name]} ({of}), not {a.size}")
    for name in ("arrivals", "delays"):
        if name in arrays and arrays[name].dtype.kind not in "iu":
            bad(name, "an array of integers")


def listed(names) -> str:
    """'a', 'b' and 'c'."""
    names = [repr(x) for x in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

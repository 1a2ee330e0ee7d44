"""Real data sets as problems: scikit-learn's breast-cancer and digits sets, and LIBSVM files.

:func:`standardize` scales the columns; the readers import scikit-learn on use.  The reference
paper's four LIBSVM sets (a1a, mushrooms, phishing, w1a; its Appendix I) ship with the library,
bzip2-compressed, under ``blockcd/problems/data/`` with their provenance and credits
(``PROVENANCE.md`` there); :func:`load_libsvm` reads them by name (:data:`PAPER_DATASETS`),
with no network and no file outside the installed package.
"""

from __future__ import annotations

import bz2
import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validate import check_choice, check_int
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


@dataclass(frozen=True)
class PaperDataset:
    """One of the reference paper's LIBSVM data sets, as it ships with the library.

    Attributes
    ----------
    name : str
        The LIBSVM name ('a1a', 'mushrooms', 'phishing', 'w1a').
    n_rows : int
        N, the number of data points (the paper's Appendix I calls it n).
    n_features : int
        d, the number of features, as the paper states it (a1a's file never uses features 120-123,
        so a reader must be told d).
    labels : tuple of two floats
        The label values in the file; the first is mapped to -1, the second to +1.
    source : str
        Where the data come from, to credit them.
    """

    name: str
    n_rows: int
    n_features: int
    labels: tuple
    source: str

    @property
    def path(self) -> Path:
        """The bundled file (bzip2-compressed LIBSVM text) inside the installed package."""
        return _DATA_DIR / f"{self.name}.bz2"


_DATA_DIR = Path(__file__).resolve().parent / "data"

#: The reference paper's four LIBSVM sets, name -> :class:`PaperDataset`, with the sizes of its
#: Appendix I (d features, N rows): a1a 123 x 1605, mushrooms 112 x 8124, phishing 68 x 11055,
#: w1a 300 x 2477.  :func:`load_libsvm` reads them by name; credits in the package's PROVENANCE.md
#: and the book's bibliography.
PAPER_DATASETS = {
    "a1a": PaperDataset("a1a", 1605, 123, (-1.0, 1.0),
                        "UCI Adult, as prepared by Platt (1998) for the LIBSVM collection"),
    "mushrooms": PaperDataset("mushrooms", 8124, 112, (1.0, 2.0),
                              "UCI Mushroom (1987), one-hot, for the LIBSVM collection"),
    "phishing": PaperDataset("phishing", 11055, 68, (0.0, 1.0),
                             "UCI Phishing Websites (Mohammad, Thabtah, McCluskey 2015), for the LIBSVM collection"),
    "w1a": PaperDataset("w1a", 2477, 300, (-1.0, 1.0),
                        "web page categories, as prepared by Platt (1998) for the LIBSVM collection"),
}


def _opener(path: Path):
    """How to open ``path`` as bytes: bzip2 and gzip by their magic numbers, else as it is."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic[:3] == b"BZh":
        return bz2.open
    if magic[:2] == b"\x1f\x8b":
        return gzip.open
    return open


def _first_bad_line(path: Path, opener) -> str | None:
    """Where ``path`` stops being LIBSVM text: 'line k: expected ..., got ...' (for the error message);
    None if every line reads."""
    with opener(path, "rb") as fh:
        head = fh.read(4096)
        if head[:4] == b"PK\x03\x04":
            return ("it is a zip archive (a NumPy .npz file?), not LIBSVM text; load such arrays with "
                    "numpy.load and pass them to problems.logistic or problems.ridge")
        if b"\x00" in head:
            return "it is a binary file, not LIBSVM text (lines 'label index:value index:value ...')"
    with opener(path, "rb") as fh:
        for k, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                return f"line {k}: expected text ('label index:value ...'), got bytes that are not UTF-8"
            body = line.split("#", 1)[0].split()
            if not body:
                continue
            shown = line.strip()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            bad = None
            try:
                float(body[0])
            except ValueError:
                bad = f"a label (a number) first, got {body[0][:20]!r}"
            for tok in body[1:]:
                if bad:
                    break
                idx, sep, val = tok.partition(":")
                try:
                    ok = sep and (idx == "qid" or int(idx) >= 0) and np.isfinite(float(val))
                except ValueError:
                    ok = False
                if not ok:
                    bad = f"index:value pairs (an integer, ':', a number) after the label, got {tok[:20]!r}"
            if bad:
                return f"line {k}: expected {bad}, in {shown!r}"
    return None


def read_libsvm(source, *, n_features: int | None = None):
    """The rows and labels of a LIBSVM/svmlight file, or of one of :data:`PAPER_DATASETS` by name.

    Parameters
    ----------
    source : str or path-like
        A name of :data:`PAPER_DATASETS` ('a1a', 'mushrooms', 'phishing', 'w1a': the bundled copy,
        read from the installed package), or the path of a LIBSVM file (plain text, or bzip2 or
        gzip compressed).  A file that happens to be called 'a1a' is read as a file when passed as
        a ``pathlib.Path`` or with a directory ('./a1a').
    n_features : int >= 1 or None
        The number of features d (columns); None: the largest index in the file, or the paper's d
        for a bundled set.  A bundled set accepts only its own d.

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (N, d)
    y : ndarray, shape (N,)
        For a bundled set the labels mapped to -1 and +1 (``PaperDataset.labels``); for a file,
        the labels as written.

    Raises
    ------
    ValueError
        If the file is missing, binary (a .npz archive, say) or not LIBSVM text: the message names
        the file and the first line that is wrong, with what was expected there.
    """
    from sklearn.datasets import load_svmlight_file

    if n_features is not None:
        n_features = check_int("n_features", n_features, 1)
    if isinstance(source, str) and source in PAPER_DATASETS:
        info = PAPER_DATASETS[source]
        if n_features not in (None, info.n_features):
            raise ValueError(f"n_features must be {info.n_features} (or None) for the bundled {source}, "
                             f"got {n_features}")
        with bz2.open(info.path, "rb") as fh:
            X, y = load_svmlight_file(fh, n_features=info.n_features)
        if X.shape[0] != info.n_rows or not set(np.unique(y)) <= set(info.labels):
            raise ValueError(f"the bundled {source} has {X.shape[0]} rows and labels {np.unique(y)}; expected "
                             f"{info.n_rows} rows, labels {info.labels}: the installed package is damaged")
        return X.tocsr(), np.where(y == info.labels[1], 1.0, -1.0)
    if not isinstance(source, (str, Path)) and not hasattr(source, "__fspath__"):
        raise TypeError(f"path must be a path or one of {tuple(PAPER_DATASETS)}, got {type(source).__name__}")
    path = Path(source)
    if not path.is_file():
        names = ", ".join(PAPER_DATASETS)
        what = "a directory" if path.is_dir() else "no such file" if not path.exists() else "not a regular file"
        raise ValueError(f"path must be a LIBSVM file or one of the bundled sets ({names}); "
                         f"{str(path)!r} is neither: {what}")
    opener = _opener(path)
    try:
        with opener(path, "rb") as fh:
            X, y = load_svmlight_file(fh, n_features=n_features)
    except (ValueError, OSError, EOFError) as exc:
        where = _first_bad_line(path, opener)
        if where is None:  # every line reads, the whole does not (an n_features too small, say)
            raise ValueError(f"{str(path)!r}: {exc}") from None
        raise ValueError(f"{str(path)!r} is not a LIBSVM file: {where}") from None
    return X.tocsr(), y


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
    """A LIBSVM/svmlight file, or one of the paper's bundled sets by name, as a sparse problem.

    ``path`` is a name of :data:`PAPER_DATASETS` ('a1a', 'mushrooms', 'phishing', 'w1a', read from
    the installed package, labels mapped to -1 and +1, d as the paper states it) or a file's path;
    the reading and its errors are :func:`read_libsvm`'s (scikit-learn's ``load_svmlight_file``).
    The other arguments are :func:`logistic`'s or :func:`ridge`'s (``reg`` as in :func:`ridge`).

    Examples
    --------
    >>> from blockcd import problems
    >>> p = problems.load_libsvm("a1a", n_workers=4)
    >>> (p.N, p.d, p.n)
    (1605, 123, 4)
    """
    loss = check_choice("loss", loss, LOSSES)
    X, y = read_libsvm(path, n_features=n_features)
    build = logistic if loss == "logistic" else ridge
    name = path if isinstance(path, str) and path in PAPER_DATASETS else str(path)
    return build(X, y, n_workers=n_workers, lam=lam, split=split, seed=seed,
                 name=f"{name} ({loss})", reg=reg)

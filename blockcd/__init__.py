"""blockcd: independent block sparsification for distributed optimization.

The library behind the book "99% of distributed optimization is a waste of
time" (Mishchenko, Hanzely and Richtarik, arXiv:1901.09437): n workers each
send tau of the m blocks of their gradient, chosen independently and rescaled
by m/tau; with tau = m/n the iteration count barely changes.

Modules
-------
blocks    partition into blocks, tau-nice sampling, minibatches, :func:`sparsify`
problems  ridge and logistic problems split across workers, with their constants
oracle    what workers compute from their own rows (``problem.workers()``, ``problem.worker(i)``)
regularizers  R = w||x||_1 or w||x||_2 and their prox, for composite problems (``reg=``)
rules     the update rules of IBCD, IS-SGD, ISEGA, IS-SAGA, IS-ASGD, IBGD, each written once
registry  method names, aliases, rules and capabilities
methods   the vectorised simulator ``run`` (all workers as arrays)
reference the same rules run worker by worker, written to be read
history   ``History`` and the recorder every engine shares
asynchronous  asynchronous IS-SGD (``'is-sgd-async'``): the workers' speeds and the arrivals (chapter 12)
theory    omega, expected smoothness, step sizes, predicted iterations
experiments  seeded sweeps shared by the chapters and ``python -m blockcd reproduce``
compressors  top-k and shared rand-k compressors (chapter 3), and the dense methods as n grows (chapter 2)
comparison  ``compare_runs``: runs side by side, iterations and bytes to an accuracy, who wins
network   round-time model and link/model presets (chapter 9)
plotting  the book's figures: convergence curves, measured against predicted
styles    one colour and marker per method, the book's matplotlib defaults
diagrams  pictures of the ideas: the block choices, a round's timeline and messages
report    how a chapter prints a check: ``agree``, ``below``, ``table``
widgets   the book's interactive explorers (``widgets.show(name)``)
mpi       the same methods on MPI (``mpiexec -n K python -m blockcd.mpi``)
torch     DDP communication hook (optional, ``pip install -e ".[torch]"``; chapter 11)

Quick start::

    import blockcd
    p = blockcd.problems.synthetic(10, 50, 40, interpolating=True, cond=20)
    h = blockcd.run(p, "ibcd", m=40, tau=4, iters=500)
    h.iters_to(1e-6)
"""

from . import blocks, problems, reference, registry, regularizers, rules, theory
from .blocks import partition, sparsify
from .history import DivergenceError, History
from .methods import run
from .registry import METHODS

__all__ = [
    "METHODS",
    "DivergenceError",
    "History",
    "blocks",
    "partition",
    "problems",
    "reference",
    "registry",
    "regularizers",
    "requirement",
    "rules",
    "run",
    "sparsify",
    "theory",
]
#: the package version, the single source of ``pyproject.toml``'s (``[tool.setuptools.dynamic]``), the
#: book's footer and title page, ``python -m blockcd --version``, ``reproduce``'s CSVs and CHANGELOG.md
__version__ = "0.4.0"


def _repository_url() -> str:
    """The ``Repository`` entry of ``pyproject.toml``'s ``[project.urls]``, the one place it is written.

    In a clone (an editable install, or ``PYTHONPATH``) the file beside the package is read, so an
    install made before the address changed cannot give a stale one; an installed wheel (as on
    Colab) carries it in its metadata (``Project-URL``).
    """
    import importlib.metadata
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # Python 3.10: the installed metadata only
        tomllib = None
    if tomllib is not None and pyproject.is_file():
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == "blockcd" and "Repository" in project.get("urls", {}):
            return project["urls"]["Repository"]
    try:
        for entry in importlib.metadata.metadata("blockcd").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip() == "Repository":
                return url.strip()
    except importlib.metadata.PackageNotFoundError:
        pass
    raise ImportError("blockcd's repository address (pyproject.toml, [project.urls] Repository) is in "
                      "neither pyproject.toml nor the installed metadata; reinstall: python -m pip install -e .")


#: the repository the book and the library are published from, read from ``pyproject.toml``'s
#: ``[project.urls]`` (its one written place; tests/test_repository.py checks that no other file
#: holds it but the checked copies); the book's repository and launch buttons take it from here
#: (book/_ext/repository_address.py), the chapters' first cells install :func:`requirement`'s line
__url__ = _repository_url()


def requirement(*extras: str) -> str:
    """The pip requirement that installs this library from its repository, with ``extras``.

    ``requirement("mpi")`` is ``f"blockcd[mpi] @ git+{blockcd.__url__}"``, the line a chapter's
    first cell installs where ``blockcd`` is missing (on Colab, which opens the chapter from the
    repository and cannot import the address before installing: the cell holds it as text).  The extras are
    those of ``pyproject.toml``: ``"mpi"`` (mpi4py and the MPICH wheel, whose ``mpiexec`` pip puts
    on the PATH, so chapter 10 needs nothing from apt), ``"torch"`` (chapter 11) and
    ``"widgets"`` (ipywidgets, for the explorers of :mod:`blockcd.widgets`).
    """
    for e in extras:
        if e not in EXTRAS:
            raise ValueError(f"extras must be among {EXTRAS}, got {e!r}")
    name = f"blockcd[{','.join(extras)}]" if extras else "blockcd"
    return f"{name} @ git+{__url__}"


#: the optional extras of ``pyproject.toml``; the library alone (``pip install -e .``) needs
#: numpy, scipy, matplotlib, scikit-learn and tqdm only
EXTRAS = ("mpi", "torch", "widgets")
#: the modules that need an extra: module -> (the package it needs, the extra that installs it)
#: (blockcd.mpi imports without mpi4py: only its ranks need it, and say so)
_NEEDS = {"widgets": ("ipywidgets", "widgets"), "torch": ("torch", "torch")}

# the other public modules (some heavier: matplotlib, ipywidgets, mpi4py, torch) load on first
# use (PEP 562): ``blockcd.widgets.show(...)`` works after a plain ``import blockcd``, which stays
# fast; tests/test_optional.py checks that every public submodule is reachable so
_LAZY = ("asynchronous", "comparison", "compressors", "diagrams", "experiments", "mpi", "network", "plotting",
         "report", "reproduce", "styles", "topk", "torch", "widgets")


def __getattr__(name: str):
    if name in _LAZY:
        import importlib.util

        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ImportError as exc:
            package, extra = _NEEDS.get(name, (None, None))
            if package is None or importlib.util.find_spec(package) is not None:
                raise
            raise ImportError(f"blockcd.{name} needs {package}, which the library alone does not install: from a "
                              f"clone, pip install -e \".[{extra}]\" (or pip install {package})", name=package) from exc
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

"""``import blockcd`` loads none of the optional or heavy packages: they load when their module is used."""

from __future__ import annotations

import subprocess
import sys


def test_import_blockcd_does_not_import_torch_or_mpi():
    code = "import sys, blockcd; print(sorted(m for m in ('torch', 'mpi4py') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_every_public_submodule_is_an_attribute_after_import_blockcd():
    """Walk the package for its public submodules (no leading underscore, not ``__main__``) and reach
    each as ``blockcd.NAME`` in a fresh interpreter after a plain ``import blockcd``; the lazy ones
    are not imported before they are asked for."""
    import pkgutil

    import blockcd

    names = sorted(m.name for m in pkgutil.iter_modules(blockcd.__path__) if not m.name.startswith("_"))
    assert {"asynchronous", "report", "plotting", "comparison", "compressors", "history"} <= set(names)
    code = (
        "import importlib.util, sys, blockcd\n"
        f"names = {names!r}\n"
        "loaded = [n for n in names if 'blockcd.' + n in sys.modules]\n"
        "missing = []\n"
        "for n in names:\n"
        "    if n == 'torch' and importlib.util.find_spec('torch') is None:\n"
        "        continue  # blockcd.torch needs the [torch] extra\n"
        "    try:\n"
        "        mod = getattr(blockcd, n)\n"
        "    except AttributeError as e:\n"
        "        missing.append((n, str(e)))\n"
        "        continue\n"
        "    assert mod is sys.modules['blockcd.' + n], n\n"
        "    assert n in dir(blockcd), n\n"
        "print(missing)\n"
        "print(sorted(set(names) - set(loaded)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    missing, lazy = out.stdout.strip().splitlines()
    assert missing == "[]", missing
    # the heavy ones are lazy: a plain import does not load them
    for heavy in ("plotting", "widgets", "mpi", "torch", "comparison"):
        if heavy in names:
            assert heavy in lazy, f"import blockcd loaded blockcd.{heavy}"


def test_the_library_alone_needs_five_packages_and_the_extras_are_the_librarys():
    """``pip install -e .`` pulls numpy, scipy, matplotlib, scikit-learn and tqdm only; ipywidgets, mpi4py and
    torch come with the extras that ``blockcd.requirement`` knows."""
    import re
    from pathlib import Path

    tomllib = __import__("tomllib") if sys.version_info >= (3, 11) else None
    if tomllib is None:
        import pytest

        pytest.skip("tomllib needs Python 3.11")
    import blockcd

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    names = [re.match(r"[A-Za-z0-9_.-]+", dep).group(0).lower() for dep in project["dependencies"]]
    assert names == ["numpy", "scipy", "matplotlib", "scikit-learn", "tqdm"]
    extras = project["optional-dependencies"]
    assert sorted(extras) == sorted(blockcd.EXTRAS)
    assert any(dep.startswith("ipywidgets") for dep in extras["widgets"])


def test_without_ipywidgets_blockcd_imports_and_widgets_name_the_extra():
    """ipywidgets hidden (``sys.modules['ipywidgets'] = None`` makes its import fail, as when it is not
    installed): ``import blockcd``, a run and a figure work; ``blockcd.widgets`` raises an ImportError
    that names the [widgets] extra."""
    code = (
        "import sys; sys.modules['ipywidgets'] = None\n"
        "import importlib.util; importlib.util.find_spec = (lambda f: lambda name, *a: None if name == 'ipywidgets'"
        " else f(name, *a))(importlib.util.find_spec)\n"
        "import matplotlib; matplotlib.use('Agg')\n"
        "import blockcd\n"
        "p = blockcd.problems.synthetic(2, 5, 4, seed=0)\n"
        "h = blockcd.run(p, 'ibcd', m=4, tau=2, iters=3)\n"
        "blockcd.plotting.convergence([h])\n"
        "try:\n"
        "    blockcd.widgets\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "ImportError: blockcd.widgets needs ipywidgets" in out.stdout, out.stdout
    assert 'pip install -e ".[widgets]"' in out.stdout, out.stdout

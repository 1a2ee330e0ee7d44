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

"""``import blockcd`` loads none of the optional or heavy packages: they load when their module is used."""

from __future__ import annotations

import subprocess
import sys


def test_import_blockcd_does_not_import_torch_or_mpi():
    code = "import sys, blockcd; print(sorted(m for m in ('torch', 'mpi4py') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout

"""nbval over the chapters: a chapter whose optional dependency is missing is skipped, with the reason.

``book/11_ddp.ipynb`` needs torch (``pip install blockcd[torch]``).  Without it
its cells are skipped, except when ``BLOCKCD_REQUIRE_TORCH=1`` (set by
``.ci/run``), where the missing package is an error.
"""

import importlib.util
import os

import pytest

OPTIONAL = {"11_ddp.ipynb": ("torch", "BLOCKCD_REQUIRE_TORCH", "pip install blockcd[torch]")}


def pytest_collection_modifyitems(config, items):
    for name, (module, required, install) in OPTIONAL.items():
        if importlib.util.find_spec(module) is not None:
            continue
        ours = [item for item in items if item.path.name == name]
        if ours and os.environ.get(required) == "1":
            raise pytest.UsageError(f"{name} needs {module}, which is not installed, and {required}=1 demands it")
        for item in ours:
            item.add_marker(pytest.mark.skip(reason=f"{name} needs {module}, which is not installed ({install})"))

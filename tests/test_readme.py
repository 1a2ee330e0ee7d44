"""The README's section "Using the library": every Python block runs as it stands, in order, in a fresh
directory, and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

import blockcd

ROOT = Path(__file__).resolve().parents[1]


def section_blocks(title: str = "Using the library") -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    body = text[start:] if end < 0 else text[start:end]
    return re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL)


def test_the_section_has_short_blocks():
    blocks = section_blocks()
    assert len(blocks) >= 6
    assert all(len(b.splitlines()) <= 15 for b in blocks), [len(b.splitlines()) for b in blocks]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Run every block in one namespace (they build on each other, as a reader's session would)."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    from blockcd import registry

    here = os.getcwd()
    # the README registers methods of its own: the registry is put back as it was afterwards
    registered, aliases = dict(registry.REGISTRY), dict(registry.ALIASES)
    os.chdir(tmp_path_factory.mktemp("readme"))
    namespace: dict = {}
    printed = []
    try:
        for i, block in enumerate(section_blocks()):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(block, f"README block {i + 1}", "exec"), namespace)  # noqa: S102
            printed.append(buf.getvalue())
        files = sorted(p.name for p in Path().iterdir())
    finally:
        os.chdir(here)
        registry.REGISTRY.clear(), registry.REGISTRY.update(registered)
        registry.ALIASES.clear(), registry.ALIASES.update(aliases)
        import matplotlib.pyplot as plt

        plt.close("all")
    return printed, namespace, files


def test_every_block_runs_and_prints_what_its_comments_say(outputs):
    printed, ns, files = outputs
    first = printed[0].splitlines()
    assert first[0] == "189 499"                                   # the comment of block 1
    r, ratio = map(float, first[1].split())
    assert r == 1.83 and f"{ratio:.4g}" == "2.649"                 # r = L_max/L and the m/n rule
    assert ratio == pytest.approx(499 / 189, rel=0.15)             # the measured ratio, within the book's 15%
    assert "IBCD, τ = 4" == printed[3].splitlines()[-1]          # who sends the fewest bytes
    assert printed[4].startswith("True ")                          # a saved history loads equal
    assert printed[5].strip() == "True True"
    own = next(p for p in printed if p.startswith("topk-ef ")).splitlines()  # a rule choosing its blocks:
    assert own[0] == "topk-ef 74 2.0"                              # exactly tau = 2 blocks per round,
    assert own[1] == "[2810. 2818. 2858. 2818.] True"              # counted, as in the reference
    assert {"runs.png", "out", "data.npz"} <= set(files)
    assert ns["sparse"].problem["name"] == ns["p"].name
    added = printed[8].splitlines()                                # the section "Adding a method"
    assert added == ["984 True", "0.99513", "'ibcd-plain' has no theory row for smoothness and step_factor"]
    assert "ibcd-unscaled" not in blockcd.registry.names() and "ibcd-plain" not in blockcd.registry.names()

"""The repository address: written once, in ``pyproject.toml``'s ``[project.urls]``.

``blockcd.__url__`` reads it, and the book's repository and launch buttons take it from there
(``book/_ext/repository_address.py``).  A chapter opened on Colab has no ``blockcd`` to import
(and no way to learn where it was opened from), so its first cell carries the pip requirement as
text; the README and the introduction show the clone command.  These tests name every copy that
disagrees with the library's, and every other file that writes the address.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

import blockcd

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
# what each chapter's install must bring: chapter 10 runs mpiexec, chapter 11 trains with torch,
# a chapter with an explorer (blockcd.widgets) needs ipywidgets, the [widgets] extra
EXTRAS = {"11_ddp": ("torch",)}


def extras(path: Path) -> tuple:
    if path.stem in EXTRAS:
        return EXTRAS[path.stem]
    nb = json.loads(path.read_text())
    later = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    later = later[len(first_code_cell(path)):]
    return ("mpi", "widgets") if re.search(r"\bwidgets\b", later) else ("mpi",)


def first_code_cell(path: Path) -> str:
    nb = json.loads(path.read_text())
    return next("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_requirement():
    assert blockcd.requirement() == f"blockcd @ git+{blockcd.__url__}"
    assert blockcd.requirement("mpi", "torch") == f"blockcd[mpi,torch] @ git+{blockcd.__url__}"
    assert blockcd.requirement("mpi", "widgets") == f"blockcd[mpi,widgets] @ git+{blockcd.__url__}"
    with pytest.raises(ValueError, match="extras"):
        blockcd.requirement("gpu")


def test_the_library_reads_the_address_from_pyproject():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads TOML")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert blockcd.__url__ == project["urls"]["Repository"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", blockcd.__url__), blockcd.__url__


#: the files that may hold a copy of the address besides pyproject.toml, checked below: what a
#: reader copies (the README's and the introduction's clone command, the introduction's BibTeX
#: entry and errata link), what Colab runs (the chapters' first cells), and CITATION.cff, which
#: citation tools read as it stands (tests/test_course_kit.py checks the last two)
COPIES = {"README.md", "book/intro.md", "CITATION.cff"} | {str(p.relative_to(ROOT)) for p in NOTEBOOKS}


def test_the_address_is_written_once():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    if not files:
        pytest.skip("not a git checkout")
    holders = {}
    for name in files:
        path = ROOT / name
        if path.is_file() and path.suffix not in (".png", ".bz2", ".npz", ".pdf"):
            n = path.read_text(encoding="utf-8", errors="replace").count(blockcd.__url__)
            if n:
                holders[name] = n
    assert holders.get("pyproject.toml") == 1, holders
    others = sorted(set(holders) - COPIES - {"pyproject.toml"})
    assert not others, f"the repository address is written in {others}: read blockcd.__url__ instead"
    # _config.yml in particular: book/_ext/repository_address.py gives the address to the buttons
    assert "_config.yml" not in holders
    assert not re.search(r"^\s*url:", (ROOT / "_config.yml").read_text(), flags=re.MULTILINE)
    for nb in NOTEBOOKS:
        # in a chapter, only its first cell (the install) holds the address
        assert holders.get(str(nb.relative_to(ROOT)), 0) == first_code_cell(nb).count(blockcd.__url__), nb.name


def test_readme_names_the_library_repository():
    urls = re.findall(r"https://github\.com/\S+?(?=[\s.,;)]*(?:\s|$))", (ROOT / "README.md").read_text())
    assert urls and set(urls) == {blockcd.__url__}


def test_intro_clones_the_library_repository():
    clones = re.findall(r"git clone (\S+)", (ROOT / "book" / "intro.md").read_text())
    assert clones == [blockcd.__url__]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_first_cell_installs_the_library_with_its_extras(path):
    cell = first_code_cell(path)
    assert "import blockcd" in cell
    wanted = blockcd.requirement(*extras(path))
    found = re.findall(r'"(blockcd[^"]* @ git\+[^"]+)"', cell)
    assert found == [wanted], f"{path.name}: the first cell installs {found}, the library says {wanted!r}"


def test_every_chapter_is_covered():
    # chapter 10 is the one that needs the MPI extra; the test above must see it
    assert "10_mpi" in [p.stem for p in NOTEBOOKS] and len(NOTEBOOKS) >= 12


def test_no_control_characters_in_the_sources():
    # LaTeX written through a non-raw string turns \frac into a form feed and \vartheta into a
    # vertical tab; the API reference then renders garbage.  Tabs and newlines are allowed.
    bad = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
    hits = []
    for path in sorted((ROOT / "blockcd").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py")):
        for lineno, line in enumerate(path.read_text().splitlines(keepends=True), 1):
            if bad.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{lineno}")
    assert not hits, "control characters (a non-raw docstring?) at " + ", ".join(hits)


def test_landing_pages_central_picture_is_chapter_1s_figure():
    # book/images/central_picture.png is a copy of Fig. 1.2 as chapter 1 stores it (the introduction
    # is Markdown and cannot run the cell); re-executing chapter 1 with another picture fails here.
    # Refresh: write the image/png output of the cell named fig-selection-template to that file.
    import base64

    cells = json.loads((ROOT / "book" / "01_template.ipynb").read_text())["cells"]
    named = [c for c in cells if c["metadata"].get("mystnb", {}).get("figure", {}).get("name")
             == "fig-selection-template"]
    assert len(named) == 1
    png = [o["data"]["image/png"] for o in named[0]["outputs"] if "image/png" in o.get("data", {})]
    assert len(png) == 1
    assert (ROOT / "book" / "images" / "central_picture.png").read_bytes() == base64.b64decode(png[0])
    assert "images/central_picture.png" in (ROOT / "book" / "intro.md").read_text()


def test_the_torch_install_line_gets_the_cpu_build_anywhere():
    """On Linux, PyPI's torch==2.13.0 is the CUDA build (several GB): the README installs the CPU build from
    PyTorch's own index first, at the version pyproject pins, and pyproject no longer says the pin avoids CUDA."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    pin = re.search(r'torch = \["torch==([0-9.]+)"\]', pyproject).group(1)
    line = f"python -m pip install torch=={pin} --index-url https://download.pytorch.org/whl/cpu"
    assert line in readme
    assert readme.index(line) < readme.index('python -m pip install -e ".[torch]"')
    assert "a range lets pip pick a multi-GB CUDA build" not in pyproject
    assert "pinned to the CPU build" not in readme

"""Make the built HTML work offline and load without script errors.

1. Serve MathJax from the book itself.  Sphinx loads MathJax 3 from a CDN by
   default; a reader of a downloaded copy, or a test run without network, then
   sees raw TeX.  The MathJax 3 distribution shipped by the
   ``django-static-mathjax`` wheel (static files only, no Django needed) is
   copied into ``_static/es5`` and ``mathjax_path`` points at it.
   The same for the widget manager and require.js, which myst-nb loads from two CDNs on every
   page with a widget (its ``nb_ipywidgets_js``): the npm registry's tarballs of
   ``@jupyter-widgets/html-manager`` (the version myst-nb loads) and ``requirejs`` (pinned below
   with their SHA-256) are fetched with ``npm pack`` into a cache once, checked, and unpacked
   into ``_static/vendor``; ``nb_ipywidgets_js`` points at them, with ``widgets-offline.js``
   (beside this file) between the two.  That script fixes two faults the manager has on any
   site, served from a CDN or not: it loads its fonts from ``<page folder>/@jupyter-widgets/...``
   (require.js derives a module's address from its name), and its labels call MathJax 2's
   ``MathJax.Hub.Queue``, absent from the MathJax 3 the book loads.  Without ``npm`` (Debian:
   nodejs, npm) and an empty cache the build fails and says so.
2. Drop duplicate inline scripts.  sphinx-thebe adds its configuration
   script (``const THEBE_JS_URL = ...``) twice under Jupyter Book, which
   raises "Identifier 'THEBE_JS_URL' has already been declared" on every page.
3. Show the committed outputs of chapters whose optional dependency is missing.
   The DDP chapter needs torch (from a clone, ``pip install -e ".[torch]"``); on a machine
   without it the chapter is not executed and its stored outputs, made by CI
   with torch installed, are shown instead.
"""

import hashlib
import importlib.util
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _use_local_mathjax(app):
    import mathjax  # the django-static-mathjax distribution

    root = Path(mathjax.__file__).parent / "static" / "mathjax"
    if not (root / "es5" / "tex-chtml.js").exists():
        raise RuntimeError(f"MathJax files not found under {root}; reinstall django-static-mathjax")
    app.config.html_static_path.append(str(root))
    app.config.mathjax_path = "es5/tex-chtml.js"


#: npm tarballs served from ``_static/vendor/<folder>``: spec -> (SHA-256 of the tarball, folder,
#: what is kept: one file of the tarball, or a folder ending in "/"; source maps left out).
#: html-manager 1.0.6 is the version myst-nb 1.x loads from its CDN (ipywidgets 8's protocol 2.0.0)
NPM = {
    "@jupyter-widgets/html-manager@1.0.6": (
        "6c198ceb99ba7e7526990a1de16e8147ad7d3a714e3fb06741183623c04b5f6e", "html-manager", "package/dist/"),
    "requirejs@2.3.4": (
        "583693b373f6ab0528ea6644fab5cdb5822011c9b5b1ff1615590d5f2f473dcd", "requirejs", "package/require.js"),
}
#: where the tarballs are kept between builds (BLOCKCD_NPM_CACHE overrides it)
NPM_CACHE = Path(os.environ.get("BLOCKCD_NPM_CACHE")
                 or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "blockcd-book" / "npm")


def _npm_tarball(spec: str, sha256: str) -> Path:
    """The tarball of ``spec`` in the cache, fetched with ``npm pack`` when missing, its SHA-256 checked."""
    path = NPM_CACHE / (spec.lstrip("@").replace("/", "-").replace("@", "-") + ".tgz")
    if not path.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(f"npm is needed once to fetch {spec} for the offline HTML "
                               f"(Debian: apt-get install npm), or put its tarball in {NPM_CACHE}")
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        # --prefer-offline: npm's own cache first, the registry only for what it lacks
        subprocess.run([npm, "pack", spec, "--pack-destination", str(NPM_CACHE), "--prefer-offline", "--silent"],
                       check=True, stdout=subprocess.DEVNULL)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        path.unlink()
        raise RuntimeError(f"{spec}: the tarball's SHA-256 is {digest}, expected {sha256}; removed, build again")
    return path


def _unpack(spec: str, sha256: str, keep: str, target: Path) -> None:
    """Unpack what ``keep`` names from the tarball into ``target`` (once per tarball: a stamp names it)."""
    stamp = target / ".sha256"
    if stamp.exists() and stamp.read_text() == sha256:
        return
    shutil.rmtree(target, ignore_errors=True)
    base = keep if keep.endswith("/") else str(Path(keep).parent) + "/"
    with tarfile.open(_npm_tarball(spec, sha256)) as tar:
        for m in tar.getmembers():
            if not m.isfile() or m.name.endswith(".map") or not (m.name == keep or keep.endswith("/")
                                                                   and m.name.startswith(keep)):
                continue
            out = target / m.name[len(base):]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(tar.extractfile(m).read())
    stamp.write_text(sha256)


def _use_local_widget_manager(app):
    if app.builder.format != "html":
        return
    static = Path(app.outdir).parent / "offline_static"
    for spec, (sha256, folder, keep) in NPM.items():
        _unpack(spec, sha256, keep, static / "vendor" / folder)
    shutil.copy2(HERE / "widgets-offline.js", static / "widgets-offline.js")
    app.config.html_static_path.append(str(static))
    # relative to _static; loaded in this order after the page's widget state
    app.config.nb_ipywidgets_js = {"vendor/requirejs/require.js": {}, "widgets-offline.js": {},
                                   "vendor/html-manager/embed-amd.js": {}}


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        # inline scripts come with filename None or '' depending on who added them
        key = (getattr(js, "filename", js) or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


#: notebooks that need an optional package, by the package they need
OPTIONAL = {"torch": ["book/11_ddp.ipynb"]}


def _exclude_when_missing(app, config):
    missing = [nb for module, nbs in OPTIONAL.items() if importlib.util.find_spec(module) is None for nb in nbs]
    if missing:
        config.nb_execution_excludepatterns = list(config.nb_execution_excludepatterns or []) + missing


def setup(app):
    app.connect("config-inited", _exclude_when_missing)
    app.connect("builder-inited", _use_local_mathjax)
    # before myst-nb reads its configuration (builder-inited, priority 500)
    app.connect("builder-inited", _use_local_widget_manager, priority=100)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

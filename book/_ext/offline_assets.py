"""Make the built HTML work offline and load without script errors.

1. Serve MathJax from the book itself.  Sphinx loads MathJax 3 from a CDN by
   default; a reader of a downloaded copy, or a test run without network, then
   sees raw TeX.  The MathJax 3 distribution shipped by the
   ``django-static-mathjax`` wheel (static files only, no Django needed) is
   copied into ``_static/es5`` and ``mathjax_path`` points at it.
2. Drop duplicate inline scripts.  sphinx-thebe adds its configuration
   script (``const THEBE_JS_URL = ...``) twice under Jupyter Book, which
   raises "Identifier 'THEBE_JS_URL' has already been declared" on every page.
3. Show the committed outputs of chapters whose optional dependency is missing.
   The DDP chapter needs torch (from a clone, ``pip install -e ".[torch]"``); on a machine
   without it the chapter is not executed and its stored outputs, made by CI
   with torch installed, are shown instead.
"""

import importlib.util
from pathlib import Path


def _use_local_mathjax(app):
    import mathjax  # the django-static-mathjax distribution

    root = Path(mathjax.__file__).parent / "static" / "mathjax"
    if not (root / "es5" / "tex-chtml.js").exists():
        raise RuntimeError(f"MathJax files not found under {root}; reinstall django-static-mathjax")
    app.config.html_static_path.append(str(root))
    app.config.mathjax_path = "es5/tex-chtml.js"


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
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

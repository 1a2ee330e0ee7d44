"""Serve MathJax from the book itself, so the HTML typesets math offline.

Sphinx loads MathJax 3 from a CDN by default; a reader of a downloaded copy,
or a test run without network, then sees raw TeX.  This extension copies the
MathJax 3 distribution shipped by the ``django-static-mathjax`` wheel (static
files only, no Django needed) into ``_static/es5`` and points ``mathjax_path``
at it.
"""

from pathlib import Path


def _use_local_mathjax(app):
    import mathjax  # the django-static-mathjax distribution

    root = Path(mathjax.__file__).parent / "static" / "mathjax"
    if not (root / "es5" / "tex-chtml.js").exists():
        raise RuntimeError(f"MathJax files not found under {root}; reinstall django-static-mathjax")
    app.config.html_static_path.append(str(root))
    app.config.mathjax_path = "es5/tex-chtml.js"


def setup(app):
    app.connect("builder-inited", _use_local_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

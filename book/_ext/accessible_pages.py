"""What the HTML pages need beyond the theme for readers who use a screen reader or the keyboard.

axe-core (``tests/test_html.py`` runs it on every page) finds these, and this extension mends them:

1. **A text alternative for every figure.**  myst-nb gives a notebook's figure the file name of its
   PNG as ``alt``.  Each image gets the first sentence of its figure's caption instead (the whole
   caption is read right after it); an image outside a figure gets a short description of where it
   comes from.  The kernel-free players (matplotlib's ``to_jshtml``: an ``<img>`` that shows one
   frame and a range slider that picks it) get the same alternative, and their slider a name.
2. **Names the theme leaves out or contradicts.**  The sidebar's disclosure triangles (``<summary>``
   holding only an icon) are named after the chapter they open; the "Show code cell source" toggles
   and the search buttons are named by their visible text instead of a different ``aria-label``;
   the colour-mode button's three icons are hidden from the accessibility tree (its name, "Color
   mode", stays).
3. **The bibliography as a list.**  sphinxcontrib-bibtex marks its list ``role="list"`` and its
   entries with the deprecated ``doc-biblioentry``, which a list may not hold: entries become list
   items.

Colours with too little contrast are mended in ``_static/reading.css``.  Items 2 and 3 are theme
markup, written out by templates: they are rewritten in the written HTML files at the end of the
build (HTML builders only).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes

#: a figure's alternative: at most this many characters of its caption's first sentence
ALT_MAX = 250


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    out = m.group(1) if m else text
    return out if len(out) <= ALT_MAX else out[: ALT_MAX - 1].rsplit(" ", 1)[0] + "…"


def _caption(figure) -> str:
    for cap in figure.findall(nodes.caption):
        return _first_sentence(cap.astext())
    return ""


_ANIM_IMG = re.compile(r'<img(?![^>]*\balt=)([^>]*\bid="_anim_img)')
_ANIM_SLIDER = re.compile(r'<input(?![^>]*\baria-label=)([^>]*\bclass="anim-slider")')


def _alternatives(app, doctree, docname):
    """Alt text for every image of a page, from its figure's caption."""
    if app.builder.format != "html":
        return
    for image in doctree.findall(nodes.image):
        alt = image.get("alt", "")
        if alt and alt != image.get("uri") and not alt.endswith((".png", ".svg", ".jpg", ".gif")):
            continue
        figure = next((a for a in _ancestors(image) if isinstance(a, nodes.figure)), None)
        image["alt"] = (_caption(figure) if figure is not None else "") or \
            "A figure drawn by the code cell above."
    for raw in doctree.findall(nodes.raw):
        text = raw.astext()
        if "_anim_img" not in text and "anim-slider" not in text:
            continue
        figure = next((a for a in _ancestors(raw) if isinstance(a, nodes.figure)), None)
        what = ((_caption(figure) if figure is not None else "")
                or "An animated figure drawn by the code cell above.")
        text = _ANIM_IMG.sub(lambda m: f'<img alt="{html.escape(what)}"{m.group(1)}', text)
        text = _ANIM_SLIDER.sub(r'<input aria-label="frame of the animation"\1', text)
        raw.children = [nodes.Text(text)]
        raw.rawsource = text


def _ancestors(node):
    while node.parent is not None:
        node = node.parent
        yield node


#: theme markup mended in every written page: (pattern, replacement)
_SIDEBAR_SUMMARY = re.compile(r'(<a class="[^"]*reference internal[^"]*" href="[^"]*">)((?:(?!</a>).)*?)'
                              r'(</a>\s*<details[^>]*>\s*)<summary>', re.S)
_PAGE_FIXES = [
    # the "Show code cell source" toggle: its name is its visible text
    (re.compile(r'<summary aria-label="Toggle hidden content">'), "<summary>"),
    # the search buttons: "Search" (and the shortcut) is what they show
    (re.compile(r'(<button class="btn [^"]*search-button[^"]*"[^>]*?) aria-label="Search"'), r"\1"),
    # the colour-mode button: its three icons carry titles that are not its name
    (re.compile(r'(<i class="theme-switch [^"]*"[^>]*?) title="[^"]*"'), r'\1 aria-hidden="true"'),
    # the bibliography: list items in a list
    (re.compile(r'(<div class="citation" id="[^"]*") role="doc-biblioentry"'), r'\1 role="listitem"'),
    (re.compile(r'<a role="doc-backlink" '), "<a "),
]


def _name_sidebar_toggle(m) -> str:
    title = re.sub(r"<[^>]+>", "", m.group(2)).strip()
    label = html.escape(f"sections of {html.unescape(title)}", quote=True)
    return f'{m.group(1)}{m.group(2)}{m.group(3)}<summary aria-label="{label}">'


def _mend_pages(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = _SIDEBAR_SUMMARY.sub(_name_sidebar_toggle, text)
        for pattern, repl in _PAGE_FIXES:
            new = pattern.sub(repl, new)
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app):
    app.connect("doctree-resolved", _alternatives)
    app.connect("build-finished", _mend_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The kernel-free sweep: an explorer's frames as a self-contained HTML player.

The book's HTML has no kernel, so each explorer also shows a pre-rendered sweep of
at most :data:`MAX_FRAMES` frames, written with matplotlib's ``HTMLWriter`` as
``Animation.to_jshtml`` does (:func:`jshtml`), wrapped in :data:`SWEEP_START` ...
:data:`SWEEP_END`, at most :data:`SWEEP_PX` pixels wide, playing on load (:data:`AUTOPLAY`)
with a line under it saying what to watch (:func:`watch_line`).  The explorer calls it from
:meth:`blockcd.widgets.base.Explorer.animation`.  Read next: :mod:`blockcd.widgets.base`.
"""

from __future__ import annotations

import html as html_lib
import itertools
import os
import re
import tempfile

import matplotlib as mpl
from matplotlib.animation import HTMLWriter
from matplotlib.figure import Figure

#: the kernel-free sweep is drawn this many pixels wide and shown at most this many CSS pixels wide
#: (the book's text column is about 700-800 px), on a figure at most SWEEP_INCHES wide, so that its
#: 11-point labels show at about 15 px and its 8-point legends at about 11 px
SWEEP_PX = 760
SWEEP_INCHES = 8.0
#: at most this many frames in a sweep
MAX_FRAMES = 12

ANIM_IDS = itertools.count()

#: the player's Font Awesome icons, as plain characters (no stylesheet from a CDN)
ICONS = {
    "fa fa-fast-backward": "&#8676;", "fa fa-step-backward": "&#8249;",
    "fa fa-play fa-flip-horizontal": "&#9664;", "fa fa-pause": "&#10074;&#10074;",
    "fa fa-play": "&#9654;", "fa fa-step-forward": "&#8250;", "fa fa-fast-forward": "&#8677;",
    "fa fa-minus": "&minus;", "fa fa-plus": "+",
}
#: markers around every sweep; tests/nbval-sanitize.cfg compares sweeps like images (not at all)
SWEEP_START = "<!-- blockcd sweep -->"
SWEEP_END = "<!-- end of blockcd sweep -->"


#: in JupyterLab (its output areas), the kernel-free sweep and the note on running live are hidden:
#: the live explorer is there; the book's HTML has no such class and shows them
LIVE_HIDES = ("<style>.jp-OutputArea-output .blockcd-sweep, .jp-OutputArea-output .blockcd-note "
               "{display: none}</style>")


#: appended to the player's start-up script, so that it plays as soon as the page has loaded (unless
#: the reader's system asks for reduced motion, then it waits for the play button)
AUTOPLAY = ("\n        if (!(window.matchMedia && "
            "window.matchMedia('(prefers-reduced-motion: reduce)').matches)) {{ {anim}.play_animation(); }}")


def watch_line(text: str) -> str:
    """The line under a player saying what to watch (HTML; ``text`` is escaped)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("watch must be a non-empty sentence saying what the sweep shows")
    return (f'<p class="blockcd-watch" style="font-size:90%;margin:0.2em 0 0.4em 0"><b>What to watch:</b> '
            f"{html_lib.escape(text.strip())}</p>")


def jshtml(fig: Figure, update, n_frames: int, name: str, fps: float = 1.5, *, watch: str | None = None,
           autoplay: bool = True) -> str:
    """A kernel-free animation of ``n_frames`` calls of ``update(i)``, as HTML.

    Written with matplotlib's ``HTMLWriter``, as ``Animation.to_jshtml`` does, but
    drawing each frame once.  The player's random element ids are replaced by
    ``blockcd_<name>_<k>`` (k counts sweeps in this process), its icons by plain
    characters (no stylesheet to fetch), and the whole is wrapped in
    :data:`SWEEP_START` ... :data:`SWEEP_END`.  With ``autoplay`` (the default) it
    starts playing, in a loop, once the page has loaded (:data:`AUTOPLAY`); ``watch``,
    one sentence, is shown under it (:func:`watch_line`).
    """
    line = "" if watch is None else watch_line(watch)
    writer = HTMLWriter(fps=fps, embed_frames=True, default_mode="loop")
    with tempfile.TemporaryDirectory() as tmp, mpl.rc_context({"animation.embed_limit": 8.0}):
        path = os.path.join(tmp, "sweep.html")
        with writer.saving(fig, path, dpi=fig.dpi):
            for i in range(n_frames):
                update(i)
                writer.grab_frame()
        with open(path, encoding="utf-8") as fh:
            html = fh.read()
    uid = re.search(r"_anim_img([0-9a-f]+)", html).group(1)
    new = f"blockcd_{re.sub(r'[^a-z]', '', name)}_{next(ANIM_IDS)}"
    html = html.replace(uid, new)
    if autoplay:
        start = re.compile(rf"(anim{new} = new Animation\([^)]*\);)")
        if not start.search(html):  # pragma: no cover - a matplotlib whose player script differs
            raise RuntimeError("matplotlib's HTMLWriter script changed: cannot start the player on load")
        html = start.sub(lambda mo: mo.group(1) + AUTOPLAY.format(anim=f"anim{new}"), html, count=1)
    html = re.sub(r'<link rel="stylesheet"\s+href="[^"]*font-awesome[^"]*">', "", html)
    html = re.sub(r'<i class="([^"]*)"></i>', lambda mo: ICONS.get(mo.group(1), ""), html)
    # at the column's width, never wider than drawn (the player's box shrinks to its contents)
    html = re.sub(r'<img id="', f'<img style="width:{SWEEP_PX}px;max-width:100%;height:auto" id="', html, count=1)
    return f"{SWEEP_START}\n{LIVE_HIDES}\n<div class=\"blockcd-sweep\">{html}{line}</div>\n{SWEEP_END}"


def sweep_size(figsize) -> tuple[tuple[float, float], float]:
    """(size in inches, dpi) of a sweep's figure: at most SWEEP_INCHES wide, the live figure's shape,
    SWEEP_PX pixels wide (a narrower figure has relatively larger text, readable when shown at the
    book's column width)."""
    w = min(figsize[0], SWEEP_INCHES)
    return (w, figsize[1] * w / figsize[0]), SWEEP_PX / w

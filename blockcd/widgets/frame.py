"""A kernel-free animation together with one of its frames as a picture.

An animation written by matplotlib's ``HTMLWriter`` (``Animation.to_jshtml``, and the explorers'
sweeps) is a player: JavaScript that swaps embedded PNG frames.  A PDF cannot run it, nor can a
reader with scripts off.  :class:`Player` is a display object that offers both:

- ``text/html``, the player, which the book's HTML and Jupyter show (its image starts on the chosen
  frame, so a page with scripts off shows that frame too);
- ``image/png``, the chosen frame, which the PDF shows: myst-nb's LaTeX builder prefers
  ``image/png`` and never uses HTML.
"""

from __future__ import annotations

import base64
import re

#: one embedded frame of a player: ``frames[i] = "data:image/png;base64,..."`` (line breaks escaped)
_FRAME = re.compile(r'frames\[(\d+)\] = "data:image/png;base64,([^"]+)"')


def frames(html: str) -> list[bytes]:
    """The PNG frames embedded in a player's HTML, in order."""
    found = sorted((int(i), base64.b64decode(data)) for i, data in _FRAME.findall(html))
    return [png for _, png in found]


class Player:
    """A player's HTML with one of its frames as a picture (see the module's docstring).

    Parameters
    ----------
    html : str
        The player, as ``to_jshtml`` or the explorers' ``animation()`` write it, with its frames
        embedded as PNG.
    frame : int, optional
        The frame shown where the player cannot run: an index into the frames, negative from the
        end (default 0, the first).
    """

    def __init__(self, html: str, frame: int = 0):
        if not isinstance(html, str):
            raise TypeError(f"html must be a str, got {type(html).__name__}")
        if isinstance(frame, bool) or not isinstance(frame, int):
            raise TypeError(f"frame must be an int, got {type(frame).__name__}")
        pngs = frames(html)
        if not pngs:
            raise ValueError("html must be a player with PNG frames embedded (to_jshtml), found none")
        if not -len(pngs) <= frame < len(pngs):
            raise ValueError(f"frame must be in -{len(pngs)}..{len(pngs) - 1}, got {frame}")
        self.n_frames = len(pngs)
        self.frame = frame % len(pngs)
        self.png = base64.b64encode(pngs[self.frame]).decode("ascii")
        # the player's image starts on the frame (its script then shows the frame it starts on)
        self.html = re.sub(r'<img (?![^>]*\ssrc=)', f'<img src="data:image/png;base64,{self.png}" ', html, count=1)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.html, "image/png": self.png,
                "text/plain": f"<animation: {self.n_frames} frames; frame {self.frame + 1} as a picture>"}

    def __repr__(self) -> str:
        return f"Player(n_frames={self.n_frames}, frame={self.frame})"


def shown_frame(explorer) -> int:
    """The frame of an explorer's sweep drawn at its current settings, or the first if none is.

    The text around an explorer describes its defaults; this is the frame a PDF shows for it.
    """
    try:
        from .player import MAX_FRAMES
    except ImportError:  # the sweep's machinery before it had a module of its own
        from .base import MAX_FRAMES
    params = explorer.params()
    for i, f in enumerate(explorer._frames()[:MAX_FRAMES]):
        if all(params.get(k) == v for k, v in f.items()):
            return i
    return 0

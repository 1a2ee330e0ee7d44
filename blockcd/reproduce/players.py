"""Chapter 13's players: the curves of a τ sweep one at a time, in a page without a kernel.

:func:`scrubber` turns a τ sweep of :func:`blockcd.reproduce.paper.run_paper` (Figs. 4, 6, 8,
10 and 12) into an HTML animation, one frame per τ; :func:`player` wraps it in a
:class:`blockcd.widgets.frame.Player`, which also carries one frame as a PNG: the picture a
PDF, or a reader with scripts off, sees in the player's place.
"""

from __future__ import annotations

from .._validate import check_float, check_int


def scrubber(result, *, label: str = "τ", dpi: int = 90, width: float = 7.2, panel_height: float = 2.7,
             fontsize: float = 13, colors: int = 32) -> str:
    """A kernel-free slider over the curves of a τ sweep (Figs. 4, 6, 8, 10, 12): an HTML animation whose frame j
    shows one curve of every panel in full and fades the others (matplotlib's ``to_jshtml``).

    The panels' curves are matched from the last: frame j shows the j-th curve of a panel with the most
    curves, and of a panel with k fewer its (j - k)-th (none where j < k).  Every sweep of the suite
    ends at q = 1 and shares its largest fractions across n (a panel has one curve fewer where 1/n is
    already on the grid), so a frame shows the same fraction q (Fig. 4: the same nq) in every panel.

    The frames are drawn from a copy of the figure laid out for a page about ``width * dpi`` pixels wide
    (648 by default, the book's text column): one panel per row, each ``panel_height`` inches high, with
    ``fontsize``-point text, i.e. ``fontsize * dpi / 72`` pixels (16 by default) where the figure's own
    8-11 points at the old 60 dpi were 7-9 pixels.  Each frame is an embedded PNG reduced to a palette
    of ``colors`` colours, which keeps a four-frame sweep of the book at 100-175 kB.  The figure itself is left as it
    was.  ``label`` names what the frames step through; the legend entry of the shown curve stays dark.

    Parameters
    ----------
    result : Result
        A τ sweep of :func:`run_paper`, whose ``figure`` has one labelled line per τ in each panel.
    label : str
        What one frame shows (default "τ").
    dpi : int
        Pixels per inch of the frames, in [20, 300].
    width, panel_height : float
        The frames' width and each panel's height in inches, > 0.
    fontsize : float
        Points of the tick labels, axis labels, panel labels and legend, > 0.
    colors : int
        Colours of each frame's palette, in [2, 256], or 0 to keep the full-colour PNG.
    """
    import base64
    import io
    import os
    import pickle
    import re
    import tempfile

    import matplotlib as mpl
    import matplotlib.pyplot as plt
    from matplotlib.animation import HTMLWriter
    from matplotlib.gridspec import GridSpec
    from PIL import Image

    dpi = check_int("dpi", dpi, 20, 300)
    width = check_float("width", width, positive=True)
    panel_height = check_float("panel_height", panel_height, positive=True)
    fontsize = check_float("fontsize", fontsize, positive=True)
    colors = check_int("colors", colors, 0, 256)
    if colors == 1:
        raise ValueError("colors must be 0 (full colour) or an integer in [2, 256], got 1")
    fig = pickle.loads(pickle.dumps(result.figure))  # a copy: the chapter's figure keeps its layout
    try:
        axes = fig.axes
        grid = GridSpec(len(axes), 1, figure=fig)
        panels = []
        for k, ax in enumerate(axes):
            ax.set_subplotspec(grid[k, 0])
            ax.tick_params(labelsize=fontsize)
            for text in (ax.xaxis.label, ax.yaxis.label):
                text.set_fontsize(fontsize)
            # the panel's label ("n = 12", top right) becomes its title: the enlarged legend would cover it
            labels = [t.get_text() for t in ax.texts]
            for text in list(ax.texts):
                text.remove()
            if labels:
                ax.set_title(", ".join(labels), fontsize=fontsize)
            legend = ax.get_legend()
            names = [] if legend is None else list(legend.get_texts())
            for text in names:
                text.set_fontsize(fontsize - 1)
            lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
            panels.append((lines, list(ax.collections), names))
        fig.set_size_inches(width, panel_height * len(axes))
        fig.tight_layout()
        frames = max(len(lines) for lines, _, _ in panels)

        def show(j):
            for lines, cols, names in panels:
                i = j - (frames - len(lines))        # matched from the last curve (see above)
                for k, ln in enumerate(lines):
                    ln.set_alpha(1.0 if k == i else 0.12)
                for k, c in enumerate(cols):
                    c.set_alpha(0.25 if k == i else 0.03)
                for k, text in enumerate(names):
                    text.set_alpha(1.0 if k == i else 0.45)
            return []

        # as Animation.to_jshtml writes it (900 ms a frame, played once), drawing each frame once
        writer = HTMLWriter(fps=1000 / 900, embed_frames=True, default_mode="once")
        with tempfile.TemporaryDirectory() as tmp, mpl.rc_context({"animation.embed_limit": 20.0}):
            path = os.path.join(tmp, "sweep.html")
            with writer.saving(fig, path, dpi=dpi):
                for j in range(frames):
                    show(j)
                    writer.grab_frame()
            with open(path, encoding="utf-8") as fh:
                html = fh.read()
    finally:
        plt.close(fig)

    def palette(match):
        image = Image.open(io.BytesIO(base64.b64decode(match.group(2)))).convert("RGB")
        if colors:
            image = image.quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
        return match.group(1) + base64.b64encode(out.getvalue()).decode("ascii")

    html = re.sub(r'(frames\[\d+\] = "data:image/png;base64,)([^"]+)', palette, html)
    html = html.replace('<img id="_anim_img', '<img style="max-width: 100%; height: auto" id="_anim_img', 1)
    return f"<p>frames: one {label} each, in the order of the legend</p>" + html


def player(result, *, frame: int = 0, **kwargs):
    """:func:`scrubber`'s animation as a :class:`blockcd.widgets.frame.Player` showing ``frame`` where it cannot run.

    The book's HTML and Jupyter show the player (its image starting on ``frame``); the PDF, which
    never uses HTML, shows frame ``frame`` as a picture.

    Parameters
    ----------
    result : Result
        A τ sweep of :func:`blockcd.reproduce.paper.run_paper`, as for :func:`scrubber`.
    frame : int
        The frame shown as a picture: an index into the frames, negative from the end (default 0, the
        smallest τ).  Frames are matched across panels from the last curve (see :func:`scrubber`).
    **kwargs
        :func:`scrubber`'s drawing parameters (``label``, ``dpi``, ``width``, ``panel_height``,
        ``fontsize``, ``colors``).

    Returns
    -------
    blockcd.widgets.frame.Player
    """
    from ..widgets.frame import Player

    return Player(scrubber(result, **kwargs), frame=frame)

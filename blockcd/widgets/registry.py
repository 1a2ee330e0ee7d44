"""The explorers by name, and :func:`show`, the one call a chapter makes.

``EXPLORERS`` maps a name to its builder; :func:`show` displays the
kernel-free sweep, the :data:`NOTE` on running the chapter live, and the live
explorer.  The explorers themselves live in one module per chapter.
"""

from __future__ import annotations

from .._validate import check_choice
from .convergence import convergence_explorer, playground
from .frame import Player, shown_frame
from .template import template_explorer
from .time import time_explorer
from .tradeoff import tradeoff_explorer
from .variance import variance_explorer

NOTE = (
    '<p class="blockcd-note" style="font-size:90%;margin:0.3em 0 0.6em 0">The figure above plays a '
    "pre-computed sweep and needs no kernel. <b>To move the sliders</b> the page needs a running kernel: open "
    "the chapter live with the launch button (rocket icon) at the top of the page (Binder or Colab), or clone "
    "the repository, run <code>pip install -r requirements.txt</code> and <code>jupyter lab book/</code>.</p>"
)
#: the note where the sweep is a still picture (the PDF), what the figure is and where it moves
NOTE_PRINT = ("The figure above is one frame of a pre-computed sweep, which the book's HTML plays. To move the "
              "controls, open the chapter in a running kernel: pip install -r requirements.txt, jupyter lab book/.")


#: name -> builder, for :func:`show`
EXPLORERS = {
    "template": template_explorer,
    "variance": variance_explorer,
    "convergence": convergence_explorer,
    "tradeoff": tradeoff_explorer,
    "time": time_explorer,
    "playground": playground,
}


def show(name: str, **kwargs) -> None:
    """Display an explorer: a kernel-free moving figure, a note on running live, and the live widget.

    The sweep and the note are for pages without a kernel (the book's HTML); the
    sweep's style sheet hides both in JupyterLab, where the live explorer below
    them is what moves.

    Parameters
    ----------
    name : {'template', 'variance', 'convergence', 'tradeoff', 'time', 'playground'}
    **kwargs
        Defaults of the explorer's controls, passed to its builder
        (e.g. ``show("convergence", method="isega", tau=4)``).
    """
    from IPython.display import display

    name = check_choice("name", name, tuple(EXPLORERS))
    ex = EXPLORERS[name](**kwargs)
    display(Player(ex.animation(), frame=shown_frame(ex)))
    display({"text/html": NOTE, "text/plain": NOTE_PRINT}, raw=True)
    display(ex)

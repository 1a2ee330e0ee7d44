"""Interactive explorers for the book: sliders, a figure that follows them, and a moving figure for the HTML.

A chapter shows an explorer with one code cell, ``blockcd.widgets.show("convergence")``,
which displays three things:

1. a figure that moves without a kernel: a short pre-rendered sweep (over tau, n
   or the bandwidth) written with matplotlib's ``to_jshtml``, so the static HTML
   of the book still shows how the picture changes; it plays on load, its axes
   stay the same in every frame, and a line under it says what to watch;
2. a one-line note on opening the chapter live (the sweep's style sheet hides
   both in JupyterLab, where the live explorer is what moves);
3. the live explorer: ipywidgets controls above a figure that is redrawn, in
   well under a second, each time a control moves.

The explorers are built by :func:`template_explorer`, :func:`variance_explorer`,
:func:`convergence_explorer`, :func:`tradeoff_explorer`, :func:`time_explorer`
and :func:`playground`.  Each keeps one matplotlib figure (not managed by
pyplot), updates its artists in place on every move and sends the rendered
PNG to an ``ipywidgets.Image``; problems and runs are cached by their
parameters, so moving tau does not rebuild the problem.  Controls are linked so
that impossible values cannot be chosen (tau <= m <= d).  A step that makes a
method diverge shows a message instead of a plot of NaNs.

In a kernel a move does not block it: one redraw at a time runs in a thread,
and a move made meanwhile is drawn once, with the newest values, when it ends.

The project measures the explorers outside the library: ``python -m tests.live --bench``
(from the repository root) times the callbacks of every explorer over a set of control
moves; with ``--live`` also the time from a key press to the redrawn figure in JupyterLab.

The package has one module per job: ``base`` (the :class:`Explorer` base class),
``canvas`` (figures outside pyplot, PNG), ``player`` (the kernel-free sweep),
``controls`` (sliders and texts), ``threads`` (redraws in the background),
``cache`` (problems, runs and sweeps cached by their
parameters), one module of explorers per chapter (``template``,
``variance``, ``convergence``,
``tradeoff``, ``time``),
and ``registry`` (``EXPLORERS`` and :func:`show`).  This file only re-exports.

This module computes nothing new: runs come from :func:`blockcd.run`,
predictions from :mod:`blockcd.theory` and :mod:`blockcd.network`, styles from
:mod:`blockcd.plotting`.
"""

from __future__ import annotations

try:  # ipywidgets is a dependency of the package; keep the import error readable
    import ipywidgets  # noqa: F401
except ImportError as exc:  # pragma: no cover
    raise ImportError("blockcd.widgets needs ipywidgets (pip install ipywidgets)") from exc

# the names below are this package's public API, re-exported from the modules that hold them
from .base import Explorer
from .cache import PROBLEMS, SPLITS  # noqa: F401
from .convergence import ConvergenceExplorer, Playground, convergence_explorer, playground  # noqa: F401
from .player import SWEEP_END, SWEEP_START  # noqa: F401
from .registry import EXPLORERS, NOTE, show  # noqa: F401
from .template import TemplateExplorer, template_explorer  # noqa: F401
from .time import TimeExplorer, time_explorer  # noqa: F401
from .tradeoff import TradeoffExplorer, tradeoff_explorer  # noqa: F401
from .variance import VarianceExplorer, variance_explorer  # noqa: F401

__all__ = [
    "EXPLORERS",
    "PROBLEMS",
    "Explorer",
    "convergence_explorer",
    "playground",
    "show",
    "template_explorer",
    "time_explorer",
    "tradeoff_explorer",
    "variance_explorer",
]

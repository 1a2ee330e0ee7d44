"""How the explorers compute in a live kernel: one BLAS thread, one redraw at a time, prompt GIL hand-over.

Read next: :mod:`blockcd.widgets.base` (the redraws in the background that use them).
"""

from __future__ import annotations

import contextlib
import sys
import threading

_BLAS = []
#: one redraw at a time in the process (matplotlib's rc settings are global)
RENDER = threading.Lock()


#: seconds a thread holding the GIL keeps it while another waits, during a background redraw
#: (Python's default is 0.005)
SWITCH_INTERVAL = 1e-4


@contextlib.contextmanager
def prompt_switching(interval: float = SWITCH_INTERVAL):
    """Hand the GIL over within ``interval`` seconds while a background redraw computes.

    A redraw's run is a Python loop that holds the GIL; the kernel's main thread
    (reading the next slider message) and its IOPub thread (sending replies and
    status messages) need it for a moment at every step of their work, and with
    Python's default of 5 ms each of these steps waited for the redraw: a slider
    message was read, and its "idle" status reached the browser, 100-200 ms
    late, and ipywidgets' front end sends a control's next value only once the
    kernel is idle after the previous one.  Switching is only forced while
    another thread waits, so the redraw itself is not slowed, and no number changes.
    """
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, interval))
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel whose widgets talk to a front end (redraw in the background)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipywidgets depends on IPython
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def one_blas_thread():
    """Run a callback with one BLAS thread: the explorers' arrays are small, and on a busy
    machine a second BLAS thread only waits for a core (scikit-learn's threadpoolctl)."""

    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS.append(ThreadpoolController())
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _BLAS.append(None)
    return contextlib.nullcontext() if _BLAS[0] is None else _BLAS[0].limit(limits=1, user_api="blas")

r"""A comparison of runs: what each needed to reach an accuracy, where it ended, and who wins.

:func:`compare_runs` takes the :class:`~blockcd.History` of several runs (of one
method at several tau, of several methods, from the simulator or from MPI) and an
accuracy ``eps``, and returns a :class:`Comparison`: for each run, the first
iteration k with error[k] <= eps error[0], the blocks and bytes each worker had
sent by then, and the final relative error; which run reached ``eps`` in the
fewest iterations and in the fewest bytes, and which ended lowest.  Its
:meth:`Comparison.table` prints that, and :meth:`Comparison.plot` draws the runs
against iterations and against bytes with the accuracy marked::

    import blockcd
    p = blockcd.problems.synthetic(10, 50, 40, interpolating=True, cond=20, seed=0)
    runs = [blockcd.run(p, "ibcd", m=40, tau=t, iters=1000) for t in (4, 40)]
    c = blockcd.comparison.compare_runs(runs, eps=1e-6)
    print(c.table())
    c.plot()

The error is :math:`\|x^k - x^\star\|^2` (``y='dist2'``, the book's measure of iterations to
accuracy, ``History.iters_to``), :math:`f(x^k) - f^\star` (``'gap'``) or, on a non-convex
problem, :math:`\|\nabla f(x^k)\|^2` (``'grad2'``).  Nothing here runs a method.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._validate import check_float
from .history import History, first_below

__all__ = ["Comparison", "RunResult", "compare_runs"]

#: what a comparison ranks by; each names the :class:`RunResult` field where lower wins
CRITERIA = ("iterations", "bytes", "final")


@dataclass(frozen=True)
class RunResult:
    """One row of a :class:`Comparison`.

    Attributes
    ----------
    name : str
        The run's name (its legend entry).
    method : str
    tau : int
        Blocks each worker sends per iteration.
    m : int
        Blocks.
    iterations : int or None
        The first iteration k with error[k] <= eps error[0]; None if the run never got there.
    blocks : float or None
        Blocks each worker had sent up by then (``History.blocks_up[k]``); None if the run never
        got there.
    bytes : float or None
        Bytes each worker had sent up by then (``History.bytes_up[k]``); None if the run never
        got there.
    final : float
        The last recorded error relative to the first, error[-1] / error[0].
    recorded : int
        Iterations the run recorded.
    """

    name: str
    method: str
    tau: int
    m: int
    iterations: int | None
    blocks: float | None
    bytes: float | None
    final: float
    recorded: int


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare_runs`: one :class:`RunResult` per run, and the winners.

    Attributes
    ----------
    eps : float
        The accuracy, relative to the error at x0.
    y : str
        The error compared (``'dist2'``, ``'gap'`` or ``'grad2'``).
    results : tuple of RunResult
        In the order the runs were given.
    histories : tuple of History
    winners : dict
        ``{'iterations': name, 'bytes': name, 'final': name}``: the run that reached ``eps`` in
        the fewest iterations, the one that sent the fewest bytes per worker to get there (None
        when no run reached ``eps``), and the one with the lowest final error.  On a tie the run
        given first wins.
    """

    eps: float
    y: str
    results: tuple
    histories: tuple
    winners: dict

    def result(self, name: str) -> RunResult:
        """The row of the run called ``name``."""
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(f"no run named {name!r}; the runs are {[r.name for r in self.results]}")

    def table(self) -> str:
        """The comparison as text: one row per run, then who wins on each criterion.

        Columns: the run, iterations, blocks and bytes per worker to ``eps`` ("not reached" if the
        run stopped before), the final relative error and the iterations recorded.
        """
        header = ["run", f"iterations to {self.eps:g}", "blocks per worker", "bytes per worker",
                  "final error", "iterations run"]
        rows = []
        for r in self.results:
            reached = r.iterations is not None
            rows.append([r.name, str(r.iterations) if reached else "not reached",
                         f"{r.blocks:,.0f}" if reached else "-", f"{r.bytes:,.0f}" if reached else "-",
                         f"{r.final:.3g}", str(r.recorded)])
        widths = [max(len(h), *(len(row[j]) for row in rows)) for j, h in enumerate(header)]
        line = lambda cells: "  ".join(c.ljust(w) if j == 0 else c.rjust(w)
                                       for j, (c, w) in enumerate(zip(cells, widths)))
        out = [line(header), line(["-" * w for w in widths])] + [line(row) for row in rows]
        what = {"iterations": f"fewest iterations to {self.eps:g}", "bytes": f"fewest bytes to {self.eps:g}",
                "final": "lowest final error"}
        for c in CRITERIA:
            out.append(f"{what[c]}: {self.winners[c] if self.winners[c] is not None else 'no run reached it'}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def plot(self, axes=None, *, keys=None, **kw):
        """The runs against iterations (left) and bytes sent per worker (right), ``eps`` dotted.

        ``axes`` is a pair of matplotlib Axes (a new figure when None); ``keys`` and ``**kw`` go
        to :func:`blockcd.plotting.convergence`, which draws each panel.

        Returns
        -------
        the pair of Axes ``(iterations, bytes)``, where :func:`blockcd.plotting.convergence` returns one:
        unpack it, ``ax_it, ax_bytes = c.plot()``.
        """
        from . import plotting

        if axes is None:
            import matplotlib.pyplot as plt

            plotting.setup()
            _, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
        if len(axes) != 2:
            raise ValueError(f"axes must be two Axes (iterations, bytes), got {len(axes)}")
        names = [r.name for r in self.results]
        for ax, x in zip(axes, ("iteration", "bytes")):
            plotting.convergence(list(self.histories), ax=ax, x=x, y=self.y, labels=names, keys=keys, **kw)
            ax.axhline(self.eps, color="0.5", ls=":", lw=1.5, label=f"accuracy {self.eps:g}")
        axes[0].legend()
        return axes


def _names(histories: Sequence[History]) -> list[str]:
    from .plotting import run_label

    pairs = [(h.method, h.tau) for h in histories]
    names = [run_label(h, step=pairs.count((h.method, h.tau)) > 1) for h in histories]
    for i, nm in enumerate(names):    # still equal (same method, tau and step): number them
        if names.count(nm) > 1:
            names[i] = f"{nm} (run {i + 1})"
    return names


def compare_runs(histories, eps: float = 1e-6, *, y: str = "dist2", names: Sequence[str] | None = None
                 ) -> Comparison:
    r"""Compare runs by iterations and bytes to an accuracy, and by their final error.

    Parameters
    ----------
    histories : sequence of History, or dict {name: History}
        The runs.  With a dict, its keys name the runs.
    eps : float
        The accuracy, relative to the start: a run reaches it at the first k with
        error[k] <= eps error[0], as ``History.iters_to`` counts; 0 < eps < 1.
    y : str
        ``'dist2'`` (:math:`\|x^k - x^\star\|^2`, the default), ``'gap'``
        (:math:`f(x^k) - f^\star`) or ``'grad2'`` (:math:`\|\nabla f(x^k)\|^2`, non-convex runs).
    names : sequence of str, optional
        One name per run (default: the method and tau, e.g. ``"IBCD, τ = 4"``, and the step when
        two runs share both).

    Returns
    -------
    Comparison
        ``print(c.table())`` prints it, ``c.plot()`` draws it, ``c.winners`` names who wins.

    Notes
    -----
    The bytes are those each worker sent up (``History.bytes_up``, mean over workers), the
    quantity the paper's claim is about: at :math:`\tau = m/n` a worker sends :math:`n` times
    fewer bytes per iteration, and when :math:`r = L_{\max}/L` is near 1 the iterations barely
    grow (chapter 4), so the sparse run wins on bytes.
    """
    if isinstance(histories, Mapping):
        if names is not None:
            raise TypeError("names must be None when histories is a dict (its keys name the runs)")
        names = [str(k) for k in histories]
        histories = list(histories.values())
    if isinstance(histories, (str, bytes)) or not isinstance(histories, Sequence) or not histories:
        raise TypeError("histories must be a non-empty list of History objects or a dict {name: History}")
    for i, h in enumerate(histories):
        if not isinstance(h, History):
            raise TypeError(f"histories[{i}] must be a History, got {type(h).__name__}")
    eps = check_float("eps", eps, positive=True)
    if not eps < 1:
        raise ValueError(f"eps must be in (0, 1) (an accuracy relative to the start), got {eps}")
    if y not in ("dist2", "gap", "grad2"):
        raise ValueError(f"y must be one of ('dist2', 'gap', 'grad2'), got {y!r}")
    if names is None:
        names = _names(histories)
    else:
        names = list(names)
        if len(names) != len(histories) or not all(isinstance(nm, str) for nm in names):
            raise ValueError(f"names must be {len(histories)} strings, one per history")
        if len(set(names)) != len(names):
            raise ValueError(f"names must differ from each other, got {names}")
    results = []
    for nm, h in zip(names, histories):
        if y != "grad2" and h.grad2 is not None:
            raise ValueError(f"run {nm!r} is of a non-convex problem, which has no x*: use y='grad2'")
        if y == "grad2" and h.grad2 is None:
            raise ValueError(f"run {nm!r} has no grad2 (recorded on non-convex problems only): use 'dist2' or 'gap'")
        vals = np.asarray(getattr(h, y), dtype=float)
        k = first_below(vals, eps)
        with np.errstate(invalid="ignore", divide="ignore"):  # an overflowing start: no final ratio (NaN)
            final = float(vals[-1] / vals[0])
        results.append(RunResult(
            name=nm, method=h.method, tau=int(h.tau), m=int(h.m), iterations=k,
            blocks=None if k is None else float(h.blocks_up[k]),
            bytes=None if k is None else float(h.bytes_up[k]),
            final=final, recorded=h.iters))

    def best(field):
        candidates = [r for r in results if getattr(r, field) is not None and np.isfinite(getattr(r, field))]
        return min(candidates, key=lambda r: getattr(r, field)).name if candidates else None

    winners = {c: best(c) for c in CRITERIA}
    return Comparison(eps=eps, y=y, results=tuple(results), histories=tuple(histories), winners=winners)

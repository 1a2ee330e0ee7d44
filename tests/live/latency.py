"""The explorers' latency benchmark: ``python -m tests.live --bench [--live]``.

:func:`bench` replays a fixed list of slider moves through each explorer's
observer and reports the median and 90th percentile of the callback time, wall
clock and CPU (the kernel's side).  With ``--live``, ``lab.bench_live``
also runs every chapter with an explorer in a real JupyterLab and reports the
median of five times from the last of three key presses on the explorer's first
slider to the redrawn figure in Chromium (what a reader waits for).  Both are
reported at the explorers' default sizes (the chapters' settings) and at their
largest (:data:`LARGEST`: n, and d where it is a control, at the end of its range).  Nothing
here draws or computes for the book; the library's own benchmark is
``benchmarks`` (``python -m benchmarks``).
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from blockcd._validate import check_choice
from blockcd.widgets.registry import EXPLORERS


def _bench_moves(name: str) -> list[dict]:
    """Slider moves the benchmark replays (one control at a time, as a reader moves them)."""
    if name == "template":
        return [{"tau": t} for t in (1, 2, 5, 8, 20, 40, 4)] + [{"n": k} for k in (2, 5, 20, 10)] + \
               [{"m": k} for k in (20, 10, 40)]
    if name == "variance":
        return [{"tau": t} for t in (1, 2, 5, 8, 20, 4)] + [{"n": k} for k in (2, 5, 20, 10)] + \
               [{"m": k} for k in (20, 40)]
    if name == "convergence":
        return [{"tau": t} for t in (1, 2, 8, 10, 20, 40, 4)] + [{"step_scale": s} for s in (2, 4, 0.5, 1)] + \
               [{"method": "isega"}, {"method": "is-sgd"}, {"method": "ibcd"}, {"n": 5}, {"n": 20}, {"n": 10},
                {"split": "iid"}, {"seed": 1}]
    if name == "tradeoff":
        return [{"tau": t} for t in (1, 2, 8, 10, 20, 40, 4)] + [{"n": 5}, {"n": 20}, {"n": 10}, {"m": 20},
                                                                   {"m": 40}, {"method": "isega"}]
    if name == "time":
        return [{"tau": t} for t in (1, 8, 64, 256, 1024, 64)] + [{"bandwidth": b} for b in (1, 2, 50, 100)] + \
               [{"latency": v} for v in (1, 10, 1000)] + [{"n": k} for k in (4, 64, 256, 16)] + \
               [{"d": 1e5}, {"d": 1e9}]
    return [{"tau": t} for t in (1, 2, 8, 20, 4)] + [{"d": 60}, {"d": 40}, {"problem": "breast cancer"},
                                                      {"problem": "digits"}, {"problem": "ridge"},
                                                      {"method": "isega"}, {"n": 20}, {"step_scale": 4}]


#: each explorer at its largest sizes: every size control at the end of its range (n, and d for the
#: playground and chapter 9), the other arguments at their defaults
LARGEST = {"template": {"n": 64}, "variance": {"n": 64}, "convergence": {"n": 64}, "tradeoff": {"n": 64},
           "time": {"n": 256, "model": "10^9-parameter transformer"}, "playground": {"n": 64, "d": 200}}


def _largest_moves(name: str) -> list[dict]:
    """The moves of :func:`_bench_moves` that keep the sizes of :data:`LARGEST` (n, d stay at the end)."""
    big = LARGEST[name]
    return [mv for mv in _bench_moves(name) if not set(mv) & {"n", "d"}] + \
           ([{"n": big["n"] - 1}, {"n": big["n"]}] if "n" in big else [])


def bench(names=None, *, sizes: str = "default", verbose: bool = True) -> dict[str, dict[str, float]]:
    """Median and 90th percentile of the callback time per explorer over its slider moves.

    Builds each explorer with its defaults (building is not timed), or with
    ``sizes="largest"`` at :data:`LARGEST`, then replays the moves of
    :func:`_bench_moves`, one control at a time, through the same observer a
    slider triggers.  Reports wall-clock seconds and the CPU seconds of this
    process (the latter is less sensitive to other processes on the machine).

    Returns
    -------
    dict
        name -> {"n", "median", "p90", "cpu_median", "cpu_p90"} (seconds).
    """
    names = tuple(EXPLORERS) if names is None else tuple(names)
    sizes = check_choice("sizes", sizes, ("default", "largest"))
    out = {}
    if verbose:
        print(f"{'explorer (' + sizes + ')':22s} {'moves':>5s} {'median':>9s} {'90th pct':>9s} {'CPU median':>11s} "
              f"{'CPU 90th':>9s}   (milliseconds per callback)", flush=True)
    for name in names:
        kw = LARGEST[name] if sizes == "largest" else {}
        ex = EXPLORERS[check_choice("name", name, tuple(EXPLORERS))](**kw)
        ex.wait_ready()  # part of building the explorer, as a reader's first look at it
        ex.timings.clear()
        ex.cpu_timings.clear()
        for mv in (_largest_moves(name) if sizes == "largest" else _bench_moves(name)):
            for k, v in mv.items():
                ex.controls[k].value = v
        t, c = np.array(ex.timings), np.array(ex.cpu_timings)
        out[name] = {"n": int(t.size), "median": float(np.median(t)), "p90": float(np.percentile(t, 90)),
                     "cpu_median": float(np.median(c)), "cpu_p90": float(np.percentile(c, 90))}
        if verbose:
            o = out[name]
            print(f"{name:22s} {o['n']:5d} {o['median'] * 1e3:9.1f} {o['p90'] * 1e3:9.1f} "
                  f"{o['cpu_median'] * 1e3:11.1f} {o['cpu_p90'] * 1e3:9.1f}", flush=True)
    return out


def main(argv=None) -> int:
    import argparse

    from blockcd import widgets

    ap = argparse.ArgumentParser(prog="python -m tests.live", description=widgets.__doc__.split("\n")[0])
    ap.add_argument("--bench", action="store_true", help="time the callbacks of every explorer")
    ap.add_argument("--live", action="store_true",
                    help="also time key press -> redrawn figure in JupyterLab and Chromium (needs both)")
    ap.add_argument("names", nargs="*", help=f"explorers to time (default all: {', '.join(EXPLORERS)})")
    args = ap.parse_args(argv)
    if not args.bench:
        ap.print_help()
        return 0
    names = [check_choice("name", n, tuple(EXPLORERS)) for n in args.names]
    mpl.use("Agg")
    bench(names or None)
    print(flush=True)
    bench(names or None, sizes="largest")
    if args.live:
        from . import lab as live

        print(flush=True)
        live.bench_live(names=names or None)
    return 0

"""``python -m benchmarks.async_power``: the power of chapter 12's two checks of ``prop-async-mean``.

Chapter 12 runs asynchronous IS-SGD 40 times (seeds 0-39) for 200 arrivals along two records of the
delay model (equal speeds, and a straggler at speed 1/10) and applies two checks, each within 4
standard errors: the mean of the last iterate against the prediction
(:func:`blockcd.experiments.async_mean_check`, the largest of 20 coordinates' |t|) and the
relative step error and the share of the delay ignored at every arrival
(:func:`blockcd.experiments.async_message_check`, the larger of two |t|).
This script repeats both on ``--batches`` disjoint blocks of 40 seeds (0-39, 40-79, ...) for the
library's master and four wrong ones, and prints, per master, record and check, the share of
blocks the check rejects (|t| > 4) and the median |t|: for the library's master the false-alarm
rate, for a wrong one the power.  Wrong masters: the step 10% too long; workers that compute on
the current average, the local iterates built as Algorithm 8's ("delays ignored"); the worker's new local
iterate taken from the current average instead of the point it computed on ("wrong point"); a
master without local iterates that applies stale messages to the current average ("stale
master"); the message without its factor m/tau.  About 3 s per check and block of 40 runs.
"""

from __future__ import annotations

import argparse

import numpy as np

from blockcd import experiments, problems, rules, theory
from blockcd.asynchronous import Speeds

_RIGHT = rules.ISSGDAsync.arrive


def _long_step(self, s, i, coords, values, scale, step):
    return _RIGHT(self, s, i, coords, values, scale, 1.1 * step)


def _wrong_point(self, s, i, coords, values, scale, step):
    s.Z[i] = self.iterate(s).copy()
    return _RIGHT(self, s, i, coords, values, scale, step)


def _stale(self, s, i, coords, values, scale, step):
    if coords is None:
        s.w -= step * scale * values / s.n
    else:
        s.w[coords] -= step * scale * values / s.n
    s.gamma = step
    s.Z[i] = self.iterate(s)


def _unscaled(self, s, i, coords, values, scale, step):
    return _RIGHT(self, s, i, coords, values, 1.0, step)


def _fresh_gradient(self, s, i, coords, values, scale, step):
    if not hasattr(s, "H"):
        s.H = s.Z.copy()
    new = s.H[i].copy()
    if coords is None:
        new -= step * scale * values
    else:
        new[coords] -= step * scale * values
    s.w += (new - s.X[i]) / s.n
    s.X[i] = new
    s.H[i] = self.iterate(s)
    s.Z[:] = self.iterate(s)
    return s.H[i]


MASTERS = {"library": _RIGHT, "step +10%": _long_step, "delays ignored": _fresh_gradient,
           "wrong point": _wrong_point, "stale master": _stale, "no m/tau": _unscaled}


def main(batches: int = 10) -> list[tuple]:
    p = problems.synthetic(4, 20, 20, interpolating=True, cond=5, seed=0)
    m, tau, b = 20, 5, 4
    step = theory.step_size(p, "is-sgd-async", m, tau)
    records = {s: Speeds((1.0, 1.0, 1.0, s), seed=0).arrivals(4, 200)[0] for s in (1.0, 0.1)}
    def message(*args, **kw):
        out = experiments.async_message_check(*args, **kw)
        return {"z": max(out["z"], out["delay_z"])}

    checks = {"mean": experiments.async_mean_check, "message": message}
    rows = []
    try:
        for name, arrive in MASTERS.items():
            rules.ISSGDAsync.arrive = arrive
            for s, rec in records.items():
                for check, fn in checks.items():
                    z = np.array([fn(p, rec, m=m, tau=tau, batch=b, step=step, iters=200,
                                     seeds=range(40 * k, 40 * k + 40))["z"] for k in range(batches)])
                    rows.append((name, s, check, float(np.mean(z > 4)), float(np.median(z))))
                    print(f"{name:12s}  speed {s:<4g} {check:8s} rejected {np.mean(z > 4):6.0%} of "
                          f"{batches} blocks, median |t| {np.median(z):7.2f}", flush=True)
    finally:
        rules.ISSGDAsync.arrive = _RIGHT
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10, help="blocks of 40 seeds (default 10)")
    main(parser.parse_args().batches)

"""Starting an MPI job from an ordinary process, and reading what it measured.

:func:`mpiexec` finds the launcher, :func:`launch` runs ``python -m blockcd.mpi``
under a timeout in its own process group, :func:`load_measurements` reads the
``mpi_*`` arrays of a run's history file.  Nothing here imports ``mpi4py``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import check_float, check_int


def mpiexec(ranks: int) -> list[str]:
    """The launcher prefix ``[mpiexec, '-n', K]`` for this Python environment.

    Uses ``$BLOCKCD_MPIEXEC`` if set (e.g. ``"srun --mpi=pmi2"`` on a Slurm
    cluster, split on spaces), else the ``mpiexec`` next to this Python (where
    the ``mpich`` wheel installs it), else the first on ``PATH``.

    Raises
    ------
    FileNotFoundError
        if no launcher is found, with the command that installs one.
    """
    ranks = check_int("ranks", ranks, 2)
    custom = os.environ.get("BLOCKCD_MPIEXEC")
    if custom:
        parts = custom.split()
        return parts + ["-n", str(ranks)]
    here = str(Path(sys.executable).parent)
    exe = shutil.which("mpiexec", path=here) or shutil.which("mpiexec")
    if exe is None:
        raise FileNotFoundError(
            "mpiexec not found next to this Python or on PATH; install MPI with "
            "`python -m pip install mpi4py mpich` (both are in requirements.txt)"
        )
    return [exe, "-n", str(ranks)]


def _flag(key: str, value: Any) -> list[str]:
    flag = "--" + key.replace("_", "-")
    if value is None or value is False:
        return []
    if value is True:
        return [flag]
    if isinstance(value, (list, tuple)):  # a flag given once per value (e.g. --slow for several ranks)
        return [part for v in value for part in (flag, str(v))]
    return [flag, str(value)]


def launch(ranks: int, *, wait: float = 600.0, check: bool = True, **options: Any) -> subprocess.CompletedProcess:
    """Run ``mpiexec -n ranks python -m blockcd.mpi`` with ``options`` as its flags.

    Keyword arguments become flags (``tau=10`` -> ``--tau 10``,
    ``send_indices=True`` -> ``--send-indices``; ``None``/``False`` are left
    out; ``step`` is a number or ``'decreasing'``).  Each rank runs with one BLAS thread (``OMP_NUM_THREADS=1`` unless
    set), as usual for MPI jobs.  The job runs in its own process group, which
    is killed if it outlives ``wait`` seconds (``timeout=...`` is the job's own
    ``--timeout``, the per-iteration watchdog).

    Returns
    -------
    subprocess.CompletedProcess with text ``stdout`` and ``stderr``.

    Raises
    ------
    subprocess.CalledProcessError
        with ``check=True``, if the job exits with a non-zero status.
    subprocess.TimeoutExpired
        if it does not finish within ``wait`` seconds.
    """
    wait = check_float("wait", wait, positive=True)
    step = options.get("step")
    if callable(step):
        raise TypeError("step: an MPI job takes a number or 'decreasing' on its command line, not a callable "
                        f"schedule ({step!r}); run a custom schedule with blockcd.run")
    args = mpiexec(ranks) + [sys.executable, "-m", "blockcd.mpi"]
    for key, value in options.items():
        args += _flag(key, value)
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=wait)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(args, wait, out, err) from None
    result = subprocess.CompletedProcess(args, proc.returncode, out, err)
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, args, out, err)
    return result


@dataclass
class Measurements:
    """What an MPI run measured, beside its :class:`blockcd.History`.

    Attributes
    ----------
    compute : array (K, iters)
        Seconds per iteration of each rank (row 0 the master) spent computing.
    comm : array (K, iters)
        Seconds per iteration of each rank spent inside MPI calls (sending, receiving and waiting).
    evaluation : array (iters + 1,)
        The master's seconds per iterate for ||x - x*||^2 and f(x) - f* (not part of the method).
    bytes_up : array (iters, n)
        Bytes each worker sent in each round (values, plus indices with ``--send-indices``).
    bytes_down : array (iters,)
        Bytes the master broadcast in each round (the iterate, or IS-ASGD's point y).
    meta : dict
        ranks, problem and its options, argv, hosts, MPI library, setup and wall seconds per rank.
    """

    compute: np.ndarray
    comm: np.ndarray
    evaluation: np.ndarray
    bytes_up: np.ndarray
    bytes_down: np.ndarray
    meta: dict

    def per_iteration(self) -> dict:
        """Mean seconds per iteration: ``{'master': (compute, comm), 'workers': (compute, comm)}``."""
        return {
            "master": (float(self.compute[0].mean()), float(self.comm[0].mean())),
            "workers": (float(self.compute[1:].mean()), float(self.comm[1:].mean())),
        }


def load_measurements(path) -> Measurements:
    """Read the measurements of an MPI run: the ``mpi_*`` arrays of its history file.

    Parameters
    ----------
    path : str or Path
        A file written by ``python -m blockcd.mpi --out path`` (its
        :class:`blockcd.History` is read by ``History.load(path)``).

    Returns
    -------
    Measurements

    Raises
    ------
    ValueError
        if the file holds no MPI measurements (a simulator's history).
    """
    with np.load(Path(path), allow_pickle=False) as z:
        if "mpi_meta" not in z.files:
            raise ValueError(f"{path} holds no MPI measurements (was it written by blockcd.mpi?)")
        if "mpi_messages" in z.files:
            raise ValueError(f"{path} is an asynchronous run, with no rounds to time: its per-worker counters are "
                             "the arrays mpi_messages, mpi_up, mpi_compute and mpi_comm of np.load(path), its "
                             "arrivals History.load(path).times")
        return Measurements(
            compute=z["mpi_compute"], comm=z["mpi_comm"], evaluation=z["mpi_eval"],
            bytes_up=z["mpi_up"], bytes_down=z["mpi_down"], meta=json.loads(str(z["mpi_meta"])),
        )


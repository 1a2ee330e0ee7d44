"""The book's methods on MPI: one master rank, n = K - 1 worker ranks, real messages.

Run it as ``mpiexec -n K python -m blockcd.mpi --method isega --m 40 --tau 10
--iters 200 --out run.npz`` (chapter 10, "Running on a real cluster").  Rank 0
is the master, ranks 1..K-1 are the workers 0..n-1 of the simulator.  Every
method of :func:`blockcd.run` runs with the same arguments and, for the same
problem and seed, the same iterates up to the order of floating-point sums.

What each rank does:

* **Data.**  Every rank builds the problem from the command line (a seeded
  synthetic problem, a bundled data set or a LIBSVM file); a worker keeps only
  its own rows and drops the rest, so no data travel.  The master keeps the
  whole problem for one purpose only, *evaluation*: x*, f(x*), and f(x^k) for
  the history's ``gap``.  That work is timed apart from the method's own.
* **Messages.**  Each round the master broadcasts the iterate (IS-ASGD: the
  point y) and each worker sends the values of its tau blocks of
  ``g_i`` (ISEGA, IS-SAGA: of ``g_i - h_i``), unscaled; the master applies
  m/(tau n).  Block indices are *not* sent: worker i's blocks at iteration k
  are a function of (seed, i, k) alone, which the worker evaluates with
  :meth:`blockcd.blocks.BlockSampler.worker_blocks` and the master, for all
  workers in one draw, with :meth:`~blockcd.blocks.BlockSampler.masks`.
  ``--send-indices`` sends them instead, packed in ceil(log2 m) bits each
  (:func:`pack_indices`), and counts those bytes too.  IBGD's worker sends
  its whole gradient or no message at all; the master regenerates who sends.
  ``--reg l1:W`` (or ``l2norm:W``) gives the problem a regulariser, whose prox
  the master applies (ISEGA).
* **Counting.**  Every message is counted as it is sent (bytes up per worker
  and per round, bytes down per round), and each rank splits its wall time into
  compute and communication (time inside MPI calls, which includes waiting for
  the slowest peer).  The master writes a :class:`blockcd.History` file
  (``History.load`` reads it) whose extra ``mpi_*`` arrays hold the
  measurements (:func:`load_measurements`).
* **Your own method.**  ``--method package.module:Name`` runs a rule of yours
  (:func:`load_method`): every rank imports the module (installed, or on
  ``PYTHONPATH``) and runs the rule as the simulator does; a rule that chooses
  its own blocks (``own_blocks``) sends their indices with its values, and the
  master counts both.
* **Faults.**  Arguments are checked on every rank, identically, before any
  message; a rank that raises prints its rank and the error and aborts the job
  (``MPI_Abort``, non-zero exit); ``--timeout`` aborts a job whose iteration
  stalls.

The rank programs are ``blockcd.mpi.ranks`` (their command line ``blockcd.mpi.cli``, their
messages ``blockcd.mpi.wire``); they run the update rules of
:mod:`blockcd.rules` with each worker's own oracle (``problem.worker(i)``), as
the per-worker reference does.  Importing this package does not import
``mpi4py``; only the ranks started by ``mpiexec`` do.  The helpers :func:`mpiexec`, :func:`launch`,
:func:`build_problem` and :func:`load_measurements` run in an ordinary process
(a notebook, a test).
"""

from .cli import EXIT_FAILED, EXIT_TIMEOUT, EXIT_USAGE, PROBLEMS, UsageError, build_problem, worker_rows
from .launch import Measurements, launch, load_measurements, mpiexec
from .ranks import main
from .straggler import compare as compare_straggler
from .usermethod import load_method
from .wire import pack_indices, unpack_indices

__all__ = [
    "EXIT_FAILED",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "PROBLEMS",
    "Measurements",
    "UsageError",
    "build_problem",
    "compare_straggler",
    "launch",
    "load_measurements",
    "load_method",
    "main",
    "mpiexec",
    "pack_indices",
    "unpack_indices",
    "worker_rows",
]

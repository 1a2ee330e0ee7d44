"""What the theory predicts: omega, expected smoothness, step sizes, rates, iteration counts.

Formulas of the book (chapters 3-9), evaluated on a :class:`~blockcd.problems.Problem`
or on plain numbers.  Nothing here runs a method.

Conventions.  ``expected_smoothness(problem, method, m, tau)`` is the constant
:math:`\\mathcal{L}(\\tau)` that sets the method's theoretical step:

============  ==========================================================  ==================
method        :math:`\\mathcal{L}(\\tau)`                                   step
============  ==========================================================  ==================
ibcd          L + omega L_max / n                                         1 / (2 L(tau))
ibgd          L + omega L_max / n                                         1 / (2 L(tau))
is-sgd        L + (m/tau) L_loc(b) / n                                    1 / (2 L(tau))
isega         L + 6 omega L_max / n                                       1 / L(tau)
is-saga       L + (6 + 36 omega) L_loc(b) / n                             1 / L(tau)
is-asgd       rho(tau) L,  rho = 1 + (omega + (m/tau) rho_b) rho0 / n     eta = 1 / L(tau)
isaga-l.      L_s (1 + 4 m / (tau n))                                     1 / L(tau)
isaga-s.      L_s (1 + 4 m / (tau n))                                     1 / L(tau)
is-sgd-async  L_max (1 + 2 m / (tau n)), the paper's Theorem 9            1 / (2 L(tau))
============  ==========================================================  ==================

with omega = m/tau - 1 and L_loc(b) the largest local expected smoothness of a
b-minibatch (L_s at b = 1); for IS-ASGD rho_b is the local variance constant of
its b-minibatch gradients (0 without ``batch``, :func:`minibatch_growth`).  IBGD (each worker sends its whole gradient with
probability q = tau/m, rescaled by 1/q) has IBCD's constants: its sparsifier
(1/q) b_i g_i has the same variance omega ||g_i||^2 with omega = 1/q - 1, so
the key lemma and IBCD's proof hold word for word.

``isaga-local`` (the paper's distributed ISAGA) takes its constants from the
paper's Theorem 5 (one row per worker and iteration; L_s = max_ij L_ij; under
its Assumption 2, interpolation): with q = tau/m, a paper step gamma_p <=
1/(L_s (3/n + q)) is q gamma_p in the book's units, and the book takes
gamma_p = 1/(L_s (4/n + q)), which at q = 1/n is the step n/(5 L_s) of the
paper's Corollary 4.  See :func:`isaga_local_constants`.

``isaga-shared`` (the paper's shared-data ISAGA, Algorithm 4: every worker
reads all N functions f_j, n distinct of them per round) takes the same step
from the paper's Theorem 2 (L_s = max_j L_j, one constant for every f_j),
which needs no interpolation; at q = 1/n it is Corollary 2's n/(5 L_s).  See
:func:`isaga_shared_constants`.  The constants 6 and 36 come from Young's
inequality in the book's proofs and are loose (chapter 6).  IS-SAGA's step is
the theorem's own, 1/(L + (6 + 36 omega) L_loc(b)/n), not its simpler
corollary form 1/(L + 36 (m/tau) L_loc(b)/n): at tau = m (dense SAGA) the two
differ by up to 6 times, and the corollary form would handicap the baseline.

Without convexity (``problem.convex`` False, :func:`blockcd.problems.nonconvex`)
only IS-SGD has a theory here, the paper's Theorem 7 and Corollary 6: its step
for a horizon t (:func:`nonconvex_step`), the paper's bound on
E||grad f(x-hat_t)||^2 (:func:`paper_nonconvex_bound`), the book's
(:func:`nonconvex_bound`), and the tau past which a larger tau does not help
(:func:`nonconvex_threshold`).  The constants of convex theory
(:func:`expected_smoothness` and the step sizes built from it) raise on such a
problem.

Each method's theory is one row of :data:`blockcd.theory.rows.ROWS` (:mod:`blockcd.theory.rows`: its
L(tau) of the table above, step factor, rate, neighbourhood, the start of its
Lyapunov function, and the paper's step), keyed by the registry's names; the
functions below look the row up and never branch on a method's name.  A method
without a row (one registered without ``theory=``, :func:`blockcd.registry.register`)
raises :class:`MissingTheory` (a ``ValueError``) naming the method and what is
missing: run it with an explicit ``step=``.

One module a job, in the order they build on each other: ``constants`` (omega, the
key lemma's variance, IS-ASGD's strong growth rho and the noise at the optimum),
``rows`` (each method's formulas, one row a method), ``steps`` (L(tau) and the steps
the theory allows: the constant step of every method, IS-ASGD's parameters at its step, IS-SGD's
decreasing schedule and the weights of its average), ``rates`` (what a step
guarantees: the contraction per iteration, the neighbourhood, the iterations to an
accuracy and their ratio to the dense count, the m/n rule's knee, IS-ASGD's
saturation, the time-optimal tau, IS-SGD's bound with decreasing steps),
``coordinate_descent`` (its sampling, per-block steps and rate), ``nonconvex`` (IS-SGD
without convexity) and ``paper`` (the paper's own steps, iteration counts, thresholds
and bounds as it states them, in the book's units); every name is available here.
"""

from __future__ import annotations

from . import constants, coordinate_descent, rows  # noqa: F401 - rows: the table, blockcd.theory.rows
from .constants import (
    METHODS,
    aggregation_variance,
    coverage,
    gradient_noise,
    index_bits,
    local_variance_star,
    minibatch_growth,
    omega,
    rho,
    strong_growth_exact,
)
from .coordinate_descent import cd_probabilities, cd_rate, cd_steps
from .nonconvex import local_variance_bound, nonconvex_bound, nonconvex_step, nonconvex_threshold
from .paper import (
    paper_decreasing_schedule,
    paper_iterations,
    paper_nonconvex_bound,
    paper_saturation,
    paper_step,
)
from .rates import (
    asgd_saturation,
    decreasing_bound,
    iteration_factor,
    knee,
    neighbourhood,
    predicted_iterations,
    predicted_ratio,
    rate,
    time_optimal_tau,
)
from .rows import ROWS, MissingTheory, isaga_local_constants, isaga_shared_constants
from .steps import asgd_parameters, average_weights, decreasing_schedule, expected_smoothness, step_size

# The data constants are bound here rather than imported, so that their doc comments (#:) reach
# the API reference, which reads them from this file.
#: constants of the Lyapunov proofs (chapter 6); loose, see the package docstring
ISEGA_C = constants.ISEGA_C
#: IS-SAGA's constant is ISSAGA_C0 + ISSAGA_C * omega, 6 at tau = m, below 36 m/tau at every tau
ISSAGA_C0 = constants.ISSAGA_C0
ISSAGA_C = constants.ISSAGA_C
#: the samplings of coordinate descent (``'cd'``), the same blocks on every worker, uniform or by importance
CD_SAMPLINGS = coordinate_descent.CD_SAMPLINGS

__all__ = [
    "CD_SAMPLINGS",
    "ISEGA_C",
    "ISSAGA_C",
    "ISSAGA_C0",
    "METHODS",
    "ROWS",
    "MissingTheory",
    "aggregation_variance",
    "asgd_parameters",
    "asgd_saturation",
    "average_weights",
    "cd_probabilities",
    "cd_rate",
    "cd_steps",
    "coverage",
    "decreasing_bound",
    "decreasing_schedule",
    "expected_smoothness",
    "gradient_noise",
    "index_bits",
    "isaga_local_constants",
    "isaga_shared_constants",
    "iteration_factor",
    "knee",
    "local_variance_bound",
    "local_variance_star",
    "minibatch_growth",
    "neighbourhood",
    "nonconvex_bound",
    "nonconvex_step",
    "nonconvex_threshold",
    "omega",
    "paper_decreasing_schedule",
    "paper_iterations",
    "paper_nonconvex_bound",
    "paper_saturation",
    "paper_step",
    "predicted_iterations",
    "predicted_ratio",
    "rate",
    "rho",
    "step_size",
    "strong_growth_exact",
    "time_optimal_tau",
]

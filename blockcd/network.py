"""What a round costs in time: link models, accounting rules and named presets.

Chapter 9 turns iteration counts into wall-clock time.  One round of the
master/worker template costs

    T = T_compute(tau) / n + alpha + beta * (numbers received by the master),

with ``alpha`` the latency of one message and ``beta`` the time to move one
number (bits per number / bandwidth).  A worker that sends tau of m blocks
needs only their partial derivatives: of its gradient's cost, a share
``compute_fixed`` (rho) is paid whatever tau (for a generalised linear model,
the margins A_i x: rho = 1/2) and the rest falls with tau,
T_compute(tau) = T_compute (rho + (1 - rho) tau/m); ``compute_fixed=1`` (the
default) is a worker that computes its whole gradient.  This module evaluates that model under
two accounting rules, gives the iteration count of IBCD from the theory, and
holds named presets of links (1 to 100 Gbit/s, latency 1 microsecond to
1 millisecond) and model sizes (10^5 to 10^9 parameters).  It runs no method
and knows no data; the iteration constants come from :mod:`blockcd.theory`.

Accounting rules
----------------
``'parameter-server'``
    Every worker sends its q = tau d / m numbers to the master, whose incoming
    link carries them one after another (Li et al., 2014):
    T = T_compute/n + alpha + beta n q.  Dense: n d numbers; tau = m/n: d.
``'all-reduce'``
    No master.  The dense method uses a bandwidth-optimal ring all-reduce
    (Patarasuk and Yuan, 2009): T = T_compute/n + 2 (n-1) alpha + 2 (n-1)/n d beta.
    Workers that send different blocks cannot add their messages on the way,
    so tau < m uses a ring all-gather of the n sparse messages:
    T = T_compute/n + (n-1) alpha + (n-1) q beta.
"""

from __future__ import annotations

import math

from ._validate import check_choice, check_float, check_int

ACCOUNTING = ("parameter-server", "all-reduce")

#: named links, with bandwidth in bit/s and one-message latency in seconds
LINKS: dict[str, dict[str, float]] = {
    "1 Gbit/s Ethernet, 1 ms": {"bandwidth": 1e9, "latency": 1e-3},
    "10 Gbit/s cloud network, 100 us": {"bandwidth": 10e9, "latency": 100e-6},
    "25 Gbit/s data-centre Ethernet, 10 us": {"bandwidth": 25e9, "latency": 10e-6},
    "100 Gbit/s InfiniBand, 1 us": {"bandwidth": 100e9, "latency": 1e-6},
}

#: named model sizes (number of parameters d)
MODELS: dict[str, int] = {
    "linear model, 10^5": 100_000,
    "ResNet-50, 2.6 x 10^7": 25_600_000,
    "BERT-large, 3.4 x 10^8": 340_000_000,
    "10^9-parameter transformer": 1_000_000_000,
}

#: bits per number sent (single precision)
BITS_PER_NUMBER = 32

#: seconds of one full gradient on one machine, per parameter (about 6 flops per
#: parameter and sample (forward and backward pass), a batch of 1000 samples, a
#: device sustaining 6 x 10^11 flop/s); T_compute = COMPUTE_PER_PARAMETER * d
COMPUTE_PER_PARAMETER = 1e-8


def _link(bandwidth, latency, bits):
    bandwidth = check_float("bandwidth", bandwidth, positive=True)
    latency = check_float("latency", latency, nonnegative=True)
    bits = check_int("bits_per_number", bits, 1)
    return bandwidth, latency, bits / bandwidth


def numbers_received(n: int, d: int, m: int, tau: int) -> float:
    """Numbers the master receives per round when each worker sends tau of m blocks.

    n tau d / m (blocks of equal size; chapter 9).  Dense (tau = m): n d;
    tau = m/n: d, whatever n.
    """
    n = check_int("n", n, 1)
    d = check_int("d", d, 1)
    m = check_int("m", m, 1, d)
    tau = check_int("tau", tau, 1, m)
    return n * tau * d / m


def _compute(compute, compute_fixed, tau, m) -> float:
    """T_compute(tau) = T_compute (rho + (1 - rho) tau/m), rho = compute_fixed in [0, 1]."""
    compute = check_float("compute", compute, nonnegative=True)
    rho = check_float("compute_fixed", compute_fixed, nonnegative=True, hi=1.0)
    return compute * (rho + (1.0 - rho) * tau / m)


def round_time(n: int, d: int, m: int, tau: int, *, bandwidth: float, latency: float,
               compute: float = 0.0, accounting: str = "parameter-server",
               bits_per_number: int = BITS_PER_NUMBER, compute_fixed: float = 1.0) -> float:
    r"""Seconds per round, T = T_compute(tau)/n + alpha + beta (numbers received by the master).

    Parameters
    ----------
    n : int >= 1
        Workers.
    d : int >= 1
        Parameters of the model.
    m : int, 1 <= m <= d
        Blocks.
    tau : int, 1 <= tau <= m
        Blocks each worker sends per round.
    bandwidth : float > 0
        Link bandwidth in bit/s (``1 / beta`` per bit).
    latency : float >= 0
        Latency ``alpha`` of one message, in seconds.
    compute : float >= 0
        T_compute: seconds one machine needs for a full gradient; n workers
        share it, T_compute / n each.
    accounting : {'parameter-server', 'all-reduce'}
        See the module docstring.  Parameter server:
        :math:`T = T_c/n + \alpha + \beta\, n \tau d/m`.  All-reduce: ring
        all-reduce when tau = m, ring all-gather of the sparse messages otherwise.
    bits_per_number : int >= 1
        32 for single precision.  The block choice travels as a seed, so no
        index bits are counted (chapter 2).
    compute_fixed : float in [0, 1]
        Share rho of T_compute paid whatever tau; the rest scales with tau/m
        (a worker computes only the partial derivatives it sends).  1: the
        whole gradient every round; 1/2: a generalised linear model.

    Returns
    -------
    float
        Seconds per round.
    """
    accounting = check_choice("accounting", accounting, ACCOUNTING)
    bandwidth, alpha, beta = _link(bandwidth, latency, bits_per_number)
    recv = numbers_received(n, d, m, tau)
    compute = _compute(compute, compute_fixed, tau, m)
    q = recv / n
    if accounting == "parameter-server":
        return compute / n + alpha + beta * recv
    if tau == m:
        return compute / n + 2 * (n - 1) * alpha + 2 * (n - 1) / n * d * beta
    return compute / n + (n - 1) * alpha + (n - 1) * q * beta


def iterations(kappa: float, r: float, n: int, m: int, tau: int, eps: float = 1e-6) -> float:
    r"""IBCD's iterations to reach E||x - x*||^2 <= eps ||x^0 - x*||^2 (interpolating case).

    K(tau) = 2 kappa (1 + (m/tau - 1) r / n) log(1/eps): the rate
    1 - gamma mu with the theory's step gamma = 1 / (2 L(tau)),
    L(tau) = L + omega L_max / n (chapter 4), r = L_max / L.
    """
    kappa = check_float("kappa", kappa, positive=True)
    r = check_float("r", r, positive=True)
    n = check_int("n", n, 1)
    m = check_int("m", m, 1)
    tau = check_int("tau", tau, 1, m)
    eps = check_float("eps", eps, positive=True, hi=1.0)
    if not 1.0 <= r <= n:
        raise ValueError(f"r must be in [1, n] = [1, {n}] (L <= L_max <= n L for convex f_i), got {r}")
    return 2.0 * kappa * (1.0 + (m / tau - 1.0) * r / n) * math.log(1.0 / eps)


def time_to_accuracy(n: int, d: int, m: int, tau: int, *, bandwidth: float, latency: float,
                     kappa: float, r: float, eps: float = 1e-6, compute: float = 0.0,
                     accounting: str = "parameter-server",
                     bits_per_number: int = BITS_PER_NUMBER, compute_fixed: float = 1.0) -> float:
    """Seconds to accuracy eps: K(tau) T(tau), from :func:`iterations` and :func:`round_time`."""
    K = iterations(kappa, r, n, m, tau, eps)
    return K * round_time(n, d, m, tau, bandwidth=bandwidth, latency=latency, compute=compute,
                          accounting=accounting, bits_per_number=bits_per_number, compute_fixed=compute_fixed)


def round_cost_coefficients(n: int, d: int, m: int, *, bandwidth: float, latency: float,
                            compute: float = 0.0, accounting: str = "parameter-server",
                            bits_per_number: int = BITS_PER_NUMBER,
                            compute_fixed: float = 1.0) -> tuple[float, float]:
    """(c0, c1) with round time T(tau) = c0 + c1 tau (chapter 9).

    Parameter server: c0 = rho T_compute/n + alpha (paid whatever tau),
    c1 = beta n d / m + (1 - rho) T_compute/(n m) (one more block from every
    worker, and its partial derivatives).  All-reduce: the all-gather branch
    (tau < m), c0 = rho T_compute/n + (n-1) alpha, c1 = (n-1) beta d / m +
    (1 - rho) T_compute/(n m); the dense ring all-reduce at tau = m is cheaper
    than this line and is not on it.  rho = ``compute_fixed`` (see
    :func:`round_time`).  Feed (c0, c1) to :func:`blockcd.theory.time_optimal_tau`.
    """
    n = check_int("n", n, 1)
    d = check_int("d", d, 1)
    m = check_int("m", m, 1, d)
    accounting = check_choice("accounting", accounting, ACCOUNTING)
    bandwidth, alpha, beta = _link(bandwidth, latency, bits_per_number)
    fixed = _compute(compute, compute_fixed, 0, m) / n
    per_block = (_compute(compute, compute_fixed, m, m) / n - fixed) / m
    if accounting == "parameter-server":
        return fixed + alpha, beta * n * d / m + per_block
    return fixed + (n - 1) * alpha, (n - 1) * beta * d / m + per_block


def optimal_tau(n: int, d: int, m: int, *, bandwidth: float, latency: float, r: float,
                compute: float = 0.0, accounting: str = "parameter-server",
                bits_per_number: int = BITS_PER_NUMBER, compute_fixed: float = 1.0) -> float:
    r"""The time-optimal tau* = sqrt(b c0 / (a c1)) for IBCD, clipped to [1, m] (chapter 9).

    With K(tau) proportional to a + b/tau (a = 1 - r/n, b = m r / n in units
    of L) and T(tau) = c0 + c1 tau from :func:`round_cost_coefficients`:

    .. math:: \tau^\star = \frac{m}{n}\sqrt{\frac{r}{1 - r/n}\,\frac{c_0}{\beta d}}
              \quad\text{(parameter server)}.

    Real-valued; the best integer tau is the floor or the ceiling (K T is
    convex in tau).  Uses :func:`blockcd.theory.time_optimal_tau`.
    """
    from .theory import time_optimal_tau

    r = check_float("r", r, positive=True)
    n = check_int("n", n, 1)
    if not 1.0 <= r <= n:
        raise ValueError(f"r must be in [1, n] = [1, {n}] (L <= L_max <= n L for convex f_i), got {r}")
    c0, c1 = round_cost_coefficients(n, d, m, bandwidth=bandwidth, latency=latency, compute=compute,
                                     accounting=accounting, bits_per_number=bits_per_number,
                                     compute_fixed=compute_fixed)
    if c1 == 0.0:  # one worker and no master: nothing is sent, send everything
        return float(m)
    return time_optimal_tau(1.0, r, n, m, c0, c1)


def round_segments(n: int, d: int, m: int, tau: int, *, bandwidth: float, latency: float,
                   compute: float = 0.0, bits_per_number: int = BITS_PER_NUMBER,
                   compute_fixed: float = 1.0, broadcast: bool = False) -> list[tuple[str, float]]:
    r"""One parameter-server round as consecutive segments (name, seconds), in the order they happen.

    The segments of :func:`round_time` with ``accounting='parameter-server'``
    (chapter 9): the workers compute in parallel, :math:`T_{\text{compute}}(\tau)/n`
    (``'compute'``); the first message reaches the master after the latency
    :math:`\alpha` (``'latency'``); the master's incoming link then carries the
    n workers' messages of :math:`\tau d/m` numbers one after another,
    :math:`\beta\tau d/m` each (``'worker 0'`` to ``'worker n-1'``).  They add up to

    .. math:: T(\tau) = \frac{T_{\text{compute}}(\tau)}{n} + \alpha + \beta\,\frac{n\tau d}{m}
              = c_0 + c_1\tau ,

    :func:`round_time` exactly.  With ``broadcast=True`` one more segment,
    ``'broadcast'``, of :math:`\alpha + \beta d` follows: the master sends the
    new iterate once (a tree or multicast), which the book's round time leaves
    out (chapter 9, exercise on the down-link).

    Parameters
    ----------
    n, d, m, tau, bandwidth, latency, compute, bits_per_number, compute_fixed
        As in :func:`round_time`.
    broadcast : bool
        Append the broadcast of the iterate (default False).

    Returns
    -------
    list of (str, float)
        Segment names and durations in seconds, in time order.
    """
    if not isinstance(broadcast, (bool,)):
        raise TypeError(f"broadcast must be True or False, got {type(broadcast).__name__} {broadcast!r}")
    recv = numbers_received(n, d, m, tau)
    _, alpha, beta = _link(bandwidth, latency, bits_per_number)
    segments = [("compute", _compute(compute, compute_fixed, tau, m) / n), ("latency", alpha)]
    segments += [(f"worker {i}", beta * recv / n) for i in range(n)]
    if broadcast:
        segments.append(("broadcast", alpha + beta * d))
    return segments


def preset_optima(n: int, m: int, *, r: float, kappa: float = 10.0, eps: float = 1e-6,
                  compute_per_parameter: float = COMPUTE_PER_PARAMETER,
                  accounting: str = "parameter-server") -> list[dict]:
    r"""The time-optimal tau for every link of :data:`LINKS` and model of :data:`MODELS` (chapter 9).

    For each pair, with :math:`T_{\text{compute}}` = ``compute_per_parameter`` :math:`\cdot\, d`:
    the ratio :math:`c_0/(\beta d)` of the round's fixed cost to the time the
    master needs to receive one gradient, the closed form :math:`\tau^\star` of
    :func:`optimal_tau`,

    .. math:: \frac{\tau^\star}{m/n} = \sqrt{\frac{r}{1 - r/n}\cdot\frac{c_0}{\beta d}}
              \quad\text{(parameter server, clipped to } [1, m]\text{)},

    and the brute-force integer minimiser of :func:`time_to_accuracy` over
    :math:`\tau = 1, \dots, m`, which part 3 of the chapter's proposition
    places at :math:`\lfloor\tau^\star\rfloor` or :math:`\lceil\tau^\star\rceil`.

    Parameters
    ----------
    n : int >= 1
        Workers.
    m : int, 1 <= m <= the smallest preset model size
        Blocks.
    r : float in [1, n]
        :math:`L_{\max}/L`.
    kappa : float > 0
        Condition number (scales every time alike; the minimiser does not depend on it).
    eps : float in (0, 1]
        Accuracy of :func:`iterations`.
    compute_per_parameter : float >= 0
        Seconds of one full gradient per parameter.
    accounting : {'parameter-server', 'all-reduce'}
        See the module docstring.

    Returns
    -------
    list of dict
        One per (link, model), links outer: ``link``, ``model``, ``d``,
        ``bandwidth``, ``fixed_over_gradient`` (:math:`c_0/(\beta d)`),
        ``tau_star`` (real), ``ratio`` (:math:`\tau^\star/(m/n)`) and ``brute``
        (the best integer tau).
    """
    n = check_int("n", n, 1)
    m = check_int("m", m, 1, min(MODELS.values()))
    cpp = check_float("compute_per_parameter", compute_per_parameter, nonnegative=True)
    taus = range(1, m + 1)
    rows = []
    for lname, lk in LINKS.items():
        for mname, d in MODELS.items():
            comp = cpp * d
            c0, _ = round_cost_coefficients(n, d, m, compute=comp, accounting=accounting, **lk)
            beta_d = BITS_PER_NUMBER / lk["bandwidth"] * d
            star = optimal_tau(n, d, m, r=r, compute=comp, accounting=accounting, **lk)
            times = [time_to_accuracy(n, d, m, t, kappa=kappa, r=r, eps=eps, compute=comp,
                                      accounting=accounting, **lk) for t in taus]
            rows.append({"link": lname, "model": mname, "d": d, "bandwidth": lk["bandwidth"],
                         "fixed_over_gradient": c0 / beta_d, "tau_star": star, "ratio": star / (m / n),
                         "brute": 1 + min(range(m), key=times.__getitem__)})
    return rows

"""Numbers for the ring of pipeline stages: bounds, thresholds and wire times, standard library only.

The numeric side of :mod:`models.analytic`: functions that take plain numbers (and, where a queue
depth may be many values, a list or a NumPy array) in SI units (seconds, bytes, bits per second) and
raise :class:`ValueError` naming the bad parameter.  They need only the standard library, so the same
code runs in the reader's browser (Pyodide has no NumPy or SymPy there); NumPy is imported only when a
NumPy array is passed in.  Sums of stage times use ``math.fsum`` (correctly rounded), so a result does
not depend on the Python version's ``sum``.  Each formula is derived in
:mod:`models.analytic.symbolic`, and ``tests/test_analytic.py`` checks the two agree.

Units: times in seconds, sizes in bytes and ``bandwidth_bps`` in bits per second (as link speeds are
quoted).  Each conversion is commented.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Union

from .. import framing
from ..checks import finite as _finite
from ..checks import non_negative as _non_negative
from ..checks import positive as _positive

# The wire facts (header bytes, the MSS rule) live in models.framing; they
# are re-exported here because the formulas speak of them.
from ..framing import (
    FRAME_OVERHEAD_BYTES,
    ISCSI_HEADER_BYTES,
    MAC_BYTES,
    TCPIP_BYTES,
)

__all__ = [
    "TCPIP_BYTES",
    "MAC_BYTES",
    "FRAME_OVERHEAD_BYTES",
    "ISCSI_HEADER_BYTES",
    "RING4",
    "RING8",
    "PLACEMENTS",
    "mss",
    "framing_efficiency",
    "wire_time",
    "frames",
    "w1_lower_bound",
    "w2_lower_bound",
    "rtt_min",
    "tpt_min",
    "knee_qd",
    "iops_bound",
    "iops_bandwidth_cap",
    "qd_max_for_response_time",
    "responses_per_packet",
    "tpt_min_eight_stage",
    "qd_min_cpu",
    "qd_min_network",
    "qd_max_stall",
    "bottleneck_inequality",
    "qd_min_bottleneck",
    "page_time",
]

if TYPE_CHECKING:  # annotations only
    import numpy as np

Number = int | float
ArrayLike = Union[Number, "np.ndarray", Iterable[Number]]

#: The four-stage ring of the simplified model, in the order an operation meets the stages.
RING4 = ("W1", "SP", "W2", "CP")
#: The eight-stage ring with soft-interrupt and kworker stages on both hosts.
RING8 = ("W1", "SI", "SP", "SK", "W2", "CI", "CP", "CK")

#: How the server's soft-interrupt (SI), thread (SP) and kworker (SK) stages share CPUs in the eight-stage
#: ring: each group of stages runs serially on one CPU, so its times add up into one stage.
PLACEMENTS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "separate": (("SI",), ("SP",), ("SK",)),  # three CPUs: each stage on its own
    "sirq-same-cpu": (("SI", "SP"), ("SK",)),  # network soft interrupt pinned with the thread
    "uniprocessor": (("SI", "SP", "SK"),),  # one server CPU does all three
}


# --------------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------------


def _stage_values(stage_times: Mapping[str, float] | Iterable[float]) -> list[float]:
    if isinstance(stage_times, Mapping):
        items = [(f"stage_times[{k!r}]", t) for k, t in stage_times.items()]
    else:
        items = [(f"stage_times[{i}]", t) for i, t in enumerate(stage_times)]
    if not items:
        raise ValueError("stage_times must name at least one stage")
    return [_positive(name, t) for name, t in items]


def _is_numpy_array(value: object) -> bool:
    """True for a NumPy array of one or more dimensions (checked without
    importing NumPy)."""
    return type(value).__module__ == "numpy" and getattr(value, "ndim", 0) > 0


def _qd_value(qd: Any) -> float:
    q = _finite("qd", qd)
    if q < 1:
        raise ValueError(f"qd must be at least 1 (one operation in flight), got {qd!r}")
    return q


def _over_qd(fn, qd: ArrayLike):
    """Apply ``fn`` to each queue depth: a float for a number (or a 0-d
    array), a NumPy array for a NumPy array, a list for any other
    sequence."""
    if _is_numpy_array(qd):
        import numpy as np

        arr = np.asarray(qd, dtype=float)
        values = [fn(_qd_value(q)) for q in arr.ravel().tolist()]
        return np.array(values).reshape(arr.shape)
    if (
        getattr(qd, "ndim", None) == 0
        or isinstance(qd, (str, bytes))
        or not isinstance(qd, Iterable)
    ):
        return float(fn(_qd_value(qd)))
    return [fn(_qd_value(q)) for q in qd]


# --------------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------------


def mss(mtu: int = 1500) -> int:
    """TCP payload bytes per full segment: ``min(MTU, 65535) - 52``
    (``models.framing.mss``, where the rule lives)."""
    return framing.mss(framing.check_mtu(mtu))


def framing_efficiency(mtu: int = 1500) -> float:
    """Best-case payload share of the wire, full segments only: ``(MTU - 52) / (MTU + 38)``.

    >>> round(framing_efficiency(1500), 4), round(framing_efficiency(9000), 4)
    (0.9415, 0.99)
    """
    m = framing.check_mtu(mtu)
    return framing.mss(m) / (min(m, framing.IPV4_MAX_PACKET) + framing.MAC_BYTES)


def frames(payload_bytes: int, mtu: int = 1500) -> int:
    """Number of segments a message of ``payload_bytes`` needs at this MTU (a 0-byte message: one bare ACK)."""
    p = _non_negative("payload_bytes", payload_bytes)
    if p != int(p):
        raise ValueError(f"payload_bytes must be a whole number of bytes, got {payload_bytes!r}")
    return framing.frames(int(p), framing.check_mtu(mtu))


def wire_time(payload_bytes: int, bandwidth_bps: float, mtu: int = 1500) -> float:
    """Seconds one message spends on the wire: its payload plus 90 bytes of overhead per segment.

    The message is cut into segments of at most ``MSS = MTU - 52`` payload bytes; each segment carries
    52 bytes of TCP/IP headers and 38 bytes of Ethernet framing.

    >>> wire_time(48, 1e9), wire_time(560, 1e9)
    (1.104e-06, 5.2e-06)
    """
    bw = _positive("bandwidth_bps", bandwidth_bps)
    frames(payload_bytes, mtu)  # the checks, with this module's messages
    return framing.wire_time(int(payload_bytes), bw, int(mtu))  # the rule, in one place


def w1_lower_bound(
    bandwidth_bps: float, mtu: int = 9000, header_bytes: int = ISCSI_HEADER_BYTES
) -> float:
    """Least request wire time if requests were packed into full frames: ``H / (eff * BW)`` seconds.

    The source's 388 ns is this at MTU 9000 and 1 Gb/s.
    """
    bw_bytes = _positive("bandwidth_bps", bandwidth_bps) / 8  # bits/s -> bytes/s
    return _non_negative("header_bytes", header_bytes) / (framing_efficiency(mtu) * bw_bytes)


def w2_lower_bound(
    iosize: int, bandwidth_bps: float, mtu: int = 9000, header_bytes: int = ISCSI_HEADER_BYTES
) -> float:
    """Least response wire time with full frames: ``(IOSIZE + H) / (eff * BW)`` seconds."""
    bw_bytes = _positive("bandwidth_bps", bandwidth_bps) / 8  # bits/s -> bytes/s
    size = _non_negative("iosize", iosize) + _non_negative("header_bytes", header_bytes)
    return size / (framing_efficiency(mtu) * bw_bytes)


def rtt_min(stage_times: Mapping[str, float] | Iterable[float]) -> float:
    """``RTTmin`` in seconds: the sum of the stage processing times."""
    return math.fsum(_stage_values(stage_times))


def tpt_min(stage_times: Mapping[str, float] | Iterable[float]) -> float:
    """``TPTmin`` in seconds: the largest stage processing time (the bottleneck)."""
    return max(_stage_values(stage_times))


def knee_qd(stage_times: Mapping[str, float] | Iterable[float], latency: float = 0.0) -> float:
    """Queue depth where the two asymptotes of :func:`iops_bound` meet: ``(RTTmin + latency) / TPTmin``."""
    t = _stage_values(stage_times)
    return (math.fsum(t) + _non_negative("latency", latency)) / max(t)


def iops_bound(
    qd: ArrayLike, stage_times: Mapping[str, float] | Iterable[float], latency: float = 0.0
):
    """Asymptotic upper bound on IOPS for a closed ring: ``min(QD / (RTTmin + latency), 1 / TPTmin)``.

    This is Denning & Buzen's (1978) operational bound for a closed network: with ``QD`` customers and
    total demand ``RTTmin`` no more than ``QD/RTTmin`` complete per second (each takes at least
    ``RTTmin``), and no more than ``1/TPTmin`` pass the slowest stage.  The two lines meet at the knee
    ``QD* = RTTmin / TPTmin`` (:func:`knee_qd`).

    Parameters
    ----------
    qd : number or array
        Queue depth(s), at least 1.
    stage_times : mapping or sequence of float
        Processing time of each stage in seconds, all positive (``{"W1": ..., "SP": ...}``).
    latency : float, optional
        Seconds every operation pays outside the stages whatever the load (propagation, say), like
        think time in operational analysis. Start latencies paid only on wake-up do **not** belong here:
        they lower the real curve below the bound near the knee without moving its ceiling.

    Returns
    -------
    float, list or numpy.ndarray
        Operations per second: a float for one queue depth, a NumPy
        array of the same shape for a NumPy array, a list for any other
        sequence.
    """
    t = _stage_values(stage_times)
    rtt = math.fsum(t) + _non_negative("latency", latency)
    ceiling = 1.0 / max(t)
    return _over_qd(lambda q: min(q / rtt, ceiling), qd)


def qd_min_cpu(cl: float, rtt_min: float, sp: float) -> float:
    """Inequality [2] as a number: the least QD that keeps the server
    thread busy, ``(CL + RTTmin) / SP``.

    The same expression ``qd_min_cpu_bound`` derives with SymPy (a test
    checks the two agree), for code that must run without SymPy, such as
    the book's live figures.  Times in seconds.
    """
    busy = _non_negative("cl", cl) + _positive("rtt_min", rtt_min)
    return busy / _positive("sp", sp)


def qd_min_network(cl: float, rtt_min: float, sl: float, w2: float) -> float:
    """Inequality [1] as a number: the least QD that keeps the response
    link busy, ``(CL + RTTmin + SL) / W2`` (``qd_min_network_bound``,
    checked equal by a test).  Times in seconds.
    """
    refill = _non_negative("cl", cl) + _positive("rtt_min", rtt_min) + _non_negative("sl", sl)
    return refill / _positive("w2", w2)


def qd_max_stall(
    sd: float, se: float, ce: float, w1: float = 0.0, w2: float = 0.0, cd: float = 0.0
) -> float:
    """The largest queue depth at which a Nagle server's delayed-ACK stall restarts itself, as a
    real number, ``1 + (W1 + W2 + SD + SE - CD) / CE`` (``qd_max_stall_expr``, checked equal by a
    test): the server's deep wake-up ``sd``, its time to the first header ``se``, the client's
    time per request ``ce``, the two paths' latencies and what waking the server adds to the
    client's ``send()`` ``cd``, seconds.  A result below 1 means the stall cannot sustain itself
    at any queue depth above 1 (a single operation always waits for the delayed ACK).

    >>> int(qd_max_stall(61e-6, 5.5e-6, 5.5e-6, 1.2e-6, 1.2e-6))  # QD 13 stalls
    13
    >>> # waking the server costs the client 11 us: two requests' time
    >>> int(qd_max_stall(61e-6, 5.5e-6, 5.5e-6, 1.2e-6, 1.2e-6, cd=11e-6))
    11
    """
    out = _non_negative("sd", sd) + _non_negative("se", se)
    out += _non_negative("w1", w1) + _non_negative("w2", w2) - _non_negative("cd", cd)
    return 1.0 + out / _positive("ce", ce)


def bottleneck_inequality(stage_times: Mapping[str, float]) -> str | None:
    """Which threshold applies to a four-stage ring: ``"[2]"`` when the
    server thread ``SP`` is the slowest stage, ``"[1]"`` when the response
    link ``W2`` is, ``None`` otherwise (neither inequality speaks of a
    slow ``W1`` or ``CP``).

    >>> bottleneck_inequality({"W1": 1e-6, "SP": 16e-6, "W2": 5e-6, "CP": 8e-6})
    '[2]'
    """
    missing = set(RING4) - set(stage_times)
    if missing:
        raise ValueError(f"stage_times: missing {sorted(missing)}")
    slowest = max(stage_times, key=lambda k: stage_times[k])
    return {"SP": "[2]", "W2": "[1]"}.get(slowest)


def qd_min_bottleneck(
    stage_times: Mapping[str, float],
    sl: float = 0.0,
    cl: float = 0.0,
    rtt_s: float | None = None,
) -> float:
    """The least QD that keeps the bottleneck of a four-stage ring busy.

    Inequality [2] (:func:`qd_min_cpu`) when the server thread ``SP`` is
    the slowest stage, inequality [1] (:func:`qd_min_network`) when the
    response link ``W2`` is; ``RTTmin`` is the sum of ``stage_times``.

    Parameters
    ----------
    stage_times : mapping
        Seconds per operation of ``W1``, ``SP``, ``W2`` and ``CP``, by
        name.
    sl, cl : float, optional
        The server's and the client's wake-up latencies, seconds.
    rtt_s : float, optional
        ``RTTmin`` in seconds, when it holds more than the four stages (a
        path latency); by default the sum of ``stage_times``.

    Raises
    ------
    ValueError
        If a stage is missing or the slowest stage is neither ``SP`` nor
        ``W2``: the two inequalities say nothing about other bottlenecks.

    Examples
    --------
    >>> t = {"W1": 1e-6, "SP": 16e-6, "W2": 5e-6, "CP": 8e-6}
    >>> round(qd_min_bottleneck(t, sl=10e-6, cl=20e-6), 6)
    3.125
    """
    which = bottleneck_inequality(stage_times)
    least = rtt_min(stage_times)
    rtt = least if rtt_s is None else _positive("rtt_s", rtt_s)
    if rtt < least * (1 - 1e-12):  # a round trip passes every stage at least once
        raise ValueError(
            f"rtt_s must be at least the sum of the stage times ({least!r} s), got {rtt_s!r}"
        )
    if which == "[2]":
        return qd_min_cpu(cl, rtt, stage_times["SP"])
    if which == "[1]":
        return qd_min_network(cl, rtt, sl, stage_times["W2"])
    slowest = max(stage_times, key=lambda k: stage_times[k])
    raise ValueError(f"the slowest stage is {slowest}; inequalities [1] and [2] need SP or W2")


def page_time(rtt_s: float, pages: float, qd: ArrayLike):
    """Wall-clock seconds per page when ``qd`` requests of ``pages`` pages
    each are in service at once and each takes ``rtt_s`` seconds:
    ``rtt_s / (pages * qd)``, Little's law with a request as the operation.

    The expression ``models.validation.latency_budget.page_time_expr()``
    derives with SymPy (a test checks the two agree), for code that must
    run without SymPy, such as chapter 8's live figure.  ``qd`` may be one
    queue depth or several (a list, or a NumPy array), as in
    :func:`iops_bound`.
    """
    r = _positive("rtt_s", rtt_s)
    p = _finite("pages", pages)
    if p < 1:
        raise ValueError(f"pages must be at least 1, got {pages!r}")
    return _over_qd(lambda q: r / (p * q), qd)


def iops_bandwidth_cap(
    iosize: int,
    bandwidth_bps: float,
    header_bytes: int = ISCSI_HEADER_BYTES,
    mtu: int | None = None,
) -> float:
    """Most operations per second a link can carry for reads of ``iosize`` bytes.

    With ``mtu=None`` this is the source's raw bound ``BW / (IOSIZE + H)`` (no framing); with an MTU the
    response's real wire time (:func:`wire_time`) is used, which is tighter.
    """
    for name, value in (("iosize", iosize), ("header_bytes", header_bytes)):
        if _non_negative(name, value) != int(value):
            raise ValueError(f"{name} must be a whole number of bytes, got {value!r}")
    size = int(iosize) + int(header_bytes)
    if mtu is None:
        bw_bytes = _positive("bandwidth_bps", bandwidth_bps) / 8  # bits/s -> bytes/s
        if size <= 0:
            raise ValueError("iosize + header_bytes must be positive")
        return bw_bytes / size
    return 1.0 / wire_time(size, bandwidth_bps, mtu)


def qd_max_for_response_time(
    ti_s: float, iosize: int, bandwidth_bps: float, header_bytes: int = ISCSI_HEADER_BYTES
) -> float:
    """Largest queue depth that can keep the response time below ``ti_s`` seconds: ``TI*BW/(IOSIZE+H)``."""
    ti = _positive("ti_s", ti_s)
    return ti * iops_bandwidth_cap(iosize, bandwidth_bps, header_bytes)


def responses_per_packet(
    iosize: int, mtu: int = 1500, header_bytes: int = ISCSI_HEADER_BYTES
) -> float:
    """How many ``IOSIZE + H`` byte responses fit in one full segment (a real number, not rounded)."""
    size = _non_negative("iosize", iosize) + _non_negative("header_bytes", header_bytes)
    if size <= 0:
        raise ValueError("iosize + header_bytes must be positive")
    return mss(mtu) / size


def tpt_min_eight_stage(stage_times: Mapping[str, float], placement: str = "separate") -> float:
    """Numeric ``TPTmin`` in seconds for the eight-stage ring (keys ``W1 SI SP SK W2 CI CP CK``)."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {sorted(PLACEMENTS)}, got {placement!r}")
    missing = set(RING8) - set(stage_times)
    if missing:
        raise ValueError(f"stage_times: missing {sorted(missing)} (need all of {RING8})")
    t = {n: _positive(f"stage_times[{n!r}]", stage_times[n]) for n in RING8}
    server = [sum(t[n] for n in g) for g in PLACEMENTS[placement]]
    return max([t[n] for n in RING8 if n not in ("SI", "SP", "SK")] + server)

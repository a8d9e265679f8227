"""Closed-form results for the ring of pipeline stages (Butterfield 2017), in SymPy and as fast numbers.

Notation follows Butterfield (2017), *iSCSI-SCST Usermode Read Performance Model*.  Every symbol is a
positive real SymPy symbol; its unit is listed in :data:`UNITS` and on the book's notation page.

Two kinds of objects live here:

* **Symbolic results** (``qd_min_network_bound()``, ``qd_min_cpu_bound()``, ``backlog_min_nagle()``, ...).
  Each is *derived* from a drain-time condition with ``sympy.solve``; none is typed in as the answer.
  The condition is built from travel times around the ring (:func:`ring_time`), so the derivation is the
  same one the book walks through.
* **Numeric functions** (``framing_efficiency``, ``wire_time``,
  ``iops_bound`` ...) that take plain numbers (and, where a queue depth
  may be many values, a list or a NumPy array) in SI units (seconds,
  bytes, bits per second) and raise :class:`ValueError` naming the bad
  parameter.

The numeric functions need only the standard library, so the same code
runs in the reader's browser (Pyodide, which has no NumPy or SymPy there):
SymPy is imported on first use of a symbol or a symbolic result, NumPy only
when a NumPy array is passed in or :func:`numeric` is called.  Sums of
stage times use ``math.fsum`` (correctly rounded), so a result does not
depend on the Python version's ``sum``.

Units: times in seconds, sizes in bytes, *symbolic* ``BW`` in bytes per second (as in the source) and
numeric ``bandwidth_bps`` in bits per second (as link speeds are quoted).  Each conversion is commented.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Union

from . import framing
from .checks import finite as _finite
from .checks import non_negative as _non_negative
from .checks import positive as _positive

__all__ = [
    "TCPIP_BYTES",
    "MAC_BYTES",
    "FRAME_OVERHEAD_BYTES",
    "ISCSI_HEADER_BYTES",
    "UNITS",
    "S",
    "RING4",
    "RING8",
    "ring_time",
    "rtt_min_expr",
    "iops_identity",
    "network_bound_condition",
    "cpu_bound_condition",
    "nagle_backlog_condition",
    "qd_min_network_bound",
    "qd_min_cpu_bound",
    "backlog_min_nagle",
    "nagle_delay_bound_fill",
    "nagle_ack_window_condition",
    "nagle_delay_bound_ack",
    "qd_max_for_response_time_expr",
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
    "responses_per_packet_expr",
    "numeric",
    "PLACEMENTS",
    "tpt_min_eight_stage_expr",
    "tpt_min_eight_stage",
    "qd_min_cpu",
    "qd_min_network",
    "bottleneck_inequality",
    "qd_min_bottleneck",
    "page_time",
]

if TYPE_CHECKING:  # annotations only: neither is imported when the module is
    import numpy as np
    import sympy as sp

Number = int | float
ArrayLike = Union[Number, "np.ndarray", Iterable[Number]]


def _sympy() -> Any:
    """SymPy, imported on first use (the numeric functions never need it)."""
    import sympy

    return sympy


# The wire facts (header bytes, the MSS rule) live in models.framing; they
# are re-exported here because the derivations speak of them.
from .framing import (  # noqa: E402
    FRAME_OVERHEAD_BYTES,
    ISCSI_HEADER_BYTES,
    MAC_BYTES,
    TCPIP_BYTES,
)

# --------------------------------------------------------------------------------------------------
# Symbols
# --------------------------------------------------------------------------------------------------

_SYMBOL_UNITS: dict[str, tuple[str, str]] = {
    # name: (unit, meaning)
    "QD": ("operations", "queue depth: operations outstanding in the ring at every instant"),
    "RTT": ("s", "round-trip time of one operation, queue waits included"),
    "RTTmin": ("s", "round-trip time with no queue waits: the sum of the stage processing times"),
    "TPT": ("s", "throughput time: mean interval between operation completions, 1/IOPS"),
    "TPTmin": ("s", "smallest possible TPT: the largest stage processing time"),
    "IOPS": ("1/s", "operations completed per second"),
    "IOSIZE": ("bytes", "application data per operation"),
    "H": ("bytes", "iSCSI header size (48)"),
    "BW": (
        "bytes/s",
        "raw link bandwidth (symbolic results use bytes per second, as the source does)",
    ),
    "MTU": ("bytes", "largest IP packet, excluding Ethernet framing"),
    "MAC": ("bytes", "Ethernet framing per frame: preamble, SOF, MAC header, CRC, gap (38)"),
    "TCPIP": ("bytes", "TCP and IP headers with timestamps per segment (52)"),
    "TI": ("s", "response-time target"),
    "BACKLOG": (
        "operations",
        "requests queued in the server's receive buffer when it would sleep",
    ),
    "W1": ("s", "request transmission: wire time plus receive-side delivery"),
    "W2": ("s", "response transmission: wire time plus receive-side delivery"),
    "SP": ("s", "server thread processing time per operation"),
    "CP": ("s", "client (initiator) processing time per operation"),
    "SL": ("s", "server thread wake-up latency after it went idle"),
    "CL": ("s", "client thread wake-up latency after it went idle"),
    "SN": ("s", "server transmit start delay (Nagle) after its send buffer became non-empty"),
    "CN": ("s", "client transmit start delay (Nagle) after its send buffer became non-empty"),
    "SQ": ("s", "time a request waits in the server's receive buffer"),
    "SW": ("s", "time a response waits in the server's send buffer"),
    "CQ": ("s", "time a response waits in the client's receive buffer"),
    "CW": ("s", "time a request waits in the client's send buffer"),
    "CA": ("s", "delayed-ACK latency: from an ACK becoming owed to its transmission"),
    "CT": ("s", "client transmit start latency (idle to first transmission)"),
    "SR": ("s", "server receive latency from the wire to its capture point"),
    "SI": ("s", "server soft-interrupt processing per operation"),
    "SK": ("s", "server kworker transmit processing per operation"),
    "ST": ("s", "server transmit start latency (idle to first transmission)"),
    "CR": ("s", "client receive latency from the wire to its capture point"),
    "CI": ("s", "client soft-interrupt processing per operation"),
    "CK": ("s", "client kworker transmit processing per operation"),
}

#: Unit and meaning of every symbol, keyed by name, as in ``UNITS["SP"] == ("s", "server thread ...")``.
UNITS: Mapping[str, tuple[str, str]] = dict(_SYMBOL_UNITS)


class _Symbols:
    """Namespace of positive real SymPy symbols named as in the source
    (``S.QD``, ``S.RTTmin`` ...).

    Each symbol is made on first access, so importing this module does not
    import SymPy.
    """

    def __getattr__(self, name: str) -> sp.Symbol:
        if name.startswith("_") or name not in _SYMBOL_UNITS:
            raise AttributeError(f"no symbol {name!r}; known: {sorted(_SYMBOL_UNITS)}")
        symbol = _sympy().Symbol(name, positive=True)
        setattr(self, name, symbol)  # later look-ups find it directly
        return symbol

    def __dir__(self) -> list[str]:
        return sorted(_SYMBOL_UNITS)

    def __getitem__(self, name: str) -> sp.Symbol:
        return getattr(self, name)

    def __iter__(self):
        return (getattr(self, n) for n in _SYMBOL_UNITS)


#: The symbols, as attributes ``S.QD``, ``S.W2`` and so on.
S = _Symbols()

#: The four-stage ring of the simplified model, in the order an operation meets the stages.
RING4 = ("W1", "SP", "W2", "CP")
#: The eight-stage ring with soft-interrupt and kworker stages on both hosts.
RING8 = ("W1", "SI", "SP", "SK", "W2", "CI", "CP", "CK")

# Start latencies: paid on entering a stage only if that stage's process had gone idle.
_LATENCY_BEFORE = {"SP": "SL", "CP": "CL", "W2": "SN", "W1": "CN"}


def ring_time(
    start: str, stop: str, ring: tuple[str, ...] = RING4, latencies: Iterable[str] = ()
) -> sp.Expr:
    """Time for an operation to travel the ring from the *end* of stage ``start`` to the *end* of ``stop``.

    The operation passes through every stage strictly after ``start`` up to and including ``stop``,
    paying each stage's processing time, plus the start latency in front of each stage named in
    ``latencies`` (for example ``("CL", "SL")``).  Queue waits are zero: this is the path of an operation
    that meets no queue.  Going once round (``start == stop``) gives ``RTTmin`` plus latencies.

    >>> ring_time("W2", "SP", latencies=["CL", "SL"])
    CL + CP + SL + SP + W1
    """
    sp = _sympy()
    for name in (start, stop):
        if name not in ring:
            raise ValueError(f"stage {name!r} is not in the ring {ring}")
    names = set(latencies)
    unknown = names - set(_LATENCY_BEFORE.values())
    if unknown:
        raise ValueError(
            f"latencies: unknown start latency {sorted(unknown)}; known: {sorted(_LATENCY_BEFORE.values())}"
        )
    i = ring.index(start)
    total = sp.Integer(0)
    while True:
        i = (i + 1) % len(ring)
        stage = ring[i]
        lat = _LATENCY_BEFORE.get(stage)
        if lat in names:
            total += S[lat]
        total += S[stage]
        if stage == stop:
            return total


def rtt_min_expr(ring: tuple[str, ...] = RING4) -> sp.Expr:
    """``RTTmin``: the sum of the ring's stage times (no queue waits, no start latencies)."""
    sp = _sympy()
    return sp.Add(*(S[s] for s in ring))


def iops_identity() -> sp.Eq:
    """Little's law for the closed ring: ``IOPS = QD / RTT`` (equivalently ``TPT = RTT / QD``)."""
    sp = _sympy()
    return sp.Eq(S.IOPS, S.QD / S.RTT)


def _with_rttmin(expr: sp.Expr, ring: tuple[str, ...] = RING4) -> sp.Expr:
    """Rewrite ``expr`` using ``RTTmin`` in place of the ring's sum of stage times.

    The client processing time is the stage eliminated (``CP = RTTmin - W1 - SP - W2``), so results are
    stated in RTTmin and the remaining stage times, as in the source.
    """
    sp = _sympy()
    eliminated = "CP" if ring == RING4 else "CK"
    others = sp.Add(*(S[s] for s in ring if s != eliminated))
    return sp.expand(expr.subs(S[eliminated], S.RTTmin - others))


def network_bound_condition() -> sp.Rel:
    """The drain condition for staying network bound on the response path (the source's inequality [1]).

    Picture the moment one response (the "first") finishes transmission just as the server thread
    writes the last of the other ``QD - 1`` responses and goes to sleep.  The link drains that backlog in
    ``W2*(QD-1)``.  The first operation's successor response is appended after the client wakes and
    processes (``CL + CP``), the request crosses (``W1``), the server wakes and processes (``SL + SP``):
    ``ring_time("W2", "SP", latencies=("CL", "SL"))``.  The link stays busy if the drain lasts at least
    that long.
    """
    sp = _sympy()
    drain = S.W2 * (S.QD - 1)
    refill = _with_rttmin(ring_time("W2", "SP", latencies=("CL", "SL")))
    return sp.Ge(drain, refill)


def cpu_bound_condition() -> sp.Rel:
    """The drain condition for keeping the server thread busy (the source's inequality [2]).

    The server has just written a response (it starts on the wire at once: ``SW = 0``) and holds
    ``QD - 1`` requests, which take ``SP*(QD-1)`` to process.  The successor request arrives after the
    response crosses, the client wakes and processes, and the request crosses:
    ``ring_time("SP", "W1", latencies=("CL",))``.
    """
    sp = _sympy()
    drain = S.SP * (S.QD - 1)
    refill = _with_rttmin(ring_time("SP", "W1", latencies=("CL",)))
    return sp.Ge(drain, refill)


def nagle_backlog_condition() -> sp.Rel:
    """Condition [2] with a Nagle transmit delay ``SN`` before the response leaves (the source's [3]).

    The backlog of requests waiting in the receive buffer is a free quantity ``BACKLOG`` (at most
    ``QD - 1``); the refill path gains ``SN`` because the response waits before it is transmitted.
    """
    sp = _sympy()
    drain = S.SP * S.BACKLOG
    refill = _with_rttmin(ring_time("SP", "W1", latencies=("CL",))) + S.SN
    return sp.Ge(drain, refill)


def _solve_threshold(condition: sp.Rel, unknown: sp.Symbol) -> sp.Expr:
    """Solve ``lhs = rhs`` for ``unknown`` (the boundary of a drain condition) and check it is unique."""
    sp = _sympy()
    solutions = sp.solve(sp.Eq(condition.lhs, condition.rhs), unknown)
    if len(solutions) != 1:  # pragma: no cover - the conditions are linear in the unknown
        raise ArithmeticError(f"expected one boundary for {unknown}, got {solutions}")
    # The left side grows with the unknown (its coefficient is a positive time), so ">=" holds above it.
    slope = sp.diff(condition.lhs - condition.rhs, unknown)
    assert slope.is_positive, slope
    return sp.simplify(solutions[0])


@cache
def qd_min_network_bound() -> sp.Expr:
    """Smallest QD that keeps the response link busy: ``(CL + RTTmin + SL) / W2`` (inequality [1])."""
    return _solve_threshold(network_bound_condition(), S.QD)


@cache
def qd_min_cpu_bound() -> sp.Expr:
    """Smallest QD that keeps the server thread busy: ``(CL + RTTmin) / SP`` (inequality [2])."""
    return _solve_threshold(cpu_bound_condition(), S.QD)


@cache
def backlog_min_nagle() -> sp.Expr:
    """Smallest receive-buffer backlog that keeps the server busy under Nagle: ``(CL + RTTmin + SN)/SP - 1``."""
    return _solve_threshold(nagle_backlog_condition(), S.BACKLOG)


def responses_per_packet_expr() -> sp.Expr:
    """How many responses of ``IOSIZE + H`` bytes fit in one full segment: ``(MTU - TCPIP)/(IOSIZE + H)``."""
    return (S.MTU - S.TCPIP) / (S.IOSIZE + S.H)


def nagle_delay_bound_fill() -> sp.Expr:
    """Upper bound on ``SN`` when CPU bound: the time to write the rest of a full segment.

    After the first response opens a partial segment, ``responses_per_packet - 1`` more responses, each
    taking ``SP``, fill it and release it: ``SN <= SP*((MTU - TCPIP)/(IOSIZE + H) - 1)``.
    """
    return S.SP * (responses_per_packet_expr() - 1)


def nagle_ack_window_condition() -> sp.Rel:
    """When an ACK can end the Nagle delay before the segment fills.

    The thread fills a segment in ``SP * responses_per_packet``; the ACK for the previous response
    packet returns, piggybacked on its successor request, ``CL + RTTmin - SP`` after that response was
    written.  The ACK wins if the fill time is longer.  Solved for ``SP``.
    """
    sp = _sympy()
    fill = S.SP * responses_per_packet_expr()
    ack_back = _with_rttmin(ring_time("SP", "W1", latencies=("CL",)))
    sol = sp.solve(sp.Eq(fill, ack_back), S.SP)
    assert len(sol) == 1
    return sp.StrictGreaterThan(S.SP, sp.simplify(sol[0]))


def nagle_delay_bound_ack() -> sp.Expr:
    """The reduced bound on ``SN`` when the ACK arrives first: ``CL + RTTmin - 2*SP``.

    The ACK arrives ``CL + RTTmin - SP`` after the response that filled the previous packet was written;
    the delay period starts one ``SP`` later, when the next response is written.
    """
    sp = _sympy()
    ack_back = _with_rttmin(ring_time("SP", "W1", latencies=("CL",)))
    return sp.expand(ack_back - S.SP)


def qd_max_for_response_time_expr() -> sp.Expr:
    """Largest QD compatible with a response-time target ``TI`` on a link of ``BW`` bytes/s.

    The link carries at most ``BW / (IOSIZE + H)`` operations per second; by ``IOPS = QD/RTT`` every
    operation then takes ``RTT >= QD*(IOSIZE + H)/BW``.  ``RTT < TI`` therefore needs
    ``QD < TI*BW/(IOSIZE + H)``: the boundary is returned.
    """
    sp = _sympy()
    iops_cap = S.BW / (S.IOSIZE + S.H)
    rtt_floor = sp.solve(sp.Eq(iops_cap, S.QD / S.RTT), S.RTT)[0]
    return sp.solve(sp.Eq(rtt_floor, S.TI), S.QD)[0]


def numeric(expr: sp.Expr):
    """Compile a symbolic result into a fast function taking keyword arguments named by its symbols.

    >>> f = numeric(qd_min_cpu_bound())
    >>> round(f(CL=20e-6, RTTmin=100e-6, SP=16e-6), 3)
    7.5
    """
    sp = _sympy()
    names = sorted(str(s) for s in expr.free_symbols)
    fn = sp.lambdify([S[n] for n in names], expr, modules="numpy")

    def evaluate(**values: float):
        missing = set(names) - set(values)
        extra = set(values) - set(names)
        if missing or extra:
            raise ValueError(
                f"expected values for {names}; missing {sorted(missing)}, unexpected {sorted(extra)}"
            )
        return fn(*(values[n] for n in names))

    evaluate.__doc__ = f"Evaluate {expr} (arguments: {', '.join(names)})."
    evaluate.symbols = names  # type: ignore[attr-defined]
    return evaluate


# --------------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------------


def _check_mtu(mtu: float) -> int:
    m = _finite("mtu", mtu)
    if m != int(m):
        raise ValueError(f"mtu must be a whole number of bytes, got {mtu!r}")
    if m <= TCPIP_BYTES:
        raise ValueError(f"mtu must exceed the {TCPIP_BYTES} bytes of TCP/IP headers, got {mtu!r}")
    return int(m)


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
    return framing.mss(_check_mtu(mtu))


def framing_efficiency(mtu: int = 1500) -> float:
    """Best-case payload share of the wire, full segments only: ``(MTU - 52) / (MTU + 38)``.

    >>> round(framing_efficiency(1500), 4), round(framing_efficiency(9000), 4)
    (0.9415, 0.99)
    """
    m = _check_mtu(mtu)
    return framing.mss(m) / (min(m, framing.IPV4_MAX_PACKET) + framing.MAC_BYTES)


def frames(payload_bytes: int, mtu: int = 1500) -> int:
    """Number of segments a message of ``payload_bytes`` needs at this MTU (a 0-byte message: one bare ACK)."""
    p = _non_negative("payload_bytes", payload_bytes)
    if p != int(p):
        raise ValueError(f"payload_bytes must be a whole number of bytes, got {payload_bytes!r}")
    return framing.frames(int(p), _check_mtu(mtu))


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

    The same expression :func:`qd_min_cpu_bound` derives with SymPy (a test
    checks the two agree), for code that must run without SymPy, such as
    the book's live figures.  Times in seconds.
    """
    busy = _non_negative("cl", cl) + _positive("rtt_min", rtt_min)
    return busy / _positive("sp", sp)


def qd_min_network(cl: float, rtt_min: float, sl: float, w2: float) -> float:
    """Inequality [1] as a number: the least QD that keeps the response
    link busy, ``(CL + RTTmin + SL) / W2`` (:func:`qd_min_network_bound`,
    checked equal by a test).  Times in seconds.
    """
    refill = _non_negative("cl", cl) + _positive("rtt_min", rtt_min) + _non_negative("sl", sl)
    return refill / _positive("w2", w2)


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
    rtt = rtt_min(stage_times) if rtt_s is None else rtt_s
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
    size = _non_negative("iosize", iosize) + _non_negative("header_bytes", header_bytes)
    if mtu is None:
        bw_bytes = _positive("bandwidth_bps", bandwidth_bps) / 8  # bits/s -> bytes/s
        if size <= 0:
            raise ValueError("iosize + header_bytes must be positive")
        return bw_bytes / size
    return 1.0 / wire_time(int(size), bandwidth_bps, mtu)


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


#: How the server's soft-interrupt (SI), thread (SP) and kworker (SK) stages share CPUs in the eight-stage
#: ring: each group of stages runs serially on one CPU, so its times add up into one stage.
PLACEMENTS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "separate": (("SI",), ("SP",), ("SK",)),  # three CPUs: each stage on its own
    "sirq-same-cpu": (("SI", "SP"), ("SK",)),  # network soft interrupt pinned with the thread
    "uniprocessor": (("SI", "SP", "SK"),),  # one server CPU does all three
}


def tpt_min_eight_stage_expr(placement: str = "separate") -> sp.Expr:
    """``TPTmin`` of the eight-stage ring as a SymPy ``Max`` for a CPU placement of the server stages.

    Stages that share a CPU run one after another, so they act as a single stage whose time is their sum
    (Butterfield 2017, "Revised Identities").
    """
    sp = _sympy()
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {sorted(PLACEMENTS)}, got {placement!r}")
    groups = [sp.Add(*(S[n] for n in g)) for g in PLACEMENTS[placement]]
    others = [S[n] for n in RING8 if n not in ("SI", "SP", "SK")]
    return sp.Max(*others, *groups)


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

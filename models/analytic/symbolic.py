"""Closed-form results for the ring of pipeline stages (Butterfield 2017), derived in SymPy.

Notation follows Butterfield (2017), *iSCSI-SCST Usermode Read Performance Model*.  Every symbol is a
positive real SymPy symbol; its unit is listed in :data:`UNITS` and on the book's notation page.

Each result (``qd_min_network_bound()``, ``qd_min_cpu_bound()``, ``backlog_min_nagle()``, ...) is
*derived* from a drain-time condition with ``sympy.solve``; none is typed in as the answer.  The
condition is built from travel times around the ring (:func:`ring_time`), so the derivation is the same
one the book walks through.  :func:`numeric` compiles a result into a function of numbers.

SymPy is imported on first use of a symbol or a result, so importing this module costs nothing; the
numbers the reader's browser runs are in :mod:`models.analytic.numbers`, which never needs SymPy.

Units: times in seconds, sizes in bytes, ``BW`` in bytes per second (as in the source).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from .numbers import PLACEMENTS, RING4, RING8

__all__ = [
    "UNITS",
    "S",
    "ring_time",
    "rtt_min_expr",
    "iops_identity",
    "network_bound_condition",
    "cpu_bound_condition",
    "nagle_backlog_condition",
    "qd_min_network_bound",
    "qd_min_cpu_bound",
    "backlog_min_nagle",
    "responses_per_packet_expr",
    "nagle_delay_bound_fill",
    "nagle_fill_responses",
    "nagle_delay_bound_whole",
    "nagle_delay_bound_straddle",
    "nagle_ack_window_condition",
    "nagle_delay_bound_ack",
    "qd_max_for_response_time_expr",
    "stall_sustains_condition",
    "qd_max_stall_expr",
    "numeric",
    "tpt_min_eight_stage_expr",
]

if TYPE_CHECKING:  # annotations only: SymPy is imported on first use
    import sympy as sp


def _sympy() -> Any:
    """SymPy, imported on first use."""
    import sympy

    return sympy


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
    "SK": ("s", "server kworker transmit processing per operation (the eight-stage ring's stage)"),
    "ST": ("s", "server transmit start latency (idle to first transmission)"),
    "CR": ("s", "client receive latency from the wire to its capture point"),
    "CI": ("s", "client soft-interrupt processing per operation"),
    "CK": ("s", "client kworker transmit processing per operation (the eight-stage ring's stage)"),
    "SX": (
        "s",
        "server CPU per data segment sent, paid inside send() (the simulator's tx_cpu_s); "
        "not a stage: an operation of n segments pays n*SX",
    ),
    "CX": ("s", "client CPU per data segment sent (the simulator's tx_cpu_s on the client)"),
    "SD": (
        "s",
        "server thread wake-up latency after a long idle (the 40 ms of a delayed-ACK stall): "
        "the deep wake-up (a host profile's wake_curve_s at that idle)",
    ),
    "CE": ("s", "client time per request it issues: processing one response and its send()"),
    "SE": ("s", "server time from waking to its first response header on the wire"),
    "CD": (
        "s",
        "what waking the server's thread after its long idle adds to the client's send() that "
        "wakes it (the waker's cost; a host profile's waker_curve_s at that idle)",
    ),
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


def nagle_fill_responses(opening: Any) -> sp.Expr:
    """Responses the thread must still write to fill a held segment that opens with ``opening`` bytes.

    Responses are appended to the send queue back to back, ``IOSIZE + H`` bytes each.  A held segment
    opens with the last ``opening`` bytes of some response (``1 <= opening <= IOSIZE + H``; all of it
    when the segment starts on a response boundary) and leaves when it holds an MSS, ``MTU - TCPIP``
    bytes: after ``ceiling((MTU - TCPIP - opening) / (IOSIZE + H))`` more whole responses.

    >>> v = {S.MTU: 1500, S.TCPIP: 52, S.IOSIZE: 512, S.H: 48}
    >>> nagle_fill_responses(S.IOSIZE + S.H).subs(v)
    2
    >>> nagle_fill_responses(1).subs(v)
    3
    """
    sp = _sympy()
    # ceiling(MSS/R - opening/R): written so that a whole response (opening = R) gives
    # ceiling(MSS/R) - 1, the form SymPy keeps when the integer comes out of the ceiling
    return sp.ceiling(responses_per_packet_expr() - opening / (S.IOSIZE + S.H))


def nagle_delay_bound_whole() -> sp.Expr:
    """:func:`nagle_delay_bound_fill` counted in whole responses: ``SP*(ceiling(MSS/(IOSIZE+H)) - 1)``.

    The bound of a segment that opens on a response boundary (a response written into an empty send
    queue): the segment leaves only when a whole response fills it, so the fractional count of
    :func:`nagle_delay_bound_fill` rounds up.
    """
    return S.SP * nagle_fill_responses(S.IOSIZE + S.H)


def nagle_delay_bound_straddle() -> sp.Expr:
    """Upper bound on ``SN`` when CPU bound, for any segment: ``SP*ceiling((MSS - 1)/(IOSIZE + H))``.

    When a response straddles two segments, the first fills and leaves and the response's tail opens
    the next one, which the thread must then fill almost entirely: the tail can be as short as one
    byte.  :func:`nagle_delay_bound_fill` assumes every held segment opens with a whole response and is
    exceeded in that case (at MTU 1500 with 560-byte responses a 232-byte tail waits three ``SP``, the
    bound allows 1.6).  This bound takes the shortest opening, one byte.
    """
    return S.SP * nagle_fill_responses(1)


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


def stall_sustains_condition() -> sp.Rel:
    """When a Nagle server's delayed-ACK stall restarts itself.

    At the stall's end the client holds every response and issues the ``QD`` requests one after
    another, the ``i``-th at ``i*CE``.  The first wakes the server, asleep since the stall began,
    after ``W1 + SD``; waking it costs the client's ``send()`` ``CD`` more, so every later request
    leaves ``CD`` later and the last at ``QD*CE + CD``.  The server's first header leaves ``SE``
    after it wakes and reaches the client ``W2`` after that, alone (Nagle holds the data behind
    it).  If the client has issued every request by then, nothing carries the header's ACK and
    the client delays it: the next stall.  So the stall sustains itself while
    ``QD*CE + CD <= CE + W1 + SD + SE + W2``.
    """
    sp = _sympy()
    return sp.Le(S.QD * S.CE + S.CD, S.CE + S.W1 + S.SD + S.SE + S.W2)


@cache
def qd_max_stall_expr() -> sp.Expr:
    """The largest queue depth at which the stall sustains itself, as a real number (the integer
    part of it is the last stalling QD): ``1 + (W1 + W2 + SD + SE - CD)/CE``."""
    sp = _sympy()
    c = stall_sustains_condition()
    sol = sp.solve(sp.Eq(c.lhs, c.rhs), S.QD)
    assert len(sol) == 1 and sp.diff(c.lhs - c.rhs, S.QD).is_positive  # <= holds below it
    return sp.expand(sol[0])


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
        # Every symbol is a positive quantity (a time, a size, a rate): a negative or NaN value
        # is refused rather than put into a formula derived for positive values (zero, the
        # limit, is allowed).  NumPy arrays are checked element by element.
        for n in names:
            v = values[n]
            ok = v >= 0
            if not (ok.all() if hasattr(ok, "all") else ok):
                raise ValueError(f"{n} must not be negative or NaN, got {v!r}")
        return fn(*(values[n] for n in names))

    evaluate.__doc__ = f"Evaluate {expr} (arguments: {', '.join(names)})."
    evaluate.symbols = names  # type: ignore[attr-defined]
    return evaluate


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

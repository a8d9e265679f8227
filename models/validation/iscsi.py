"""Chapter 12 comparisons: the latency of one iSCSI write, derived in SymPy with MaxOutstandingR2T as
a sliding window (:func:`models.analytic.iscsi.write_latency_expr`), against the packet simulator
replaying the same command's real exchange on an idle path (:func:`models.presets.iscsi_idle_path`:
one operation whose messages release one another, the R2T of burst ``j + R`` released by the
Data-Out of burst ``j``).

Every row is a test: the expression is evaluated with the keys, the size, the round trip and the
link rate of the row and nothing else, and the simulator runs the PDUs through its TCP rules.  The
grid holds one R2T at a time (R = 1) and windows of 2, 4 and 16 R2Ts, bursts of 8 and 64 KiB, a
round trip short enough that the link sets the pace and one long enough that the window does;
each window with the four settings of InitialR2T and ImmediateData and a last burst shorter than
the others, and with writes smaller than FirstBurstLength; and the negotiated sessions of the
chapter.

:func:`batched_latency_s` is the model this replaced (R2Ts in batches of R, each batch waiting for
the whole previous one); the chapter compares it, and a test shows the comparisons fail on it.
"""

from __future__ import annotations

import math
from functools import cache

from models import iscsi, presets
from models.analytic import iscsi as ID

from . import Comparison, comparisons

__all__ = [
    "KiB",
    "LINK_BPS",
    "RTTS_S",
    "WINDOWS",
    "BURSTS",
    "TOLERANCE",
    "KEY_SETTINGS",
    "grid",
    "regime",
    "model_latency_s",
    "simulated_latency_s",
    "batched_latency_s",
    "window_comparisons",
]

KiB = 1024  # bytes
#: The link of every row, bits per second.
LINK_BPS = 1e9
#: Round trips of the grid, seconds: the link sets the pace at the first, the window at the second.
RTTS_S = (1e-4, 1e-2)
#: MaxOutstandingR2T values of the grid.
WINDOWS = (1, 2, 4, 16)
#: MaxBurstLength values of the grid, bytes.
BURSTS = (8 * KiB, 64 * KiB)
#: Allowed relative difference between the simulated and the derived latency.
TOLERANCE = 0.015
_WHY = (
    "the simulator's pure ACKs share the links the model gives to the PDUs alone: the target "
    "acknowledges the last Data-Out segment just before it writes the R2T that segment releases, "
    "and each such ACK (90 bytes of wire, 0.72 us at 1 Gb/s) delays the R2T behind it; over the "
    "R2T rounds of a write at a 0.1 ms round trip that adds up to about 1.1 % (at 10 ms, 0.03 %), "
    "while the sender's packing of queued writes into full segments saves a little"
)
_SOURCE = (
    "packet simulator (models.sim) on idle hosts, one operation of the command's messages, "
    "models.presets.iscsi_idle_path"
)
#: The settings of InitialR2T and ImmediateData, as (InitialR2T, ImmediateData).
KEY_SETTINGS = ((True, False), (True, True), (False, True), (False, False))


def _yes(flag: bool) -> str:
    return "Yes" if flag else "No"


def grid() -> list:
    """``(label, session, size_bytes, rtt_s)`` of every row.

    The windows: for each MaxOutstandingR2T ``R`` of :data:`WINDOWS` and burst of :data:`BURSTS`
    (FirstBurstLength the burst, at most 64 KiB), InitialR2T=Yes and ImmediateData=No (nothing
    unsolicited) with four groups of ``R`` equal bursts; the other three settings of
    :data:`KEY_SETTINGS` with bursts of 8 KiB and a write of ``3R`` bursts and 5 KiB more (the
    last burst shorter, and with InitialR2T=No the first burst unsolicited); a write of half the
    FirstBurstLength under each setting.  The negotiated sessions: open-iscsi against IET
    (immediate data, one R2T at a time) for writes of 4 KiB, 64 KiB and 1 MiB, and with
    InitialR2T=No a write of half the FirstBurstLength (all of it unsolicited).
    """

    def session(r2t: bool, imm: bool, window: int, burst: int) -> iscsi.Session:
        return iscsi.Session(
            initial_r2t=r2t,
            immediate_data=imm,
            first_burst_length=min(burst, 64 * KiB),
            max_burst_length=burst,
            max_outstanding_r2t=window,
        )

    rows = []
    for window in WINDOWS:
        for rtt in RTTS_S:
            for burst in BURSTS:
                s = session(True, False, window, burst)
                rows.append(
                    (f"R={window}, bursts of {burst // KiB} KiB", s, 4 * window * burst, rtt)
                )
            burst = BURSTS[0]
            for r2t, imm in KEY_SETTINGS:
                s = session(r2t, imm, window, burst)
                keys = f"InitialR2T={_yes(r2t)}, ImmediateData={_yes(imm)}"
                if (r2t, imm) != KEY_SETTINGS[0]:
                    size = 3 * window * burst + 5 * KiB
                    rows.append((f"R={window}, bursts of 8 KiB, last short, {keys}", s, size, rtt))
                if window == WINDOWS[-1]:
                    small = s.first_burst_length // 2
                    rows.append((f"R={window}, below FirstBurstLength, {keys}", s, small, rtt))
    pair = iscsi.negotiate(iscsi.OPEN_ISCSI_DEFAULTS, iscsi.IET_DEFAULTS)
    free = iscsi.negotiate(iscsi.OPEN_ISCSI_DEFAULTS, {**iscsi.IET_DEFAULTS, "InitialR2T": False})
    for rtt in RTTS_S:
        for size in (4 * KiB, 64 * KiB, 1024 * KiB):
            rows.append(("open-iscsi + IET", pair, size, rtt))
        rows.append(("open-iscsi + IET, InitialR2T=No", free, free.first_burst_length // 2, rtt))
    return rows


def regime(session: iscsi.Session, size_bytes: int, rtt_s: float, link_bps: float) -> str:
    """What sets the pace of the bursts (:func:`models.iscsi.pace`)."""
    return iscsi.pace(size_bytes, rtt_s, link_bps, session)


def model_latency_s(
    session: iscsi.Session, size_bytes: int, rtt_s: float, link_bps: float = LINK_BPS
) -> float:
    """The derived latency of one write (s): :func:`models.analytic.iscsi.write_latency_expr`
    evaluated for the session, size, round trip and link rate."""
    expr = ID.write_latency_expr(session.initial_r2t, session.immediate_data)
    return float(expr.subs(ID.latency_values(session, size_bytes, rtt_s, link_bps)))


@cache
def simulated_latency_s(
    session: iscsi.Session, size_bytes: int, rtt_s: float, link_bps: float = LINK_BPS
) -> float:
    """The packet simulator's latency of the same write on idle hosts (s)."""
    sc = presets.iscsi_idle_path("write", size_bytes, session, rtt_s, link_bps)
    return presets.iscsi_idle_latency_s(sc)


def batched_latency_s(
    session: iscsi.Session, size_bytes: int, rtt_s: float, link_bps: float = LINK_BPS
) -> float:
    """The model :func:`models.analytic.iscsi.write_latency_expr` replaced (s): R2Ts in batches of
    R, each batch sent when the whole previous batch's data have arrived (and the first when all
    the unsolicited data have), so every message waits for the one before it:
    ``(1 + ceil(m/R)) * RTT + X/C``."""
    rate = link_bps / 8  # bits/s -> bytes/s
    msgs = iscsi.messages("write", size_bytes, session)
    wire = sum(iscsi.message_wire_bytes(m) for m in msgs)
    m = len(iscsi.bursts(size_bytes, session))
    trips = 1 + math.ceil(m / session.max_outstanding_r2t)
    return trips * rtt_s + wire / rate


@comparisons("ch12.r2t_window")
def window_comparisons() -> list[Comparison]:
    """The derived write latency against the simulator, one test per row of :func:`grid`."""
    rows = []
    for label, s, size, rtt in grid():
        model = model_latency_s(s, size, rtt)
        sim = simulated_latency_s(s, size, rtt)
        rows.append(
            Comparison(
                "ch12",
                f"write of {size / KiB:g} KiB, {label}, RTT {rtt * 1e3:g} ms: latency",
                measured=sim * 1e3,  # s -> ms
                predicted=model * 1e3,
                unit="ms",
                rel_tol=TOLERANCE,
                why=_WHY,
                source=_SOURCE,
                kind="test",
                extra={
                    "window": s.max_outstanding_r2t,
                    "burst_bytes": s.max_burst_length,
                    "size_bytes": size,
                    "initial_r2t": s.initial_r2t,
                    "immediate_data": s.immediate_data,
                    "first_burst_bytes": s.first_burst_length,
                    "unsolicited_data_out_bytes": iscsi.unsolicited_bytes(size, s)[1],
                    "rtt_s": rtt,
                    "r2ts": len(iscsi.bursts(size, s)),
                    "regime": regime(s, size, rtt, LINK_BPS),
                    "batched_ms": batched_latency_s(s, size, rtt) * 1e3,
                },
            )
        )
    return rows

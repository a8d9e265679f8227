"""Chapter 12 comparisons: the latency of one iSCSI write, derived in SymPy with MaxOutstandingR2T as
a sliding window (:func:`models.analytic.iscsi.write_latency_expr`), against the packet simulator
replaying the same command on an idle path (:func:`models.presets.iscsi_idle_path`).

Every row is a test: the expression is evaluated with the keys, the size, the round trip and the
link rate of the row and nothing else, and the simulator runs the PDUs through its TCP rules.  The
grid holds one R2T at a time (R = 1) and windows of 2, 4 and 16 R2Ts, bursts of 8 and 64 KiB, a
round trip short enough that the link sets the pace and one long enough that the window does, and
the negotiated sessions of the chapter with a write smaller than FirstBurstLength.

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
TOLERANCE = 0.01
_WHY = (
    "the simulator's pure ACKs share the reverse link, its sender packs writes that queue behind a "
    "busy link into full segments, and a sliding window is replayed as R chains each with its own "
    "48-byte command and response; each moves a command by well under 1 %"
)
_SOURCE = "packet simulator (models.sim) on idle hosts, models.presets.iscsi_idle_path"


def grid() -> list:
    """``(label, session, size_bytes, rtt_s)`` of every row.

    The windows: InitialR2T=Yes and ImmediateData=No (nothing unsolicited), four groups of R equal
    bursts.  The negotiated sessions: open-iscsi against IET (immediate data, one R2T at a time)
    for writes of 4 KiB, 64 KiB and 1 MiB, and with InitialR2T=No a write smaller than
    FirstBurstLength (all of it unsolicited).
    """
    rows = []
    for window in WINDOWS:
        for burst in BURSTS:
            s = iscsi.Session(
                initial_r2t=True,
                immediate_data=False,
                first_burst_length=min(burst, 64 * KiB),
                max_burst_length=burst,
                max_outstanding_r2t=window,
            )
            for rtt in RTTS_S:
                rows.append(
                    (f"R={window}, bursts of {burst // KiB} KiB", s, 4 * window * burst, rtt)
                )
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
                f"write of {size // KiB} KiB, {label}, RTT {rtt * 1e3:g} ms: latency",
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
                    "rtt_s": rtt,
                    "r2ts": len(iscsi.bursts(size, s)),
                    "regime": regime(s, size, rtt, LINK_BPS),
                    "batched_ms": batched_latency_s(s, size, rtt) * 1e3,
                },
            )
        )
    return rows

"""Round trips, latency and throughput of one iSCSI command, in SymPy.

The counting model of :mod:`models.iscsi` written as expressions, so a
chapter can derive from them (and assert) what the legs only enumerate:

* the unsolicited bytes of a write, ``U``, for each setting of InitialR2T
  and ImmediateData (:func:`unsolicited_expr`);
* the round trips ``n`` of a command (:func:`round_trips_expr`): one for
  a read, ``1 + ceiling(ceiling((N - U)/B)/R)`` for a write;
* the least latency ``T = n*(RTT + d) + X/C`` of a command whose
  target-to-initiator packets are each held ``d`` seconds
  (:func:`latency_expr`), so that ``dT/dd = n``: every round trip is one
  more wait for a delayed message (:func:`delayed_waits`);
* the ring identity's throughput ``QD*N/T`` (:func:`throughput_expr`).

Symbols (bytes, seconds, bytes per second): ``N`` data per command,
``F`` FirstBurstLength, ``B`` MaxBurstLength, ``M`` the target's
MaxRecvDataSegmentLength, ``R`` MaxOutstandingR2T, ``RTT`` the
undelayed round trip, ``d`` the added delay, ``X`` wire bytes of the
whole exchange, ``C`` the link rate, ``QD`` commands in flight.
"""

from __future__ import annotations

import sympy as sp

from models.iscsi import Session

__all__ = [
    "N",
    "F",
    "B",
    "M",
    "R",
    "RTT",
    "d",
    "X",
    "C",
    "QD",
    "unsolicited_expr",
    "round_trips_expr",
    "latency_expr",
    "delayed_waits",
    "throughput_expr",
    "session_values",
]

N = sp.Symbol("N", nonnegative=True, integer=True)
F = sp.Symbol("F", positive=True, integer=True)
B = sp.Symbol("B", positive=True, integer=True)
M = sp.Symbol("M", positive=True, integer=True)
R = sp.Symbol("R", positive=True, integer=True)
RTT = sp.Symbol("RTT", nonnegative=True)
d = sp.Symbol("d", nonnegative=True)
X = sp.Symbol("X", positive=True)
C = sp.Symbol("C", positive=True)
QD = sp.Symbol("QD", positive=True, integer=True)


def unsolicited_expr(initial_r2t: bool, immediate_data: bool) -> sp.Expr:
    """Bytes of a write that go without an R2T.

    With InitialR2T=No the first ``min(N, F)`` bytes are unsolicited
    (immediate or Data-Out); with InitialR2T=Yes only immediate data,
    ``min(N, F, M)``, and none without ImmediateData.
    """
    if not initial_r2t:
        return sp.Min(N, F)
    return sp.Min(N, F, M) if immediate_data else sp.Integer(0)


def round_trips_expr(op: str, initial_r2t: bool = True, immediate_data: bool = True) -> sp.Expr:
    """Round trips of one command (the response's included)."""
    if op == "read":
        return sp.Integer(1)
    if op != "write":
        raise ValueError(f"op must be 'read' or 'write', got {op!r}")
    solicited = N - unsolicited_expr(initial_r2t, immediate_data)
    return 1 + sp.ceiling(sp.ceiling(solicited / B) / R)


def latency_expr(n: sp.Expr) -> sp.Expr:
    """``n*(RTT + d) + X/C``: ``n`` round trips, each back leg delayed."""
    return n * (RTT + d) + X / C


def delayed_waits(n: sp.Expr) -> sp.Expr:
    """``dT/dd``: how many delayed messages a command waits for in turn."""
    return sp.diff(latency_expr(n), d)


def throughput_expr(n: sp.Expr) -> sp.Expr:
    """Bytes per second of ``QD`` commands in flight: ``QD*N/T``."""
    return QD * N / latency_expr(n)


def session_values(session: Session, size_bytes: int) -> dict:
    """Substitutions that put a session's keys and a size into the exprs."""
    return {
        N: size_bytes,
        F: session.first_burst_length,
        B: session.max_burst_length,
        M: session.target_mrdsl,
        R: session.max_outstanding_r2t,
    }

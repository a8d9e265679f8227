"""Round trips, latency and throughput of one iSCSI command, in SymPy.

The model of :mod:`models.iscsi` written as expressions, so a chapter can
derive from them (and assert) what the messages only enumerate:

* the unsolicited bytes of a write, ``U``, for each setting of InitialR2T
  and ImmediateData (:func:`unsolicited_expr`);
* the round trips ``n`` on a command's longest chain
  (:func:`round_trips_expr`): one for a read, ``1 + ceiling(m/R)`` for a
  write of ``m = ceiling((N - U)/B)`` R2Ts;
* for a chain of legs, each waiting for the whole previous one, the least
  latency ``T = n*(RTT + d) + X/C`` of a command whose target-to-initiator
  packets are each held ``d`` seconds (:func:`latency_expr`), so that
  ``dT/dd = n`` (:func:`delayed_waits`);
* for any write, the least latency with MaxOutstandingR2T as a sliding
  window (:func:`write_latency_expr`), from the recurrence of the times
  the Data-Out sequences finish (:func:`window_step`,
  :func:`unrolled_last_sent`);
* the ring identity's throughput ``QD*N/T`` (:func:`throughput_expr`).

Symbols (bytes, seconds, bytes per second): ``N`` data per command,
``F`` FirstBurstLength, ``B`` MaxBurstLength, ``M`` the target's
MaxRecvDataSegmentLength, ``R`` MaxOutstandingR2T, ``RTT`` the
undelayed round trip, ``d`` the added delay, ``X`` wire bytes of the
whole exchange, ``C`` the link rate, ``QD`` commands in flight; and the
wire bytes of the write's messages: ``W_c`` the command (with immediate
data), ``W_u`` the unsolicited Data-Out, ``W_r`` one R2T, ``W_b`` the
Data-Out of a full burst, ``W_l`` that of the last burst, ``W_s`` the
response.
"""

from __future__ import annotations

import sympy as sp

from models import iscsi
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
    "Wc",
    "Wu",
    "Wr",
    "Wb",
    "Wl",
    "Ws",
    "r2t_count_expr",
    "window_step",
    "unrolled_last_sent",
    "write_latency_expr",
    "wire_values",
    "latency_values",
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
Wc = sp.Symbol("W_c", positive=True)
Wu = sp.Symbol("W_u", nonnegative=True)
Wr = sp.Symbol("W_r", positive=True)
Wb = sp.Symbol("W_b", nonnegative=True)
Wl = sp.Symbol("W_l", nonnegative=True)
Ws = sp.Symbol("W_s", positive=True)


def unsolicited_expr(initial_r2t: bool, immediate_data: bool) -> sp.Expr:
    """Bytes of a write that go without an R2T.

    With InitialR2T=No the first ``min(N, F)`` bytes are unsolicited
    (immediate or Data-Out); with InitialR2T=Yes only immediate data,
    ``min(N, F, M)``, and none without ImmediateData.
    """
    if not initial_r2t:
        return sp.Min(N, F)
    return sp.Min(N, F, M) if immediate_data else sp.Integer(0)


def r2t_count_expr(initial_r2t: bool = True, immediate_data: bool = True) -> sp.Expr:
    """``m``: the R2Ts of a write, one per MaxBurstLength of the solicited bytes ``N - U``."""
    return sp.ceiling((N - unsolicited_expr(initial_r2t, immediate_data)) / B)


def round_trips_expr(op: str, initial_r2t: bool = True, immediate_data: bool = True) -> sp.Expr:
    """Round trips on the longest chain of one command (the response's included): the R2T of
    burst ``j + R`` waits for the Data-Out of burst ``j``, so ``ceiling(m/R)`` R2T round trips."""
    if op == "read":
        return sp.Integer(1)
    if op != "write":
        raise ValueError(f"op must be 'read' or 'write', got {op!r}")
    return 1 + sp.ceiling(r2t_count_expr(initial_r2t, immediate_data) / R)


def latency_expr(n: sp.Expr) -> sp.Expr:
    """``n*(RTT + d) + X/C``: ``n`` round trips, each back leg delayed.  Exact for a chain of legs
    (a read, or a write whose R2Ts all fit in one window or go one at a time);
    :func:`write_latency_expr` is the general write."""
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


def window_step(e_j: sp.Expr, e_prev: sp.Expr, t_b: sp.Expr | None = None) -> sp.Expr:
    """When the Data-Out of burst ``j + R`` has been sent, given when that of burst ``j`` was
    (``e_j``) and that of burst ``j + R - 1`` (``e_prev``).

    Burst ``j``'s data reach the target ``RTT/2`` after they were sent; the target sends the R2T of
    burst ``j + R`` at once, and it reaches the initiator ``W_r/C + RTT/2 + d`` later.  The
    initiator sends the burst when it has that R2T and its link is free, and sending takes
    ``t_b`` (``W_b/C`` by default)::

        e_{j+R} = max(e_j + RTT + d + W_r/C, e_{j+R-1}) + t_b
    """
    tb = Wb / C if t_b is None else t_b
    return sp.Max(e_j + RTT + d + Wr / C, e_prev) + tb


def unrolled_last_sent(m: int, window: int, regime: str) -> sp.Expr:
    """When the last of ``m`` equal bursts has been sent, after the first started (``e_m - s_0``),
    by unrolling :func:`window_step` with ``R = window`` in one regime.

    ``regime="window"``: the R2T is always what the initiator waits for (the first argument of
    the max); ``"link"``: the link always is (the second).  The first ``window`` bursts go back to
    back.
    """
    if regime not in ("window", "link"):
        raise ValueError(f"regime must be 'window' or 'link', got {regime!r}")
    if not (isinstance(m, int) and isinstance(window, int) and m >= 1 and window >= 1):
        raise ValueError(f"m and window must be whole numbers >= 1, got {m!r}, {window!r}")
    tb = Wb / C
    e: list[sp.Expr] = []
    for j in range(m):
        if j < window:
            e.append((j + 1) * tb)
        elif regime == "window":
            e.append(e[j - window] + RTT + d + Wr / C + tb)
        else:
            e.append(e[j - 1] + tb)
    return sp.expand(e[-1])


def write_latency_expr(initial_r2t: bool = True, immediate_data: bool = True) -> sp.Expr:
    """Least latency of one write of ``N`` bytes alone on an idle path, with MaxOutstandingR2T a
    sliding window.

    The command (``W_c``) and any unsolicited Data-Out (``W_u``) leave at once.  The target sends
    the first ``min(m, R)`` R2Ts when the command arrives; the first burst leaves when they arrive
    or when the unsolicited data are out, whichever is later (``s_0``).  The bursts then follow
    :func:`window_step`: the first ``R`` back to back, each later group of ``R`` one period
    ``max(RTT + d + W_r/C + W_b/C, R*W_b/C)`` after the previous (the window, or the link, whichever
    is slower).  Burst ``m`` is the ``i``-th of group ``q + 1`` (``q = ceiling(m/R) - 1``,
    ``i = m - q*R``), and the response leaves when its data arrive.  With no R2T (``m = 0``) the
    response follows the unsolicited data.
    """
    m = r2t_count_expr(initial_r2t, immediate_data)
    u_time = (Wu / C) if not initial_r2t else sp.Integer(0)
    q = sp.ceiling(m / R) - 1
    i = m - q * R
    s0 = Wc / C + sp.Max(RTT + d + sp.Min(m, R) * Wr / C, u_time)
    period = sp.Max(RTT + d + Wr / C + Wb / C, R * Wb / C)
    last_sent = s0 + (i - 1) * Wb / C + Wl / C + q * period
    with_r2t = last_sent + RTT + d + Ws / C
    without = Wc / C + u_time + RTT + d + Ws / C
    return sp.Piecewise((without, sp.Eq(m, 0)), (with_r2t, True))


def wire_values(session: Session, size_bytes: int, mtu: int = 1500) -> dict:
    """The wire bytes of a write's messages (:func:`models.iscsi.messages`, framed as
    :func:`models.iscsi.wire_bytes` does), as substitutions for ``W_c, W_u, W_r, W_b, W_l, W_s``.

    ``W_b`` is the Data-Out of the first burst (every burst but the last is full), ``W_l`` of the
    last; both 0 when nothing is solicited, ``W_u`` 0 when nothing goes unsolicited.
    """
    msgs = iscsi.messages("write", size_bytes, session)
    wire = [iscsi.message_wire_bytes(m_, mtu) for m_ in msgs]
    kinds = [m_.kind for m_ in msgs]
    unsolicited = [w for m_, w in zip(msgs, wire) if "unsolicited" in m_.kind]
    data = [
        w
        for m_, w in zip(msgs, wire)
        if m_.direction == "C>S" and m_.after is not None and "Data-Out" in m_.kind
    ]
    r2t = iscsi.wire_bytes(iscsi.Pdu("R2T").writes(session, False), mtu)
    assert kinds[0].startswith("command") and kinds[-1] == "response"
    return {
        Wc: wire[0],
        Wu: unsolicited[0] if unsolicited else 0,
        Wr: r2t,
        Wb: data[0] if data else 0,
        Wl: data[-1] if data else 0,
        Ws: wire[-1],
    }


def latency_values(
    session: Session,
    size_bytes: int,
    rtt_s: float,
    link_bps: float,
    added_delay_s: float = 0.0,
    mtu: int = 1500,
) -> dict:
    """Every substitution :func:`write_latency_expr` needs: the keys and size
    (:func:`session_values`), the wire bytes (:func:`wire_values`), ``RTT``, ``d`` and ``C`` (bytes
    per second, from ``link_bps`` bits per second)."""
    return {
        **session_values(session, size_bytes),
        **wire_values(session, size_bytes, mtu),
        RTT: rtt_s,
        d: added_delay_s,
        C: sp.Rational(str(link_bps)) / 8,  # bits/s -> bytes/s
    }

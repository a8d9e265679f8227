"""When the bytes of one iSCSI command are on the link: wire bytes per message, the messages laid on
the link (``timeline``, with MaxOutstandingR2T's window sliding), the least latency and the
throughput bound they give.  The messages come from :mod:`models.iscsi.exchange`."""

from __future__ import annotations

from models import framing
from models.checks import non_negative, positive

from .exchange import (
    Leg,
    Message,
    Pdu,
    _check,
    messages,
)
from .session import Session

__all__ = [
    "wire_bytes",
    "leg_wire_bytes",
    "message_wire_bytes",
    "timeline",
    "pace",
    "command_latency_s",
    "throughput_bound_Bps",
]


def wire_bytes(writes, mtu: int = 1500) -> int:
    """Bytes that ``send()`` calls of the given sizes put on an Ethernet wire with TCP_NODELAY.

    Each call leaves at once as ``ceil(size / MSS)`` segments (the last one partial), each paying
    the TCP/IP/Ethernet overhead of :mod:`models.framing`.
    """
    return _wire(writes, framing.mss(mtu))


def _wire(writes, mss: int) -> int:
    return sum(w + -(-w // mss) * framing.FRAME_OVERHEAD_BYTES for w in writes)


def leg_wire_bytes(leg: Leg, mtu: int = 1500) -> int:
    """Bytes a leg occupies on an Ethernet wire (:func:`wire_bytes` of its writes)."""
    return wire_bytes(leg.writes, mtu)


def message_wire_bytes(message: Message, mtu: int = 1500) -> int:
    """Bytes a message occupies on an Ethernet wire (:func:`wire_bytes` of its writes)."""
    return wire_bytes(message.writes, mtu)


def timeline(
    op: str,
    size_bytes: int,
    rtt_s: float,
    link_bps: float,
    session: Session | None = None,
    mtu: int = 1500,
    added_delay_s: float = 0.0,
) -> list:
    """When each message of one command leaves and arrives on an idle path, seconds from the start.

    Each direction is one link of ``link_bps`` bits per second that sends one message after another
    (in the order :func:`messages` gives, which is the order they become ready); a message becomes
    ready when the message it waits for has arrived (at once if it waits for none), and arrives
    ``rtt_s / 2`` after its last byte left, plus ``added_delay_s`` if the target sent it (a delay
    applied to every packet the target sends, as in Bjørgeengen's (2010) throttle).  Processing
    takes no time.  Returns ``(message, start_s, sent_s, arrive_s)`` per message.
    """
    s = _check(op, size_bytes, session)
    rtt = non_negative("rtt_s", rtt_s)
    added = non_negative("added_delay_s", added_delay_s)
    rate = positive("link_bps", link_bps) / 8  # bits/s -> bytes/s
    mss = framing.mss(mtu)
    free = {"C>S": 0.0, "S>C": 0.0}
    arrive: list[float] = []
    out = []
    for m in messages(op, size_bytes, s):
        ready = 0.0 if m.after is None else arrive[m.after]
        start = max(ready, free[m.direction])
        sent = start + _wire(m.writes, mss) / rate
        free[m.direction] = sent
        end = sent + rtt / 2 + (added if m.direction == "S>C" else 0.0)
        arrive.append(end)
        out.append((m, start, sent, end))
    return out


def pace(
    size_bytes: int,
    rtt_s: float,
    link_bps: float,
    session: Session | None = None,
    mtu: int = 1500,
    added_delay_s: float = 0.0,
) -> str:
    """What sets the pace of a write's solicited bursts: ``"no R2T"`` (nothing solicited), ``"one
    window"`` (every R2T goes when the command arrives), ``"window"`` (each group of R bursts waits
    for R2Ts: one burst's round trip ``RTT + d + W_r/C + W_b/C`` is longer than sending R bursts)
    or ``"link"`` (the R2Ts arrive before the link is free).

    >>> s = Session(immediate_data=False, max_burst_length=65536,
    ...             max_outstanding_r2t=4)
    >>> cases = ((2**20, 1e-3), (2**20, 1e-2), (65536, 1e-2))
    >>> [pace(n, rtt, 1e9, s) for n, rtt in cases]
    ['link', 'window', 'one window']
    """
    s = _check("write", size_bytes, session)
    rtt = non_negative("rtt_s", rtt_s)
    added = non_negative("added_delay_s", added_delay_s)
    rate = positive("link_bps", link_bps) / 8  # bits/s -> bytes/s
    msgs = messages("write", size_bytes, s)
    data = [m for m in msgs if m.direction == "C>S" and m.after is not None]
    if not data:
        return "no R2T"
    if len(data) <= s.max_outstanding_r2t:
        return "one window"
    t_b = message_wire_bytes(data[0], mtu) / rate
    t_r = wire_bytes(Pdu("R2T").writes(s, False), mtu) / rate
    return "window" if rtt + added + t_r + t_b > s.max_outstanding_r2t * t_b else "link"


def command_latency_s(
    op: str,
    size_bytes: int,
    rtt_s: float,
    link_bps: float,
    session: Session | None = None,
    mtu: int = 1500,
    added_delay_s: float = 0.0,
) -> float:
    """Least time for one command alone on an idle path, seconds: when the last message of its
    ``timeline()`` arrives (``rtt_s`` the round trip of an empty message, ``link_bps`` bits per
    second, ``added_delay_s`` added to every message the target sends).

    >>> keys = dict(initial_r2t=True, immediate_data=False, max_burst_length=65536)
    >>> s, s4 = Session(**keys), Session(**keys, max_outstanding_r2t=4)
    >>> one = command_latency_s("write", 2**20, 1e-3, 1e9, s)
    >>> four = command_latency_s("write", 2**20, 1e-3, 1e9, s4)
    >>> round(one * 1e3, 2), round(four * 1e3, 2)
    (26.01, 11.0)
    """
    return timeline(op, size_bytes, rtt_s, link_bps, session, mtu, added_delay_s)[-1][3]


def throughput_bound_Bps(
    op: str,
    size_bytes: int,
    rtt_s: float,
    link_bps: float,
    qd: int = 1,
    session: Session | None = None,
    mtu: int = 1500,
) -> float:
    """Upper bound on data bytes per second with ``qd`` commands in flight.

    ``min(qd * size / latency, size * C / wire bytes of the busier
    direction)``: the ring identity at the least latency
    (:func:`command_latency_s`), capped by the link carrying one
    command's bytes in the direction the data flow.
    """
    s = _check(op, size_bytes, session)
    if isinstance(qd, bool) or not isinstance(qd, int) or qd < 1:
        raise ValueError(f"qd must be a whole number >= 1, got {qd!r}")
    if size_bytes == 0:
        raise ValueError("size_bytes must be positive for a throughput")
    rate = positive("link_bps", link_bps) / 8  # bits/s -> bytes/s
    per_dir = {"C>S": 0, "S>C": 0}
    for m in messages(op, size_bytes, s):
        per_dir[m.direction] += message_wire_bytes(m, mtu)
    ring = qd * size_bytes / command_latency_s(op, size_bytes, rtt_s, link_bps, s, mtu)
    link = size_bytes * rate / max(per_dir.values())
    return min(ring, link)

"""The connection's handshake as the simulator prices it (``Host.handshake_rtt``).

The simulated connection starts established, but a real one first exchanges a SYN, a SYN-ACK and
an ACK, and each end takes the exchange's round trip as its first RTT sample (the server in
``tcp_check_req``, via ``tcp_synack_rtt_meas``; the client when the SYN-ACK arrives).  Both
samples are one bare header each way over the idle path: :func:`round_trip_fs`.  The SYN's
options (12 bytes more than a data segment's timestamp option) and the CPU of making the
connection (the server's child socket, the client's work on the SYN-ACK) are not counted.
"""

from __future__ import annotations

from typing import Any

from models import framing

__all__ = ["idle_trip_fs", "round_trip_fs"]


def idle_trip_fs(ch: Any) -> int:
    """Femtoseconds from handing a bare header to the idle channel ``ch`` (a
    :class:`~models.sim.link.Channel`) to its delivery: the transmit path's start latency, the
    frame's wire time (none through a full token bucket), propagation, the receive path's
    wake-up (the receive rule's ``idle_fs()``) and the soft interrupt's CPU for a pure ACK,
    which on one machine runs as the frame is sent.  A receive rule without ``idle_fs`` is
    refused by name."""
    idle = getattr(ch.rx, "idle_fs", None)
    if idle is None:
        raise ValueError(
            f"receive rule {type(ch.rx).__name__} has no idle_fs(): the handshake's "
            "round trip (Host.handshake_rtt) needs its wake-up from idle"
        )
    wire = (
        0 if ch.qdisc is not None else ch.wire_fs(framing.FRAME_OVERHEAD_BYTES)
    )  # a full bucket: none
    seen = ch.tx_latency + wire + ch.prop + idle()
    cost = ch.ack_softirq
    if ch.cpu is None:
        return seen + cost
    return seen if seen > cost else cost  # (one machine: netif_rx runs it at once)


def round_trip_fs(there: Any, back: Any) -> int:
    """The handshake's round trip, fs: a bare header over the idle channel ``there`` and one
    over ``back`` (SYN and SYN-ACK for the client, SYN-ACK and ACK for the server)."""
    return idle_trip_fs(there) + idle_trip_fs(back)

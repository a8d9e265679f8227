"""The receiving half of a TCP endpoint: in-order data, reads, ACKs.

The receiver keeps two sequence numbers: ``rcv_nxt`` (the next byte
expected) and ``copied_seq`` (the next byte the application reads).
When to acknowledge is the ACK rule's business
(:mod:`models.sim.rules.ack`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["Receiver"]


class Receiver:
    """Receive side of one endpoint.

    ``ep`` supplies ``loop``, ``clock`` and ``send_ack(now)``; ``advmss``
    is this host's advertised MSS (bytes); ``ack_rule`` is the ACK rule
    class of the kernel profile.
    """

    __slots__ = ("ep", "loop", "clock", "advmss", "rcv_nxt", "copied_seq", "ack")

    def __init__(self, ep, advmss: int, ack_rule, profile) -> None:
        self.ep = ep
        self.loop = ep.loop
        self.clock = ep.clock
        self.advmss = advmss
        self.rcv_nxt = 1  # next byte expected
        self.copied_seq = 1  # next byte the application reads
        self.ack = ack_rule(self, profile)

    def on_data(self, now: int, seq: int, end: int, psh: bool) -> None:
        """An arriving data segment ``[seq, end)`` (must be in order)."""
        if seq != self.rcv_nxt:
            raise AssertionError(f"segment {seq}:{end} out of order (rcv_nxt {self.rcv_nxt})")
        self.rcv_nxt = end
        self.ack.data_received(now, end - seq, psh)

    def read(self, now: int) -> int:
        """The application reads everything queued (``tcp_recvmsg`` +
        ``tcp_cleanup_rbuf``); returns the bytes read."""
        copied = self.rcv_nxt - self.copied_seq
        if copied > 0:
            self.copied_seq = self.rcv_nxt
            self.ack.on_read(now)
        return copied

    def send_ack(self, now: int) -> None:
        """A pure ACK now (``tcp_send_ack``)."""
        self.ep.send_ack(now)

    # -- the fast-forward's view (models.sim.fastforward) -------------------

    @property
    def cycle_stream(self) -> int:
        """Its sequence numbers count the peer's bytes."""
        return 1 - self.ep.side

    def cycle_parts(self) -> dict:
        return {"ack": self.ack}

    def cycle_state(self, view: View) -> Hashable:
        return view.seq(self.rcv_nxt), view.seq(self.copied_seq)

    def cycle_signature(self, view: View) -> Hashable:
        return self.rcv_nxt - self.copied_seq

    def cycle_shift(self, shift: Shift) -> None:
        d = shift.seq()
        self.rcv_nxt += d
        self.copied_seq += d

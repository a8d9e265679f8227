"""A TCP segment as the simulator passes it between the ends: its payload's sequence range, its
cumulative ACK, its PSH flag, the window it advertises (when the kernel profile carries it:
``KernelProfile.peer_window``) and the times its capture points see it.

>>> s = Segment(1, 1, 561, 49, True)
>>> s.length, s.seen(5)
(560, (5, 1, True, 1, 561, 49))
"""

from __future__ import annotations

__all__ = ["Segment"]


class Segment:
    """A TCP segment: payload ``[seq, end)`` (``end == seq``: pure ACK)."""

    __slots__ = ("src", "seq", "end", "ack", "psh", "wnd", "t_tx", "t_rx", "cpu")

    def __init__(self, src: int, seq: int, end: int, ack: int, psh: bool, wnd: int = -1) -> None:
        self.src = src  # 0 = client, 1 = server
        self.seq = seq  # first payload byte (relative, from 1)
        self.end = end  # one past the last payload byte
        self.ack = ack  # cumulative ACK: next byte expected from peer
        self.psh = psh  # PSH flag
        # the window it advertises, bytes beyond ``ack`` (tcp_select_window); -1: not carried
        # (the sender keeps its fixed window: KernelProfile.peer_window off)
        self.wnd = wnd
        self.t_tx = 0  # fs: handed to the NIC (tcpdump, sender)
        self.t_rx = 0  # fs: at the receiver's capture point
        # the CPU whose soft interrupt receives it, when not its channel's: sent from the
        # receive soft interrupt of the other direction (an ACK, a push that ACK allowed),
        # it leaves from the CPU that runs that soft interrupt (one machine), or None
        self.cpu = None

    @property
    def length(self) -> int:
        """Payload bytes."""
        return self.end - self.seq

    def seen(self, t: int) -> tuple:
        """A trace entry: what a capture point sees of it at ``t`` fs, ``(t, src, psh, seq,
        end, ack)``, copied (the object changes later: GRO merges the next segment into it)."""
        return (t, self.src, self.psh, self.seq, self.end, self.ack)

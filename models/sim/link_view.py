"""The fast-forward's view of a :class:`~models.sim.link.Channel`
(:mod:`models.sim.fastforward`): its state, counters and events (its
shift is the channel's own), kept apart from the transmit and receive
paths.  Times are femtoseconds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.sim.tbf import HELD

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["ChannelView", "segment_state", "shift_segment"]


def segment_state(g: Any, view: View) -> tuple:
    """A segment as the fast-forward compares it: sequence numbers in its sender's stream, the ACK
    in the other, PSH, the window it advertises, and whether it is received on the other CPU."""
    seq = view.seq
    return (
        g.src,
        seq(g.seq, g.src),
        seq(g.end, g.src),
        seq(g.ack, 1 - g.src),
        g.psh,
        g.wnd,  # (the window it advertises: bytes, not a place in the stream)
        g.cpu is not None,  # (received on the other CPU: the only other one)
    )


def shift_segment(g: Any, shift: Shift) -> None:
    """Move a segment that waits (in a delivery, a socket's backlog) by the fast-forward's jump."""
    d = shift.seq(g.src)
    g.seq += d
    g.end += d
    g.ack += shift.seq(1 - g.src)
    g.t_tx += shift.dt
    g.t_rx += shift.dt


class ChannelView:
    """The ``cycle_*`` methods of the channel but its shift (a base class
    of it)."""

    __slots__ = ()
    # (the channel's fields, for the type checker)
    rx: Any
    cpu: Any
    qdisc: Any
    busy: int
    softirq_busy: int
    frames: int
    data_frames: int
    payload_bytes: int
    gro_merged: int
    gro_open: bool
    gro_size: int
    batch: Any
    batch_time: int
    free_at: int
    softirq_free: int
    in_nic: Any

    #: A cache, a handle of the pending delivery (stated as an event) and
    #: the sum of ``in_nic``.
    cycle_transient = ("_wire_fs", "batch_event", "nic_bytes")

    def cycle_parts(self) -> dict:
        parts = {"rx": self.rx}
        if self.cpu is not None:
            parts["cpu"] = self.cpu  # shared with a thread
        if self.qdisc is not None:
            parts["qdisc"] = self.qdisc
        return parts

    def cycle_counters(self) -> dict:
        return {
            "busy": self.busy,
            "softirq_busy": self.softirq_busy,
            "frames": self.frames,
            "data_frames": self.data_frames,
            "payload_bytes": self.payload_bytes,
            "gro_merged": self.gro_merged,
        }

    def cycle_state(self, view: View) -> Hashable:
        """Its queues' ends and the frames still in the transmit path
        (times relative to now; a frame waiting in the qdisc: -1), the
        open delivery batch; the receive rule and the qdisc are parts."""
        now = view.now
        batch = None
        if self.batch is not None:
            batch = (self.batch_time - now, self.gro_open, self.gro_size)
        return (
            self.free_at - now if self.free_at >= now else -1,
            max(self.softirq_free - now, 0),
            tuple((t - now if t != HELD else -1, n) for t, n in self.in_nic if t > now),
            batch,
        )

    def cycle_signature(self, view: View) -> Hashable:
        return self.free_at - view.now

    def cycle_event(self, name: str, time: int, batch: list, view: View) -> Hashable:
        """A delivery: its time and its segments (sequence numbers in
        their sender's stream, the ACK in the other)."""
        return view.time(time), tuple(segment_state(g, view) for g in batch)

    def cycle_shift_event(self, name: str, time: int, batch: list, shift: Shift) -> tuple:
        for g in batch:
            shift_segment(g, shift)
        return time + shift.dt, batch

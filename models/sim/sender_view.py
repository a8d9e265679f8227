"""The fast-forward's view of a :class:`~models.sim.sender.Sender`
(:mod:`models.sim.fastforward`): its state and counters (its shift is the
sender's own), kept apart from the sending logic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import View

__all__ = ["SenderView"]


class SenderView:
    """The ``cycle_*`` methods of the sender but its shift (a base class
    of it)."""

    __slots__ = ()
    # (the sender's fields, for the type checker)
    ep: Any
    nagle: Any
    cork: Any
    probe: Any
    probe_timer: Any
    cc: Any
    queue: Any
    data_segments: int
    buffers: int
    soft_cpu_fs: int
    probes: int
    hold_fs: int
    hold_max: int
    write_seq: int
    snd_nxt: int
    snd_una: int
    snd_sml: int
    snd_wnd: int
    mode: int
    corked: bool

    #: Meaningful only inside a ``send()`` call or until the CPU is
    #: taken (at the same instant).
    cycle_transient = ("in_send", "sent_in_call", "thread_cpu", "soft_cpu")

    @property
    def cycle_stream(self) -> int:
        """Its sequence numbers count this host's bytes."""
        return self.ep.side

    def cycle_parts(self) -> dict:
        return {
            "nagle": self.nagle,
            "cork": self.cork,
            "probe": self.probe,
            "probe_timer": self.probe_timer,
            "cc": self.cc,
        }

    def cycle_counters(self) -> dict:
        return {
            "data_segments": self.data_segments,
            "buffers": self.buffers,
            "soft_cpu_fs": self.soft_cpu_fs,
            "probes": self.probes,
            "hold_fs": self.hold_fs,
        }

    def cycle_state(self, view: View) -> Hashable:
        seq = view.seq
        return (
            seq(self.write_seq),
            seq(self.snd_nxt),
            seq(self.snd_una),
            seq(self.snd_sml) if self.snd_sml > self.snd_una else None,
            tuple((seq(k.start), seq(k.end), k.psh, view.time(k.t_write)) for k in self.queue),
            self.mode,
            self.corked,
            self.hold_max,
            self.snd_wnd,
        )

    def cycle_signature(self, view: View) -> Hashable:
        return len(self.queue), self.write_seq - self.snd_nxt, self.snd_nxt - self.snd_una

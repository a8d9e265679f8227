"""What a sender's transmissions cost in CPU, and who pays (a base class of
:class:`models.sim.sender.Sender`).

Transmit CPU (:class:`models.sim.sender.TxCosts`): ``send_fs`` per ``send()`` call,
``gso_fs`` per buffer sent and ``seg_fs`` per wire segment.  What a
``send()`` call transmits is the calling thread's (``thread_cpu``, taken
by the thread with :meth:`SendCpu.take_thread_cpu`); what leaves outside
one (an ACK's push, a TX completion, the probe or pacing timer, a flush)
is paid by the soft interrupt that releases it: :meth:`SendCpu.charge_soft`
adds it to the receive soft-interrupt queue of this host
(``ep.inbound``), after the work already queued there.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SendCpu"]


class SendCpu:
    """The transmit-CPU methods of :class:`models.sim.sender.Sender`, which holds their fields
    (``in_send``, ``cpu_first``, ``thread_cpu``, ``soft_cpu``, ``soft_cpu_fs``, ``ep``)."""

    __slots__ = ()

    def pays_in_call(self: Any, cost: int) -> bool:
        """Whether the receiving stack's ``cost`` fs for a segment just sent runs inside our
        thread's ``send()`` (``Host.send_cpu_first``: the call's CPU is queued at its end), which
        then pays for it."""
        if self.in_send and self.cpu_first:
            self.thread_cpu += cost
            return True
        return False

    def take_thread_cpu(self: Any) -> int:
        """The transmit CPU of the thread's calls since the last take, fs."""
        cpu = self.thread_cpu
        self.thread_cpu = 0
        return cpu

    def charge_soft(self: Any, now: int, own: bool = False) -> None:
        """Charge what left outside a ``send()`` to this host's soft
        interrupt (``ep.inbound``), after the work queued there, on the CPU
        that runs it (``ep.ctx_cpu``, else the channel's); with ``own``, on
        the CPU of the host's thread where a timer it armed is pinned
        (``ep.own_cpu``; bbr's pacing timer), which its next work waits for."""
        cpu = self.soft_cpu
        if cpu:
            self.soft_cpu = 0
            self.soft_cpu_fs += cpu
            ep = self.ep
            inbound = getattr(ep, "inbound", None)
            pinned = getattr(ep, "own_cpu", None) if own else None
            if pinned is not None:  # (later frames into this host need not wait)
                pinned.run(now, cpu)
                if inbound is not None:
                    inbound.softirq_busy += cpu
            elif inbound is not None:
                inbound.charge(now, cpu, getattr(ep, "ctx_cpu", None))

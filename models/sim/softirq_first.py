"""A soft interrupt runs before the thread it interrupted goes on (``Host.softirq_first``).

When the two ends share a machine with a CPU each (``ep.own_cpu``), the receive soft interrupt
of a frame runs on its sender's CPU, and what it sends in turn (an ACK, a Nagle-held request
released by that ACK) is charged there too (:meth:`models.sim.sender_cpu.SendCpu.charge_soft`).
In Linux that work runs inside the ``send()`` call that raised it (``do_softirq`` when the
transmit path re-enables bottom halves), so the call returns, and the thread goes on, only after
it.  The simulator queues it on the CPU behind the thread's work; a thread's next action (the
writes after it processed a message, its next ``send()`` call) would then take effect before
that work has run.  With the flag on it waits until the work queued on its CPU meanwhile is
done: a response's header written with ``MSG_MORE`` is then not left alone in the send queue
while a request that arrived from that soft interrupt pushes it out, which Linux's
``tcp_data_snd_check`` would do with ``TCP_NODELAY`` set (``tcp_push`` corks only the call that
says ``MSG_MORE``).  :class:`models.sim.app.AppThread` takes these methods; without the flag
(or on a CPU of its own) it never schedules them.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

__all__ = ["SoftIrqFirst"]


class SoftIrqFirst:
    """The deferred steps of :class:`models.sim.app.AppThread` (a mixin)."""

    def _behind_soft_irq(self: Any, now: int, handler: Any, arg: Any) -> bool:
        """Whether work queued on the thread's CPU still runs at ``now``; if so ``handler(arg)``
        is scheduled for its end."""
        free = self.ep.own_cpu.free_at[0]
        if free <= now:
            return False
        heappush(self.heap, [free, next(self.ticket), handler, arg])
        return True

    def _done_s(self: Any, now: int, item: tuple) -> None:
        if not self._behind_soft_irq(now, self.done, item):
            self._done(now, item)

    def _next_call_s(self: Any, now: int, _arg: object) -> None:
        if not self._behind_soft_irq(now, self.next_call, _arg):
            self._next_call(now, _arg)

"""A thread's preemption points on a CPU shared with wake-up preemption (``Link.wake_preempt``).

With it the events a thread schedules for itself (a message processed, the next ``send()``
call, the next step) are preemption points: if a thread woken meanwhile is to preempt this one
(``CpuPool.resched``, the run queue's decision), the thread gives way
(:meth:`models.sim.cpu.CpuPool.yield_cpu`) and keeps what it was about to do in ``parked``
(the method's name and its argument), which the pool runs when the thread has the CPU again.
:class:`models.sim.app.AppThread` takes these methods; without wake-up preemption it never
schedules them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import View

__all__ = ["PreemptionPoints"]


class PreemptionPoints:
    """The preemption points of :class:`models.sim.app.AppThread` (a mixin)."""

    def _gives_way(self: Any, now: int, name: str, arg: Any) -> bool:
        """Whether the thread gives way at ``now``, keeping ``name(now, arg)`` for later."""
        if self.cpu.resched is not self:
            return False
        self.cpu.yield_cpu(self, now, name, arg)
        return True

    def _done_p(self: Any, now: int, item: tuple) -> None:
        if not self._gives_way(now, "_done", item):
            self._done(now, item)

    def _next_call_p(self: Any, now: int, _arg: object) -> None:
        if not self._gives_way(now, "_next_call", _arg):
            self._next_call(now, _arg)

    def _step_p(self: Any, now: int, _arg: object) -> None:
        if not self._gives_way(now, "_step", _arg):
            self._step(now, _arg)

    def _parked_state(self: Any, view: View) -> Hashable:
        """What it keeps while preempted, for the fast-forward's cycle state."""
        if self.parked is None:
            return None
        name, arg = self.parked
        return name, None if arg is None else self._item_state(arg, view)

"""The receive path: when the host's network stack first sees a frame.

A frame leaves the cable at ``arrive`` (femtoseconds); the receive rule
says when the host's capture point sees it (``seen``), after which the
soft interrupt processes it in order (:class:`models.sim.link.Channel`).
A host part, not a kernel rule: the class follows from the host's
``rx_usecs`` (:class:`models.sim.scenario.Host`).

* :class:`PerWakeup`: a frame reaching an idle path waits the start
  latency (``SR`` or ``CR``); frames arriving while that wake-up is under
  way ride along with it.  Every later frame pays its own.
* :class:`InterruptModeration`: the NIC raises at most one interrupt per
  holdoff ``rx-usecs``, timed from the previous interrupt (``ethtool -C
  rx-usecs``, adaptive moderation off); the interrupt schedules a NAPI
  poll that takes every frame in the ring, and keeps polling while frames
  go on arriving (``napi_poll``, ``net_rx_action``); only when a poll
  finds the ring empty does it complete (``napi_complete_done``) and the
  next frame needs a new interrupt.

>>> pw = PerWakeup(latency=5)
>>> [pw.seen(t, poll_end=0) for t in (100, 102, 110)]
[105, 105, 115]
>>> im = InterruptModeration(latency=5, holdoff=50)
>>> [im.seen(t, poll_end=0) for t in (100, 102, 110, 300)]
[105, 105, 155, 305]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["PerWakeup", "InterruptModeration"]


# rule: per-wakeup
class PerWakeup:
    """One start latency per idle period of the receive path.

    ``seen(arrive, poll_end)`` returns when the capture point sees a frame
    that arrived at ``arrive``; ``poll_end`` is when the soft interrupt
    finishes the frames it already holds (unused here).
    """

    __slots__ = ("latency", "wake_end")

    def __init__(self, latency: int) -> None:
        self.latency = latency
        self.wake_end = -1  # fs: end of the current wake-up

    def seen(self, arrive: int, poll_end: int) -> int:
        if arrive < self.wake_end:  # ride along with the wake-up
            return self.wake_end
        self.wake_end = arrive + self.latency
        return self.wake_end

    # end rule: per-wakeup

    def idle_fs(self) -> int:
        """fs from a frame's arrival on an idle path to the capture point."""
        return self.latency

    def cycle_state(self, view: View) -> Hashable:
        """The wake-up under way, if any."""
        now = view.now
        return self.wake_end - now if self.wake_end > now else None

    def cycle_signature(self, view: View) -> Hashable:
        return self.wake_end - view.now

    def cycle_shift(self, shift: Shift) -> None:
        self.wake_end += shift.dt


# rule: interrupt-moderation
class InterruptModeration(PerWakeup):
    """``rx-usecs`` interrupt moderation with NAPI polling.

    A frame that finds a poll under way (the interrupt raised, or frames
    still being processed) is taken by that poll: seen at once, processed
    after the frames before it.  Otherwise it raises an interrupt, no
    earlier than ``holdoff`` after the previous one, and is seen
    ``latency`` after the interrupt (the hard interrupt and the poll's
    start).  ``holdoff = 0`` is NAPI without moderation.
    """

    __slots__ = ("holdoff", "last_irq")

    def __init__(self, latency: int, holdoff: int) -> None:
        super().__init__(latency)
        self.holdoff = holdoff
        self.last_irq: int | None = None  # fs: previous interrupt

    def seen(self, arrive: int, poll_end: int) -> int:
        if arrive < self.wake_end:  # the interrupt is pending
            return self.wake_end
        if arrive < poll_end:  # the poll is still running
            return arrive
        irq = arrive
        if self.last_irq is not None and irq < self.last_irq + self.holdoff:
            irq = self.last_irq + self.holdoff  # moderated
        self.last_irq = irq
        self.wake_end = irq + self.latency
        return self.wake_end

    # end rule: interrupt-moderation

    def cycle_state(self, view: View) -> Hashable:
        """The wake-up, and the previous interrupt while it still holds
        the next one off."""
        now = view.now
        irq: int | str | None = None
        if self.last_irq is not None:
            old = self.last_irq + self.holdoff <= now
            irq = "old" if old else self.last_irq - now
        return PerWakeup.cycle_state(self, view), irq

    def cycle_shift(self, shift: Shift) -> None:
        super().cycle_shift(shift)
        if self.last_irq is not None:
            self.last_irq += shift.dt

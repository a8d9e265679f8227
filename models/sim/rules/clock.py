"""Tick clocks: how the kernel's timers round time to ``HZ`` ticks.

TCP's delayed-ACK and probe timers are set in jiffies (ticks of
``1/HZ`` s) and fire on tick boundaries (``include/linux/jiffies.h``,
``kernel/time/timer.c``).  A clock converts simulated time (integer
femtoseconds) to jiffies and back; a policy class per timer wheel:

* :class:`TickClock`: a timer armed ``n`` ticks ahead fires on the
  ``n``-th tick boundary after the current tick began (the cascading
  wheel of Linux 2.4-4.7; the textbook 40 ms and 200 ms).
* :class:`WheelClock`: since Linux 4.8 the wheel never fires early:
  ``calc_index`` rounds a level-0 expiry up by one tick
  (``expires = (expires >> LVL_SHIFT(lvl)) + 1``), so the timer fires
  one tick after it is due.

The simulation starts at ``phase`` femtoseconds into a tick.

Phase sensitivity.  A jiffy comparison such as "fewer than ``n`` ticks
between ``t0`` and ``t1``" may depend on where the ticks fall (on the
phase) or not: if ``t1 - t0`` is far from ``n`` ticks it does not.  The
clock counts the comparisons whose outcome depends on the phase, and the
timers that fire (a firing time is a tick boundary), in
``TickClock.sensitive``; the cycle detector uses that count to know
when a repeat of the state that ignores the phase is a true repeat.

>>> ms = 10**12                       # femtoseconds per millisecond
>>> c = TickClock(hz=250, phase=0)
>>> c.jiffies(4 * ms - 1), c.jiffies(4 * ms)
(0, 1)
>>> c.timer_time(1 * ms, 10) // ms, WheelClock(250, 0).timer_time(ms, 10) // ms
(40, 44)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from models.sim.events import FS

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["TickClock", "WheelClock"]


# rule: tick-clock
class TickClock:
    """Jiffies at ``hz`` ticks per second, starting ``phase`` fs into a tick.

    A timer armed ``n`` ticks ahead fires at the start of tick
    ``jiffies(now) + n + roundup``; here ``roundup = 0``.
    """

    roundup = 0
    __slots__ = ("hz", "phase", "sensitive")

    def __init__(self, hz: int, phase: int) -> None:
        self.hz = hz
        self.phase = phase
        self.sensitive = 0

    def jiffies(self, t: int) -> int:
        """The tick count at time ``t`` (fs)."""
        return (t + self.phase) * self.hz // FS

    def tick_start(self, j: int) -> int:
        """The first femtosecond of tick ``j``."""
        return -(-j * FS // self.hz) - self.phase

    def timer_time(self, armed: int, ticks: int) -> int:
        """When a timer armed at ``armed`` (fs) for ``ticks`` fires:
        ``tick_start(jiffies(armed) + ticks + roundup)``, computed in
        one go (it runs for every timer armed)."""
        hz, phase = self.hz, self.phase
        j = (armed + phase) * hz // FS + ticks + self.roundup
        return -(-j * FS // hz) - phase

    def subtick(self, t: int) -> int:
        """Where ``t`` falls inside its tick (in units of fs / hz)."""
        return (t + self.phase) * self.hz % FS

    def ticks_at_least(self, t0: int, t1: int, n: int) -> bool:
        """``jiffies(t1) - jiffies(t0) >= n`` for ``t0 <= t1``.

        Counted in ``sensitive`` when the answer depends on the
        phase (``t1 - t0`` within one tick of ``n`` ticks).
        """
        q, r = divmod((t1 - t0) * self.hz, FS)
        lo, hi = q, q + (1 if r else 0)  # the possible jiffy differences
        if lo >= n:
            return True
        if hi < n:
            return False
        self.sensitive += 1
        return self.jiffies(t1) - self.jiffies(t0) >= n

    def fired(self) -> None:
        """A timer fired: its time was set by the phase."""
        self.sensitive += 1

    # end rule: tick-clock

    def cycle_state(self, view: View) -> Hashable:
        return None  # its phase: cycle_phase

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing to move (``sensitive`` serves the detection only)."""

    def cycle_phase(self, now: int) -> tuple[int, int]:
        """Where ``now`` falls in its tick, and how often the run has
        depended on that (``sensitive``)."""
        return self.subtick(now), self.sensitive


# rule: wheel-clock
class WheelClock(TickClock):
    """The Linux >= 4.8 timer wheel: a timer fires one tick late."""

    roundup = 1
    __slots__ = ()

    # end rule: wheel-clock

    cycle_state = TickClock.cycle_state  # no state of its own

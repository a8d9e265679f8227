"""The event loop: every event of a simulation is scheduled through it.

Time is an integer number of femtoseconds (:data:`FS` per second), so
sums of stage times are exact, runs are identical on every platform, and
a repeating state can be recognised exactly (:mod:`models.sim.cycles`).

An event is ``handler(now, arg)`` at a time; events at the same time run
in the order they were scheduled.  :meth:`EventLoop.schedule` returns a
handle that :meth:`EventLoop.cancel` accepts: a cancelled event is
skipped and not counted.  :class:`Timer` wraps the arm/cancel pattern of
a kernel timer.

>>> loop = EventLoop()
>>> seen = []
>>> _ = loop.schedule(5, lambda now, arg: seen.append((now, arg)), "b")
>>> h = loop.schedule(3, lambda now, arg: seen.append((now, arg)), "x")
>>> _ = loop.schedule(3, lambda now, arg: seen.append((now, arg)), "a")
>>> loop.cancel(h)
>>> loop.run()
>>> seen, loop.events
([(3, 'a'), (5, 'b')], 2)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from heapq import heapify, heappop, heappush
from typing import Any

__all__ = ["FS", "EventLoop", "Timer", "seconds_to_fs", "fs_to_seconds"]

#: Femtoseconds per second (the simulator counts time in whole femtoseconds).
FS = 10**15

Handler = Callable[[int, Any], None]


def seconds_to_fs(seconds: float) -> int:
    """Seconds (a float) to whole femtoseconds, rounded to the nearest."""
    return round(seconds * FS)  # s -> fs


def fs_to_seconds(fs: int) -> float:
    """Whole femtoseconds to seconds."""
    return fs / FS  # fs -> s


class EventLoop:
    """A heap of ``[time, order, handler, arg]`` entries run in order.

    Attributes
    ----------
    now : int
        The time of the event being run, femtoseconds.
    events : int
        Events run so far (cancelled ones are not counted).
    after_event : callable or None
        ``after_event(now)`` is called after every event (for checks).
    """

    __slots__ = ("_heap", "_order", "_dead", "now", "events", "_stopped", "after_event")

    def __init__(self) -> None:
        self._heap: list[list] = []
        self._order = 0
        self._dead = 0
        self.now = 0
        self.events = 0
        self._stopped = False
        self.after_event: Callable[[int], None] | None = None

    def schedule(self, time: int, handler: Handler, arg: Any = None) -> list:
        """Run ``handler(time, arg)`` at ``time`` femtoseconds; a handle."""
        if time < self.now:
            raise ValueError(f"time {time} fs is before the current time {self.now} fs")
        self._order += 1
        entry = [time, self._order, handler, arg]
        heappush(self._heap, entry)
        return entry

    def cancel(self, entry: list) -> None:
        """Cancel a scheduled event (no effect if it already ran)."""
        if entry[2] is not None:
            entry[2] = None
            self._dead += 1

    def stop(self) -> None:
        """Stop after the current event."""
        self._stopped = True

    def run(self, max_events: int = 100_000_000, pause: Callable[[], bool] | None = None) -> None:
        """Run events until stopped, the heap empties or a limit is hit.

        ``pause()``, if given, is called after every event and ends this
        call (without stopping the loop) when it returns true.
        """
        heap = self._heap
        check = self.after_event
        n = self.events
        limit = n + max_events
        self._stopped = False
        while heap and not self._stopped:
            entry = heappop(heap)
            handler = entry[2]
            if handler is None:
                self._dead -= 1
                continue
            entry[2] = None  # a handle of a past event is inert
            t = entry[0]
            self.now = t
            handler(t, entry[3])
            n += 1
            if check is not None:
                check(t)
            if n >= limit:
                self.events = n
                raise RuntimeError(f"simulation did not finish within {max_events} events")
            if pause is not None and pause():
                break
        self.events = n
        if self._dead > 64 and self._dead > len(heap) // 2:
            self._compact()

    def _compact(self) -> None:
        """Drop cancelled entries from the heap (order is kept)."""
        self._heap[:] = [e for e in self._heap if e[2] is not None]
        heapify(self._heap)
        self._dead = 0

    def pending_any(self) -> bool:
        """Whether any live event is scheduled."""
        return len(self._heap) > self._dead

    def live_count(self) -> int:
        """Events scheduled and not cancelled."""
        return len(self._heap) - self._dead

    def next_time(self) -> int | None:
        """When the next event runs (``None`` if the heap is empty or its
        first entry was cancelled: cheap, not exhaustive)."""
        heap = self._heap
        if heap and heap[0][2] is not None:
            return heap[0][0]
        return None

    # -- used by the cycle detector -------------------------------------

    def pending(self) -> Iterator[list]:
        """Live entries in the order they will run."""
        return iter(sorted(e for e in self._heap if e[2] is not None))

    def shift(self, dt: int, retime: Callable[[list], int]) -> None:
        """Move every live entry ``dt`` later (``retime(entry)`` may
        give another new time, for tick-aligned timers); ``now`` too."""
        self._compact()
        for e in self._heap:
            e[0] = retime(e)
        heapify(self._heap)
        self.now += dt


class Timer:
    """A one-shot kernel-style timer: armed at an expiry, or idle.

    ``Timer(loop, handler)``; ``arm`` replaces any earlier expiry
    (``mod_timer``), ``cancel`` disarms it (``sk_stop_timer``).  The
    handler runs as ``handler(now, None)`` at the expiry.  A timer armed
    in ticks (``arm_ticks``) remembers when and for how many ticks.
    """

    __slots__ = ("loop", "handler", "entry", "expires", "armed_at", "ticks")

    def __init__(self, loop: EventLoop, handler: Handler) -> None:
        self.loop = loop
        self.handler = handler
        self.entry: list | None = None
        self.expires = -1  # femtoseconds; -1 when idle
        self.armed_at = -1  # femtoseconds, with arm_ticks
        self.ticks = 0

    @property
    def armed(self) -> bool:
        return self.entry is not None

    def arm(self, expires: int) -> None:
        if self.entry is not None:
            self.loop.cancel(self.entry)
        self.expires = expires
        self.entry = self.loop.schedule(expires, self._fire)

    def arm_ticks(self, now: int, ticks: int, clock) -> None:
        """Arm ``ticks`` ahead on ``clock`` (a tick clock rule)."""
        self.armed_at = now
        self.ticks = ticks
        self.arm(clock.timer_time(now, ticks))

    def cancel(self) -> None:
        if self.entry is not None:
            self.loop.cancel(self.entry)
            self.entry = None
            self.expires = -1

    def _fire(self, now: int, _arg: Any) -> None:
        self.entry = None
        self.expires = -1
        self.handler(now, None)

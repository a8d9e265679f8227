"""The event loop: every event of a simulation is scheduled through it.

Time is an integer number of femtoseconds (:data:`FS` per second), so
sums of stage times are exact, runs are identical on every platform, and
a repeating state can be recognised exactly (:mod:`models.sim.fastforward`).

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

from collections.abc import Callable, Hashable, Iterator
from heapq import heapify, heappop, heappush
from itertools import count
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from models.sim.fastforward import Shift, View

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

    The simulator's own hot paths skip :meth:`schedule` (its check and
    its call) when the time cannot be in the past: they push
    ``[time, next(loop.ticket), handler, arg]`` onto ``loop.heap``
    themselves, which is the same.

    Attributes
    ----------
    now : int
        The time of the event being run, femtoseconds.
    events : int
        Events run so far (cancelled ones are not counted).
    after_event : callable or None
        ``after_event(now)`` is called after every event (for checks).
    heap : list
        The entries (a heap; see above).
    ticket : iterator
        The order numbers, one per entry.
    """

    __slots__ = (
        "_heap",
        "heap",
        "ticket",
        "_dead",
        "dropped",
        "now",
        "events",
        "_stopped",
        "after_event",
    )

    def __init__(self) -> None:
        self._heap: list[list] = []
        self.heap = self._heap  # the same list, for the fast path
        self.ticket = count(1)
        self._dead = 0
        self.dropped = 0  # times cancelled entries left the heap before their time
        self.now = 0
        self.events = 0
        self._stopped = False
        self.after_event: Callable[[int], None] | None = None

    def schedule(self, time: int, handler: Handler, arg: Any = None) -> list:
        """Run ``handler(time, arg)`` at ``time`` femtoseconds; a handle."""
        if time < self.now:
            raise ValueError(f"time {time} fs is before the current time {self.now} fs")
        entry = [time, next(self.ticket), handler, arg]
        heappush(self._heap, entry)
        return entry

    def cancel(self, entry: list) -> None:
        """Cancel a scheduled event (no effect if it already ran).

        Cancelled entries stay in the heap until their time comes, or
        until they make up most of it: then they are dropped at once (a
        delayed-ACK timer armed and cancelled for every request would
        otherwise leave 40 ms worth of them in the heap).
        """
        if entry[2] is not None:
            entry[2] = None
            self._dead += 1
            if self._dead > 8 and self._dead > len(self._heap) >> 1:
                self._compact()

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
        if check is None and pause is None:  # the fast path
            n = self._run(limit)
        else:
            while heap and not self._stopped:
                entry = heappop(heap)
                handler = entry[2]
                if handler is None:
                    arg = entry[3]  # (a timer's stand-in: its entry goes in)
                    if type(arg) is not Timer or not arg._due(entry):
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
                    break
                if pause is not None and pause():
                    break
        self.events = n
        if n >= limit:
            raise RuntimeError(f"simulation did not finish within {max_events} events")
        if self._dead > 8 and self._dead > len(heap) // 2:
            self._compact()

    def _run(self, limit: int) -> int:
        """The loop of :meth:`run` without checks; events run so far."""
        heap = self._heap
        pop = heappop
        n = self.events
        while heap:
            entry = pop(heap)
            t, _order, handler, arg = entry
            if handler is None:
                # (a timer's stand-in, Timer.arm_ticks: its own entry goes in)
                if type(arg) is not Timer or not arg._due(entry):
                    self._dead -= 1
                continue
            entry[2] = None  # a handle of a past event is inert
            self.now = t
            handler(t, arg)
            n += 1
            if self._stopped or n >= limit:
                break
        return n

    def _compact(self) -> None:
        """Drop cancelled entries from the heap, a timer's stand-in
        replaced by the timer's own entry (order is kept)."""
        live = []
        for e in self._heap:
            if e[2] is not None:
                live.append(e)
            elif type(e[3]) is Timer and e[3].entry is e:
                live.append(e[3]._own())
        self._heap[:] = live
        heapify(self._heap)
        self._dead = 0
        self.dropped += 1

    def pending_any(self) -> bool:
        """Whether any live event is scheduled."""
        return len(self._heap) > self._dead

    def live_count(self) -> int:
        """Events scheduled and not cancelled."""
        return len(self._heap) - self._dead

    def next_time(self) -> int | None:
        """When the next event runs (``None``: none is scheduled).
        Cancelled entries at the head of the heap are dropped."""
        heap = self._heap
        while heap and heap[0][2] is None:
            e = heappop(heap)
            if type(e[3]) is not Timer or not e[3]._due(e):
                self._dead -= 1
                self.dropped += 1
        return heap[0][0] if heap else None

    # -- used by the fast-forward ----------------------------------------

    def pending(self) -> Iterator[list]:
        """Live entries in the order they will run (timers' stand-ins
        replaced by their own entries)."""
        self._compact()
        return iter(sorted(self._heap))

    def shift(self, dt: int, retime: Callable[[list], int]) -> None:
        """Move ``now`` ``dt`` later, and every live entry to the time
        ``retime(entry)`` gives (its owner's move: ``dt`` later, or onto
        a tick boundary for a timer); the order of entries at equal
        times is kept."""
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
    in ticks (``arm_ticks``) remembers when, for how many ticks and on
    which clock.  ``late``, if set, is asked at each such expiry how many
    femtoseconds later it runs (its CPU waking from idle; 0: on time).
    """

    __slots__ = (
        "loop",
        "handler",
        "fire",
        "entry",
        "expires",
        "armed_at",
        "ticks",
        "clock",
        "late",
        "draws",
        "order",
        "spare",
        "spare_gen",
    )

    def __init__(self, loop: EventLoop, handler: Handler) -> None:
        self.loop = loop
        self.handler = handler
        self.fire = self._fire  # the bound method, made once
        self.entry: list | None = None
        self.expires = -1  # femtoseconds; -1 when idle
        self.armed_at = -1  # femtoseconds, with arm_ticks
        self.ticks = 0
        self.clock: Any = None  # the tick clock of arm_ticks, else None
        # late() -> fs: how late an expiry in ticks runs (its CPU waking
        # from idle), drawn at the expiry; None: on time
        self.late: Callable[[], int] | None = None
        self.draws = 0  # expiries that ran late
        self.order = 0  # the order number of the armed expiry (arm_ticks)
        # its last cancelled entry, still in the heap while the loop's
        # ``dropped`` is ``spare_gen`` and its time is ahead (arm_ticks)
        self.spare: list | None = None
        self.spare_gen = -1

    @property
    def armed(self) -> bool:
        return self.entry is not None

    def arm(self, expires: int) -> None:
        if self.entry is not None:
            self.cancel()
        self.expires = expires
        self.clock = None
        self.entry = self.loop.schedule(expires, self._fire)

    def arm_ticks(self, now: int, ticks: int, clock) -> None:
        """Arm ``ticks`` ahead on ``clock`` (a tick clock rule).

        A timer armed and cancelled again and again (the delayed ACK,
        for most requests) reuses its last cancelled entry while that is
        still in the heap and not later than the new expiry: the entry
        stands in, and when its time comes the loop puts in the timer's
        own entry (``_due``), with the order number drawn now, before
        any later entry runs.  Nothing is pushed meanwhile."""
        expires = clock.timer_time(now, ticks)
        loop = self.loop
        if self.entry is not None:
            self.cancel()
        self.expires = expires
        if expires < loop.now:
            raise ValueError(f"time {expires} fs is before the current time {loop.now} fs")
        order = self.order = next(loop.ticket)
        spare = self.spare
        if (
            spare is not None and loop.now < spare[0] <= expires and self.spare_gen == loop.dropped
        ):  # it stands in (still in the heap: not yet due, not dropped)
            spare[3] = self
            loop._dead -= 1
            self.entry = spare
            self.spare = None
        else:
            entry = self.entry = [expires, order, self.fire, None]
            heappush(loop.heap, entry)
        self.armed_at = now
        self.ticks = ticks
        self.clock = clock

    def cancel(self) -> None:
        entry = self.entry
        if entry is not None:
            if entry[2] is not None or entry[3] is self:  # EventLoop.cancel, inline
                entry[2] = entry[3] = None  # (a stand-in stands in no more)
                loop = self.loop
                loop._dead += 1
                self.spare, self.spare_gen = entry, loop.dropped
                if loop._dead > 8 and loop._dead > len(loop._heap) >> 1:
                    loop._compact()
            self.entry = None
            self.expires = -1

    def _own(self) -> list:
        """The timer's own entry in place of its stand-in (the loop puts
        it in)."""
        entry = self.entry = [self.expires, self.order, self.fire, None]
        return entry

    def _due(self, entry: list) -> bool:
        """``entry`` left the heap with no handler: if it was this
        timer's stand-in, put the timer's own entry in (its time is not
        earlier) and say so."""
        if self.entry is not entry:
            return False
        heappush(self.loop._heap, self._own())
        return True

    def _fire(self, now: int, _arg: Any) -> None:
        if self.late is not None and self.clock is not None:
            delay = self.late()
            if delay:  # the expiry runs later: still armed, at a time
                self.draws += 1
                self.clock = None
                self.expires = now + delay
                self.entry = self.loop.schedule(self.expires, self.fire)
                return
        self.entry = None
        self.expires = -1
        self.handler(now, None)

    # -- the fast-forward's view (models.sim.fastforward) -------------------

    #: The order number of the armed expiry and the handle of a cancelled
    #: entry: the loop's state (its entries, put in place before a jump).
    cycle_transient = ("order", "spare", "spare_gen")

    def cycle_state(self, view: View) -> Hashable:
        """Idle, or when and for how many ticks it was armed (its expiry
        follows from that and the clock's phase); with the expiries that
        ran late so far, if any (each is a random draw: a repeated cycle
        may contain none)."""
        state: tuple | None
        if self.entry is None:
            state = None
        elif self.clock is None:
            state = (view.time(self.expires),)
        else:
            state = (view.time(self.armed_at), self.ticks)
        return state if not self.draws else (state, self.draws)

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing: its pending event moves it (``cycle_shift_event``)."""

    def cycle_event(self, name: str, time: int, arg: Any, view: View) -> Hashable:
        """Its event is stated by ``cycle_state``."""
        return None

    def cycle_shift_event(self, name: str, time: int, arg: Any, shift: Shift) -> tuple:
        """The armed timer moves ``shift.dt`` later, onto the tick
        boundary its clock gives (``dt`` need not be whole ticks)."""
        if self.clock is None:
            self.expires = time + shift.dt
        else:
            self.armed_at += shift.dt
            self.expires = self.clock.timer_time(self.armed_at, self.ticks)
        return self.expires, arg

"""A minimal discrete-event loop: a heap of ``(time, order, handler, argument)`` tuples.

Handlers are bound methods created once, when the components are built, and are called as
``handler(time, argument)``; no closure is created per event.  Ties in time run in the order they were
scheduled (``order`` is a counter), which makes every run deterministic.
"""

from __future__ import annotations

import heapq
import itertools

__all__ = ["EventLoop"]


class EventLoop:
    """Schedule handlers at times (seconds) and run them in time order."""

    __slots__ = ("heap", "counter", "events", "stopped", "now", "after_event")

    def __init__(self) -> None:
        self.heap: list = []
        self.counter = itertools.count()
        self.events = 0          # handlers run so far
        self.stopped = False
        self.now = 0.0
        self.after_event = None  # optional check called after every event (invariants)

    def schedule(self, time: float, handler, arg=None) -> None:
        """Run ``handler(time, arg)`` at ``time`` seconds."""
        heapq.heappush(self.heap, (time, next(self.counter), handler, arg))

    def stop(self) -> None:
        """Stop after the current event."""
        self.stopped = True

    def run(self, max_events: int = 100_000_000) -> None:
        """Run events until :meth:`stop` is called, the heap empties or ``max_events`` have run."""
        heap = self.heap
        pop = heapq.heappop
        check = self.after_event
        n = self.events
        limit = n + max_events
        while heap and not self.stopped:
            t, _, handler, arg = pop(heap)
            self.now = t
            handler(t, arg)
            n += 1
            if check is not None:
                check(t)
            if n >= limit:
                self.events = n
                raise RuntimeError(f"simulation did not finish within {max_events} events")
        self.events = n

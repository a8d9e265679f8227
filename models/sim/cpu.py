"""The CPUs the application threads (:mod:`models.sim.app`) run on.

By default each host's thread has a CPU to itself and a stretch of work
ends when it is done (:class:`OwnCpu`).  When both ends run on one
machine (loopback, a veth pair: ``Link.shared_cpus``), their threads
and their receive soft interrupts (:class:`~models.sim.link.Channel`)
share that machine's CPUs (:class:`CpuPool`); with
``Link.softirq_on_sender`` each thread has a CPU of its own (a pool of
one) that also runs the receive soft interrupt of the frames its host
sends.  In a pool a stretch of work starts
on the CPU that is free first, no earlier than it is asked for, and runs
to its end (no preemption).  Times are in femtoseconds (fs).

>>> pool = CpuPool(1)
>>> pool.run(0, 10), pool.run(4, 10), pool.run(30, 5)
(10, 20, 35)
>>> OwnCpu().run(4, 10)
14
"""

from __future__ import annotations

from collections import deque
from heapq import heappush
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["OwnCpu", "CpuPool"]


class OwnCpu:
    """A CPU of the thread's own: work runs at once."""

    __slots__ = ()

    #: Never held against another thread (see :class:`CpuPool`).
    hold = False

    def run(self, now: int, work: int) -> int:
        """When ``work`` fs asked for at ``now`` ends."""
        return now + work

    def acquire(self, thread) -> bool:
        """Always: no other thread runs on it."""
        return True

    def release(self, thread, now: int) -> None:
        """Nothing waits for it."""

    def cycle_state(self, view: View) -> Hashable:
        return None  # no state

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing to move."""


class CpuPool:
    """``n`` CPUs shared by both hosts' threads, first come first
    served, each stretch of work run to its end.

    With ``hold``, a thread keeps a CPU from its wake-up until it blocks
    (goes idle): a thread woken while every CPU is held waits, in the
    order woken, until a holder blocks (:meth:`acquire`,
    :meth:`release`).  It approximates Linux's fair scheduler on a CPU
    shared by two threads that wake each other, where a running task is
    mostly let run on within its slice (EEVDF's ``RUN_TO_PARITY``,
    kernel/sched/fair.c) and a burst of a few sends is far shorter than a
    slice (0.75 ms or more).  Mostly: a scheduler trace of the book's loop
    pinned to one CPU (``data/kernel6_machine4_preempt``) shows the server's wake-ups never preempting the
    client, but the woken client preempting the server at the end of some
    of its ``send()`` calls.  That wake-up preemption, and a slice's end,
    are not modelled.  On one CPU it counts, per side, the work run while
    that side's thread held the CPU (``held``, fs): Linux charges the soft
    interrupt work run in a task's context to that task unless it is built
    with ``CONFIG_IRQ_TIME_ACCOUNTING``, so this is what a scheduler trace
    measures as the task's time on the CPU (``tools/preempt_trace.py``).

    >>> pool = CpuPool(1, hold=True)
    >>> class T:
    ...     side = 1
    >>> pool.acquire(T()), pool.run(0, 7), pool.run(7, 3), pool.held
    (True, 7, 10, {0: 0, 1: 10})
    """

    __slots__ = ("n", "free_at", "hold", "holders", "waiting", "held")

    def __init__(self, n: int, hold: bool = False) -> None:
        self.n = n
        self.free_at = [0] * n  # fs: when each CPU is next free
        self.hold = hold
        self.holders: list = []  # threads that hold a CPU (hold)
        self.waiting: deque = deque()  # threads woken, waiting for one
        # side (0 client, 1 server) -> fs of work run while that side's thread held the one
        # CPU (hold, n == 1), the soft-interrupt work run meanwhile included
        self.held = {0: 0, 1: 0}

    def acquire(self, thread) -> bool:
        """Whether ``thread`` holds a CPU now (it takes one if one is not
        held); if not, it waits and :meth:`release` wakes it again."""
        if thread in self.holders:
            return True
        if len(self.holders) < self.n:
            self.holders.append(thread)
            return True
        self.waiting.append(thread)
        return False

    def release(self, thread, now: int) -> None:
        """``thread`` blocks at ``now``: the first waiting thread takes its
        CPU and its wake-up runs now."""
        self.holders.remove(thread)
        if self.waiting:
            nxt = self.waiting.popleft()
            self.holders.append(nxt)
            heappush(nxt.heap, [now, next(nxt.ticket), nxt.wake_up, None])

    def run(self, now: int, work: int) -> int:
        free = self.free_at
        i = min(range(self.n), key=free.__getitem__)
        start = now if free[i] < now else free[i]
        free[i] = start + work
        if self.hold and self.n == 1 and self.holders:  # (charged to the task it runs under)
            self.held[self.holders[0].side] += work
        return free[i]

    def cycle_state(self, view: View) -> Hashable:
        """How long each CPU is still busy (which CPU is which does not
        matter)."""
        busy = tuple(sorted(max(view.time(t), 0) for t in self.free_at))
        if not self.hold:
            return busy
        return busy, tuple(t.side for t in self.holders), tuple(t.side for t in self.waiting)

    def cycle_counters(self) -> dict:
        return {"held": self.held}

    def cycle_shift(self, shift: Shift) -> None:
        self.free_at = [t + shift.dt for t in self.free_at]
        shift.grow(self)

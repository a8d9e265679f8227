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
to its end (no preemption; with ``Link.wake_preempt``, see
:class:`CpuPool`).  Times are in femtoseconds (fs).

>>> pool = CpuPool(1)
>>> pool.run(0, 10), pool.run(4, 10), pool.run(30, 5)
(10, 20, 35)
>>> OwnCpu().run(4, 10)
14
"""

from __future__ import annotations

from collections import deque
from heapq import heappush
from typing import TYPE_CHECKING, Any

from models.sim.eevdf import BASE_SLICE_S, RunQueue
from models.sim.events import FS

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["OwnCpu", "CpuPool"]


class OwnCpu:
    """A CPU of the thread's own: work runs at once."""

    __slots__ = ()

    #: Never held against another thread, nor preempted (see :class:`CpuPool`).
    hold = False
    preempt = False
    resched = None
    holders: tuple = ()

    def run(self, now: int, work: int) -> int:
        """When ``work`` fs asked for at ``now`` ends."""
        return now + work

    def acquire(self, thread) -> bool:
        """Always: no other thread runs on it."""
        return True

    def release(self, thread, now: int) -> None:
        """Nothing waits for it."""

    def yield_cpu(self, thread, now: int, name: str, arg) -> None:
        """Never called: no thread is woken to preempt on a CPU of its own."""
        raise RuntimeError("a thread on a CPU of its own is never preempted")

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
    pinned to one CPU (``data/kernel6_machine4_preempt``) shows the server's
    wake-ups seldom preempting the client, but the woken client preempting
    the server at the end of many of its ``send()`` calls.  With ``preempt`` (``Link.wake_preempt``, one
    CPU) that wake-up preemption is modelled: the pool keeps the fair
    scheduler's run queue (:class:`~models.sim.eevdf.RunQueue`, fed the work
    each holder runs), a woken thread it lets preempt sets ``resched``, and
    the holder gives way at its next event (:meth:`yield_cpu`).  A slice's
    end is not modelled.  On one CPU it counts, per side, the work run while
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

    __slots__ = (
        "n",
        "free_at",
        "hold",
        "holders",
        "waiting",
        "held",
        "preempt",
        "rq",
        "resched",
        "preempted",
    )

    def __init__(self, n: int, hold: bool = False, preempt: bool = False) -> None:
        if preempt and n != 1:
            raise ValueError(f"preempt models one shared CPU: n must be 1, got {n}")
        self.n = n
        self.free_at = [0] * n  # fs: when each CPU is next free
        self.hold = hold or preempt
        self.holders: list = []  # threads that hold a CPU (hold)
        self.waiting: deque = deque()  # threads woken, waiting for one
        # side (0 client, 1 server) -> fs of work run while that side's thread held the one
        # CPU (hold, n == 1), the soft-interrupt work run meanwhile included
        self.held = {0: 0, 1: 0}
        self.preempt = preempt
        # (preempt) the fair scheduler's run queue, in fs; the holder a woken thread is to
        # preempt at its next event
        self.rq = RunQueue(round(BASE_SLICE_S * FS)) if preempt else None  # s -> fs
        self.resched = None
        self.preempted = {0: 0, 1: 0}  # side -> times its thread gave way to a woken one

    def acquire(self, thread) -> bool:
        """Whether ``thread`` holds a CPU now (it takes one if one is not
        held); if not, it waits and :meth:`release` wakes it again.  With
        ``preempt`` the run queue places it, and if it is to preempt the
        holder, the holder gives way at its next event (:meth:`yield_cpu`)."""
        if thread in self.holders:
            return True
        rq = self.rq
        preempts = rq.wake(thread) if rq is not None else False
        if len(self.holders) < self.n:
            self.holders.append(thread)
            if rq is not None:
                rq.switch_to(rq.pick())  # (the only runnable thread: this one)
            return True
        self.waiting.append(thread)
        if preempts:
            self.resched = self.holders[0]
        return False

    def release(self, thread, now: int) -> None:
        """``thread`` blocks at ``now``: the first waiting thread (with
        ``preempt``, the run queue's pick) takes its CPU and its wake-up
        runs now."""
        self.holders.remove(thread)
        if self.rq is not None:
            self.rq.block(thread)
            if self.resched is thread:
                self.resched = None
        self._next(now)

    def yield_cpu(self, thread, now: int, name: str, arg) -> None:
        """The holder ``thread`` is preempted at ``now``: it waits, still
        runnable, to go on with its method ``name`` (``name(now, arg)``,
        its ``parked``); the pick runs."""
        self.resched = None
        self.preempted[thread.side] += 1
        self.holders.remove(thread)
        if self.rq is not None:
            self.rq.preempted(thread)
        thread.parked = (name, arg)
        self.waiting.append(thread)
        self._next(now)

    def _next(self, now: int) -> None:
        """A CPU is free at ``now``: the next waiting thread takes it."""
        rq = self.rq
        if not self.waiting:
            if rq is not None:
                rq.pick()  # (nothing runnable: the delayed leave)
            return
        nxt: Any = rq.pick() if rq is not None else None
        if nxt is None or nxt not in self.waiting:
            nxt = self.waiting[0]
        self.waiting.remove(nxt)
        self.holders.append(nxt)
        if rq is not None:
            rq.switch_to(nxt)
        handler, arg = nxt.wake_up, None
        if getattr(nxt, "parked", None) is not None:
            name, arg = nxt.parked
            handler, nxt.parked = getattr(nxt, name), None
        heappush(nxt.heap, [now, next(nxt.ticket), handler, arg])

    def run(self, now: int, work: int) -> int:
        free = self.free_at
        n = self.n  # the CPU free first (the lowest number of those free at once)
        if n == 1:
            i = 0
        elif n == 2:
            i = 0 if free[0] <= free[1] else 1
        else:
            i = min(range(n), key=free.__getitem__)
        start = now if free[i] < now else free[i]
        free[i] = start + work
        if self.hold and self.n == 1 and self.holders:  # (charged to the task it runs under)
            holder = self.holders[0]
            self.held[holder.side] += work
            if self.rq is not None:
                self.rq.ran(holder, work)
        return free[i]

    def cycle_state(self, view: View) -> Hashable:
        """How long each CPU is still busy (which CPU is which does not
        matter)."""
        busy = tuple(sorted(max(view.time(t), 0) for t in self.free_at))
        if not self.hold:
            return busy
        turn = tuple(t.side for t in self.holders), tuple(t.side for t in self.waiting)
        if self.rq is None:
            return busy, turn
        rq = self.rq
        base = min((e.v for e in rq.tasks.values()), default=0)
        tasks: dict[Any, Any] = rq.tasks
        queue = tuple(
            sorted(
                (
                    t.side,
                    e.v - base,
                    e.deadline - base,
                    e.protect - base,
                    e.lag,
                    e.queued,
                    e.delayed,
                )
                for t, e in tasks.items()
            )
        )
        resched = None if self.resched is None else self.resched.side
        return busy, turn, queue, resched, rq.zero - base

    def cycle_counters(self) -> dict:
        return {"held": self.held, "preempted": self.preempted}

    def cycle_shift(self, shift: Shift) -> None:
        self.free_at = [t + shift.dt for t in self.free_at]
        shift.grow(self)

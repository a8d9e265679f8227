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

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["OwnCpu", "CpuPool"]


class OwnCpu:
    """A CPU of the thread's own: work runs at once."""

    __slots__ = ()

    def run(self, now: int, work: int) -> int:
        """When ``work`` fs asked for at ``now`` ends."""
        return now + work

    def cycle_state(self, view: View) -> Hashable:
        return None  # no state

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing to move."""


class CpuPool:
    """``n`` CPUs shared by both hosts' threads, first come first
    served, each stretch of work run to its end."""

    __slots__ = ("n", "free_at")

    def __init__(self, n: int) -> None:
        self.n = n
        self.free_at = [0] * n  # fs: when each CPU is next free

    def run(self, now: int, work: int) -> int:
        free = self.free_at
        i = min(range(self.n), key=free.__getitem__)
        start = now if free[i] < now else free[i]
        free[i] = start + work
        return free[i]

    def cycle_state(self, view: View) -> Hashable:
        """How long each CPU is still busy (which CPU is which does not
        matter)."""
        return tuple(sorted(max(view.time(t), 0) for t in self.free_at))

    def cycle_shift(self, shift: Shift) -> None:
        self.free_at = [t + shift.dt for t in self.free_at]

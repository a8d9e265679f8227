"""CPUs the application threads run on.

By default each host's thread has a CPU to itself and a stretch of work
ends when it is done (:class:`OwnCpu`).  When both ends run on one
machine (loopback, a veth pair:
``Link.shared_cpus``), their threads share that machine's CPUs
(:class:`CpuPool`): a stretch of work starts on the CPU that is free
first, no earlier than it is asked for, and runs to its end (no
preemption).  The soft interrupts keep their own queues
(:class:`models.sim.link.Channel`).

>>> pool = CpuPool(1)
>>> pool.run(0, 10), pool.run(4, 10), pool.run(30, 5)
(10, 20, 35)
>>> OwnCpu().run(4, 10)
14
"""

from __future__ import annotations

__all__ = ["OwnCpu", "CpuPool"]


class OwnCpu:
    """A CPU of the thread's own: work runs at once."""

    __slots__ = ()

    def run(self, now: int, work: int) -> int:
        """When ``work`` fs asked for at ``now`` ends."""
        return now + work


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

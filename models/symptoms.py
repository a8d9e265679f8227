"""Numeric tests an engineer can apply to their own figures (the book's "Diagnose a stall" page).

Each test takes numbers a reader already has (a rate, a queue depth, a message size, a link) and
says which mechanism they point to.  The timers come from the kernel profile
(``models.sim.get_profile``), the MSS rule from :mod:`models.framing`: nothing is typed here.
Standard library only.

>>> round(timer_period_s(iops=23.5, qd=1), 4)
0.0426
>>> which_timer(iops=23.5, qd=1)
'delayed-ack'
>>> which_timer(iops=4.9, qd=1), which_timer(iops=4000, qd=1)
('probe', None)
>>> [held_tail_bytes(n, mtu=1500) for n in (1447, 1448, 1449)]
[1447, 0, 1]
"""

from __future__ import annotations

import dataclasses

from models import framing
from models.checks import positive, whole
from models.sim import get_profile

__all__ = ["TIMER_SLACK", "timer_period_s", "which_timer", "held_tail_bytes", "utilisation"]

#: How far outside a timer's range (as a fraction) a measured period may sit and still be that
#: timer: a host adds its own processing to every stalled operation, and a measurement's first
#: operations (quick-ACK mode at the start of a connection) are fast, which pulls a mean down.
TIMER_SLACK = 0.15


def timer_period_s(iops: float, qd: float) -> float:
    """Seconds each outstanding operation takes when ``qd`` of them give ``iops`` operations per
    second: ``QD / IOPS`` (Little's law, chapter 1)."""
    return positive("qd", qd) / positive("iops", iops)


def which_timer(iops: float, qd: float, profile: str = "linux-6", hz: int = 250) -> str | None:
    """``"delayed-ack"`` when ``QD / IOPS`` lies between the profile's delayed-ACK minimum and its
    longest wait at ``hz``, ``"probe"`` when it lies at the probe timer's minimum
    (``TCP_RTO_MIN``), each widened by :data:`TIMER_SLACK` on both sides; else ``None``.

    A rate that sits at one of these periods per outstanding operation is a timer, not a host or a
    link: nothing else in a request/response loop takes that long at every operation.
    """
    p = dataclasses.replace(get_profile(profile), hz=whole("hz", hz, minimum=1))
    period = timer_period_s(iops, qd)
    lo, hi = 1 - TIMER_SLACK, 1 + TIMER_SLACK
    if p.delack_min_s * lo <= period <= p.delack_max_s * hi:
        return "delayed-ack"
    if p.rto_min_s * lo <= period <= p.rto_min_s * hi:
        return "probe"
    return None


def held_tail_bytes(data_bytes: int, mtu: int = 1500) -> int:
    """Bytes of the last, partial segment of a ``send()`` of ``data_bytes`` at this MTU (0 when it
    ends on a full segment).  After a small first write (a header), Nagle's algorithm holds exactly
    such a tail until that header is acknowledged (Flory 2001: 1447 bytes stall, 1448 do not)."""
    n = whole("data_bytes", data_bytes, minimum=0)
    return n % framing.mss(mtu)


def utilisation(iops: float, seconds_per_op: float) -> float:
    """Share of one resource's time taken at ``iops`` operations per second when each costs
    ``seconds_per_op`` of it (a server thread's ``SP``, or a response's wire time): near 1, that
    resource is the bottleneck and more queue depth will not help."""
    return positive("iops", iops) * positive("seconds_per_op", seconds_per_op)

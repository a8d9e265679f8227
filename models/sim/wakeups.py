"""Wake-ups and what they cost: a thread's wake-up latency after an idle (a step or a measured
curve), what waking a sleeping peer adds to the waker's ``send()`` (:class:`WakerCost`,
``Host.waker_curve_s``) and how late a delayed-ACK timer's expiry runs on an idle CPU
(:func:`timer_late`, ``Host.timer_spread_s``).  Times are whole femtoseconds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any

__all__ = ["curve_latency", "wake_latency", "WakerCost", "timer_late"]

_PAST = float("inf")  # (a latency above any: a point at the idle sorts before it)


def curve_latency(curve: tuple, idle: int) -> int:
    """The latency of a wake-up curve (``(idle, latency)`` points, whole fs, idle rising) after
    ``idle`` fs: linear between the points, the end points' beyond them (whole fs).

    >>> curve = ((2, 10), (102, 20))
    >>> curve_latency(curve, 52), curve_latency(curve, 500)
    (15, 20)
    """
    if idle <= curve[0][0]:
        return curve[0][1]
    j = bisect_right(curve, (idle, _PAST))  # the first point beyond idle
    if j == len(curve):
        return curve[-1][1]
    (i0, w0), (i1, w1) = curve[j - 1], curve[j]
    return w0 + (w1 - w0) * (idle - i0) // (i1 - i0)


class WakerCost:
    """What waking the sleeping thread ``peer`` adds to the ``send()`` that wakes it, fs
    (``Host.waker_curve_s``: ``curve`` of ``(idle, cost)`` points, whole fs): the interrupt to the
    CPU it sleeps on, dearer the longer that CPU has idled.  Paid once per sleep, by the first
    segment sent while the peer sleeps (it wakes the peer on arrival).

    >>> class Peer:
    ...     busy = waking = wake_paid = False
    ...     idle_since = 0
    >>> w = WakerCost(((0, 0), (100, 50)), Peer())
    >>> w.charge(60), w.charge(80)   # the second segment finds the wake-up paid
    (30, 0)
    """

    __slots__ = ("curve", "peer")

    def __init__(self, curve: tuple, peer: Any) -> None:
        self.curve = curve
        self.peer = peer

    def charge(self, now: int) -> int:
        peer = self.peer
        if peer.busy or peer.waking or peer.wake_paid:
            return 0
        peer.wake_paid = True
        return curve_latency(self.curve, now - peer.idle_since)


def wake_latency(
    idle: int,
    wake: int,
    wake_fast: int = 0,
    wake_fast_idle: int = 0,
    curve: tuple = (),
    late: Callable[[], bool] | None = None,
    late_latency: int = 0,
) -> int:
    """A wake-up's latency after ``idle`` fs asleep, fs: the curve's if there is one
    (:func:`curve_latency`), else ``wake_fast`` after less than ``wake_fast_idle`` unless the
    draw ``late()`` says the CPU went deeper anyway, else ``wake``.  With a curve, a wake-up the
    draw ``late()`` says is late takes the latency of the curve's last point (its longest idle:
    a CPU descheduled or halted deep) if that is slower.  A late wake-up takes ``late_latency``
    instead where it is given (``Host.wake_late_s``: the late ones' measured mean), or the
    curve's latency at ``idle`` if that is slower.

    >>> wake_latency(5, wake=30, wake_fast=4, wake_fast_idle=10)
    4
    >>> wake_latency(50, wake=30, wake_fast=4, wake_fast_idle=10)
    30
    >>> wake_latency(5, 30, 4, 10, late=lambda: True, late_latency=90)
    90
    >>> curve = ((2, 10), (102, 20), (1000, 60))
    >>> wake_latency(52, 0, curve=curve)
    15
    >>> wake_latency(52, 0, curve=curve, late=lambda: True)
    60
    >>> wake_latency(52, 0, curve=curve, late=lambda: True, late_latency=170)
    170
    """
    if curve:
        if late is not None and late():
            return max(curve_latency(curve, idle), late_latency or curve[-1][1])
        return curve_latency(curve, idle)
    if idle < wake_fast_idle:
        if not (late is not None and late()):
            return wake_fast  # its CPU was idle only briefly (and not late)
        return late_latency or wake
    return wake


def timer_late(rng: Any, spread: int, app: Any) -> Callable[[], int]:
    """How late a delayed-ACK timer's expiry runs, fs: uniform in
    ``[0, spread)`` while the host's thread ``app`` sleeps (its CPU
    idle, woken by the timer's interrupt), else 0."""

    def late() -> int:
        if app.busy or app.waking:
            return 0
        return int(rng.random() * spread)

    return late

"""The transmit qdisc of a rate-limited link: when a ``tbf`` releases a
frame that waited for tokens.

``tbf`` holds a frame until its bucket has the tokens, then arms the
qdisc watchdog, an hrtimer, for the moment they will be there
(``net/sched/sch_tbf.c``, ``tbf_dequeue``,
``qdisc_watchdog_schedule_ns``).  The timer fires on the sending host's
CPU, late.  Where that lateness is measured (``Host.tbf_late_s``:
``tools/tbf_timer_sweep.py`` times frames through a ``tbf`` on a veth
pair), the rule charges it after every wait; where it is not, the host's
measured wake-ups of an idle CPU stand in for it, a proxy (on the second
machine of chapter 9 the proxy is half as late again as the timer, whose
lateness hardly depends on whether the CPU idles).  The qdisc also runs
whenever the socket hands it another frame (``__dev_xmit_skb``), so a
frame whose tokens are there leaves then, before the late timer; the
qdisc (:meth:`models.sim.tbf.Tbf.dequeue`) keeps the waiting frames and
re-arms the timer.  A link part, not a kernel rule: the link's
``watchdog_wake`` turns it on, and the sending host's ``tbf_late_s``, or
else its wake-ups (``wake_fast_s``, ``wake_fast_idle_s``, ``wake_s``), set
it (the channel, :class:`models.sim.link.Channel`, takes it as
``watchdog``).

>>> us = 10**9                        # femtoseconds per microsecond
>>> w = WatchdogWake(fast=5 * us, fast_idle=3 * us, slow=25 * us)
>>> w.delay(2 * us) // us, w.delay(12 * us) // us
(5, 25)
"""

from __future__ import annotations

__all__ = ["WatchdogWake"]


class WatchdogWake:
    """The watchdog's lateness: ``fast`` fs after a wait of at most
    ``fast_idle`` fs (the idle CPU still polling), else ``slow`` fs.
    Tokens keep arriving until it fires, up to the bucket's depth."""

    __slots__ = ("fast", "fast_idle", "slow")

    def __init__(self, fast: int, fast_idle: int, slow: int) -> None:
        for name, v in (
            ("fast", fast),
            ("fast_idle", fast_idle),
            ("slow", slow),
        ):
            if v < 0:
                raise ValueError(f"{name} must be at least 0 fs, got {v}")
        self.fast, self.fast_idle, self.slow = fast, fast_idle, slow

    def delay(self, wait: int) -> int:
        """fs the release comes after the tokens, for a wait of ``wait``
        fs."""
        return self.fast if wait <= self.fast_idle else self.slow

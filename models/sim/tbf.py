"""A rate limit's transmit qdisc: Linux's ``tbf`` on a veth
(``net/sched/sch_tbf.c``), a part of :class:`models.sim.link.Channel`.

Tokens accrue at the link's rate up to the bucket's depth; a frame
leaves, with no serialization, once the bucket holds its length
(``payload + 66``: TCP/IP and Ethernet headers, ``qdisc_pkt_len``), in
order.  Without a watchdog rule a frame leaves the moment its tokens are
there (:meth:`Tbf.leave_at`, closed form).  With one
(:class:`models.sim.rules.qdisc.WatchdogWake`, ``Link.watchdog_wake``) a
frame that finds too few tokens waits in the qdisc (:meth:`Tbf.hold`),
its bytes still the socket's memory in the host (autocorking reads
them), until the qdisc runs again (:meth:`Tbf.dequeue`): when the socket
hands it another frame (``__dev_xmit_skb``) or when its watchdog fires,
late by the sending CPU's wake-up.  A frame's departure from the qdisc is
its TX completion (``tcp_wfree``), which the sender's cork rule hears of
(``completed``).

Credit is kept in bit-femtoseconds (a bit is ``FS`` units, and ``rate``
units accrue per femtosecond), so it is exact.

>>> us = FS // 10**6          # femtoseconds per microsecond
>>> q = Tbf(None, 10**9, 2 * 1514)   # 1 Gb/s, two frames deep
>>> [q.leave_at(0, 1448) // us for _ in range(3)]
[0, 0, 12]
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from models import framing
from models.sim.events import FS

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View
    from models.sim.segment import Segment

__all__ = ["HELD", "Tbf"]

#: The TX completion of a data frame still waiting in the qdisc, not yet
#: known (after any time a run reaches); set when the frame leaves.
HELD = 1 << 80


class Tbf:
    """The token bucket of ``channel`` (a :class:`~models.sim.link.Channel`):
    ``rate`` bits per second, ``bucket_bytes`` deep, its late watchdog
    ``watchdog`` (a :class:`~models.sim.rules.qdisc.WatchdogWake`, or
    ``None``: none)."""

    __slots__ = (
        "channel",
        "rate",
        "bucket",
        "tokens",
        "tokens_at",
        "watchdog",
        "held",
        "event",
        "fire_at",
    )

    def __init__(
        self, channel: Any, rate_bps: int, bucket_bytes: int, watchdog: Any = None
    ) -> None:
        self.channel = channel
        self.rate = rate_bps
        self.bucket = bucket_bytes * 8 * FS  # bytes -> bit-femtoseconds
        self.tokens = self.bucket  # the bucket starts full
        self.tokens_at = 0
        self.watchdog = watchdog
        # frames waiting for tokens: (earliest start fs, segment, its
        # in_nic entry or None); the watchdog's event and its time
        self.held: deque = deque()
        self.event: Any = None
        self.fire_at = -1

    def _credit(self, start: int) -> int:
        """The tokens at ``start``, bit-fs."""
        tokens = self.tokens + (start - self.tokens_at) * self.rate
        return tokens if tokens < self.bucket else self.bucket

    def leave_at(self, start: int, length: int) -> int:
        """When a frame of ``length`` payload bytes that could start at
        ``start`` leaves, with no watchdog (it takes its tokens then)."""
        size = (length + framing.BUCKET_OVERHEAD_BYTES) * 8 * FS
        tokens = self._credit(start)
        if tokens < size:  # wait for the missing credit
            start += -(-(size - tokens) // self.rate)
            tokens = size
        self.tokens = tokens - size
        self.tokens_at = start
        return start

    def take(self, start: int, length: int) -> bool:
        """Take the tokens of a frame of ``length`` payload bytes at
        ``start`` if the bucket holds them (``tbf_dequeue``)."""
        size = (length + framing.BUCKET_OVERHEAD_BYTES) * 8 * FS
        tokens = self._credit(start)
        if tokens < size:
            return False
        self.tokens = tokens - size
        self.tokens_at = start
        return True

    def hold(self, start: int, seg: Segment, entry: list | None) -> None:
        """``seg`` waits in the qdisc from ``start`` (``entry``: its
        place in the channel's transmit path, or ``None`` for an ACK)."""
        self.held.append((start, seg, entry))

    def _fire(self, now: int, _arg: None) -> None:
        """The watchdog fires: the qdisc runs."""
        self.event = None
        self.fire_at = -1
        self.dequeue(now)

    def dequeue(self, now: int) -> None:
        """The qdisc runs at ``now`` (a frame was enqueued, or the
        watchdog fired): the waiting frames leave, in order, while the
        bucket holds their tokens; if one is left waiting, the watchdog
        is armed for its tokens, late by the CPU's wake-up after the idle
        wait (``qdisc_watchdog_schedule_ns``)."""
        held = self.held
        ch = self.channel
        rate, bucket = self.rate, self.bucket
        while held:
            start, seg, entry = held[0]
            if start < now:
                start = now
            length = seg.end - seg.seq
            size = (length + framing.BUCKET_OVERHEAD_BYTES) * 8 * FS  # bytes -> bit-fs
            tokens = self.tokens + (start - self.tokens_at) * rate  # _credit, inline
            if tokens > bucket:
                tokens = bucket
            if tokens < size:  # (take, inline: too few)
                expiry = start + -(-(size - tokens) // rate)
                # the CPU idles from now until then
                fire = expiry + self.watchdog.delay(expiry - now)
                if fire != self.fire_at:
                    if self.event is not None:
                        ch.loop.cancel(self.event)
                    self.event = ch.loop.schedule(fire, self._fire)
                    self.fire_at = fire
                ch.free_at = fire  # the queue is busy until then at least
                return
            self.tokens = tokens - size  # (take, inline: taken)
            self.tokens_at = start
            held.popleft()
            ch.depart(start, seg, length, entry)
        if self.event is not None:  # nothing waits: disarm
            ch.loop.cancel(self.event)
            self.event = None
            self.fire_at = -1

    # -- the fast-forward's view (models.sim.fastforward) -------------------

    #: The watchdog's handle and time (its pending event is stated).
    cycle_transient = ("event", "fire_at")

    def cycle_state(self, view: View) -> Hashable:
        """The credit (now, or when it was last taken if that is ahead)
        and the waiting frames (times relative to now, sequence numbers
        in their sender's stream, the ACK in the other)."""
        now = view.now
        if self.tokens_at <= now:
            tok = (self._credit(now), 0)
        else:
            tok = (self.tokens, self.tokens_at - now)
        seq = view.seq
        held = tuple(
            (
                start - now,
                g.t_tx - now,
                g.src,
                seq(g.seq, g.src),
                seq(g.end, g.src),
                seq(g.ack, 1 - g.src),
                g.psh,
                entry is None,
            )
            for start, g, entry in self.held
        )
        return tok, held

    def cycle_shift(self, shift: Shift) -> None:
        dt = shift.dt
        self.tokens_at += dt
        if self.fire_at >= 0:
            self.fire_at += dt
        held = []
        for start, g, entry in self.held:
            d = shift.seq(g.src)
            g.seq += d
            g.end += d
            g.ack += shift.seq(1 - g.src)
            g.t_tx += dt
            held.append((start + dt, g, entry))
        self.held = deque(held)

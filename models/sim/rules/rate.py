"""Delivery-rate samples and the windowed max filter that bbr reads.
(``net/ipv4/tcp_rate.c``: ``tcp_rate_skb_sent``, ``tcp_rate_skb_delivered``,
``tcp_rate_gen``, ``tcp_rate_check_app_limited``; ``lib/win_minmax.c``:
``minmax_running_max``)

Every buffer that leaves records how much had been delivered when it left
and when (``delivered``, ``delivered_fs``), and when the current flight
began (``first_tx_fs``).  The ACK that covers it turns the difference into
a rate sample: packets delivered since, over the longer of the send
interval and the ACK interval.  A sample is *application-limited* when the
buffer left while the application had less than an MSS waiting, nothing
queued in the host and room in the window: then its rate says what the
application offered, not what the path can carry, and bbr's filter does
not let it lower the estimate.

Times are kept as the kernel keeps them, in whole microseconds: a
buffer's send time is its departure time in microseconds
(``tcp_skb_timestamp_us``) and a delivery's is ``tcp_mstamp``, the clock
read at the start of the ACK's processing in microseconds; both are the
simulator's femtoseconds floored to a microsecond here.  So a sample's
interval and RTT are differences of floored times: a 16 KiB buffer (12
segments) acknowledged 1.8 us after it left reads as 12 packets in 1 or 2
us, 17.4 or 8.7 GB/s, and bbr's filter keeps the larger (on the eighth
machine the kernel's server read its estimate as 12 segments per
microsecond through whole runs: ``data/kernel6_machine8_cc_regimes``).
An RTT under a microsecond, 0 to the kernel, enters the minimum-RTT
filter as one jiffy (``tcp_update_rtt_min``).

>>> us = 10**9                        # femtoseconds per microsecond
>>> s = RateSampler(jiffy_fs=4000 * us)
>>> s.sent(0, packets_out=0)          # a first buffer at t = 0
>>> s.sent(5 * us, packets_out=1)     # a second, 5 us later
>>> rs = s.acked(40 * us, skbs=2, packets=2, prior_in_flight=2)
>>> rs.delivered, rs.interval_fs // us, rs.is_app_limited
(2, 40, True)

(Application-limited: a socket is until its first delivery.)  The max
filter forgets its best sample once it is more than a window old and
falls back to the best of the later ones:

>>> f = Minmax(0, 0)
>>> [f.update(10, t, v) for t, v in [(1, 9), (5, 6), (9, 4), (12, 3)]]
[9, 9, 9, 6]
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

__all__ = ["Minmax", "RateSample", "RateSampler"]

_US = 10**9  # femtoseconds per microsecond


class Minmax:
    """Kathleen Nichols' windowed max of (time, value) samples, three kept
    (``lib/win_minmax.c``); time here counts bbr's rounds."""

    __slots__ = ("s",)

    def __init__(self, t: int, v: int) -> None:
        self.s = [(t, v), (t, v), (t, v)]  # minmax_reset

    def best(self) -> int:
        return self.s[0][1]

    def update(self, win: int, t: int, v: int) -> int:
        """``minmax_running_max``: take sample ``v`` at time ``t``."""
        s = self.s
        if v >= s[0][1] or t - s[2][0] > win:  # a new max, or all expired
            self.s = [(t, v), (t, v), (t, v)]
            return v
        if v >= s[1][1]:
            s[2] = s[1] = (t, v)
        elif v >= s[2][1]:
            s[2] = (t, v)
        dt = t - s[0][0]  # minmax_subwin_update
        if dt > win:
            s[0], s[1], s[2] = s[1], s[2], (t, v)
            if t - s[0][0] > win:
                s[0], s[1], s[2] = s[1], s[2], (t, v)
        elif s[1][0] == s[0][0] and dt > win // 4:
            s[2] = s[1] = (t, v)
        elif s[2][0] == s[1][0] and dt > win // 2:
            s[2] = (t, v)
        return s[0][1]


class RateSample(NamedTuple):
    """One ACK's sample (``struct rate_sample``), times in fs;
    ``delivered`` and ``interval_fs`` are -1 when it is not a valid
    observation."""

    prior_delivered: int  # packets delivered when the newest acked left
    delivered: int  # packets delivered over the interval
    interval_fs: int  # the sample's interval, fs
    is_app_limited: bool
    rtt_fs: int  # the newest acked buffer's RTT, fs
    prior_in_flight: int  # packets in flight before this ACK
    acked: int  # packets this ACK delivered


class RateSampler:
    """The socket's delivery counters and the per-buffer snapshots."""

    __slots__ = (
        "delivered",
        "delivered_fs",
        "first_tx_fs",
        "app_limited",
        "rtt_min_fs",
        "jiffy_fs",
        "stamp_fs",
        "snaps",
    )

    def __init__(self, jiffy_fs: int, stamp_fs: int = _US) -> None:
        self.delivered = 0  # tp->delivered, packets
        self.delivered_fs = 0  # tp->delivered_mstamp, fs
        self.first_tx_fs = 0  # tp->first_tx_mstamp, fs
        # tp->app_limited: 0 (not limited), else the delivered count to
        # pass; -1 stands for tcp_init_sock's ~0U, passed at the first
        # delivery
        self.app_limited = -1
        self.rtt_min_fs: int | None = None  # tcp_min_rtt (no sample yet)
        self.jiffy_fs = jiffy_fs  # one jiffy, fs (an RTT sample of 0 us)
        # the resolution of the times kept, fs: the kernel's microsecond
        # (1 keeps them exact, which lets runs repeat on any phase)
        self.stamp_fs = stamp_fs
        # per buffer in flight, oldest first: (delivered, delivered_fs,
        # first_tx_fs, app-limited, sent fs)
        self.snaps: deque = deque()

    def sent(self, now: int, packets_out: int) -> None:
        """``tcp_rate_skb_sent``: a buffer leaves at ``now`` (fs) with
        ``packets_out`` packets already in flight."""
        now -= now % self.stamp_fs  # tcp_skb_timestamp_us: whole microseconds
        if not packets_out:  # a new flight starts its intervals now
            self.first_tx_fs = self.delivered_fs = now
        self.snaps.append(
            (
                self.delivered,
                self.delivered_fs,
                self.first_tx_fs,
                self.app_limited != 0,
                now,
            )
        )

    def check_app_limited(
        self,
        unsent: int,
        mss: int,
        host_queued: bool,
        in_flight: int,
        cwnd: int,
    ) -> None:
        """``tcp_rate_check_app_limited`` (at the start of each send):
        ``unsent`` bytes written but not sent, ``host_queued`` whether a
        data frame of this socket is still in the host's transmit path."""
        if unsent < mss and not host_queued and in_flight < cwnd:
            self.app_limited = (self.delivered + in_flight) or 1

    def acked(
        self, now: int, skbs: int, packets: int, prior_in_flight: int
    ) -> RateSample:
        """``tcp_rate_skb_delivered`` for the ``skbs`` oldest buffers (the
        ACK covers them, ``packets`` in all), then ``tcp_rate_gen``."""
        now -= now % self.stamp_fs  # tcp_mstamp: whole microseconds
        snaps = self.snaps
        for _ in range(skbs - 1):
            snaps.popleft()
        prior, prior_fs, first_fs, limited, tx_fs = (
            snaps.popleft()
        )  # the newest
        self.first_tx_fs = tx_fs
        self.delivered += packets
        al = self.app_limited
        if al and (al < 0 or self.delivered > al):
            self.app_limited = 0
        self.delivered_fs = now
        rtt = now - tx_fs  # ca_rtt_us
        m = rtt if rtt >= _US else self.jiffy_fs  # tcp_update_rtt_min
        if self.rtt_min_fs is None or m < self.rtt_min_fs:
            self.rtt_min_fs = m
        delivered = self.delivered - prior
        interval = max(tx_fs - first_fs, now - prior_fs)  # send, ACK
        if interval < self.rtt_min_fs:  # shorter than an RTT: not valid
            delivered = interval = -1
        return RateSample(
            prior, delivered, interval, limited, rtt, prior_in_flight, packets
        )

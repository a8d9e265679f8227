"""The probe timer that finally sends data nobody pushed.
(``include/net/tcp.h``, ``tcp_check_probe_timer``, ``tcp_probe0_base``;
``net/ipv4/tcp_output.c``, ``tcp_write_wakeup``)

Data held by a cork or ``MSG_MORE`` with nothing in flight would wait
for ever; ``tcp_check_probe_timer`` arms the zero-window probe timer
``tcp_probe0_base`` ahead, and when it fires ``tcp_write_wakeup`` sends
the head segment.  A policy says how many ticks ahead.

>>> p = RtoMinProbe(hz=250, rto_min_s=0.2)
>>> p.ticks()
50
>>> s = SrttProbe(hz=250, rto_min_s=0.2)
>>> s.sent(1000, 0); s.acked(1000, 40 * 10**9)   # a 40 us RTT sample
>>> s.srtt_us, s.ticks()
(40, 51)
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["RtoMinProbe", "SrttProbe"]

_US = 10**9  # femtoseconds per microsecond


# rule: rto-min-probe
class RtoMinProbe:
    """The probe waits ``TCP_RTO_MIN`` (200 ms): the textbook value.

    Interface: ``ticks()``; ``sent(end_seq, now)`` and
    ``acked(ack, now)`` feed RTT samples to policies that want them
    (``samples`` says whether to call them).
    """

    samples = False
    __slots__ = ("rto_min_ticks", "hz")

    def __init__(self, hz: int, rto_min_s: float) -> None:
        self.hz = hz
        self.rto_min_ticks = max(1, round(rto_min_s * hz))  # s -> ticks

    def ticks(self) -> int:
        """Ticks ahead the probe timer is armed."""
        return self.rto_min_ticks

    def sent(self, end_seq: int, now: int) -> None:
        """A data segment ending at ``end_seq`` left at ``now`` (fs)."""

    def acked(self, ack: int, now: int) -> None:
        """An ACK up to ``ack`` arrived at ``now`` (fs)."""

    # end rule: rto-min-probe

    def cycle_state(self, view: View) -> Hashable:
        return None  # no state of its own

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing to move."""


# rule: srtt-probe
class SrttProbe(RtoMinProbe):
    """Linux >= 3.x: ``max(RTO, TCP_RTO_MIN)`` from the smoothed RTT.

    ``tcp_probe0_base`` uses ``icsk_rto = usecs_to_jiffies(srtt +
    rttvar)`` (``__tcp_set_rto``), and ``rttvar`` never drops below
    ``TCP_RTO_MIN`` (``tcp_rtt_estimator`` floors ``mdev_max_us``), so
    any positive srtt adds a tick after rounding up: 51 ticks at
    HZ=250.  srtt is ``7/8 srtt + 1/8 sample`` in whole microseconds,
    sampled from the oldest newly acknowledged segment
    (``tcp_clean_rtx_queue``).
    """

    samples = True
    __slots__ = ("srtt_us", "rto_min_us", "unacked")

    def __init__(self, hz: int, rto_min_s: float) -> None:
        super().__init__(hz, rto_min_s)
        self.rto_min_us = round(rto_min_s * 1e6)  # s -> us
        self.srtt_us = 0  # 0: no sample yet
        self.unacked: deque = deque()  # (end_seq, sent at)

    def ticks(self) -> int:
        if not self.srtt_us:
            return self.rto_min_ticks
        rto_us = self.srtt_us + self.rto_min_us
        # usecs_to_jiffies rounds up
        return max(self.rto_min_ticks, -(-rto_us * self.hz // 1_000_000))

    def sent(self, end_seq: int, now: int) -> None:
        self.unacked.append((end_seq, now))

    def acked(self, ack: int, now: int) -> None:
        q = self.unacked
        first = None
        while q and q[0][0] <= ack:
            t = q.popleft()[1]
            if first is None:
                first = t
        if first is None:
            return
        m = max(1, (2 * (now - first) + _US) // (2 * _US))  # fs -> us
        s = self.srtt_us
        self.srtt_us = m if not s else s + (m - s) // 8

    # end rule: srtt-probe

    def cycle_state(self, view: View) -> Hashable:
        """srtt, and the segments awaiting their sample (their ends in
        the sender's stream)."""
        rel = tuple((view.seq(e), view.time(t)) for e, t in self.unacked)
        return self.srtt_us, rel

    def cycle_shift(self, shift: Shift) -> None:
        d, dt = shift.seq(), shift.dt
        self.unacked = deque((e + d, t + dt) for e, t in self.unacked)

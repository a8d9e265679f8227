"""How much the sender may put in flight: congestion window, receive
window and pacing.  (``net/ipv4/tcp_output.c``, ``tcp_write_xmit``,
``tcp_cwnd_test``, ``tcp_snd_wnd_test``, ``tcp_mss_split_point``,
``tcp_cwnd_validate``, ``tcp_pacing_check``,
``tcp_update_skb_after_send``; ``net/ipv4/tcp_cong.c``,
``tcp_slow_start``, ``tcp_cong_avoid_ai``, ``tcp_reno_cong_avoid``;
``net/ipv4/tcp_input.c``, ``tcp_rtt_estimator``,
``tcp_slow_start_after_idle_check``, ``tcp_cwnd_restart``; for bbr see
:mod:`models.sim.rules.bbr`)

The sender asks its congestion rule, for the buffer at the head of its
queue, how many of its bytes may leave now (``NoWindow.limit``):

* :class:`NoWindow` (``"none"``): everything, as the simulator did
  before windows were modelled.
* :class:`Reno` (``"reno"``, and ``"cubic"``: without loss CUBIC grows
  as Reno's slow start does): at most ``cwnd - packets_in_flight``
  segments and no byte beyond ``snd_una + snd_wnd`` (the window the
  peer advertises).  ``cwnd`` starts at the profile's initial window (10
  segments today) and grows by the packets each ACK acknowledges, in
  slow start, while the socket is *cwnd-limited* (``tcp_is_cwnd_limited``:
  the last flight used the window, or in slow start ``cwnd < 2 x
  max_packets_out``); above ``ssthresh`` by one segment per window
  (``tcp_cong_avoid_ai``).  No loss is modelled, so ``ssthresh`` stays
  infinite unless a restart sets it.  With
  ``tcp_slow_start_after_idle`` a socket that sent nothing for an RTO
  with nothing in flight restarts from ``min(cwnd, initial window)``,
  halving once per RTO of idleness (``tcp_cwnd_restart``), when it
  queues new data.  (RFC 2861's decay of an application-limited window,
  ``tcp_cwnd_application_limited``, is not modelled: an unused window
  stays.)
* :class:`~models.sim.rules.bbr.Bbr` (``"bbr"``): bbr's own window and
  its pacing: after each buffer the next may leave only
  ``len / pacing_rate`` later.  The rate
  is bbr's (:mod:`models.sim.rules.bbr_model`): first ``2/ln 2`` times 10
  segments per srtt (1 ms before a sample), then its gain times a
  10-round maximum of the delivery-rate samples
  (:mod:`models.sim.rules.rate`), never falling during start-up; after
  start-up it follows the estimate down as well as up.  A ``send()``
  that finds less than an MSS unsent, nothing in the host's transmit
  path and room in the window marks the samples to come
  application-limited, which cannot lower the estimate.  The window is
  bbr's (``bbr_set_cwnd``): twice the estimated bandwidth-delay product
  (2.89 times in start-up) plus the ACK-aggregation allowance and three
  super-packets, reached by growing with each ACK and, once the pipe is
  full, cut to at once; Reno's growth does not apply.  Pacing
  begins after 10 data segments and forgives up to half a buffer's time
  after idleness, as ``tcp_update_skb_after_send`` does.  The pacing
  check comes first in ``tcp_write_xmit``'s loop (``NoWindow.paced``),
  before the windows and Nagle.  A paced push resumes on a timer (the
  TSQ/pacing hrtimer), whose release is CPU of the soft interrupt.

srtt is Linux's estimator (``tcp_rtt_estimator``: ``7/8 srtt + 1/8
sample``, whole microseconds, from the oldest segment each ACK covers; no
retransmission, so every sample is valid).  The RTO used for idleness is
``srtt + TCP_RTO_MIN`` (Linux: ``srtt + max(4 x mdev, rto_min)``, which
is the same while the RTT varies little).

>>> r = Reno(init_cwnd=10, mss=1000, ssthresh=None)
>>> r.cwnd, r.packets_out
(10, 0)
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from models.sim.events import FS

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["NoWindow", "Reno"]

_US = 10**9  # femtoseconds per microsecond
#: Bytes of windows far beyond any simulated flight (no limit), bytes.
_UNLIMITED = 1 << 62


# rule: no-window
class NoWindow:
    """No window and no pacing: every queued byte may leave.

    Interface (the sender calls): ``limit(sender, now, start, n)`` bytes
    of the head buffer ``[start, start + n)`` that may leave now (0:
    stop); ``sent(sender, now, start, end, nsegs)`` after a buffer left;
    ``pushed(sender, cwnd_limited)`` at the end of a push that sent or
    was stopped by the window (``cwnd_full()``: by the congestion
    window); ``acked(now, ack)`` when ``snd_una`` advanced;
    ``queued(sender, now)`` when a ``send()`` queues a new buffer;
    ``bind(sender)`` once, when the sender is built.
    ``srtt_us`` is 0 (no estimate).
    """

    windowed = False
    __slots__ = ()
    srtt_us = 0

    def paced(self, sender, now: int) -> bool:
        """True if pacing holds the next buffer now (``tcp_pacing_check``;
        no pacing here)."""
        return False

    def limit(self, sender, now: int, start: int, n: int) -> int:
        return n

    def bind(self, sender) -> None:
        """Nothing to attach."""

    def cwnd_full(self) -> bool:
        """Whether the congestion window is used up."""
        return False

    def sent(self, sender, now: int, start: int, end: int, nsegs: int) -> None:
        """Nothing to count."""

    def pushed(self, sender, cwnd_limited: bool) -> None:
        """Nothing to validate."""

    def acked(self, now: int, ack: int) -> None:
        """Nothing to grow."""

    def queued(self, sender, now: int) -> None:
        """Nothing to restart."""

    def writing(self, sender, now: int) -> None:
        """Nothing to sample (a ``send()`` begins)."""

    # end rule: no-window

    def handshake(self, rtt_fs: int) -> None:
        """Nothing to seed (the handshake's round trip,
        ``Host.handshake_rtt``)."""

    def cycle_state(self, view: View) -> Hashable:
        return None  # no state of its own

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing to move."""


# rule: reno
class Reno(NoWindow):
    """Slow start and congestion avoidance without loss, the receive
    window, slow start after idle (see the module)."""

    windowed = True
    __slots__ = (
        "init_cwnd",
        "mss",
        "cwnd",
        "cnt",
        "ssthresh",
        "rtx",
        "packets_out",
        "max_packets_out",
        "max_packets_seq",
        "cwnd_limited",
        "srtt_us",
        "lsndtime",
        "restart_after_idle",
        "rto_min",
        "growth",
        "sender",
    )

    def __init__(
        self,
        init_cwnd: int,
        mss: int,
        ssthresh: int | None,
        restart_after_idle: bool = True,
        rto_min: int = FS // 5,
    ) -> None:
        self.init_cwnd = init_cwnd
        self.mss = mss
        self.cwnd = init_cwnd  # segments
        self.cnt = 0  # tp->snd_cwnd_cnt
        self.ssthresh = _UNLIMITED if ssthresh is None else ssthresh
        self.rtx: deque = deque()  # (end seq, sent fs, segments) in flight
        self.packets_out = 0
        self.max_packets_out = 0
        self.max_packets_seq = 1
        self.cwnd_limited = False
        self.srtt_us = 0  # 8 x srtt in microseconds, as tp->srtt_us
        self.lsndtime = -1  # fs: last data sent
        self.restart_after_idle = restart_after_idle
        self.rto_min = rto_min  # fs
        self.growth = 0  # segments added to cwnd (a statistic)
        self.sender = None

    def bind(self, sender) -> None:
        """Remember the sender (its ``snd_una`` for the state)."""
        self.sender = sender

    def cwnd_full(self) -> bool:
        return self.packets_out >= self.cwnd

    def limit(self, sender, now: int, start: int, n: int) -> int:
        quota = self.cwnd - self.packets_out  # tcp_cwnd_test
        if quota <= 0:
            return 0
        mss = self.mss
        room = sender.snd_una + sender.snd_wnd - start  # tcp_snd_wnd_test
        first = n if n < mss else mss
        if room < first:
            return 0
        cap = quota * mss  # tcp_mss_split_point
        if cap < n:
            n = cap
        return room if room < n else n

    def sent(self, sender, now: int, start: int, end: int, nsegs: int) -> None:
        self.rtx.append((end, now, nsegs))
        self.packets_out += nsegs
        self.lsndtime = now  # tcp_event_data_sent

    def pushed(self, sender, cwnd_limited: bool) -> None:
        """``tcp_cwnd_validate``."""
        out = self.packets_out
        if (
            sender.snd_una >= self.max_packets_seq
            or cwnd_limited
            or (not self.cwnd_limited and out > self.max_packets_out)
        ):
            self.max_packets_out = out
            self.max_packets_seq = sender.snd_nxt
            self.cwnd_limited = cwnd_limited

    def acked(self, now: int, ack: int) -> None:
        acked = self.delivered(now, ack)
        if acked:
            self.grow(acked)

    def delivered(self, now: int, ack: int) -> int:
        """The segments ``ack`` newly covers leave the flight; the RTT of
        the oldest enters srtt.  Returns how many segments."""
        rtx = self.rtx
        acked = 0
        first = -1
        while rtx and rtx[0][0] <= ack:
            _end, t, k = rtx.popleft()
            if first < 0:
                first = t
            acked += k
        if not acked:
            return 0
        self.packets_out -= acked
        m = (now - first) // _US  # fs -> whole microseconds
        if m < 1:
            m = 1
        s = self.srtt_us  # tcp_rtt_estimator: 8 x srtt
        self.srtt_us = m << 3 if not s else s + m - (s >> 3)
        return acked

    def handshake(self, rtt_fs: int) -> None:
        """The handshake's round trip, ``rtt_fs`` femtoseconds, is the first
        RTT sample (``tcp_synack_rtt_meas`` in ``tcp_check_req`` on the
        server, the SYN-ACK on the client): srtt before any data
        (``Host.handshake_rtt``).  A path with no latency at all gives
        0, a sample under a microsecond like any other."""
        if rtt_fs < 0:
            raise ValueError(f"handshake round trip {rtt_fs} fs: must be >= 0")
        if self.srtt_us:
            raise RuntimeError("the handshake's sample comes before any other")
        m = max(1, rtt_fs // _US)  # fs -> whole microseconds, at least 1
        self.srtt_us = m << 3  # tcp_rtt_estimator's first sample

    def grow(self, acked: int) -> None:
        """``tcp_cong_avoid`` (Reno's): slow start, then one segment per
        window of ACKed segments, while the window limits."""
        if not self._is_cwnd_limited():
            return
        cwnd = self.cwnd
        if cwnd < self.ssthresh:  # tcp_slow_start
            grown = cwnd + acked
            if grown > self.ssthresh:
                grown = self.ssthresh
            acked -= grown - cwnd
            self.growth += grown - cwnd
            cwnd = self.cwnd = grown
            if not acked:
                return
        self.cnt += acked  # tcp_cong_avoid_ai
        if self.cnt >= cwnd:
            delta = self.cnt // cwnd
            self.cnt -= delta * cwnd
            self.cwnd += delta
            self.growth += delta

    def _is_cwnd_limited(self) -> bool:
        """``tcp_is_cwnd_limited``."""
        if self.cwnd_limited:
            return True
        if self.cwnd < self.ssthresh:
            return self.cwnd < 2 * self.max_packets_out
        return False

    def rto(self) -> int:
        """The RTO for idleness, fs: ``srtt + TCP_RTO_MIN``."""
        return (self.srtt_us >> 3) * _US + self.rto_min  # us -> fs

    def queued(self, sender, now: int) -> None:
        """``tcp_slow_start_after_idle_check`` (from ``tcp_skb_entail``)."""
        if (
            not self.restart_after_idle
            or self.packets_out
            or self.lsndtime < 0
        ):
            return
        delta = now - self.lsndtime
        rto = self.rto()
        if delta <= rto:
            return
        cwnd = self.cwnd  # tcp_cwnd_restart
        restart = self.init_cwnd if self.init_cwnd < cwnd else cwnd
        delta -= rto
        while delta > 0 and cwnd > restart:
            cwnd >>= 1
            delta -= rto
        self.cwnd = cwnd if cwnd > restart else restart

    # end rule: reno

    def cycle_counters(self) -> dict:
        return {"growth": self.growth}

    def cycle_state(self, view: View) -> Hashable:
        """The window, the segments in flight (relative), srtt and how
        long ago data last left (any age beyond the RTO compares the
        same)."""
        seq = view.seq
        una = self.sender.snd_una if self.sender is not None else 0
        age: int | str | None = None
        if self.lsndtime >= 0:
            age = view.now - self.lsndtime
            if self.restart_after_idle and age > self.rto():
                age = "idle"
        # tcp_cwnd_validate's record matters only while it could grow
        # cwnd: not cwnd-limited and 2 x max_packets_out <= cwnd, no ACK
        # grows it, and any later record that could (more than cwnd/2
        # out, or a limited push) overwrites every such record alike.
        record: tuple | str = "low"
        if self.cwnd_limited or 2 * self.max_packets_out > self.cwnd:
            mseq = self.max_packets_seq
            record = (
                self.max_packets_out,
                seq(mseq) if mseq > una else None,
                self.cwnd_limited,
            )
        return (
            self.cwnd,
            self.cnt,
            self.ssthresh,
            tuple((seq(e), view.time(t), k) for e, t, k in self.rtx),
            record,
            self.srtt_us,
            age,
        )

    def cycle_signature(self, view: View) -> Hashable:
        return self.cwnd, self.packets_out

    def cycle_shift(self, shift: Shift) -> None:
        shift.grow(self, "growth")
        d, dt = shift.seq(), shift.dt
        self.rtx = deque((e + d, t + dt, k) for e, t, k in self.rtx)
        self.max_packets_seq += d
        if self.lsndtime >= 0:
            self.lsndtime += dt

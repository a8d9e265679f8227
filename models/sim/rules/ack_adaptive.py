"""The delayed ACK's timeout following the traffic, as today's kernels
adapt it (``net/ipv4/tcp_input.c``, ``net/ipv4/tcp_timer.c``,
``net/ipv4/tcp_output.c``): :class:`AdaptiveAck`, the Linux ACK rule of
:mod:`models.sim.rules.ack` with an adaptive ``ato``.
"""

from __future__ import annotations

from models.sim.events import FS
from models.sim.rules.ack import LinuxAck

__all__ = ["AdaptiveAck", "ato_sequence"]


# rule: adaptive-ato
class AdaptiveAck(LinuxAck):
    """:class:`~models.sim.rules.ack.LinuxAck` with ``ato`` following the
    traffic (today's kernels; linux-tcp-rules item 22).

    * ``tcp_event_data_recv`` (``net/ipv4/tcp_input.c``): with ``m`` the
      jiffies since data last arrived, ``m <= TCP_ATO_MIN/2`` gives
      ``ato = ato/2 + TCP_ATO_MIN/2``; ``m < ato`` gives ``ato = ato/2 +
      m``, at most the RTO; ``m`` beyond the RTO adds quick ACKs.  Data
      arriving every ``m < ato`` drives ``ato`` towards ``2m``.
    * ``tcp_delack_timer_handler`` (``net/ipv4/tcp_timer.c``): a delayed
      ACK that the timer had to send doubles ``ato`` (at most the RTO)
      outside pingpong mode; in pingpong mode it leaves pingpong and
      resets ``ato`` to ``TCP_ATO_MIN``.
    * ``tcp_send_delayed_ack`` (``net/ipv4/tcp_output.c``): an ``ato``
      above ``TCP_DELACK_MIN`` is cut to ``max_ato``: ``HZ/2``, or
      ``TCP_DELACK_MAX`` in pingpong mode or after a pushed segment, and
      no more than ``max(srtt, TCP_DELACK_MIN)`` once an RTT is measured
      (this host's sender's srtt, :mod:`models.sim.rules.cc`; none with
      ``congestion_control="none"``); then at most ``TCP_DELACK_MAX``
      (``icsk_delack_max``).

    The RTO is taken as ``TCP_RTO_MIN`` plus srtt in ticks.  Where
    ``m``'s value in jiffies depends on where the ticks fall and the
    outcome does too, the clock counts it (``TickClock.sensitive``).

    >>> ato_sequence([8, 12, 15, 15, 15, 3], ato=10, half=5, rto=50)
    [13, 18, 24, 27, 28, 19]
    """

    __slots__ = ("cap_ticks",)

    def __init__(self, receiver, profile) -> None:
        super().__init__(receiver, profile)
        self.cap_ticks = max(
            1, round(profile.delack_cap_s * profile.hz)
        )  # s -> ticks

    def _rto(self) -> int:
        """``icsk_rto`` in ticks: ``TCP_RTO_MIN`` plus srtt."""
        srtt_us = _srtt_us(self.rcv)
        return self.rto_ticks + -(-srtt_us * self.hz // 10**6)  # us -> ticks

    def data_received(self, now: int, length: int, psh: bool) -> None:
        self.owed = True  # inet_csk_schedule_ack
        self._measure_rcv_mss(length, psh)
        if not self.ato:  # first data
            self._incr_quickack()
            self.ato = self.delack_ticks
        else:
            q, r = divmod((now - self.lrcv) * self.hz, FS)
            half = self.delack_ticks >> 1
            if q < half or (q == half and not r):  # m <= half at any phase
                self.ato = (self.ato >> 1) + half
            else:
                rto = self._rto()
                out = _ato_step(self.ato, q, half, rto)
                if r:  # m is q or q + 1 jiffies, as the ticks fall
                    other = _ato_step(self.ato, q + 1, half, rto)
                    if other != out:
                        clock = self.rcv.clock
                        clock.sensitive += 1
                        m = clock.jiffies(now) - clock.jiffies(self.lrcv)
                        out = _ato_step(self.ato, m, half, rto)
                self.ato, quick = out
                if quick:
                    self._incr_quickack()  # a gap longer than the RTO
        self.lrcv = now
        if self.space is not None:
            self._window_data(now, length)

    def _send_delayed_ack(self, now: int) -> None:
        ato = self.ato or self.delack_ticks
        if ato > self.delack_ticks:  # tcp_send_delayed_ack's slow path
            max_ato = self.hz >> 1
            if self.in_pingpong() or self.pushed & 1:
                max_ato = self.cap_ticks
            srtt_us = _srtt_us(self.rcv)
            if srtt_us:
                rtt = -(-srtt_us * self.hz // 10**6)  # usecs_to_jiffies
                if rtt < self.delack_ticks:
                    rtt = self.delack_ticks
                if rtt < max_ato:
                    max_ato = rtt
            if ato > max_ato:
                ato = max_ato
        if ato > self.cap_ticks:
            ato = self.cap_ticks
        self._arm_delayed_ack(now, ato)

    def _on_timer(self, now: int, _arg: object) -> None:
        self.rcv.clock.fired()
        if self.owed:
            if self.in_pingpong():  # leave pingpong, deflate ato
                self.pingpong = 0
                self.ato = self.delack_ticks
            else:  # inflate ato
                ato = self.ato << 1
                rto = self._rto()
                self.ato = ato if ato < rto else rto
            self.delayed_acks += 1
            self.rcv.send_ack(now)

    # end rule: adaptive-ato

    cycle_state = LinuxAck.cycle_state  # ato is in LinuxAck's state


def _srtt_us(receiver) -> int:
    """This host's smoothed RTT in microseconds (0: none measured)."""
    ep = getattr(receiver, "ep", None)
    sender = getattr(ep, "sender", None)
    cc = getattr(sender, "cc", None)
    return (getattr(cc, "srtt_us", 0) or 0) >> 3  # 8 x srtt -> srtt


def _ato_step(ato: int, m: int, half: int, rto: int) -> tuple[int, bool]:
    """``tcp_event_data_recv``'s update of ``ato`` (ticks) for a gap of
    ``m`` jiffies: the new ``ato`` and whether quick ACKs are added."""
    if m <= half:
        return (ato >> 1) + half, False
    if m < ato:
        ato = (ato >> 1) + m
        return (ato if ato < rto else rto), False
    return ato, m > rto


def ato_sequence(gaps: list, ato: int, half: int, rto: int) -> list:
    """``ato`` (ticks) after each of ``gaps`` (jiffies between data
    arrivals), from ``ato``: ``_ato_step`` in turn."""
    out = []
    for m in gaps:
        ato, _quick = _ato_step(ato, m, half, rto)
        out.append(ato)
    return out

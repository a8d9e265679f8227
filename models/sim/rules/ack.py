"""When the receiver acknowledges: at once, or after a delay.
(``net/ipv4/tcp_input.c``, ``net/ipv4/tcp_output.c``,
``net/ipv4/tcp_timer.c``, ``net/ipv4/tcp.c``: each rule below names its
function)

An ACK policy sees every in-order data segment, every read by the
application and every segment this host sends (each carries the ACK),
and decides when a pure ACK must go out.  Today's kernels adapt the delayed
ACK's timeout to the traffic: :mod:`models.sim.rules.ack_adaptive`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from models.sim.events import FS, Timer
from models.sim.rules.rwnd import ReceiveSpace

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = [
    "AckPolicy",
    "LinuxAck",
    "ImmediateAck",
]

_TCP_HEADER_BYTES = 32  # TCP header (20) + timestamps (12), as
#                          tcp_measure_rcv_mss counts it
_TCP_MSS_DEFAULT = 536  # include/net/tcp.h
_TCP_MIN_MSS = 88  # include/net/tcp.h
_TCP_BASE_HDR = 20  # sizeof(struct tcphdr)
_PINGPONG_MAX = 255  # icsk_ack.pingpong is a u8 that saturates


class AckPolicy:
    """Interface of an ACK policy; ``receiver`` has ``rcv_nxt``,
    ``clock``, ``loop`` and ``send_ack(now)``.

    ``data_received(now, length, psh)``
        an in-order data segment was queued (``rcv_nxt`` advanced);
    ``check(now)``
        the segment is processed: ACK now, arm a timer, or wait;
    ``on_read(now)``
        the application read everything queued;
    ``ack_sent(now)``
        a segment carrying the ACK left (a pure ACK or data);
    ``data_sent(now)``
        a data segment left (after ``ack_sent``);
    ``quickack(now)``
        the application set ``TCP_QUICKACK`` (after a read).

    ``owed`` is whether an ACK is owed (``ICSK_ACK_SCHED``): the
    endpoint calls ``check`` only then.  ``delayed_acks`` counts ACKs
    sent by a timer.
    """

    __slots__ = ("rcv", "owed", "delayed_acks")

    def __init__(self, receiver, profile) -> None:
        self.rcv = receiver
        self.owed = False
        self.delayed_acks = 0

    def data_received(self, now: int, length: int, psh: bool) -> None:
        raise NotImplementedError

    def check(self, now: int) -> None:
        raise NotImplementedError

    def on_read(self, now: int) -> None:
        """Nothing to do by default."""

    def ack_sent(self, now: int) -> None:
        """Nothing to do by default."""

    def data_sent(self, now: int) -> None:
        """Nothing to do by default."""

    def quickack(self, now: int) -> None:
        """Nothing to do by default."""

    def established(self) -> None:
        """Begin as on a connection long past its start-up
        (``Run.start``); nothing to do by default."""

    # The fast-forward's view (models.sim.fastforward); a policy class
    # states its own cycle_state.

    def cycle_counters(self) -> dict:
        return {"delayed_acks": self.delayed_acks}

    def cycle_signature(self, view: View) -> Hashable:
        return self.owed

    def cycle_shift(self, shift: Shift) -> None:
        shift.grow(self)


# rule: immediate-ack
class ImmediateAck(AckPolicy):
    """Acknowledge every data segment at once (ns.py's TCP; Linux with
    ``TCP_QUICKACK`` re-set after every read)."""

    __slots__ = ()

    def data_received(self, now: int, length: int, psh: bool) -> None:
        self.owed = True

    def check(self, now: int) -> None:
        if self.owed:
            self.rcv.send_ack(now)

    def ack_sent(self, now: int) -> None:
        self.owed = False

    # end rule: immediate-ack

    def cycle_state(self, view: View) -> Hashable:
        return (self.owed,)


# rule: linux-ack
class LinuxAck(AckPolicy):
    """Linux's delayed ACK with quick-ACK and pingpong modes.

    * ``tcp_event_data_recv``: the first data enters quick-ACK mode,
      ``quick = min(max(rcv_wnd / (2 rcv_mss), 2), 16)`` and ``ato =
      TCP_ATO_MIN``; a gap longer than the RTO adds quick ACKs again
      (``net/ipv4/tcp_input.c``, ``tcp_incr_quickack``).  (``ato``
      stays at ``TCP_ATO_MIN`` here, as the linux-2.4 profile keeps it;
      :class:`~models.sim.rules.ack_adaptive.AdaptiveAck` adapts it as
      today's kernels do.)
    * ``__tcp_ack_snd_check``: ACK at once if more than one ``rcv_mss``
      is unacknowledged (and, if the profile keeps a receive window, it
      would not shrink: :mod:`~models.sim.rules.rwnd`), or in quick-ACK
      mode (``quick > 0`` and not pingpong); else ``tcp_send_delayed_ack``
      arms the timer ``ato`` ticks ahead, keeping an earlier pending one,
      and ACKs at once if that is due within ``ato/4`` (``tcp_input.c``,
      ``net/ipv4/tcp_output.c``).
    * The timer sends the ACK and leaves pingpong mode
      (``net/ipv4/tcp_timer.c``, ``tcp_delack_timer_handler``).
    * Any segment sent carries the ACK, cancels the timer and uses a
      quick ACK if one was owed (``net/ipv4/tcp_output.c``,
      ``tcp_event_ack_sent``; ``include/net/tcp.h``,
      ``tcp_dec_quickack_mode``).
    * Sending data within ``ato`` of the last data received counts
      towards pingpong mode (``net/ipv4/tcp_output.c``,
      ``tcp_event_data_sent``).
    * The largest segment seen sets ``rcv_mss``; smaller ones set the
      PUSHED flags (``net/ipv4/tcp_input.c``, ``tcp_measure_rcv_mss``).
    * After a read, ACK if more than ``rcv_mss`` is unacknowledged, or
      if a small pushed segment was consumed (PUSHED2, or PUSHED
      outside pingpong) (``net/ipv4/tcp.c``, ``tcp_cleanup_rbuf``).
    * ``setsockopt(TCP_QUICKACK, 1)`` (``__tcp_sock_set_quickack``):
      leave pingpong mode, and if an ACK is owed mark it pushed and run
      ``tcp_cleanup_rbuf``, which sends it.  Nothing persists: the next
      reply sent within ``ato`` of data received counts towards pingpong
      mode again, which is why applications set it after every read.
    """

    __slots__ = (
        "rcv_wup",
        "pushed",
        "quick",
        "pingpong",
        "ato",
        "lrcv",
        "rcv_mss",
        "last_seg_size",
        "timer",
        "advmss",
        "delack_ticks",
        "rto_ticks",
        "rcv_wnd",
        "max_quick",
        "pingpong_thresh",
        "hz",
        "space",
        "window_updates",
    )

    def __init__(self, receiver, profile) -> None:
        super().__init__(receiver, profile)
        self.advmss = receiver.advmss
        self.delack_ticks = profile.delack_ticks
        self.rto_ticks = profile.rto_min_ticks
        self.rcv_wnd = profile.rcv_wnd_bytes
        self.max_quick = profile.max_quickacks
        self.pingpong_thresh = profile.pingpong_threshold
        self.hz = profile.hz
        self.rcv_wup = 1  # rcv_nxt when the last ACK left
        self.pushed = 0  # 1: ICSK_ACK_PUSHED, 2: PUSHED2
        self.quick = 0
        self.pingpong = 0
        self.ato = 0  # ticks; 0 until the first data
        self.lrcv = -1  # fs: when data last arrived
        self.rcv_mss = min(profile.initial_rcv_mss, self.advmss)
        self.last_seg_size = 0
        self.timer = Timer(receiver.loop, self._on_timer)
        self.space = ReceiveSpace.of(receiver, profile)  # or None
        # a read that doubles the window it can offer sends it at
        # once (tcp_cleanup_rbuf): on with KernelProfile.peer_window,
        # where the peer's sender waits for it
        self.window_updates = False

    def in_pingpong(self) -> bool:
        return self.pingpong >= self.pingpong_thresh

    def established(self) -> None:
        """No quick-ACK start (data arrived before: ``ato`` at the
        delayed-ACK minimum, the last arrival at time 0) and interactive
        already (pingpong at its threshold), as on a connection whose
        replies have followed its requests for long."""
        self.ato = self.delack_ticks
        self.lrcv = 0
        self.quick = 0
        self.pingpong = max(self.pingpong, self.pingpong_thresh)

    def data_received(self, now: int, length: int, psh: bool) -> None:
        self.owed = True  # inet_csk_schedule_ack
        self._measure_rcv_mss(length, psh)
        if not self.ato:  # first data
            self._incr_quickack()
            self.ato = self.delack_ticks
        elif (
            now - self.lrcv
        ) * self.hz > self.rto_ticks * FS and self.rcv.clock.ticks_at_least(
            self.lrcv, now, self.rto_ticks + 1
        ):
            self._incr_quickack()  # a gap longer than RTO
        self.lrcv = now
        if self.space is not None:
            self._window_data(now, length)

    def _window_data(self, now: int, length: int) -> None:
        """The receive window's share of ``tcp_event_data_recv`` for a
        packet of ``length`` bytes: the receive RTT's measurement (with
        autotuning), then ``tcp_grow_window``, whose growth enters
        quick-ACK mode."""
        space = self.space
        assert space is not None  # (callers check)
        if space.cap is not None:
            space.arrived(now)  # tcp_rcv_rtt_measure
        if space.received(length):
            self.quick |= 1

    def check(self, now: int) -> None:
        if not self.owed:
            return
        space = self.space
        if (
            self.rcv.rcv_nxt - self.rcv_wup > self.rcv_mss
            and (space is None or space.grows(self.rcv_mss))
        ) or (self.quick and not self.in_pingpong()):
            self.rcv.send_ack(now)
        else:
            self._send_delayed_ack(now)

    def on_read(self, now: int) -> None:
        space = self.space
        if space is not None and space.cap is not None:
            space.read(now)  # tcp_rcv_space_adjust
        self._cleanup_rbuf(now)

    def _cleanup_rbuf(self, now: int) -> None:
        if self.owed and (
            self.rcv.rcv_nxt - self.rcv_wup > self.rcv_mss
            or self.pushed & 2
            or (self.pushed & 1 and not self.in_pingpong())
        ):
            self.rcv.send_ack(now)
        elif self.window_updates and self.space is not None:
            # the read freed lots of buffer: a window at least twice what
            # is left of the one advertised goes out now (only while that
            # is at most half the clamp)
            space = self.space
            # tcp_receive_window: what is left of the last one advertised
            left = self.rcv_wup + space.wnd - self.rcv.rcv_nxt
            if 2 * left <= space.clamp:
                new = space.window(self.rcv_mss)  # __tcp_select_window
                if new and new >= 2 * left:
                    self.rcv.send_ack(now)

    def quickack(self, now: int) -> None:
        self.pingpong = 0  # inet_csk_exit_pingpong_mode
        if self.owed:
            self.pushed |= 1  # ICSK_ACK_PUSHED
            self._cleanup_rbuf(now)  # tcp_cleanup_rbuf(sk, 1)

    def ack_sent(self, now: int) -> None:
        if self.space is not None:  # tcp_select_window
            self.space.advertise(self.rcv_wup, self.rcv_mss)
        self.rcv_wup = self.rcv.rcv_nxt
        if self.owed:
            if self.quick:  # tcp_dec_quickack_mode
                self.quick -= 1
            self.owed = False
        self.pushed = 0
        if self.timer.entry is not None:
            self.timer.cancel()

    def data_sent(self, now: int) -> None:
        # (the first test settles it without the clock: under ato - 1
        # ticks apart, the jiffies differ by less than ato at any phase)
        ato = self.ato
        if ato and (
            (now - self.lrcv) * self.hz <= (ato - 1) * FS
            or not self.rcv.clock.ticks_at_least(self.lrcv, now, ato)
        ):
            if self.pingpong < _PINGPONG_MAX:
                self.pingpong += 1

    def _measure_rcv_mss(self, length: int, psh: bool) -> None:
        lss = self.last_seg_size
        self.last_seg_size = 0
        if length >= self.rcv_mss:
            mss = min(length, self.advmss)
            if mss != self.rcv_mss and self.space is not None:
                self.space.measured(length)  # scaling_ratio
            self.rcv_mss = mss
            if psh:
                self.pushed |= 1
            return
        with_hdr = length + _TCP_HEADER_BYTES
        if with_hdr >= _TCP_MSS_DEFAULT + _TCP_BASE_HDR or (
            with_hdr >= _TCP_MIN_MSS + _TCP_BASE_HDR and not psh
        ):
            self.last_seg_size = length
            if length == lss:
                self.rcv_mss = length
                return
        if self.pushed & 1:
            self.pushed |= 2
        self.pushed |= 1

    def _incr_quickack(self) -> None:
        wnd = self.rcv_wnd if self.space is None else self.space.wnd
        q = wnd // (2 * self.rcv_mss)
        q = min(q if q else 2, self.max_quick)
        if q > self.quick:
            self.quick = q

    def _send_delayed_ack(self, now: int) -> None:
        self._arm_delayed_ack(now, self.ato or self.delack_ticks)

    def _arm_delayed_ack(self, now: int, ato: int) -> None:
        """Arm the timer ``ato`` ticks ahead, or keep an earlier one, or
        ACK now if that one is almost due."""
        clock = self.rcv.clock
        t = self.timer
        if t.entry is not None:
            # the pending timer expires at jiffies(t.armed_at) + t.ticks
            due = t.ticks - (ato >> 2)
            if (now - t.armed_at) * self.hz > (
                due - 1
            ) * FS and clock.ticks_at_least(t.armed_at, now, due):
                self.rcv.send_ack(now)  # almost due: ACK now
                return
            if t.ticks <= ato or clock.ticks_at_least(
                t.armed_at, now, t.ticks - ato
            ):
                return  # keep the earlier one
        t.arm_ticks(now, ato, clock)

    def _on_timer(self, now: int, _arg: object) -> None:
        self.rcv.clock.fired()
        if self.owed:
            if self.in_pingpong():
                self.pingpong = 0
            self.delayed_acks += 1
            self.rcv.send_ack(now)

    # end rule: linux-ack

    def cycle_parts(self) -> dict:
        if self.space is None:
            return {"timer": self.timer}
        return {"timer": self.timer, "space": self.space}

    def cycle_state(self, view: View) -> Hashable:
        """Its flags and counts, ``rcv_wup`` in the peer's stream, the
        age of the last data (any age beyond the RTO and two ticks
        compares the same) and its timer (a part)."""
        age: int | str | None = None
        if self.lrcv >= 0:
            age = view.now - self.lrcv
            if age >= (self.rto_ticks + 2) * -(-FS // self.hz):
                age = "far"
        return (
            self.owed,
            view.seq(self.rcv_wup),
            self.pushed,
            self.quick,
            min(self.pingpong, self.pingpong_thresh),
            self.ato,
            age,
            self.rcv_mss,
            self.last_seg_size,
        )

    def cycle_signature(self, view: View) -> Hashable:
        return self.owed, self.quick

    def cycle_shift(self, shift: Shift) -> None:
        super().cycle_shift(shift)
        self.rcv_wup += shift.seq()
        if self.lrcv >= 0:
            self.lrcv += shift.dt

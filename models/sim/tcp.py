"""One TCP endpoint: the Linux sender and receiver rules the simulator follows.

Each rule cites the kernel function it follows (torvalds/linux) and its number in
``/work/shared/reference/linux-tcp-rules.md`` (``[rN]``).  Sequence numbers are relative: the first data
byte of each direction is 1, as tcpdump prints them.

Sender
------
* ``write``: bytes append to the unsent tail buffer while it holds less than one MSS; a buffer that fills
  while it is the head of the send queue leaves at once, without PSH (``tcp_sendmsg_locked``,
  ``tcp_push_one``) [r2].  At the end of the call the tail is marked PSH unless MSG_MORE, then pushed:
  in cork mode with MSG_MORE, else in the socket's mode (``tcp_push``) [r3].
* Autocorking (Linux >= 3.14): the end-of-call push is skipped while the tail is partial, data is in
  flight and this host's earlier frames still hold at least as much memory in the transmit path as the
  tail (``tcp_should_autocork``: ``sk_wmem_alloc > skb->truesize``, each skb counted as its payload plus
  :data:`SKB_OVERHEAD_BYTES`); the data goes at the next TX completion (``tcp_tsq_handler``) [r7].
* ``tcp_write_xmit``: every buffer but the last leaves; the last one is tested by ``tcp_nagle_test``: a
  partial buffer is held if corked, or if Nagle is on, data is in flight and the last small segment sent
  is unacknowledged (Minshall: ``snd_una < snd_sml <= snd_nxt``, ``tcp_minshall_check``) [r4, r5].
* Held data with nothing in flight arms the probe timer, ``max(RTO, TCP_RTO_MIN)`` = 200 ms; when it
  fires the head buffer leaves (``tcp_check_probe_timer``, ``tcp_write_wakeup``) [r6].
* Every arriving ACK that advances ``snd_una`` pushes again in the socket's mode (``tcp_data_snd_check``).
* Windows never bind here (the simulated flights are far below cwnd and rwnd); :meth:`Endpoint._window_ok`
  is the one place a cwnd or rwnd limit would go.

Receiver
--------
* ``tcp_event_data_recv``: the first data enters quick-ACK mode with
  ``quick = min(max(rcv_wnd / (2 rcv_mss), 2), 16)`` and ``ato = TCP_ATO_MIN``; a gap longer than the RTO
  adds quick ACKs again [r9].
* ``__tcp_ack_snd_check``: ACK at once if more than one ``rcv_mss`` is unacknowledged, or in quick-ACK mode
  (``quick > 0`` and not pingpong); else ``tcp_send_delayed_ack`` arms the timer ``ato`` ticks ahead,
  keeping an earlier pending timeout, and sending at once if the pending one is due within ``ato/4``
  [r10, r11].
* The timer sends the ACK and leaves pingpong mode (``tcp_delack_timer_handler``) [r12].
* Any data segment carries the ACK and cancels the timer; an ACK that was owed uses one quick ACK
  (``tcp_event_ack_sent``, ``tcp_dec_quickack_mode``) [r13].
* Pingpong: sending data within ``ato`` of the last data received (``tcp_event_data_sent``) [r14].
* ``tcp_measure_rcv_mss``: the largest segment seen sets ``rcv_mss``; smaller ones set the PUSHED flags
  [r15].
* ``tcp_cleanup_rbuf``: when the application reads and an ACK is owed, ACK now if more than ``rcv_mss``
  is unacknowledged, or if the read emptied the queue and a small pushed segment was consumed (PUSHED2,
  or PUSHED outside pingpong) [r16].  The window-update ACK of that function never triggers here
  (receive buffers are far from full).

Timers run on the kernel's tick: a timer armed ``n`` ticks ahead fires on the ``n``-th tick boundary
after the current tick began, so a 40 ms delayed ACK at HZ=100 fires 30-40 ms after it was armed.  With
``kernel_timers`` (6.x): the timer wheel fires ``timer_roundup_ticks`` later (``calc_index``,
``kernel/time/timer.c``), and the probe timer waits ``max(RTO, TCP_RTO_MIN)`` with
``RTO = srtt + TCP_RTO_MIN`` rounded up to a tick (``tcp_probe0_base``, ``__tcp_set_rto``); the smoothed
RTT is the kernel's ``srtt = 7/8 srtt + 1/8 sample`` over samples from the oldest newly acknowledged
segment (``tcp_rtt_estimator``, ``tcp_clean_rtx_queue``).
"""

from __future__ import annotations

from collections import deque

from models.sim.link import Segment

__all__ = ["Endpoint", "SKB_OVERHEAD_BYTES", "NAGLE", "NODELAY", "CORK", "PUSH"]

#: Approximate ``truesize`` overhead of one TCP transmit skb beyond its payload, bytes: the
#: ``struct sk_buff`` and ``skb_shared_info`` of an fclone skb with ``MAX_TCP_HEADER`` headroom (about
#: 1 KiB).  It only matters for autocorking with two or more frames in the transmit path.
SKB_OVERHEAD_BYTES = 1024

# Push modes (the kernel's ``nonagle`` argument).
NAGLE, NODELAY, CORK, PUSH = 0, 1, 2, 3

_TCP_HEADER_BYTES = 32       # TCP header (20) + timestamps option (12), as tcp_measure_rcv_mss counts it
_TCP_MSS_DEFAULT = 536       # include/net/tcp.h
_TCP_MIN_MSS = 88            # include/net/tcp.h
_TCP_BASE_HDR = 20           # sizeof(struct tcphdr)


class _Skb:
    """An unsent send-queue buffer: payload bytes ``[start, end)``."""

    __slots__ = ("start", "end", "psh")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end
        self.psh = False


class Endpoint:
    """The TCP state of one host for one connection (sender side and receiver side).

    Parameters
    ----------
    side : int
        0 for the client, 1 for the server.
    loop : EventLoop
    profile : KernelProfile
    mss : int
        Bytes per full segment (sender) and advertised MSS (receiver).
    nodelay : bool
        TCP_NODELAY set on this socket.
    autocork : bool
        ``tcp_autocorking`` on.
    tick_phase_s : float
        Where in its tick the simulation starts, seconds.
    tx_cost_s : float
        CPU seconds per data segment sent (SK or CK).
    kernel_timers : bool
        Apply the profile's timer round-up and RTO-based probe (see the module docstring).
    """

    def __init__(self, side: int, loop, profile, mss: int, nodelay: bool, autocork: bool,
                 tick_phase_s: float, tx_cost_s: float = 0.0, kernel_timers: bool = False) -> None:
        self.side = side
        self.loop = loop
        self.profile = profile
        self.mss = mss
        self.mode = NODELAY if nodelay else NAGLE
        self.autocork = autocork
        self.tick = profile.tick_s
        self.phase = tick_phase_s
        self.delack_ticks = profile.delack_ticks
        self.rto_ticks = profile.rto_min_ticks
        self.roundup = profile.timer_roundup_ticks if kernel_timers else 0   # ticks a timer runs late
        self.rto_srtt = kernel_timers and profile.probe_rto_srtt
        self.srtt_us = 0          # smoothed RTT, whole microseconds as the kernel keeps it (0: no sample)
        self.sent_times: deque = deque()   # (end sequence, time sent) of unacknowledged data segments
        self.tx_cost = tx_cost_s
        self.link = None          # outgoing Link, set by the engine
        self.app = None           # this host's AppThread, set by the engine
        self.trace = None         # list of segments to record, or None
        # sender
        self.write_seq = 1        # next byte the application writes
        self.snd_nxt = 1          # next byte to send
        self.snd_una = 1          # oldest unacknowledged byte
        self.snd_sml = 1          # end of the last small segment sent (Minshall)
        self.queue: deque = deque()   # unsent buffers
        self.probe_token = 0
        self.probe_armed = False
        self.tsq_throttled = False
        self.tsq_scheduled = False
        # receiver
        self.rcv_nxt = 1          # next byte expected
        self.rcv_wup = 1          # rcv_nxt when the last ACK was sent
        self.copied_seq = 1       # next byte the application will read
        self.ack_owed = False     # ICSK_ACK_SCHED
        self.pushed = 0           # bit 1: ICSK_ACK_PUSHED, bit 2: ICSK_ACK_PUSHED2
        self.dack_token = 0
        self.dack_jiffy = -1      # tick at which the pending delayed-ACK timer fires (-1: none)
        self.dack_event_jiffy = -1  # tick of the timer event queued in the loop (-1: none)
        self.quick = 0
        self.pingpong = 0
        self.ato_ticks = 0        # 0 until the first data arrives
        self.lrcv_jiffy = 0
        self.rcv_mss = min(profile.initial_rcv_mss, mss)
        self.last_seg_size = 0
        # statistics
        self.data_segments = 0
        self.pure_acks = 0
        self.delayed_acks = 0     # ACKs sent by the delayed-ACK timer
        self.probes = 0           # segments sent by the probe timer
        self.tx_cpu = 0.0         # seconds of transmit CPU (SK/CK)
        self.thread_tx_segments = 0  # data segments sent inside the application's own send() calls
        self.in_send = False

    # -- time --------------------------------------------------------------------------------------

    def jiffies(self, t: float) -> int:
        """The tick count at time ``t`` seconds."""
        return int((t + self.phase) / self.tick)

    def jiffy_time(self, j: int) -> float:
        """The time in seconds at which tick ``j`` begins."""
        return j * self.tick - self.phase

    # -- sender ------------------------------------------------------------------------------------

    def write(self, now: float, nbytes: int, more: bool) -> None:
        """One ``send()`` call of ``nbytes`` bytes, with MSG_MORE if ``more`` (``tcp_sendmsg_locked``)."""
        self.in_send = True
        mss = self.mss
        q = self.queue
        remaining = nbytes
        while remaining:
            tail = q[-1] if q else None
            room = mss - tail.end + tail.start if tail is not None else 0
            if room > 0:                                               # coalesce into the unsent tail
                copy = remaining if remaining < room else room
                tail.end += copy
            else:                                                      # start a new buffer
                copy = remaining if remaining < mss else mss
                tail = _Skb(self.write_seq, self.write_seq + copy)
                q.append(tail)
            self.write_seq += copy
            remaining -= copy
            if copy == room or copy == mss:                            # the buffer is now full
                if q[0] is tail:                                       # full head buffer: tcp_push_one
                    self._xmit(now, PUSH)
        # tcp_push: mark PSH unless MSG_MORE, then push (or autocork)
        if q:
            tail = q[-1]
            if not more:
                tail.psh = True
            if (self.autocork and tail.end - tail.start < mss and self.snd_una != self.snd_nxt
                    and self.link.free_at > now):
                n, nbytes_nic, first_done = self.link.nic_bytes(now)
                if n and (n * SKB_OVERHEAD_BYTES + nbytes_nic + 1 > SKB_OVERHEAD_BYTES + tail.end - tail.start):
                    self.tsq_throttled = True
                    if not self.tsq_scheduled:
                        self.tsq_scheduled = True
                        self.loop.schedule(first_done, self._on_tx_completion, None)
                    self.in_send = False
                    return
            self._xmit(now, CORK if more else self.mode)
        self.in_send = False

    def flush(self, now: float) -> None:
        """Send everything unsent regardless of Nagle or cork (toggling TCP_NODELAY on and off)."""
        if self.queue:
            self._xmit(now, PUSH)

    def _window_ok(self, skb: _Skb) -> bool:
        """Whether cwnd and the peer's receive window allow ``skb`` out (never binding in this model)."""
        return True

    def _xmit(self, now: float, mode: int) -> None:
        """``tcp_write_xmit``: send what Nagle, cork and the windows allow."""
        q = self.queue
        mss = self.mss
        while q:
            skb = q[0]
            if not self._window_ok(skb):
                break
            if len(q) == 1 and mode != PUSH and skb.end - skb.start < mss:   # tcp_nagle_test on the last buffer
                if mode == CORK:
                    break
                if mode == NAGLE and self.snd_nxt != self.snd_una and self.snd_una < self.snd_sml <= self.snd_nxt:
                    break
            q.popleft()
            self._send_data(now, skb)
        if q and self.snd_una == self.snd_nxt and not self.probe_armed:       # tcp_check_probe_timer
            self.probe_armed = True
            self.probe_token += 1
            fire = self.jiffy_time(self.jiffies(now) + self._probe_ticks() + self.roundup)
            self.loop.schedule(fire, self._on_probe, self.probe_token)

    def _probe_ticks(self) -> int:
        """Ticks the probe timer is armed ahead: ``TCP_RTO_MIN``, or ``max(RTO, TCP_RTO_MIN)`` (kernel timers)."""
        if not self.rto_srtt or not self.srtt_us:
            return self.rto_ticks
        rto_us = self.srtt_us + round(self.profile.rto_min_s * 1e6)      # seconds -> microseconds
        hz = round(1.0 / self.tick)
        return max(self.rto_ticks, -(-rto_us * hz // 1_000_000))       # usecs_to_jiffies rounds up

    def _rtt_sample(self, now: float, ack: int) -> None:
        """Take the RTT of the oldest segment ``ack`` covers and update ``srtt_us`` (``tcp_rtt_estimator``)."""
        q = self.sent_times
        first = None
        while q and q[0][0] <= ack:
            t = q.popleft()[1]
            if first is None:
                first = t
        if first is None:
            return
        m = max(1, round((now - first) * 1e6))                          # seconds -> microseconds
        self.srtt_us = m if not self.srtt_us else self.srtt_us + (m - self.srtt_us) // 8

    def _send_data(self, now: float, skb: _Skb) -> None:
        seg = Segment(self.side, skb.start, skb.end, self.rcv_nxt, skb.psh)
        self.snd_nxt = skb.end
        if skb.end - skb.start < self.mss:                             # tcp_minshall_update
            self.snd_sml = skb.end
        if self.probe_armed:                                           # the RTO timer replaces the probe
            self.probe_armed = False
            self.probe_token += 1
        # the segment carries the ACK (tcp_event_ack_sent, inlined _ack_sent)
        self.rcv_wup = self.rcv_nxt
        if self.ack_owed:
            if self.quick:
                self.quick -= 1
            self.ack_owed = False
        self.pushed = 0
        self.dack_jiffy = -1
        # tcp_event_data_sent: a reply within ato of the last data received means interactive
        if self.ato_ticks and int((now + self.phase) / self.tick) - self.lrcv_jiffy < self.ato_ticks:
            self.pingpong += 1
        self.data_segments += 1
        if self.rto_srtt:
            self.sent_times.append((skb.end, now))
        self.tx_cpu += self.tx_cost
        if self.in_send:
            self.thread_tx_segments += 1
        self.link.send(now, seg)
        if self.trace is not None:
            self.trace.append((now, seg))

    def _send_ack(self, now: float) -> None:
        """A pure ACK (``tcp_send_ack``)."""
        seg = Segment(self.side, self.snd_nxt, self.snd_nxt, self.rcv_nxt, False)
        self._ack_sent()
        self.pure_acks += 1
        self.link.send(now, seg)
        if self.trace is not None:
            self.trace.append((now, seg))

    def _ack_sent(self) -> None:
        """``tcp_event_ack_sent``: the ACK is no longer owed; the timer is cancelled."""
        self.rcv_wup = self.rcv_nxt
        if self.ack_owed:
            if self.quick:                                             # tcp_dec_quickack_mode
                self.quick -= 1
            self.ack_owed = False
        self.pushed = 0
        self.dack_jiffy = -1          # cancel the timer (its queued event, if any, will find nothing to do)

    def _on_probe(self, now: float, token: int) -> None:
        """Probe timer: send the head buffer whatever Nagle or cork say (``tcp_write_wakeup``)."""
        if token != self.probe_token:
            return
        self.probe_armed = False
        if self.queue:
            skb = self.queue.popleft()
            skb.psh = True
            self.probes += 1
            self._send_data(now, skb)

    def _on_tx_completion(self, now: float, _arg) -> None:
        """TX completion of an earlier frame: release autocorked data (``tcp_tsq_handler``)."""
        self.tsq_scheduled = False
        if self.tsq_throttled:
            self.tsq_throttled = False
            if self.queue:
                self._xmit(now, self.mode)

    # -- receiver ----------------------------------------------------------------------------------

    def in_pingpong(self) -> bool:
        return self.pingpong >= self.profile.pingpong_threshold

    def receive(self, now: float, seg: Segment) -> None:
        """Process an arriving segment (``tcp_rcv_established``): ACK, data, push, ACK decision."""
        if self.trace is not None:
            self.trace.append((seg.t_rx, seg))
        advanced = False
        if seg.ack > self.snd_una:                                     # tcp_ack: cumulative
            if seg.ack > self.snd_nxt:
                raise AssertionError(f"peer acknowledged {seg.ack} beyond snd_nxt {self.snd_nxt}")
            self.snd_una = seg.ack
            advanced = True
            if self.rto_srtt:
                self._rtt_sample(now, seg.ack)
        length = seg.end - seg.seq
        if length:
            if seg.seq != self.rcv_nxt:
                raise AssertionError(f"segment {seg.seq}:{seg.end} out of order (rcv_nxt {self.rcv_nxt})")
            self.rcv_nxt = seg.end
            self.ack_owed = True                                       # inet_csk_schedule_ack
            self._measure_rcv_mss(length, seg.psh)
            self._data_recv(now)
            self.app.on_data(now)
        if advanced and self.queue:                                    # tcp_data_snd_check
            self._xmit(now, self.mode)
        if self.ack_owed:                                              # tcp_ack_snd_check
            if self.rcv_nxt - self.rcv_wup > self.rcv_mss or (self.quick and not self.in_pingpong()):
                self._send_ack(now)
            else:
                self._send_delayed_ack(now)

    def _measure_rcv_mss(self, length: int, psh: bool) -> None:
        """``tcp_measure_rcv_mss``."""
        lss = self.last_seg_size
        self.last_seg_size = 0
        if length >= self.rcv_mss:
            self.rcv_mss = min(length, self.mss)
            if psh:
                self.pushed |= 1
            return
        with_hdr = length + _TCP_HEADER_BYTES
        if with_hdr >= _TCP_MSS_DEFAULT + _TCP_BASE_HDR or (with_hdr >= _TCP_MIN_MSS + _TCP_BASE_HDR and not psh):
            self.last_seg_size = length
            if length == lss:
                self.rcv_mss = length
                return
        if self.pushed & 1:
            self.pushed |= 2
        self.pushed |= 1

    def _data_recv(self, now: float) -> None:
        """``tcp_event_data_recv``: quick-ACK budget and ``lrcvtime``."""
        j = int((now + self.phase) / self.tick)
        if not self.ato_ticks:                                         # first data
            self._incr_quickack()
            self.ato_ticks = self.delack_ticks
        elif j - self.lrcv_jiffy > self.rto_ticks:                     # too long a gap
            self._incr_quickack()
        self.lrcv_jiffy = j

    def _incr_quickack(self) -> None:
        q = self.profile.rcv_wnd_bytes // (2 * self.rcv_mss)
        q = min(q if q else 2, self.profile.max_quickacks)
        if q > self.quick:
            self.quick = q

    def _send_delayed_ack(self, now: float) -> None:
        """``tcp_send_delayed_ack``."""
        ato = self.ato_ticks or self.delack_ticks
        j = int((now + self.phase) / self.tick)
        timeout = j + ato
        if self.dack_jiffy >= 0:
            if self.dack_jiffy <= j + (ato >> 2):                      # pending timer almost due
                self._send_ack(now)
                return
            if timeout >= self.dack_jiffy:
                return                                                 # keep the earlier timeout
        self.dack_jiffy = timeout
        # One heap event per endpoint at most: an event already queued at or before the new timeout
        # re-examines the timer when it runs (a cancelled timer costs nothing more).
        if self.dack_event_jiffy < 0 or self.dack_event_jiffy > timeout:
            self.dack_event_jiffy = timeout
            self.dack_token += 1
            self.loop.schedule((timeout + self.roundup) * self.tick - self.phase, self._on_delack, self.dack_token)

    def _on_delack(self, now: float, token: int) -> None:
        """``tcp_delack_timer_handler``."""
        if token != self.dack_token:
            return
        fired = self.dack_event_jiffy                                  # the expiry this event was armed for
        self.dack_event_jiffy = -1
        if self.dack_jiffy < 0:                                        # cancelled meanwhile
            return
        if self.dack_jiffy > fired:                                    # re-armed later: wait for it
            self.dack_event_jiffy = self.dack_jiffy
            self.dack_token += 1
            self.loop.schedule((self.dack_jiffy + self.roundup) * self.tick - self.phase, self._on_delack,
                               self.dack_token)
            return
        self.dack_jiffy = -1
        if self.ack_owed:
            if self.pingpong >= self.profile.pingpong_threshold:
                self.pingpong = 0
            self.delayed_acks += 1
            self._send_ack(now)

    def app_read(self, now: float) -> int:
        """The application reads everything queued (``tcp_recvmsg`` + ``tcp_cleanup_rbuf``); bytes read."""
        copied = self.rcv_nxt - self.copied_seq
        if copied <= 0:
            return 0
        self.copied_seq = self.rcv_nxt
        if self.ack_owed and (self.rcv_nxt - self.rcv_wup > self.rcv_mss or self.pushed & 2
                              or (self.pushed & 1 and not self.in_pingpong())):
            self._send_ack(now)
        return copied

"""The sending half of a TCP endpoint: the send queue and when it
transmits.  Sequence numbers are relative: the first byte is 1.

* ``write``: bytes append to the unsent tail buffer while it holds less
  than ``size_goal`` bytes (``tcp_xmit_size_goal``: a whole number of
  MSS, up to the GSO/TSO limit; one MSS without GSO); a buffer that fills
  while it heads the queue leaves at once, without PSH
  (``net/ipv4/tcp.c``, ``tcp_sendmsg_locked``, ``tcp_send_mss``;
  ``net/ipv4/tcp_output.c``, ``tcp_push_one``).  At the end of the call
  the cork rule decides (``net/ipv4/tcp.c``, ``tcp_push``).
* ``push`` (``net/ipv4/tcp_output.c``, ``tcp_write_xmit``): first, for
  each buffer, pacing may stop the push (``tcp_pacing_check``, asked
  before the windows and Nagle, so held data arm the pacing timer too);
  every buffer but the last leaves; the last one's partial tail (its
  bytes beyond the last whole MSS) waits when corked, or in Nagle mode
  when the Nagle rule holds it (``tcp_nagle_test``; for a buffer of
  several MSS the full part leaves, ``tcp_mss_split_point``).  The congestion rule
  (:mod:`models.sim.rules.cc`) may cut a buffer or stop the push: the
  congestion window, the peer's window ``snd_wnd``, pacing.
* A buffer leaves as one GSO/TSO super-packet: MSS-sized segments on the
  wire, PSH on the last (``tcp_gso_segment``).
* Held data with nothing in flight arms the probe timer; when it fires
  the head buffer leaves whatever Nagle or cork say
  (``include/net/tcp.h``, ``tcp_check_probe_timer``;
  ``net/ipv4/tcp_output.c``, ``tcp_write_wakeup``).
* An ACK that advances ``snd_una`` pushes again in the socket's mode
  (``tcp_data_snd_check``): it releases ``MSG_MORE``-held data, not
  ``TCP_CORK``-held data.

How long each segment's first byte waited between the ``send()`` that
wrote it and its transmission is summed (``hold_fs``) and its maximum
kept (``hold_max``): Butterfield (2017)'s ``SN`` (``CN`` at the client)
when the queue was empty before, plus ``SW`` behind earlier data (the
segments of a super-packet count with the wait of its first byte).

Transmit CPU (:class:`TxCosts`) is counted and charged by
:class:`models.sim.sender_cpu.SendCpu`, a base class of :class:`Sender`.
"""

from __future__ import annotations

from collections import deque
from heapq import heappush
from typing import TYPE_CHECKING, NamedTuple

from models.sim.events import Timer
from models.sim.rules.cc import NoWindow
from models.sim.rules.cork import SKB_OVERHEAD_BYTES, Autocork, Cork
from models.sim.sender_cpu import SendCpu
from models.sim.sender_view import SenderView
from models.sim.tbf import HELD

if TYPE_CHECKING:
    from models.sim.fastforward import Shift
    from models.sim.wakeups import WakerCost

__all__ = ["Sender", "TxCosts", "NAGLE", "NODELAY", "CORK", "PUSH"]

# Push modes (the kernel's ``nonagle`` argument).
NAGLE, NODELAY, CORK, PUSH = 0, 1, 2, 3


class TxCosts(NamedTuple):
    """Transmit CPU of one host, femtoseconds: per ``send()`` call, per
    buffer (GSO/TSO super-packet), per MSS-sized wire segment, and per
    byte a call writes."""

    send_fs: int = 0
    gso_fs: int = 0
    seg_fs: int = 0
    byte_fs: int = 0


_FREE = TxCosts()


class _Skb:
    """An unsent buffer: payload bytes ``[start, end)``, its first byte
    written at ``t_write`` (fs)."""

    __slots__ = ("start", "end", "psh", "t_write")

    def __init__(self, start: int, end: int, t_write: int) -> None:
        self.start = start
        self.end = end
        self.psh = False
        self.t_write = t_write


class Sender(SendCpu, SenderView):
    """Send queue, Nagle, cork, probe timer and windows of one endpoint.

    ``ep`` (the endpoint) transmits: ``ep.transmit(now, seq, end, psh)``
    per wire segment, and may have ``inbound`` (the channel into this
    host, whose soft interrupt pays released transmissions); ``nagle``,
    ``cork``, ``probe`` and ``cc`` are rule objects
    (:mod:`models.sim.rules`); ``size_goal`` is the buffer size in bytes
    (default: the MSS); ``costs`` the transmit CPU (:class:`TxCosts`).
    """

    __slots__ = (
        "ep",
        "loop",
        "clock",
        "channel",
        "mss",
        "goal",
        "mode",
        "corked",
        "nagle",
        "cork",
        "defers",
        "stock_cork",
        "probe",
        "samples",
        "cc",
        "windowed",
        "plain",
        "send_fs",
        "byte_fs",
        "gso_fs",
        "seg_fs",
        "paid",
        "write_seq",
        "snd_nxt",
        "snd_una",
        "snd_sml",
        "snd_wnd",
        "queue",
        "probe_timer",
        "data_segments",
        "buffers",
        "probes",
        "hold_fs",
        "hold_max",
        "in_send",
        "sent_in_call",
        "thread_cpu",
        "soft_cpu",
        "soft_cpu_fs",
        "waker",
        "soft_waker",
        "cpu_first",
        "clock_in_call",
    )

    def __init__(
        self,
        ep,
        mss: int,
        nodelay: bool,
        nagle,
        cork,
        probe,
        cc=None,
        size_goal: int | None = None,
        costs: TxCosts = _FREE,
    ) -> None:
        self.ep = ep
        self.loop = ep.loop
        self.clock = ep.clock
        self.channel = ep.channel  # this host's outgoing Channel
        self.mss = mss
        # tcp_xmit_size_goal: whole MSS, at least one
        self.goal = max(mss, (size_goal or mss) // mss * mss)
        self.mode = NODELAY if nodelay else NAGLE
        self.corked = False  # TCP_CORK set now
        self.nagle = nagle
        self.cork = cork
        # (Cork never defers: skip the call)
        self.defers = type(cork).defer is not Cork.defer
        self.stock_cork = type(cork) is Autocork  # its defer runs inline in write
        self.probe = probe
        self.samples = probe.samples  # (read for every segment)
        self.cc = NoWindow() if cc is None else cc
        self.cc.bind(self)
        self.windowed = self.cc.windowed
        # write's shortcut needs no window and a cork rule
        # known not to look at the queue: these exact classes
        self.plain = not self.windowed and type(cork) in (Cork, Autocork)
        self.send_fs, self.gso_fs, self.seg_fs, self.byte_fs = costs
        self.paid = bool(costs.gso_fs or costs.seg_fs)  # per buffer or segment
        self.waker: WakerCost | None = None  # what waking the sleeping peer adds (engine)
        # Host.soft_waker (engine): a segment sent outside a send() pays the waker's cost too
        self.soft_waker = False
        # Host.send_cpu_first (engine): a segment our own send() sends leaves after the CPU
        # the call has spent up to it, not at the call's start
        self.cpu_first = False
        # Host.xmit_clock_in_call (engine): with cpu_first, tcp_write_xmit's clock in a call
        # is after the call's CPU so far
        self.clock_in_call = False
        self.write_seq = 1  # next byte the application writes
        self.snd_nxt = 1  # next byte to send
        self.snd_una = 1  # oldest unacknowledged byte
        self.snd_sml = 1  # end of the last small segment sent
        self.snd_wnd = 1 << 62  # the peer's advertised window, bytes
        self.queue: deque = deque()
        self.probe_timer = Timer(self.loop, self._on_probe)
        self.data_segments = 0
        self.buffers = 0  # buffers (super-packets) sent
        self.probes = 0
        self.hold_fs = 0  # fs each segment's first byte waited,
        self.hold_max = 0  # summed, and the longest wait
        self.in_send = False
        self.sent_in_call = 0  # data segments sent inside send()
        self.thread_cpu = 0  # fs of send() CPU not yet taken by the thread
        self.soft_cpu = 0  # fs of released transmissions not yet charged
        self.soft_cpu_fs = 0  # fs charged to the soft interrupt, in all

    def socket_mode(self) -> int:
        """The socket's ``nonagle``: cork while TCP_CORK is set."""
        return CORK if self.corked else self.mode

    def write(self, now: int, nbytes: int, more: bool) -> int:
        """One ``send()`` of ``nbytes`` (``MSG_MORE`` if ``more``);
        returns the data segments it transmitted.

        With no window and a stock cork rule (``plain``), a call that
        leaves the queue's one buffer shorter than the goal takes a
        shortcut: the same steps, but into an empty queue the buffer
        leaves without being queued when ``push`` would send it whole at
        once, which it does unless the push is corked or Nagle may hold
        it (its ``tcp_nagle_test``: a partial segment, data in flight).
        ``Cork`` and ``Autocork`` do not look at the queue, so asking them
        first is the same (``Autocork.defer`` inline: ``stock_cork``)."""
        q = self.queue
        tail = q[0] if q else None  # (the call coalesces into it)
        tail_bytes = nbytes if tail is None else nbytes + tail.end - tail.start
        if (
            not self.plain
            or nbytes <= 0
            or tail_bytes >= self.goal
            or (tail is not None and (len(q) > 1 or (self.defers and not self.stock_cork)))
        ):
            return self._write_queued(now, nbytes, more)
        self.in_send = True
        self.sent_in_call = 0
        if self.send_fs or self.byte_fs:
            self.thread_cpu += self.send_fs + nbytes * self.byte_fs
        start = self.write_seq
        end = self.write_seq = start + nbytes
        mode = CORK if (more or self.corked) else self.mode
        if not self.defers:
            defer = False
        elif not self.stock_cork:
            defer = self.cork.defer(self, now, tail_bytes)  # (q is empty: nbytes)
        elif self.snd_una == self.snd_nxt or self.channel.free_at <= now:
            defer = False  # Autocork.defer, inline: nothing in flight or queued
        else:  # (the tail is shorter than the goal)
            ch = self.channel  # its tx_backlog(now):
            nic = ch.in_nic
            while nic and nic[0][0] <= now:  # completed: forget them
                ch.nic_bytes -= nic.popleft()[1]
            # sk_wmem_alloc > truesize (each skb its payload + the overhead)
            defer = bool(nic) and len(nic) * SKB_OVERHEAD_BYTES + ch.nic_bytes + 1 > (
                SKB_OVERHEAD_BYTES + tail_bytes
            )
            if defer:
                cork = self.cork
                cork.throttled = True
                if cork.event is None:  # at the first TX completion: tx_backlog's, inline
                    first = nic[0][0]  # (nic was pruned above: it completes after now)
                    if first == HELD:  # (still in the qdisc: when its watchdog fires)
                        fire = ch.qdisc.fire_at
                        cork.event = self.loop.schedule(fire, cork._tx_completion, self)
                    else:  # (after now: the loop's fast path, EventLoop)
                        loop = self.loop
                        event = cork.event = [first, next(loop.ticket), cork._tx_completion, self]
                        heappush(loop.heap, event)
        if tail is not None:  # (tcp_push: PSH unless MSG_MORE)
            tail.end = end
            if not more:
                tail.psh = True
            if not defer:
                self.push(now, mode)
        elif defer:
            tail = _Skb(start, end, now)
            tail.psh = not more
            q.append(tail)
        elif (
            mode == NODELAY
            or mode == PUSH
            or not nbytes % self.mss
            or (mode == NAGLE and self.snd_una == self.snd_nxt)
        ):
            # push: the whole buffer, then nothing left for the probe timer
            self._send(now, start, end, not more, now)
        else:
            tail = _Skb(start, end, now)
            tail.psh = not more
            q.append(tail)
            self.push(now, mode)
        self.in_send = False
        return self.sent_in_call

    def _write_queued(self, now: int, nbytes: int, more: bool) -> int:
        """``write`` through the send queue (the general path)."""
        self.in_send = True
        self.sent_in_call = 0
        if self.windowed:
            self.cc.writing(self, now)  # (tcp_sendmsg_locked's first step)
        if self.send_fs or self.byte_fs:
            self.thread_cpu += self.send_fs + nbytes * self.byte_fs
        goal = self.goal
        q = self.queue
        remaining = nbytes
        if not q and 0 < nbytes < goal:  # one new, partial buffer
            if self.windowed:
                self.cc.queued(self, now)
            seq = self.write_seq
            q.append(_Skb(seq, seq + nbytes, now))
            self.write_seq = seq + nbytes
            remaining = 0
        while remaining:
            room = 0
            if q:
                tail = q[-1]
                room = goal - tail.end + tail.start
            if room > 0:  # coalesce into the tail
                copy = remaining if remaining < room else room
                tail.end += copy
            else:  # a new buffer (tcp_skb_entail)
                if self.windowed:
                    self.cc.queued(self, now)
                copy = remaining if remaining < goal else goal
                seq = self.write_seq
                tail = _Skb(seq, seq + copy, now)
                q.append(tail)
            self.write_seq += copy
            remaining -= copy
            if (copy == room or copy == goal) and q[0] is tail:
                self.push(now, PUSH)  # full head: tcp_push_one
        if q:  # tcp_push
            tail = q[-1]
            if not more:
                tail.psh = True
            mode = CORK if (more or self.corked) else self.mode
            if not (self.defers and self.cork.defer(self, now, tail.end - tail.start)):
                self.push(now, mode)
        self.in_send = False
        return self.sent_in_call

    def set_cork(self, now: int, on: bool) -> int:
        """``setsockopt(TCP_CORK)``; clearing it pushes (with
        TCP_NODELAY: everything).  Returns the segments sent."""
        self.corked = on
        self.sent_in_call = 0
        if not on and self.queue:
            self.in_send = True
            self.push(now, PUSH if self.mode == NODELAY else self.mode)
            self.in_send = False
        return self.sent_in_call

    def flush(self, now: int) -> None:
        """Send everything unsent (TCP_NODELAY toggled on and off)."""
        if self.queue:
            self.push(now, PUSH)
            self.charge_soft(now)

    def push_pending(self, now: int) -> None:
        """Push in the socket's mode (an ACK, a TX completion)."""
        if self.queue:
            self.push(now, CORK if self.corked else self.mode)

    def push(self, now: int, mode: int) -> None:
        """``tcp_write_xmit``: send what Nagle, cork and the windows allow."""
        q = self.queue
        mss = self.mss
        windowed = self.windowed
        sent = limited = False
        # tcp_write_xmit reads the clock once (tcp_mstamp_refresh); with clock_in_call, inside
        # a send() whose CPU comes first, after the call's CPU so far (the copy)
        clock = now + self.thread_cpu if self.in_send and self.clock_in_call else now
        while q:
            if windowed and self.cc.paced(self, clock):  # tcp_pacing_check
                limited = self.cc.cwnd_full()
                break
            skb = q[0]
            n = skb.end - skb.start
            if mode != PUSH and len(q) == 1 and n % mss:  # tcp_nagle_test
                if mode == CORK or (
                    mode == NAGLE and self.snd_una != self.snd_nxt and self.nagle.holds(self)
                ):
                    if n < mss:
                        break
                    n -= n % mss  # tcp_mss_split_point: the full part
            if windowed:
                allowed = self.cc.limit(self, now, skb.start, n)
                if not allowed:
                    limited = self.cc.cwnd_full()
                    break
                sent = True
                n = allowed
            if n == skb.end - skb.start:
                q.popleft()
                self._send(now, skb.start, skb.end, skb.psh, skb.t_write, clock)
            else:  # tso_fragment: the head part leaves
                start = skb.start
                skb.start = start + n
                self._send(now, start, start + n, False, skb.t_write, clock)
        if windowed and (sent or limited):
            self.cc.pushed(self, limited)
        if (
            q and self.snd_una == self.snd_nxt and self.probe_timer.entry is None
        ):  # tcp_check_probe_timer
            self.probe_timer.arm_ticks(now, self.probe.ticks(), self.clock)

    def _send(
        self, now: int, start: int, end: int, psh: bool, t_write: int, clock: int | None = None
    ) -> None:
        """One buffer leaves: ``now`` the event's time, ``clock`` the congestion control's
        (``tcp_clock_cache``; ``now`` unless given)."""
        mss = self.mss
        n = end - start
        self.snd_nxt = end
        if n <= mss:
            nsegs = 1
            if n < mss:  # tcp_minshall_update
                self.snd_sml = end
        else:
            nsegs = -(-n // mss)
            if n < nsegs * mss:
                self.snd_sml = end
        timer = self.probe_timer
        if timer.entry is not None:
            timer.cancel()  # the RTO timer takes over
        self.data_segments += nsegs
        self.buffers += 1
        held = now - t_write
        if held:
            self.hold_fs += held * nsegs
            if held > self.hold_max:
                self.hold_max = held
        if self.samples:
            self.probe.sent(end, now)
        at = now  # when the segment is handed to the link
        if self.in_send:
            self.sent_in_call += nsegs
            if self.paid:
                self.thread_cpu += self.gso_fs + nsegs * self.seg_fs
            if self.cpu_first:  # after the call's CPU so far, this segment's own included
                at = now + self.thread_cpu
            if self.waker is not None:  # the segment wakes the sleeping peer: our call pays
                self.thread_cpu += self.waker.charge(at)
        else:
            if self.paid:
                self.soft_cpu += self.gso_fs + nsegs * self.seg_fs
            if self.soft_waker and self.waker is not None:  # (a timer's or an ACK's release)
                self.soft_cpu += self.waker.charge(at)
        if self.windowed:
            self.cc.sent(self, now if clock is None else clock, start, end, nsegs)
        if nsegs == 1:
            self.ep.transmit(at, start, end, psh)
        else:  # GSO/TSO: MSS-sized segments, PSH on the last
            self.ep.transmit_gso(at, start, end, psh, mss)

    def on_ack(self, now: int, ack: int) -> bool:
        """A cumulative ACK arrived; whether it advanced ``snd_una``."""
        if ack <= self.snd_una:
            return False
        if ack > self.snd_nxt:
            raise AssertionError(f"peer acknowledged {ack} beyond snd_nxt {self.snd_nxt}")
        self.snd_una = ack
        if self.samples:
            self.probe.acked(ack, now)
        if self.windowed:
            self.cc.acked(now, ack)
        return True

    def _on_probe(self, now: int, _arg: object) -> None:
        """``tcp_write_wakeup``: send the head buffer (at most one MSS)."""
        self.clock.fired()
        q = self.queue
        if q:
            skb = q[0]
            self.probes += 1
            if skb.end - skb.start > self.mss:
                start = skb.start
                skb.start = start + self.mss
                self._send(now, start, start + self.mss, True, skb.t_write)
            else:
                q.popleft()
                self._send(now, skb.start, skb.end, True, skb.t_write)
            self.charge_soft(now)

    # -- the fast-forward's view: the shift (the rest: SenderView) ------------

    cycle_state = SenderView.cycle_state  # (a class's own, as the fast-forward asks)

    def cycle_shift(self, shift: Shift) -> None:
        shift.grow(self)
        d, dt = shift.seq(), shift.dt
        self.write_seq += d
        self.snd_nxt += d
        self.snd_una += d
        self.snd_sml += d
        for k in self.queue:
            k.start += d
            k.end += d
            k.t_write += dt

"""One direction of the path: transmit path, cable, receive path.

A frame handed to a ``Channel`` goes through three FIFO steps,
each computed in closed form when it is sent (frames of one direction
are sent in time order), so a frame costs one event, its delivery:

1. **Transmit path** (NIC).  A frame reaching an idle path waits the
   sender's transmit start latency (``CT`` or ``ST``); one reaching a
   busy path queues behind the frames there.  A frame handed over at the
   very instant the previous one completes (data released by that TX
   completion) continues the series and pays no new start latency.  It
   occupies the wire for ``(payload + 90) * 8 / rate`` seconds
   (:data:`models.framing.FRAME_OVERHEAD_BYTES`); its TX completion (when
   the kernel frees it, which releases autocorked data) is the end.
2. **Cable**: the propagation delay.
3. **Receive path**.  The receiving host's receive rule
   (:class:`~models.sim.rules.rx.PerWakeup`) says when its capture point sees the
   frame: by default a frame reaching an idle receive path waits the
   receiver's start latency (``SR`` or ``CR``: interrupt, scheduling) and
   frames arriving while that wake-up is under way ride along with it;
   with interrupt moderation an interrupt comes at most once per holdoff
   and a running NAPI poll takes later frames as they arrive.  There the
   host's tcpdump sees it.  The receive soft interrupt then spends
   ``softirq`` on a data segment (``ack_softirq`` on a pure ACK), in
   order, before TCP processes it; with GRO, back-to-back data segments
   that one poll takes are merged first (``tcp_gro_receive``).  When both
   hosts are one machine (``cpu``: the sending host's CPUs, a
   :class:`~models.sim.cpu.CpuPool`), that soft-interrupt work takes a
   turn on them, beside the sender's thread, as the frame is sent, not on
   a CPU of its own: loopback and veth hand a frame to ``netif_rx``,
   whose backlog the sending CPU processes when the transmit path ends
   (RPS off); the segment is delivered, in order, at the later of that
   work's end and its arrival.

**Token bucket instead of a wire** (``bucket_bytes``), as Linux's
``tbf`` qdisc on a veth pair: a part of its own
(:class:`models.sim.tbf.Tbf`, the channel's ``qdisc``), with, if asked,
a watchdog that fires late (``watchdog``, :mod:`models.sim.rules.qdisc`)
and the frames that wait in the qdisc for it.

Times are integer femtoseconds; the rate is a whole number of bits per
second.  Token credit is kept in bit-femtoseconds (a bit is ``FS``
units, and ``rate`` units accrue per femtosecond), so it is exact too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from heapq import heappush
from typing import TYPE_CHECKING, Any

from models import framing
from models.sim.events import FS
from models.sim.link_gso import GRO_MAX_BYTES, SuperPackets
from models.sim.link_view import ChannelView
from models.sim.rules.rx import PerWakeup
from models.sim.segment import Segment
from models.sim.tbf import HELD, Tbf

if TYPE_CHECKING:
    from models.sim.fastforward import Shift

__all__ = ["Channel"]  # (Segment: models.sim.segment)


def _unwired(now: int, seg: Segment) -> None:
    raise RuntimeError("a Channel delivered a segment before its `out` was wired to an endpoint")


_C2S, _S2C = "C > S", "S > C"
_FRAME_BYTES = framing.FRAME_OVERHEAD_BYTES  # bytes a frame adds on the wire


class Channel(SuperPackets, ChannelView):
    """Transmit path + cable + receive path of one direction.

    The attribute ``out`` is the receiving endpoint's
    ``receive(now, segment)``.

    Parameters
    ----------
    loop : EventLoop
    rate_bps : int
        Bits per second.
    tx_latency, rx_latency : int
        Start latencies of the transmit and receive paths, fs.
    propagation : int
        One-way propagation delay, fs.
    softirq : int
        Receiver soft-interrupt CPU per data segment, fs.
    bucket_bytes : int or None
        Token-bucket depth, bytes (``None``: a serializing wire).
    ack_softirq : int, optional
        Receiver soft-interrupt CPU per pure ACK, fs (default:
        ``softirq``).
    rx : object, optional
        The receive rule (module ``rules.rx``; default
        :class:`~models.sim.rules.rx.PerWakeup` with ``rx_latency``).
    gro : bool
        Merge back-to-back data segments taken by one poll (GRO).
    cpu : CpuPool, optional
        The sending host's CPUs when both hosts are one machine
        (``Link.shared_cpus``, ``Link.softirq_on_sender``): the soft
        interrupt's work takes its turn on them (default: a CPU of its
        own).
    watchdog : WatchdogWake, optional
        (:mod:`models.sim.rules.qdisc`)
        With a bucket: a frame that finds too few tokens waits in the
        qdisc until the next frame handed over runs it, or until its
        watchdog timer wakes the sender's CPU, late by that CPU's wake-up
        (default: it leaves at once when the tokens are there).
    """

    __slots__ = (
        "loop",
        "rate",
        "tx_latency",
        "rx_latency",
        "prop",
        "softirq",
        "ack_softirq",
        "rx",
        "per_wakeup",
        "deliver",
        "gro",
        "out",
        "sender",
        "free_at",
        "softirq_free",
        "cpu",
        "busy",
        "softirq_busy",
        "frames",
        "data_frames",
        "payload_bytes",
        "in_nic",
        "nic_bytes",
        "freed_on_handover",
        "batch",
        "batch_time",
        "batch_event",
        "gro_open",
        "gro_size",
        "gro_merged",
        "qdisc",
        "_wire_fs",
    )

    def __init__(
        self,
        loop,
        rate_bps: int,
        tx_latency: int,
        rx_latency: int,
        propagation: int,
        softirq: int,
        bucket_bytes=None,
        ack_softirq=None,
        rx=None,
        gro: bool = False,
        cpu=None,
        watchdog=None,
    ) -> None:
        self.loop = loop
        self.cpu = cpu
        self.rate = rate_bps
        self.tx_latency = tx_latency
        self.rx_latency = rx_latency
        self.prop = propagation
        self.softirq = softirq
        self.ack_softirq = softirq if ack_softirq is None else ack_softirq
        self.rx = PerWakeup(rx_latency) if rx is None else rx
        self.per_wakeup = type(self.rx) is PerWakeup  # seen() inline
        self.deliver = self._deliver  # the bound method, made once
        self.gro = gro
        self.out: Callable[[int, Segment], None] = _unwired  # the receiver, set by the engine
        self.sender: Any = None  # the sending half, told of held frames' TX completions
        self.free_at = -1  # fs: transmit path done (-1: unused)
        self.softirq_free = 0  # fs: receiver soft interrupt free
        self.busy = 0  # fs of wire occupancy
        self.softirq_busy = 0  # fs of receiver soft-interrupt CPU
        self.frames = 0
        self.data_frames = 0
        self.payload_bytes = 0
        self.in_nic: deque = deque()  # (tx completion, payload) of data
        # Link.freed_on_handover: a frame is not held past its hand-over (unless a qdisc holds it)
        self.freed_on_handover = False
        self.nic_bytes = 0  # payload bytes in in_nic
        self.batch: list[Segment] | None = None  # segments of one delivery event
        self.batch_time = -1
        self.batch_event: Any = None  # its event entry
        self.gro_open = False  # the batch's last segment may grow
        self.gro_size = 0  # its first segment's length
        self.gro_merged = 0  # segments merged into another
        # a token bucket (tbf) instead of a wire, or None
        self.qdisc = None if bucket_bytes is None else Tbf(self, rate_bps, bucket_bytes, watchdog)
        self._wire_fs: dict = {}

    def wire_fs(self, nbytes: int) -> int:
        """Femtoseconds ``nbytes`` take at the rate, rounded."""
        fs = self._wire_fs.get(nbytes)
        if fs is None:
            # bytes -> bits (x8) -> fs at rate bits/s, rounded to nearest
            fs = (nbytes * 8 * FS + self.rate // 2) // self.rate
            self._wire_fs[nbytes] = fs
        return fs

    def send(self, now: int, seg: Segment) -> int:
        """Hand ``seg`` over at ``now``; schedule its delivery; return
        its TX completion time.  With no qdisc, ``_handed`` inline, and
        with no GRO or shared CPU and the stock receive rule, ``_leave``
        inline too."""
        if self.qdisc is not None:
            return self._send(now, seg)
        length = seg.end - seg.seq
        start = self.free_at
        if start < now:  # idle: pay the start latency
            start = now + self.tx_latency
        # (else busy: queue behind)
        nbytes = length + _FRAME_BYTES
        wire = self._wire_fs.get(nbytes) or self.wire_fs(nbytes)
        done = start + wire
        seg.t_tx = now  # _handed
        self.frames += 1
        if length:
            self.data_frames += 1
            self.payload_bytes += length
            if not self.freed_on_handover:
                q = self.in_nic
                while q and q[0][0] <= now:  # completed: forget them
                    self.nic_bytes -= q.popleft()[1]
                q.append([done, length])
                self.nic_bytes += length
            cost = self.softirq
        else:
            cost = self.ack_softirq
        if self.cpu is not None or self.gro or not self.per_wakeup:
            return self._leave(now, done, wire, seg, length)
        self.free_at = done  # _leave
        self.busy += wire
        arrive = done + self.prop
        rx = self.rx  # PerWakeup.seen, inline
        seen = rx.wake_end
        if arrive >= seen:
            seen = rx.wake_end = arrive + rx.latency
        seg.t_rx = seen
        if cost:
            free = self.softirq_free
            ready = self.softirq_free = (seen if seen > free else free) + cost
            self.softirq_busy += cost
        else:
            ready = seen
        batch = self.batch
        if batch is not None and ready == self.batch_time:
            batch.append(seg)  # one event delivers both (gro_open stays False)
            return done
        batch = self.batch = [seg]
        self.batch_time = ready
        loop = self.loop  # (ready >= now: the loop's fast path, EventLoop)
        event = self.batch_event = [ready, next(loop.ticket), self.deliver, batch]
        heappush(loop.heap, event)
        return done

    def _send(self, now: int, seg: Segment) -> int:
        """:meth:`send`'s general path (the only one with a qdisc)."""
        length = seg.end - seg.seq
        qd = self.qdisc
        if qd is not None and qd.held:  # frames wait for tokens: join them
            self._hold(now, now + self.tx_latency, seg, length)
            qd.dequeue(now)  # and the qdisc runs
            return self.free_at
        start = self.free_at
        if start < now:  # idle: pay the start latency
            start = now + self.tx_latency
        # (else busy: queue behind)
        if qd is None:
            nbytes = length + _FRAME_BYTES
            wire = self._wire_fs.get(nbytes) or self.wire_fs(nbytes)
            done = start + wire
        elif qd.watchdog is None:  # leave when the bucket holds it
            done = start = qd.leave_at(start, length)
            wire = self.wire_fs(length + framing.BUCKET_OVERHEAD_BYTES)
        else:  # leave now if the bucket holds it, else wait in the qdisc
            if not qd.take(start, length):
                self._hold(now, start, seg, length)
                qd.dequeue(now)  # arms the watchdog
                return self.free_at
            done = start
            wire = self.wire_fs(length + framing.BUCKET_OVERHEAD_BYTES)
        self._handed(now, seg, length, done)
        return self._leave(now, done, wire, seg, length)

    def _handed(self, now: int, seg: Segment, length: int, done: int) -> list | None:
        """Count ``seg`` as handed over at ``now``; a data frame's bytes
        stay in the transmit path until ``done`` (``HELD``: until it
        leaves the qdisc).  Returns its entry there (``None``: an ACK)."""
        seg.t_tx = now
        self.frames += 1
        if not length:
            return None
        self.data_frames += 1
        self.payload_bytes += length
        if self.freed_on_handover and done != HELD:  # freed as the link takes it
            return None
        q = self.in_nic
        while q and q[0][0] <= now:  # completed: forget them
            self.nic_bytes -= q.popleft()[1]
        entry = [done, length]
        q.append(entry)
        self.nic_bytes += length
        return entry

    def _hold(self, now: int, start: int, seg: Segment, length: int) -> None:
        """``seg`` waits in the qdisc from ``start``."""
        assert self.qdisc is not None  # (only with a bucket)
        self.qdisc.hold(start, seg, self._handed(now, seg, length, HELD))

    def depart(self, now: int, seg: Segment, length: int, entry: list | None) -> None:
        """A frame that waited in the qdisc leaves at ``now``: its
        delivery, and its TX completion (``tcp_wfree``), which the
        sender's cork rule may wait for."""
        nbytes = length + framing.BUCKET_OVERHEAD_BYTES
        wire = self._wire_fs.get(nbytes) or self.wire_fs(nbytes)
        self._leave(now, now, wire, seg, length)
        if entry is not None:
            entry[0] = now
            snd = self.sender
            done = snd and getattr(snd.cork, "completed", None)
            if done:
                done(snd, now)

    def _leave(self, now: int, done: int, wire: int, seg: Segment, length: int) -> int:
        """``seg`` (counted by :meth:`_handed`) leaves the transmit path
        at ``done``, decided at ``now``: schedule its delivery."""
        self.free_at = done
        self.busy += wire
        if length:
            cost = self.softirq
        else:
            cost = self.ack_softirq
        arrive = done + self.prop
        rx = self.rx
        if self.per_wakeup:  # PerWakeup.seen, inline
            seen = rx.wake_end
            if arrive >= seen:
                seen = rx.wake_end = arrive + rx.latency
        else:
            seen = rx.seen(arrive, self.softirq_free)
        seg.t_rx = seen
        if cost:
            snd = self.sender
            in_call = seg.cpu is None and snd is not None and snd.in_send
            ready = self._softirq_ready(now, seen, cost, seg.cpu or self.cpu, in_call)
        else:
            ready = seen
        batch = self.batch
        if batch is not None:
            if self.gro_open and self._gro_merge(batch, seg, seen):  # (open: with GRO only)
                if ready != self.batch_time:  # the aggregate leaves later
                    self.loop.cancel(self.batch_event)
                    self.batch_time = ready
                    self.batch_event = self.loop.schedule(ready, self._deliver, batch)
                return done
            if ready == self.batch_time:
                batch.append(seg)  # one event delivers both
                self.gro_open = False
                return done
        batch = self.batch = [seg]
        self.batch_time = ready
        # (ready >= now: the loop's fast path, EventLoop)
        loop = self.loop
        event = self.batch_event = [ready, next(loop.ticket), self.deliver, batch]
        heappush(loop.heap, event)
        if self.gro:
            self.gro_open = length > 0 and not seg.psh
            self.gro_size = length
        return done

    def _softirq_ready(self, now: int, seen: int, cost: int, cpu: Any, in_call: bool) -> int:
        """When the receive soft interrupt has spent ``cost`` fs on a frame its receiver sees at
        ``seen``, after the frames before it; on ``cpu`` (one machine: it runs as the frame is
        sent, ``netif_rx``, inside the sender's call and paid by it when ``in_call`` and the call
        takes it, ``pays_in_call``), or on a CPU of its own (``None``)."""
        free = self.softirq_free
        if cpu is None:
            ready = (seen if seen > free else free) + cost
        else:
            if in_call and self.sender.pays_in_call(cost):
                ready = now + cost
            else:
                ready = cpu.run(now, cost)
            if ready < seen:
                ready = seen
            if ready < free:
                ready = free
        self.softirq_free = ready
        self.softirq_busy += cost
        return ready

    def _gro_merge(self, batch: list[Segment], seg: Segment, seen: int) -> bool:
        """GRO (``tcp_gro_receive``): merge ``seg`` into the batch's last
        segment if the same poll takes both (``seen`` before that batch's
        delivery), the aggregate is still open (no PSH yet, every segment
        so far as long as the first), ``seg`` continues it with the same
        ACK and window and no longer than the first, and it stays within 64 KiB."""
        last = batch[-1]
        n = seg.end - seg.seq
        if (
            not self.gro_open
            or not n
            or seen > self.batch_time
            or seg.seq != last.end
            or seg.ack != last.ack
            or seg.wnd != last.wnd
            or n > self.gro_size
            or last.end - last.seq + n > GRO_MAX_BYTES
        ):
            return False
        last.end = seg.end
        last.psh = seg.psh
        self.gro_merged += 1
        self.gro_open = not seg.psh and n == self.gro_size
        return True

    def _deliver(self, now: int, batch: list) -> None:
        if batch is self.batch:
            self.batch = None
            self.batch_time = -1
            self.batch_event = None
            self.gro_open = False
        out = self.out
        for seg in batch:
            out(now, seg)

    def charge(self, now: int, cost: int, cpu: Any = None) -> None:
        """The receiving host's soft interrupt spends ``cost`` fs more,
        after the work queued on it (a push it released: the sending
        half's CPU, :meth:`Sender.charge_soft
        <models.sim.sender_cpu.SendCpu.charge_soft>`), on ``cpu`` if given (the
        CPU that runs it, when not the channel's: see ``Segment.cpu``).
        Deliveries already scheduled keep their times; later frames wait
        for it."""
        free = self.softirq_free
        cpu = cpu or self.cpu
        if cpu is None:
            self.softirq_free = (free if free > now else now) + cost
        else:  # one machine: on its CPUs now, later frames still in order
            end = cpu.run(now, cost)
            self.softirq_free = end if end > free else free
        self.softirq_busy += cost

    def tx_backlog(self, now: int) -> tuple:
        """Data frames still in the transmit path at ``now``: (count,
        payload bytes, first TX completion time)."""
        q = self.in_nic
        while q and q[0][0] <= now:
            self.nic_bytes -= q.popleft()[1]
        if not q:
            return 0, 0, 0
        first = q[0][0]
        if first == HELD:  # still in the qdisc: when its watchdog fires
            assert self.qdisc is not None  # (only a qdisc holds frames)
            first = self.qdisc.fire_at
        return len(q), self.nic_bytes, first

    def busy_until(self) -> int:
        """When the transmit path finishes what it holds, fs."""
        return self.free_at

    def utilization(self, end: int) -> float:
        """Share of ``[0, end]`` the wire was busy (wire time committed
        to frames still serializing after ``end`` does not count)."""
        if end <= 0:
            return float("nan")
        busy = self.busy - max(0, self.free_at - end)
        return min(1.0, max(0.0, busy / end))

    # -- the fast-forward's view: the shift (the rest: ChannelView) -----------

    cycle_state = ChannelView.cycle_state  # (a class's own, as the fast-forward asks)

    def cycle_shift(self, shift: Shift) -> None:
        shift.grow(self)
        dt = shift.dt
        self.free_at += dt
        self.softirq_free += dt
        if self.batch is not None:
            self.batch_time += dt
        for e in self.in_nic:  # in place: a held frame refers to its entry
            if e[0] != HELD:
                e[0] += dt

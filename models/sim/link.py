"""One direction of the path: transmit path, cable, receive path.

A frame handed to a :class:`Channel` goes through three FIFO steps,
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
3. **Receive path**.  A frame reaching an idle receive path waits the
   receiver's start latency (``SR`` or ``CR``: interrupt, scheduling);
   frames arriving while that wake-up is under way ride along with it.
   There the host's tcpdump sees it.  The receive soft interrupt then
   spends ``softirq`` on it (FIFO) before TCP processes it.

**Token bucket instead of a wire** (``bucket_bytes``), as Linux's
``tbf`` qdisc on a veth pair (``net/sched/sch_tbf.c``): tokens accrue at
the rate up to the bucket's depth; a frame leaves, with no
serialization, once the bucket holds its length (``payload + 66``:
TCP/IP and Ethernet headers, ``qdisc_pkt_len``), in order.

Times are integer femtoseconds; the rate is a whole number of bits per
second.  Token credit is kept in bit-femtoseconds (a bit is ``FS``
units, and ``rate`` units accrue per femtosecond), so it is exact too.
"""

from __future__ import annotations

from collections import deque

from models import framing
from models.sim.events import FS

__all__ = ["Channel", "Segment"]

_C2S, _S2C = "C > S", "S > C"


class Segment:
    """A TCP segment: payload ``[seq, end)`` (``end == seq``: pure ACK)."""

    __slots__ = ("src", "seq", "end", "ack", "psh", "t_tx", "t_rx")

    def __init__(self, src: int, seq: int, end: int, ack: int,
                 psh: bool) -> None:
        self.src = src      # 0 = client, 1 = server
        self.seq = seq      # first payload byte (relative, from 1)
        self.end = end      # one past the last payload byte
        self.ack = ack      # cumulative ACK: next byte expected from peer
        self.psh = psh      # PSH flag
        self.t_tx = 0       # fs: handed to the NIC (tcpdump, sender)
        self.t_rx = 0       # fs: at the receiver's capture point

    @property
    def length(self) -> int:
        """Payload bytes."""
        return self.end - self.seq


class Channel:
    """Transmit path + cable + receive path of one direction.

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
        Receiver soft-interrupt CPU per segment, fs.
    bucket_bytes : int or None
        Token-bucket depth, bytes (``None``: a serializing wire).

    ``out`` is the receiving endpoint's ``receive(now, segment)``.
    """

    __slots__ = ("loop", "rate", "tx_latency", "rx_latency", "prop",
                 "softirq", "out", "free_at", "rx_wake_end",
                 "softirq_free", "busy", "softirq_busy", "frames",
                 "data_frames", "payload_bytes", "in_nic", "nic_bytes",
                 "batch", "batch_time", "bucket", "tokens", "tokens_at",
                 "_wire_fs")

    def __init__(self, loop, rate_bps: int, tx_latency: int,
                 rx_latency: int, propagation: int, softirq: int,
                 bucket_bytes=None) -> None:
        self.loop = loop
        self.rate = rate_bps
        self.tx_latency = tx_latency
        self.rx_latency = rx_latency
        self.prop = propagation
        self.softirq = softirq
        self.out = None
        self.free_at = -1           # fs: transmit path done (-1: unused)
        self.rx_wake_end = -1       # fs: end of the current rx wake-up
        self.softirq_free = 0       # fs: receiver soft interrupt free
        self.busy = 0               # fs of wire occupancy
        self.softirq_busy = 0       # fs of receiver soft-interrupt CPU
        self.frames = 0
        self.data_frames = 0
        self.payload_bytes = 0
        self.in_nic: deque = deque()  # (tx completion, payload) of data
        self.nic_bytes = 0          # payload bytes in in_nic
        self.batch = None           # segments of one delivery event
        self.batch_time = -1
        self.bucket = None if bucket_bytes is None else (
            bucket_bytes * 8 * FS)  # bytes -> bit-femtoseconds
        self.tokens = self.bucket or 0   # the bucket starts full
        self.tokens_at = 0
        self._wire_fs: dict = {}

    def wire_fs(self, nbytes: int) -> int:
        """Picoseconds ``nbytes`` take at the rate, rounded."""
        fs = self._wire_fs.get(nbytes)
        if fs is None:
            # bytes -> bits (x8) -> fs at rate bits/s, rounded to nearest
            fs = (nbytes * 8 * FS + self.rate // 2) // self.rate
            self._wire_fs[nbytes] = fs
        return fs

    def send(self, now: int, seg: Segment) -> int:
        """Hand ``seg`` over at ``now``; schedule its delivery; return
        its TX completion time."""
        length = seg.end - seg.seq
        if self.free_at < now:          # idle: pay the start latency
            start = now + self.tx_latency
        else:                           # busy: queue behind
            start = self.free_at
        if self.bucket is None:
            nbytes = length + framing.FRAME_OVERHEAD_BYTES
            wire = self._wire_fs.get(nbytes) or self.wire_fs(nbytes)
            done = start + wire
        else:                           # leave when the bucket holds it
            size = (length + framing.BUCKET_OVERHEAD_BYTES) * 8 * FS
            tokens = self.tokens + (start - self.tokens_at) * self.rate
            if tokens > self.bucket:
                tokens = self.bucket
            if tokens < size:           # wait for the missing credit
                start += -(-(size - tokens) // self.rate)
                tokens = size
            self.tokens = tokens - size
            self.tokens_at = start
            wire = self.wire_fs(length + framing.BUCKET_OVERHEAD_BYTES)
            done = start
        self.free_at = done
        self.busy += wire
        self.frames += 1
        if length:
            self.data_frames += 1
            self.payload_bytes += length
            q = self.in_nic
            while q and q[0][0] <= now:         # completed: forget them
                self.nic_bytes -= q.popleft()[1]
            q.append((done, length))
            self.nic_bytes += length
        arrive = done + self.prop
        if arrive < self.rx_wake_end:   # ride along with the wake-up
            seen = self.rx_wake_end
        else:                           # idle: pay the start latency
            seen = arrive + self.rx_latency
            self.rx_wake_end = seen
        seg.t_tx = now
        seg.t_rx = seen
        if self.softirq:
            begin = seen if seen > self.softirq_free else self.softirq_free
            ready = begin + self.softirq
            self.softirq_free = ready
            self.softirq_busy += self.softirq
        else:
            ready = seen
        if ready == self.batch_time and self.batch is not None:
            self.batch.append(seg)      # one event delivers both
        else:
            self.batch = [seg]
            self.batch_time = ready
            self.loop.schedule(ready, self._deliver, self.batch)
        return done

    def _deliver(self, now: int, batch: list) -> None:
        if batch is self.batch:
            self.batch = None
            self.batch_time = -1
        out = self.out
        for seg in batch:
            out(now, seg)

    def tx_backlog(self, now: int) -> tuple:
        """Data frames still in the transmit path at ``now``: (count,
        payload bytes, first TX completion time)."""
        q = self.in_nic
        while q and q[0][0] <= now:
            self.nic_bytes -= q.popleft()[1]
        if not q:
            return 0, 0, 0
        return len(q), self.nic_bytes, q[0][0]

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

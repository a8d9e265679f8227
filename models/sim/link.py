"""One direction of the wire: the sender's transmit path, the cable, and the receiver's receive path.

A frame handed to the link goes through three FIFO steps, each computed in closed form when the frame is
sent (frames of one direction are sent in time order, so no event is needed until delivery):

1. **Transmit path** (NIC).  A frame reaching an idle path waits the sender's transmit start latency
   (``CT`` or ``ST``); one reaching a busy path queues behind the frames already there.  A frame handed
   over at the very instant the previous one completes (data released by that TX completion) continues
   the series and pays no new start latency.  It then occupies
   the wire for ``(payload + 52 + 38) * 8 / bandwidth`` seconds (:data:`models.analytic.FRAME_OVERHEAD_BYTES`).
   Its *TX completion* (when the kernel frees it, which releases autocorked data) is the end of that time.
2. **Cable**: the propagation delay.
3. **Receive path**.  A frame reaching an idle receive path waits the receiver's start latency (``SR`` or
   ``CR``, interrupt and scheduling); frames arriving while that wake-up is under way are delivered with
   the first one (one interrupt, one poll).  There the host's tcpdump would see it.  Then the receive soft
   interrupt spends ``si`` seconds on it (FIFO) before TCP processes it.

The link keeps the times its own transmit path is busy, for the utilization figure.

**Rate limiter instead of a wire.**  With ``bucket_bytes`` the transmit path is a token bucket, as the
Linux ``tbf`` qdisc on a veth pair (``net/sched/sch_tbf.c``): tokens accrue at ``bandwidth`` up to
``bucket_bytes``; a frame leaves, with no serialization time, as soon as the bucket holds its length
(``payload + 52 + 14`` bytes: TCP/IP headers and the Ethernet header, ``qdisc_pkt_len``), frames leaving
in order.  A burst of frames that fits in the bucket passes at once; a sustained stream is held to the
rate.  The frame's TX completion is its departure.
"""

from __future__ import annotations

from collections import deque
from heapq import heappush

from models.analytic import FRAME_OVERHEAD_BYTES, TCPIP_BYTES

__all__ = ["Link", "Segment", "BUCKET_OVERHEAD_BYTES"]

#: Bytes a token bucket charges for a frame beyond its payload: TCP/IP headers with timestamps (52) and the
#: Ethernet header (14), the length ``tbf`` sees (``qdisc_pkt_len``).
BUCKET_OVERHEAD_BYTES = TCPIP_BYTES + 14


class Segment:
    """One TCP segment on the wire: ``[seq, end)`` payload bytes (``end == seq`` for a pure ACK)."""

    __slots__ = ("src", "seq", "end", "ack", "psh", "t_tx", "t_rx")

    def __init__(self, src: int, seq: int, end: int, ack: int, psh: bool) -> None:
        self.src = src      # 0 = client, 1 = server
        self.seq = seq      # first payload byte (relative sequence number, starting at 1)
        self.end = end      # one past the last payload byte
        self.ack = ack      # cumulative ACK: next byte the sender expects from its peer
        self.psh = psh      # PSH flag
        self.t_tx = 0.0     # seconds: when the sender's TCP handed it to the NIC (tcpdump on the sender)
        self.t_rx = 0.0     # seconds: when it reached the receiver's capture point (tcpdump on the receiver)

    @property
    def length(self) -> int:
        """Payload bytes."""
        return self.end - self.seq


class Link:
    """Transmit path + cable + receive path for one direction.

    Parameters
    ----------
    loop : EventLoop
        Schedules the delivery of each frame.
    bandwidth_bps : float
        Bits per second.
    tx_latency_s, rx_latency_s : float
        Start latencies of the sender's transmit path and of the receiver's receive path, seconds.
    propagation_s : float
        One-way propagation delay, seconds.
    softirq_s : float
        Receiver soft-interrupt CPU time per segment, seconds.
    deliver : callable
        ``deliver(time, segment)``: the receiving TCP endpoint's input routine.
    bucket_bytes : int or None
        Token-bucket depth in bytes (a ``tbf`` rate limiter, see the module docstring); ``None`` for a wire
        that serializes every frame at ``bandwidth_bps``.
    """

    __slots__ = ("loop", "sec_per_byte", "tx_latency", "rx_latency", "prop", "softirq", "deliver",
                 "free_at", "rx_wake_end", "softirq_free", "busy_time", "softirq_busy", "frames",
                 "data_frames", "payload_bytes", "in_nic", "nic_total", "batch", "batch_time",
                 "bucket", "tokens", "tokens_at")

    def __init__(self, loop, bandwidth_bps: float, tx_latency_s: float, rx_latency_s: float,
                 propagation_s: float, softirq_s: float, deliver, bucket_bytes=None) -> None:
        self.loop = loop
        self.sec_per_byte = 8.0 / bandwidth_bps  # bytes -> bits (x8), bits / (bits per second) = seconds
        self.tx_latency = tx_latency_s
        self.rx_latency = rx_latency_s
        self.prop = propagation_s
        self.softirq = softirq_s
        self.deliver = deliver
        self.free_at = -1.0         # when the transmit path finishes everything queued so far (-1: never used)
        self.rx_wake_end = -1.0     # end of the receive path's current wake-up
        self.softirq_free = 0.0     # when the receiver's soft interrupt is free
        self.busy_time = 0.0        # seconds of wire occupancy (serialization)
        self.softirq_busy = 0.0     # seconds of receiver soft-interrupt CPU
        self.frames = 0
        self.data_frames = 0
        self.payload_bytes = 0
        self.in_nic: deque = deque()  # (tx completion time, payload bytes) of data frames not yet completed
        self.nic_total = 0          # payload bytes in in_nic
        self.batch = None           # segments queued for one delivery event (same delivery time)
        self.batch_time = -1.0
        self.bucket = bucket_bytes  # token-bucket depth in bytes (None: a serializing wire)
        self.tokens = float(bucket_bytes or 0)  # bytes in the bucket at time tokens_at (it starts full)
        self.tokens_at = 0.0

    def send(self, now: float, seg: Segment) -> float:
        """Hand ``seg`` to the transmit path at ``now``; schedule its delivery; return its TX completion."""
        length = seg.end - seg.seq
        if self.free_at < now:                      # idle transmit path: pay the start latency
            start = now + self.tx_latency
        else:                                       # busy: queue behind the frames already there
            start = self.free_at
        if self.bucket is None:
            wire = (length + FRAME_OVERHEAD_BYTES) * self.sec_per_byte
            done = start + wire
        else:                                       # token bucket: leave once the bucket holds the frame
            size = length + BUCKET_OVERHEAD_BYTES
            tokens = self.tokens + (start - self.tokens_at) / self.sec_per_byte   # seconds -> bytes at the rate
            if tokens > self.bucket:
                tokens = self.bucket
            if tokens < size:
                start += (size - tokens) * self.sec_per_byte                      # wait for the missing bytes
                tokens = size
            self.tokens = tokens - size
            self.tokens_at = start
            wire = size * self.sec_per_byte         # the share of the rate this frame uses
            done = start
        self.free_at = done
        self.busy_time += wire
        self.frames += 1
        if length:
            self.data_frames += 1
            self.payload_bytes += length
            self.in_nic.append((done, length))
            self.nic_total += length
        arrive = done + self.prop
        if arrive < self.rx_wake_end:               # a wake-up is under way: ride along with it
            seen = self.rx_wake_end
        else:                                       # idle receive path: pay the start latency
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
        if ready == self.batch_time and self.batch is not None:   # same instant: one event delivers both
            self.batch.append(seg)
        else:
            self.batch = [seg]
            self.batch_time = ready
            loop = self.loop
            heappush(loop.heap, (ready, next(loop.counter), self._deliver_batch, self.batch))
        return done

    def _deliver_batch(self, now: float, batch: list) -> None:
        if batch is self.batch:
            self.batch = None
            self.batch_time = -1.0
        deliver = self.deliver
        for seg in batch:
            deliver(now, seg)

    def nic_bytes(self, now: float) -> tuple[int, int, float]:
        """Data frames still in the transmit path at ``now``: (count, payload bytes, first completion time)."""
        q = self.in_nic
        while q and q[0][0] <= now:
            self.nic_total -= q.popleft()[1]
        if not q:
            return 0, 0, 0.0
        return len(q), self.nic_total, q[0][0]

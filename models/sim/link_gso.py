"""A super-packet's way through a :class:`~models.sim.link.Channel`: GSO
or the NIC (TSO) cuts it into segments of one MSS each, PSH on the last
(``tcp_gso_segment``), and each is a frame of its own on the channel.

The channel's own steps for each frame (:meth:`~models.sim.link.Channel.send`,
``_leave``: transmit path, cable, receive path, soft interrupt, GRO) are
done here in one loop when no qdisc is in the way, since a super-packet of
64 KiB is 45 frames; a segment that GRO merges into the one before it is
never made.  ``SuperPackets._send_gso`` is the same as a loop over
``send``: the general path, which a test holds the loop to, bit for bit.
Times are femtoseconds.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

from models import framing
from models.sim.segment import Segment

__all__ = ["GRO_MAX_BYTES", "SuperPackets"]

#: The largest payload of a GRO aggregate in bytes (``gro_max_size``,
#: 65536, less the IPv4, TCP and timestamp headers).
GRO_MAX_BYTES = framing.mss(65536)
_FRAME_BYTES = framing.FRAME_OVERHEAD_BYTES  # bytes a frame adds on the wire


class SuperPackets:
    """The channel's hand-over of a super-packet (a mixin of
    :class:`~models.sim.link.Channel`, whose fields it uses: ``self: Any``)."""

    __slots__ = ()
    batch: list[Segment] | None  # (the channel's delivery batch)

    def send_gso(self: Any, now: int, seg: Segment, mss: int, trace: list | None = None) -> None:
        """Hand over a super-packet: the NIC (TSO) or GSO cuts it into
        segments of ``mss`` bytes, PSH on the last (``tcp_gso_segment``),
        each a frame of its own; each as it leaves goes into ``trace`` if
        given (:meth:`~models.sim.segment.Segment.seen`).

        With no qdisc the segments are handed over in one loop: what
        :meth:`Channel.send <models.sim.link.Channel.send>` and ``_leave``
        do for each, inline; a segment that GRO merges into the one before
        it (``_gro_merge``) is never made.  ``_send_gso`` is the loop over
        ``send``."""
        if trace is not None:
            self._send_gso(now, seg, mss, trace)
            return
        if self.qdisc is not None:
            self._send_gso_qdisc(now, seg, mss)
            return
        seq, end = seg.seq, seg.end
        src, ack, psh, seg_cpu, wnd = seg.src, seg.ack, seg.psh, seg.cpu, seg.wnd
        cost = self.softirq
        prop = self.prop
        rx = self.rx
        per_wakeup = self.per_wakeup
        cpu = seg_cpu or self.cpu
        snd = self.sender
        in_call = seg_cpu is None and snd is not None and snd.in_send  # (pays_in_call asks)
        gro = self.gro
        q = None if self.freed_on_handover else self.in_nic
        wires = self._wire_fs
        while seq < end:
            nxt = seq + mss if end - seq > mss else end
            n = nxt - seq
            last = nxt == end
            # send, with _handed inline: a data frame
            start = self.free_at
            if start < now:  # idle: pay the start latency
                start = now + self.tx_latency
            nbytes = n + _FRAME_BYTES
            wire = wires.get(nbytes) or self.wire_fs(nbytes)
            done = self.free_at = start + wire
            self.frames += 1
            self.data_frames += 1
            self.payload_bytes += n
            if q is not None:
                while q and q[0][0] <= now:  # completed: forget them
                    self.nic_bytes -= q.popleft()[1]
                q.append([done, n])
                self.nic_bytes += n
            # _leave, inline
            self.busy += wire
            arrive = done + prop
            if per_wakeup:  # PerWakeup.seen, inline
                seen = rx.wake_end
                if arrive >= seen:
                    seen = rx.wake_end = arrive + rx.latency
            else:
                seen = rx.seen(arrive, self.softirq_free)
            ready = self._softirq_ready(now, seen, cost, cpu, in_call) if cost else seen
            part_psh = psh and last
            batch = self.batch
            if batch is not None:
                tail = batch[-1]
                if (  # _gro_merge, inline
                    self.gro_open
                    and seen <= self.batch_time
                    and seq == tail.end
                    and ack == tail.ack
                    and wnd == tail.wnd
                    and n <= self.gro_size
                    and tail.end - tail.seq + n <= GRO_MAX_BYTES
                ):
                    tail.end = nxt
                    tail.psh = part_psh
                    self.gro_merged += 1
                    self.gro_open = not part_psh and n == self.gro_size
                    if ready != self.batch_time:  # the aggregate leaves later
                        self.loop.cancel(self.batch_event)
                        self.batch_time = ready
                        self.batch_event = self.loop.schedule(ready, self._deliver, batch)
                    seq = nxt
                    continue
            part = Segment(src, seq, nxt, ack, part_psh, wnd)
            part.cpu = seg_cpu
            part.t_tx = now
            part.t_rx = seen
            if batch is not None and ready == self.batch_time:
                batch.append(part)  # one event delivers both
                self.gro_open = False
            else:
                batch = [part]
                self.batch = batch
                self.batch_time = ready
                loop = self.loop
                event = self.batch_event = [ready, next(loop.ticket), self.deliver, batch]
                heappush(loop.heap, event)
                if gro:
                    self.gro_open = not part_psh
                    self.gro_size = n
            seq = nxt

    def _send_gso_qdisc(self: Any, now: int, seg: Segment, mss: int) -> None:
        """:meth:`send_gso` into the token bucket's qdisc: each segment
        through ``send``, but once one is left waiting in the qdisc (the
        qdisc ran at ``now`` and its head found too few tokens), the later
        ones only join the queue: the qdisc's run that ``send`` would add
        after each finds the same head, the same tokens and the same
        ``now``, so it changes nothing (``Tbf.dequeue``)."""
        qd = self.qdisc
        seq, end = seg.seq, seg.end
        src, ack, psh, seg_cpu, wnd = seg.src, seg.ack, seg.psh, seg.cpu, seg.wnd
        start = now + self.tx_latency  # (when a held segment may leave)
        blocked = False
        while seq < end:
            nxt = seq + mss if end - seq > mss else end
            part = Segment(src, seq, nxt, ack, psh and nxt == end, wnd)
            part.cpu = seg_cpu
            if blocked:  # (send's path for a qdisc that holds frames, less the futile run)
                self._hold(now, start, part, nxt - seq)
            else:
                self.send(now, part)
                blocked = bool(qd.held)  # (its run left the head waiting)
            seq = nxt

    def _send_gso(self: Any, now: int, seg: Segment, mss: int, trace: list | None = None) -> None:
        """:meth:`send_gso`'s general path: each segment through ``send``."""
        seq, end = seg.seq, seg.end
        while seq < end:
            nxt = seq + mss if end - seq > mss else end
            part = Segment(seg.src, seq, nxt, seg.ack, seg.psh and nxt == end, seg.wnd)
            part.cpu = seg.cpu
            if trace is not None:
                trace.append(part.seen(now))
            self.send(now, part)
            seq = nxt

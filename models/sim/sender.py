"""The sending half of a TCP endpoint: the send queue and when it
transmits.  Sequence numbers are relative: the first byte is 1.

* ``write``: bytes append to the unsent tail buffer while it holds less
  than one MSS; a buffer that fills while it heads the queue leaves at
  once, without PSH (``net/ipv4/tcp.c``, ``tcp_sendmsg_locked``;
  ``net/ipv4/tcp_output.c``, ``tcp_push_one``).  At the end of the call
  the cork rule decides (``net/ipv4/tcp.c``, ``tcp_push``).
* ``push`` (``net/ipv4/tcp_output.c``, ``tcp_write_xmit``): every buffer
  but the last leaves; the last one, if partial, waits when corked, or
  in Nagle mode when the Nagle rule holds it (``tcp_nagle_test``).
  Windows never bind here (the flights are far below cwnd and rwnd);
  ``push`` is where a limit would go.
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
when the queue was empty before, plus ``SW`` behind earlier data.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from models.sim.events import Timer

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["Sender", "NAGLE", "NODELAY", "CORK", "PUSH"]

# Push modes (the kernel's ``nonagle`` argument).
NAGLE, NODELAY, CORK, PUSH = 0, 1, 2, 3


class _Skb:
    """An unsent buffer: payload bytes ``[start, end)``, its first byte
    written at ``t_write`` (fs)."""

    __slots__ = ("start", "end", "psh", "t_write")

    def __init__(self, start: int, end: int, t_write: int) -> None:
        self.start = start
        self.end = end
        self.psh = False
        self.t_write = t_write


class Sender:
    """Send queue, Nagle, cork and probe timer of one endpoint.

    ``ep`` (the endpoint) transmits: ``ep.transmit(now, seq, end, psh)``
    and ``ep.tx_backlog(now)``; ``nagle``, ``cork`` and ``probe`` are
    rule objects (:mod:`models.sim.rules`).
    """

    __slots__ = (
        "ep",
        "loop",
        "clock",
        "channel",
        "mss",
        "mode",
        "corked",
        "nagle",
        "cork",
        "probe",
        "write_seq",
        "snd_nxt",
        "snd_una",
        "snd_sml",
        "queue",
        "probe_timer",
        "data_segments",
        "probes",
        "hold_fs",
        "hold_max",
        "in_send",
        "sent_in_call",
    )

    def __init__(self, ep, mss: int, nodelay: bool, nagle, cork, probe) -> None:
        self.ep = ep
        self.loop = ep.loop
        self.clock = ep.clock
        self.channel = ep.channel  # this host's outgoing Channel
        self.mss = mss
        self.mode = NODELAY if nodelay else NAGLE
        self.corked = False  # TCP_CORK set now
        self.nagle = nagle
        self.cork = cork
        self.probe = probe
        self.write_seq = 1  # next byte the application writes
        self.snd_nxt = 1  # next byte to send
        self.snd_una = 1  # oldest unacknowledged byte
        self.snd_sml = 1  # end of the last small segment sent
        self.queue: deque = deque()
        self.probe_timer = Timer(self.loop, self._on_probe)
        self.data_segments = 0
        self.probes = 0
        self.hold_fs = 0  # fs each segment's first byte waited,
        self.hold_max = 0  # summed, and the longest wait
        self.in_send = False
        self.sent_in_call = 0  # data segments sent inside send()

    def socket_mode(self) -> int:
        """The socket's ``nonagle``: cork while TCP_CORK is set."""
        return CORK if self.corked else self.mode

    def write(self, now: int, nbytes: int, more: bool) -> int:
        """One ``send()`` of ``nbytes`` (``MSG_MORE`` if ``more``);
        returns the data segments it transmitted."""
        self.in_send = True
        self.sent_in_call = 0
        mss = self.mss
        q = self.queue
        remaining = nbytes
        while remaining:
            room = 0
            if q:
                tail = q[-1]
                room = mss - tail.end + tail.start
            if room > 0:  # coalesce into the tail
                copy = remaining if remaining < room else room
                tail.end += copy
            else:  # a new buffer
                copy = remaining if remaining < mss else mss
                seq = self.write_seq
                tail = _Skb(seq, seq + copy, now)
                q.append(tail)
            self.write_seq += copy
            remaining -= copy
            if (copy == room or copy == mss) and q[0] is tail:
                self.push(now, PUSH)  # full head: tcp_push_one
        if q:  # tcp_push
            tail = q[-1]
            if not more:
                tail.psh = True
            mode = CORK if (more or self.corked) else self.mode
            if not self.cork.defer(self, now, tail.end - tail.start):
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

    def push_pending(self, now: int) -> None:
        """Push in the socket's mode (an ACK, a TX completion)."""
        if self.queue:
            self.push(now, CORK if self.corked else self.mode)

    def push(self, now: int, mode: int) -> None:
        """``tcp_write_xmit``: send what Nagle and cork allow."""
        q = self.queue
        while q:
            skb = q[0]
            if mode != PUSH and len(q) == 1 and skb.end - skb.start < self.mss:  # tcp_nagle_test
                if mode == CORK:
                    break
                if mode == NAGLE and self.snd_una != self.snd_nxt and self.nagle.holds(self):
                    break
            q.popleft()
            self._send(now, skb)
        if (
            q and self.snd_una == self.snd_nxt and self.probe_timer.entry is None
        ):  # tcp_check_probe_timer
            self.probe_timer.arm_ticks(now, self.probe.ticks(), self.clock)

    def _send(self, now: int, skb: _Skb) -> None:
        end = skb.end
        self.snd_nxt = end
        if end - skb.start < self.mss:  # tcp_minshall_update
            self.snd_sml = end
        timer = self.probe_timer
        if timer.entry is not None:
            timer.cancel()  # the RTO timer takes over
        self.data_segments += 1
        held = now - skb.t_write
        self.hold_fs += held
        if held > self.hold_max:
            self.hold_max = held
        probe = self.probe
        if probe.samples:
            probe.sent(end, now)
        if self.in_send:
            self.sent_in_call += 1
        self.ep.transmit(now, skb.start, end, skb.psh)

    def on_ack(self, now: int, ack: int) -> bool:
        """A cumulative ACK arrived; whether it advanced ``snd_una``."""
        if ack <= self.snd_una:
            return False
        if ack > self.snd_nxt:
            raise AssertionError(f"peer acknowledged {ack} beyond snd_nxt {self.snd_nxt}")
        self.snd_una = ack
        if self.probe.samples:
            self.probe.acked(ack, now)
        return True

    def _on_probe(self, now: int, _arg: object) -> None:
        """``tcp_write_wakeup``: send the head buffer."""
        self.clock.fired()
        if self.queue:
            skb = self.queue.popleft()
            skb.psh = True
            self.probes += 1
            self._send(now, skb)

    # -- the fast-forward's view (models.sim.fastforward) -------------------

    #: Meaningful only inside a ``send()`` call.
    cycle_transient = ("in_send", "sent_in_call")

    @property
    def cycle_stream(self) -> int:
        """Its sequence numbers count this host's bytes."""
        return self.ep.side

    def cycle_parts(self) -> dict:
        return {
            "nagle": self.nagle,
            "cork": self.cork,
            "probe": self.probe,
            "probe_timer": self.probe_timer,
        }

    def cycle_counters(self) -> dict:
        return {
            "data_segments": self.data_segments,
            "probes": self.probes,
            "hold_fs": self.hold_fs,
        }

    def cycle_state(self, view: View) -> Hashable:
        seq = view.seq
        return (
            seq(self.write_seq),
            seq(self.snd_nxt),
            seq(self.snd_una),
            seq(self.snd_sml) if self.snd_sml > self.snd_una else None,
            tuple((seq(k.start), seq(k.end), k.psh, view.time(k.t_write)) for k in self.queue),
            self.mode,
            self.corked,
            self.hold_max,
        )

    def cycle_signature(self, view: View) -> Hashable:
        return len(self.queue), self.write_seq - self.snd_nxt, self.snd_nxt - self.snd_una

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

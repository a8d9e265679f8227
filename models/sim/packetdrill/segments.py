"""The segments of a packetdrill script: inbound ones delivered to the simulated socket, outbound
ones matched against what it sent (a part of ``models.sim.packetdrill.runner``'s run)."""

from __future__ import annotations

from models.sim.packetdrill.outcome import (
    _ANY_TIME_CAP,
    _MSS_DEFAULT,
    Mismatch,
    _Failed,
    _seconds,
)
from models.sim.packetdrill.parser import Packet, ScriptError
from models.sim.packetdrill.state import _State
from models.sim.segment import Segment


class _Segments(_State):
    """Inbound and outbound segments of a run (mixed into its ``_Run``)."""

    def inbound(self, ev: Packet, now: int) -> None:
        name = self.script.name
        win = ev.win
        self.trace.append((now, "<", ev.describe()))
        if "S" in ev.flags:
            opts = ev.options
            if opts is not None and opts.any:
                raise ScriptError(
                    name, ev.line, "an inbound SYN needs explicit options, not <...>"
                )
            if opts is not None:
                self.peer_mss = opts.mss if opts.mss is not None else _MSS_DEFAULT
                self.peer_ts = opts.timestamps
                self.peer_wscale = opts.wscale
            if ev.start != 0 or ev.end != 0:
                raise ScriptError(
                    name, ev.line, "a SYN must be 0:0(0) (relative sequence numbers)"
                )
            if ev.flags == "S":
                if self.state != "listen":
                    raise ScriptError(name, ev.line, "an inbound SYN needs a listening socket")
                self.state = "syn-received"
                self.syn_time = now
                self.synthetic(now, "S.", 0, 0, 1)
                return
            if ev.flags == "S." and self.state == "syn-sent":
                if ev.ack != 1:
                    raise ScriptError(name, ev.line, "the SYN-ACK must acknowledge 1")
                self.snd_wnd = win if win is not None else 0
                self.establish(now, ev.line)
                self.synthetic(now, ".", 1, 1, 1)
                return
            raise ScriptError(
                name, ev.line, f"unexpected {ev.flags!r} segment in state {self.state}"
            )
        if self.state == "syn-received":
            if ev.flags != "." or ev.start != 1 or ev.end != 1 or ev.ack != 1:
                raise ScriptError(
                    name, ev.line, "the handshake's last segment must be '. 1:1(0) ack 1'"
                )
            self.snd_wnd = self.scaled(win)
            self.establish(now, ev.line)
            return
        self.check_established(ev, "an inbound segment")
        ep = self.ep
        rx, tx = ep.receiver, ep.sender
        if ev.length:
            if ev.start != rx.rcv_nxt:
                raise ScriptError(
                    name,
                    ev.line,
                    f"inbound data {ev.start}:{ev.end} is not the next in order (rcv_nxt "
                    f"{rx.rcv_nxt}): the simulator handles in-order data only",
                )
            if ev.length > tx.mss:
                raise ScriptError(
                    name,
                    ev.line,
                    f"inbound segment of {ev.length} bytes exceeds the MSS {tx.mss} (the "
                    "simulated endpoint uses one MSS both ways)",
                )
        elif ev.start != rx.rcv_nxt and "F" not in ev.flags:
            raise ScriptError(
                name,
                ev.line,
                f"inbound ACK with sequence {ev.start}, expected {rx.rcv_nxt} (no "
                "retransmissions in the simulator)",
            )
        ack = ev.ack if ev.ack is not None else tx.snd_una
        if ack > tx.snd_nxt:
            raise _Failed(
                Mismatch(
                    ev.line,
                    _seconds(now),
                    ev.describe(),
                    f"snd_nxt {tx.snd_nxt}",
                    None,
                    f"the script acknowledges byte {ack} but the simulator has sent only up to "
                    f"{tx.snd_nxt}",
                )
            )
        if win is not None:
            self.snd_wnd = self.scaled(win)
        tx.snd_wnd = self.snd_wnd  # the window the peer advertises
        seg = Segment(0, ev.start, ev.end, ack, "P" in ev.flags)
        seg.t_tx = seg.t_rx = now
        ep.receive(now, seg)
        if "F" in ev.flags:
            self.fin = True

    def scaled(self, win: int | None) -> int:
        """The peer's window in bytes (scaled when both offered wscale)."""
        if win is None:
            return self.snd_wnd
        return win << (self.peer_wscale or 0)

    def outbound(self, ev: Packet, t: int | None, tol: int) -> int:
        """Match the next simulated segment within ``tol`` fs of ``t``;
        returns its time, fs."""
        name = self.script.name
        handshake = self.state in ("syn-received", "syn-sent") or "S" in ev.flags
        if not handshake:
            self.check_established(ev, "an outbound segment")
            if ev.win is not None:
                raise ScriptError(
                    name, ev.line, "outbound 'win' cannot be checked: the simulator has no window"
                )
            if ev.options is not None and not ev.options.any:
                raise ScriptError(
                    name, ev.line, "outbound TCP options cannot be checked (use <...> or none)"
                )
        if len(self.out) == self.matched:
            deadline = self.loop.now + _ANY_TIME_CAP if t is None else t + tol
            self.wait_segment(deadline)
        expected_t = _seconds(t) if t is not None else _seconds(self.loop.now)
        if len(self.out) == self.matched:
            raise _Failed(
                Mismatch(
                    ev.line,
                    expected_t,
                    ev.describe(),
                    None,
                    None,
                    "the simulator sent nothing"
                    + ("" if t is None else f" by {_seconds(t + tol):.6f} s"),
                )
            )
        o = self.out[self.matched]
        self.matched += 1
        if t is None:
            expected_t = _seconds(o.t)

        def fail(reason: str) -> None:
            raise _Failed(
                Mismatch(ev.line, expected_t, ev.describe(), o.describe(), _seconds(o.t), reason)
            )

        if o.flags != ev.flags:
            fail(f"flags differ: expected {ev.flags}, simulated {o.flags}")
        if (o.start, o.end) != (ev.start, ev.end):
            fail(
                f"sequence range differs: expected {ev.start}:{ev.end}, simulated "
                f"{o.start}:{o.end}"
            )
        if ev.ack is not None and o.ack != ev.ack:
            fail(f"ack differs: expected {ev.ack}, simulated {o.ack}")
        if t is not None and abs(o.t - t) > tol:
            early = "early" if o.t < t else "late"
            fail(
                f"timing: {abs(o.t - t) / 10**12:.3f} ms {early} (tolerance "
                f"{tol / 10**12:.3f} ms)"  # fs -> ms
            )
        return o.t

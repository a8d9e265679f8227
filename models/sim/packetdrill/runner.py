"""Run a packetdrill script against the simulator's TCP endpoint.

The simulated :class:`~models.sim.endpoint.Endpoint` is the local socket
(packetdrill's kernel under test); the script's inbound segments play the
remote peer.  The endpoint is the real one, with the kernel profile's rule
classes (Nagle with Minshall's variant, the delayed/quick ACK rule, cork
and autocork, the probe timer, the tick clock), wired as in a simulation:

* its outgoing :class:`~models.sim.link.Channel` is a *tap* that records
  each segment at the time it leaves the transmit path (where packetdrill
  sniffs it on its tun device).  By default the path completes at once, as
  tun does (so autocorking never waits); a script may put a ``tbf`` qdisc
  on ``tun0`` (a backtick ``tc`` command), and the channel then meters
  frames through the same token bucket the simulator uses for veth pairs;
* each inbound segment goes to :meth:`Endpoint.receive
  <models.sim.endpoint.Endpoint.receive>` at its scripted time (its ACK
  field drives ``snd_una``; its payload the receiver and the ACK rule);
* each system call acts on the endpoint at its scripted time:
  ``write``/``send`` call :meth:`Sender.write
  <models.sim.sender.Sender.write>` (``MSG_MORE`` as ``more``),
  ``read``/``recv`` :meth:`Receiver.read
  <models.sim.receiver.Receiver.read>`, ``setsockopt`` sets
  ``TCP_NODELAY`` (on: the sender's mode and a push of everything held,
  ``__tcp_sock_set_nodelay``), ``TCP_CORK`` (:meth:`Sender.set_cork
  <models.sim.sender.Sender.set_cork>`) and ``TCP_QUICKACK`` (the ACK
  rule's ``quickack``).  Options set on the listening socket are
  inherited by the connection.

The connection handshake is not simulated (the simulator has no SYN
handling): ``socket``/``bind``/``listen``, ``< S``, ``> S.``, ``< .`` and
``accept`` (or ``connect``, ``> S``, ``< S.``, ``> .``) set the connection
up, and the handshake segments the local socket sends are checked
loosely: flags, sequence range and ACK only, at the time the peer's segment
arrived; their options and window are not checked.  The endpoint is
created when the handshake completes; the MSS is the smaller of the peer's SYN
``mss`` option (536 bytes without one, ``TCP_MSS_DEFAULT``) and the
profile's loopback MTU less 40 bytes, less 12 bytes when both SYNs carry
timestamps (``tcp_sync_mss``); the handshake's round trip is the probe
rule's first RTT sample (``tcp_synack_rtt_meas``).  The endpoint uses
one MSS both ways, so the peer's segments may not exceed it.

Matching follows packetdrill (``run.c``): events run in order at their
scripted times; a ``+`` time adds to the previous event's scripted time
between two inbound segments, else to when the previous event completed
(for an outbound segment: when the simulator sent it); each outbound
expectation is compared with the next segment the simulator sent, which
must carry the same flags, sequence range and ACK (when the line gives
one), at its time within the tolerance (``tolerance_usecs``, or
``tolerance_percent`` of the time since the previous event if that is
more); a system call's result must equal the script's.
One rule is stricter than packetdrill: a simulated segment sent before the
script's last event and never expected fails the script.

What the runner or the simulator cannot represent raises
:class:`ScriptError` (file and line) rather than passing silently:
``FIN`` and anything after ``close`` or an inbound ``F.`` segment,
retransmitted or out-of-order data, outbound ``win`` values and options,
partial reads and blocking calls, ``TCP_QUICKACK`` 0, socket options other
than those above (``SO_REUSEADDR`` is accepted and does nothing;
``TCP_WINDOW_CLAMP``, option 10, only before the connection and at most
half the initial receive window, where the window test of
``__tcp_ack_snd_check`` holds as the simulator assumes), and shell
commands other than ``sysctl -q net.ipv4.tcp_autocorking=0|1`` and a
``tbf`` qdisc on ``tun0`` (both before the connection).  A run fails, with
the cause named, when the simulator sends beyond the peer's advertised
window or puts more than ten segments in flight (Linux's initial
congestion window): it models neither.  Segments are MSS-sized (no
GSO/TSO): packetdrill's tun device accepts GSO packets, so a script that
expects a write of several MSS to leave at once as one packet cannot pass.

>>> from models.sim.packetdrill.parser import parse_script
>>> text = '''
... 0    socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
... +0   bind(3, ..., ...) = 0
... +0   listen(3, 1) = 0
... +0   < S 0:0(0) win 65535 <mss 1000,nop,wscale 7>
... +0   > S. 0:0(0) ack 1 <...>
... +0   < . 1:1(0) ack 1 win 500
... +0   accept(3, ..., ...) = 4
... +0   write(4, ..., 100) = 100
... +0   > P. 1:101(100) ack 1
... +0   write(4, ..., 100) = 100
... +.05 < . 1:1(0) ack 101 win 500
... +0   > P. 101:201(100) ack 1
... '''
>>> out = run_script(parse_script(text, name="nagle.pkt"))
>>> out.passed, out.mismatch
(True, None)
>>> print(out.trace_text())  # doctest: +NORMALIZE_WHITESPACE
  0.000000 < S 0:0(0) win 65535
  0.000000 > S. 0:0(0) ack 1
  0.000000 < . 1:1(0) ack 1 win 500
  0.000000 > P. 1:101(100) ack 1
  0.050000 < . 1:1(0) ack 101 win 500
  0.050000 > P. 101:201(100) ack 1
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from models import framing
from models.sim.endpoint import Endpoint
from models.sim.events import FS, EventLoop
from models.sim.kernels import KernelProfile, get_profile
from models.sim.link import Channel, Segment
from models.sim.packetdrill.parser import (
    Command,
    Event,
    Packet,
    Script,
    ScriptError,
    Syscall,
    parse_file,
)
from models.sim.sender import NAGLE, NODELAY

__all__ = [
    "DEFAULT_TOLERANCE_USECS",
    "DEFAULT_TOLERANCE_PERCENT",
    "Mismatch",
    "Outcome",
    "run_script",
    "run_file",
]

#: packetdrill's default timing tolerance, microseconds.
DEFAULT_TOLERANCE_USECS = 4000
#: packetdrill's default dynamic tolerance, percent of the time since the
#: previous event (``--tolerance_percent``).
DEFAULT_TOLERANCE_PERCENT = 12.5
_FS_PER_US = 10**9  # femtoseconds per microsecond
#: The timestamps option, bytes, when both SYNs carry it (``tcp_sync_mss``).
_TS_OPTION_BYTES = 12
#: ``TCP_MSS_DEFAULT``: the MSS assumed when the SYN has no mss option, bytes.
_MSS_DEFAULT = 536
#: ``TCP_INIT_CWND``: Linux's initial congestion window, segments.
_INIT_CWND = 10
#: A transmit path that completes at once (tun): a rate so high that any
#: frame's wire time rounds to 0 fs, bits per second.
_INSTANT_BPS = 10**24
#: Bytes per unit of a tbf burst suffix (k, m), and bits per second per
#: unit of a rate suffix (k, m, g): tc's units are powers of 1000 for
#: rates and 1024 for sizes.
_BYTE_UNITS = {"": 1, "k": 1024, "m": 1024 * 1024}
_RATE_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
#: ``TCP_WINDOW_CLAMP``'s option number (``include/uapi/linux/tcp.h``),
#: which packetdrill scripts must spell as a number.
_TCP_WINDOW_CLAMP = "10"
#: How long a ``*`` expectation waits for a segment at most, fs (60 s).
_ANY_TIME_CAP = 60 * FS


@dataclass(frozen=True)
class Mismatch:
    """Where the simulator and the script first disagree.

    Attributes
    ----------
    line : int
        The script line.
    time_s : float
        The scripted time of that line, seconds (for ``*``: when the
        simulated segment left).
    expected : str
        What the script expects (a segment, or a call's result).
    simulated : str or None
        What the simulator did instead (``None``: nothing).
    simulated_time_s : float or None
        When, seconds.
    reason : str
        Which part differs.
    """

    line: int
    time_s: float
    expected: str
    simulated: str | None
    simulated_time_s: float | None
    reason: str

    def __str__(self) -> str:
        sim = "nothing"
        if self.simulated is not None:
            sim = self.simulated
            if self.simulated_time_s is not None:
                sim = f"{sim} at {self.simulated_time_s:.6f} s"
        return (
            f"line {self.line}: {self.reason}\n"
            f"    script    at {self.time_s:.6f} s: {self.expected}\n"
            f"    simulator: {sim}"
        )


@dataclass(frozen=True)
class TraceLine:
    """One segment of the run: ``time_s`` seconds, ``direction`` ``"<"``
    (the script's peer) or ``">"`` (the simulated socket), ``text`` as
    packetdrill prints it."""

    time_s: float
    direction: str
    text: str

    def __str__(self) -> str:
        return f"{self.time_s:10.6f} {self.direction} {self.text}"


@dataclass(frozen=True)
class Outcome:
    """The result of one script: ``passed``, the first ``mismatch`` (or
    ``None``), the ``profile`` name and the segments of the run."""

    name: str
    profile: str
    passed: bool
    mismatch: Mismatch | None
    trace: tuple[TraceLine, ...] = ()

    def trace_text(self) -> str:
        """The run's segments, one a line."""
        return "\n".join(str(t) for t in self.trace)


class _Failed(Exception):
    """The first mismatch: ends the run."""

    def __init__(self, mismatch: Mismatch) -> None:
        super().__init__(str(mismatch))
        self.mismatch = mismatch


@dataclass
class _Out:
    """A segment the local socket sent: at ``t`` fs (when it left the
    transmit path), ``handshake`` if made up by the runner."""

    t: int
    flags: str
    start: int
    end: int
    ack: int
    handshake: bool = False

    def describe(self) -> str:
        text = f"{self.flags} {self.start}:{self.end}({self.end - self.start})"
        return text if self.flags == "S" else f"{text} ack {self.ack}"


class _App:
    """The endpoint's application: the script's calls do the reading."""

    def on_data(self, now: int) -> None:
        """Data arrived (the script reads it with ``read``)."""


class _Tap(Channel):
    """The local transmit path: a :class:`~models.sim.link.Channel` that
    also reports each segment when it leaves (``on_send(done, seg)``)."""

    __slots__ = ("on_send",)
    on_send: Callable[[int, Segment], None]

    def send(self, now: int, seg: Segment) -> int:
        done = super().send(now, seg)
        self.on_send(done, seg)
        return done


def _seconds(fs: int) -> float:
    return fs / FS  # fs -> s


@dataclass
class _Run:
    script: Script
    profile: KernelProfile
    tolerance: int  # fs
    phase: int  # fs into the first tick
    loop: EventLoop = field(default_factory=EventLoop)
    out: list[_Out] = field(default_factory=list)
    matched: int = 0
    trace: list[tuple[int, str, str]] = field(default_factory=list)
    fds: dict[int, str] = field(default_factory=dict)
    conn_fd: int | None = None
    state: str = "closed"
    nodelay: bool = False
    cork: bool = False
    nonblocking: bool = False
    autocork: bool | None = None
    tbf: tuple[int, int] | None = None  # (bits/s, bytes)
    window_clamp: int | None = None  # bytes
    peer_mss: int = _MSS_DEFAULT
    peer_ts: bool = False
    peer_wscale: int | None = None
    snd_wnd: int = 0  # bytes the peer allows beyond snd_una
    syn_time: int = 0  # fs: the SYN-ACK (passive) or SYN (active) left
    ep: Any = None
    fin: bool = False
    clock: Any = None
    tolerance_percent: float = 12.5
    prev_script: int = 0  # fs: the previous event's scripted time
    prev_actual: int = 0  # fs: when the previous event completed
    line: int = 0  # the event being run

    # -- driving the loop ---------------------------------------------------

    def at(self, t: int, action: Callable[[int], None]) -> None:
        """Run the simulation to ``t`` fs and do ``action(now)`` there."""
        done = []

        def fire(now: int, _arg: object) -> None:
            action(now)
            done.append(now)

        self.loop.schedule(max(t, self.loop.now), fire)
        while not done:
            self.loop.run(pause=lambda: bool(done))

    def wait_segment(self, deadline: int) -> None:
        """Run until the simulator sends a segment or ``deadline`` fs."""
        hit = []
        entry = self.loop.schedule(max(deadline, self.loop.now), lambda now, a: hit.append(now))
        while not hit and len(self.out) == self.matched and self.loop.pending_any():
            self.loop.run(pause=lambda: bool(hit) or len(self.out) > self.matched)
        self.loop.cancel(entry)

    # -- what the local socket sends ---------------------------------------

    def on_send(self, done: int, seg: Segment) -> None:
        """A simulated segment left the transmit path at ``done`` fs."""
        flags = "P." if seg.psh else "."
        o = _Out(done, flags, seg.seq, seg.end, seg.ack)
        self.out.append(o)
        self.trace.append((done, ">", o.describe()))
        if seg.end == seg.seq:
            return
        tx = self.ep.sender
        if seg.end > tx.snd_una + self.snd_wnd:
            raise _Failed(
                Mismatch(
                    self.line,
                    _seconds(done),
                    f"at most snd_una + window = {tx.snd_una + self.snd_wnd}",
                    o.describe(),
                    _seconds(done),
                    "the simulator sent beyond the peer's advertised window "
                    "(it does not model the window)",
                )
            )
        if self.flight_segments() > _INIT_CWND:
            raise _Failed(
                Mismatch(
                    self.line,
                    _seconds(done),
                    f"at most {_INIT_CWND} segments in flight",
                    o.describe(),
                    _seconds(done),
                    "more segments in flight than Linux's initial congestion window "
                    "(the simulator does not model cwnd)",
                )
            )

    def flight_segments(self) -> int:
        una = self.ep.sender.snd_una
        return sum(1 for o in self.out if not o.handshake and o.end > o.start and o.end > una)

    def synthetic(self, t: int, flags: str, start: int, end: int, ack: int) -> None:
        o = _Out(t, flags, start, end, ack, handshake=True)
        self.out.append(o)
        self.trace.append((t, ">", o.describe()))

    # -- the connection ------------------------------------------------------

    def establish(self, now: int, line: int) -> None:
        """The handshake is complete: build the endpoint."""
        profile = self.profile
        if self.autocork is not None:
            profile = profile.configured(autocork=self.autocork)
        if self.window_clamp is not None:
            rcv_wnd = min(profile.rcv_wnd_bytes, self.window_clamp)
            profile = dataclasses.replace(profile, rcv_wnd_bytes=rcv_wnd)
        self.clock = profile.clock(profile.hz, self.phase)
        mtu_mss = framing.mss(profile.loopback_mtu) + _TS_OPTION_BYTES  # MTU - 40
        mss = min(self.peer_mss, mtu_mss) - (_TS_OPTION_BYTES if self.peer_ts else 0)
        if mss < 1:
            raise ScriptError(self.script.name, line, f"the negotiated MSS is {mss} bytes")
        if self.tbf is None:
            rate, bucket = _INSTANT_BPS, None
        else:
            rate, bucket = self.tbf
        tap = _Tap(self.loop, rate, 0, 0, 0, 0, bucket)
        tap.on_send = self.on_send
        tap.out = lambda now, seg: None  # the peer is the script
        ep = Endpoint(1, self.loop, self.clock, profile, mss, self.nodelay, tap)
        ep.app = _App()
        self.ep = ep
        if self.cork:
            ep.sender.set_cork(now, True)
        probe = ep.sender.probe
        if probe.samples:  # the handshake's RTT sample
            probe.sent(1, self.syn_time)
            probe.acked(1, now)
        self.state = "established"

    def check_established(self, ev: Event, what: str) -> None:
        if self.fin:
            raise ScriptError(
                self.script.name,
                ev.line,
                f"{what} after the peer's FIN: the simulator has no FIN handling",
            )
        if self.state == "closed-local":
            raise ScriptError(
                self.script.name,
                ev.line,
                f"{what} after close(): the simulator has no FIN handling",
            )
        if self.state != "established":
            raise ScriptError(
                self.script.name, ev.line, f"{what} before the connection is established"
            )

    # -- events --------------------------------------------------------------

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

    def syscall(self, ev: Syscall, now: int) -> None:
        name = self.script.name
        call, args = ev.name, ev.args

        def fd_arg(i: int = 0) -> int:
            if len(args) <= i or not args[i].isdigit():
                raise ScriptError(name, ev.line, f"{call}: argument {i + 1} must be an fd")
            return int(args[i])

        def result(value: int, errno: str | None = None) -> None:
            if (value, errno) != (ev.result, ev.errno):
                got = f"{value}" + (f" {errno}" if errno else "")
                want = f"{ev.result}" + (f" {ev.errno}" if ev.errno else "")
                raise _Failed(
                    Mismatch(
                        ev.line,
                        _seconds(now),
                        f"{call}(...) = {want}",
                        f"{call}(...) = {got}",
                        _seconds(now),
                        f"{call} returned {got}, the script expects {want}",
                    )
                )

        if call == "socket":
            if ev.result < 0:
                raise ScriptError(name, ev.line, "socket() must return an fd")
            if len(args) != 3 or args[1] != "SOCK_STREAM" or args[2] != "IPPROTO_TCP":
                raise ScriptError(name, ev.line, "only socket(..., SOCK_STREAM, IPPROTO_TCP)")
            self.fds[ev.result] = "socket"
            return
        if call in ("bind", "listen"):
            fd = fd_arg()
            if self.fds.get(fd) != "socket":
                raise ScriptError(name, ev.line, f"{call} on fd {fd}, not an unconnected socket")
            if call == "listen":
                self.state = "listen"
            result(0)
            return
        if call == "fcntl":
            fd = fd_arg()
            if len(args) != 3 or args[1] != "F_SETFL" or "O_NONBLOCK" not in args[2]:
                raise ScriptError(name, ev.line, "only fcntl(fd, F_SETFL, O_RDWR|O_NONBLOCK)")
            self.nonblocking = True
            result(0)
            return
        if call == "connect":
            fd = fd_arg()
            if self.fds.get(fd) != "socket" or self.state != "closed":
                raise ScriptError(name, ev.line, "connect needs a fresh socket")
            self.state = "syn-sent"
            self.conn_fd = fd
            self.syn_time = now
            self.synthetic(now, "S", 0, 0, 0)
            if self.nonblocking:
                result(-1, "EINPROGRESS")
            elif (ev.result, ev.errno) != (0, None):
                result(0)
            return
        if call == "accept":
            if self.state != "established":
                raise ScriptError(
                    name,
                    ev.line,
                    "accept before the handshake completed (blocking accept is not supported)",
                )
            if ev.result < 0:
                raise ScriptError(name, ev.line, "accept must return an fd")
            self.conn_fd = ev.result
            self.fds[ev.result] = "connection"
            return
        if call == "setsockopt":
            self.setsockopt(ev, now)
            return
        if call == "close":
            fd = fd_arg()
            if fd == self.conn_fd:
                self.state = "closed-local"
            result(0)
            return
        # write, send, read, recv: the connection
        fd = fd_arg()
        if fd != self.conn_fd:
            raise ScriptError(name, ev.line, f"{call} on fd {fd}, not the connection")
        self.check_established(ev, f"{call}()")
        ep = self.ep
        if call in ("write", "send"):
            want = 4 if call == "send" else 3
            if len(args) != want or not args[2].isdigit():
                raise ScriptError(
                    name, ev.line, f"{call} needs {want} arguments with a byte count"
                )
            nbytes = int(args[2])
            more = False
            if call == "send":
                flags = args[3]
                if flags == "MSG_MORE":
                    more = True
                elif flags != "0":
                    raise ScriptError(
                        name, ev.line, f"send flags {flags!r} (supported: 0, MSG_MORE)"
                    )
            if nbytes:
                ep.sender.write(now, nbytes, more)
            result(nbytes)
            return
        want = 4 if call == "recv" else 3
        if len(args) != want or not args[2].isdigit():
            raise ScriptError(name, ev.line, f"{call} needs {want} arguments with a byte count")
        if call == "recv" and args[3] != "0":
            raise ScriptError(name, ev.line, f"recv flags {args[3]!r} (supported: 0)")
        rx = ep.receiver
        queued = rx.rcv_nxt - rx.copied_seq
        if queued == 0:
            if self.fin:
                result(0)
            elif self.nonblocking:
                result(-1, "EAGAIN")
            else:
                raise ScriptError(
                    name, ev.line, f"{call} with no data queued would block (not supported)"
                )
            return
        if int(args[2]) < queued:
            raise ScriptError(
                name,
                ev.line,
                f"{call} of {args[2]} bytes with {queued} queued: the simulator reads everything "
                "queued (partial reads are not supported)",
            )
        result(rx.read(now))

    def setsockopt(self, ev: Syscall, now: int) -> None:
        name = self.script.name
        args = ev.args
        if len(args) != 5 or not args[0].isdigit():
            raise ScriptError(name, ev.line, "setsockopt(fd, level, option, [value], length)")
        fd, level, opt, raw = int(args[0]), args[1], args[2], args[3]
        if fd not in self.fds:
            raise ScriptError(name, ev.line, f"setsockopt on unknown fd {fd}")
        if level == "SOL_SOCKET" and opt == "SO_REUSEADDR":
            return  # no effect on the connection
        tcp_level = level in ("IPPROTO_TCP", "SOL_TCP")
        if tcp_level and opt in ("TCP_WINDOW_CLAMP", _TCP_WINDOW_CLAMP):
            self.set_window_clamp(ev, raw)
            return
        if not tcp_level or opt not in ("TCP_NODELAY", "TCP_CORK", "TCP_QUICKACK"):
            raise ScriptError(
                name,
                ev.line,
                f"setsockopt {level} {opt} is not supported (supported: TCP_NODELAY, TCP_CORK, "
                "TCP_QUICKACK, TCP_WINDOW_CLAMP before the connection, SO_REUSEADDR)",
            )
        if raw not in ("[0]", "[1]"):
            raise ScriptError(name, ev.line, f"{opt} value must be [0] or [1], got {raw}")
        if (ev.result, ev.errno) != (0, None):
            raise ScriptError(name, ev.line, f"setsockopt {opt} returns 0 here")
        on = raw == "[1]"
        ep = self.ep if self.state == "established" else None
        if opt == "TCP_NODELAY":
            self.nodelay = on
            if ep is not None:
                ep.sender.mode = NODELAY if on else NAGLE
                if on:  # __tcp_sock_set_nodelay: push with TCP_NAGLE_PUSH
                    ep.sender.flush(now)
        elif opt == "TCP_CORK":
            self.cork = on
            if ep is not None:
                ep.sender.set_cork(now, on)
        elif not on:
            raise ScriptError(
                name, ev.line, "TCP_QUICKACK [0] (enter pingpong mode) is not supported"
            )
        elif ep is not None:
            ep.receiver.ack.quickack(now)

    def set_window_clamp(self, ev: Syscall, raw: str) -> None:
        """``TCP_WINDOW_CLAMP``: accepted before the connection exists and
        only where it makes the window test of ``__tcp_ack_snd_check``
        hold, as the simulator's ACK rule assumes; the initial receive
        window (which sizes the quick-ACK budget) is clamped too."""
        name = self.script.name
        if self.state not in ("closed", "listen"):
            raise ScriptError(name, ev.line, "TCP_WINDOW_CLAMP only before the connection")
        value = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else ""
        limit = self.profile.rcv_wnd_bytes // 2
        if not value.isdigit() or not 0 < int(value) <= limit:
            raise ScriptError(
                name,
                ev.line,
                f"TCP_WINDOW_CLAMP {raw}: only clamps of 1 to {limit} bytes (half the initial "
                "receive window) are supported: there the right edge of the window advances "
                "with every segment, as the simulator's ACK rule assumes",
            )
        if (ev.result, ev.errno) != (0, None):
            raise ScriptError(name, ev.line, "setsockopt TCP_WINDOW_CLAMP returns 0 here")
        self.window_clamp = int(value)

    def command(self, ev: Command) -> None:
        if self.state in ("established", "closed-local"):
            raise ScriptError(
                self.script.name, ev.line, "shell commands must come before the connection exists"
            )
        v = ev.values
        if ev.kind == "sysctl":
            self.autocork = v["value"] == "1"
            if self.autocork and not self.profile.autocork:
                raise ScriptError(
                    self.script.name,
                    ev.line,
                    f"profile {self.profile.name!r} has no autocorking (tcp_autocorking "
                    "arrived in Linux 3.14)",
                )
        else:
            rate = int(v["rate"]) * _RATE_UNITS[v["rate_unit"]]  # bits/s
            burst = int(v["burst"]) * _BYTE_UNITS[v["burst_unit"]]  # bytes
            if rate <= 0 or burst <= 0:
                raise ScriptError(self.script.name, ev.line, "tbf rate and burst must be positive")
            self.tbf = (rate, burst)

    # -- the script ----------------------------------------------------------

    def event_time(self, ev: Event, base: int) -> int | None:
        """The scripted time of ``ev`` in fs (``None`` for ``*``); a
        relative time adds to ``base``."""
        tm = ev.time
        if tm.kind == "any":
            return None
        t = round(tm.seconds * FS)  # s -> fs, exact for decimal seconds
        if tm.kind == "rel":
            return base + t
        if t < self.prev_script:
            raise ScriptError(
                self.script.name,
                ev.line,
                f"time {_seconds(t):.6f} s is before the previous event "
                f"({_seconds(self.prev_script):.6f} s)",
            )
        return t

    def run(self) -> None:
        events = self.script.events
        prev_inbound = False
        for ev in events:
            self.line = ev.line
            inbound = isinstance(ev, Packet) and ev.inbound
            # packetdrill's adjust_relative_event_times: between two
            # inbound segments from the previous one's scripted time,
            # else from when the previous event completed
            base = self.prev_script if (inbound and prev_inbound) else self.prev_actual
            t = self.event_time(ev, base)
            prev_inbound = inbound
            if isinstance(ev, Packet) and not ev.inbound:
                tol = self.tolerance
                if t is not None:  # verify_time's dynamic tolerance
                    tol = max(tol, int((t - self.prev_script) * self.tolerance_percent / 100))
                seen = self.outbound(ev, t, tol)
                self.prev_script = base if t is None else t
                self.prev_actual = seen
                continue
            assert t is not None
            self.prev_script = t
            if isinstance(ev, Packet):
                self.at(t, functools.partial(self.inbound, ev))
            elif isinstance(ev, Syscall):
                self.at(t, functools.partial(self.syscall, ev))
            else:
                self.command(ev)
            self.prev_actual = max(t, self.loop.now)
        # stricter than packetdrill: nothing unexpected before the end
        end = max(self.prev_actual, self.loop.now)
        for o in self.out[self.matched :]:
            if o.t <= end:
                raise _Failed(
                    Mismatch(
                        events[-1].line,
                        _seconds(end),
                        "no further segment before the script's end",
                        o.describe(),
                        _seconds(o.t),
                        "the simulator sent a segment the script does not expect",
                    )
                )


def run_script(
    script: Script,
    profile: str | KernelProfile = "linux-6",
    tolerance_usecs: int | None = None,
    tick_phase_usecs: float | None = None,
    tolerance_percent: float | None = None,
) -> Outcome:
    """Run ``script`` against the simulator.

    Parameters
    ----------
    script : Script
        A parsed script (:func:`~models.sim.packetdrill.parser.parse_script`).
    profile : str or KernelProfile
        The kernel profile (:mod:`models.sim.kernels`), with its own timer
        classes (``kernel_timers``), default ``"linux-6"``.
    tolerance_usecs : int, optional
        Timing tolerance, microseconds: the script's
        ``--tolerance_usecs`` if it sets one, else packetdrill's default
        4000.  An argument overrides the script.
    tick_phase_usecs : float, optional
        Where time 0 falls in the first timer tick, microseconds (default:
        half a tick, so a timer armed at a scripted time fires in the
        middle of its rounding range: a 10-tick delayed ACK on
        ``linux-6``, HZ=250, after 42 ms of its 40-44 ms).

    tolerance_percent : float, optional
        packetdrill's dynamic tolerance, percent: an outbound segment
        expected ``d`` seconds after the previous event may be off by
        ``tolerance_percent / 100 * d`` when that exceeds the tolerance
        (the script's ``--tolerance_percent``, else packetdrill's default
        12.5).

    Returns
    -------
    Outcome
        ``passed``, the first mismatch and the run's segments.

    Raises
    ------
    ScriptError
        When the script uses what the runner or the simulator does not
        support (the message names the file and line).
    """
    prof = get_profile(profile) if isinstance(profile, str) else profile
    if not isinstance(prof, KernelProfile):
        raise ValueError(f"profile must be a profile name or a KernelProfile, got {profile!r}")
    tol_us = tolerance_usecs
    if tol_us is None:
        tol_us = script.options.get("tolerance_usecs", DEFAULT_TOLERANCE_USECS)
    if not isinstance(tol_us, int) or isinstance(tol_us, bool) or tol_us < 0:
        raise ValueError(f"tolerance_usecs must be a whole number >= 0 (us), got {tol_us!r}")
    tick = -(-FS // prof.hz)  # fs per tick
    if tick_phase_usecs is None:
        phase = tick // 2
    else:
        if not 0 <= tick_phase_usecs:
            raise ValueError(f"tick_phase_usecs must be >= 0 (us), got {tick_phase_usecs!r}")
        phase = min(round(Fraction(tick_phase_usecs) * _FS_PER_US), tick - 1)  # us -> fs
    pct = tolerance_percent
    if pct is None:
        pct = script.options.get("tolerance_percent", DEFAULT_TOLERANCE_PERCENT)
    if not isinstance(pct, (int, float)) or isinstance(pct, bool) or not 0 <= pct <= 100:
        raise ValueError(f"tolerance_percent must be in [0, 100] (percent), got {pct!r}")
    r = _Run(script, prof, tol_us * _FS_PER_US, phase)  # us -> fs
    r.tolerance_percent = float(pct)
    mismatch = None
    try:
        r.run()
    except _Failed as f:
        mismatch = f.mismatch
    trace = tuple(TraceLine(_seconds(t), d, s) for t, d, s in r.trace)
    return Outcome(script.name, prof.name, mismatch is None, mismatch, trace)


def run_file(
    path: str | Path,
    profile: str | KernelProfile = "linux-6",
    tolerance_usecs: int | None = None,
    tick_phase_usecs: float | None = None,
    tolerance_percent: float | None = None,
) -> Outcome:
    """Parse and run the script in ``path`` (:func:`run_script`)."""
    return run_script(
        parse_file(path), profile, tolerance_usecs, tick_phase_usecs, tolerance_percent
    )

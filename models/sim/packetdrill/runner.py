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
``tbf`` qdisc on ``tun0`` (both before the connection).  The endpoint
uses the profile's congestion control (CUBIC's window from 10 segments on
``linux-6``), the peer's advertised window (``snd_wnd``, from each inbound
segment) and GSO: tun accepts a super-packet of up to ``size_goal`` bytes
(64 KiB less headers, at most half the peer's window) whole, and a
``tbf`` qdisc cuts it into MSS-sized segments.  TSO autosizing
(``tcp_tso_autosize``: smaller super-packets at low pacing rates) and
``tcp_tso_should_defer`` are not modelled.  A run still fails, with the
cause named, if the simulator sends beyond the peer's window or puts
more than ten packets in flight with a profile that has no window.

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
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from models import framing
from models.sim.endpoint import Endpoint
from models.sim.events import FS
from models.sim.kernels import KernelProfile, get_profile
from models.sim.packetdrill.parser import (
    Event,
    Packet,
    Script,
    ScriptError,
    Syscall,
    parse_file,
)
from models.sim.segment import Segment

__all__ = [
    "DEFAULT_TOLERANCE_USECS",
    "DEFAULT_TOLERANCE_PERCENT",
    "Mismatch",
    "Outcome",
    "run_script",
    "run_file",
]

from models.sim.packetdrill.outcome import (
    _FS_PER_US,
    _INIT_CWND,
    _INSTANT_BPS,
    _MSS_DEFAULT,
    _TS_OPTION_BYTES,
    DEFAULT_TOLERANCE_PERCENT,
    DEFAULT_TOLERANCE_USECS,
    Mismatch,
    Outcome,
    TraceLine,
    _App,
    _Failed,
    _Out,
    _seconds,
    _Tap,
    tun_truesize,
)
from models.sim.packetdrill.segments import _Segments
from models.sim.packetdrill.syscalls import _Syscalls
from models.sim.rules.skb import GSO_GOAL_BYTES


@dataclass
class _Run(_Segments, _Syscalls):
    """A script being run: the state (:class:`_State`) and its steps."""

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
        if not tx.cc.windowed and self.flight_segments() > _INIT_CWND:
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
            profile = dataclasses.replace(
                profile, rcv_wnd_bytes=rcv_wnd, rcv_window_clamp_bytes=self.window_clamp
            )
        self.clock = profile.clock(profile.hz, self.phase)
        mtu_mss = framing.mss(profile.loopback_mtu) + _TS_OPTION_BYTES  # MTU - 40
        mss = min(self.peer_mss, mtu_mss) - (_TS_OPTION_BYTES if self.peer_ts else 0)
        if mss < 1:
            raise ScriptError(self.script.name, line, f"the negotiated MSS is {mss} bytes")
        # a full segment's memory on tun sets the receive window's ratio
        profile = dataclasses.replace(profile, rcv_overhead_bytes=tun_truesize(mss) - mss)
        if self.tbf is None:
            rate, bucket = _INSTANT_BPS, None
        else:
            rate, bucket = self.tbf
        tap = _Tap(self.loop, rate, 0, 0, 0, 0, bucket)
        tap.on_send = self.on_send
        tap.out = lambda now, seg: None  # the peer is the script
        # tun offers GSO: tcp_xmit_size_goal, bounded to half the peer's
        # window (tcp_bound_to_half_wnd)
        wnd = self.snd_wnd
        goal = GSO_GOAL_BYTES
        if wnd:
            half = wnd // 2 if wnd > _MSS_DEFAULT else wnd
            goal = min(goal, half)
        ep = Endpoint(
            1,
            self.loop,
            self.clock,
            profile,
            mss,
            self.nodelay,
            tap,
            cc=profile.congestion(mss),
            size_goal=profile.size_goal_bytes or goal,
        )
        ep.app = _App()
        ep.sender.snd_wnd = wnd
        self.ep = ep
        cc = ep.sender.cc
        if cc.windowed:  # the handshake's RTT sample
            cc.srtt_us = max(1, (now - self.syn_time) // _FS_PER_US) << 3
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

"""One TCP endpoint: a sender, a receiver and a clock, wired together.

``receive`` is what the peer's channel delivers to (``tcp_rcv_
established``): the ACK field goes to the sender, the payload to the
receiver, then the sender pushes again if the ACK advanced
(``tcp_data_snd_check``) and the ACK rule decides
(``tcp_ack_snd_check``).  ``transmit`` is every segment's way out: it
carries the current ACK (``tcp_event_ack_sent``), counts towards
pingpong mode if it carries data (``tcp_event_data_sent``) and goes to
this host's channel.  A super-packet (``transmit_gso``) counts once
towards the ACK rule and leaves as MSS-sized segments.  Pushes that an
ACK releases are paid by the soft interrupt that carried the ACK
(``inbound``, the channel into this host: :meth:`Sender.charge_soft
<models.sim.sender_cpu.SendCpu.charge_soft>`).

Socket ownership (``Host.own_socket``): Linux lets one context at a time
work on a socket.  While the host's thread is inside a ``send()`` call
(``lock_sock``) a segment that reaches the socket is queued in its
backlog (``tcp_add_backlog``) and processed, in order, when the call
releases the socket (``release_sock``); the thread sets ``owned`` for the
call (:mod:`models.sim.owner`) and calls :meth:`Endpoint.release` at its end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.sim.events import FS
from models.sim.link_view import segment_state, shift_segment
from models.sim.receiver import Receiver
from models.sim.rules.ack import _PINGPONG_MAX, LinuxAck
from models.sim.rules.ack_adaptive import AdaptiveAck
from models.sim.segment import Segment
from models.sim.sender import CORK, Sender, TxCosts

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["Endpoint"]


class Endpoint:
    """The TCP state of one host (``side`` 0: client, 1: server).

    The attribute ``inbound`` holds the channel into this host.  Whoever wires
    the peers sets it; while it is ``None`` released transmissions are
    counted, not queued.

    Parameters
    ----------
    side : int
    loop : EventLoop
    clock : TickClock
        This host's tick clock (a rule object).
    profile : KernelProfile
        The rule classes and constants.
    mss : int
        Bytes per full segment, sent and advertised.
    nodelay : bool
        TCP_NODELAY on this socket.
    channel : Channel
        The outgoing direction.
    cc : object, optional
        The congestion rule (:mod:`models.sim.rules.cc`; default none).
    size_goal : int, optional
        Bytes per send buffer (default: the MSS).
    costs : TxCosts, optional
        Transmit CPU (default: none).
    """

    __slots__ = (
        "side",
        "loop",
        "clock",
        "channel",
        "sender",
        "receiver",
        "app",
        "trace",
        "replaying",
        "pure_acks",
        "inbound",
        "own_cpu",
        "ctx_cpu",
        "rx_ctx",
        "ack",
        "stock_ack",
        "adaptive",
        "owned",
        "backlog",
        "backlogged",
        "backlogged_data",
        "tsq_deferred",
        "tsq_writes",
        "owned_since",
        "owned_fs",
        "peer_window",
    )

    def __init__(
        self,
        side: int,
        loop,
        clock,
        profile,
        mss: int,
        nodelay: bool,
        channel,
        cc=None,
        size_goal: int | None = None,
        costs: TxCosts | None = None,
    ) -> None:
        self.side = side
        self.loop = loop
        self.clock = clock
        self.channel = channel
        self.app: Any = None  # the host's thread: on_data(now), busy, waking
        # what the capture point saw, Segment.seen entries, or None
        self.trace: list | None = None
        self.replaying = False  # (processing the backlog at the call's end)
        self.pure_acks = 0
        self.inbound: Any = None  # the channel into this host
        # the CPU of this host's thread when the two ends share a machine with a CPU
        # each (a pinned timer's work runs there), or None
        self.own_cpu: Any = None
        # while its receive soft interrupt reacts to a segment (one machine, a CPU each): the
        # CPU that runs it, which what it sends leaves from and what it pushes is charged to
        self.ctx_cpu: Any = None
        self.rx_ctx = False  # whether it does (Link.replies_on_rx_cpu)
        # Host.own_socket: the thread is inside a send() call (it owns the socket), and the
        # segments that arrived meanwhile, processed when the call ends; segments so held
        self.owned = False
        self.backlog: list = []
        self.backlogged = 0
        self.backlogged_data = 0  # (of them with data)
        self.tsq_deferred = False  # a pacing timer fired while owned: the release pushes
        self.tsq_writes = 0  # releases that did so
        self.owned_since = 0  # fs: when the call that owns the socket began
        self.owned_fs = 0  # fs its thread's calls owned it, in all
        self.receiver = Receiver(self, mss, profile.ack, profile)
        self.ack = self.receiver.ack  # the ACK rule (looked up once)
        # KernelProfile.peer_window: every segment it sends carries the window its receive
        # buffer advertises (Segment.wnd), and its sender keeps to the peer's
        self.peer_window = bool(getattr(profile, "peer_window", False))
        if self.peer_window and getattr(self.ack, "space", None) is None:
            raise ValueError(
                f"kernel profile {profile.name!r}: peer_window needs a receive buffer "
                "(rcv_buf_bytes, as linux-6-rwnd has), got none"
            )
        # its ack_sent, data_sent and check run inline for these exact classes
        # (not with an autotuned buffer: its measurements run in the rule's own methods)
        space = getattr(self.ack, "space", None)
        # (nor with the peer's window: a read may send the window's update, in the rule's own)
        self.stock_ack = (
            type(self.ack) in (LinuxAck, AdaptiveAck)
            and (space is None or space.cap is None)
            and not self.peer_window
        )
        if self.peer_window:
            self.ack.window_updates = True
        self.adaptive = type(self.ack) is AdaptiveAck  # (its _send_delayed_ack may cut ato)
        self.sender = Sender(
            self,
            mss,
            nodelay,
            profile.nagle(),
            profile.cork(),
            profile.probe(profile.hz, profile.rto_min_s),
            cc,
            size_goal,
            TxCosts() if costs is None else costs,
        )
        if self.peer_window and not self.sender.windowed:
            raise ValueError(
                f"kernel profile {profile.name!r}: peer_window needs a congestion control "
                "(tcp_snd_wnd_test runs with the window's), got none"
            )

    def receive(self, now: int, seg: Segment) -> None:
        if self.trace is not None and not self.replaying:  # (a backlogged one: on arrival)
            self.trace.append(seg.seen(seg.t_rx))
        if self.owned:  # tcp_add_backlog: the owner's call processes it when it ends
            self.backlog.append(seg)
            return
        sender = self.sender
        # (an ACK that does not advance snd_una changes nothing)
        advanced = False
        una = seg.ack
        wnd = seg.wnd
        if wnd >= 0:  # (the right edge of the window the peer offered so far)
            edge = sender.snd_una + sender.snd_wnd
        if una > sender.snd_una:
            if not (sender.windowed or sender.samples):  # Sender.on_ack, inline
                if una > sender.snd_nxt:
                    raise AssertionError(
                        f"peer acknowledged {una} beyond snd_nxt {sender.snd_nxt}"
                    )
                sender.snd_una = una
                advanced = True
            else:
                advanced = sender.on_ack(now, una)
        if wnd >= 0:  # tcp_ack_update_window: the window from the ACK on, in order
            opened = una + wnd > edge  # (a receiver never moves the right edge back)
            sender.snd_wnd = una + wnd - sender.snd_una
            advanced = advanced or opened  # (a window that opens lets held data go too)
        rcv = self.receiver
        ack = self.ack
        seq, end = seg.seq, seg.end
        if end != seq:  # Receiver.on_data, inline
            if seq != rcv.rcv_nxt:
                raise AssertionError(f"segment {seq}:{end} out of order (rcv_nxt {rcv.rcv_nxt})")
            rcv.rcv_nxt = end
            ack.data_received(now, end - seq, seg.psh)
            app = self.app
            if not (app.busy or app.waking):  # (else on_data does nothing)
                app.on_data(now)
        ctx = None
        if self.rx_ctx:  # this soft interrupt runs where the segment was received
            ctx = self.ctx_cpu = seg.cpu or self.inbound.cpu
        if advanced and sender.queue:
            sender.push(now, CORK if sender.corked else sender.mode)  # push_pending
            if sender.soft_cpu:
                sender.charge_soft(now)
        if ack.owed:  # tcp_ack_snd_check
            if not self.stock_ack:
                ack.check(now)
            elif (
                rcv.rcv_nxt - ack.rcv_wup > ack.rcv_mss
                and (ack.space is None or ack.space.grows(ack.rcv_mss))
            ) or (ack.quick and ack.pingpong < ack.pingpong_thresh):  # LinuxAck.check, inline
                self.send_ack(now)
            else:  # _send_delayed_ack, inline while it arms for ato itself
                ato = ack.ato or ack.delack_ticks
                t = ack.timer
                if self.adaptive and (ato > ack.delack_ticks or ato > ack.cap_ticks):
                    ack._send_delayed_ack(now)  # (AdaptiveAck cuts ato)
                elif t.entry is None:  # _arm_delayed_ack, inline: the timer is idle
                    t.arm_ticks(now, ato, self.clock)
                elif (
                    t.ticks > ato or (now - t.armed_at) * ack.hz > (t.ticks - (ato >> 2) - 1) * FS
                ):  # (else it keeps the earlier timer, not almost due)
                    ack._arm_delayed_ack(now, ato)
        if ctx is not None:
            self.ctx_cpu = None

    def release(self, now: int) -> None:
        """The thread's call ends (``release_sock``): process the segments that waited in the
        backlog, in the order they arrived."""
        self.owned = False
        self.owned_fs += now - self.owned_since
        backlog = self.backlog
        if backlog:
            self.backlog = []
            self.backlogged += len(backlog)
            self.replaying = True  # (traced when they arrived; what they release is traced)
            for seg in backlog:
                if seg.end != seg.seq:
                    self.backlogged_data += 1
                self.receive(now, seg)
            self.replaying = False
        if self.tsq_deferred:  # tcp_release_cb: the write the pacing timer left to the owner
            self.tsq_deferred = False
            self.tsq_writes += 1
            sender = self.sender
            sender.push_pending(now)
            sender.charge_soft(now, True)  # in the thread's context, on its CPU

    def _from_soft_irq(self, seg: Segment) -> None:
        """``seg`` is sent from the receive soft interrupt running on ``ctx_cpu``: it is
        received there too (``Segment.cpu``) when that is not its channel's CPU."""
        if self.ctx_cpu is not self.channel.cpu:
            seg.cpu = self.ctx_cpu

    def transmit(self, now: int, seq: int, end: int, psh: bool) -> None:
        """Send a data segment ``[seq, end)`` carrying the ACK."""
        rcv_nxt = self.receiver.rcv_nxt
        seg = Segment(self.side, seq, end, rcv_nxt, psh)
        if self.ctx_cpu is not None:
            self._from_soft_irq(seg)
        ack = self.ack
        if self.stock_ack:  # LinuxAck.ack_sent and .data_sent, inline
            if ack.space is not None:
                ack.space.advertise(ack.rcv_wup, ack.rcv_mss)
                if self.peer_window:
                    seg.wnd = ack.space.wnd
            ack.rcv_wup = rcv_nxt
            if ack.owed:
                if ack.quick:
                    ack.quick -= 1
                ack.owed = False
            ack.pushed = 0
            if ack.timer.entry is not None:
                ack.timer.cancel()
            ato = ack.ato
            if ato and (
                (now - ack.lrcv) * ack.hz <= (ato - 1) * FS
                or not ack.rcv.clock.ticks_at_least(ack.lrcv, now, ato)
            ):
                if ack.pingpong < _PINGPONG_MAX:
                    ack.pingpong += 1
        else:
            ack.ack_sent(now)
            ack.data_sent(now)
            if self.peer_window:
                seg.wnd = ack.space.wnd
        self.channel.send(now, seg)
        if self.trace is not None:
            self.trace.append(seg.seen(now))

    def transmit_gso(self, now: int, seq: int, end: int, psh: bool, mss: int) -> None:
        """Send ``[seq, end)`` as one super-packet: MSS-sized segments
        carrying the ACK, PSH on the last (``tcp_gso_segment``)."""
        rcv = self.receiver
        ack = rcv.ack
        ack.ack_sent(now)
        ack.data_sent(now)
        seg = Segment(self.side, seq, end, rcv.rcv_nxt, psh)
        if self.peer_window:
            seg.wnd = ack.space.wnd
        if self.ctx_cpu is not None:
            self._from_soft_irq(seg)
        self.channel.send_gso(now, seg, mss, self.trace)

    def send_ack(self, now: int) -> None:
        """A pure ACK (``tcp_send_ack``)."""
        nxt = self.sender.snd_nxt
        rcv_nxt = self.receiver.rcv_nxt
        seg = Segment(self.side, nxt, nxt, rcv_nxt, False)
        if self.ctx_cpu is not None:
            self._from_soft_irq(seg)
        ack = self.ack
        if self.stock_ack:  # LinuxAck.ack_sent, inline
            if ack.space is not None:
                ack.space.advertise(ack.rcv_wup, ack.rcv_mss)
                if self.peer_window:
                    seg.wnd = ack.space.wnd
            ack.rcv_wup = rcv_nxt
            if ack.owed:
                if ack.quick:
                    ack.quick -= 1
                ack.owed = False
            ack.pushed = 0
            if ack.timer.entry is not None:
                ack.timer.cancel()
        else:
            ack.ack_sent(now)
            if self.peer_window:
                seg.wnd = ack.space.wnd
        self.pure_acks += 1
        self.channel.send(now, seg)
        if self.trace is not None:
            self.trace.append(seg.seen(now))

    # -- the fast-forward's view (models.sim.fastforward) -------------------

    def cycle_parts(self) -> dict:
        return {"tx": self.sender, "rx": self.receiver}

    def cycle_state(self, view: View) -> Hashable:
        """Whether its thread owns the socket, a pacing write left to the release, and the
        segments in the backlog; its parts hold the rest."""
        if not (self.owned or self.backlog):
            return None
        return (
            self.owned,
            view.time(self.owned_since) if self.owned else None,
            self.tsq_deferred,
            tuple(segment_state(g, view) for g in self.backlog),
        )

    def cycle_counters(self) -> dict:
        return {
            "pure_acks": self.pure_acks,
            "backlogged": self.backlogged,
            "backlogged_data": self.backlogged_data,
            "tsq_writes": self.tsq_writes,
            "owned_fs": self.owned_fs,
        }

    def cycle_shift(self, shift: Shift) -> None:
        shift.grow(self)
        self.owned_since += shift.dt
        for g in self.backlog:
            shift_segment(g, shift)

"""bbr as a congestion-control rule of the simulated sender: its
window and its pacing (:class:`Bbr`), over the model of the path and
the rate that :mod:`models.sim.rules.bbr_model` keeps from the
delivery-rate samples of :mod:`models.sim.rules.rate`.

Each buffer that leaves moves the next departure ``len / pacing_rate``
later (``tcp_update_skb_after_send``, after the first 10 data segments,
forgiving up to half a buffer's time after idleness); a push that finds
the departure still ahead arms the pacing timer (``tcp_pacing_check``,
the first test of ``tcp_write_xmit``'s loop: data that Nagle would hold
arm it too) and resumes when it fires.  Arming it and its interrupt cost
CPU (``Host.timer_arm_cpu_s``, ``Host.timer_fire_cpu_s``): the send()
or soft interrupt that arms it pays the first; the second is the soft
interrupt's, and the push it allows runs after it.  Each ACK takes a
rate sample, updates the model and sets the window (``bbr_main``); a
``send()`` first checks whether the samples to come are
application-limited (``tcp_rate_check_app_limited``).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from models.sim.events import FS, Timer
from models.sim.rules.bbr_model import BW_RTTS, PROBE_BW, BbrModel
from models.sim.rules.cc import Reno
from models.sim.rules.rate import RateSampler

#: fs per nanosecond: the kernel keeps the departure time and the clock
#: it is checked against in whole nanoseconds (``tcp_wstamp_ns``,
#: ``tcp_clock_cache``)
NS_FS = FS // 10**9
_US = FS // 10**6  # fs per microsecond

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["Bbr"]


# rule: bbr
class Bbr(Reno):
    """bbr's window and pacing (:class:`~models.sim.rules.bbr_model.BbrModel`
    over the delivery-rate samples of
    :class:`~models.sim.rules.rate.RateSampler`; see the modules) on
    Reno's bookkeeping of the flight and srtt; bbr sets
    ``cong_control``, so neither Reno's growth nor a restart after idle
    applies."""

    #: Resolution of the rate samples' clock in fs, the kernel's microsecond
    #: (``tcp_mstamp``).  A run then repeats only on the same phase of the
    #: microsecond, which a cycle of simulated costs seldom has, so tests of
    #: the fast-forward set 1 (exact times) to have runs that repeat.
    stamp_fs = _US

    __slots__ = (
        "model",
        "rs",
        "wstamp",
        "segs_out",
        "timer",
        "timer_arm_fs",
        "timer_fire_fs",
        "arm_waits",
        "fire_once",
        "held",
        "timer_arms",
        "flight_max",
        "pinned_own",
        "firing_own",
        "writes",
    )

    def __init__(
        self,
        init_cwnd: int,
        mss: int,
        ssthresh: int | None,
        restart_after_idle: bool = True,
        rto_min: int = FS // 5,
        rng_seed: int = 0,
    ) -> None:
        super().__init__(init_cwnd, mss, ssthresh, False, rto_min)
        self.model = BbrModel(rng_seed)
        # (the jiffy: the clock's, once bound)
        self.rs = RateSampler(jiffy_fs=FS // 250, stamp_fs=self.stamp_fs)
        self.wstamp = 0  # fs: tp->tcp_wstamp_ns, the next departure
        self.segs_out = 0  # tp->data_segs_out
        self.timer: Timer | None = None  # the pacing timer (bound later)
        # CPU of arming it (Host.timer_arm_cpu_s, set by the wiring)
        self.timer_arm_fs = 0
        self.timer_arms = 0  # times it was armed
        # a statistic: the most packets in flight after a buffer left
        self.flight_max = 0
        # whether it was armed on the CPU of the host's own thread: in its
        # send(), in the soft interrupt of a timer pinned there, or in a
        # receive soft interrupt that ran there
        self.pinned_own = False
        self.firing_own = False  # (while such a timer's push runs)
        # CPU of its interrupt when it fires (Host.timer_fire_cpu_s)
        self.timer_fire_fs = 0
        # Host.pacing_arm_waits: a send() that arms the timer stays in
        # the call until it fires; with Host.pacing_interrupt_once
        # (fire_once) the interrupt comes after the arming and is counted
        # once, in the wait (held: the pending timer was so armed)
        self.arm_waits = False
        self.fire_once = False
        self.held = False
        self.model.init_rate(init_cwnd, mss, 0)
        # a list to record (fs, bytes written but not sent, write_seq)
        # at the start of each send() the run simulates, or None (as the
        # model's trace: nothing in a fast-forward)
        self.writes: list | None = None

    def handshake(self, rtt_fs: int) -> None:
        """The handshake's round trip (``rtt_fs`` fs) before any data: srtt
        (Reno's bookkeeping), the minimum RTT (``tcp_min_rtt``, which
        ``bbr_init`` copies), and the first pacing rate, the initial window
        over srtt at the start-up gain (``bbr_init_pacing_rate_from_rtt``),
        not over the 1 ms assumed without a sample."""
        super().handshake(rtt_fs)
        m = rtt_fs if rtt_fs >= _US else self.rs.jiffy_fs  # tcp_update_rtt_min
        self.rs.rtt_min_fs = m
        self.model.min_rtt_fs = m
        self.model.init_rate(self.cwnd, self.mss, self.srtt_us >> 3)

    def bind(self, sender) -> None:
        """Attach the pacing timer to ``sender``'s loop; one jiffy of its
        clock is an RTT sample of 0 us."""
        self.sender = sender
        self.timer = Timer(sender.loop, self._on_pace)
        hz = getattr(getattr(sender, "clock", None), "hz", 250)
        self.rs.jiffy_fs = FS // hz  # one jiffy, fs

    def rate(self) -> int:
        """Pacing rate, bytes per second."""
        return max(1, self.model.rate)

    def paced(self, sender, now: int) -> bool:
        """``tcp_pacing_check``, the first test of ``tcp_write_xmit``'s loop
        (before the windows and Nagle): the next buffer may not leave before
        ``wstamp``; arm the pacing timer for then if it is not armed.
        Both are compared in whole nanoseconds, as the kernel keeps them:
        a departure less than a nanosecond ahead is not ahead."""
        if self.wstamp // NS_FS <= now // NS_FS:
            return False
        t = self.timer
        if t is not None and t.entry is None:
            # HRTIMER_MODE_ABS_PINNED_SOFT: it fires on the arming CPU,
            # the thread's own when armed in its send(), in a timer pinned
            # there, or in a soft interrupt run there
            ep = getattr(sender, "ep", None)
            ctx = getattr(ep, "ctx_cpu", None)
            in_send = getattr(sender, "in_send", False)
            self.pinned_own = (
                in_send
                or self.firing_own
                or (ctx is not None and ctx is getattr(ep, "own_cpu", None))
            )
            cost = self.timer_arm_fs
            if cost:  # the send() that arms it pays, or the soft interrupt
                if in_send:
                    sender.thread_cpu += cost
                else:
                    sender.soft_cpu += cost
            # hrtimer_start: the CPU's next event, reprogrammed; the
            # release runs after the timer's interrupt (timer_fire_fs)
            due = self.wstamp
            waits = self.arm_waits and in_send
            self.held = waits and self.fire_once
            if self.held:
                # Host.pacing_interrupt_once: the interrupt cannot come
                # before the call has reprogrammed the timer (its CPU so
                # far, the arming included; loop.now: when it began)
                done = sender.loop.now + sender.thread_cpu
                if done > due:
                    due = done
            t.arm(due + self.timer_fire_fs)
            self.timer_arms += 1
            if waits:
                # Host.pacing_arm_waits: the CPU comes back to the call
                # only with the timer's interrupt: the call's CPU runs on
                # to the expiry, the interrupt's end; unless held, _on_pace
                # charges the interrupt again, a known double count
                # standing in for the call's work after it
                wait = t.expires - sender.loop.now - sender.thread_cpu
                if wait > 0:
                    sender.thread_cpu += wait
        return True

    def writing(self, sender, now: int) -> None:
        """``tcp_rate_check_app_limited`` at the start of a ``send()``."""
        if self.writes is not None:
            seq = sender.write_seq
            self.writes.append((now, seq - sender.snd_nxt, seq))
        ch = getattr(sender, "channel", None)
        queued = ch is not None and ch.tx_backlog(now)[0] > 0
        self.rs.check_app_limited(
            sender.write_seq - sender.snd_nxt,
            self.mss,
            queued,
            self.packets_out,
            self.cwnd,
        )

    def sent(self, sender, now: int, start: int, end: int, nsegs: int) -> None:
        nbytes = end - start
        if not self.packets_out:  # CA_EVENT_TX_START
            self.model.tx_start(
                now,
                self.rs.app_limited != 0,
                self.mss,
                self.srtt_us >> 3,
                self.cwnd,
            )
        self.rs.sent(now, self.packets_out)
        super().sent(sender, now, start, end, nsegs)
        if self.packets_out > self.flight_max:
            self.flight_max = self.packets_out
        prior = self.wstamp
        if prior < now:
            self.wstamp = now
        self.segs_out += nsegs
        if self.segs_out >= 10:  # tcp_update_skb_after_send
            # bytes at bytes/s -> whole ns (the kernel's division) -> fs
            len_fs = nbytes * 10**9 // self.rate() * NS_FS
            credit = self.wstamp - prior
            len_fs -= min(len_fs // 2, credit)
            self.wstamp += len_fs

    def acked(self, now: int, ack: int) -> None:
        skbs = 0
        for e, _t, _k in self.rtx:
            if e > ack:
                break
            skbs += 1
        if not skbs:
            return
        prior_in_flight = self.packets_out
        self.delivered(now, ack)  # srtt, then the sample (tcp_ack's order)
        rs = self.rs
        sample = rs.acked(
            now, skbs, prior_in_flight - self.packets_out, prior_in_flight
        )
        wait = self.wstamp - now
        self.cwnd = self.model.on_ack(
            sample,
            rs.delivered,
            rs.delivered_fs,
            self.packets_out,
            wait if wait > 0 else 0,
            self.mss,
            self.srtt_us >> 3,
            self.cwnd,
        )

    def _on_pace(self, now: int, _arg: object) -> None:
        sender = self.sender
        if sender is not None:
            # tcp_pace_kick: the interrupt's CPU, then the push it allows,
            # on the CPU the timer is pinned to: the thread's own if armed
            # there (one machine, a CPU each), else the soft interrupt's
            own = self.firing_own = self.pinned_own
            if self.held:  # the held call has paid for the interrupt
                self.held = False
            else:
                sender.soft_cpu += self.timer_fire_fs
            ep = getattr(sender, "ep", None)
            if getattr(
                ep, "owned", False
            ):  # tcp_tsq_handler: the owner's release writes
                ep.tsq_deferred = True
            elif sender.queue:
                sender.push_pending(now)
            self.firing_own = False
            sender.charge_soft(now, own)

    # end rule: bbr

    def cycle_parts(self) -> dict:
        return {} if self.timer is None else {"timer": self.timer}

    def cycle_counters(self) -> dict:
        m = self.model
        return {
            **Reno.cycle_counters(self),
            "delivered": self.rs.delivered,
            "rtt_cnt": m.rtt_cnt,
            "timer_arms": self.timer_arms,
        }

    def cycle_state(self, view: View) -> Hashable:
        # (a past departure still sets the credit of the next one)
        m, rs = self.model, self.rs
        d, r = rs.delivered, m.rtt_cnt
        at = view.time
        al = rs.app_limited
        # the phase's age matters only until it exceeds the minimum RTT
        # (the next ACK's delivery time is later still): then "full"
        since = view.now - m.cycle_fs
        age: int | str = -since
        if m.mode != PROBE_BW or (
            m.min_rtt_fs is not None and since > m.min_rtt_fs
        ):
            age = "full"
        return (
            Reno.cycle_state(self, view),
            # the rate sampler floors times to its clock's resolution: a
            # repeat must fall on the same phase of it
            view.now % self.rs.stamp_fs,
            self.wstamp - view.now,
            min(self.segs_out, 10),
            self.pinned_own,
            self.held,
            (
                m.mode,
                m.pacing_gain,
                m.cycle_idx,
                age,
                m.rate,
                m.has_seen_rtt,
            ),
            # a sample more than the filter's window old is replaced
            # at the next update whatever its age: "old"
            tuple(
                (t - r if r - t <= BW_RTTS else "old", v) for t, v in m.bw.s
            ),
            (
                m.next_rtt_delivered - d,
                m.round_start,
                m.full_bw,
                m.full_bw_cnt,
            ),
            (m.full_bw_reached, m.min_rtt_fs, rs.rtt_min_fs),
            (
                at(m.ack_epoch_fs),
                m.ack_epoch_acked,
                tuple(m.extra_acked),
                m.extra_win_rtts,
                m.extra_win_idx,
            ),
            (
                at(rs.delivered_fs),
                at(rs.first_tx_fs),
                al if al <= 0 else al - d,
            ),
            tuple(
                (p - d, at(pu), at(fu), lim, at(tx))
                for p, pu, fu, lim, tx in rs.snaps
            ),
        )

    def cycle_shift(self, shift: Shift) -> None:
        m, rs = self.model, self.rs
        dd = shift.grown("delivered") - rs.delivered
        dr = shift.grown("rtt_cnt") - m.rtt_cnt
        dt = shift.dt
        super().cycle_shift(shift)  # (sets the counters)
        m.rtt_cnt = shift.grown("rtt_cnt")
        rs.delivered = shift.grown("delivered")
        self.timer_arms = shift.grown("timer_arms")
        self.wstamp += dt  # (segs_out matters only below 10)
        m.bw.s = [(t + dr, v) for t, v in m.bw.s]
        m.next_rtt_delivered += dd
        m.cycle_fs += dt
        m.ack_epoch_fs += dt
        rs.delivered_fs += dt
        rs.first_tx_fs += dt
        if rs.app_limited > 0:
            rs.app_limited += dd
        rs.snaps = deque(
            (p + dd, pu + dt, fu + dt, lim, tx + dt)
            for p, pu, fu, lim, tx in rs.snaps
        )

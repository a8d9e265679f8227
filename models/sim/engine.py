"""Build one scenario's components, run the event loop, collect the
result.

The wiring, as in ns.py: each endpoint's outgoing :class:`~models.sim.link.Channel`
delivers to the peer endpoint's ``receive`` (its ``out``); each endpoint
calls its host's thread when data arrives.  Nothing reaches into another
component: statistics are read through each component's attributes
once the run is over.
"""

from __future__ import annotations

import time as _time

from models import framing
from models.rng import PCG64
from models.sim import handshake
from models.sim.cpu import CpuPool
from models.sim.ends import ClientThread, ServerThread
from models.sim.events import FS, EventLoop, Timer, fs_to_seconds, seconds_to_fs
from models.sim.exchange import Exchange
from models.sim.fastforward import Bases, FastForward
from models.sim.result import DIRECTIONS, DirectionStats, HostStats, Result, TraceRecord
from models.sim.scenario import Scenario
from models.sim.wakeups import WakerCost, timer_late
from models.sim.wiring import channel, endpoint, handshake_windows, tx_cost

__all__ = ["Simulation", "simulate", "run"]

#: With ``run.start`` established, how long before the run both threads went to sleep, fs: a
#: second, longer than any idle a wake-up's latency depends on (``Host.wake_curve_s`` ends at 1 s).
LONG_IDLE_FS = FS


class Simulation:
    """The built model of one scenario; use :func:`simulate` unless you
    want to step it yourself."""

    def __init__(self, scenario: Scenario) -> None:
        if not isinstance(scenario, Scenario):
            raise ValueError(f"scenario must be a Scenario, got {scenario!r}")
        sc = self.scenario = scenario
        profile = sc.profile
        rng = self.rng = PCG64(sc.run.seed)
        tick = -(-FS // profile.hz)  # fs per tick
        phase_s = sc.kernel.tick_phase_s
        if phase_s is None:
            phase_s = rng.uniform(0.0, profile.tick_s)
        self.tick_phase_s = phase_s
        phase = min(seconds_to_fs(phase_s), tick - 1)
        self.clock = profile.clock(profile.hz, phase)
        loop = self.loop = EventLoop()
        link, c, s = sc.link, sc.client, sc.server
        rate = round(link.bandwidth_bps)  # whole bits/s
        fs = seconds_to_fs
        # request direction: client transmit path, server receive path
        self.c2s = channel(loop, rate, c, s, link)
        self.s2c = channel(loop, rate, s, c, link)
        mss = link.mss
        # both ends on one machine with a CPU each, the frames' soft interrupts on their senders'
        apart = not link.shared_cpus and link.softirq_on_sender
        self.client_ep = endpoint(0, loop, self.clock, profile, mss, c, self.c2s, apart)
        self.server_ep = endpoint(1, loop, self.clock, profile, mss, s, self.s2c, apart)
        handshake_windows(self.client_ep, self.server_ep)
        self.c2s.out = self.server_ep.receive
        self.s2c.out = self.client_ep.receive
        self.client_ep.inbound = self.s2c  # its soft interrupt
        self.server_ep.inbound = self.c2s
        # a frame that waited in the qdisc tells its sender when it leaves
        self.c2s.sender = self.client_ep.sender
        self.s2c.sender = self.server_ep.sender
        factor = None
        if sc.run.jitter:
            spread = sc.run.jitter

            def factor() -> float:
                return rng.uniform(1 - spread, 1 + spread)

        def wake_extra(host):
            """Random extra wake-up latency of ``host``, fs, or None."""
            top = fs(host.wake_spread_s)
            if not top:
                return None
            return lambda: int(rng.random() * top)  # uniform [0, top)

        def wake_late(host):
            """Whether a brief-idle wake-up of ``host`` is late (a draw), or None."""
            share = host.wake_late_share
            if not share:
                return None
            return lambda: rng.random() < share

        cpu = (
            CpuPool(link.shared_cpus, link.run_to_block, link.wake_preempt)
            if link.shared_cpus
            else None
        )
        self.cpu = cpu
        cpu_c = cpu_s = cpu  # the CPUs of each host's thread (None: its own, work at once)
        if apart:  # a CPU each, with the frames they send
            cpu_c, cpu_s = CpuPool(1), CpuPool(1)
        # seconds per message, with the hand-off between the CPUs of one machine
        proc_c = c.proc_s + (c.handoff_cpu_s if apart else 0.0)
        proc_s = s.proc_s + (s.handoff_cpu_s if apart else 0.0)
        # one machine: a frame's receive soft interrupt runs on the sender's CPU(s)
        self.c2s.cpu, self.s2c.cpu = cpu_c, cpu_s
        if apart:  # a timer pinned to a thread's CPU (bbr's pacing) does its work there
            self.client_ep.own_cpu, self.server_ep.own_cpu = cpu_c, cpu_s
            if link.replies_on_rx_cpu:  # a soft interrupt's sends leave from its CPU
                self.client_ep.rx_ctx = self.server_ep.rx_ctx = True
        wl = sc.workload
        exchange = wl.graph
        setup = (
            Exchange.chain((wl.setup_request_writes, wl.setup_response_writes))
            if wl.setup_request_writes
            else None
        )
        self.server = ServerThread(
            loop,
            self.server_ep,
            fs(proc_s),
            fs(s.wake_s),
            tx_cost(s),
            s,
            factor,
            exchange=exchange,
            setup=setup,
            client_proc=fs(proc_c),
            wake_cpu=fs(s.wake_cpu_s),
            wake_extra=wake_extra(s),
            wake_late=wake_late(s),
            cpu=cpu_s,
            wake_fast=fs(s.wake_fast_s),
            wake_fast_idle=fs(s.wake_fast_idle_s),
            wake_curve=tuple((fs(i), fs(w)) for i, w in s.wake_curve_s),
            wake_late_latency=fs(s.wake_late_s),
            read_byte=fs(s.recv_byte_cpu_s),
        )
        self.client = ClientThread(
            loop,
            self.client_ep,
            fs(proc_c),
            fs(c.wake_s),
            tx_cost(c),
            c,
            factor,
            wake_cpu=fs(c.wake_cpu_s),
            wake_extra=wake_extra(c),
            wake_late=wake_late(c),
            cpu=cpu_c,
            wake_fast=fs(c.wake_fast_s),
            wake_fast_idle=fs(c.wake_fast_idle_s),
            wake_curve=tuple((fs(i), fs(w)) for i, w in c.wake_curve_s),
            wake_late_latency=fs(c.wake_late_s),
            read_byte=fs(c.recv_byte_cpu_s),
            qd=wl.qd,
            exchange=exchange,
            setup=setup,
            server_proc=fs(proc_s),
            setup_server_proc=fs(wl.setup_proc_s),
            target=sc.warmup + sc.run.ops,
        )
        self.server.peer, self.client.peer = self.client, self.server
        self.client_ep.app, self.server_ep.app = self.client, self.server
        for host, ep in ((c, self.client_ep), (s, self.server_ep)):
            timer = getattr(ep.ack, "timer", None)  # a rule of the reader's may have none
            if host.timer_spread_s and isinstance(timer, Timer):
                timer.late = timer_late(rng, fs(host.timer_spread_s), ep.app)
            ep.sender.cpu_first = host.send_cpu_first
            ep.sender.clock_in_call = host.xmit_clock_in_call
            if host.handshake_rtt:  # SYN and SYN-ACK (or SYN-ACK and ACK) on idle paths
                rtt = fs(host.handshake_rtt_s) or handshake.round_trip_fs(self.c2s, self.s2c)
                ep.sender.cc.handshake(rtt)
            if host.waker_curve_s:  # this host's send() pays for waking the peer's thread
                curve = tuple((fs(i), fs(w)) for i, w in host.waker_curve_s)
                ep.sender.waker = WakerCost(curve, ep.app.peer)
                ep.sender.soft_waker = host.soft_waker
                ep.app.peer.woken_horizon = curve[-1][0]
        self.trace: list | None = None
        if sc.run.trace:
            self.trace = []
            ep = self.client_ep if sc.run.trace_at == "client" else (self.server_ep)
            ep.trace = self.trace
        if sc.run.check:
            loop.after_event = self.check_invariants
        if sc.run.start == "established":
            for th in (self.client, self.server):
                th.idle_since = -LONG_IDLE_FS  # asleep long before the run
                th.ep.ack.established()
        loop.schedule(0, self.client.start)
        self.skipped_ops = 0
        self.cycle_ops = 0
        self.fast_forward_off_reason: str | None = None

    def check_invariants(self, now: int) -> None:
        """``AssertionError`` if an invariant fails (after every event
        when ``run.check``)."""
        for ep, peer in ((self.client_ep, self.server_ep), (self.server_ep, self.client_ep)):
            tx, rx = ep.sender, peer.receiver
            # acknowledged <= received by the peer <= sent <= written
            assert tx.snd_una <= rx.rcv_nxt <= tx.snd_nxt <= tx.write_seq, (
                ep.side,
                tx.snd_una,
                rx.rcv_nxt,
                tx.snd_nxt,
                tx.write_seq,
            )
            assert rx.copied_seq <= rx.rcv_nxt
            unsent = sum(b.end - b.start for b in tx.queue)
            assert tx.snd_nxt + unsent == tx.write_seq, (
                "the send queue does not account for every byte"
            )
        cl = self.client
        if cl.issued:
            assert cl.issued - cl.completed == cl.qd, (
                f"{cl.issued - cl.completed} operations in flight, qd {cl.qd}"
            )
            assert len(cl.issue_time) == cl.qd
        assert self.server.next_op <= cl.issued

    def check_totals(self) -> None:
        """``AssertionError`` if the run's totals disagree (at the end
        and after a fast-forward, when ``run.check``): every frame is a
        data segment or a pure ACK, every byte sent was carried once,
        every wake-up began a busy period that ended or still runs, one
        completion time and one round trip per completion, in order."""
        for ep, ch in ((self.client_ep, self.c2s), (self.server_ep, self.s2c)):
            tx = ep.sender
            assert ch.frames == tx.data_segments + ep.pure_acks, (ep.side, "frames")
            assert ch.data_frames == tx.data_segments, (ep.side, "data frames")
            assert ch.payload_bytes == tx.snd_nxt - 1, (ep.side, "payload bytes")
            assert ch.gro_merged <= ch.data_frames
            assert tx.probes <= tx.data_segments
            assert tx.hold_fs <= tx.hold_max * tx.data_segments
            assert 0 <= ep.receiver.ack.delayed_acks <= ep.pure_acks
        for th in (self.client, self.server):
            ended = sum(th.busy_counts.values()) + th.empty_wakeups
            assert th.wakeups == ended + th.busy, (th.wakeups, ended, th.busy)
            assert th.thread_segments <= th.ep.sender.data_segments
        cl = self.client
        assert cl.completed == len(cl.done_time) == len(cl.rtts)
        assert all(a <= b for a, b in zip(cl.done_time, cl.done_time[1:])), "completion order"
        assert all(r >= 0 for r in cl.rtts), "a round trip ended before it began"
        assert not cl.done_time or cl.done_time[-1] <= self.loop.now
        served = cl.completed * cl.exchange.awaited()  # messages each completion needed
        assert self.server.served >= served, (self.server.served, served)

    def _check_jump(self) -> None:
        self.check_invariants(self.loop.now)
        self.check_totals()

    # -- the fast-forward (models.sim.fastforward) ---------------------------

    def cycle_parts(self) -> dict:
        """The parts that make up the run's state (each owns more)."""
        return {
            "clock": self.clock,
            "c2s": self.c2s,
            "s2c": self.s2c,
            "client_ep": self.client_ep,
            "server_ep": self.server_ep,
            "client": self.client,
            "server": self.server,
        }

    def cycle_bases(self) -> Bases:
        """The bytes written by each host and the operations issued."""
        return (
            (self.client_ep.sender.write_seq, self.server_ep.sender.write_seq),
            self.client.issued,
        )

    def run(self) -> Result:
        """Run to the scenario's number of operations."""
        t0 = _time.perf_counter()
        cl = self.client
        loop = self.loop
        check = self.scenario.run.check
        ff = None
        reason = self.fast_forward_blocker()
        if reason is None:
            ff = FastForward(self, loop, cl.target, self._check_jump if check else None)
            reason = ff.off_reason
            if reason is None:
                cl.pause_every = 1
            else:
                ff = None
        budget = self.scenario.run.max_events
        self._check_budget(budget, ff is not None)
        while True:
            try:
                loop.run(max_events=max(1, budget - loop.events))
            except RuntimeError:
                raise ValueError(
                    f"run.max_events: the run needed more than {budget:,} events "
                    f"({cl.completed:,} of {cl.target:,} operations done); lower run.ops or "
                    "the sizes, or raise run.max_events"
                ) from None
            if cl.completed >= cl.target or not loop.pending_any():
                break
            if ff is None:
                continue
            if ff.observe(cl.completed, loop.now):
                cl.pause_every = ff.every
                if ff.next_in:
                    cl.pause_in, ff.next_in = ff.next_in, 0
            else:
                cl.pause_every = 0
                reason = ff.off_reason
                self.skipped_ops, self.cycle_ops = ff.skipped_ops, ff.cycle_ops
                ff = None
        if cl.completed < cl.target:  # no event left: a deadlock, never a result
            raise RuntimeError(
                f"the simulation ran out of events with {cl.completed:,} of {cl.target:,} "
                "operations done: a deadlock in the model (a bug; please report the scenario)"
            )
        self.fast_forward_off_reason = reason
        if check:
            self.check_invariants(loop.now)
            self.check_totals()
        return self._result(_time.perf_counter() - t0)

    def events_per_op(self) -> int:
        """A lower bound on the events one operation takes: two for the threads, and one for
        every second frame of its messages (measured: 4.6 events for a 512-byte read's two
        frames, 438 for a 1 MiB read's 726 frames at MTU 1500)."""
        sc = self.scenario
        mtu = sc.link.mtu
        frames = sum(framing.frames(sum(leg), mtu) for leg in sc.workload.exchange)
        return 2 + frames // 2

    def _check_budget(self, budget: int, fast_forward: bool) -> None:
        """Refuse at once a run that cannot fit its event budget: every operation when the run
        cannot be fast-forwarded, else at least the warm-up and a few rounds of the queue."""
        sc = self.scenario
        total = sc.warmup + sc.run.ops
        raw = min(total, sc.warmup + 3 * sc.workload.qd + 20) if fast_forward else total
        need = raw * self.events_per_op()
        if need > budget:
            raise ValueError(
                f"run.max_events: this run needs at least {need:,} events ({raw:,} operations "
                f"of {self.events_per_op():,} events each) and the budget is {budget:,}; lower "
                "run.ops, the queue depth or the sizes, or raise run.max_events"
            )

    def fast_forward_blocker(self) -> str | None:
        """Why the scenario rules the fast-forward out (``None``: it does
        not): switched off, or a random draw, or a trace to record."""
        sc = self.scenario
        r = sc.run
        if not r.fast_forward:
            return "run.fast_forward is false"
        if r.jitter:
            return "run.jitter draws random processing times"
        if r.trace:
            return "run.trace records every packet"
        for side in ("client", "server"):
            if sc.host(side).wake_spread_s:
                return f"{side}.wake_spread_s draws random wake-up latencies"
            if sc.host(side).wake_late_share:
                return f"{side}.wake_late_share draws which wake-ups are late"
        return None

    def _result(self, wall: float) -> Result:
        sc = self.scenario
        cl, sv = self.client, self.server
        end = self.loop.now
        w = sc.warmup
        done = cl.done_time
        measured = len(done) - w
        if measured > 0 and w > 0:
            span = done[-1] - done[w - 1]
            iops = measured * FS / span if span > 0 else float("inf")
        elif measured > 0:
            iops = measured * FS / done[-1] if done[-1] > 0 else (float("inf"))
        else:
            iops = 0.0
        span = end if end > 0 else 0
        directions = {}
        for d, ep, ch in zip(DIRECTIONS, (self.client_ep, self.server_ep), (self.c2s, self.s2c)):
            tx = ep.sender
            directions[d] = DirectionStats(
                frames=ch.frames,
                data_segments=tx.data_segments,
                pure_acks=ep.pure_acks,
                delayed_acks=ep.receiver.ack.delayed_acks,
                probes=tx.probes,
                bytes_sent=tx.snd_nxt - 1,
                bytes_acked=tx.snd_una - 1,
                link_utilization=ch.utilization(span),
                hold_mean_s=(
                    fs_to_seconds(tx.hold_fs) / tx.data_segments
                    if tx.data_segments
                    else float("nan")
                ),
                hold_max_s=fs_to_seconds(tx.hold_max),
            )
        hosts = {}
        pool = self.cpu
        held = pool.held if pool is not None and pool.hold and pool.n == 1 else None  # (one CPU)
        for name, th, inbound in (("client", cl, self.s2c), ("server", sv, self.c2s)):
            # (transmit CPU not spent inside the thread's own send() calls,
            # of ACK-clocked, TX-completion and timer pushes, is in it)
            soft = inbound.softirq_busy
            hosts[name] = HostStats(
                busy_counts=dict(sorted(th.busy_counts.items())),
                open_busy=th.count if th.busy else 0,
                cpu_utilization=th.cpu_fs / span if span else float("nan"),
                softirq_utilization=soft / span if span else float("nan"),
                wakeups=th.wakeups,
                empty_wakeups=th.empty_wakeups,
                held_cpu_s=None if held is None else fs_to_seconds(held[th.side]),
                preempted=pool.preempted[th.side] if pool is not None and pool.preempt else None,
                backlogged=th.ep.backlogged,
                received=inbound.frames - inbound.gro_merged,
                backlogged_data=th.ep.backlogged_data,
                received_data=inbound.data_frames - inbound.gro_merged,
                owned_s=fs_to_seconds(th.ep.owned_fs),
            )
        trace = []
        if self.trace is not None:
            for t, src, psh, seq, end_seq, ack in sorted(self.trace, key=lambda e: e[0]):
                trace.append(
                    TraceRecord(
                        fs_to_seconds(t),
                        "C > S" if src == 0 else "S > C",
                        "P." if psh else ".",
                        seq,
                        end_seq,
                        ack,
                        end_seq - seq,
                    )
                )
        return Result(
            scenario=sc,
            iops=float(iops),
            ops=max(measured, 0),
            rtts_s=tuple([r / FS for r in cl.rtts[w:]]),  # fs -> s
            sim_time_s=fs_to_seconds(end),
            directions=directions,
            hosts=hosts,
            events=self.loop.events,
            wall_time_s=wall,
            completed_total=cl.completed,
            in_flight=cl.issued - cl.completed,
            tick_phase_s=self.tick_phase_s,
            skipped_ops=self.skipped_ops,
            cycle_ops=self.cycle_ops,
            fast_forward_off_reason=self.fast_forward_off_reason,
            trace=trace,
        )


def simulate(scenario: Scenario | None = None, **parts) -> Result:
    """Simulate ``scenario`` (default: ``Scenario()``), with parts
    changed by keyword (``workload={"qd": 4}``).

    >>> r = simulate(run={"ops": 20})       # Nagle on: the 40 ms stall
    >>> 20 < r.iops < 30
    True
    >>> simulate(workload={"qd": 0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: workload.qd must be a whole number from 1 to 4096 ... got 0
    """
    sc = scenario if scenario is not None else Scenario()
    if parts:
        sc = sc.replace(**parts)
    return Simulation(sc).run()


#: Another name for :func:`simulate`.
run = simulate

"""Fast-forward: jump over exact repeats of a deterministic run.

A deterministic run settles, after a warm-up, into one repeating pattern
(chapters 4 and 6): the same events, at the same offsets, every ``K``
completions.  The detector compares the run's state after completions,
with every time taken relative to now, every sequence number relative to
the bytes written so far and every operation number relative to the
operations issued (:meth:`CycleSkipper.state`).  When a state comes
back, the run from the second sighting repeats the run from the first,
and so on for ever: the detector moves every component ``n`` cycles
ahead at once (times, sequence numbers, operation numbers, counters, the
per-operation lists) and the run goes on from there to its end.  The
numbers are those of the long run, exactly (integer time makes "the same
state" exact; ``tests/test_sim_properties.py`` checks the equality over
random scenarios).  One quantity depends on history from before the
first sighting: the messages a thread has handled in its current busy
period.  If the thread went idle between the sightings that count
repeats; if it never did, it grows by the same amount every cycle.

Ticks.  The state leaves out where ``now`` falls inside its timer tick.
That is sound only if nothing in the cycle depended on it: no timer
fired and every jiffy comparison had the same answer for any phase; the
clock counts the exceptions (``TickClock.sensitive``).  Otherwise a
repeat counts only if the tick phase repeats too (a cycle of whole
ticks, as a delayed-ACK stall is).

Which fields of each component are state, and how each is made
relative, is declared once here (:data:`FIELDS`); a test fails if a
component gains a field this module does not classify.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from models.sim.app import AppThread, ClientThread, ServerThread
from models.sim.cpu import CpuPool, OwnCpu
from models.sim.endpoint import Endpoint
from models.sim.events import FS, EventLoop, Timer
from models.sim.link import Channel
from models.sim.receiver import Receiver
from models.sim.rules import (
    Autocork,
    Cork,
    ImmediateAck,
    InterruptModeration,
    LinuxAck,
    PerWakeup,
    RtoMinProbe,
    SrttProbe,
    TickClock,
)
from models.sim.sender import Sender

__all__ = ["CycleSkipper", "FIELDS"]

#: How each field of each component enters the state and the jump:
#: ``"state"`` compared as is, ``"count"`` a statistic extrapolated
#: linearly, ``"config"`` fixed for the run, ``"special"`` handled by the
#: component's own code below, ``"transient"`` meaningless between events.
FIELDS: dict = {
    EventLoop: dict(
        _heap="special",
        _order="special",
        _dead="special",
        now="special",
        events="config",
        _stopped="transient",
        after_event="config",
    ),
    Timer: dict(
        loop="config",
        handler="config",
        entry="special",
        expires="special",
        armed_at="special",
        ticks="special",
    ),
    TickClock: dict(hz="config", phase="config", sensitive="special"),
    Channel: dict(
        loop="config",
        rate="config",
        tx_latency="config",
        rx_latency="config",
        prop="config",
        softirq="config",
        ack_softirq="config",
        rx="special",
        gro="config",
        out="config",
        free_at="special",
        softirq_free="special",
        busy="count",
        softirq_busy="count",
        frames="count",
        data_frames="count",
        payload_bytes="count",
        in_nic="special",
        nic_bytes="special",
        batch="special",
        batch_time="special",
        batch_event="special",
        gro_open="state",
        gro_size="state",
        gro_merged="count",
        bucket="config",
        tokens="special",
        tokens_at="special",
        _wire_fs="config",
    ),
    PerWakeup: dict(latency="config", wake_end="special"),
    InterruptModeration: dict(holdoff="config", last_irq="special"),
    Endpoint: dict(
        side="config",
        loop="config",
        clock="config",
        channel="config",
        sender="config",
        receiver="config",
        app="config",
        trace="config",
        pure_acks="count",
    ),
    Sender: dict(
        ep="config",
        loop="config",
        clock="config",
        channel="config",
        mss="config",
        mode="state",
        corked="state",
        nagle="config",
        cork="special",
        probe="special",
        write_seq="special",
        snd_nxt="special",
        snd_una="special",
        snd_sml="special",
        queue="special",
        probe_timer="special",
        data_segments="count",
        probes="count",
        hold_fs="count",
        hold_max="state",
        in_send="transient",
        sent_in_call="transient",
    ),
    Receiver: dict(
        ep="config",
        loop="config",
        clock="config",
        advmss="config",
        rcv_nxt="special",
        copied_seq="special",
        ack="special",
    ),
    LinuxAck: dict(
        rcv="config",
        delayed_acks="count",
        owed="state",
        rcv_wup="special",
        pushed="state",
        quick="state",
        pingpong="special",
        ato="state",
        lrcv="special",
        rcv_mss="state",
        last_seg_size="state",
        timer="special",
        advmss="config",
        delack_ticks="config",
        rto_ticks="config",
        rcv_wnd="config",
        max_quick="config",
        pingpong_thresh="config",
        hz="config",
    ),
    ImmediateAck: dict(rcv="config", delayed_acks="count", owed="state"),
    Autocork: dict(throttled="state", event="special"),
    Cork: dict(),
    RtoMinProbe: dict(rto_min_ticks="config", hz="config"),
    SrttProbe: dict(
        rto_min_ticks="config",
        hz="config",
        srtt_us="state",
        rto_min_us="config",
        unacked="special",
    ),
    OwnCpu: dict(),
    CpuPool: dict(n="config", free_at="special"),
    AppThread: dict(
        loop="config",
        ep="config",
        cpu="config",
        writes="special",
        unwritten="state",
        proc="config",
        wake="config",
        tx_cpu="config",
        wake_cpu="config",
        wake_extra="config",
        msg_more="config",
        msg_more_last="config",
        cork="config",
        flush_on_idle="config",
        quickack="config",
        factor="config",
        peer="config",
        expect="special",
        busy="state",
        waking="state",
        busy_start="special",
        count="special",
        busy_counts="count",
        empty_wakeups="count",
        wakeups="count",
        busy_fs="count",
        cpu_fs="count",
        thread_segments="count",
    ),
    ServerThread: dict(
        legs="config",
        setup_legs="config",
        client_proc="config",
        served="count",
        next_op="special",
        open_legs="special",
    ),
    ClientThread: dict(
        qd="config",
        legs="config",
        setup_legs="config",
        server_proc="config",
        setup_server_proc="config",
        target="config",
        pause_every="config",
        pause_in="transient",
        issued="special",
        completed="count",
        issue_time="special",
        done_time="special",
        rtts="special",
    ),
}


def _counts(obj: Any) -> list:
    """The ``"count"`` fields of ``obj`` (its class and bases)."""
    names = []
    for cls in type(obj).__mro__:
        names += [n for n, k in FIELDS.get(cls, {}).items() if k == "count"]
    return names


def _timer(t: Timer, now: int) -> Any:
    return (t.armed_at - now, t.ticks) if t.entry is not None else None


class _Obs:
    """Where the run was at a look, and its counters."""

    __slots__ = ("completed", "now", "sensitive", "counters", "bases", "n_done", "idles", "counts")

    def __init__(self, completed, now, sensitive, counters, bases, n_done, idles, counts) -> None:
        self.completed = completed
        self.now = now
        self.sensitive = sensitive
        self.counters = counters
        self.bases = bases
        self.n_done = n_done
        self.idles = idles  # busy periods each thread has ended
        self.counts = counts  # messages in each thread's open period


class _Plan:
    """A candidate cycle of ``k`` completions, checked at three points."""

    __slots__ = ("k", "exact", "next", "seen")

    def __init__(self, k: int, exact: bool, start: int) -> None:
        self.k = k
        self.exact = exact  # the tick phase must repeat too
        self.next = start  # the completion of the next look
        self.seen: list = []  # (state, subtick, observation)


class CycleSkipper:
    """Watches a :class:`~models.sim.engine.Simulation` and jumps.

    The engine calls ``observe`` after each completion (the client
    thread pauses the loop); it returns ``False`` once it has jumped or
    given up, after which the engine stops calling it.

    Looking at the whole state after every completion would cost as much
    as simulating.  So each completion records a cheap *signature* (a
    few numbers that equal states share); when a signature comes back
    after ``k`` completions, the full state is compared at that
    completion and ``k`` later (a ``_Plan``).
    """

    #: Failed candidate cycles after which candidates are tried less and
    #: less often (a run with no short cycle pays little for the search).
    PATIENCE = 24
    #: Completions after which the detector looks every 2nd, then every
    #: 4th ... (up to every 64th) completion.
    DENSE = 256

    def __init__(self, sim) -> None:
        self.sim = sim
        self.free: dict = {}
        self.exact: dict = {}
        self.plan: _Plan | None = None
        self.failed = 0
        self.skip = 0
        self.last_sensitive = -1
        c, s = sim.client_ep, sim.server_ep
        self.names = {
            id(sim.c2s): "c2s",
            id(sim.s2c): "s2c",
            id(sim.client): "client",
            id(sim.server): "server",
            id(c.sender): "client.tx",
            id(s.sender): "server.tx",
            id(c.sender.cork): "client.cork",
            id(s.sender.cork): "server.cork",
        }
        self.stateful = [
            sim.c2s,
            sim.s2c,
            c,
            s,
            c.sender,
            s.sender,
            c.receiver.ack,
            s.receiver.ack,
            sim.client,
            sim.server,
        ]
        self.count_names = [_counts(o) for o in self.stateful]
        clock = sim.clock
        # lrcv older than this cannot change any jiffy comparison
        self.far = (
            (c.receiver.ack.rto_ticks + 2) * -(-FS // clock.hz)
            if isinstance(c.receiver.ack, LinuxAck)
            else 0
        )

    # -- observing --------------------------------------------------------

    def observe(self) -> bool:
        sim = self.sim
        done = sim.client.completed
        now = sim.loop.now
        if self.plan is None:  # look less often, in time
            sim.client.pause_every = 1 << min(done // self.DENSE, 6)
        plan = self.plan
        if plan is not None and done >= plan.next:
            return self._look(plan, done, now)
        sensitive = sim.clock.sensitive
        sig = self.signature(now)
        xsig = (sig, sim.clock.subtick(now))
        if plan is None:
            if self.skip:
                self.skip -= 1
            else:
                prev = self.exact.get(xsig)
                if prev is not None:
                    self.plan = _Plan(done - prev[0], True, done)
                else:
                    prev = self.free.get(sig)
                    if prev is not None and prev[1] == sensitive:
                        self.plan = _Plan(done - prev[0], False, done)
                if self.plan is not None:
                    return self._look(self.plan, done, now)
        self.free[sig] = (done, sensitive)
        self.exact[xsig] = (done, sensitive)
        return True

    def signature(self, now: int) -> tuple:
        """A few numbers that two equal states share (cheap)."""
        sim = self.sim
        loop = sim.loop
        nxt = loop.next_time()
        first = -1 if nxt is None else nxt - now
        c2s, s2c = sim.c2s, sim.s2c
        c, s = sim.client_ep, sim.server_ep
        ct, st = c.sender, s.sender
        cl, sv = sim.client, sim.server
        oldest = min(cl.issue_time.values(), default=now)
        return (
            loop.live_count(),
            first,
            now - oldest,
            c2s.free_at - now,
            s2c.free_at - now,
            c2s.rx.wake_end - now,
            s2c.rx.wake_end - now,
            len(ct.queue),
            len(st.queue),
            ct.write_seq - ct.snd_nxt,
            st.write_seq - st.snd_nxt,
            ct.snd_nxt - ct.snd_una,
            st.snd_nxt - st.snd_una,
            c.receiver.rcv_nxt - c.receiver.copied_seq,
            s.receiver.rcv_nxt - s.receiver.copied_seq,
            c.receiver.ack.owed,
            s.receiver.ack.owed,
            getattr(c.receiver.ack, "quick", 0),
            getattr(s.receiver.ack, "quick", 0),
            cl.busy,
            sv.busy,
            cl.waking,
            sv.waking,
            len(cl.expect),
            len(sv.expect),
            cl.issued - sv.next_op,
        )

    def _look(self, plan: _Plan, done: int, now: int) -> bool:
        """Compare the full state at the plan's next point."""
        sim = self.sim
        threads = (sim.client, sim.server)
        obs = _Obs(
            done,
            now,
            sim.clock.sensitive,
            self.counters(),
            self.bases(),
            len(sim.client.done_time),
            tuple(sum(t.busy_counts.values()) + t.empty_wakeups for t in threads),
            tuple(t.count for t in threads),
        )
        entry = (self.state(now), sim.clock.subtick(now), obs)
        seen = plan.seen
        if done != plan.next or (
            seen
            and (
                entry[0] != seen[0][0]
                or (plan.exact and entry[1] != seen[0][1])
                or (not plan.exact and obs.sensitive != seen[0][2].sensitive)
            )
        ):
            self.plan = None  # not a cycle after all
            self.failed += 1
            if self.failed > self.PATIENCE:
                self.skip = 1 << min(self.failed - self.PATIENCE, 12)
            return True
        if seen:
            self.plan = None
            return self._jump(seen[0][2], obs)
        seen.append(entry)
        plan.next = done + plan.k
        sim.client.pause_in = plan.k  # pause there to look again
        return True

    def bases(self) -> tuple:
        sim = self.sim
        return (sim.client_ep.sender.write_seq, sim.server_ep.sender.write_seq, sim.client.issued)

    def counters(self) -> tuple:
        out = []
        for obj, names in zip(self.stateful, self.count_names):
            for n in names:
                v = getattr(obj, n)
                out.append(dict(v) if isinstance(v, dict) else v)
        return tuple(out)

    # -- the state, relative to now ----------------------------------------

    def state(self, now: int) -> tuple:
        """Everything that decides the run's future, made relative."""
        sim = self.sim
        b = self.bases()
        c, s = sim.client_ep, sim.server_ep
        return (
            self._heap(now, b),
            self._channel(sim.c2s, now),
            self._channel(sim.s2c, now),
            self._sender(c.sender, now, b[0]),
            self._sender(s.sender, now, b[1]),
            self._receiver(c.receiver, now, b[1]),
            self._receiver(s.receiver, now, b[0]),
            self._app(sim.client, now, b[1], b[2]),
            self._app(sim.server, now, b[0], b[2]),
            tuple(sorted((op - b[2], t - now) for op, t in sim.client.issue_time.items())),
            sim.server.next_op - b[2],
            tuple(sorted((op - b[2], leg) for op, leg in sim.server.open_legs.items())),
            tuple(sorted(max(t - now, 0) for t in sim.cpu.free_at))
            if sim.cpu is not None
            else None,
        )

    def _seg(self, seg, b: tuple) -> tuple:
        return (
            seg.src,
            seg.seq - b[seg.src],
            seg.end - b[seg.src],
            seg.ack - b[1 - seg.src],
            seg.psh,
        )

    @staticmethod
    def _item(item: tuple, base: int, bops: int) -> tuple:
        end, op, leg, proc = item
        return (end - base, op - bops if op >= 0 else op, leg, proc)

    def _heap(self, now: int, b: tuple) -> tuple:
        out = []
        for e in self.sim.loop.pending():
            h = e[2]
            owner = h.__self__
            if isinstance(owner, Timer):  # part of its owner's state
                continue
            name = self.names[id(owner)] + "." + h.__func__.__name__
            arg = e[3]
            if isinstance(owner, Channel):
                arg = tuple(self._seg(sg, b) for sg in arg)
            elif isinstance(owner, AppThread) and arg is not None:
                base = b[0] if owner is self.sim.server else b[1]
                arg = self._item(arg, base, b[2])
            elif arg is not None:
                arg = self.names[id(arg)]
            out.append((e[0] - now, name, arg))
        return tuple(out)

    @staticmethod
    def _channel(ch: Channel, now: int) -> tuple:
        tok = None
        if ch.bucket is not None:
            if ch.tokens_at <= now:
                tok = (min(ch.bucket, ch.tokens + (now - ch.tokens_at) * ch.rate), 0)
            else:
                tok = (ch.tokens, ch.tokens_at - now)
        rx = ch.rx
        irq = None
        if isinstance(rx, InterruptModeration) and rx.last_irq is not None:
            # an interrupt older than the holdoff constrains nothing
            irq = rx.last_irq - now if rx.last_irq + rx.holdoff > now else "old"
        batch = None
        if ch.batch is not None:
            batch = (ch.batch_time - now, ch.gro_open, ch.gro_size)
        return (
            ch.free_at - now if ch.free_at >= now else -1,
            rx.wake_end - now if rx.wake_end > now else None,
            irq,
            max(ch.softirq_free - now, 0),
            tuple((t - now, n) for t, n in ch.in_nic if t > now),
            batch,
            tok,
        )

    @staticmethod
    def _sender(tx: Sender, now: int, b: int) -> tuple:
        p = tx.probe
        probe = (
            (p.srtt_us, tuple((e - b, t - now) for e, t in p.unacked))
            if isinstance(p, SrttProbe)
            else None
        )
        cork = (tx.cork.throttled,) if isinstance(tx.cork, Autocork) else None
        return (
            tx.write_seq - b,
            tx.snd_nxt - b,
            tx.snd_una - b,
            tx.snd_sml - b if tx.snd_sml > tx.snd_una else None,
            tuple((k.start - b, k.end - b, k.psh, k.t_write - now) for k in tx.queue),
            tx.mode,
            tx.corked,
            _timer(tx.probe_timer, now),
            probe,
            cork,
            tx.hold_max,
        )

    def _receiver(self, rx: Receiver, now: int, b: int) -> tuple:
        a = rx.ack
        if isinstance(a, LinuxAck):
            age: int | str | None = None
            if a.lrcv >= 0:
                age = now - a.lrcv
                if age >= self.far:
                    age = "far"
            ack: tuple = (
                a.owed,
                a.rcv_wup - b,
                a.pushed,
                a.quick,
                min(a.pingpong, a.pingpong_thresh),
                a.ato,
                age,
                a.rcv_mss,
                a.last_seg_size,
                _timer(a.timer, now),
            )
        else:
            ack = (a.owed,)
        return (rx.rcv_nxt - b, rx.copied_seq - b, ack)

    def _app(self, th: AppThread, now: int, b_in: int, bops: int) -> tuple:
        return (
            th.busy,
            th.waking,
            tuple(self._item(i, b_in, bops) for i in th.expect),
            tuple(th.writes),
            th.unwritten,
        )

    # -- the jump -----------------------------------------------------------

    def _jump(self, s2: _Obs, s3: _Obs) -> bool:
        sim = self.sim
        k_ops = s3.completed - s2.completed
        n = (sim.client.target - s3.completed - 1) // k_ops
        if n <= 0:
            return False
        dt = n * (s3.now - s2.now)
        dseq = [n * (x3 - x2) for x3, x2 in zip(s3.bases, s2.bases)]
        dops = dseq[2]
        self._shift_heap(dt, dseq)
        for ch in (sim.c2s, sim.s2c):
            self._shift_channel(ch, dt)
        for side, ep in ((0, sim.client_ep), (1, sim.server_ep)):
            self._shift_sender(ep.sender, dt, dseq[side])
            self._shift_receiver(ep.receiver, dt, dseq[1 - side])
        for i, (th, d_in) in enumerate(((sim.client, dseq[1]), (sim.server, dseq[0]))):
            th.expect = deque(
                (end + d_in, op + dops if op >= 0 else op, leg, proc)
                for end, op, leg, proc in th.expect
            )
            if s3.idles[i] != s2.idles[i]:  # its busy periods repeat
                th.busy_start += dt
            else:  # one period, still growing
                th.count += n * (s3.counts[i] - s2.counts[i])
        if sim.cpu is not None:
            sim.cpu.free_at = [t + dt for t in sim.cpu.free_at]
        cl, sv = sim.client, sim.server
        cl.issued += dops
        cl.issue_time = {op + dops: t + dt for op, t in cl.issue_time.items()}
        sv.next_op += dops
        sv.open_legs = {op + dops: leg for op, leg in sv.open_legs.items()}
        period = s3.now - s2.now
        done = cl.done_time[s2.n_done : s3.n_done]
        rtts = cl.rtts[s2.n_done : s3.n_done]
        for k in range(1, n + 1):
            cl.done_time.extend(t + k * period for t in done)
            cl.rtts.extend(rtts)
        self._add_counters(s2.counters, s3.counters, n)
        sim.skipped_ops += n * k_ops
        sim.cycle_ops = k_ops
        return False

    def _shift_heap(self, dt: int, dseq: list) -> None:
        sim = self.sim
        clock = sim.clock
        seen = set()

        def retime(e: list) -> int:
            owner = e[2].__self__
            if isinstance(owner, Timer):  # back onto a tick boundary
                owner.armed_at += dt
                owner.expires = clock.timer_time(owner.armed_at, owner.ticks)
                return owner.expires
            arg = e[3]
            if isinstance(owner, Channel) and id(arg) not in seen:
                seen.add(id(arg))
                for sg in arg:
                    sg.seq += dseq[sg.src]
                    sg.end += dseq[sg.src]
                    sg.ack += dseq[1 - sg.src]
                    sg.t_tx += dt
                    sg.t_rx += dt
            elif isinstance(owner, AppThread) and arg is not None:
                d_in = dseq[0] if owner is sim.server else dseq[1]
                end, op, leg, proc = arg
                e[3] = (end + d_in, op + dseq[2] if op >= 0 else op, leg, proc)
            return e[0] + dt

        sim.loop.shift(dt, retime)

    @staticmethod
    def _shift_channel(ch: Channel, dt: int) -> None:
        ch.free_at += dt
        ch.rx.wake_end += dt
        if isinstance(ch.rx, InterruptModeration) and ch.rx.last_irq is not None:
            ch.rx.last_irq += dt
        ch.softirq_free += dt
        if ch.batch is not None:
            ch.batch_time += dt
        ch.tokens_at += dt
        ch.in_nic = deque((t + dt, n) for t, n in ch.in_nic)

    @staticmethod
    def _shift_sender(tx: Sender, dt: int, d: int) -> None:
        tx.write_seq += d
        tx.snd_nxt += d
        tx.snd_una += d
        tx.snd_sml += d
        for k in tx.queue:
            k.start += d
            k.end += d
            k.t_write += dt
        if isinstance(tx.probe, SrttProbe):
            tx.probe.unacked = deque((e + d, t + dt) for e, t in tx.probe.unacked)

    @staticmethod
    def _shift_receiver(rx: Receiver, dt: int, d: int) -> None:
        rx.rcv_nxt += d
        rx.copied_seq += d
        a = rx.ack
        if isinstance(a, LinuxAck):
            a.rcv_wup += d
            if a.lrcv >= 0:
                a.lrcv += dt

    def _add_counters(self, c2: tuple, c3: tuple, n: int) -> None:
        i = 0
        for obj, names in zip(self.stateful, self.count_names):
            for name in names:
                a, b = c2[i], c3[i]
                if isinstance(b, dict):
                    new = dict(b)
                    for k, v in b.items():
                        new[k] = v + n * (v - a.get(k, 0))
                    setattr(obj, name, new)
                else:
                    setattr(obj, name, b + n * (b - a))
                i += 1

"""Issue 22's mechanisms in the simulator core: host costs per ``send()``
and per super-packet (``size_goal``), CPU of released pushes, the
autocork condition, congestion and receive windows with pacing, and the
adaptive ``ato``.  Each test states the rule and checks it on a run or on
the rule object itself."""

from __future__ import annotations

import pytest

from models.sim import Scenario, simulate
from models.sim.engine import Simulation
from models.sim.events import FS, EventLoop, seconds_to_fs
from models.sim.kernels import PROFILES, get_profile
from models.sim.rules.ack import LinuxAck
from models.sim.rules.ack_adaptive import AdaptiveAck, ato_sequence
from models.sim.rules.bbr import Bbr
from models.sim.rules.bbr_model import HIGH_GAIN, BbrModel
from models.sim.rules.cc import NoWindow, Reno
from models.sim.rules.cork import SKB_OVERHEAD_BYTES, Autocork

NODELAY = {"nodelay": True}
QUIET = {"tx_latency_s": 0.0, "rx_latency_s": 0.0}


def _run(sc: Scenario) -> Simulation:
    sim = Simulation(sc)
    sim.run()
    return sim


# -- 1. host costs per send() and per super-packet; size_goal ---------------


def test_windows_are_off_by_default_and_on_with_the_profile():
    assert Scenario().kernel.congestion_control == "none"
    assert Scenario().profile.congestion_control == "none"
    sc = Scenario(kernel={"congestion_control": "profile"})
    assert sc.profile.congestion_control == "cubic"
    old = Scenario(kernel={"profile": "linux-2.4", "congestion_control": "profile"})
    assert old.profile.congestion_control == "reno"


def test_new_host_costs_default_to_zero_and_change_nothing():
    sc = Scenario(workload={"qd": 4}, server=NODELAY, run={"ops": 300})
    a = simulate(sc)
    b = simulate(sc.replace(server={"send_cpu_s": 0.0, "gso_cpu_s": 0.0}))
    assert a.rtts_s == b.rtts_s and a.iops == b.iops


def test_send_cpu_is_paid_per_call_even_when_nothing_leaves():
    # Nagle holds the data call's segment (the header is unacknowledged):
    # the call still costs send_cpu_s; the thread's CPU counts each call.
    ops = 40
    base = Scenario(run={"ops": ops, "warmup_ops": 0, "fast_forward": False})
    cost = 7e-6
    plain = _run(base)
    paid = _run(base.replace(server={"send_cpu_s": cost}))
    calls = paid.server.served * len(base.workload.response_writes)
    extra = paid.server.cpu_fs - plain.server.cpu_fs
    assert plain.server.served == paid.server.served
    assert extra == calls * seconds_to_fs(cost)


def test_size_goal_builds_super_packets_cut_into_mss_segments():
    # 16 KiB in one send() with a 64 KiB size goal: one buffer, 12 wire
    # segments of at most one MSS, PSH on the last only.
    sc = Scenario(
        workload={"response_writes": (16384,)},
        server=NODELAY,
        client=NODELAY,
        # (no window: cwnd would cut the first buffers, tso_fragment)
        kernel={"size_goal": 65536, "congestion_control": "none"},
        run={"ops": 3, "warmup_ops": 0, "trace": True, "fast_forward": False},
    )
    sim = _run(sc)
    tx = sim.server_ep.sender
    per = -(-16384 // sc.link.mss)
    assert tx.data_segments == sim.server.served * per
    assert tx.buffers == sim.server.served
    data = [t for t in sim._result(0.0).trace if t.direction == "S > C" and t.length]
    assert max(t.length for t in data) == sc.link.mss
    assert [t.flags for t in data[:per]] == ["."] * (per - 1) + ["P."]


def test_gso_cpu_per_buffer_and_tx_cpu_per_segment():
    sc = Scenario(
        workload={"response_writes": (16384,)},
        server={"nodelay": True, "gso_cpu_s": 3e-6, "tx_cpu_s": 1e-6},
        client=NODELAY,
        kernel={"size_goal": 65536},
        run={"ops": 5, "warmup_ops": 0, "fast_forward": False},
    )
    sim = _run(sc)
    tx = sim.server_ep.sender
    soft = tx.soft_cpu_fs
    thread = sim.server.cpu_fs - sim.server.served * seconds_to_fs(sc.server.proc_s)
    total = tx.buffers * seconds_to_fs(3e-6) + tx.data_segments * seconds_to_fs(1e-6)
    assert thread + soft == total


def test_size_goal_is_whole_mss_and_at_least_one():
    p = get_profile("linux-6")
    for goal, want in ((65536, 45 * 1448), (100, 1448), (None, 1448)):
        sc = Scenario(kernel={"size_goal": goal})
        sim = Simulation(sc)
        assert sim.server_ep.sender.goal == want, (goal, want)
    assert p.size_goal_bytes is None


# -- 2. CPU of pushes released outside the thread's send() ------------------


def test_released_pushes_are_charged_to_the_soft_interrupt():
    # Nagle on: the data segment the header's ACK releases leaves from the
    # server's receive soft interrupt, which pays its transmit CPU; the
    # softirq's busy time is exactly that (no per-segment receive cost).
    sc = Scenario(
        server={"tx_cpu_s": 4e-6},
        run={"ops": 20, "warmup_ops": 0, "fast_forward": False},
    )
    sim = _run(sc)
    tx = sim.server_ep.sender
    released = tx.data_segments - sim.server.thread_segments
    assert released > 0
    assert tx.soft_cpu_fs == released * seconds_to_fs(4e-6)
    assert sim.c2s.softirq_busy == tx.soft_cpu_fs  # the server's inbound queue
    r = sim._result(0.0)
    assert r.hosts["server"].softirq_utilization > 0


def test_soft_charge_delays_later_frames_of_that_soft_interrupt():
    loop = EventLoop()
    from models.sim.link import Channel
    from models.sim.segment import Segment

    ch = Channel(loop, 10**9, 0, 0, 0, 0)
    ch.out = lambda now, seg: None
    ch.charge(100, 50)
    assert ch.softirq_free == 150 and ch.softirq_busy == 50
    ch.softirq = 10
    ch.send(120, Segment(0, 1, 2, 1, True))
    assert ch.softirq_free >= 150 + 10


# -- 3. autocorking: size_goal and the host queue ---------------------------


class _FakeChannel:
    def __init__(self, frames: int, nbytes: int, done: int, free_at: int) -> None:
        self.backlog = (frames, nbytes, done)
        self.free_at = free_at

    def tx_backlog(self, now: int) -> tuple:
        return self.backlog


class _FakeSender:
    def __init__(self, channel, goal: int, in_flight: bool) -> None:
        self.channel = channel
        self.goal = goal
        self.mss = 1448
        self.snd_una = 1
        self.snd_nxt = 1001 if in_flight else 1
        self.loop = EventLoop()


def test_autocork_compares_the_tail_with_size_goal_not_the_mss():
    busy = _FakeChannel(2, 3000, 50, 100)
    # a 2000-byte tail is more than an MSS but less than a 64 KiB goal
    assert Autocork().defer(_FakeSender(busy, 65536, True), 10, 2000)
    assert not Autocork().defer(_FakeSender(busy, 1448, True), 10, 2000)


def test_autocork_only_while_an_earlier_packet_is_in_the_host():
    idle = _FakeChannel(0, 0, 0, 5)
    busy = _FakeChannel(1, 100, 50, 100)
    assert not Autocork().defer(_FakeSender(idle, 65536, True), 10, 100)
    assert not Autocork().defer(_FakeSender(busy, 65536, False), 10, 100)
    assert Autocork().defer(_FakeSender(busy, 65536, True), 10, 100)
    # its memory must exceed the tail's own truesize
    small = _FakeChannel(1, 10, 50, 100)
    assert 1 * SKB_OVERHEAD_BYTES + 10 + 1 <= SKB_OVERHEAD_BYTES + 100
    assert not Autocork().defer(_FakeSender(small, 65536, True), 10, 100)


def test_profiles_state_which_mechanisms_apply():
    new, old = PROFILES["linux-6"], PROFILES["linux-2.4"]
    assert new.autocork and not old.autocork
    assert new.ack is AdaptiveAck and old.ack is LinuxAck
    assert (new.init_cwnd, old.init_cwnd) == (10, 2)
    assert (new.congestion_control, old.congestion_control) == ("cubic", "reno")
    assert new.slow_start_after_idle and new.size_goal_bytes is None


# -- 4. congestion window, receive window, pacing ---------------------------


class _Tx:
    """What a congestion rule reads of its sender."""

    def __init__(self) -> None:
        self.snd_una = 1
        self.snd_nxt = 1
        self.snd_wnd = 1 << 40


def _send(cc, tx, now: int, nsegs: int, mss: int = 1000) -> None:
    start = tx.snd_nxt
    tx.snd_nxt += nsegs * mss
    cc.sent(tx, now, start, tx.snd_nxt, nsegs)


def test_initial_window_then_slow_start_while_cwnd_limited():
    cc, tx = Reno(10, 1000, None), _Tx()
    cc.bind(tx)
    assert cc.limit(tx, 0, 1, 30_000) == 10_000  # 10 segments
    _send(cc, tx, 0, 10)
    assert cc.limit(tx, 0, tx.snd_nxt, 1000) == 0
    cc.pushed(tx, True)  # stopped by the window
    tx.snd_una = tx.snd_nxt
    cc.acked(FS // 1000, tx.snd_una)  # 1 ms later: all 10 acknowledged
    assert cc.cwnd == 20 and cc.srtt_us == 1000 << 3


def test_no_growth_when_the_application_does_not_fill_the_window():
    cc, tx = Reno(10, 1000, None), _Tx()
    cc.bind(tx)
    for i in range(50):  # two segments at a time, far below cwnd / 2
        _send(cc, tx, i * FS, 2)
        cc.pushed(tx, False)
        tx.snd_una = tx.snd_nxt
        cc.acked(i * FS + FS // 1000, tx.snd_una)
    assert cc.cwnd == 10


def test_congestion_avoidance_above_ssthresh():
    cc, tx = Reno(10, 1000, 10), _Tx()
    cc.bind(tx)
    _send(cc, tx, 0, 10)
    cc.pushed(tx, True)
    tx.snd_una = tx.snd_nxt
    cc.acked(FS // 1000, tx.snd_una)
    assert cc.cwnd == 11 and cc.cnt == 0  # one segment per window


def test_slow_start_after_idle_restarts_from_the_initial_window():
    cc, tx = Reno(10, 1000, None), _Tx()
    cc.bind(tx)
    cc.cwnd = 80
    _send(cc, tx, 0, 5)
    tx.snd_una = tx.snd_nxt
    cc.acked(FS // 1000, tx.snd_una)
    rto = cc.rto()
    cc.queued(tx, FS // 1000 + rto // 2)  # idle less than an RTO
    assert cc.cwnd == 80
    cc.queued(tx, 2 * rto + rto // 2)  # halved once per RTO beyond the first
    assert cc.cwnd == 20
    cc.queued(tx, 10 * rto)
    assert cc.cwnd == 10  # never below the initial window
    off = Reno(10, 1000, None, restart_after_idle=False)
    off.bind(tx)
    off.cwnd = 80
    off.lsndtime = 0
    off.queued(tx, 100 * rto)
    assert off.cwnd == 80


def test_receive_window_limits_the_bytes_beyond_snd_una():
    cc, tx = Reno(100, 1000, None), _Tx()
    cc.bind(tx)
    tx.snd_wnd = 2500
    assert cc.limit(tx, 0, 1, 10_000) == 2500
    assert cc.limit(tx, 0, 2001, 1000) == 0  # the first MSS does not fit


def test_bbr_paces_buffers_after_ten_segments():
    loop = EventLoop()

    class S(_Tx):
        queue = ()

    tx = S()
    tx.loop = loop
    cc = Bbr(10, 1000, None)
    cc.bind(tx)
    # before an RTT sample: the start-up gain x 10 segments per 1 ms
    rate = BbrModel.pacing_rate((10 << 24) // 1000, HIGH_GAIN, 1000)  # bytes/s
    assert cc.rate() == rate == 28_578_488
    _send(cc, tx, 0, 9)  # the first nine segments: not paced
    assert cc.wstamp == 0
    _send(cc, tx, 0, 1)  # from the tenth, each buffer waits len / rate, in whole ns
    assert cc.wstamp == 1000 * 10**9 // rate * (FS // 10**9)
    cc.cwnd = 20  # (the window is not what stops it here)
    assert cc.paced(tx, 1) and cc.timer.armed  # tcp_pacing_check holds it
    assert not cc.paced(tx, cc.wstamp)
    assert cc.limit(tx, cc.wstamp, tx.snd_nxt, 1000) == 1000


def test_windows_hold_a_16k_qd16_burst_to_the_initial_window():
    # 16 KiB responses at QD 16: 263 KB would leave in the first round
    # without a window; with linux-6's the server's first flight is 10.
    kw = dict(
        workload={"qd": 16, "response_writes": (16384,)},
        client=NODELAY,
        server=NODELAY,
        kernel={"congestion_control": "profile"},
        run={"ops": 200, "check": True},
    )
    sim = Simulation(Scenario(**kw))
    first = [0]

    def watch(now: int) -> None:
        tx = sim.server_ep.sender
        if tx.snd_una == 1:  # before the first ACK
            first[0] = max(first[0], tx.cc.packets_out)
        assert tx.cc.packets_out <= tx.cc.cwnd
        sim.check_invariants(now)

    sim.loop.after_event = watch
    sim.run()
    assert first[0] == 10
    assert sim.server_ep.sender.cc.cwnd > 10  # it grew: the flight used it
    none = simulate(Scenario(**kw).replace(kernel={"congestion_control": "none"}))
    assert none.iops > 0
    none_profile = get_profile("linux-6").configured(congestion_control="none")
    assert isinstance(none_profile.congestion(1448), NoWindow)


@pytest.mark.parametrize("cc", ["none", "reno", "cubic", "bbr"])
def test_fast_forward_agrees_with_the_full_run(cc):
    kw = dict(
        workload={"qd": 16, "response_writes": (2048,)},
        client=NODELAY,
        server=NODELAY,
        kernel={"congestion_control": cc, "size_goal": 65536},
        run={"ops": 600, "check": True},
    )
    fast = simulate(**kw)
    slow = simulate(**{**kw, "run": {"ops": 600, "fast_forward": False}})
    assert fast.rtts_s == slow.rtts_s
    assert fast.directions == slow.directions


def test_bbr_pacing_keeps_its_peak_rate_through_delayed_ack_stalls():
    """bbr's bandwidth estimate is a windowed maximum that app-limited samples do not lower, so
    RTT samples that include a 40 ms delayed ACK do not slow the pacing: Flory's exchange (8-byte
    descriptor, then a payload below one MSS) stalls on every exchange under bbr as under cubic,
    as the field sweep's kernel runs do (kernel6_field_flory, veth-1500).  A pacing rate taken
    from the latest srtt instead spaced the descriptor and the payload 1.5 ms apart, merged them,
    and let most exchanges through."""
    kw = dict(
        workload={"qd": 1, "request_writes": (8,), "response_writes": (8, 1447)},
        link={"mtu": 1500},
        kernel={"size_goal": 65536, "congestion_control": "cubic"},
        run={"ops": 12},
    )
    cubic = simulate(**kw)
    kw["kernel"] = {"size_goal": 65536, "congestion_control": "bbr"}
    bbr = simulate(**kw)
    assert min(cubic.rtts_s[1:]) > 0.035 and min(bbr.rtts_s[1:]) > 0.035
    assert abs(bbr.iops - cubic.iops) < 0.01 * cubic.iops


# -- 5. adaptive ato ----------------------------------------------------------


def test_ato_follows_a_stream_of_gaps():
    # HZ=250: TCP_ATO_MIN is 10 ticks.  Gaps of 15 ticks leave an ato of
    # 10 alone (m >= ato); from 20 (a missed delayed ACK doubled it) they
    # drive it towards 2 x 15 (29 with the halving's rounding down).
    half, rto = 5, 50
    assert ato_sequence([15] * 3, ato=10, half=half, rto=rto) == [10, 10, 10]
    seq = ato_sequence([15] * 12, ato=20, half=half, rto=rto)
    assert seq[:3] == [25, 27, 28]
    assert seq[-1] == 29 and all(a <= b for a, b in zip(seq, seq[1:]))
    # gaps of at most TCP_ATO_MIN / 2 pull it back towards TCP_ATO_MIN
    back = ato_sequence([2] * 10, ato=seq[-1], half=half, rto=rto)
    assert back[-1] == 10
    # a gap of ato or more leaves it; capped at the RTO
    assert ato_sequence([40], ato=40, half=half, rto=rto) == [40]
    assert ato_sequence([45], ato=90, half=half, rto=rto) == [rto]


def test_a_missed_delayed_ack_inflates_ato_outside_pingpong():
    # One-way data (no reply): the first delayed ACK fires from the timer,
    # ato doubles; the next waits min(ato, max(srtt, 40 ms)) = 40 ms on a
    # short path.
    sc = Scenario(
        workload={"response_writes": (1,), "request_writes": (100,)},
        run={"ops": 10, "fast_forward": False},
    )
    sim = Simulation(sc)
    ack = sim.server_ep.receiver.ack
    assert isinstance(ack, AdaptiveAck)
    ack.ato = 10
    ack.owed = True
    ack.pingpong = 0
    ack._on_timer(0, None)
    assert ack.ato == 20 and ack.delayed_acks == 1
    ack.owed = True
    ack.pingpong = 5
    ack._on_timer(0, None)
    assert ack.ato == 10 and ack.pingpong == 0


def test_max_ato_is_bounded_by_srtt():
    sc = Scenario(kernel={"congestion_control": "profile"}, run={"ops": 10})
    sim = Simulation(sc)
    ack = sim.server_ep.receiver.ack
    cc = sim.server_ep.sender.cc
    ack.ato = 40  # 160 ms at HZ=250
    cc.srtt_us = 60_000 << 3  # 60 ms
    ack.owed = True
    ack._send_delayed_ack(0)
    assert ack.timer.ticks == 15  # 60 ms in ticks
    ack.timer.cancel()
    cc.srtt_us = 0  # no RTT yet: HZ/2, at most TCP_DELACK_MAX (50 ticks)
    ack._send_delayed_ack(0)
    assert ack.timer.ticks == 40


def test_linux_24_keeps_a_fixed_ato():
    sc = Scenario(kernel={"profile": "linux-2.4"}, run={"ops": 10})
    sim = Simulation(sc)
    assert type(sim.server_ep.receiver.ack) is LinuxAck
    sim.run()
    assert sim.server_ep.receiver.ack.ato == PROFILES["linux-2.4"].delack_ticks


# -- the packetdrill scripts of these mechanisms can fail ---------------------


@pytest.mark.parametrize(
    ("script", "change"),
    [
        ("cwnd_slow_start.pkt", {"congestion_control": "none"}),
        ("cwnd_restart_after_idle.pkt", {"slow_start_after_idle": False}),
        ("ato_follows_gaps.pkt", {"ack": LinuxAck}),
        ("autocork_large_write.pkt", {"size_goal_bytes": 1}),
    ],
)
def test_each_mechanism_script_fails_without_its_mechanism(script, change):
    from models.sim.packetdrill import SCRIPTS_DIR, run_file

    path = SCRIPTS_DIR / script
    assert run_file(path).passed
    p = get_profile("linux-6")
    rules = {k: v for k, v in change.items() if isinstance(v, type)}
    settings = {k: v for k, v in change.items() if not isinstance(v, type)}
    if rules:
        p = p.with_policies(**rules)
    if settings:
        p = p.configured(**settings)
    assert not run_file(path, profile=p).passed

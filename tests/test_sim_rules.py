"""The simulator against the TCP rules and the sources' phenomena, case by
case."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models import framing, presets
from models.data import load
from models.sim import PROFILES, Scenario, get_profile, simulate
from models.sim.wakeups import curve_latency
from models.validation.simulator import flory_gap_s, flory_trace, stated


def rows(result, n):
    return [(r.direction, r.flags, r.seq, r.end, r.ack, r.length) for r in result.trace[:n]]


def test_default_is_the_delayed_ack_stall():
    r = simulate(run={"ops": 40, "check": True})
    assert 24 < r.iops < 26  # one 40 ms delayed ACK per op
    assert r.delayed_acks["C>S"] >= 39


@pytest.mark.parametrize(
    "fix",
    [
        {"server": {"msg_more": True}},
        {"server": {"nodelay": True}},
        {"server": {"nodelay": True}, "client": {"nodelay": True}},
        {"server": {"cork": True}},
    ],
)
def test_msg_more_nodelay_or_cork_remove_the_stall(fix):
    r = simulate(run={"ops": 200, "check": True}, **fix)
    assert r.iops > 3000 and r.delayed_acks["C>S"] == 0


def test_source_rtt_with_one_segment_response():
    # Butterfield (2017): QD 1, 512-byte read, TCP_NODELAY, one segment.
    r = simulate(presets.one_segment(run={"ops": 200}))
    b = load("butterfield2017_rtt_breakdown").set_index("quantity")
    rtt_s = b.loc["RTT", "value_us"] * 1e-6  # us -> s
    assert r.rtt_mean_s == pytest.approx(rtt_s, abs=0.5e-6)


def test_msg_more_misuse_waits_for_the_probe_timer():
    r = simulate(server={"msg_more": True, "msg_more_last": True}, run={"ops": 20, "check": True})
    # 200 ms per op, the source's 5 IOPS
    assert r.iops == pytest.approx(
        stated("butterfield2017_stated", "msg_more_misuse_iops"), rel=0.01
    )
    assert r.probes["S>C"] >= 20


def test_tcp_cork_left_set_waits_for_the_probe_like_msg_more():
    # Corking the socket around each message is like MSG_MORE on all but
    # the last call; both release at the end of the message.
    cork = simulate(server={"cork": True}, run={"ops": 100})
    more = simulate(server={"msg_more": True}, run={"ops": 100})
    assert cork.iops == pytest.approx(more.iops, rel=1e-9)
    assert cork.data_segments == more.data_segments


def test_flory_1447_trace_packet_by_packet():
    r = simulate(presets.flory(1447))
    ref = flory_trace(1447)
    assert rows(r, len(ref)) == list(ref)
    stall = r.trace[6].time - r.trace[5].time
    assert 0.030 < stall <= 0.040  # 4 ticks of HZ=100, armed in a tick
    assert r.trace[7].time == pytest.approx(r.trace[6].time)  # on the ACK


def test_flory_1448_trace_packet_by_packet():
    r = simulate(presets.flory(1448))
    ref = flory_trace(1448)
    assert rows(r, len(ref)) == list(ref)
    assert r.trace[7].time - r.trace[5].time < 1e-3
    assert flory_gap_s(1448) < 1e-3


@pytest.mark.parametrize("phase", [0.0, 0.002, 0.005, 0.0099])
def test_delayed_ack_fires_on_a_tick(phase):
    r = simulate(presets.flory(1447, kernel={"tick_phase_s": phase}, run={"trace_at": "client"}))
    header = next(t for t in r.trace if t.direction == "S > C" and t.length == 8 and t.seq == 9)
    ack = next(t for t in r.trace if t.direction == "C > S" and t.length == 0 and t.ack == 17)
    tick = get_profile("linux-2.4").tick_s
    assert 0.030 < ack.time - header.time <= 0.040 + 1e-9
    ticks = (ack.time + phase) / tick  # the ACK leaves on a tick
    assert ticks == pytest.approx(round(ticks), abs=1e-6)


def test_flory_rates():
    def rate(payload):
        return simulate(
            kernel={"profile": "linux-2.4"},
            run={"ops": 100},
            workload={"request_writes": (8,), "response_writes": (8, payload)},
        ).iops

    slow, fast = rate(1447), rate(1448)
    assert 24 < slow < 28
    assert fast > 100 * slow


def test_loopback_threshold_16383_16384():
    mtu = PROFILES["linux-2.4"].loopback_mtu
    assert framing.mss(mtu) == 16384
    assert simulate(presets.flory_loopback(16383)).iops < 26
    assert simulate(presets.flory_loopback(16384)).iops > 1000


def test_modern_loopback_mss_is_capped_by_the_ipv4_limit():
    # Linux loopback has MTU 65536; an IPv4 packet holds 65535 bytes, so
    # the MSS is 65483 and an 8 + 65483 exchange runs free (it stalled at
    # 65484 before the cap).
    mtu = PROFILES["linux-6"].loopback_mtu
    assert Scenario(link={"mtu": mtu}).link.mss == 65483
    lo = dict(
        link={"mtu": mtu, "bandwidth_bps": 1e12},
        workload={"request_writes": (8,)},
        run={"ops": 40},
    )
    free = simulate(
        workload={"response_writes": (8, 65483)},
        **{k: v for k, v in lo.items() if k != "workload"},
    )
    assert free.iops > 1000
    stalls = simulate(
        **{**lo, "workload": {"request_writes": (8,), "response_writes": (8, 65482)}}
    )
    assert stalls.iops < 30


def test_full_segment_leaves_at_once_without_psh():
    r = simulate(
        workload={"response_writes": (3000,)}, run={"ops": 3, "trace": True, "warmup_ops": 0}
    )
    out = [t for t in r.trace if t.direction == "S > C" and t.length]
    assert [t.length for t in out[:3]] == [1448, 1448, 104]
    assert [t.flags for t in out[:3]] == [".", ".", "P."]


def test_minshall_allows_partial_when_small_segment_acked():
    r = simulate(workload={"response_writes": (100,)}, run={"ops": 50, "check": True})
    assert r.iops > 3000


def test_classic_nagle_holds_behind_a_full_segment_where_minshall_does_not():
    # A response of a full segment and a tail: Minshall lets the tail go
    # (no small segment unacknowledged); RFC 896 holds it for the ACK.
    from models.sim import register_profile
    from models.sim.rules import ClassicNagle

    register_profile(get_profile("linux-6").variant("linux-6-rfc896", nagle=ClassicNagle))
    try:
        sc = Scenario(workload={"response_writes": (1448 + 100,)}, run={"ops": 50})
        minshall = simulate(sc)
        classic = simulate(sc, kernel={"profile": "linux-6-rfc896"})
    finally:
        del PROFILES["linux-6-rfc896"]
    assert minshall.iops > 3000 and classic.iops < 30


def test_autocork_coalesces_small_writes_behind_a_busy_nic():
    kw = dict(
        workload={"qd": 8, "response_writes": (512, 48)},
        client={"nodelay": True},
        server={"nodelay": True},
        run={"ops": 500},
    )
    on = simulate(**kw)
    off = simulate(kernel={"autocork": False}, **kw)
    assert on.data_segments["S>C"] < off.data_segments["S>C"]


def test_wire_time_of_one_request():
    # One 48-byte request on an idle path: CT + wire + SR before the
    # server sees it.
    sc = presets.one_segment(run={"ops": 1, "warmup_ops": 0, "trace": True})
    r = simulate(sc)
    expect = sc.client.tx_latency_s + framing.wire_time(48, 1e9) + sc.server.rx_latency_s
    assert r.trace[0].time == pytest.approx(expect, abs=1e-12)


def test_profiles_documented():
    assert set(PROFILES) == {"linux-2.4", "linux-6", "linux-6-rwnd", "linux-6.18-rwnd"}
    assert PROFILES["linux-6-rwnd"].rcv_buf_bytes and not PROFILES["linux-6"].rcv_buf_bytes
    assert PROFILES["linux-2.4"].delack_ticks == 4
    assert PROFILES["linux-6"].delack_ticks == 10
    assert not PROFILES["linux-2.4"].autocork
    assert PROFILES["linux-6"].autocork


# -- host model parts and socket options (all off by default) -----------------


def test_tcp_quickack_after_every_read_ends_the_stall():
    # The client's read of the lone header, followed by TCP_QUICKACK,
    # sends the ACK that releases the data Nagle holds
    # (__tcp_sock_set_quickack -> tcp_cleanup_rbuf).
    stall = simulate(run={"ops": 40})
    quick = simulate(client={"quickack": True}, run={"ops": 200})
    assert 24 < stall.iops < 26
    assert quick.iops > 1000 and quick.delayed_acks["C>S"] == 0


def test_quickack_does_not_persist_without_the_application():
    # Set on the server only, it changes nothing about the client's ACKs.
    r = simulate(server={"quickack": True}, run={"ops": 40})
    assert 24 < r.iops < 26


def _frames(sc):
    r = simulate(sc.replace(run={"trace": True, "trace_at": "client"}))
    return [t for t in r.trace if t.direction == "S > C"]


def test_interrupt_moderation_holds_a_second_interrupt_back():
    # Two lone operations 20 us apart at QD 1: with a 100 us holdoff the
    # client's second receive interrupt waits for the holdoff.
    base = presets.one_segment(run={"ops": 6, "warmup_ops": 0})
    plain = simulate(base)
    held = simulate(base.replace(client={"rx_usecs": 1e-3}))
    assert held.rtt_mean_s > plain.rtt_mean_s + 500e-6
    # a holdoff shorter than the gap between interrupts changes nothing
    short = simulate(base.replace(client={"rx_usecs": 10e-6}))
    assert short.rtts_s == plain.rtts_s


def test_napi_poll_takes_frames_that_arrive_while_it_runs():
    # QD 1, header and data as two segments 25 us apart (the server's
    # transmit CPU between them); the client's poll starts 20 us after
    # the header's interrupt and spends 10 us on it, so the data arrives
    # while it runs: NAPI takes it at once, saving most of a new start.
    sc = Scenario(
        server={"nodelay": True, "tx_cpu_s": 25e-6, "tx_latency_s": 0.0},
        client={"nodelay": True, "softirq_s": 10e-6, "rx_latency_s": 20e-6},
        run={"ops": 50},
    )
    plain = simulate(sc)
    napi = simulate(sc.replace(client={"rx_usecs": 0.0}))
    saved = plain.rtt_mean_s - napi.rtt_mean_s
    # the data's wire time puts it 28.7 us after the header, inside the
    # poll (21.1-31.1 us): it is ready at 41.1 us, not at 58.7 + 1
    assert 15e-6 < saved < 25e-6


def test_gro_merges_back_to_back_segments_of_one_poll():
    # A 4096-byte response is three segments at MTU 1500; the client's
    # poll takes them together and GRO hands TCP one segment.
    sc = Scenario(
        workload={"response_writes": (48, 4096)},
        server={"nodelay": True, "msg_more": True},
        client={"nodelay": True, "rx_usecs": 0.0},
        run={"ops": 20, "check": True},
    )
    plain = _frames(sc)
    gro = _frames(sc.replace(client={"gro": True}))
    assert len(plain) > len(gro)
    assert max(t.length for t in gro) > framing.mss(1500)
    assert sum(t.length for t in gro) == sum(t.length for t in plain)


def test_pure_ack_cost_defaults_to_the_segment_cost():
    sc = Scenario(
        server={"softirq_s": 2e-6, "nodelay": True}, client={"softirq_s": 2e-6}, run={"ops": 200}
    )
    same = simulate(sc.replace(server={"ack_cpu_s": 2e-6}, client={"ack_cpu_s": 2e-6}))
    assert simulate(sc).rtts_s == same.rtts_s
    free = simulate(sc.replace(server={"ack_cpu_s": 0.0}, client={"ack_cpu_s": 0.0}))
    assert free.hosts["server"].softirq_utilization < (same.hosts["server"].softirq_utilization)


def test_wake_cpu_counts_as_thread_cpu():
    sc = presets.one_segment(run={"ops": 200})
    a = simulate(sc)
    b = simulate(sc.replace(server={"wake_cpu_s": 5e-6}))
    assert b.rtt_mean_s == pytest.approx(a.rtt_mean_s + 5e-6, rel=1e-6)
    cpu = [r.hosts["server"].cpu_utilization for r in (a, b)]
    assert cpu[1] > cpu[0]


def test_a_thread_idle_only_briefly_wakes_in_wake_fast():
    # QD 1, one segment each way: each thread idles for the other's wake-up and work
    # (a few hundred microseconds here), so with a window longer than that every wake-up is fast.
    slow = {"wake_s": 30e-6}
    fast = {"wake_fast_s": 3e-6, "wake_fast_idle_s": 1e-3}
    sc = presets.one_segment(server=slow, client=slow, run={"ops": 300})
    a = simulate(sc)
    b = simulate(sc.replace(server=fast, client=fast))
    saved = [x - y for x, y in zip(a.rtts_s, b.rtts_s)]
    # from the second operation on, both wake-ups of each are fast (the first one finds a thread
    # idle since the connection was set up)
    assert saved[1:] == pytest.approx([2 * 27e-6] * (len(saved) - 1), abs=1e-12)
    # a window shorter than the idle time changes nothing
    brief = {"wake_fast_s": 3e-6, "wake_fast_idle_s": 1e-6}
    c = simulate(sc.replace(server=brief, client=brief))
    assert c.rtts_s == a.rtts_s


def test_a_measured_wake_up_curve_decides_each_wake_up_by_the_idle_before_it():
    # the server idles about 20 ms before each request (20 ms of client processing): on the
    # curve that is between its 1 ms and 40 ms points, linear between them
    curve = ((2e-6, 10e-6), (100e-6, 18e-6), (1e-3, 24e-6), (40e-3, 60e-6))
    sc = presets.one_segment(client={"proc_s": 20e-3}, run={"ops": 20, "warmup_ops": 2})
    a = simulate(sc)
    b = simulate(sc.replace(server={"wake_curve_s": curve}))
    added = [y - x for x, y in zip(a.rtts_s, b.rtts_s)]
    assert all(24e-6 - sc.server.wake_s < d < 60e-6 - sc.server.wake_s for d in added)
    assert max(added) - min(added) < 1e-9  # the same idle before every request
    # a flat curve is wake_s itself; the fast-forward repeats the curve's wake-ups exactly
    flat = ((1e-6, sc.server.wake_s), (1.0, sc.server.wake_s))
    assert simulate(sc.replace(server={"wake_curve_s": flat})).rtts_s == a.rtts_s
    on = simulate(Scenario(server={"wake_curve_s": curve}, run={"ops": 400}))
    off = simulate(on.scenario.replace(run={"fast_forward": False}))
    assert on.skipped_ops > 0 and on.rtts_s == off.rtts_s and on.hosts == off.hosts
    # a curve is points with the idle rising, and it replaces the steps
    assert Scenario(server={"wake_curve_s": "2e-6:1e-5,1e-3:2.4e-5"}).server.wake_curve_s == (
        (2e-6, 1e-5),
        (1e-3, 2.4e-5),
    )
    with pytest.raises(ValueError, match="two or more points with the idle rising"):
        sc.replace(server={"wake_curve_s": ((1e-3, 1e-5), (1e-4, 2e-5))})
    with pytest.raises(ValueError, match="wake_curve_s replaces the wake-up's fast step"):
        sc.replace(server={"wake_curve_s": curve, "wake_fast_idle_s": 1e-5})


def test_the_client_issues_its_first_requests_one_send_after_another():
    # With a transmit cost the start-up's send() calls wait for the CPU of the one before, as
    # any others do (the kernel harness issues its QD requests with a send() each): four
    # requests leave as four segments, 3 us apart, not at once (where autocorking would hold
    # the three behind the first).
    quiet = {"tx_latency_s": 0.0, "rx_latency_s": 0.0}
    costs = {"nodelay": True, "send_cpu_s": 1e-6, "gso_cpu_s": 2e-6, **quiet}
    sc = Scenario(
        workload={"qd": 4},
        client=costs,
        server={"proc_s": 1e-3, **quiet},
        run={"ops": 8, "warmup_ops": 0, "trace": True, "trace_at": "client", "check": True},
    )
    first = [r for r in simulate(sc).trace if r.direction == "C > S" and r.length][:4]
    assert [round(r.time * 1e6, 9) for r in first] == [0.0, 3.0, 6.0, 9.0]
    assert [r.length for r in first] == [48] * 4
    # without a transmit cost they are made at once, as before
    free = sc.replace(client={"send_cpu_s": 0.0, "gso_cpu_s": 0.0})
    assert {r.time for r in simulate(free).trace if r.direction == "C > S" and r.length} >= {0.0}


def test_an_established_start_has_no_quick_acks_and_a_server_asleep_for_long():
    # Nagle server, QD 1: a new connection's first lone header is ACKed at once (quick-ACK
    # mode); on a connection long past its start-up the client delays that ACK too
    sc = Scenario(run={"ops": 6, "warmup_ops": 0})
    new, est = simulate(sc), simulate(sc.replace(run={"start": "established"}))
    assert new.rtts_s[0] < 1e-3 and min(est.rtts_s) > 30e-3  # (the first timer: mid-tick)
    # the server's first wake-up follows a long sleep: with a deep wake-up it is the deep one
    # (one segment each way, no stall: the first round trip shows it)
    one = presets.one_segment(run={"ops": 6, "warmup_ops": 0})
    wake = presets.one_segment().server.wake_s
    deep = {"wake_curve_s": ((1e-6, wake), (1e-3, wake), (10e-3, 80e-6))}  # 80 us past 10 ms

    def first(start, server):
        return simulate(one.replace(server=server, run={"start": start})).rtts_s[0]

    extra = 80e-6 - one.server.wake_s
    est = first("established", deep) - first("established", {})
    assert est == pytest.approx(extra, abs=1e-12)
    # a new connection's server went idle at time 0: its first wake-up is an ordinary one
    assert first("connect", deep) == first("connect", {})
    with pytest.raises(ValueError, match="run.start must be one of"):
        sc.replace(run={"start": "warm"})


def test_the_copies_cost_cpu_per_byte():
    sc = presets.one_segment(run={"ops": 200})
    a = simulate(sc)
    # the client copies each 560-byte response before it completes the operation (the first
    # measured operation's round trip is set by the start-up, not by the client)
    b = simulate(sc.replace(client={"recv_byte_cpu_s": 1e-9}))
    added = [y - x for x, y in zip(a.rtts_s, b.rtts_s)]
    assert added[1:] == pytest.approx([560e-9] * (len(added) - 1), abs=1e-12)
    # the server's send() copies cost its thread CPU: with deep queues it runs out of CPU sooner
    deep = sc.replace(workload={"qd": 16}, server={"proc_s": 2e-6})
    c = simulate(deep)
    d = simulate(deep.replace(server={"send_byte_cpu_s": 20e-9}))  # 11 us per 560-byte response
    assert d.hosts["server"].cpu_utilization > c.hosts["server"].cpu_utilization
    assert d.iops < c.iops
    with pytest.raises(
        ValueError, match="recv_byte_cpu_s must be from 0 to 1e-06 seconds per byte"
    ):
        sc.replace(client={"recv_byte_cpu_s": 5.0})


@pytest.mark.parametrize("qd", [1, 3, 8])
def test_fast_wake_ups_give_the_same_result_with_and_without_the_fast_forward(qd):
    fast = {"wake_s": 30e-6, "wake_fast_s": 3e-6, "wake_fast_idle_s": 40e-6}
    sc = presets.one_segment(workload={"qd": qd}, server=fast, client=fast, run={"ops": 3000})
    on, off = simulate(sc), simulate(sc.replace(run={"fast_forward": False}))
    assert on.skipped_ops > 0 and off.skipped_ops == 0
    assert on.rtts_s == off.rtts_s and on.iops == off.iops
    assert on.hosts == off.hosts and on.directions == off.directions


def test_random_wake_latency_is_seeded_and_turns_the_fast_forward_off():
    sc = presets.one_segment(workload={"qd": 4}, server={"wake_spread_s": 30e-6}, run={"ops": 400})
    a, b = simulate(sc), simulate(sc)
    assert a.rtts_s == b.rtts_s and a.skipped_ops == 0
    assert simulate(sc.replace(run={"seed": 1})).rtts_s != a.rtts_s
    assert simulate(presets.one_segment(workload={"qd": 4}, run={"ops": 400})).skipped_ops > 0


def test_send_calls_wait_for_the_transmit_cpu_of_the_one_before():
    # TCP_NODELAY, header and data as two calls: the data leaves tx_cpu
    # after the header, so the client wakes for the header alone first.
    quiet = {"tx_latency_s": 0.0, "rx_latency_s": 0.0}
    sc = Scenario(
        server={"nodelay": True, "tx_cpu_s": 10e-6, **quiet},
        client={"nodelay": True, "wake_s": 2e-6, **quiet},
        run={"ops": 4, "trace": True, "trace_at": "server"},
    )
    r = simulate(sc)
    out = [t for t in r.trace if t.direction == "S > C" and t.length]
    assert out[1].time - out[0].time == pytest.approx(10e-6, abs=1e-12)
    assert r.hosts["client"].empty_wakeups > 0


def test_threads_on_one_shared_cpu_take_turns():
    # One CPU for both threads: at QD 64 the operations cost the sum of
    # the two processing times, not the larger of them.
    sc = presets.one_segment(workload={"qd": 64}, run={"ops": 2000})
    own = simulate(sc)
    one = simulate(sc.replace(link={"shared_cpus": 1}))
    s, c = sc.server.proc_s, sc.client.proc_s
    assert own.iops == pytest.approx(1 / s, rel=0.01)
    assert one.iops == pytest.approx(1 / (s + c), rel=0.01)


def test_soft_interrupts_on_one_machine_share_its_cpu():
    # One CPU for both threads and both receive soft interrupts: at QD 64 an operation costs the
    # two processing times plus the soft-interrupt work of its four segments (data and pure ACKs
    # alike: ``softirq_s`` per segment), where with a CPU for each it costs the largest of them.
    soft = 3e-6  # s per segment received
    sc = presets.one_segment(workload={"qd": 64}, run={"ops": 2000}).replace(
        server={"softirq_s": soft}, client={"softirq_s": soft}
    )
    s, c = sc.server.proc_s, sc.client.proc_s
    own = simulate(sc)
    one = simulate(sc.replace(link={"shared_cpus": 1}))
    assert own.iops == pytest.approx(1 / max(s, c, 2 * soft), rel=0.01)
    per_op = one.packets / one.completed_total  # frames of both directions per operation
    assert one.iops == pytest.approx(1 / (s + c + per_op * soft), rel=0.02)
    # the machine's CPU does no more work than it has time for
    busy = sum(one.cpu_utilization.values())
    assert busy == pytest.approx(1.0, abs=0.02)


def test_the_sender_cpu_runs_the_receive_soft_interrupt_of_its_frames():
    # Loopback and veth: the server's receive of a client frame runs on the client's CPU.  With
    # 10 us of it per frame the client's CPU (its 8.6 us of processing plus the soft interrupts
    # of the frames it sends) binds at QD 64, not the server's 15.9 us.
    soft = 10e-6  # s per frame the server receives
    sc = presets.one_segment(workload={"qd": 64}, run={"ops": 2000}).replace(
        server={"softirq_s": soft}
    )
    s, c = sc.server.proc_s, sc.client.proc_s
    apart = simulate(sc)
    one = simulate(sc.replace(link={"softirq_on_sender": True}))
    assert apart.iops == pytest.approx(1 / s, rel=0.01)
    frames = one.packets_by_direction["C>S"] / one.completed_total  # client frames per operation
    assert c + frames * soft > s
    assert one.iops == pytest.approx(1 / (c + frames * soft), rel=0.02)
    u = one.cpu_utilization  # the client's CPU is the busy one: its thread and those interrupts
    assert u["client"] + u["server_softirq"] == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("cost", [{"send_cpu_s": 1e-7}, {"send_byte_cpu_s": 1e-10}])
def test_a_corked_message_after_one_that_cost_cpu_is_still_written(cost):
    # Found by the property test: with a send() cost and TCP_CORK, the server writes two messages
    # for one request; clearing the cork of the first sends it at no CPU cost, and the second
    # message's calls were left unmade (no operation ever completed).
    messages = (
        ("C>S", (1,), None),
        ("S>C", (1,), 0),
        ("S>C", (1,), 0),
        ("C>S", (1,), 1),
        ("C>S", (1,), 1),
        ("C>S", (1,), 1),
    )
    quiet = {"wake_s": 0.0, "tx_latency_s": 0.0, "rx_latency_s": 0.0}
    sc = Scenario(
        workload={"qd": 1, "messages": messages},
        link={"mtu": 576, "bandwidth_bps": 100e6, "latency_s": 0.0},
        client={"proc_s": 55e-6, **quiet},
        server={"proc_s": 61e-6, "cork": True, **quiet, **cost},
        kernel={"profile": "linux-2.4", "hz": 100, "congestion_control": "none"},
        run={"ops": 5, "fast_forward": False, "check": True},
    )
    r = simulate(sc)
    assert r.completed_total == sc.warmup + sc.run.ops and r.iops > 0


def test_a_run_that_runs_out_of_events_is_an_error_not_a_result(monkeypatch):
    # A model bug that leaves the loop with nothing to do (here: the server never reads) must
    # not come back as a result of 0 IOPS.
    from models.sim.ends import ServerThread

    monkeypatch.setattr(ServerThread, "on_data", lambda self, now: None)
    with pytest.raises(RuntimeError, match="ran out of events with 0 of"):
        simulate(presets.one_segment(run={"ops": 10}))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 10**12), min_size=1, max_size=12, unique=True),
    st.lists(st.integers(0, 10**9), min_size=12, max_size=12),
    st.integers(-10, 10**12 + 10),
)
def test_a_curve_is_read_linearly_between_its_points_and_flat_beyond_them(idles, lats, idle):
    # curve_latency finds its segment by bisection: the same value, to the femtosecond, as
    # walking the points in order (and at each point exactly that point's latency)
    curve = tuple(zip(sorted(idles), lats))

    def walked(t: int) -> int:
        if t <= curve[0][0]:
            return curve[0][1]
        for (i0, w0), (i1, w1) in zip(curve, curve[1:]):
            if t < i1:
                return w0 + (w1 - w0) * (t - i0) // (i1 - i0)
        return curve[-1][1]

    for t in (idle, *(i for i, _ in curve)):
        assert curve_latency(curve, t) == walked(t)
    assert [curve_latency(curve, i) for i, _ in curve] == [w for _, w in curve]

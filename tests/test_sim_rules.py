"""The simulator against the TCP rules and the sources' phenomena, case by
case."""

from __future__ import annotations

import pytest

from models import framing, presets
from models.sim import PROFILES, Scenario, get_profile, simulate
from models.validation.simulator import flory_gap_s, flory_trace


def rows(result, n):
    return [(r.direction, r.flags, r.seq, r.end, r.ack, r.length)
            for r in result.trace[:n]]


def test_default_is_the_delayed_ack_stall():
    r = simulate(run={"ops": 40, "check": True})
    assert 24 < r.iops < 26                  # one 40 ms delayed ACK per op
    assert r.delayed_acks["C>S"] >= 39


@pytest.mark.parametrize("fix", [
    {"server": {"msg_more": True}}, {"server": {"nodelay": True}},
    {"server": {"nodelay": True}, "client": {"nodelay": True}},
    {"server": {"cork": True}}])
def test_msg_more_nodelay_or_cork_remove_the_stall(fix):
    r = simulate(run={"ops": 200, "check": True}, **fix)
    assert r.iops > 3000 and r.delayed_acks["C>S"] == 0


def test_source_rtt_with_one_segment_response():
    # Butterfield (2017): QD 1, 512-byte read, TCP_NODELAY, one segment.
    r = simulate(presets.one_segment(run={"ops": 200}))
    assert r.rtt_mean_s == pytest.approx(275.7e-6, abs=0.5e-6)


def test_msg_more_misuse_waits_for_the_probe_timer():
    r = simulate(server={"msg_more": True, "msg_more_last": True},
                 run={"ops": 20, "check": True})
    assert r.iops == pytest.approx(5.0, rel=0.01)       # 200 ms per op
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
    assert 0.030 < stall <= 0.040        # 4 ticks of HZ=100, armed in a tick
    assert r.trace[7].time == pytest.approx(r.trace[6].time)  # on the ACK


def test_flory_1448_trace_packet_by_packet():
    r = simulate(presets.flory(1448))
    ref = flory_trace(1448)
    assert rows(r, len(ref)) == list(ref)
    assert r.trace[7].time - r.trace[5].time < 1e-3
    assert flory_gap_s(1448) < 1e-3


@pytest.mark.parametrize("phase", [0.0, 0.002, 0.005, 0.0099])
def test_delayed_ack_fires_on_a_tick(phase):
    r = simulate(presets.flory(1447, kernel={"tick_phase_s": phase},
                               run={"trace_at": "client"}))
    header = next(t for t in r.trace
                  if t.direction == "S > C" and t.length == 8 and t.seq == 9)
    ack = next(t for t in r.trace
               if t.direction == "C > S" and t.length == 0 and t.ack == 17)
    tick = get_profile("linux-2.4").tick_s
    assert 0.030 < ack.time - header.time <= 0.040 + 1e-9
    ticks = (ack.time + phase) / tick       # the ACK leaves on a tick
    assert ticks == pytest.approx(round(ticks), abs=1e-6)


def test_flory_rates():
    def rate(payload):
        return simulate(kernel={"profile": "linux-2.4"}, run={"ops": 100},
                        workload={"request_writes": (8,),
                                  "response_writes": (8, payload)}).iops
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
    lo = dict(link={"mtu": mtu, "bandwidth_bps": 1e12},
              workload={"request_writes": (8,)}, run={"ops": 40})
    free = simulate(workload={"response_writes": (8, 65483)}, **{
        k: v for k, v in lo.items() if k != "workload"})
    assert free.iops > 1000
    stalls = simulate(**{**lo, "workload": {"request_writes": (8,),
                                            "response_writes": (8, 65482)}})
    assert stalls.iops < 30


def test_full_segment_leaves_at_once_without_psh():
    r = simulate(workload={"response_writes": (3000,)},
                 run={"ops": 3, "trace": True, "warmup_ops": 0})
    out = [t for t in r.trace if t.direction == "S > C" and t.length]
    assert [t.length for t in out[:3]] == [1448, 1448, 104]
    assert [t.flags for t in out[:3]] == [".", ".", "P."]


def test_minshall_allows_partial_when_small_segment_acked():
    r = simulate(workload={"response_writes": (100,)},
                 run={"ops": 50, "check": True})
    assert r.iops > 3000


def test_classic_nagle_holds_behind_a_full_segment_where_minshall_does_not():
    # A response of a full segment and a tail: Minshall lets the tail go
    # (no small segment unacknowledged); RFC 896 holds it for the ACK.
    from models.sim import register_profile
    from models.sim.rules import ClassicNagle
    register_profile(get_profile("linux-6").variant(
        "linux-6-rfc896", nagle=ClassicNagle))
    try:
        sc = Scenario(workload={"response_writes": (1448 + 100,)},
                      run={"ops": 50})
        minshall = simulate(sc)
        classic = simulate(sc, kernel={"profile": "linux-6-rfc896"})
    finally:
        del PROFILES["linux-6-rfc896"]
    assert minshall.iops > 3000 and classic.iops < 30


def test_autocork_coalesces_small_writes_behind_a_busy_nic():
    kw = dict(workload={"qd": 8, "response_writes": (512, 48)},
              client={"nodelay": True}, server={"nodelay": True},
              run={"ops": 500})
    on = simulate(**kw)
    off = simulate(kernel={"autocork": False}, **kw)
    assert on.data_segments["S>C"] < off.data_segments["S>C"]


def test_wire_time_of_one_request():
    # One 48-byte request on an idle path: CT + wire + SR before the
    # server sees it.
    sc = presets.one_segment(run={"ops": 1, "warmup_ops": 0, "trace": True})
    r = simulate(sc)
    expect = (sc.client.tx_latency_s + framing.wire_time(48, 1e9)
              + sc.server.rx_latency_s)
    assert r.trace[0].time == pytest.approx(expect, abs=1e-12)


def test_profiles_documented():
    assert set(PROFILES) == {"linux-2.4", "linux-6"}
    assert PROFILES["linux-2.4"].delack_ticks == 4
    assert PROFILES["linux-6"].delack_ticks == 10
    assert not PROFILES["linux-2.4"].autocork
    assert PROFILES["linux-6"].autocork

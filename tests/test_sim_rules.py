"""The simulator against the TCP rules and the phenomena of the sources, case by case."""

from __future__ import annotations

import pytest

from models.analytic import wire_time
from models.sim import Scenario, simulate
from models.sim.kernels import PROFILES, get_profile

FLORY = dict(kernel="linux-2.4", request_writes=(8,), setup_request_writes=(8,), setup_response_writes=(8,),
             setup_sp_s=2.29e-3, bandwidth_bps=100e6, warmup_ops=0, trace=True)


def rows(result, n):
    return [(r.direction, r.flags, r.seq, r.end, r.ack, r.length) for r in result.trace[:n]]


def test_default_is_the_delayed_ack_stall():
    r = simulate(ops=40, check=True)
    assert 24 < r.iops < 26                          # one 40 ms delayed ACK per operation
    assert r.delayed_acks["C>S"] >= 39


@pytest.mark.parametrize("fix", [dict(msg_more="server"), dict(nodelay="server"), dict(nodelay="both")])
def test_msg_more_or_nodelay_remove_the_stall(fix):
    r = simulate(ops=200, check=True, **fix)
    assert r.iops > 3000 and r.delayed_acks["C>S"] == 0


def test_source_rtt_with_one_segment_response():
    # Butterfield (2017): QD=1, 512-byte read, TCP_NODELAY, header and data in one 560-byte segment.
    r = simulate(ops=200, msg_more="server", nodelay="both")
    assert r.rtt_mean_s == pytest.approx(275.7e-6, abs=0.5e-6)


def test_msg_more_misuse_waits_for_the_probe_timer():
    r = simulate(ops=20, msg_more="server", msg_more_last=True, check=True)
    assert r.iops == pytest.approx(5.0, rel=0.01)     # 200 ms per operation
    assert r.probes["S>C"] >= 20


def test_flory_1447_trace_packet_by_packet():
    r = simulate(response_writes=(8, 1447), ops=2, **FLORY)
    # Flory (2001), packets 4-12 (1447 bytes), in relative sequence numbers
    assert rows(r, 9) == [
        ("C > S", "P.", 1, 9, 1, 8), ("S > C", ".", 1, 1, 9, 0), ("S > C", "P.", 1, 9, 9, 8),
        ("C > S", ".", 9, 9, 9, 0), ("C > S", "P.", 9, 17, 9, 8), ("S > C", "P.", 9, 17, 17, 8),
        ("C > S", ".", 17, 17, 17, 0), ("S > C", "P.", 17, 1464, 17, 1447), ("C > S", ".", 17, 17, 1464, 0)]
    stall = r.trace[6].time - r.trace[5].time
    assert 0.030 < stall <= 0.040                    # 4 ticks of HZ=100, armed somewhere in a tick
    assert r.trace[7].time == pytest.approx(r.trace[6].time)   # the held segment leaves on the ACK


def test_flory_1448_trace_packet_by_packet():
    r = simulate(response_writes=(8, 1448), ops=2, **FLORY)
    assert rows(r, 8) == [
        ("C > S", "P.", 1, 9, 1, 8), ("S > C", ".", 1, 1, 9, 0), ("S > C", "P.", 1, 9, 9, 8),
        ("C > S", ".", 9, 9, 9, 0), ("C > S", "P.", 9, 17, 9, 8), ("S > C", "P.", 9, 17, 17, 8),
        ("S > C", ".", 17, 1465, 17, 1448), ("C > S", ".", 17, 17, 1465, 0)]
    assert r.trace[7].time - r.trace[5].time < 1e-3


@pytest.mark.parametrize("phase", [0.0, 0.002, 0.005, 0.0099])
def test_delayed_ack_fires_on_a_tick(phase):
    r = simulate(response_writes=(8, 1447), ops=2, tick_phase_s=phase, **{**FLORY, "trace_at": "client"})
    header = next(t for t in r.trace if t.direction == "S > C" and t.length == 8 and t.seq == 9)
    ack = next(t for t in r.trace if t.direction == "C > S" and t.length == 0 and t.ack == 17)
    tick = 0.01
    assert 0.030 < ack.time - header.time <= 0.040 + 1e-9
    ticks = (ack.time + phase) / tick                 # the client sends it on a tick boundary
    assert ticks == pytest.approx(round(ticks), abs=1e-6)


def test_flory_rates():
    slow = simulate(kernel="linux-2.4", request_writes=(8,), response_writes=(8, 1447), ops=100)
    fast = simulate(kernel="linux-2.4", request_writes=(8,), response_writes=(8, 1448), ops=100)
    assert 24 < slow.iops < 28
    assert fast.iops > 100 * slow.iops


def test_loopback_threshold_16383_16384():
    mtu = get_profile("linux-2.4").loopback_mtu
    lo = dict(kernel="linux-2.4", mtu=mtu, bandwidth_bps=10e9, request_writes=(8,), ops=50,
              ct_s=0, st_s=0, cr_s=0, sr_s=0)
    assert mtu - 52 == 16384
    assert simulate(response_writes=(8, 16383), **lo).iops < 26
    assert simulate(response_writes=(8, 16384), **lo).iops > 1000


def test_full_segment_leaves_at_once_without_psh():
    r = simulate(response_writes=(3000,), nodelay="none", ops=3, trace=True, warmup_ops=0)
    out = [t for t in r.trace if t.direction == "S > C" and t.length]
    assert [t.length for t in out[:3]] == [1448, 1448, 104]
    assert [t.flags for t in out[:3]] == [".", ".", "P."]


def test_minshall_allows_partial_when_small_segment_acked():
    # Two small writes separated by an ACK of the first: both leave without waiting (Minshall), while
    # RFC 896 Nagle would hold the second only if data were unacknowledged.
    r = simulate(qd=1, response_writes=(100,), ops=50, check=True)
    assert r.iops > 3000


def test_autocork_coalesces_small_writes_behind_a_busy_nic():
    kw = dict(qd=8, nodelay="both", ops=500, response_writes=(512, 48))
    on, off = simulate(**kw), simulate(autocork=False, **kw)
    assert on.data_segments["S>C"] < off.data_segments["S>C"]


def test_wire_time_of_one_request():
    # One 48-byte request alone on an idle path: CT + wire + SR before the server sees it.
    r = simulate(qd=1, ops=1, warmup_ops=0, trace=True, trace_at="server", nodelay="both", msg_more="server")
    sc = Scenario()
    assert r.trace[0].time == pytest.approx(sc.ct_s + wire_time(48, 1e9) + sc.sr_s)


def test_profiles_documented():
    assert set(PROFILES) == {"linux-2.4", "linux-6"}
    assert PROFILES["linux-2.4"].delack_ticks == 4 and PROFILES["linux-6"].delack_ticks == 10
    assert PROFILES["linux-2.4"].autocork is False and PROFILES["linux-6"].autocork is True


@pytest.mark.parametrize("bad, name", [
    (dict(qd=0), "qd"), (dict(qd=-3), "qd"), (dict(sp_s=-1e-6), "sp_s"), (dict(cl_s=float("nan")), "cl_s"),
    (dict(mtu=52), "mtu"), (dict(mtu=40), "mtu"), (dict(kernel="linux-3"), "kernel"),
    (dict(bandwidth_bps=0), "bandwidth_bps"), (dict(nodelay="sometimes"), "nodelay"),
    (dict(response_writes=()), "response_writes"), (dict(request_writes=(0,)), "request_writes"),
    (dict(jitter=1.5), "jitter"), (dict(ops=0), "ops"), (dict(latency_s=-1), "latency_s"),
])
def test_bad_parameters_raise_value_error_naming_them(bad, name):
    with pytest.raises(ValueError, match=name):
        Scenario(**bad)

"""Property tests of the simulator over random scenarios (hypothesis).

IOPS never exceeds the bottleneck bound 1 / max(stage times), stated for a finite window.

Invariants checked after every event (``check=True``): exactly QD operations in flight, acknowledged
<= received <= sent <= written bytes in both directions, every byte written is either sent or queued,
requests served once each and in order, no operation completed twice.  Checked at the end: IOPS never
exceeds the bottleneck bound, Little's law, determinism for a seed.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.analytic import TCPIP_BYTES
from models.sim import Scenario, simulate
from models.sim.scenario import SIDES

sizes = st.lists(st.integers(1, 4000), min_size=1, max_size=3).map(tuple)
small_time = st.floats(0, 100e-6, allow_nan=False)
proc_time = st.floats(1e-6, 100e-6, allow_nan=False)


@st.composite
def scenarios(draw):
    return Scenario(
        qd=draw(st.integers(1, 12)),
        request_writes=draw(sizes), response_writes=draw(sizes),
        mtu=draw(st.sampled_from([576, 1500, 9000, 16436])),
        bandwidth_bps=draw(st.sampled_from([1e8, 1e9, 1e10])),
        latency_s=draw(small_time), sp_s=draw(proc_time), cp_s=draw(proc_time),
        sl_s=draw(small_time), cl_s=draw(small_time), ct_s=draw(small_time), sr_s=draw(small_time),
        st_s=draw(small_time), cr_s=draw(small_time),
        nodelay=draw(st.sampled_from(SIDES)), msg_more=draw(st.sampled_from(SIDES)),
        msg_more_last=draw(st.booleans()), flush_on_idle=draw(st.sampled_from(SIDES)),
        autocork=draw(st.sampled_from([None, True, False])),
        kernel=draw(st.sampled_from(["linux-2.4", "linux-6"])),
        ops=draw(st.integers(5, 40)), seed=draw(st.integers(0, 2**16)),
        jitter=draw(st.sampled_from([0.0, 0.2])), check=True,
    )


def bottleneck_iops(sc: Scenario) -> float:
    """1 / max(stage time): SP, CP, and each message's least wire time (payload only, full frames)."""
    sec_per_byte = 8 / sc.bandwidth_bps
    payload_share = (sc.mtu - TCPIP_BYTES) / (sc.mtu + 38)      # best framing efficiency
    w1 = sum(sc.request_writes) * sec_per_byte / payload_share
    w2 = sum(sc.response_writes) * sec_per_byte / payload_share
    slowest = max(sc.sp_s * (1 - sc.jitter), sc.cp_s * (1 - sc.jitter), w1, w2)   # fastest draws
    return 1.0 / slowest


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_invariants_hold_and_iops_respects_the_bound(sc):
    r = simulate(sc)                                   # check=True: invariants after every event
    assert r.in_flight == sc.qd                        # exactly QD outstanding at the end too
    assert r.completed_total == sc.warmup + sc.ops     # none lost
    for d in ("C>S", "S>C"):
        assert 0 <= r.bytes_acked[d] <= r.bytes_sent[d]
    # Over the measured window of length T no more than T / TPTmin operations pass the slowest stage,
    # plus the at most QD operations already past it when the window opened.
    window = r.ops / r.iops
    assert r.ops <= bottleneck_iops(sc) * window * (1 + 1e-9) + sc.qd
    assert r.iops > 0 and all(t > 0 for t in r.rtts_s)


@settings(max_examples=25, deadline=None)
@given(scenarios())
def test_deterministic_for_a_seed(sc):
    a, b = simulate(sc.replace(trace=True)), simulate(sc.replace(trace=True))
    assert a.iops == b.iops and list(a.rtts_s) == list(b.rtts_s)
    assert a.trace == b.trace and a.busy_counts == b.busy_counts and a.events == b.events


@settings(max_examples=25, deadline=None)
@given(scenarios())
def test_littles_law(sc):
    # In a closed loop every measured operation overlaps qd - 1 others: IOPS * mean RTT = QD, up to the
    # edge effect of the measurement window (at most qd operations straddle each end).
    sc = sc.replace(ops=max(sc.ops, 30 * sc.qd), check=False)
    r = simulate(sc)
    edge = 2 * sc.qd / r.ops * 2 + 0.02
    assert math.isclose(r.iops * r.rtt_mean_s, sc.qd, rel_tol=edge)

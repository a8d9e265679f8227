"""Tests for the ring-of-stages simulator: Little's law, the bounds, inequalities [1] and [2], invariants."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models import analytic as A
from models.ring import Ring, Stage

SOURCE = dict(W1=1.104e-6, SP=15.9e-6, W2=5.2e-6, CP=8e-6)


def test_qd1_rtt_is_sum_of_stages_and_latencies():
    ring = Ring.four_stage(**SOURCE, SL=16.7e-6, CL=23.7e-6)
    r = ring.run(1, ops=100)
    assert r.rtt_mean == pytest.approx(sum(SOURCE.values()) + 16.7e-6 + 23.7e-6)
    assert r.busy_counts["SP"] == {1: r.busy_counts["SP"][1]}


def test_cpu_bound_inequality_2_marks_the_peak():
    """Below (CL + RTTmin)/SP the server thread sleeps; at or above it, IOPS = 1/SP."""
    lat = dict(SL=16.7e-6, CL=23.7e-6)
    ring = Ring.four_stage(**SOURCE, **lat)
    qd_min = A.numeric(A.qd_min_cpu_bound())(
        CL=lat["CL"], RTTmin=sum(SOURCE.values()), SP=SOURCE["SP"]
    )
    for qd in range(1, 10):
        r = ring.run(qd, ops=3000)
        if qd >= qd_min:
            assert r.iops == pytest.approx(1 / SOURCE["SP"], rel=2e-3)
            assert r.busy_fraction["SP"] == pytest.approx(1.0, abs=2e-3)
        else:
            assert r.iops < 0.97 / SOURCE["SP"]


def test_network_bound_inequality_1_marks_the_peak():
    """With W2 the slowest stage, the link stays busy from (CL + RTTmin + SL)/W2 on."""
    times = dict(W1=2e-6, SP=5e-6, W2=20e-6, CP=4e-6)
    lat = dict(SL=30e-6, CL=25e-6)
    ring = Ring.four_stage(**times, **lat)
    qd_min = A.numeric(A.qd_min_network_bound())(
        CL=lat["CL"], RTTmin=sum(times.values()), SL=lat["SL"], W2=times["W2"]
    )
    for qd in range(1, 9):
        r = ring.run(qd, ops=3000)
        if qd >= qd_min:
            assert r.busy_fraction["W2"] == pytest.approx(1.0, abs=2e-3)
        else:
            assert r.busy_fraction["W2"] < 0.98


def test_bad_parameters():
    with pytest.raises(ValueError, match="qd"):
        Ring.four_stage(**SOURCE).run(0)
    with pytest.raises(ValueError, match="ops"):
        Ring.four_stage(**SOURCE).run(1, ops=0)
    with pytest.raises(ValueError, match="time"):
        Stage("SP", 0.0)
    with pytest.raises(ValueError, match="latency"):
        Stage("SP", 1e-6, -1e-6)
    with pytest.raises(ValueError, match="names"):
        Ring([Stage("A", 1e-6), Stage("A", 1e-6)])
    with pytest.raises(ValueError, match="latencies"):
        Ring.from_times({"A": 1e-6}, {"B": 1e-6})


times = st.floats(min_value=1e-6, max_value=1e-3)


@settings(max_examples=60, deadline=None)
@given(
    qd=st.integers(1, 24),
    t=st.lists(times, min_size=2, max_size=8),
    lat=st.lists(st.floats(0, 1e-3), min_size=8, max_size=8),
)
def test_invariants_and_bounds(qd, t, lat):
    ring = Ring([Stage(f"s{i}", x, lat[i]) for i, x in enumerate(t)])
    ops = 300
    r = ring.run(qd, ops=ops)
    # Exactly QD operations in flight at every event; none lost or counted twice.
    assert r.in_flight_min == r.in_flight_max == qd
    assert r.duplicates == 0 and len(r.rtts) == ops
    # Little's law over a finite window: the area under N(t) = QD differs from the summed RTTs only by
    # the operations straddling the window's two edges, each at most max(RTT) long.
    span = ops / r.iops
    assert abs(r.iops * r.rtt_mean - qd) <= qd * max(r.rtts) / span * (1 + 1e-9)
    # The operational bound: in any window at most span/TPTmin completions plus the QD already started.
    assert r.iops <= 1 / max(t) + qd / span + 1e-9
    assert min(r.rtts) >= sum(t) * (1 - 1e-9)
    # Deterministic.
    assert ring.run(qd, ops=ops).rtts == r.rtts

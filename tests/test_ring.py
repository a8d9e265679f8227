"""Tests for the ring-of-stages simulator: Little's law, the bounds, inequalities [1] and [2], invariants."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models import analytic as A
from models.ring import Ring, Stage, first_saturated_qd, plateau_knee

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


# ---- the first saturated queue depth and the knee, as chapter 3 uses them ---------------------------


def test_busy_curve_and_first_saturated_qd_meet_inequality_2():
    """CPU bound: the server thread is saturated from ceil((CL + RTTmin)/SP) on."""
    t = dict(W1=1e-6, SP=16e-6, W2=5e-6, CP=8e-6)
    lat = dict(SP=10e-6, CP=20e-6)
    ring = Ring.from_times(t, lat)
    busy = ring.busy_curve("SP", range(1, 8), ops=3000)
    assert list(busy) == list(range(1, 8))
    need = A.qd_min_bottleneck(t, sl=lat["SP"], cl=lat["CP"])
    assert need == pytest.approx((20e-6 + 30e-6) / 16e-6)
    first = first_saturated_qd(busy)
    assert first == math.ceil(need)
    assert busy[first - 1] < 0.99


def test_first_saturated_qd_network_bound():
    t = dict(W1=2e-6, SP=5e-6, W2=20e-6, CP=4e-6)
    lat = dict(SP=30e-6, CP=25e-6)
    busy = Ring.from_times(t, lat).busy_curve("W2", range(1, 9), ops=3000)
    need = A.qd_min_bottleneck(t, sl=lat["SP"], cl=lat["CP"])
    assert need == pytest.approx((25e-6 + 31e-6 + 30e-6) / 20e-6)
    assert first_saturated_qd(busy) == math.ceil(need)


def test_first_saturated_qd_threshold_and_bad_input():
    busy = {3: 1.0, 1: 0.2, 2: 0.999}
    assert first_saturated_qd(busy) == 3  # strictly above 0.999
    assert first_saturated_qd(busy, above=0.99) == 2
    with pytest.raises(ValueError, match="busy"):
        first_saturated_qd({1: 0.5, 2: 0.9})
    with pytest.raises(ValueError, match="stage"):
        Ring.from_times({"A": 1e-6}).busy_curve("B", [1])


def test_plateau_knee():
    assert plateau_knee([1, 2, 3, 4], [10.0, 19.0, 19.95, 20.0]) == 3
    assert plateau_knee([1, 2, 3, 4], [10.0, 19.0, 19.95, 20.0], within=0.1) == 2
    assert plateau_knee([4, 1, 3, 2], [20.0, 10.0, 19.95, 19.0]) == 3  # order-free
    assert plateau_knee([1, 2], [5.0, 5.0]) == 1
    # A ring without latencies reaches its plateau at the bound's knee, rounded up.
    t = dict(W1=1e-6, SP=16e-6, W2=5e-6, CP=8e-6)
    qds = list(range(1, 6))
    iops = [r.iops for r in Ring.from_times(t).curve(qds, ops=3000)]
    assert plateau_knee(qds, iops) == math.ceil(A.knee_qd(t))
    with pytest.raises(ValueError, match="same length"):
        plateau_knee([1, 2], [1.0])
    with pytest.raises(ValueError, match="at least one"):
        plateau_knee([], [])
    with pytest.raises(ValueError, match="within"):
        plateau_knee([1], [1.0], within=1.0)

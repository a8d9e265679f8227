"""Unit and property tests for models.analytic: the values the source states, and bad input."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from models import analytic as A
from models.analytic import (
    S,
    backlog_min_nagle,
    framing_efficiency,
    iops_bound,
    qd_min_cpu_bound,
    qd_min_network_bound,
    wire_time,
)

# ---- values the source states (Butterfield 2017) ---------------------------------------------------


def test_framing_efficiency_matches_source():
    assert round(framing_efficiency(1500), 4) == 0.9415
    assert round(framing_efficiency(9000), 4) == 0.9900


def test_wire_time_matches_source():
    assert wire_time(48, 1e9) == pytest.approx(1.104e-6, rel=1e-12)
    assert wire_time(560, 1e9) == pytest.approx(5.2e-6, rel=1e-12)
    # The source's 6.3 us for both directions of a 512-byte read.
    assert round((wire_time(48, 1e9) + wire_time(48 + 512, 1e9)) * 1e6, 1) == 6.3


def test_w1_lower_bound_is_388_ns():
    assert round(A.w1_lower_bound(1e9, mtu=9000) * 1e9) == 388


def test_wire_time_segments_at_mss():
    mss = A.mss(1500)
    assert mss == 1448
    one = wire_time(mss, 1e9)
    two = wire_time(mss + 1, 1e9)
    # One more payload byte costs a whole second frame: 1 byte + 90 bytes overhead.
    assert two - one == pytest.approx((1 + 90) * 8 / 1e9)
    assert A.frames(0) == 1 and A.frames(mss) == 1 and A.frames(mss + 1) == 2


def test_symbolic_results_equal_source_forms():
    assert sp.simplify(qd_min_network_bound() - (S.CL + S.RTTmin + S.SL) / S.W2) == 0
    assert sp.simplify(qd_min_cpu_bound() - (S.CL + S.RTTmin) / S.SP) == 0
    assert sp.simplify(backlog_min_nagle() - ((S.CL + S.RTTmin + S.SN) / S.SP - 1)) == 0
    # [3] reduces to [2] when SN = 0, with BACKLOG = QD - 1.
    assert sp.simplify(backlog_min_nagle().subs(S.SN, 0) - (qd_min_cpu_bound() - 1)) == 0
    assert sp.simplify(A.nagle_delay_bound_ack() - (S.CL + S.RTTmin - 2 * S.SP)) == 0
    assert sp.simplify(A.qd_max_for_response_time_expr() - S.TI * S.BW / (S.IOSIZE + S.H)) == 0


def test_ring_time_round_trip_is_rttmin():
    assert sp.simplify(A.ring_time("CP", "CP") - A.rtt_min_expr()) == 0
    assert sp.simplify(A.ring_time("CK", "CK", ring=A.RING8) - A.rtt_min_expr(A.RING8)) == 0


def test_numeric_wrapper():
    f = A.numeric(qd_min_network_bound())
    assert f(CL=10e-6, RTTmin=100e-6, SL=20e-6, W2=13e-6) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="missing"):
        f(CL=1.0)


def test_iops_bound_two_regimes():
    stages = {"W1": 1.1e-6, "SP": 16e-6, "W2": 5.2e-6, "CP": 8e-6}
    rttmin = sum(stages.values())
    assert iops_bound(1, stages) == pytest.approx(1 / rttmin)
    assert iops_bound(100, stages) == pytest.approx(1 / 16e-6)
    knee = A.knee_qd(stages)
    assert iops_bound(knee, stages) == pytest.approx(1 / rttmin * knee)
    arr = iops_bound(np.arange(1, 20), stages)
    assert arr.shape == (19,) and np.all(np.diff(arr) >= 0)


def test_bandwidth_cap_and_qd_for_target():
    # 1 Gb/s = 125e6 bytes/s; a 512-byte read moves 560 bytes.
    assert A.iops_bandwidth_cap(512, 1e9) == pytest.approx(125e6 / 560)
    assert A.iops_bandwidth_cap(512, 1e9, mtu=1500) == pytest.approx(1 / 5.2e-6)
    assert A.qd_max_for_response_time(1e-3, 512, 1e9) == pytest.approx(1e-3 * 125e6 / 560)


# ---- properties -------------------------------------------------------------------------------------

times = st.floats(min_value=1e-7, max_value=1e-2, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(qd=st.integers(1, 512), w1=times, sp_=times, w2=times, cp=times, lat=st.floats(0, 1e-2))
def test_iops_bound_properties(qd, w1, sp_, w2, cp, lat):
    stages = [w1, sp_, w2, cp]
    x = iops_bound(qd, stages, latency=lat)
    # Never above either asymptote, and Little's law: QD / X >= RTTmin.
    assert x <= 1 / max(stages) * (1 + 1e-12)
    assert qd / x >= sum(stages) * (1 - 1e-12)
    # More operations in flight never lowers the bound.
    assert iops_bound(qd + 1, stages, latency=lat) >= x


@settings(max_examples=100, deadline=None)
@given(payload=st.integers(0, 200_000), mtu=st.integers(53, 9000), bw=st.floats(1e6, 1e11))
def test_wire_time_properties(payload, mtu, bw):
    t = wire_time(payload, bw, mtu)
    # At least the payload at line rate, at most payload plus overhead for one frame per byte.
    assert t >= payload * 8 / bw
    assert t * bw / 8 == pytest.approx(payload + A.frames(payload, mtu) * 90)
    assert wire_time(payload + 1, bw, mtu) > t


# ---- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: framing_efficiency(52), "mtu"),
        (lambda: framing_efficiency(40), "mtu"),
        (lambda: framing_efficiency(1500.5), "mtu"),
        (lambda: wire_time(48, 0), "bandwidth_bps"),
        (lambda: wire_time(48, -1e9), "bandwidth_bps"),
        (lambda: wire_time(-1, 1e9), "payload_bytes"),
        (lambda: wire_time(48, 1e9, mtu=50), "mtu"),
        (lambda: wire_time(48, float("nan")), "bandwidth_bps"),
        (lambda: iops_bound(0, [1e-6]), "qd"),
        (lambda: iops_bound(-3, [1e-6]), "qd"),
        (lambda: iops_bound([1, 0.5], [1e-6]), "qd"),
        (lambda: iops_bound(1, []), "stage_times"),
        (lambda: iops_bound(1, {"SP": 0.0}), "stage_times"),
        (lambda: iops_bound(1, {"SP": -1e-6}), "stage_times"),
        (lambda: iops_bound(1, [1e-6], latency=-1), "latency"),
        (lambda: A.qd_max_for_response_time(0, 512, 1e9), "ti_s"),
        (lambda: A.iops_bandwidth_cap(512, 0), "bandwidth_bps"),
        (lambda: A.ring_time("XX", "SP"), "XX"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(ValueError, match=param):
        call()


def test_eight_stage_placements():
    t = dict(W1=1e-6, SI=4e-6, SP=9e-6, SK=3e-6, W2=5e-6, CI=2e-6, CP=6e-6, CK=1e-6)
    assert A.tpt_min_eight_stage(t) == 9e-6
    assert A.tpt_min_eight_stage(t, "sirq-same-cpu") == pytest.approx(13e-6)
    assert A.tpt_min_eight_stage(t, "uniprocessor") == pytest.approx(16e-6)
    expr = A.tpt_min_eight_stage_expr("sirq-same-cpu")
    assert float(expr.subs({S[k]: v for k, v in t.items()})) == pytest.approx(13e-6)
    with pytest.raises(ValueError, match="placement"):
        A.tpt_min_eight_stage(t, "smp")
    with pytest.raises(ValueError, match="stage_times"):
        A.tpt_min_eight_stage({"W1": 1e-6})


def test_units_cover_every_symbol():
    for sym in S:
        unit, meaning = A.UNITS[str(sym)]
        assert unit and meaning
    assert math.isclose(A.FRAME_OVERHEAD_BYTES, 90)


def test_doctests():
    import doctest

    import models.validation as V

    for mod in (A, V):
        assert doctest.testmod(mod).failed == 0


# ---- qd_min_bottleneck: inequality [1] or [2], whichever the bottleneck needs ------------------------


def test_qd_min_bottleneck_picks_the_inequality_of_the_slowest_stage():
    cpu = {"W1": 1e-6, "SP": 16e-6, "W2": 5e-6, "CP": 8e-6}
    net = {"W1": 2e-6, "SP": 5e-6, "W2": 20e-6, "CP": 4e-6}
    sl, cl = 10e-6, 20e-6
    assert A.qd_min_bottleneck(cpu, sl=sl, cl=cl) == A.qd_min_cpu(cl, A.rtt_min(cpu), 16e-6)
    assert A.qd_min_bottleneck(net, sl=sl, cl=cl) == A.qd_min_network(
        cl, A.rtt_min(net), sl, 20e-6
    )
    # SL drops out of [2] and not out of [1]
    assert A.qd_min_bottleneck(cpu, sl=0.0, cl=cl) == A.qd_min_bottleneck(cpu, sl=sl, cl=cl)
    assert A.qd_min_bottleneck(net, sl=0.0, cl=cl) < A.qd_min_bottleneck(net, sl=sl, cl=cl)
    # without latencies both reduce to the bound's knee
    for t in (cpu, net):
        assert A.qd_min_bottleneck(t) == pytest.approx(A.knee_qd(t), rel=1e-15)


def test_bottleneck_inequality_and_a_longer_round_trip():
    cpu = {"W1": 1e-6, "SP": 16e-6, "W2": 5e-6, "CP": 8e-6}
    net = {"W1": 2e-6, "SP": 5e-6, "W2": 20e-6, "CP": 4e-6}
    client = {"W1": 2e-6, "SP": 5e-6, "W2": 4e-6, "CP": 20e-6}
    assert [A.bottleneck_inequality(t) for t in (cpu, net, client)] == ["[2]", "[1]", None]
    # a path latency lengthens RTTmin and with it the threshold, by latency / bottleneck
    path = 100e-6
    for t, slowest in ((cpu, "SP"), (net, "W2")):
        longer = A.qd_min_bottleneck(t, cl=1e-6, rtt_s=A.rtt_min(t) + path)
        assert longer - A.qd_min_bottleneck(t, cl=1e-6) == pytest.approx(path / t[slowest])
    with pytest.raises(ValueError, match="missing"):
        A.bottleneck_inequality({"SP": 1e-6})


def test_qd_min_bottleneck_bad_input():
    with pytest.raises(ValueError, match="missing"):
        A.qd_min_bottleneck({"SP": 1e-6, "W2": 2e-6})
    with pytest.raises(ValueError, match="slowest stage is CP"):
        A.qd_min_bottleneck({"W1": 1e-6, "SP": 2e-6, "W2": 3e-6, "CP": 4e-6})
    with pytest.raises(ValueError, match="cl"):
        A.qd_min_bottleneck({"W1": 1e-6, "SP": 2e-6, "W2": 1e-6, "CP": 1e-6}, cl=-1.0)


def test_bad_inputs_found_by_the_reliability_walk() -> None:
    """Each of these returned a wrong number before; now each names its parameter."""
    import pytest as _pt

    t = {"W1": 1e-6, "SP": 16e-6, "W2": 5e-6, "CP": 8e-6}
    with _pt.raises(ValueError, match="rtt_s"):
        A.qd_min_bottleneck(t, rtt_s=1e-9)  # shorter than one pass round the ring
    with _pt.raises(ValueError, match="iosize"):
        A.iops_bandwidth_cap(512.9, 1e9, mtu=1500)  # a fraction of a byte was truncated
    f = A.numeric(A.qd_min_cpu_bound())
    with _pt.raises(ValueError, match="CL"):
        f(CL=-1, RTTmin=1e-4, SP=1e-5)  # gave 0
    with _pt.raises(ValueError, match="SP"):
        f(CL=1e-5, RTTmin=1e-4, SP=float("nan"))
    assert f(CL=0, RTTmin=1e-4, SP=1e-5) == _pt.approx(10)

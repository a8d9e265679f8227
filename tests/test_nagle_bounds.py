"""The Nagle delay bounds of models.analytic.symbolic, as formulas and against the simulator.

Butterfield's fill bound ``SP*((MTU - TCPIP)/(IOSIZE + H) - 1)`` assumes a held segment opens with a
whole response.  When responses straddle segments (560-byte responses in 1448-byte segments), a short
tail opens the next segment and the hold exceeds that bound; :func:`nagle_delay_bound_straddle`
covers every opening.  The ACK-window condition says when an ACK can end a hold before the segment
fills.
"""

from __future__ import annotations

import math

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from models import analytic as A
from models import framing
from models.analytic import S
from models.presets import busy_count
from models.sim import simulate

HEADER = framing.ISCSI_HEADER_BYTES
TCPIP = framing.TCPIP_BYTES


def _values(mtu: int, iosize: int, sp_s: float = 1.0) -> dict:
    return {S.MTU: mtu, S.TCPIP: TCPIP, S.IOSIZE: iosize, S.H: HEADER, S.SP: sp_s}


def test_fill_bound_is_the_source_formula():
    expected = S.SP * ((S.MTU - S.TCPIP) / (S.IOSIZE + S.H) - 1)
    assert sp.simplify(A.nagle_delay_bound_fill() - expected) == 0
    # about 16 responses of 560 bytes per 9000-byte packet: up to 15 SP after the first
    per_sp = float(A.nagle_delay_bound_fill().subs(_values(9000, 512)))
    assert per_sp == pytest.approx(framing.mss(9000) / 560 - 1, rel=1e-15)


def test_ack_window_condition_is_the_source_form():
    cond = A.nagle_ack_window_condition()
    assert isinstance(cond, sp.StrictGreaterThan) and cond.lhs == S.SP
    per_packet = A.responses_per_packet_expr()
    assert sp.simplify(cond.rhs - (S.CL + S.RTTmin) / (per_packet + 1)) == 0


@settings(max_examples=200, deadline=None)
@given(
    cl=st.floats(1e-7, 1e-3),
    rtt=st.floats(1e-6, 1e-2),
    sp_s=st.floats(1e-7, 1e-3),
    mtu=st.sampled_from([576, 1500, 4000, 9000]),
    iosize=st.integers(1, 8192),
)
def test_ack_window_condition_means_fill_time_exceeds_ack_return(cl, rtt, sp_s, mtu, iosize):
    """The condition holds exactly when filling a segment takes longer than the previous segment's
    ACK takes to return on a successor request (``CL + RTTmin - SP``)."""
    at = {S.CL: cl, S.RTTmin: rtt, **_values(mtu, iosize, sp_s)}
    threshold = float(A.nagle_ack_window_condition().rhs.subs(at))
    fill = sp_s * float(A.responses_per_packet_expr().subs(at))
    ack_back = cl + rtt - sp_s
    if not math.isclose(fill, ack_back, rel_tol=1e-9):
        assert (sp_s > threshold) == (fill > ack_back)


def test_ack_bound_is_the_source_formula():
    assert sp.simplify(A.nagle_delay_bound_ack() - (S.CL + S.RTTmin - 2 * S.SP)) == 0


@given(
    mss=st.integers(100, 70000),
    resp=st.integers(1, 20000),
    data=st.data(),
)
def test_fill_responses_counts_whole_responses(mss, resp, data):
    """The responses still needed after an opening of ``b`` bytes: the least ``n`` with
    ``b + n * R >= MSS`` (zero if the opening fills the segment)."""
    b = data.draw(st.integers(1, resp))
    n = A.nagle_fill_responses(b).subs(
        {S.MTU: mss + TCPIP, S.TCPIP: TCPIP, S.IOSIZE: resp - 1, S.H: 1}
    )
    least = max(0, -(-(mss - b) // resp))
    assert int(n) == least


@given(mtu=st.integers(600, 65536), iosize=st.integers(1, 16384))
def test_bounds_are_ordered(mtu, iosize):
    """source (fractional) <= whole responses <= any opening, in units of SP."""
    at = _values(mtu, iosize)
    fill = float(A.nagle_delay_bound_fill().subs(at))
    whole = int(A.nagle_delay_bound_whole().subs(at))
    straddle = int(A.nagle_delay_bound_straddle().subs(at))
    assert fill <= whole + 1e-12 and whole <= straddle
    mss, resp = mtu - TCPIP, iosize + HEADER
    assert whole == -(-mss // resp) - 1 and straddle == -(-(mss - 1) // resp)


def _longest_hold(mtu: int, iosize: int, **parts) -> tuple[float, float]:
    """(longest simulated hold of a response segment, SP), seconds: Nagle on the server, QD 64."""
    sc = busy_count("nagle", 64).replace(
        link={"mtu": mtu}, workload={"response_writes": (HEADER, iosize)}, **parts
    )
    return simulate(sc).directions["S>C"].hold_max_s, sc.server.proc_s


@pytest.mark.parametrize(
    "mtu, iosize", [(1500, 512), (1500, 1024), (1500, 256), (9000, 512), (9000, 1024), (4000, 700)]
)
def test_straddle_bound_holds_in_the_simulator(mtu, iosize):
    held, sp_s = _longest_hold(mtu, iosize)
    bound = float(A.nagle_delay_bound_straddle().subs(_values(mtu, iosize, sp_s)))
    assert held <= bound + 1e-12


def test_straddled_tail_exceeds_the_source_bound_at_mtu_1500():
    """560-byte responses in 1448-byte segments: three responses overrun a segment by 232 bytes,
    the tail opens the next one and waits three SP, where the source's bound allows 1.59 SP and the
    whole-response reading 2 SP.  The bound for any opening is reached exactly."""
    held, sp_s = _longest_hold(1500, 512)
    at = _values(1500, 512, sp_s)
    assert held > float(A.nagle_delay_bound_fill().subs(at))
    assert held > float(A.nagle_delay_bound_whole().subs(at))
    assert held == pytest.approx(float(A.nagle_delay_bound_straddle().subs(at)), abs=1e-12)


def test_whole_response_bound_is_reached_at_mtu_9000():
    held, sp_s = _longest_hold(9000, 512)
    at = _values(9000, 512, sp_s)
    assert held == pytest.approx(float(A.nagle_delay_bound_whole().subs(at)), abs=1e-12)
    assert held > float(A.nagle_delay_bound_fill().subs(at))  # the fraction of a response


def test_ack_ends_holds_when_the_condition_holds():
    """Without start latencies the ACK-window condition holds at MTU 9000 and every hold ends long
    before the segment could fill; with them, at MTU 1500, it fails and the hold is the fill."""
    quiet = {"tx_latency_s": 0.0, "rx_latency_s": 0.0}
    held, sp_s = _longest_hold(9000, 512, client=quiet, server=quiet)
    v = busy_count("nagle", 64).replace(client=quiet, server=quiet).symbol_values()
    at = {S.CL: v["CL"], S.RTTmin: v["RTTmin"], **_values(9000, 512, sp_s)}
    assert sp_s > float(A.nagle_ack_window_condition().rhs.subs(at))
    assert held < 0.2 * float(A.nagle_delay_bound_whole().subs(at))
    assert held < v["CL"] + v["RTTmin"] - sp_s  # below the ACK's return

    sc = busy_count("nagle", 64)
    v = sc.symbol_values()
    at = {S.CL: v["CL"], S.RTTmin: v["RTTmin"] + sc.path_latency_s(), **_values(1500, 512, sp_s)}
    assert sp_s < float(A.nagle_ack_window_condition().rhs.subs(at))
    held, _ = _longest_hold(1500, 512)
    assert held == pytest.approx(float(A.nagle_delay_bound_straddle().subs(at)), abs=1e-12)

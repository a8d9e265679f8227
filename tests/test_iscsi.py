"""Unit and property tests for models.iscsi (the exchange of one command)
and models.analytic.iscsi (its round trips in SymPy)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models import iscsi as I
from models.analytic import iscsi as D

# ---- negotiation ------------------------------------------------------------


@pytest.mark.parametrize(
    "ini, tgt, want",
    [("Yes", "Yes", True), ("Yes", "No", True), ("No", "Yes", True), ("No", "No", False)],
)
def test_initial_r2t_is_or_negotiated(ini, tgt, want):
    s = I.negotiate({"InitialR2T": ini}, {"InitialR2T": tgt})
    assert s.initial_r2t is want


@pytest.mark.parametrize(
    "ini, tgt, want",
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_immediate_data_is_and_negotiated(ini, tgt, want):
    s = I.negotiate({"ImmediateData": ini}, {"ImmediateData": tgt})
    assert s.immediate_data is want


def test_numbers_take_the_minimum_and_segment_lengths_are_declared():
    s = I.negotiate(I.OPEN_ISCSI_DEFAULTS, I.IET_DEFAULTS)
    assert s.first_burst_length == 65536 and s.max_burst_length == 262144
    assert s.max_outstanding_r2t == 1
    # each side declares what it can receive; nothing is taken as a minimum
    assert s.target_mrdsl == 8192 and s.initiator_mrdsl == 131072
    assert s.initial_r2t and s.immediate_data


def test_rfc_defaults():
    s = I.negotiate()
    assert s == I.Session()
    assert I.RFC7143_DEFAULTS["MaxRecvDataSegmentLength"] == 8192
    assert I.RFC7143_DEFAULTS["InitialR2T"] is True


def test_digests_pick_the_initiators_first_accepted_value():
    s = I.negotiate({"HeaderDigest": "CRC32C,None"}, {"HeaderDigest": "None,CRC32C"})
    assert s.header_digest and not s.data_digest
    with pytest.raises(ValueError, match="DataDigest"):
        I.negotiate({"DataDigest": "CRC32C"}, {"DataDigest": "None"})


@pytest.mark.parametrize(
    "offer, word",
    [
        ({"MaxBurstLength": 16384, "FirstBurstLength": 65536}, "FirstBurstLength"),
        ({"MaxBurstLength": 16384}, "MaxBurstLength"),
        ({"MaxOutstandingR2T": 0}, "MaxOutstandingR2T"),
        ({"MaxRecvDataSegmentLength": 100}, "MaxRecvDataSegmentLength"),
        ({"MaxRecvDataSegmentLength": 2**24}, "MaxRecvDataSegmentLength"),
        ({"InitialR2T": "yes"}, "InitialR2T"),
        ({"ImmediateData": 1}, "ImmediateData"),
        ({"FirstBurstLength": True}, "FirstBurstLength"),
        ({"MaxBurstLenght": 65536}, "MaxBurstLenght"),
        ({"HeaderDigest": "MD5"}, "HeaderDigest"),
    ],
)
@pytest.mark.parametrize("side", ["initiator", "target"])
def test_bad_keys_name_the_key(offer, word, side):
    with pytest.raises(ValueError, match=word):
        I.negotiate(**{side: offer})


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(first_burst_length=65536, max_burst_length=8192), "FirstBurstLength"),
        (dict(max_outstanding_r2t=0), "MaxOutstandingR2T"),
        (dict(target_mrdsl=511), "MaxRecvDataSegmentLength"),
        (dict(initial_r2t="Yes"), "initial_r2t"),
    ],
)
def test_session_checks_the_same_rules(kwargs, word):
    with pytest.raises(ValueError, match=word):
        I.Session(**kwargs)


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: I.exchange("erase", 10), "op"),
        (lambda: I.exchange("read", -1), "size_bytes"),
        (lambda: I.exchange("read", 1.5), "size_bytes"),
        (lambda: I.exchange("read", 10, session={"InitialR2T": True}), "session"),
        (lambda: I.round_trips("write", True), "size_bytes"),
        (lambda: I.command_latency_s("read", 10, -1.0, 1e9), "rtt_s"),
        (lambda: I.command_latency_s("read", 10, 1e-3, 0), "link_bps"),
        (lambda: I.command_latency_s("read", 10, 1e-3, 1e9, added_delay_s=-1), "added_delay_s"),
        (lambda: I.throughput_bound_Bps("read", 10, 1e-3, 1e9, qd=0), "qd"),
        (lambda: I.throughput_bound_Bps("read", 0, 1e-3, 1e9), "size_bytes"),
    ],
)
def test_bad_calls_name_the_parameter(call, word):
    with pytest.raises(ValueError, match=word):
        call()


# ---- the exchange -----------------------------------------------------------


def test_iet_write_of_64_kib_waits_for_an_r2t_and_a_response():
    for imm in (True, False):  # IET's manual and code disagree
        s = I.negotiate(I.OPEN_ISCSI_DEFAULTS, {**I.IET_DEFAULTS, "ImmediateData": imm})
        legs = I.exchange("write", 65536, s)
        assert [leg.direction for leg in legs] == ["C>S", "S>C"] * 2
        assert legs[1].pdus[0].opcode == "R2T"
        assert legs[1].pdus[0].r2t_bytes == 65536 - (8192 if imm else 0)
        assert I.round_trips("write", 65536, s) == 2


def test_unsolicited_write_needs_one_round_trip():
    s = I.negotiate(I.OPEN_ISCSI_DEFAULTS, {**I.IET_DEFAULTS, "InitialR2T": False})
    legs = I.exchange("write", 65536, s)
    assert len(legs) == 2 and I.unsolicited_bytes(65536, s) == (8192, 57344)
    # ... but anything past FirstBurstLength still waits for an R2T
    assert I.round_trips("write", 65536 + 1, s) == 2


def test_read_pdus_and_status():
    s = I.Session(initiator_mrdsl=8192, max_burst_length=16384, first_burst_length=16384)
    legs = I.exchange("read", 65536, s)
    back = legs[1].pdus
    assert [p.opcode for p in back] == ["SCSI Data-In"] * 8 + ["SCSI Response"]
    # F bit at each MaxBurstLength boundary (every other 8 KiB PDU)
    assert [p.final for p in back[:8]] == [False, True] * 4
    folded = I.exchange("read", 65536, s, status_in_data_in=True)
    assert folded[1].pdus[-1].status and len(folded[1].pdus) == 8
    assert I.exchange("read", 0, s)[1].kind == "response"


def test_writes_are_one_send_per_pdu_or_header_then_data():
    s = I.negotiate(target=I.IET_DEFAULTS)
    legs = I.exchange("write", 65536, s)
    assert legs[0].writes == (48 + 8192,)
    assert legs[2].writes == (48 + 8192,) * 7
    split = I.exchange("write", 65536, s, split_header=True)
    assert split[2].writes == (48, 8192) * 7
    assert [leg.socket_bytes for leg in split] == [leg.socket_bytes for leg in legs]


def test_padding_and_digests():
    s = I.Session(header_digest=True, data_digest=True)
    assert I.Pdu("SCSI Data-In", 5).wire_bytes(s) == 48 + 4 + 8 + 4
    assert I.Pdu("R2T").wire_bytes(s) == 48 + 4
    assert I.Pdu("SCSI Data-In", 5).wire_bytes(I.Session()) == 48 + 8


sessions = st.builds(
    lambda fbl, extra, r, mt, mi, r2t, imm: I.Session(
        initial_r2t=r2t,
        immediate_data=imm,
        first_burst_length=fbl,
        max_burst_length=fbl + extra,
        max_outstanding_r2t=r,
        target_mrdsl=mt,
        initiator_mrdsl=mi,
    ),
    st.integers(512, 2**18),
    st.integers(0, 2**18),
    st.integers(1, 6),
    st.integers(512, 2**17),
    st.integers(512, 2**17),
    st.booleans(),
    st.booleans(),
)
sizes = st.integers(0, 2**21)


@given(sessions, sizes, st.sampled_from(["read", "write"]))
def test_legs_alternate_and_count_the_round_trips(s, n, op):
    m = 0 if op == "read" else len(I.bursts(n, s))
    assert I.round_trips(op, n, s) == (
        1 if op == "read" else 1 + math.ceil(m / s.max_outstanding_r2t)
    )
    # SymPy's expression agrees with the count
    expr = D.round_trips_expr(op, s.initial_r2t, s.immediate_data)
    assert int(expr.subs(D.session_values(s, n))) == I.round_trips(op, n, s)
    # ... and so does the longest chain of waits among the messages
    chain = I.critical_chain(op, n, s)
    assert sum(m.direction == "S>C" for m in chain) == I.round_trips(op, n, s)
    assert chain[0].after is None and chain[-1].pdus[-1].status
    if not I.is_chain(op, n, s):
        assert op == "write" and (
            m > s.max_outstanding_r2t > 1 or (m and sum(I.unsolicited_bytes(n, s)) > 0)
        )
        with pytest.raises(ValueError, match="not a chain"):
            I.exchange(op, n, s)
        return
    legs = I.exchange(op, n, s)
    assert [leg.direction for leg in legs] == ["C>S", "S>C"] * (len(legs) // 2)
    assert len(legs) // 2 == I.round_trips(op, n, s)


@given(sessions, sizes)
def test_no_pdu_lost_and_every_byte_written_once(s, n):
    msgs = I.messages("write", n, s)
    pdus = [p for m in msgs for p in m.pdus]
    # every PDU's bytes are in exactly the writes of its message
    for m in msgs:
        assert sum(m.writes) == sum(p.wire_bytes(s) for p in m.pdus)
    data = [p for p in pdus if p.opcode in ("SCSI Command", "SCSI Data-Out")]
    pieces = [(p.offset, p.data_bytes) for p in data if p.data_bytes]
    covered = 0
    for off, size in pieces:  # in order, no gap or overlap
        assert off == covered
        covered += size
    assert covered == n
    immediate, unsolicited = I.unsolicited_bytes(n, s)
    r2ts = [p for p in pdus if p.opcode == "R2T"]
    assert immediate + unsolicited + sum(p.r2t_bytes for p in r2ts) == n
    assert immediate + unsolicited <= s.first_burst_length
    assert all(p.r2t_bytes <= s.max_burst_length for p in r2ts)
    # every R2T is answered by Data-Out covering exactly its range
    for r in r2ts:
        answer = [
            p
            for p in data
            if p.opcode == "SCSI Data-Out" and r.offset <= p.offset < r.offset + r.r2t_bytes
        ]
        assert sum(p.data_bytes for p in answer) == r.r2t_bytes
        assert answer[-1].final
    assert all(p.data_bytes <= s.target_mrdsl for p in data)
    # exactly one status, the last PDU
    assert [p.status for p in pdus].count(True) == 1 and pdus[-1].status


@given(sessions, sizes)
def test_the_r2t_window_slides(s, n):
    """At most R R2Ts outstanding; the R2T of burst j + R goes when burst j's data arrive."""
    msgs = I.messages("write", n, s)
    window = s.max_outstanding_r2t
    for i, m in enumerate(msgs):
        assert m.after is None or (m.after < i and msgs[m.after].direction != m.direction)
    answered: set[int] = set()
    outstanding = 0
    for i, m in enumerate(msgs):
        r2ts = sum(p.opcode == "R2T" for p in m.pdus)
        if r2ts:
            if m.after:  # a later R2T: its trigger is a solicited Data-Out sequence
                assert m.after in answered and r2ts == 1
            outstanding += r2ts
            assert outstanding <= window
        elif m.direction == "C>S" and m.after is not None:  # a solicited Data-Out sequence
            assert msgs[m.after].pdus[0].opcode == "R2T"
            answered.add(i)
            outstanding -= 1
    assert outstanding == 0
    first = [m for m in msgs if m.after == 0 and m.pdus[0].opcode == "R2T"]
    m_ = len(I.bursts(n, s))
    assert [len(f.pdus) for f in first] == ([min(window, m_)] if m_ else [])


@given(sessions, sizes, st.booleans())
def test_read_delivers_every_byte_in_segments_the_initiator_accepts(s, n, f):
    legs = I.exchange("read", n, s, status_in_data_in=f)
    assert len(legs) == 2 and legs[0].pdus[0].opcode == "SCSI Command"
    back = [p for p in legs[1].pdus if p.opcode == "SCSI Data-In"]
    assert sum(p.data_bytes for p in back) == n
    assert all(0 < p.data_bytes <= s.initiator_mrdsl for p in back)
    assert [p.status for p in legs[1].pdus].count(True) == 1
    assert legs[1].pdus[-1].status


@given(
    sessions,
    st.integers(1, 2**21),
    st.sampled_from(["read", "write"]),
    st.floats(0, 1e-2),
    st.floats(0, 1e-2),
)
def test_each_round_trip_waits_at_most_once_for_the_added_delay(s, n, op, rtt, dly):
    t0 = I.command_latency_s(op, n, rtt, 1e9, s)
    t1 = I.command_latency_s(op, n, rtt, 1e9, s, added_delay_s=dly)
    waits = I.round_trips(op, n, s)
    if I.is_chain(op, n, s):
        # every round trip lies on the one chain
        assert t1 - t0 == pytest.approx(waits * dly, abs=1e-12)
    else:
        # a sliding window, or R2Ts overtaking unsolicited data: the response's wait at least,
        # every round trip at most
        least = 1
        assert least * dly - 1e-12 <= t1 - t0 <= waits * dly + 1e-12
    x = I.throughput_bound_Bps(op, n, rtt, 1e9, 4, s)
    assert x <= 1e9 / 8 and x <= 4 * n / t0 * (1 + 1e-12)


def test_latency_is_round_trips_plus_wire_time():
    s = I.negotiate(target=I.IET_DEFAULTS)
    legs = I.exchange("write", 65536, s)
    wire = sum(I.leg_wire_bytes(leg) for leg in legs)
    # one send() per PDU with TCP_NODELAY: each PDU its own segments
    segs = 8 * math.ceil(8240 / 1448) + 2
    assert wire == 8 * 8240 + 96 + 90 * segs
    t = I.command_latency_s("write", 65536, 1e-3, 1e9, s)
    assert t == pytest.approx(2e-3 + wire * 8 / 1e9)


def _batch_latency(n, rtt, link_bps, s):
    """The model this package replaced: R2Ts in batches of R, each batch waiting for the whole
    previous batch's data, and the first waiting for all the unsolicited data."""
    rate = link_bps / 8
    msgs = I.messages("write", n, s)
    wire = sum(I.message_wire_bytes(m) for m in msgs)
    return I.round_trips("write", n, s) * rtt + wire / rate


@pytest.mark.parametrize("window", [2, 3, 4])
def test_a_sliding_window_beats_batches_of_r2ts(window):
    """Batches of R2Ts overstate a write's latency by a tenth or more when R is 2 to 4: with a
    window, each R2T goes as soon as one burst's data arrive, not the whole batch's."""
    s = I.Session(max_burst_length=65536, max_outstanding_r2t=window)
    n, rtt, c = 2**20, 1e-3, 1e9
    slid = I.command_latency_s("write", n, rtt, c, s)
    batched = _batch_latency(n, rtt, c, s)
    assert batched > 1.1 * slid
    # with one R2T at a time there is no difference
    one = I.Session(max_burst_length=65536)
    assert I.command_latency_s("write", n, rtt, c, one) == pytest.approx(
        _batch_latency(n, rtt, c, one)
    )


def test_sympy_delay_sensitivity_is_the_round_trip_count():
    n = D.round_trips_expr("write", True, True)
    assert D.delayed_waits(n) == n
    assert D.round_trips_expr("read") == 1
    with pytest.raises(ValueError, match="op"):
        D.round_trips_expr("erase")


def test_module_imports_no_numeric_library():
    code = (
        "import sys, models.iscsi; "
        "print([m for m in ('numpy', 'sympy', 'pandas', 'scipy') "
        "if m in sys.modules])"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env
    )
    assert out.stdout.strip() == "[]"


# ---- the sliding window in SymPy --------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 2, 3, 4])
@pytest.mark.parametrize("m", [1, 2, 5, 8, 9])
def test_closed_form_solves_the_window_recurrence(window, m):
    """The closed form's last-burst time is the unrolled recurrence, in each regime."""
    import sympy as sp

    tb = D.Wb / D.C
    q = -(-m // window) - 1
    i = m - q * window
    period = {"window": D.RTT + D.d + D.Wr / D.C + tb, "link": window * tb}
    for regime, p in period.items():
        closed = (i - 1) * tb + tb + q * p
        assert sp.simplify(D.unrolled_last_sent(m, window, regime) - closed) == 0
    # the step itself picks whichever is later: the R2T or the free link
    e = sp.Symbol("e", positive=True)
    step = D.window_step(e, e + 10 * tb)
    assert step.subs({D.RTT: 0, D.d: 0, D.Wr: 1, D.Wb: 1, D.C: 1}) == e + 11


@pytest.mark.parametrize("initial_r2t, immediate", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("window", [1, 2, 4, 16])
@pytest.mark.parametrize("size", [0, 4096, 40000, 65536, 300000, 2**20])
def test_closed_form_is_the_timeline(initial_r2t, immediate, window, size):
    """write_latency_expr, evaluated, is what models.iscsi.timeline computes message by message."""
    s = I.Session(
        initial_r2t=initial_r2t,
        immediate_data=immediate,
        first_burst_length=65536,
        max_burst_length=65536,
        max_outstanding_r2t=window,
    )
    expr = D.write_latency_expr(initial_r2t, immediate)
    for rtt, c, dly in ((1e-4, 1e9, 0.0), (1e-2, 1e9, 2e-3), (1e-3, 1e8, 0.0)):
        model = float(expr.subs(D.latency_values(s, size, rtt, c, dly)))
        assert model == pytest.approx(
            I.command_latency_s("write", size, rtt, c, s, added_delay_s=dly), rel=1e-12
        )


def test_closed_form_with_one_r2t_at_a_time_is_the_chain_formula():
    """R = 1 and no unsolicited data: the window form is n round trips plus all the wire time."""
    s = I.Session(max_burst_length=65536, immediate_data=False)
    size, rtt, c = 300000, 1e-3, 1e9
    window = float(D.write_latency_expr(True, False).subs(D.latency_values(s, size, rtt, c)))
    wire = sum(I.message_wire_bytes(m) for m in I.messages("write", size, s))
    chain = D.latency_expr(D.round_trips_expr("write", True, False)).subs(
        {**D.session_values(s, size), D.RTT: rtt, D.d: 0, D.X: wire, D.C: c / 8}
    )
    assert window == pytest.approx(float(chain), rel=1e-12)


def test_unrolled_recurrence_rejects_bad_input():
    with pytest.raises(ValueError, match="regime"):
        D.unrolled_last_sent(3, 2, "both")
    with pytest.raises(ValueError, match="window"):
        D.unrolled_last_sent(0, 2, "link")


def test_command_size_is_bounded() -> None:
    """A 10**12-byte command used to be listed PDU by PDU for ever; now it is refused."""
    import pytest as _pt

    from models import iscsi

    with _pt.raises(ValueError, match="size_bytes"):
        iscsi.exchange("read", 10**12)
    assert iscsi.round_trips("read", iscsi.MAX_COMMAND_BYTES) == 1

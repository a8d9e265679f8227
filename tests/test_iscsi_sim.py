"""The iSCSI exchange replayed in the packet simulator: each command
takes the derived number of round trips, and nothing is lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from models import iscsi, presets
from models.sim import simulate

KiB = 1024

keys = st.fixed_dictionaries(
    {
        "InitialR2T": st.sampled_from(["Yes", "No"]),
        "ImmediateData": st.sampled_from(["Yes", "No"]),
        "FirstBurstLength": st.sampled_from([8 * KiB, 64 * KiB]),
        "MaxBurstLength": st.sampled_from([64 * KiB, 256 * KiB]),
        "MaxOutstandingR2T": st.integers(1, 2),
        "MaxRecvDataSegmentLength": st.sampled_from([8 * KiB, 64 * KiB]),
    }
)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["read", "write"]), st.integers(1, 300 * KiB), keys)
def test_simulated_command_takes_the_derived_round_trips(op, size, target):
    session = iscsi.negotiate(target=target)
    legs = iscsi.exchange(op, size, session)
    sc = presets.iscsi_command(op, size, session, run={"ops": 12, "check": True})
    d = 2e-3  # seconds added per round trip
    near = simulate(sc)
    far = simulate(sc.replace(link={"latency_s": d / 2}))
    n = iscsi.round_trips(op, size, session)
    assert n == len(legs) // 2
    assert abs((far.rtt_mean_s - near.rtt_mean_s) / d - n) < 0.01 * n
    # No PDU lost: a command completes only when the client has read all
    # of its last leg, and each leg is sent only after the previous one
    # was read whole (run.check verifies the byte accounting after every
    # event); so every byte of every completed command was sent.
    per_op = {
        "C>S": sum(sum(leg.writes) for leg in legs[0::2]),
        "S>C": sum(sum(leg.writes) for leg in legs[1::2]),
    }
    for r in (near, far):
        for direction, nbytes in per_op.items():
            assert r.bytes_sent[direction] >= r.completed_total * nbytes
        assert r.in_flight == 1 and r.completed_total == 13

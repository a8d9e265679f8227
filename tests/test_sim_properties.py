"""Property tests of the simulator over random scenarios (hypothesis).

The scenarios are drawn field by field from the scenario's own
declarations (``tests/sim_strategies.py``), so every field is exercised.

Invariants checked after every event (``run.check``): exactly QD
operations in flight, acknowledged <= received <= sent <= written bytes in
both directions, every byte written is either sent or queued, requests
served once each and in order.  At the end: none lost or completed twice,
IOPS never above the bottleneck bound, Little's law, determinism for a
seed, and the fast-forward over repeats gives the long run's numbers
exactly, on every field of the result.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sim_strategies import assert_same_numbers, field_strategy, scenarios

from models import framing
from models.sim import PARTS, Scenario, simulate


def test_every_field_has_a_strategy():
    for part, cls in PARTS.items():
        for name, spec in cls.specs().items():
            assert field_strategy(spec) is not None, f"{part}.{name}"


def bottleneck_iops(sc) -> float:
    """1 / max(stage time): SP, CP and each direction's least wire time
    (payload only, full frames), per operation."""
    sec_per_byte = 8 / sc.link.bandwidth_bps  # bytes -> s
    share = framing.mss(sc.link.mtu) / (min(sc.link.mtu, 65535) + framing.MAC_BYTES)
    legs = sc.workload.exchange
    w1 = sum(map(sum, legs[0::2])) * sec_per_byte / share
    w2 = sum(map(sum, legs[1::2])) * sec_per_byte / share
    low = 1 - sc.run.jitter  # fastest draws
    n_c, n_s = len(legs) // 2, len(legs) // 2  # messages each
    slowest = max(sc.server.proc_s * low * n_s, sc.client.proc_s * low * n_c, w1, w2)
    return 1.0 / slowest


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(run={"check": True}))
def test_invariants_hold_and_iops_respects_the_bound(sc):
    r = simulate(sc)  # invariants after every event
    assert r.in_flight == sc.workload.qd  # exactly QD outstanding
    assert r.completed_total == sc.warmup + sc.run.ops  # none lost
    for d in ("C>S", "S>C"):
        assert 0 <= r.bytes_acked[d] <= r.bytes_sent[d]
    # Over a window of length T no more than T / TPTmin operations pass
    # the slowest stage, plus the at most QD already past it.  A token
    # bucket lets a full bucket through at once on top of its rate, so it
    # lengthens the window by the time the rate takes to send that much.
    window = r.ops / r.iops
    if sc.link.bucket_bytes is not None:
        window += sc.link.bucket_bytes * 8 / sc.link.bandwidth_bps  # bytes -> s
    assert r.ops <= bottleneck_iops(sc) * window * (1 + 1e-9) + sc.workload.qd
    assert r.iops > 0 and all(t > 0 for t in r.rtts_s)


@settings(max_examples=25, deadline=None)
@given(scenarios())
def test_deterministic_for_a_seed(sc):
    sc = sc.replace(run={"trace": True})
    a, b = simulate(sc), simulate(sc)
    assert a.iops == b.iops and a.rtts_s == b.rtts_s
    assert a.trace == b.trace and a.hosts == b.hosts and a.events == b.events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenarios(
        run={"jitter": 0.0, "trace": False},
        client={"wake_spread_s": 0.0, "wake_late_share": 0.0},
        server={"wake_spread_s": 0.0, "wake_late_share": 0.0},
    ),
    st.integers(150, 600),
)
def test_fast_forward_gives_the_long_runs_numbers(sc, ops):
    # Every field of the result, bit for bit (with run.check drawn too:
    # then the jump itself is checked, models.sim.fastforward).
    sc = sc.replace(run={"ops": ops})
    slow = simulate(sc.replace(run={"fast_forward": False}))
    fast = simulate(sc.replace(run={"fast_forward": True}))
    assert slow.skipped_ops == 0 and slow.fast_forward_off_reason == "run.fast_forward is false"
    assert fast.fast_forward_off_reason is None
    assert_same_numbers(fast, slow)
    if fast.skipped_ops:
        assert fast.cycle_ops > 0 and fast.events < slow.events


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(run={"check": True}), st.integers(150, 400))
def test_random_scenarios_give_the_same_numbers_in_both_modes(sc, ops):
    # Whatever the scenario (random ones included: then the fast-forward
    # is off and says why), the two modes agree on every field.
    sc = sc.replace(run={"ops": ops})
    slow = simulate(sc.replace(run={"fast_forward": False}))
    fast = simulate(sc.replace(run={"fast_forward": True}))
    assert_same_numbers(fast, slow)
    random = (
        sc.run.jitter
        or sc.run.trace
        or any(h.wake_spread_s or h.wake_late_share for h in (sc.client, sc.server))
    )
    if random:
        assert fast.skipped_ops == 0 and fast.fast_forward_off_reason


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios(run={"check": False}))
def test_littles_law(sc):
    # In a closed loop every measured operation overlaps qd - 1 others:
    # IOPS * mean RTT = QD, up to the edge effect of the window (at most
    # qd operations straddle each end).
    qd = sc.workload.qd
    # With no warm-up the window starts at time 0, before any setup
    # exchange (and a probe it may wait for): not the loop's time.
    sc = sc.replace(run={"ops": max(sc.run.ops, 30 * qd), "warmup_ops": max(sc.warmup, 1)})
    r = simulate(sc)
    # The edge term holds while no operation outlasts a good part of the
    # window: one stalled from before it (a timer of tens of ms against a
    # window of a few hundred microseconds) would count whole.
    window = r.ops / r.iops
    assume(max(r.rtts_s) < window / 4)
    edge = 2 * qd / r.ops * 2 + 0.02
    assert math.isclose(r.iops * r.rtt_mean_s, qd, rel_tol=edge)


def _general_paths_only(monkeypatch) -> None:
    """Turn off the engine's shortcuts for stock rules (the sender's
    one-buffer write and its inline ``Autocork.defer``, the endpoint's
    inline ``LinuxAck`` calls, the channel's inline hand-over and its loop
    over a super-packet's segments), so every write and every segment takes
    the path a user-registered rule takes."""
    from models.sim import endpoint as ep_mod
    from models.sim import link as link_mod

    monkeypatch.setattr(link_mod.Channel, "send", link_mod.Channel._send)
    monkeypatch.setattr(link_mod.Channel, "send_gso", link_mod.Channel._send_gso)

    init = ep_mod.Endpoint.__init__

    def general(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.sender.plain = False
        self.sender.stock_cork = False
        self.stock_ack = False

    monkeypatch.setattr(ep_mod.Endpoint, "__init__", general)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(run={"check": True, "fast_forward": False}), st.integers(100, 300))
def test_the_shortcuts_for_stock_rules_change_no_number(sc, ops):
    """The fast paths taken only for the stock rule classes give, bit for bit,
    what the general path gives (hypothesis: monkeypatch is set up by hand
    because a function-scoped fixture is not reset between examples)."""
    sc = sc.replace(run={"ops": ops})
    fast = simulate(sc)
    with pytest.MonkeyPatch.context() as mp:
        _general_paths_only(mp)
        slow = simulate(sc)
    assert_same_numbers(fast, slow)


@pytest.mark.parametrize("bucket", [None, 4])
def test_a_super_packet_s_loop_merges_what_the_general_path_merges(bucket):
    """The channel's loop over a super-packet's segments (and its token-bucket variant) against
    the loop over ``send``, on runs where GRO merges most of them: the same numbers, and merges
    seen (the random scenarios above seldom draw 64 KiB responses with GRO)."""
    sc = Scenario(
        workload={"qd": 8, "response_writes": (48, 65536)},
        link={
            "mtu": 1500,
            "softirq_on_sender": True,
            "bucket_bytes": bucket and bucket * 1514,  # (frames wait in the qdisc for tokens)
            "watchdog_wake": bucket is not None,
        },
        client={"gro": True, "nodelay": True},
        server={"gro": True, "nodelay": True},
        kernel={"congestion_control": "bbr", "size_goal": 65536},  # (GSO buffers)
        run={"ops": 120, "fast_forward": False},
    )
    fast = simulate(sc)
    with pytest.MonkeyPatch.context() as mp:
        _general_paths_only(mp)
        slow = simulate(sc)
    assert_same_numbers(fast, slow)
    receiver = fast.hosts["client"]  # (of the responses)
    assert receiver.received_data < fast.data_segments["S>C"]

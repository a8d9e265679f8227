"""The late wake-up (``Host.wake_late_share``): a share of the wake-ups after a brief idle
still takes the slow wake-up ``wake_s``.  With it the simulated Nagle server on the loopback
enters the kernel's batched delayed-ACK stall at QD 8 (a late server wake-up lets the client's
requests pile up; the server's first header then leaves alone, and the client, out of
requests, delays its ACK); without it the simulator stays in the staggered fast regime."""

from __future__ import annotations

import pytest

from models.kernel import load_kernel_run, simulate_summary
from models.sim import Scenario, hostprofile, simulate
from models.validation import fidelity as FID

WAKE = {"wake_s": 40e-6, "wake_fast_s": 5e-6, "wake_fast_idle_s": 200e-6}


def _scenario(share: float) -> Scenario:
    host = {**WAKE, "proc_s": 10e-6, "wake_late_share": share}
    return Scenario(workload={"qd": 2}, server=host, client=host, run={"ops": 400})


def test_share_zero_changes_nothing_and_keeps_the_fast_forward():
    a = simulate(
        Scenario(
            workload={"qd": 2},
            server={**WAKE, "proc_s": 10e-6},
            client={**WAKE, "proc_s": 10e-6},
            run={"ops": 400},
        )
    )
    b = simulate(_scenario(0.0))
    assert a.rtts_s == b.rtts_s
    assert b.fast_forward_off_reason is None


def test_share_one_is_every_wake_up_slow():
    late = simulate(_scenario(1 - 1e-12).replace(run={"fast_forward": False}))  # (below 1)
    slow = {**WAKE, "proc_s": 10e-6, "wake_fast_idle_s": 0.0}
    never_fast = simulate(
        Scenario(
            workload={"qd": 2}, server=slow, client=slow, run={"ops": 400, "fast_forward": False}
        )
    )
    assert late.rtts_s == never_fast.rtts_s


def test_draws_are_seeded_and_turn_the_fast_forward_off():
    a, b = simulate(_scenario(0.3)), simulate(_scenario(0.3))
    assert a.rtts_s == b.rtts_s
    assert "wake_late_share" in a.fast_forward_off_reason
    c = simulate(_scenario(0.3).replace(run={"seed": 1}))
    assert c.rtts_s != a.rtts_s


@pytest.mark.parametrize("bad", [-0.1, 1.0, "0.1"])
def test_bad_share_names_the_parameter(bad):
    with pytest.raises(ValueError, match="wake_late_share"):
        Scenario(server={"wake_late_share": bad})


def test_a_profile_keeps_the_share_in_its_range():
    p = hostprofile.shipped()
    assert 0 < p.host["wake_late_share"] < hostprofile.COST_RANGES["wake_late_share"].hi_s
    d = {**p.to_dict(), "host": {**p.host, "wake_late_share": 0.9}}
    with pytest.raises(ValueError, match=r"wake_late_share must be in \[0, 0.5\]"):
        hostprofile.validate(d)


def _loopback_nagle_row(qd: int) -> tuple[dict, int]:
    run = load_kernel_run(prefix=FID.FIELD_PREFIX)
    t = run.table("iscsi_loop")
    pick = (
        (t.link == "loopback")
        & (t.cc == "reno")
        & (t.iosize_bytes == 512)
        & (t.sock_mode == "nagle")
        & (t.client_sock_mode == "nodelay")
        & (t.qd == qd)
    )
    return t[pick].iloc[0].to_dict(), run.hz


@pytest.mark.parametrize("share, stalls", [(None, True), (0.0, False)])
def test_the_nagle_server_enters_the_kernels_stall_only_with_late_wake_ups(share, stalls):
    """The kernel's run stalls (about 180 operations/s); the shipped profile does too, and the
    wrong model without late wake-ups does not (it runs at about 100 k operations/s)."""
    row, hz = _loopback_nagle_row(8)
    assert row["stalled_pct"] > 50  # the kernel's
    profile = hostprofile.shipped()
    if share is not None:
        profile = hostprofile.validate(
            {**profile.to_dict(), "host": {**profile.host, "wake_late_share": share}}
        )
    s = simulate_summary(FID.field_scenario("iscsi_loop", row, FID.ProfileHost(profile), hz))
    assert s.stalls is stalls
    if stalls:
        assert abs(s.iops / row["iops"] - 1) <= FID.IOPS_TOL


CURVE = ((2e-6, 19e-6), (200e-6, 25e-6), (40e-3, 65e-6))


def test_a_share_with_nothing_to_be_late_against_is_refused_by_name():
    # without a fast step or a curve every wake-up takes wake_s: the draw would change nothing
    host = {"wake_s": 40e-6, "wake_late_share": 0.02}
    with pytest.raises(
        ValueError,
        match=r"server\.wake_late_share .* server\.wake_fast_idle_s .* server\.wake_curve_s",
    ):
        Scenario(server=host)
    Scenario(server={**host, "wake_late_share": 0.0})  # without the share: accepted


def _curve_run(curve: tuple, share: float):
    host = {"wake_curve_s": curve, "proc_s": 10e-6, "wake_late_share": share, "nodelay": True}
    return simulate(
        Scenario(workload={"qd": 2}, server=host, client=host, run={"ops": 400, "seed": 3})
    )


def test_on_a_curve_a_late_wake_up_takes_the_curve_s_last_point():
    every = _curve_run(CURVE, 1 - 1e-12)  # (below 1: every draw late)
    flat = _curve_run(((2e-6, 65e-6), (40e-3, 65e-6)), 0.0)  # the last point's latency, always
    assert every.rtts_s == flat.rtts_s
    never = _curve_run(CURVE, 0.0)
    assert never.fast_forward_off_reason is None
    some = _curve_run(CURVE, 0.1)
    assert "wake_late_share" in some.fast_forward_off_reason
    # a tenth of the wake-ups late: slower than none, faster than all
    assert sum(never.rtts_s) < sum(some.rtts_s) < sum(every.rtts_s)

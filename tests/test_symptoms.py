"""The numeric tests of the "Diagnose a stall" page (models.symptoms): each against the simulator
and the kernel profile it reads, and each bad input refused with the parameter named."""

from __future__ import annotations

import pytest

from models import presets, symptoms
from models.sim import Scenario, get_profile, simulate


def test_timers_come_from_the_profile() -> None:
    p = get_profile("linux-6")
    assert symptoms.which_timer(1 / p.delack_min_s, 1) == "delayed-ack"
    assert symptoms.which_timer(1 / p.delack_max_s, 1) == "delayed-ack"
    assert symptoms.which_timer(1 / p.rto_min_s, 1) == "probe"
    # Between the two timers, and far from both: no timer.
    assert symptoms.which_timer(1 / 0.1, 1) is None
    assert symptoms.which_timer(5000, 1) is None
    # A coarser clock stretches the delayed ACK's longest wait (HZ=100: 40 ms + a tick).
    assert symptoms.which_timer(1 / 0.055, 1, hz=100) == "delayed-ack"
    assert symptoms.which_timer(1 / 0.055, 1, hz=1000) is None


@pytest.mark.parametrize("qd", [1, 2, 3])
def test_simulated_stalls_are_recognised(qd: int) -> None:
    r = simulate(Scenario(workload={"qd": qd}, run={"ops": 200}))
    assert symptoms.which_timer(r.iops, qd) == "delayed-ack"
    fixed = simulate(Scenario(workload={"qd": qd}, server={"nodelay": True}, run={"ops": 200}))
    assert symptoms.which_timer(fixed.iops, qd) is None


def test_held_tail_matches_flory() -> None:
    """A tail of zero bytes is what lets Flory's 1448 run fast; 1447 stalls."""
    for n in (1447, 1448):
        stalled = symptoms.which_timer(simulate(presets.flory(n)).iops, 1) == "delayed-ack"
        assert stalled == (symptoms.held_tail_bytes(n, mtu=1500) != 0)


def test_utilisation_of_a_cpu_bound_run() -> None:
    sc = presets.one_segment(workload={"qd": 32}, run={"ops": 2000})
    assert symptoms.utilisation(simulate(sc).iops, sc.server.proc_s) == pytest.approx(1, abs=0.01)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: symptoms.timer_period_s(0, 1), "iops"),
        (lambda: symptoms.timer_period_s(10, -1), "qd"),
        (lambda: symptoms.which_timer(float("nan"), 1), "iops"),
        (lambda: symptoms.which_timer(10, 1, hz=0), "hz"),
        (lambda: symptoms.which_timer(10, 1, profile="linux-9"), "linux-9"),
        (lambda: symptoms.held_tail_bytes(-1), "data_bytes"),
        (lambda: symptoms.held_tail_bytes(100.5), "data_bytes"),
        (lambda: symptoms.held_tail_bytes(100, mtu=100000), "mtu"),
        (lambda: symptoms.utilisation(10, 0), "seconds_per_op"),
    ],
)
def test_bad_input(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()

"""The seventh machine's traced send() calls under bbr's pacing (models.validation.pacing_wait):
each claim about the kernel holds, and fails on a wrong kernel."""

from __future__ import annotations

import pytest

from models.validation import pacing_wait as PW


@pytest.fixture(scope="module")
def calls():
    from models import data

    return data.load(PW.DATASET)


def test_every_claim_holds(calls):
    found = PW.findings(PW.summary(calls))
    assert all(found.values()), found
    assert set(found) == {"short remainders arm", "the call waits", "ahead by little",
                          "pacing costs the rate"}  # fmt: skip


def test_the_dataset_has_both_runs_of_each_and_every_call_a_length(calls):
    runs = calls.groupby(PW.BY)["repeat"].nunique()
    assert set(runs.index) == set(PW.PACED) | set(PW.UNPACED) and (runs == 2).all()
    assert (calls["call_us"] >= 0).all()
    armed = calls[calls["armed"]]
    assert armed["arm_at_us"].notna().all() and calls[~calls["armed"]]["arm_at_us"].isna().all()


def test_a_kernel_whose_calls_return_before_the_timer_fails_the_wait(calls):
    wrong = calls.copy()
    armed = wrong["armed"]
    wrong.loc[armed, "call_us"] = wrong.loc[armed, "arm_at_us"] + 1  # back at once
    wrong.loc[armed, ["fired_after_expiry_us", "returned_after_fire_us"]] = None
    assert not PW.findings(PW.summary(wrong))["the call waits"]


def test_a_kernel_that_seldom_arms_fails_the_arming_claim(calls):
    wrong = calls.copy()
    paced = wrong["cc"] == "bbr"
    drop = wrong.index[paced & wrong["armed"]][::2]  # half the armed calls did not arm
    wrong.loc[drop, "armed"] = False
    assert not PW.findings(PW.summary(wrong))["short remainders arm"]


def test_timers_armed_far_ahead_fail_the_little_claim(calls):
    wrong = calls.copy()
    wrong["expiry_ahead_us"] = wrong["expiry_ahead_us"] + 40  # the pacing interval, not late
    assert not PW.findings(PW.summary(wrong))["ahead by little"]


def test_paced_runs_as_fast_as_their_link_s_contrasts_fail_the_rate_claim(calls):
    wrong = calls.copy()
    loop = wrong["link"] == "loopback"
    wrong.loc[loop, "run_iops"] = 1e5  # the loopback's paced run as fast as its cubic run
    assert not PW.findings(PW.summary(wrong))["pacing costs the rate"]

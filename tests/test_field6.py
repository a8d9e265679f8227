"""models.validation.field6: the book's recipe on a sixth machine, calibrated there and held to its
whole field sweep; the chapter's claims hold, and fail with a wrong model in the place of the one
they name."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from models import data
from models.sim import hostprofile
from models.validation import fidelity as FID
from models.validation import field5 as F5
from models.validation import field6 as F6

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ev():
    return F6.evaluate()


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_the_profiles_were_made_on_the_sweeps_machine_before_it_ran():
    sweep = data.describe(F6.DATASET)["measurement"]
    flory = data.describe(F6.FLORY)["measurement"]
    own, waker = hostprofile.shipped(F6.PROFILE), hostprofile.shipped(F6.PROFILE_WAKER)
    assert sweep["kernel"]["release"] == own.machine["kernel"] == waker.machine["kernel"]
    assert _when(own.machine["date"]) < _when(sweep["started_utc"]) < _when(flory["started_utc"])
    assert "--pin apart" in sweep["command_line"] and "--plan field" in sweep["command_line"]
    assert "--pin apart" in flory["command_line"] and "--plan flory" in flory["command_line"]
    # the refit measured nothing again: the same calibration's records
    assert waker.records["measured"] == own.records["measured"]
    assert waker.machine == own.machine
    # another machine than the fifth: another kernel build
    assert own.machine["kernel"] != hostprofile.shipped(F5.PROFILE_WAKER).machine["kernel"]


def test_the_sweep_is_the_field_plan():
    t = data.load(F6.DATASET)
    assert set(t.client_sock_mode) == {"nagle", "nodelay"}
    assert set(t.sock_mode) == {"nagle", "nodelay", "more", "more_nodelay"}
    assert set(t.link) == {"loopback", "veth-1500", "veth-9000", "veth-1500-1g"}
    assert len(t) == len(data.load(F5.DATASET))  # the same plan as the fifth machine's


def test_the_waker_profile_is_the_refit_of_the_calibration(tmp_path):
    """The bundled profile is what ``tools/refit_profile.py`` makes of the calibration's records
    (about a minute): a function of the calibration alone."""
    out = tmp_path / "waker.json"
    subprocess.run(
        [sys.executable, "tools/refit_profile.py", f"data/hosts/{F6.PROFILE}.json",
         "--set", "send_cpu_first=true", "--out", str(out)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    got = json.loads(out.read_text())
    want = json.loads((ROOT / "data" / "hosts" / f"{F6.PROFILE_WAKER}.json").read_text())
    assert got["host"] == want["host"]  # the fit is deterministic
    assert got["fit"]["loss"] == want["fit"]["loss"]


def test_the_waker_curve_is_the_timed_one():
    # this machine's benchmark timed the waker's price at every gap: calibrate took that curve
    own = hostprofile.shipped(F6.PROFILE)
    assert "tcp_by_gap" in own.provenance["waker_curve_s"]


def test_the_recipe_is_the_fifth_machines_best_scenario():
    profile, make = F6._profiles()[F6.MODELS.index(F6.RECIPE)]
    assert profile == hostprofile.shipped(F6.PROFILE_WAKER)
    row = data.load(F6.DATASET).iloc[200].to_dict()
    host = FID.ProfileHost(profile)
    here, there = (
        make("iscsi_loop", row, host, 250),
        F5.softirq_scenario("iscsi_loop", row, host, 250),
    )
    assert here == there.replace(kernel={"profile": F6.tuned_kernel()})
    calibrated, make0 = F6._profiles()[F6.MODELS.index(F6.CALIBRATED)]
    assert make0 is FID.field_scenario and calibrated == hostprofile.shipped(F6.PROFILE)


def test_the_table_has_every_model_and_the_audit(ev):
    assert list(ev.goals.columns) == [*F6.MODELS, F6.AUDIT]
    assert list(ev.summary.index) == [*F6.MODELS, F6.AUDIT]
    n = F6.numbers(ev)
    assert n["f6_rows"] == len(data.load(F6.DATASET))
    t = ev.tables[F6.CALIBRATED]
    assert (t.role == FID.roles(t)).all()


def test_the_audit_is_the_fifth_machines_kernel(ev):
    t = ev.tables[F6.AUDIT]
    fifth = data.load(F5.DATASET).set_index(["link", "cc", "client_sock_mode", "sock_mode",
                                             "iosize_bytes", "qd"])  # fmt: skip
    k = tuple(t.iloc[7][["link", "cc", "client_sock_mode", "sock_mode", "iosize_bytes", "qd"]])
    assert t.iloc[7].sim_iops == pytest.approx(float(fifth.loc[k, "iops"]))


def test_the_chapter_claims_hold(ev):
    found = F6.findings(ev)
    assert all(found.values()), found


def _in_place_of(ev, place: str, source: str) -> F6.Field6Evaluation:
    """``ev`` with ``source``'s table, goals, summary and Flory steps in ``place``'s."""
    goals, summary = ev.goals.copy(), ev.summary.copy()
    goals[place] = goals[source]
    summary.loc[place] = summary.loc[source]
    return F6.Field6Evaluation(
        {**ev.tables, place: ev.tables[source]},
        goals,
        summary,
        {**ev.steps, place: ev.steps[source]},
    )


def test_the_plain_calibration_in_the_best_rules_place_fails_their_claim(ev):
    found = F6.findings(_in_place_of(ev, F6.RECIPE, F6.CALIBRATED))
    assert not found["the best rules beat the plain calibration on rates and verdicts"]


def test_the_other_machines_kernel_in_a_models_place_fails_the_qd1_and_audit_claims(ev):
    # the fifth machine's kernel: wrong at QD 1 on this machine
    found = F6.findings(_in_place_of(ev, F6.CALIBRATED, F6.AUDIT))
    assert not found["both are right at QD 1"]
    found = F6.findings(_in_place_of(ev, F6.RECIPE, F6.AUDIT))
    assert not found["the fifth machine's kernel is a worse model of this one than the best rules"]


def test_a_model_right_at_qd_8_fails_the_too_fast_claim(ev):
    # the kernel's own rates in the best rules' place: every ratio 1
    t = ev.tables[F6.RECIPE].assign(
        sim_iops=lambda d: d.iops, sim_stalls=lambda d: d.kernel_stalls
    )
    summary = ev.summary.copy()
    from models.validation import machine4 as M4

    summary.loc[F6.RECIPE] = M4.summary(t)
    wrong = F6.Field6Evaluation({**ev.tables, F6.RECIPE: t}, ev.goals, summary, ev.steps)
    found = F6.findings(wrong)
    assert not found["neither reaches the goal's share, and both run too fast from QD 8"]
    assert not found["the stalls missed are at QD 2-8, mostly behind a TCP_NODELAY client"]


def test_the_watchdog_on_time_in_the_late_ones_place_fails_the_watchdog_claims(ev):
    timed = F6.on_time()
    t = ev.tables[F6.RECIPE].copy()
    t.loc[timed.index, ["sim_iops", "sim_stalls"]] = timed[["sim_iops", "sim_stalls"]]
    wrong = F6.Field6Evaluation({**ev.tables, F6.RECIPE: t}, ev.goals, ev.summary, ev.steps)
    found = F6.findings(wrong)
    assert not found["with the watchdog on time they go, and the limited rates come right"]
    # and the late watchdog in the on-time one's place
    late = ev.tables[F6.RECIPE].loc[timed.index]
    assert not F6.findings(ev, timed=late)[
        "with the watchdog on time they go, and the limited rates come right"
    ]


def test_the_on_time_rows_are_the_limited_ones_with_only_the_watchdog_changed():
    timed = F6.on_time()
    assert FID.link_limited(timed).all()
    assert len(timed) == int(FID.link_limited(data.load(F6.DATASET)).sum())
    row = timed.iloc[0].to_dict()
    host = FID.ProfileHost(hostprofile.shipped(F6.PROFILE_WAKER))
    a = F6.softirq_scenario("iscsi_loop", row, host, 250)
    b = F6.on_time_scenario("iscsi_loop", row, host, 250)
    assert a.link.watchdog_wake and not b.link.watchdog_wake
    assert b.replace(link={"watchdog_wake": True}) == a


def test_the_extra_stalls_claim_fails_without_the_limited_rows(ev):
    t = ev.tables[F6.CALIBRATED]
    cut = t[~FID.link_limited(t)]
    wrong = F6.Field6Evaluation({**ev.tables, F6.CALIBRATED: cut}, ev.goals, ev.summary, ev.steps)
    assert not F6.findings(wrong)["most extra stalls are the rate limit's, with 16 KiB and more"]


def test_models_on_sweep_runs_each_model_by_name_in_order(monkeypatch):
    """flory.models_on_sweep, which field5 and field6 evaluate with: each model's profile and
    scenario reach both simulations, with the processes given, and its goals end with Flory's."""
    import pandas as pd

    from models.validation import flory as FL

    calls = []
    table = (
        data.load(F6.DATASET)
        .head(30)
        .assign(role="test", sim_iops=1.0, sim_stalls=False, kernel_stalls=False)
    )
    steps = pd.DataFrame({"right": [True, False]})

    def loop(run, profile, processes, scenario):
        calls.append(("loop", profile, scenario, processes))
        return table

    def flory(profile, run, processes, scenario):
        calls.append(("flory", profile, scenario, processes))
        return steps

    monkeypatch.setattr(FL, "simulate_loop", loop)
    monkeypatch.setattr(FL, "flory_evaluation", flory)
    named = {"b": ("pb", F6.softirq_scenario), "a": ("pa", FID.field_scenario)}
    tables, got, lists = FL.models_on_sweep("run", named, 3)
    assert list(tables) == list(got) == list(lists) == ["b", "a"]
    assert calls == [
        ("loop", "pb", F6.softirq_scenario, 3), ("flory", "pb", F6.softirq_scenario, 3),
        ("loop", "pa", FID.field_scenario, 3), ("flory", "pa", FID.field_scenario, 3),
    ]  # fmt: skip
    assert [g.name for g in lists["a"]] == [g.name for g in FID.goals(table)] + [
        "Flory's thresholds"
    ]
    assert lists["a"][-1].value == "1 of 2"


@pytest.fixture(scope="module")
def lateness(ev):
    return F6.lateness_table(ev)


def test_the_lateness_table_runs_from_on_time_to_the_stand_in(lateness):
    from models.validation import tbf_timer as TT

    assert list(lateness.late_us) == sorted(lateness.late_us)
    assert lateness.late_us.iloc[0] == 0 and lateness.which.iloc[0] == "on time"
    stand_in = hostprofile.shipped(F6.PROFILE_WAKER).host["wake_s"] * 1e6  # s -> us
    assert lateness.late_us.iloc[-1] == pytest.approx(stand_in)
    measured = lateness[lateness.which == "measured, second machine"].late_us
    assert measured.tolist() == [pytest.approx(TT.measured_late_s() * 1e6)]  # read from data/
    assert {*F6.LATE_US} <= {*lateness.late_us.round(6)}


def test_the_lateness_claims_hold(lateness):
    found = F6.lateness_findings(lateness)
    assert all(found.values()), found


def _moved(table, which_row: int, from_row: int):
    """``table`` with row ``from_row``'s results in row ``which_row``'s place."""
    t = table.copy()
    cols = ["extra_stalls", "within_pct"]
    t.loc[t.index[which_row], cols] = table.loc[table.index[from_row], cols].to_numpy()
    return t


def test_the_stand_in_s_results_at_the_measured_lateness_fail_its_claim(lateness):
    at = int((lateness.which == "measured, second machine").to_numpy().argmax())
    found = F6.lateness_findings(_moved(lateness, at, -1))
    assert not found["late as measured on the second machine, most limited rates come right"]


def test_rates_right_above_the_measured_lateness_fail_the_later_claim(lateness):
    at = int((lateness.which == "measured, second machine").to_numpy().argmax())
    t = lateness
    for k in range(at + 1, len(t) - 1):  # every value tried between it and the stand-in
        t = _moved(t, k, at)
    assert not F6.lateness_findings(t)["later still, most go wrong again"]


def test_an_extra_stall_below_the_measured_lateness_fails_the_none_below_claim(lateness):
    t = lateness.copy()
    t.loc[t.index[1], "extra_stalls"] = 1
    assert not F6.lateness_findings(t)["no extra stall below the measured lateness"]


def test_the_late_rows_change_only_the_watchdog_s_lateness():
    timed = F6.on_time()
    row = timed.iloc[0].to_dict()
    host = FID.ProfileHost(hostprofile.shipped(F6.PROFILE_WAKER))
    a = F6.softirq_scenario("iscsi_loop", row, host, 250)
    b = F6.late_scenario(17e-6, "iscsi_loop", row, host, 250)
    assert b.server.tbf_late_s == b.client.tbf_late_s == 17e-6 and a.link.watchdog_wake
    zero = {"tbf_late_s": a.server.tbf_late_s}
    assert b.replace(client=zero, server=zero) == a
    with pytest.raises(ValueError, match=r"late_s must be in \(0, 1e-3\] seconds, got 0"):
        F6.at_lateness(0)


@pytest.fixture(scope="module")
def contrast():
    return F6.bucket_contrast()


def test_the_bucket_claims_hold(contrast):
    found = F6.bucket_findings(contrast)
    assert all(found.values()), found


def test_a_deep_bucket_that_still_loses_rate_fails_its_claim(contrast):
    wrong = contrast.copy()
    wrong["four frames"] = wrong["two frames"]  # as if depth made no difference
    found = F6.bucket_findings(wrong)
    assert not found["with four it costs under a twentieth"]
    flat = contrast.copy()
    flat["two frames"] = flat["four frames"]  # as if the lateness cost nothing
    assert not F6.bucket_findings(flat)[
        "with two frames the later watchdog costs over a fifth of the rate"
    ]


def test_latenesses_on_one_side_of_a_frame_s_time_fail_the_either_side_claim(contrast):
    both_late = contrast.set_axis([20.0, 30.0])
    assert not F6.bucket_findings(both_late)["the latenesses lie either side of one frame's time"]


def test_the_contrast_row_is_one_link_limited_run_without_a_stall():
    from models.kernel import load_kernel_run
    from models.kernel.runs import STALL_SHARE_PCT

    t = load_kernel_run(prefix=F6.PREFIX).table("iscsi_loop")
    pick = t[FID.link_limited(t)]
    for k, v in F6.BUCKET_ROW.items():
        pick = pick[pick[k] == v]
    assert len(pick) == 1 and float(pick.iloc[0].stalled_pct) < STALL_SHARE_PCT

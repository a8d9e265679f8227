"""models.validation.field5_waker: the waker's cost measured by the ping-pong, on the fifth
machine's field sweep; chapter 9b's claims hold, and fail with the pipe's waker curve (or its
refit) in the place of the measured one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from models.measure.wakeups import socket_waker_curve, waker_curve
from models.sim import hostprofile
from models.validation import fidelity as FID
from models.validation import field5 as F5
from models.validation import field5_waker as F5W
from models.validation import machine5 as M5

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ev():
    return F5.evaluate()


@pytest.fixture(scope="module")
def profiles():
    return hostprofile.shipped(M5.PROFILE_SENT), hostprofile.shipped(F5.PROFILE_WAKER)


def _flat(curve) -> list[float]:
    return [x for point in curve for x in point]


def test_the_waker_curve_is_the_pipes_moved_to_the_ping_pongs_cost(profiles):
    sent, waker = profiles
    wake = waker.records["measured"]["wake"]
    assert _flat(waker.host["waker_curve_s"]) == pytest.approx(_flat(socket_waker_curve(wake)))
    assert _flat(sent.host["waker_curve_s"]) == pytest.approx(_flat(waker_curve(wake)))
    lv = F5W.waker_levels()
    assert lv["socket_at_idle"] == pytest.approx(wake["pingpong"]["waker_us"], abs=1e-3)
    assert lv["move_min"] == pytest.approx(lv["move_max"], abs=1e-3)
    assert "ping-pong" in waker.provenance["waker_curve_s"]


def test_the_profile_differs_from_the_pipe_waker_refit_only_in_the_curve_and_the_fit(profiles):
    sent, waker = profiles
    fitted = {"proc_s", "gso_cpu_s", "wake_cpu_s"}
    changed = {k for k in {*sent.host, *waker.host} if sent.host.get(k) != waker.host.get(k)}
    assert changed == fitted | {"waker_curve_s"}
    assert waker.records["measured"] == sent.records["measured"]
    assert not waker.host.get("wake_late_share")


def test_the_refit_gives_the_profile_again(tmp_path):
    """The bundled profile is what ``tools/refit_profile.py`` makes of the calibration's records
    (about half a minute)."""
    out = tmp_path / "waker.json"
    subprocess.run(
        [sys.executable, "tools/refit_profile.py", "data/hosts/kernel6_machine5.json",
         "--set", "send_cpu_first=true", "--out", str(out)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    got = json.loads(out.read_text())
    want = json.loads((ROOT / "data" / "hosts" / f"{F5.PROFILE_WAKER}.json").read_text())
    assert got["host"] == want["host"]  # the fit is deterministic
    assert got["fit"]["loss"] == want["fit"]["loss"]


def test_the_waker_model_is_the_soft_scenario_on_that_profile():
    profile, make = F5._profiles()[F5.MODELS.index(F5.WAKER)]
    assert make is F5.softirq_scenario
    assert profile == hostprofile.shipped(F5.PROFILE_WAKER)


def test_the_waker_claims_hold(ev):
    found = F5W.findings(ev)
    assert all(found.values()), found
    n = F5.numbers(ev)
    assert n["f5_waker_pp_us"] > n["f5_waker_pipe_us"] + 4  # microseconds
    assert n["f5_waker_pipe_verdicts"] < int(n["f5_soft_verdicts"].split("/")[0])


def test_the_pipe_waker_in_its_place_fails_them(ev, profiles):
    sent, waker = profiles
    assert F5W._measured(sent, waker)
    assert not F5W._measured(waker, sent)  # the pipe's curve, fit at a bound
    assert not F5W._measured(sent, sent)
    # the same scenario on the pipe waker's profile, no late wake-ups, in the waker model's place
    pipe = F5W.pipe_waker_soft()
    goals = ev.goals.copy()
    for g in FID.goals(pipe):
        goals.loc[g.name, F5.WAKER] = g.value
    wrong = F5.Field5Evaluation(ev.tables, goals, ev.summary, ev.goal_lists, ev.steps)
    assert F5W._verdicts(ev)
    assert not F5W._verdicts(wrong)
    # wrong data: a contrast as good as the late model's verdicts leaves nothing for the waker
    soft = ev.goals[F5.SOFTIRQ]
    same = {
        "verdicts": F5W._right(soft["stall verdicts"]),
        "ends": F5W._right(soft["largest stalling QD"]),
    }
    assert not F5W._verdicts(ev, same)
    # the late model's Flory steps in its place
    goals = ev.goals.copy()
    goals.loc["Flory's thresholds", F5.WAKER] = goals.loc["Flory's thresholds", F5.SOFTIRQ]
    flat = F5.Field5Evaluation(ev.tables, goals, ev.summary, ev.goal_lists, ev.steps)
    assert not F5W.findings(flat)["and one more of Flory's steps"]
    # the pipe waker's refit in the measured one's place: its QD-1 rows are the kernel's
    assert F5W._traded(ev)
    assert not F5W._traded(ev, sent, sent)
    # the late model's rates in its place: no lower share, no lower median
    summary = ev.summary.copy()
    summary.loc[F5.WAKER] = summary.loc[F5.SOFTIRQ]
    same_rates = F5.Field5Evaluation(ev.tables, ev.goals, summary, ev.goal_lists, ev.steps)
    assert not F5W._traded(same_rates)


def test_the_training_ratios_are_the_profiles_rows(profiles):
    _, waker = profiles
    rows = F5W.training_ratios(waker)
    assert len(rows) == len(waker.records["fit"]["training_rows"])
    assert {r["qd"] for r in rows} == {1, 8, 64}
    assert all(r["ratio"] > 0 for r in rows)

"""models.validation.field5 and field5_waker: the whole field sweep on the fifth machine, pinned
apart, against that machine's own profiles; chapter 9b's claims hold, and fail with a wrong model
in the place of the one they name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from models import data
from models.measure.wakeups import socket_waker_curve, waker_curve
from models.sim import hostprofile
from models.validation import fidelity as FID
from models.validation import field5 as F5
from models.validation import field5_soft as F5S
from models.validation import field5_waker as F5W
from models.validation import flory as FL
from models.validation import machine5 as M5


@pytest.fixture(scope="module")
def ev():
    return F5.evaluate()


def test_the_sweep_ran_on_the_fifth_machine_pinned_apart():
    sweep = data.describe(F5.DATASET)["measurement"]
    profile = hostprofile.shipped(M5.PROFILE)
    assert sweep["kernel"]["release"] == profile.machine["kernel"]
    assert "--pin apart" in sweep["command_line"] and "--plan field" in sweep["command_line"]
    assert "--pin apart" in data.describe(F5.FLORY)["measurement"]["command_line"]
    # the field plan: both client modes, every server mode, the four links
    t = data.load(F5.DATASET)
    assert set(t.client_sock_mode) == {"nagle", "nodelay"}
    assert set(t.sock_mode) == {"nagle", "nodelay", "more", "more_nodelay"}
    assert set(t.link) == {"loopback", "veth-1500", "veth-9000", "veth-1500-1g"}


def test_the_table_has_every_model_and_the_audit(ev):
    assert list(ev.goals.columns) == [*F5.MODELS, F5.AUDIT]
    assert list(ev.summary.index) == [*F5.MODELS, F5.AUDIT]
    assert ev.goals.loc["largest stalling QD", F5.AUDIT] == "-"  # a sample cannot tell
    assert ev.goals.loc["Flory's thresholds", F5.MODELS[0]] != "-"
    n = F5.numbers(ev)
    assert n["f5_rows"] == len(data.load(F5.DATASET))
    assert 0 < n["f5_sample_rows"] < n["f5_rows"]


def test_the_chapter_claims_hold(ev):
    found = F5.findings(ev)
    assert all(found.values()), found


def test_a_wrong_model_in_the_rules_place_fails_them(ev):
    # the first machine's profile (another machine's costs) in the place of the rules
    wrong = ev.summary.copy()
    wrong.loc[F5.RULES] = wrong.loc[F5.FIRST]
    found = F5.findings(F5.Field5Evaluation(ev.tables, ev.goals, wrong, ev.goal_lists, ev.steps))
    assert not found["the rules beat the calibration within a quarter"]
    assert not found["the machine's own profiles beat the first machine's"]
    assert not found[
        "the stall verdicts go the other way: the first machine's most, the rules' fewest"
    ]


def _in_place_of(ev, place: str, source: str) -> F5.Field5Evaluation:
    """``ev`` with model ``source``'s table, goals, summary and Flory steps in ``place``'s."""
    goals, summary = ev.goals.copy(), ev.summary.copy()
    goals[place] = goals[source]
    summary.loc[place] = summary.loc[source]
    return F5.Field5Evaluation(
        {**ev.tables, place: ev.tables[source]},
        goals,
        summary,
        ev.goal_lists,
        {**ev.steps, place: ev.steps[source]},
    )


def test_the_roles_are_the_field_evaluations(ev):
    t = ev.tables[F5.MODELS[0]]
    assert (t.role == FID.roles(t)).all()


def test_the_rules_without_late_wake_ups_in_their_place_fail_the_late_claims(ev):
    # the rules' own table and goals where the late wake-ups' stand: no stall is entered
    found = F5.findings(_in_place_of(ev, F5.LATE, F5.RULES))
    assert not found["late wake-ups give the rules the first machine's verdicts"]
    assert not found["and the calibration's stall ends, short of the first machine's"]
    assert not found["the rules miss the kernel's stalls at QD 2 and 8 that late wake-ups enter"]
    assert not found["the stalls left are few, the model's extra ones under bbr at QD 4 and 12"]


def test_the_late_share_is_the_only_change_and_was_fitted_on_training_rows(ev):
    late, sent = hostprofile.shipped(F5.PROFILE_LATE), hostprofile.shipped(M5.PROFILE_SENT)
    assert {k: v for k, v in late.host.items() if k != "wake_late_share"} == sent.host
    assert late.provenance["wake_late_share"].startswith("fitted:")
    assert "training rows" in late.provenance["wake_late_share"]
    n = F5.numbers(ev)
    assert n["f5_late_train_verdicts"] > n["f5_late_train_verdicts_none"]
    assert n["f5_late_train_rows"] == int((FID.roles(data.load(F5.DATASET)) == "train").sum())
    # the stall verdicts counted are the test rows' alone
    assert ev.goals.loc["stall verdicts", F5.LATE].endswith(
        f"of {n['f5_rows'] - n['f5_late_train_rows']}"
    )


def test_the_late_model_in_the_windows_place_fails_the_window_claims(ev):
    # linux-6's table, goals and steps where linux-6-rwnd's stand: nothing gained
    found = F5.findings(_in_place_of(ev, F5.WINDOW, F5.LATE))
    assert not found["the window gives the late model more verdicts, stall ends and Flory's steps"]
    assert not found["at a small cost in rates"]
    assert not found["its steps are the held tails at MTU 1500"]


def test_the_window_model_is_the_late_one_on_linux_6_rwnd():
    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=F5.PREFIX)
    row = run.table("iscsi_loop").iloc[0].to_dict()
    host = FID.ProfileHost(hostprofile.shipped(F5.PROFILE_LATE))
    sc = F5.window_scenario("iscsi_loop", row, host, run.hz)
    from models.validation import machine4 as M4

    base = M4.freed_clock_scenario("iscsi_loop", row, host, run.hz)
    assert sc.kernel.profile == F5.WINDOW_KERNEL == "linux-6-rwnd"
    assert sc == base.replace(kernel={"profile": F5.WINDOW_KERNEL})


def test_the_tuned_model_is_the_window_one_on_the_sweeps_buffer(ev, monkeypatch):
    from models.kernel import load_kernel_run
    from models.sim.kernels import PROFILES

    name = F5.tuned_kernel()
    rmem = data.describe(F5.DATASET)["measurement"]["host_sysctls"]["net.ipv4.tcp_rmem"]
    p = PROFILES[name]
    assert (p.rcv_buf_bytes, p.rcv_buf_max_bytes) == tuple(int(x) for x in rmem.split()[1:])
    assert p.rcv_wscale == 10 and name == "linux-6.18-rwnd"
    run = load_kernel_run(prefix=F5.PREFIX)
    row = run.table("iscsi_loop").iloc[0].to_dict()
    host = FID.ProfileHost(hostprofile.shipped(F5.PROFILE_LATE))
    window = F5.window_scenario("iscsi_loop", row, host, run.hz)
    assert F5.tuned_scenario("iscsi_loop", row, host, run.hz) == window.replace(
        kernel={"profile": name}
    )
    assert F5._tuned(ev)
    # wrong model: the window model's kernel (the profile's scale, a buffer that stays)
    monkeypatch.setattr(F5, "tuned_kernel", lambda: F5.WINDOW_KERNEL)
    assert not F5._tuned(ev)
    monkeypatch.undo()
    # wrong model in its place: the late one's (fewer verdicts, no held-tail step)
    assert not F5._tuned(_in_place_of(ev, F5.TUNED, F5.LATE))
    # wrong model: its Flory rows simulated from the quick-ACK start alone (inside the growth)
    short = F5.short_start_steps()
    assert not F5._tuned(F5.Field5Evaluation(
        ev.tables, ev.goals, ev.summary, ev.goal_lists, {**ev.steps, F5.TUNED: short}
    ))  # fmt: skip
    # wrong model: a buffer that does not grow shows the steps from the start (the window's)
    from models.kernel import load_kernel_run as load

    window_short = FL.flory_evaluation(
        hostprofile.shipped(F5.PROFILE_LATE), load(prefix=F5.PREFIX),
        scenario=F5.window_scenario, harness_warmup=False,
    )  # fmt: skip
    assert window_short.set_index("payloads").loc[F5._held_pairs(), "right"].all()
    monkeypatch.setattr(F5, "short_start_steps", lambda: window_short)
    assert not F5._tuned(ev)


def test_the_window_model_in_the_late_ones_place_fails_the_missed_steps(ev):
    found = F5.findings(_in_place_of(ev, F5.LATE, F5.WINDOW))
    assert not found["Flory's held-tail steps stay missed"]
    assert F5.findings(ev)["Flory's held-tail steps stay missed"]


def test_the_warm_up_numbers_are_the_harness_s():
    from models.measure.plan import WARMUP_S

    n = F5._warmup_numbers()
    assert n["f5_warmup_s"] == WARMUP_S
    # the kernel's rows of the held-tail steps ran at about 10-18 k exchanges per second
    assert 1000 < n["f5_warm_ops_min"] <= n["f5_warm_ops_max"] < 10_000


def test_the_softirq_model_is_the_tuned_one_with_soft_interrupts_first():
    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=F5.PREFIX)
    row = run.table("iscsi_loop").iloc[0].to_dict()
    host = FID.ProfileHost(hostprofile.shipped(F5.PROFILE_LATE))
    sc = F5.softirq_scenario("iscsi_loop", row, host, run.hz)
    on = {"softirq_first": True}
    assert sc == F5.tuned_scenario("iscsi_loop", row, host, run.hz).replace(client=on, server=on)
    assert sc.server.softirq_first and sc.link.softirq_on_sender and sc.link.shared_cpus is None


def test_the_soft_interrupt_claims_fail_with_a_wrong_model_in_its_place(ev):
    assert F5S._soft_segments(ev) and F5S._soft_rates(ev) and F5S._soft_entries(ev)
    # the buffer's model in its place: the header alone, the rates not mended, nothing lost
    tuned = _in_place_of(ev, F5.SOFTIRQ, F5.TUNED)
    assert not F5S._soft_segments(tuned)
    assert not F5S._soft_rates(tuned)
    assert not F5S._soft_entries(tuned)
    # the late model (no window) in its place: it sends the header alone too
    assert not F5S._soft_segments(_in_place_of(ev, F5.SOFTIRQ, F5.LATE))


def test_the_soft_rows_are_the_groups_and_the_table_is_theirs(ev):
    rows = F5S.soft_rows(ev, F5.SOFTIRQ)
    assert set(zip(rows.sock_mode, rows.client_sock_mode)) == set(F5S.SOFT_GROUPS)
    assert rows.qd.min() == F5S.SOFT_MIN_QD and len(rows) == F5.numbers(ev)["f5_soft_rows"]
    t = F5S.soft_table(ev)
    assert list(t.index) == [F5.TUNED, F5.SOFTIRQ]
    assert t.loc[F5.SOFTIRQ, "within a quarter (%)"] == pytest.approx(rows.within.mean() * 100)


# The measured waker's model (models.validation.field5_waker), in this module so that the field
# evaluation, minutes long, is made once for both.

ROOT = Path(__file__).resolve().parents[1]


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

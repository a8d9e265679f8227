"""tools/refit_profile.py rebuilds a calibrate profile's training rows from its records, and the fit
takes only the simulator's Host flags."""

from __future__ import annotations

import doctest
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import refit_profile  # noqa: E402

from models.measure import profile as P  # noqa: E402


def test_the_doctests_pass():
    assert doctest.testmod(refit_profile).failed == 0


def test_the_rows_are_the_fourth_machines_training_runs():
    d = json.loads((ROOT / "data" / "hosts" / "kernel6_machine4.json").read_text())
    rows = refit_profile.training_rows(d)
    recorded = d["fit"]["training_rows"]
    assert len(rows) == len(recorded)
    for row, rec in zip(rows, recorded):
        assert (row["sock_mode"], row["qd"], row["iosize_bytes"]) == (
            rec["sock_mode"],
            rec["qd"],
            rec["iosize_bytes"],
        )
        key = "measured_mean_us" if "measured_mean_us" in rec else "measured_p50_us"
        assert row["lat_p50_us"] == rec[key]
        # Little's law holds in each rebuilt row: QD = IOPS x time per operation
        assert row["iops"] * row["lat_p50_us"] * 1e-6 == pytest.approx(row["qd"])
    assert sum(r.get("fit_target") == "mean" for r in rows) == 1  # the busy run


def test_a_profile_without_records_cannot_be_refitted():
    with pytest.raises(ValueError, match="training_rows"):
        refit_profile.training_rows({"machine": {"congestion_control": "bbr"}, "fit": {}})


def test_only_host_flags_are_taken():
    with pytest.raises(ValueError, match="not Host flags"):
        P.build_profile({"settings": {}, "costs": {}}, [], flags={"nodelay": True})
    with pytest.raises(SystemExit):
        refit_profile.main(["x.json", "--out", "y.json", "--set", "send_cpu_first=yes"])


def test_a_callers_scenarios_take_the_flags_from_the_costs():
    class Costs:
        cpus = 2

        def scenario_options(self):
            return {"client": {"proc_s": 1e-6}, "server": {"proc_s": 2e-6}}

    got = P._WithFlags(Costs(), {"send_cpu_first": True})
    assert got.scenario_options() == {
        "client": {"proc_s": 1e-6, "send_cpu_first": True},
        "server": {"proc_s": 2e-6, "send_cpu_first": True},
    }
    assert got.cpus == 2  # everything else is the costs'


@pytest.mark.parametrize("missing", ["measured", "fit.training_rows"])
def test_a_profile_without_its_records_is_refused_by_name(missing, tmp_path, capsys):
    d = json.loads((ROOT / "data" / "hosts" / "kernel6_machine4.json").read_text())
    if missing == "measured":
        del d["measured"]
    else:
        del d["fit"]["training_rows"]
    with pytest.raises(ValueError, match=f"no {missing};"):
        refit_profile.refit(d, {})
    src = tmp_path / "p.json"
    src.write_text(json.dumps(d))
    with pytest.raises(SystemExit) as e:
        refit_profile.main([str(src), "--out", str(tmp_path / "out.json")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"no {missing};" in err.splitlines()[-1] and "Traceback" not in err
    assert not (tmp_path / "out.json").exists()


def test_the_kept_fields_are_in_every_simulation_of_the_fit_and_in_the_result(monkeypatch):
    # the simulator stands aside (each row's model time is its measured time): what matters is
    # the Host fields every simulation of the fit is given
    d = json.loads((ROOT / "data" / "hosts" / "kernel6_machine4.json").read_text())
    seen = []

    def simulated_median(hz, cpus=None, host=None, link=None):
        seen.append(dict(host or {}))
        return lambda row, costs: float(row["lat_p50_us"])

    monkeypatch.setattr(
        sys.modules[P.build_profile.__module__], "_simulated_median", simulated_median
    )
    out = refit_profile.refit(d, {"send_cpu_first": True})
    kept = d["host"]["timer_fire_cpu_s"]
    # the calibration's own timer benchmark gave none; the profile holds one measured later
    assert "timer_fire_cpu_s" not in P.timer_costs(d["measured"])
    assert [h["timer_fire_cpu_s"] for h in seen] == [kept]
    assert seen[0]["send_cpu_first"] is True
    assert out["host"]["timer_fire_cpu_s"] == kept
    assert out["provenance"]["timer_fire_cpu_s"] == d["provenance"]["timer_fire_cpu_s"]


def test_a_kept_field_the_fit_sets_is_refused():
    with pytest.raises(ValueError, match=r"host: \['proc_s'\] are costs the fit"):
        P.build_profile({"settings": {}, "costs": {}}, [], host={"proc_s": 1e-6})
    with pytest.raises(ValueError, match=r"host: \['nodelay'\] are not Host fields"):
        P.build_profile({"settings": {}, "costs": {}}, [], host={"nodelay": True})


def test_link_flags_are_on_the_path_of_every_simulation_of_the_fit_and_recorded(monkeypatch):
    d = json.loads((ROOT / "data" / "hosts" / "kernel6_machine4.json").read_text())
    seen = []

    def simulated_median(hz, cpus=None, host=None, link=None):
        seen.append(dict(link or {}))
        return lambda row, costs: float(row["lat_p50_us"])

    monkeypatch.setattr(
        sys.modules[P.build_profile.__module__], "_simulated_median", simulated_median
    )
    out = refit_profile.refit(d, {"send_cpu_first": True}, link={"freed_on_handover": True})
    assert seen == [{"freed_on_handover": True}]
    assert out["fit"]["link"] == {"freed_on_handover": True}
    assert "freed_on_handover" not in out["host"]  # a profile holds Host fields only
    plain = refit_profile.refit(d, {"send_cpu_first": True})
    assert seen[-1] == {} and "link" not in plain["fit"]


def test_only_link_flags_are_taken_on_the_link():
    with pytest.raises(ValueError, match=r"link: \['mtu'\] are not Link flags"):
        P.build_profile({"settings": {}, "costs": {}}, [], link={"mtu": 1500})
    with pytest.raises(ValueError, match="must be true or false"):
        P.build_profile({"settings": {}, "costs": {}}, [], link={"freed_on_handover": 1})
    with pytest.raises(ValueError, match="only the simulator's median_us"):
        P.build_profile(
            {"settings": {}, "costs": {}},
            [],
            median_us=lambda row, costs: 1.0,
            link={"freed_on_handover": True},
        )
    with pytest.raises(SystemExit):
        refit_profile.main(["x.json", "--out", "y.json", "--link", "mtu=1500"])
    with pytest.raises(SystemExit):
        refit_profile.main(["x.json", "--out", "y.json", "--link", "freed_on_handover=1"])


def test_freeing_frames_on_hand_over_does_not_move_a_training_row():
    # Why machine4's FREED row takes the sent profile as it is: the calibration's loopback
    # passes a frame in nanoseconds, so no frame of the fit's simulations is ever held when
    # its socket next writes, and a refit with the flag on the fit's links gives the same costs.
    from models.kernel.runs import one_machine, row_scenario, simulate_uncached
    from models.sim import hostprofile
    from models.validation.fidelity import ProfileHost

    d = json.loads((ROOT / "data" / "hosts" / "kernel6_machine4_sent_after_cpu.json").read_text())
    host = ProfileHost(hostprofile.load(d))
    cpus = d["settings"]["kernel"].get("cpus")
    scenarios = []
    for row in refit_profile.training_rows(d):
        sc = row_scenario("iscsi_loop", row, host, d["machine"]["config_hz"])
        if cpus:
            sc = sc.replace(link=one_machine(cpus))
        scenarios.append(sc)
        held = simulate_uncached(sc)
        freed = simulate_uncached(sc.replace(link={"freed_on_handover": True}))
        assert _numbers(freed) == _numbers(held), row
    # the comparison can fail: on a wire of 1 Gb/s the TCP_NODELAY server at QD 8 writes while
    # its earlier 4 KiB frames are still on the wire, so holding them autocorks its writes
    sc = scenarios[3]
    assert sc.server.nodelay and sc.workload.qd == 8 and sc.workload.response_writes[-1] == 4096
    slow = sc.replace(link={"bandwidth_bps": 1e9})
    held = simulate_uncached(slow)
    freed = simulate_uncached(slow.replace(link={"freed_on_handover": True}))
    assert _numbers(freed) != _numbers(held)


def _numbers(s):
    return (s.iops, s.p50_us, s.segments_per_op, s.client_acks_per_op)

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

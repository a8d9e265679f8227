"""The eighth machine's measured late wake-up share (models.validation.latewake,
tools/measure_wake_late.py): the profile, the tool that wrote it, and each claim of chapter 9e
failing with a wrong world."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from models._paths import bundled_data_dir
from models.validation import latewake as L

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import measure_wake_late  # noqa: E402


def _json(name: str) -> dict:
    return json.loads((bundled_data_dir() / "hosts" / f"{name}.json").read_text())


def _costs_of(late: dict) -> dict:
    """A ``costs --json`` result holding what the profile kept of its run."""
    return {
        "settings": {
            "kernel": {"release": late["kernel"]},
            "date": late["date"],
            "load": late["load"],
        },
        "costs": {"wake": {k: late[k] for k in measure_wake_late.KEPT}},
    }


@pytest.fixture(scope="module")
def measured():
    return L.measured()


@pytest.fixture(scope="module")
def tables():
    return L.evaluate()


def test_the_profile_is_the_calibration_with_the_measured_share_only():
    base, late = _json("kernel6_machine8"), _json(L.PROFILE)
    assert "wake_late_share" not in base["host"] and "wake_late_s" not in base["host"]
    share = late["host"].pop("wake_late_share")
    assert 0 < late["host"].pop("wake_late_s") <= 1e-3
    assert late["host"] == base["host"] and late["machine"] == base["machine"]
    assert late["provenance"].pop("wake_late_share").startswith("measured:")
    assert late["provenance"].pop("wake_late_s").startswith("measured:")
    assert late["provenance"] == base["provenance"]
    assert late["measured"].pop("late_wake")["share"] == share
    assert late["measured"] == base["measured"] and late["fit"] == base["fit"]


def test_the_tool_counts_the_bundled_share_again_from_what_it_kept():
    base, late = _json("kernel6_machine8"), _json(L.PROFILE)
    again = measure_wake_late.with_late_share(base, _costs_of(late["measured"]["late_wake"]))
    assert again == late


def test_the_tool_refuses_a_run_that_cannot_tell_or_another_kernel():
    base = _json("kernel6_machine8")
    kept = _json(L.PROFILE)["measured"]["late_wake"]
    other = _costs_of(kept)
    other["settings"]["kernel"]["release"] = "5.4.0"
    with pytest.raises(ValueError, match="kernel 5.4.0"):
        measure_wake_late.with_late_share(base, other)
    untold = _costs_of(json.loads(json.dumps(kept)))
    for g in untold["costs"]["wake"]["tcp_by_gap"]:
        del g["tail_us"]
    with pytest.raises(ValueError, match="cannot tell"):
        measure_wake_late.with_late_share(base, untold)


def test_the_measurement_and_the_model_show_what_the_text_says(measured, tables):
    f = L.findings(measured, tables)
    assert all(f.values()), (f, measured)


def test_a_share_far_from_the_fitted_one_fails(measured, tables):
    far = {**measured, "share": 2 * measured["fitted"]}
    assert not L.findings(far, tables)["near the fitted share"]


def test_late_wake_ups_as_fast_as_the_curve_s_end_fail(measured, tables):
    fast = {**measured, "late_mean_us": 1.5 * measured["curve_end_us"]}
    assert not L.findings(fast, tables)["late ones are slower"]


def test_a_latency_that_takes_qd1_away_fails(measured, tables):
    t = tables[L.LATE]
    q1 = t["qd"] == 1
    away = t.assign(sim_iops=t["sim_iops"].where(~q1, t["sim_iops"] * 0.7))
    assert not L.findings(measured, {**tables, L.LATE: away})["QD 1 comes nearer"]


def test_a_share_that_moves_the_rows_fails(measured, tables):
    for name in (L.SHARE, L.LATE):
        t = tables[name]
        moved = {**tables, name: t.assign(sim_iops=t["sim_iops"] * 1.2)}
        assert not L.findings(measured, moved)["the share of rows stays"]
        flipped = t.copy()
        i = flipped.index[flipped["role"] == "test"][0]
        flipped.loc[i, "sim_stalls"] = not flipped.loc[i, "sim_stalls"]
        assert not L.findings(measured, {**tables, name: flipped})["the share of rows stays"]

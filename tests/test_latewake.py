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
    assert "wake_late_share" not in base["host"]
    share = late["host"].pop("wake_late_share")
    assert late["host"] == base["host"] and late["machine"] == base["machine"]
    assert late["provenance"].pop("wake_late_share").startswith("measured:")
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


def test_a_share_that_moves_the_rows_fails(measured, tables):
    moved = {**tables, L.LATE: tables[L.LATE].assign(sim_iops=tables[L.LATE]["sim_iops"] * 1.2)}
    assert not L.findings(measured, moved)["a small move"]
    flipped = tables[L.LATE].copy()
    i = flipped.index[flipped["role"] == "test"][0]
    flipped.loc[i, "sim_stalls"] = not flipped.loc[i, "sim_stalls"]
    assert not L.findings(measured, {**tables, L.LATE: flipped})["a small move"]


def test_a_tail_without_its_millisecond_wake_ups_fails(measured, tables):
    assert not L.findings({**measured, "slow_share": 0.02}, tables)["the millisecond tail"]
    assert not L.findings({**measured, "slow_excess_part": 0.3}, tables)["the millisecond tail"]

"""tools/fit_wake_late.py: the shipped share is the one the tool picks on the training rows
(it beats no late wake-ups there), and the tool never reads a test row."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import fit_wake_late as T  # noqa: E402

from models.kernel import load_kernel_run  # noqa: E402
from models.sim import hostprofile  # noqa: E402
from models.validation import fidelity as FID  # noqa: E402


@pytest.fixture(scope="module")
def training():
    run = load_kernel_run(prefix=FID.FIELD_PREFIX)
    return run, T.training_rows(run)


def test_the_shipped_share_beats_none_on_the_training_rows(training):
    run, rows = training
    share = hostprofile.shipped().host["wake_late_share"]
    assert share in T.GRID
    with_late, without = T.score(share, run, rows), T.score(0.0, run, rows)
    assert with_late["right"] > without["right"]
    assert with_late["verdicts"] > without["verdicts"]


def test_only_training_rows_are_scored(training):
    _, rows = training
    assert (FID.roles(rows) == "train").all() and len(rows) < 200


def test_the_fifth_machine_s_share_is_the_tools_pick_on_its_training_rows():
    """The share in kernel6_machine5_sent_late is the grid's best on the fifth machine's
    training rows with both rules (its neighbours in the grid and no share score lower), the
    scores kept in the profile are those the tool gives, and no test row is scored."""
    from models.validation import field5 as F5

    run = load_kernel_run(prefix=F5.PREFIX)
    rows = T.training_rows(run)
    assert (FID.roles(rows) == "train").all()
    profile = hostprofile.shipped(F5.PROFILE_LATE)
    fit = profile.records["fit"]["wake_late_share"]
    base = hostprofile.shipped(fit["profile"])
    assert {k: v for k, v in profile.host.items() if k != "wake_late_share"} == base.host
    make = T.scenario_function("models.validation.machine4:freed_clock_scenario")
    share = profile.host["wake_late_share"]
    kept = {s["share"]: s for s in fit["scores"]}
    for trial in (0.0, share, 0.03):
        assert T.score(trial, run, rows, base, make) == kept[trial]
    assert kept[share]["right"] > max(kept[0.0]["right"], kept[0.03]["right"])
    assert max(kept.values(), key=lambda s: (s["right"], -s["share"]))["share"] == share


def test_a_bad_scenario_spec_is_refused():
    with pytest.raises(SystemExit, match="module:function"):
        T.scenario_function("models.validation.machine4")

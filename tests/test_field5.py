"""models.validation.field5: the whole field sweep on the fifth machine, pinned apart, against
that machine's own profiles; chapter 9b's claims hold, and fail with a wrong model in the place of
the one they name."""

from __future__ import annotations

import pytest

from models import data
from models.sim import hostprofile
from models.validation import fidelity as FID
from models.validation import field5 as F5
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
    wrong.loc[F5.MODELS[1]] = wrong.loc[F5.MODELS[2]]
    found = F5.findings(F5.Field5Evaluation(ev.tables, ev.goals, wrong, ev.goal_lists))
    assert not found["the rules beat the calibration within a quarter"]
    assert not found["the machine's own profiles beat the first machine's"]
    assert not found[
        "the stall verdicts go the other way: the first machine's most, the rules' fewest"
    ]


def test_the_roles_are_the_field_evaluations(ev):
    t = ev.tables[F5.MODELS[0]]
    assert (t.role == FID.roles(t)).all()

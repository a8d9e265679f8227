"""The window the peer advertises (models.validation.peerwindow): the kernel's first responses on
the loopback row against the model's with and without the rule, and the rule's comparison on three
machines; each claim holds and fails on a wrong world.  The comparison's goals are given here as the
evaluation's text (evaluate() itself runs in chapter 9e)."""

from __future__ import annotations

import pandas as pd
import pytest

from models.validation import peerwindow as PW


@pytest.fixture(scope="module")
def readings():
    from models import data

    return data.load(PW.DATASET)


@pytest.fixture(scope="module")
def start():
    return PW.start()


def _goals(within: dict[tuple[str, str], int], verdicts=None) -> pd.DataFrame:
    """A goals table as the evaluation writes it: the share within the tolerance (%) per column,
    the verdicts alike unless given."""
    return pd.DataFrame(
        {
            col: {PW.WITHIN: f"{v}%", "stall verdicts": (verdicts or {}).get(col, "216 of 217")}
            for col, v in within.items()
        }
    )


WITHIN = {
    (PW.SITES[0], PW.RULES[0]): 70, (PW.SITES[0], PW.RULES[1]): 72,
    (PW.SITES[1], PW.RULES[0]): 69, (PW.SITES[1], PW.RULES[1]): 71,
    (PW.SITES[2], PW.RULES[0]): 51, (PW.SITES[2], PW.RULES[1]): 51,
}  # fmt: skip
GOALS = _goals(WITHIN)


def _holds(readings, start, goals, claim: str) -> bool:
    return PW.findings(PW.kernel(readings), start, goals)[claim]


def test_every_claim_holds(readings, start):
    found = PW.findings(PW.kernel(readings), start, GOALS)
    assert all(found.values()), found
    assert len(found) == 4
    num = PW.numbers(PW.kernel(readings), start, GOALS)
    assert num["pw_draws"] == 5 and num["pw_held_lo"] >= PW.HELD_RESPONSES
    assert num["pw_0p_within"] == 72 and num["pw_fixed_ratio"] > 2


def test_the_kernel_held_by_its_congestion_window_alone_fails(readings, start):
    """Wrong world: nothing waits unsent while the flight is below the congestion window."""
    d = readings.copy()
    d.loc[d["unacked"] < d["cwnd"], "notsent_bytes"] = 0
    assert not _holds(d, start, GOALS, "the kernel holds its first responses")


def test_a_kernel_that_stays_in_its_start_up_fails(readings, start):
    d = readings.copy()
    d.loc[d["op"] > 0, "pacing_gain_x256"] = 739  # bbr_high_gain throughout
    assert not _holds(d, start, GOALS, "the kernel leaves its start-up early")


def test_the_model_without_the_window_fails(readings, start):
    """Wrong world: the fixed window's start in the rule's place."""
    swapped = start.copy()
    swapped.loc[f"model, {PW.RULES[1]}"] = start.loc[f"model, {PW.RULES[0]}"]
    assert not _holds(readings, swapped, GOALS, "so does the model, with the peer's window only")


def test_a_rule_that_loses_rows_somewhere_fails(readings, start):
    worse = _goals({**WITHIN, (PW.SITES[2], PW.RULES[1]): 49})
    assert not _holds(readings, start, worse, "no site worse, the same verdicts")
    changed = _goals(WITHIN, verdicts={(PW.SITES[0], PW.RULES[1]): "215 of 217"})
    assert not _holds(readings, start, changed, "no site worse, the same verdicts")


def test_the_model_start_is_what_the_rule_says(start):
    """With the rule the model's first responses wait for the window and bbr leaves its start-up;
    with the fixed window nothing waits and it never does."""
    peer, fixed = start.loc[f"model, {PW.RULES[1]}"], start.loc[f"model, {PW.RULES[0]}"]
    assert peer["held_responses"] >= PW.HELD_RESPONSES
    assert peer["left_startup_at"] <= PW.EARLY_RESPONSES + 8
    assert fixed["held_responses"] == 0 and pd.isna(fixed["left_startup_at"])


def test_roles():
    assert PW.role(PW.SITES[2], PW.RULES[0]) == "test"
    with pytest.raises(ValueError, match="rule must be one of"):
        PW.role(PW.SITES[0], "open window")

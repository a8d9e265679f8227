"""The seventh machine's models held to an eighth machine's sample of the field runs, beside that
machine's own calibration (models.validation.machine8): each claim holds, and fails on a wrong
world; the pacing-wait trace run again there keeps three of the seventh's four claims and misses
the share that was set after the seventh's trace."""

from __future__ import annotations

import dataclasses

import pytest

from models.validation import fidelity as FID
from models.validation import machine8 as M8

CLAIMS = {
    "one kind of machine",
    "the kernel repeats itself",
    "the wait carries over",
    "rules beat the recipe",
    "short of the goal",
    "bbr holds the misses",
}


@pytest.fixture(scope="module")
def ev():
    return M8.evaluate()


def _with(ev, name, table):
    return dataclasses.replace(ev, tables={**ev.tables, name: table})


def _scaled(table, factor, rows=None):
    """``table`` with the simulated rates of ``rows`` (default all) times ``factor`` (the goals
    compute each row's ratio from them)."""
    t = table.copy()
    pick = slice(None) if rows is None else rows(t)
    t.loc[pick, "sim_iops"] = t.loc[pick, "sim_iops"] * factor
    return t


def test_every_claim_holds(ev):
    found = M8.findings(ev)
    assert all(found.values()), found
    assert set(found) == CLAIMS


def test_the_models_columns_and_the_audit(ev):
    assert list(ev.goals.columns) == [*M8.MODELS, M8.KERNEL7, M8.REPEAT]
    assert list(ev.bands.columns) == [*M8.MODELS, M8.KERNEL7, M8.REPEAT]
    assert len(ev.tables[M8.MODELS[0]]) == 240


def test_another_kind_of_machine_fails_the_audit(ev):
    slower = _scaled(ev.tables[M8.KERNEL7], 0.5)
    assert not M8.findings(_with(ev, M8.KERNEL7, slower))["one kind of machine"]


def test_a_kernel_that_moved_fails_the_repeat(ev):
    slower = _scaled(ev.tables[M8.REPEAT], 0.7)
    assert not M8.findings(_with(ev, M8.REPEAT, slower))["the kernel repeats itself"]


def test_a_fast_transfer_fails_the_carry_over(ev):
    fast = _scaled(ev.tables[M8.TRANSFER[1]], 1.4, lambda t: t["qd"] >= 8)
    assert not M8.findings(_with(ev, M8.TRANSFER[1], fast))["the wait carries over"]


def test_the_recipe_in_the_rules_place_fails(ev):
    recipe, best = M8.TRANSFER
    swapped = dataclasses.replace(
        ev, tables={**ev.tables, recipe: ev.tables[best], best: ev.tables[recipe]}
    )
    assert not M8.findings(swapped)["rules beat the recipe"]


def test_a_model_at_the_kernel_s_rates_fails_short_of_the_goal(ev):
    exact = ev.tables[M8.HERE[1]].copy()
    exact["sim_iops"] = exact["iops"]
    assert not M8.findings(_with(ev, M8.HERE[1], exact))["short of the goal"]


def test_misses_outside_bbr_fail_the_bbr_claim(ev):
    off = _scaled(ev.tables[M8.TRANSFER[1]], 2.0, lambda t: t["cc"] != "bbr")
    assert not M8.findings(_with(ev, M8.TRANSFER[1], off))["bbr holds the misses"]


def test_scaling_moves_the_goal_s_share(ev):
    # the wrong worlds above act through the goals' own columns
    t = _scaled(ev.tables[M8.TRANSFER[1]], 2.0)
    assert FID.iops_table(t)["within"].mean() < 0.2


def test_the_trace_again_keeps_three_claims_and_misses_the_late_share():
    t = M8.wait_trace()
    found = M8.wait_findings(t)
    assert found == {
        "short remainders arm": False,
        "the call waits": True,
        "ahead by little": True,
        "pacing costs the rate": True,
        "most calls arm": True,
    }


def test_a_contrast_that_arms_fails_most_calls_arm():
    t = M8.wait_trace().copy()
    from models.validation import pacing_wait as PW

    t.loc[PW.UNPACED[0], "armed_pct"] = 10.0
    assert not M8.wait_findings(t)["most calls arm"]
    t = M8.wait_trace().copy()
    t.loc[PW.PACED[2], "armed_pct"] = 40.0
    assert not M8.wait_findings(t)["most calls arm"]


def test_the_startup_probe_stays_in_start_up_and_refuses_a_bad_length():
    probe = M8.startup_probe(ops=20_000)
    assert probe["mode"] == "startup" and probe["arms_per_op"] < 0.01
    assert probe["sim_iops"] > 2 * probe["kernel_iops"]
    with pytest.raises(ValueError, match="ops must be"):
        M8.startup_probe(ops=0)

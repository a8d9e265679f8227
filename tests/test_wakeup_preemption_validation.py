"""Chapter 9's wake-up preemption replay (models.validation.wakeup_preemption): EEVDF's rules,
replayed over the bundled scheduler trace, decide as the kernel did; each row fails with one
of the rules left out; and the dataset's columns are the measuring tool's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models import data
from models.validation import wakeup_preemption as WP

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import preempt_trace  # noqa: E402


@pytest.fixture(scope="module")
def events():
    return data.load(WP.DATASET)


def test_the_rules_decide_as_the_kernel_did(events):
    table = WP.agreement(events)
    rows = WP.decision_rows(table, "trace")
    assert len(rows) == len(preempt_trace.CLIENTS)
    assert all(r.kind == "test" and r.ok and r.passed for r in rows)
    assert all(WP.findings(table).values())


@pytest.mark.parametrize("mode", ["nagle", "nodelay"])
def test_each_row_fails_with_a_rule_left_out(events, mode):
    failed = [
        name
        for name, queue in WP.WRONG.items()
        if not WP.decision_rows(WP.agreement(events, queue).loc[[mode]], "x")[0].passed
    ]
    assert failed, mode


def test_a_trace_whose_decisions_are_turned_around_fails(events):
    flipped = events.assign(resched=~events["resched"].astype(bool))
    flipped.loc[flipped["other"] == "-", "resched"] = False
    assert not any(r.passed for r in WP.decision_rows(WP.agreement(flipped), "x"))


def test_the_dataset_has_the_tools_columns(events):
    assert list(events.columns) == [name for name, *_ in preempt_trace.EVENT_FIELDS]
    assert sorted(set(events["client_sock_mode"])) == sorted(preempt_trace.CLIENTS)
    assert set(events["event"]) == {"run", "wake", "switch"}

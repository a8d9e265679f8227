"""The kinds of comparison rows: checks count, fits and context never do, and
a recorded failure must keep failing."""

import pytest
from comparison_rows import row as comparison_row

from models.validation import KINDS, assert_all_pass, checks


def row(measured, kind="check"):
    return comparison_row("chX", measured, kind)


def test_kinds_and_counting():
    rows = [row(1.0), row(1.0, "fit"), row(9.0, "context"), row(9.0, "failing")]
    assert [r.counts for r in rows] == [True, False, False, True]
    assert [r.result for r in rows] == ["pass", "fit", "context", "fails (known)"]
    assert checks(rows) == [rows[0], rows[3]]
    assert_all_pass(rows)  # the context row is off, but not a test
    assert set(KINDS) == {"check", "fit", "context", "failing"}


def test_a_failing_check_fails_and_a_recorded_failure_must_keep_failing():
    with pytest.raises(AssertionError, match="outside tolerance"):
        assert_all_pass([row(9.0)])
    with pytest.raises(AssertionError, match="recorded as failing"):
        assert_all_pass([row(1.0, "failing")])


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind"):
        row(1.0, "maybe")


def test_row_dict_carries_the_kind():
    d = row(1.0, "fit").row()
    assert d["kind"] == "fit" and d["counts"] is False and d["passed"]

"""The kinds of comparison rows: only tests count; audits, fits and context never do; an audit or a
test recorded as failing must keep failing, with its cause."""

import pytest
from comparison_rows import row as comparison_row

from models.validation import (
    KINDS,
    Comparison,
    assert_all_pass,
    by_kind,
    checks,
    counted,
    kind_counts,
    summary,
)


def row(measured, kind="test", fails=""):
    return comparison_row("chX", measured, kind, fails=fails)


def test_the_kinds_are_audit_fit_test_and_context():
    assert KINDS == ("audit", "fit", "test", "context")


def test_only_tests_count():
    rows = [
        row(1.0),
        row(1.0, "fit"),
        row(9.0, "context"),
        row(9.0, "test", fails="the model lacks X"),
        row(1.0, "audit"),
        row(9.0, "audit", fails="the source adds wrongly"),
    ]
    assert [r.counts for r in rows] == [True, False, False, True, False, False]
    assert [r.status for r in rows] == [
        "pass",
        "fit",
        "context",
        "fails (known)",
        "pass",
        "fails (known)",
    ]
    assert counted(rows) == [rows[0], rows[3]] == checks(rows)
    assert_all_pass(rows)  # the context row is off, but claims nothing
    c = kind_counts(rows)
    assert (c["tests"], c["passing"], c["known_failures"]) == (2, 1, 1)
    assert (c["audits"], c["audits_failing"], c["fits"], c["context"]) == (2, 1, 1, 1)


def test_an_audit_that_passes_is_not_a_pass_of_any_model():
    rows = [row(1.0, "audit") for _ in range(12)] + [row(1.0)]
    assert kind_counts(rows)["passing"] == 1
    assert summary(rows) == "12 audits, 0 fits and 1 test: 1 test passes"


def test_summary_line_names_failures_and_disagreements():
    rows = [row(9.0, "audit", fails="x"), row(1.0, "fit"), row(1.0), row(9.0, fails="y")]
    assert summary(rows) == (
        "1 audit (1 showing the source disagreeing with itself), 1 fit and 2 tests: "
        "1 test passes, 1 fails as recorded"
    )


def test_rows_are_shown_audits_then_fits_then_tests():
    rows = [row(1.0), row(1.0, "fit"), row(1.0, "audit"), row(2.0), row(9.0, "context")]
    assert [r.kind for r in by_kind(rows)] == ["audit", "fit", "test", "test", "context"]
    assert by_kind(rows)[2:4] == [rows[0], rows[3]]  # stable within a kind


def test_a_failing_row_fails_and_a_recorded_failure_must_keep_failing():
    for kind in ("test", "audit"):
        with pytest.raises(AssertionError, match="outside tolerance"):
            assert_all_pass([row(9.0, kind)])
        with pytest.raises(AssertionError, match="recorded as failing"):
            assert_all_pass([row(1.0, kind, fails="cause")])


def test_unknown_or_missing_kind_is_refused():
    with pytest.raises(ValueError, match="kind"):
        row(1.0, "maybe")
    for old in ("check", "failing"):
        with pytest.raises(ValueError, match="kind"):
            row(1.0, old)
    with pytest.raises(ValueError, match="kind"):
        Comparison("chX", "q", 1.0, 1.0, "s", abs_tol=0, why="w")


def test_only_audits_and_tests_can_be_recorded_as_failing():
    for kind in ("fit", "context"):
        with pytest.raises(ValueError, match="only an audit or a test"):
            row(9.0, kind, fails="cause")


def test_row_dict_carries_the_kind_and_status():
    d = row(1.0, "fit").row()
    assert d["kind"] == "fit" and d["counts"] is False and d["passed"]
    d = row(9.0, fails="cause").row()
    assert d["status"] == d["result"] == "fails (known)" and d["fails"] == "cause"

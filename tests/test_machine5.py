"""models.validation.machine5: the fourth machine's rules held to a fifth machine's calibration and
pinned sample, measured after the rules were committed (chapter 9, "A fifth machine")."""

from __future__ import annotations

import pytest

from models import data
from models.sim import hostprofile
from models.validation import machine4 as M4
from models.validation import machine5 as M5


@pytest.fixture(scope="module")
def ev():
    return M5.evaluate()


def test_the_profiles_and_the_sample_come_from_the_fifth_machine():
    own, sent = hostprofile.shipped(M5.PROFILE), hostprofile.shipped(M5.PROFILE_SENT)
    kernel = own.machine["kernel"]
    assert sent.machine["kernel"] == kernel
    assert data.describe(M5.DATASET)["measurement"]["kernel"]["release"] == kernel
    # the refit is the calibration's own records fitted again with the flag, nothing measured
    assert sent.host["send_cpu_first"] is True and "send_cpu_first" not in own.host
    assert sent.records["measured"] == own.records["measured"]
    assert (
        sent.records["fit"]["training_rows"][0]["measured_p50_us"]
        == (own.records["fit"]["training_rows"][0]["measured_p50_us"])
    )
    # another instance than the fourth machine: its 64 KiB copy between CPUs was timed apart
    fourth = hostprofile.shipped(M4.PROFILE).records["measured"]["large_cross"]
    assert own.records["measured"]["large_cross"] != fourth


def test_the_findings_hold(ev):
    f = M5.findings(ev.table)
    assert all(f.values()), f
    assert list(ev.table.index) == list(M5.ROWS)


def test_the_numbers_are_the_tables(ev):
    n = M5.numbers(ev)
    assert n["within_pct_3"] == pytest.approx(ev.table.loc[M5.ROWS[3], "within_pct"])
    assert n["rows"] > 100
    own = hostprofile.shipped(M5.PROFILE).records["measured"]["large_cross"]["send_cpu_us"]
    assert n["cross_us"] == own and n["cross4_us"] > n["cross_us"]  # this machine copies faster


def test_the_clock_read_at_the_calls_start_fails(ev):
    """The wrong model in the tested row's place: frames freed, bbr's pacing clock read at the
    call's start (the freed row)."""
    t = ev.table.copy()
    t.loc[M5.ROWS[3]] = t.loc[M5.ROWS[2]]
    failed = [k for k, v in M5.findings(t).items() if not v]
    assert "paced by the call's clock too, the large responses come back" in failed


def test_frames_held_fail(ev):
    """The wrong model in the freed row's place: frames held to the end of their wire time."""
    t = ev.table.copy()
    t.loc[M5.ROWS[2]] = t.loc[M5.ROWS[1]]
    failed = [k for k, v in M5.findings(t).items() if not v]
    assert "freed on hand-over, the runs under bbr behind Nagle gain, the large lose" in failed

"""models.validation.tcp_waker: the TCP waker's cost timed at every idle gap on the sixth machine
against the pipe and moved readings, with wrong-model tests for each claim, and tools/tcp_waker.py's
rows read back as the benchmark's own section (no benchmark is run here;
tests/test_measure_costs.py runs the real one)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models.measure import wakeups
from models.validation import tcp_waker as TW

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import tcp_waker as tool  # noqa: E402


@pytest.fixture(scope="module")
def curves():
    return TW.curves()


@pytest.fixture(scope="module")
def table(curves):
    return TW.table(curves)


def test_every_claim_holds_on_the_bundled_runs(table):
    found = TW.findings(table)
    assert all(found.values()), found
    assert (table.role == "test").all() and len(table) == 15
    n = TW.numbers(table)
    assert n["runs"] == 5 and n["moved_right"] > n["pipe_right"]
    assert n["short_lo_us"] <= n["short_hi_us"] < n["mid_lo_us"] < n["long_hi_us"]
    assert TW.machine()["kernel"].startswith("6.18") and TW.machine()["guest_poll_us"] > 0


def test_the_measured_cost_is_the_asleep_send_less_the_spinning_one(curves):
    """An audit: each run's measured point is its row's two medians' difference (never below 0)."""
    rows = TW.load().set_index(["run", "gap_us"])
    for r in curves.itertuples():
        raw = rows.loc[(r.run, r.gap_us)]
        want = max(raw.waker_median_us - raw.spin_peer_waker_median_us, 0.0)
        assert r.measured == pytest.approx(want, abs=1e-9)


def test_the_measured_cost_in_the_moved_reading_s_place_fails_its_claim(table):
    wrong = table.copy()
    wrong["moved"] = wrong.measured
    wrong["moved_ratio"] = 1.0
    wrong["moved_right"] = True
    assert not TW.moved_high_short_right_long(wrong)


def test_the_moved_reading_in_the_pipe_s_place_fails_its_claim(table):
    wrong = table.copy()
    for col in ("", "_ratio", "_right"):
        wrong[f"pipe{col}"] = wrong[f"moved{col}"]
    assert not TW.pipe_misses_short(wrong)


def test_a_waker_cost_flat_in_the_idle_fails_the_long_idle_claim(table):
    flat = table.copy()
    flat["measured"] = table.measured[table.index <= 160.0].median()
    assert TW.dearer_after_long_idle(table) and not TW.dearer_after_long_idle(flat)


def test_the_tool_s_rows_read_back_as_the_benchmark_s_section():
    def tcp(gap: float, asleep: float) -> dict:
        return {
            "gap_us": gap,
            "median_us": 8.0,
            "samples": 40,
            "waker_median_us": asleep,
            "spin_peer_median_us": 6.0,
            "spin_peer_waker_median_us": 3.0,
        }

    wake = {
        "tcp_by_gap": [tcp(2.0, 5.5), tcp(1280.0, 6.5)],
        "tcp_by_long_gap": [tcp(40000.0, 16.0)],
        "cross_by_gap": [
            {"gap_us": 2.0, "waker_median_us": 4.0},
            {"gap_us": 1280.0, "waker_median_us": 4.5},
        ],
        "cross_by_long_gap": [
            {"gap_us": 40000.0, "waker_median_us": 9.0, "asleep_waker_median_us": 12.0}
        ],
        "pingpong": {"waker_us": 3.5, "idle_us": 17.0},
    }
    import pandas as pd

    rows = pd.DataFrame(tool.rows_of(0, wake))
    rows["pipe_asleep_waker_median_us"] = pd.to_numeric(rows.pipe_asleep_waker_median_us)
    back = TW.run_wake(rows)
    assert wakeups.tcp_waker_curve(back) == wakeups.tcp_waker_curve(wake)
    assert wakeups.waker_curve(back) == wakeups.waker_curve(wake)
    older = {k: v for k, v in wake.items() if not k.startswith("tcp")}
    assert wakeups.socket_waker_curve(TW._older(back)) == wakeups.socket_waker_curve(older)
    # a run from before the TCP waker was timed is refused by name
    with pytest.raises(SystemExit, match="no TCP waker timing"):
        tool.rows_of(0, older)


def test_the_tool_writes_a_dataset_that_loads_with_the_bundled_schema(tmp_path, monkeypatch):
    """The tool's CSV and sidecar (a run of the costs benchmark stood in by fixed numbers): the
    asleep pipe column is left empty on the short gaps' rows and declared optional, so the table
    loads through models.data's checks, with the bundled dataset's schema."""
    import json

    from models import data

    def tcp(gap: float) -> dict:
        return {"gap_us": gap, "median_us": 8.0, "samples": 40, "waker_median_us": 5.0,
                "spin_peer_median_us": 6.0, "spin_peer_waker_median_us": 3.0}  # fmt: skip

    wake = {
        "tcp_by_gap": [tcp(2.0)],
        "tcp_by_long_gap": [tcp(40000.0)],
        "cross_by_gap": [{"gap_us": 2.0, "waker_median_us": 4.0}],
        "cross_by_long_gap": [
            {"gap_us": 40000.0, "waker_median_us": 9.0, "asleep_waker_median_us": 12.0}
        ],
        "pingpong": {"waker_us": 3.5, "idle_us": 17.0},
    }
    fake = {"costs": {"wake": wake}, "settings": {"kernel": "test"}}
    monkeypatch.setattr(tool.costs, "run_costs", lambda: fake)
    assert tool.main(["--out", str(tmp_path), "--prefix", "tw", "--runs", "1"]) == 0
    got = data.load("tw", tmp_path)
    assert got.pipe_asleep_waker_median_us.isna().tolist() == [True, False]
    schema = json.loads((tmp_path / "tw.json").read_text())["schema"]
    assert schema == data.describe(TW.DATASET)["schema"]

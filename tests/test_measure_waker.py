"""tools/measure_waker.py: a profile brought up to date with the timer spread (from its own
records) and the waker's curve (from benchmark runs on the same kernel), without running the
benchmark (the runs are made up here; tests/test_measure_costs.py runs the real one)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from models.measure.wakeups import timer_spread
from models.sim import hostprofile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import measure_waker  # noqa: E402


def fake_run(base_us: float, asleep_40ms_us: float) -> dict:
    """One benchmark run's wake section: waker medians per gap, flat but for the last long gap."""
    short = [{"gap_us": g, "waker_median_us": base_us} for g in (2.0, 1280.0)]
    long = [
        {"gap_us": g, "waker_median_us": base_us + 1, "asleep_waker_median_us": base_us + 2}
        for g in (2500.0, 20000.0)
    ] + [
        {
            "gap_us": 40000.0,
            "waker_median_us": base_us + 4,
            "asleep_waker_median_us": asleep_40ms_us,
        }
    ]
    return {"cross_by_gap": short, "cross_by_long_gap": long}


def profile_dict() -> dict:
    d = copy.deepcopy(hostprofile.shipped("kernel6_machine3").to_dict())
    d["host"].pop("waker_curve_s", None)
    d["host"].pop("timer_spread_s", None)
    return d


def test_the_curve_is_the_median_over_runs_with_the_waker_asleep_for_the_long_gaps():
    runs = [fake_run(5.0, 19.0), fake_run(6.0, 25.0), fake_run(5.5, 18.0)]
    settings = {"kernel": {"release": "6.18.44-fc-v669"}, "date": "2026-11-29T10:05:00+00:00"}
    out = measure_waker.update(profile_dict(), settings, runs)
    curve = out["host"]["waker_curve_s"]
    # the base is the median of the shortest gap's (5.5 us); the 40 ms point the median of the
    # runs' asleep medians (19 us) less it
    assert curve[0] == [2e-6, 0.0]
    assert curve[-1][0] == pytest.approx(40e-3)
    assert curve[-1][1] == pytest.approx((19.0 - 5.5) * 1e-6)
    assert out["measured"]["waker"]["runs"] == 3
    assert out["measured"]["waker"]["cross_by_long_gap"][-1]["asleep_runs_us"] == [
        19.0,
        25.0,
        18.0,
    ]
    # the spread comes from the profile's own long-gap wake-ups
    spread = timer_spread(out["measured"]["wake"])
    assert out["host"]["timer_spread_s"] == spread > 0
    assert out["provenance"]["waker_curve_s"].startswith("measured later (2026-11-29")
    hostprofile.validate(out)  # a valid profile


def test_another_kernel_or_runs_with_other_gaps_are_refused():
    runs = [fake_run(5.0, 19.0)]
    with pytest.raises(ValueError, match="made on kernel"):
        measure_waker.update(profile_dict(), {"kernel": {"release": "6.1.0"}, "date": "x"}, runs)
    odd = fake_run(5.0, 19.0)
    odd["cross_by_gap"] = odd["cross_by_gap"][:1]
    with pytest.raises(ValueError, match="gaps differ"):
        measure_waker.combine([fake_run(5.0, 19.0), odd])


@pytest.mark.parametrize("runs", ["0", "51"])
def test_a_run_count_out_of_range_is_refused(runs, capsys):
    with pytest.raises(SystemExit) as info:
        measure_waker.main(["--profile", "x.json", "--runs", runs])
    assert info.value.code == 2
    assert "--runs must be 1..50" in capsys.readouterr().err

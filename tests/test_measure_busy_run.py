"""tools/measure_busy_run.py: a profile refitted with the calibration's busy run added to its
eight, from made-up repeats on the same kernel (the harness itself is tested elsewhere)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from models.measure.calruns import BUSY_RUNS, RUNS
from models.sim import hostprofile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import measure_busy_run as MB  # noqa: E402
import measure_socket_wake as MSW  # noqa: E402

PROFILE = "kernel6_machine3_try2_held"


def _repeats(p50_us: float = 160.0) -> list[dict]:
    mode, qd, size = BUSY_RUNS[0]
    return [
        {
            "repeat": k,
            "sock_mode": mode,
            "client_sock_mode": "nagle",
            "qd": qd,
            "iosize_bytes": size,
            "lat_p50_us": p50_us + k,
            "iops": 1e6 * qd / (p50_us + k),  # Little's law: the mean as the median, us -> s
            "stalled_pct": 0.0,
            "server_data_segments_per_op": 0.35,
            "mean_busy_count": 900.0,
        }
        for k in range(3)
    ]


def _settings(release: str) -> dict:
    return {"kernel": {"release": release}, "date": "2026-11-29T20:00:00+00:00", "load": [0.1] * 3}


def _eight_runs_only() -> dict:
    """The shipped profile as fitted to the eight runs alone (its busy run's row and record
    dropped, refitted from its own records without a thread's CPU per wake-up)."""
    d = copy.deepcopy(hostprofile.shipped(PROFILE).to_dict())
    d["fit"]["training_rows"] = [
        r for r in d["fit"]["training_rows"] if "measured_mean_us" not in r
    ]
    d["measured"].pop("busy_runs", None)
    trip = float(d["measured"]["socket_wake"]["min_rtt_us"])
    out = MSW.rebuild(d, d["measured"], trip, (), "")
    assert "wake_cpu_s" not in out["host"]  # a fitted field is not carried over from the old fit
    return out


@pytest.fixture
def quick_fits(monkeypatch):
    """Fits of a few evaluations: enough to check what goes in and what is recorded."""
    real = MSW.build_profile
    monkeypatch.setattr(MSW, "build_profile", lambda *a, **kw: real(*a, max_evaluations=4, **kw))


def test_the_busy_run_joins_the_training_rows_and_moves_the_work_per_message():
    d = _eight_runs_only()
    assert len(d["fit"]["training_rows"]) == len(RUNS)
    out = MB.update(d, _settings(d["machine"]["kernel"]), _repeats())
    rows = out["fit"]["training_rows"]
    assert len(rows) == len(RUNS) + len(BUSY_RUNS)
    busy = rows[-1]
    # fitted by its rate: the mean operation time QD / IOPS of the repeats' median rate
    assert (busy["sock_mode"], busy["qd"]) == ("more", 64)
    assert busy["measured_mean_us"] == pytest.approx(161.0)
    assert out["measured"]["busy_runs"]["repeats"] == _repeats()
    # a server that runs 64 requests in 161 us spends far less on a message than the eight
    # runs alone put there: the fit moves the cost from the message to the segments
    assert out["host"]["proc_s"] < 0.6 * d["host"]["proc_s"]
    assert out["host"]["gso_cpu_s"] > d["host"]["gso_cpu_s"]
    assert "tools/measure_busy_run.py" in out["provenance"]["proc_s"]
    # with the busy run the fit tells a thread's CPU per wake-up from the work per message
    assert out["provenance"]["wake_cpu_s"].startswith("fitted")
    assert "wcpu_s" in out["fit"]["fitted"]
    assert 0 < out["host"]["wake_cpu_s"] <= 10e-6
    hostprofile.validate(out)


def test_without_wake_cpu_and_measured_again(quick_fits):
    d = copy.deepcopy(hostprofile.shipped(PROFILE).to_dict())
    n = len(RUNS) + len(BUSY_RUNS)
    plain = MB.update(d, _settings(d["machine"]["kernel"]), _repeats(), fit_wake_cpu=False)
    assert "wake_cpu_s" not in plain["host"] and "wcpu_s" not in plain["fit"]["fitted"]
    # refitting with the busy run measured again replaces its row: nothing is counted twice
    once = MB.update(d, _settings(d["machine"]["kernel"]), _repeats())
    again = MB.update(once, _settings(d["machine"]["kernel"]), _repeats(150.0))
    assert len(once["fit"]["training_rows"]) == len(again["fit"]["training_rows"]) == n
    assert again["fit"]["training_rows"][-1]["measured_mean_us"] == pytest.approx(151.0)
    assert again["measured"]["busy_runs"]["repeats"] == _repeats(150.0)


def test_repeats_recorded_by_a_profile_refit_another_without_measuring(
    tmp_path, capsys, quick_fits
):
    d = _eight_runs_only()
    done = MB.update(d, _settings(d["machine"]["kernel"]), _repeats())
    src = tmp_path / "measured.json"
    src.write_text(json.dumps(done))
    target = tmp_path / "target.json"
    target.write_text(json.dumps(d))
    (out,) = MB.main(["--profile", str(target), "--repeats-from", str(src)])
    assert out["measured"]["busy_runs"]["repeats"] == _repeats()
    assert out["measured"]["busy_runs"]["date"] == "2026-11-29T20:00:00+00:00"
    assert "repeats' medians: 160.0 161.0 162.0 us" in capsys.readouterr().out
    assert json.loads(target.read_text()) == d  # not written without --write
    with pytest.raises(ValueError, match="records no busy runs"):
        MB.recorded(target)


def test_another_kernel_or_no_socket_wake_up_is_refused():
    d = copy.deepcopy(hostprofile.shipped(PROFILE).to_dict())
    with pytest.raises(ValueError, match="kernel"):
        MB.update(d, _settings("5.10.0-other"), _repeats())
    del d["measured"]["socket_wake"]
    with pytest.raises(ValueError, match="socket wake-up"):
        MB.update(d, _settings(d["machine"]["kernel"]), _repeats())

"""tools/measure_busy_run.py: a profile refitted with the calibration's busy run added to its
eight, from made-up repeats on the same kernel (the harness itself is tested elsewhere)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from models.measure.calruns import BUSY_RUNS
from models.sim import hostprofile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import measure_busy_run as MB  # noqa: E402

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
            "iops": 3.5e5,
            "stalled_pct": 0.0,
            "server_data_segments_per_op": 0.35,
            "mean_busy_count": 900.0,
        }
        for k in range(3)
    ]


def _settings(release: str) -> dict:
    return {"kernel": {"release": release}, "date": "2026-11-29T20:00:00+00:00", "load": [0.1] * 3}


def test_the_busy_run_joins_the_training_rows_and_moves_the_work_per_message():
    d = copy.deepcopy(hostprofile.shipped(PROFILE).to_dict())
    out = MB.update(d, _settings(d["machine"]["kernel"]), _repeats())
    rows = out["fit"]["training_rows"]
    assert len(rows) == len(d["fit"]["training_rows"]) + 1
    busy = rows[-1]
    assert (busy["sock_mode"], busy["qd"], busy["measured_p50_us"]) == ("more", 64, 161.0)
    assert out["measured"]["busy_runs"]["repeats"] == _repeats()
    # a server that runs 64 requests in 161 us spends far less on a message than the eight
    # runs alone put there: the fit moves the cost from the message to the segments
    assert out["host"]["proc_s"] < 0.6 * d["host"]["proc_s"]
    assert out["host"]["gso_cpu_s"] > d["host"]["gso_cpu_s"]
    assert "tools/measure_busy_run.py" in out["provenance"]["proc_s"]
    # with the busy run the fit tells a thread's CPU per wake-up from the work per message
    assert out["provenance"]["wake_cpu_s"].startswith("fitted")
    assert 0 < out["host"]["wake_cpu_s"] <= 10e-6
    hostprofile.validate(out)
    plain = MB.update(d, _settings(d["machine"]["kernel"]), _repeats(), fit_wake_cpu=False)
    assert "wake_cpu_s" not in plain["host"]


def test_another_kernel_or_no_socket_wake_up_is_refused():
    d = copy.deepcopy(hostprofile.shipped(PROFILE).to_dict())
    with pytest.raises(ValueError, match="kernel"):
        MB.update(d, _settings("5.10.0-other"), _repeats())
    del d["measured"]["socket_wake"]
    with pytest.raises(ValueError, match="socket wake-up"):
        MB.update(d, _settings(d["machine"]["kernel"]), _repeats())


def test_the_tool_s_examples():
    import doctest

    assert doctest.testmod(MB).failed == 0

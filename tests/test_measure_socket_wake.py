"""tools/measure_socket_wake.py: a profile rebuilt with the socket wake-up and the path held at half
the kernel's smallest round trip, from made-up benchmark runs on the same kernel (the real
benchmark runs in tests/test_measure_costs.py)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from models.sim import hostprofile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import measure_socket_wake as MSW  # noqa: E402

US = 1e-6  # seconds per microsecond


def _settings(release: str) -> dict:
    return {"kernel": {"release": release}, "date": "2026-11-29T16:00:00+00:00", "load": [0.1] * 3}


def _runs(level: float = 0.0) -> list[dict]:
    """Three runs: the socket's wake-up 18-20 us up to 40 us of idle, 25 us after; a ping-pong of
    50 us in poll() and 8 us spinning (a wake-up adds 21 us, each side idles 46 us)."""
    out = []
    for k in range(3):
        gaps = [(2.0, 18.0), (40.0, 19.0), (160.0, 25.0), (1280.0, 26.0)]
        out.append(
            {
                "tcp_by_gap": [
                    {"gap_us": g, "median_us": m + k + level, "samples": 100} for g, m in gaps
                ],
                "pingpong": {
                    "bytes": 48,
                    "poll_median_us": 50.0 + k,
                    "spin_median_us": 8.0,
                    "samples": 100,
                },
            }
        )
    return out


def test_the_profile_is_rebuilt_with_the_path_held_and_the_socket_s_curve():
    d = copy.deepcopy(hostprofile.shipped("kernel6_machine3_try2_held").to_dict())
    out = MSW.update(d, _settings(d["machine"]["kernel"]), _runs(), 3.0)
    p = hostprofile.validate(out)
    h = p.host
    # the path: half the 3 us round trip, one way, half at each end; held, not fitted
    assert h["tx_latency_s"] == h["rx_latency_s"] == pytest.approx(0.75 * US)
    assert "path_s" in out["fit"]["fixed"] and out["fit"]["kernel_min_rtt_us"] == 3.0
    # the curve: the median run (19, 20, 26, 27 us at its four gaps), moved so that at the
    # ping-pong's idle gap (51 - 8/2 = 47 us: 20 + 6 * 7/120 us on the curve) it reads the
    # ping-pong's wake-up ((51 - 8) / 2 = 21.5 us)
    move = 21.5 - (20.0 + 6.0 * 7.0 / 120.0)
    got = [(round(i / US), w / US) for i, w in h["wake_curve_s"]]
    want = [(2, 19.0 + move), (40, 20.0 + move), (160, 26.0 + move), (1280, 27.0 + move)]
    assert [g for g, _ in got] == [g for g, _ in want]
    assert [w for _, w in got] == pytest.approx([w for _, w in want])
    # the runs are kept; what a tool measured later is carried over as it was
    assert len(out["measured"]["socket_wake"]["runs"]) == 3
    for field in ("timer_arm_cpu_s", "timer_fire_cpu_s"):
        assert h[field] == d["host"][field] and out["provenance"][field] == d["provenance"][field]
    assert "tools/measure_socket_wake.py" in out["provenance"]["proc_s"]
    # the work per message is fitted again, inside its range
    lo, hi = out["fit"]["ranges_s"]["op_s"]
    assert lo <= h["proc_s"] <= hi and "op_s" in out["fit"]["fitted"]


def test_a_dearer_wake_up_leaves_less_to_the_work_per_message():
    # the fit holds the eight runs' medians: a socket wake-up 5 us dearer (the ping-pong alike)
    # must leave less time to the per-message work
    d = copy.deepcopy(hostprofile.shipped("kernel6_machine3_try2_held").to_dict())
    st = _settings(d["machine"]["kernel"])
    base = MSW.update(d, st, _runs(), 3.0)
    dear_runs = _runs(5.0)
    for r in dear_runs:
        r["pingpong"]["poll_median_us"] += 10.0  # 5 us more per wake-up
    dear = MSW.update(d, st, dear_runs, 3.0)
    assert dear["host"]["proc_s"] < base["host"]["proc_s"]


def test_another_kernel_is_refused():
    d = copy.deepcopy(hostprofile.shipped("kernel6_machine3_try2_held").to_dict())
    with pytest.raises(ValueError, match="kernel"):
        MSW.update(d, _settings("5.10.0-other"), _runs(), 3.0)


def test_the_command_line_refuses_a_bad_run_count(capsys):
    with pytest.raises(SystemExit) as info:
        MSW.main(["--profile", "x.json", "--runs", "0"])
    assert info.value.code == 2 and "--runs" in capsys.readouterr().err

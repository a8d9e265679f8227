"""tools/measure_timers.py: profiles given the pacing timer's two measured costs (from benchmark
runs on the same kernel), without running the benchmark (the runs are made up here;
tests/test_measure_costs.py runs the real one)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from models.sim import hostprofile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import measure_timers  # noqa: E402

US = 1e-6  # seconds per microsecond


def _profile() -> dict:
    d = copy.deepcopy(hostprofile.shipped("kernel6_machine3").to_dict())
    for f in measure_timers.FIELDS:
        d["host"].pop(f, None)
        d["provenance"].pop(f, None)
    d["measured"].pop("timers", None)
    return d


def _settings(release: str) -> dict:
    return {"kernel": {"release": release}, "date": "2026-11-29T13:00:00+00:00", "load": [0.1] * 3}


def _runs() -> list[dict]:
    return [
        {"timer_arm_cpu_s": a * US, "timer_fire_cpu_s": f * US}
        for a, f in ((5.8, 12.5), (6.1, 12.2), (5.6, 13.0), (5.9, 12.4), (5.7, 12.6))
    ]


def test_the_medians_are_written_with_every_run():
    d = _profile()
    out = measure_timers.update(d, _settings(d["machine"]["kernel"]), _runs())
    p = hostprofile.validate(out)
    assert p.side("server")["timer_arm_cpu_s"] == pytest.approx(5.8 * US)
    assert p.side("client")["timer_fire_cpu_s"] == pytest.approx(12.5 * US)
    assert out["measured"]["timers"]["timer_fire_cpu_s"][2] == pytest.approx(13.0 * US)
    assert "tools/measure_timers.py" in out["provenance"]["timer_arm_cpu_s"]
    assert "timer_arm_cpu_s" not in d["host"]  # the input is left as it was


def test_another_kernel_or_a_missing_cost_is_refused():
    d = _profile()
    with pytest.raises(ValueError, match="made on kernel"):
        measure_timers.update(d, _settings("5.10.0-other"), _runs())
    runs = _runs()
    del runs[1]["timer_fire_cpu_s"]  # a run whose benchmark gave no interrupt cost
    with pytest.raises(ValueError, match="both timer costs"):
        measure_timers.update(d, _settings(d["machine"]["kernel"]), runs)


def test_the_command_writes_each_profile(tmp_path, monkeypatch, capsys):
    d = _profile()
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for p in paths:
        p.write_text(json.dumps(d))
    monkeypatch.setattr(
        measure_timers, "measure", lambda n: (_settings(d["machine"]["kernel"]), _runs()[:n])
    )
    measure_timers.main([a for p in paths for a in ("--profile", str(p))] + ["--runs", "3"])
    assert "wrote" not in capsys.readouterr().out  # without --write nothing is written
    assert "timer_arm_cpu_s" not in json.loads(paths[0].read_text())["host"]
    measure_timers.main(
        [a for p in paths for a in ("--profile", str(p))] + ["--runs", "3", "--write"]
    )
    for p in paths:
        host = json.loads(p.read_text())["host"]
        assert host["timer_arm_cpu_s"] == pytest.approx(5.8 * US)  # median of 5.8, 6.1, 5.6
    with pytest.raises(SystemExit):
        measure_timers.main(["--profile", str(paths[0]), "--runs", "0"])

"""bbr's two regimes on the eighth machine (models.validation.regimes, tools/cc_regimes.py): what
the kernel's readings and the model show, and each claim failing with a wrong world."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models.data import describe
from models.sim.rules.bbr import Bbr
from models.validation import machine8 as M8
from models.validation import regimes as RG

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import cc_regimes  # noqa: E402


@pytest.fixture(scope="module")
def runs():
    return RG.runs()


@pytest.fixture(scope="module")
def models():
    return RG.model(8), RG.model(32)


def test_the_runs_and_the_model_show_what_the_text_says(runs, models):
    f = RG.findings(runs, *models)
    assert all(f.values()), f
    assert sorted(runs["qd"].unique()) == list(RG.DEPTHS) and len(runs) == 6


def test_times_exact_to_the_femtosecond_give_another_estimate(runs, models, monkeypatch):
    """With the rate sampler's times left exact (floored to 1 fs, not 1 us) the model's estimate
    is 12 packets per 1.8 us, not the kernel's 12 per microsecond."""
    monkeypatch.setattr(Bbr, "stamp_fs", 1)
    M8._probe_run.cache_clear()  # (the probe's runs are cached per process)
    try:
        exact = RG.model(8)
    finally:
        M8._probe_run.cache_clear()
    assert RG.packets_per_us(exact["gbs"]) < 8
    f = RG.findings(runs, exact, models[1])
    assert not f["the model's estimate is the kernel's"]


def test_a_kernel_without_whole_microseconds_fails_the_twelve(runs, models):
    r = runs.copy()
    r["startup_gbs"] *= 1.8 / 2  # 12 packets per 1.8 us read as such, not as 1 or 2 us
    assert not RG.findings(r, *models)["twelve packets per microsecond"]


def test_a_qd8_run_leaving_startup_fails(runs, models):
    r = runs.copy()
    i = r.index[r["qd"] == 8][0]
    r.loc[i, ["left_ms", "startup_share"]] = [40.0, 0.1]
    assert not RG.findings(r, *models)["QD 8 stays in start-up"]


def test_a_qd32_run_staying_fast_fails(runs, models):
    r = runs.copy()
    i = r.index[r["qd"] == 32][0]
    r.loc[i, ["window_gbs", "iops"]] = [17.376, 120_000.0]
    assert not RG.findings(r, *models)["QD 32 leaves start-up"]


def test_flights_alike_at_both_depths_fail(runs, models):
    r = runs.copy()
    r.loc[r["qd"] == 32, "flight_max"] = 90
    assert not RG.findings(r, *models)["only QD 32 fills the flight"]


def test_a_model_that_leaves_startup_at_qd32_fails_the_known_miss(runs, models):
    m8, m32 = models
    mended = {**m32, "mode": "probe_bw", "flight_max": 178, "iops": 40_000.0}
    f = RG.findings(runs, m8, mended)
    assert not f["the model misses the exit"]
    assert f["the model's estimate is the kernel's"]


def test_bad_depths_are_refused_by_name():
    with pytest.raises(ValueError, match="qd must be one of"):
        RG.model(16)


def test_the_bundled_dataset_is_the_tools():
    desc = describe(RG.DATASET)
    command = desc["sources"][0]["section"]
    assert "tools/cc_regimes.py" in command and "--every 500" in command
    fields = [f["name"] for f in desc["schema"]["fields"]]
    assert fields == [name for name, *_ in cc_regimes.FIELDS]
    assert {r["qd"] for r in desc["measurement"]["runs"]} == set(cc_regimes.DEPTHS)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--draws", "0"], "--draws must be in"),
        (["--every", "5"], "--every must be in"),
        (["--duration", "20"], "--duration must be in"),
    ],
)
def test_the_tool_refuses_bad_options_by_name(args, message, capsys, tmp_path):
    with pytest.raises(SystemExit):
        cc_regimes.main(["--out", str(tmp_path), *args])
    assert message in capsys.readouterr().err

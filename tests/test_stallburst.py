"""A Nagle server's stall loop seen from the client (models.validation.stallburst,
tools/stall_burst_sweep.py, models.measure.streams.stall_bursts): the bundled captures against the
simulator as shipped (its waker's cost measured by the wake-up benchmark), without that cost and
with a fitted one, wrong models failing, the tool's columns and refusals."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from models import data
from models.sim import hostprofile
from models.validation import stallburst as SB

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import stall_burst_sweep  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return SB.table()


def test_the_findings_hold(table):
    f = SB.findings(table)
    assert all(f.values()), f
    # the fitted cost is the kernel's first gap less its later gaps: a fit, never a pass
    fit = table[table["role"] == "fit"]
    assert (fit["waker_us"] > 0).all()
    assert set(table.loc[table["role"] == "test", "model"]) == {"as shipped"}
    # the shipped cost was measured on the machine, not taken from these captures
    p = hostprofile.shipped(SB.PROFILE)
    assert p.provenance["waker_curve_s"].startswith("measured later")
    assert "tools/measure_waker.py" in p.provenance["waker_curve_s"]
    shipped = table[table["model"] == "as shipped"]
    assert list(shipped["waker_us"]) == pytest.approx([SB.measured_waker_s() * 1e6] * len(shipped))


def test_the_wrong_model_fails():
    # the client's work per message tripled (2.8 us more: about what doubling it added before
    # the path was held and the fit moved the per-segment cost there): its later gaps are no
    # longer the kernel's
    d = copy.deepcopy(hostprofile.shipped(SB.PROFILE).to_dict())
    d["host"]["proc_s"] *= 3
    wrong = SB.table(profile=hostprofile.load(d))
    f = SB.findings(wrong)
    assert not f[
        "as shipped, with the measured waker's cost, every measure is within the tolerance"
    ]


def test_with_the_waker_cost_turned_off_the_fitted_row_misses(monkeypatch):
    # the mechanism off (every wake-up free to the waker): the fitted cost changes nothing
    from models.sim.wakeups import WakerCost

    monkeypatch.setattr(WakerCost, "charge", lambda self, now: 0)
    f = SB.findings(SB.table())
    assert not f["with the fitted waker cost every measure is within the tolerance (a fit)"]
    assert not f[
        "as shipped, with the measured waker's cost, every measure is within the tolerance"
    ]


def test_the_bursts_are_read_from_each_stall():
    from models.measure.streams import stall_bursts

    # two stalls, the client writing four requests after each; the server's released data first
    c = [0.0, 0.050200, 0.050218, 0.050223, 0.050228, 0.100200, 0.100220, 0.100226, 0.100231]
    s = [0.000010, 0.050020, 0.050280, 0.100020, 0.100290]
    b = stall_bursts(c, s)
    assert [round(x["first_gap_s"] * 1e6) for x in b] == [18, 20]
    assert [round(x["later_gap_s"] * 1e6) for x in b] == [5, 5]
    assert [round(x["server_s"] * 1e6) for x in b] == [80, 90]
    # without a silence of 10 ms there is no stall, so no burst
    assert stall_bursts([0.0, 0.001, 0.002, 0.003], [0.0005, 0.004]) == []


def test_the_tool_writes_the_bundled_columns():
    desc = data.describe(SB.DATASET)
    names = [n for n, *_ in stall_burst_sweep.FIELDS]
    assert [f["name"] for f in desc["schema"]["fields"]] == names
    assert desc["schema"]["primaryKey"] == stall_burst_sweep.KEY
    df = data.load(SB.DATASET)
    assert set(df["cc"]) == set(stall_burst_sweep.CCS)
    assert (df["qd"] == stall_burst_sweep.QD).all()
    assert (df["iosize_bytes"] == stall_burst_sweep.SIZE).all()
    assert (df["bursts"] >= 10).all()  # every run's medians rest on many stalls


@pytest.mark.parametrize(
    "argv, word", [(["--repeats", "0"], "--repeats"), (["--links", "x"], "--links")]
)
def test_bad_arguments_are_refused_before_any_run(argv, word, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        stall_burst_sweep.main(["--out", str(tmp_path), *argv])
    assert info.value.code == 2
    assert word in capsys.readouterr().err


def test_without_tcpdump_or_root_the_sweep_exits_before_any_run(monkeypatch):
    monkeypatch.setattr(stall_burst_sweep.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="needs tcpdump and root"):
        stall_burst_sweep.sweep(0, ["loopback"], 1, 0.1)

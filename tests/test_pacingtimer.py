"""bbr's pacing timer per operation, kernel against simulator (models.validation.pacingtimer,
tools/pacing_timer_sweep.py): the bundled sweep's findings, the wrong model (the pacing check
after Nagle) failing them, the tool's columns and its perf parsing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models import data
from models.sim.rules import bbr as BBR
from models.sim.rules.cc import Reno
from models.validation import pacingtimer as PT

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import pacing_timer_sweep  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return PT.table()


def test_the_findings_hold(table):
    f = PT.findings(table)
    assert all(f.values()), f
    # every run of the sweep stands for a configuration of the pinned sample
    assert len(table) == len(PT.configs())
    # the kernel arms it about once per operation in a third of the configurations or more
    assert (table["kernel_class"] == "per_op").mean() > 1 / 3


def _pacing_after_nagle(monkeypatch) -> None:
    """The wrong order: pacing asked only for data that Nagle and the windows let go."""
    real = BBR.Bbr.paced

    def limit(self, sender, now, start, n):
        return 0 if real(self, sender, now) else Reno.limit(self, sender, now, start, n)

    monkeypatch.setattr(BBR.Bbr, "paced", lambda self, sender, now: False)
    monkeypatch.setattr(BBR.Bbr, "limit", limit)


def test_the_wrong_order_fails(table, monkeypatch):
    _pacing_after_nagle(monkeypatch)
    wrong = PT.table()
    f = PT.findings(wrong)
    assert not f["the simulator's class is the kernel's in three rows of five or more"]
    assert not f[
        "where the kernel arms it per operation behind a Nagle server, the simulator at least "
        "every tenth"
    ]
    assert wrong["right"].sum() < table["right"].sum()


def test_without_the_costs_nothing_else_changes():
    from models.sim import hostprofile
    from models.validation import ackheld

    p = hostprofile.shipped(ackheld.kept_name())
    bare = PT.without_timer_costs(p)
    assert all(f in p.host for f in PT.TIMER_FIELDS)
    assert not any(f in bare.host for f in PT.TIMER_FIELDS)
    assert {k: v for k, v in p.host.items() if k not in PT.TIMER_FIELDS} == bare.host


def test_the_tool_writes_the_bundled_columns():
    desc = data.describe(PT.TABLE)
    fields = [f["name"] for f in desc["schema"]["fields"]]
    assert fields == [n for n, *_ in pacing_timer_sweep.FIELDS]
    assert desc["schema"]["primaryKey"] == pacing_timer_sweep.KEY
    df = data.load(PT.TABLE)
    assert (df["cc"] == "bbr").all()
    ops = df["ops"].astype(float)
    assert (df["arms_per_op"].astype(float) - df["pace_arms"] / ops).abs().max() < 1e-4
    sweeps = desc["measurement"]["sweeps"]
    assert all(w["machine"]["config_hz"] and w["machine"]["date"] for w in sweeps)


def test_perf_output_is_read_and_a_missing_count_refused():
    cmd = pacing_timer_sweep.perf_command("0xffffffff8202c2c0")
    assert cmd.count("--filter") == 2 and "function == 0xffffffff8202c2c0" in cmd
    text = "12,,timer:hrtimer_start,1,100.00,,\n7,,timer:hrtimer_expire_entry,1,100.00,,\n"
    assert pacing_timer_sweep.parse_counts(text) == {"arms": 12, "fires": 7}
    with pytest.raises(RuntimeError, match="fires"):
        pacing_timer_sweep.parse_counts("12,,timer:hrtimer_start,1,100.00,,")

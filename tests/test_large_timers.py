"""bbr's pacing timer behind the fourth machine's 64 KiB loopback servers (models.validation.
large_timers, tools/pacing_timer_large.py): the bundled counts' findings, the wrong models failing
them, and the tool's configurations and refusals."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import pytest

from models import data
from models.validation import large_timers as LT
from models.validation import pacingtimer as PT

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import pacing_timer_large  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return LT.table()


def test_the_doctests_pass():
    assert doctest.testmod(LT).failed == 0


def test_the_findings_hold(table):
    f = LT.findings(table)
    assert all(f.values()), f


def test_every_configuration_was_counted_as_often_as_the_others(table):
    keys = [tuple(c[k] for k in PT.CONFIG_KEY) for c in LT.configs()]
    counted = table.groupby(PT.CONFIG_KEY).size()
    assert sorted(counted.index) == sorted(keys)
    assert counted.nunique() == 1 and counted.iloc[0] >= 2  # repeats
    # the configurations are the sample's 64 KiB loopback runs under bbr
    assert {c["iosize_bytes"] for c in LT.configs()} == {LT.SIZE_BYTES}
    assert {c["link"] for c in LT.configs()} == {"loopback"}
    desc = data.describe(LT.DATASET)
    assert "tcp_pace_kick" in desc["description"]


def test_the_freed_model_in_the_clocks_place_fails(table):
    """The wrong model: frames freed but the pacing clock read at the call's start, in the place
    of the model that reads it after the call's CPU."""
    t = table.copy()
    t["clock_class"] = t["freed_class"]
    t["sim_clock"] = t["sim_freed"]
    t["clock_right"] = t["freed_right"]
    failed = [k for k, v in LT.findings(t).items() if not v]
    assert "read after the call's CPU, the clock lets the model seldom arm it there too" in failed


def test_the_held_model_in_the_freed_place_fails(table):
    """The wrong model: frames held to the end of their wire time in the freed model's place:
    the timer the freed row pays behind the TCP_NODELAY server is not there."""
    t = table.copy()
    t["freed_class"] = t["held_class"]
    failed = [k for k, v in LT.findings(t).items() if not v]
    assert (
        "freed with the clock read at the call's start, the model arms it per response there"
        in failed
    )


def test_the_summary_has_both_groups(table):
    s = LT.summary(table)
    assert list(s.index) == ["behind TCP_NODELAY", "behind Nagle or MSG_MORE"]
    assert s["runs"].sum() == len(table)
    assert s.loc["behind TCP_NODELAY", "clock right (%)"] == pytest.approx(100.0)


def test_the_tool_refuses_to_run_without_root_or_perf(monkeypatch):
    monkeypatch.setattr(pacing_timer_large.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit, match="needs perf and root"):
        pacing_timer_large.sweep(0, ["loopback"], 1, 0.1)


def test_the_rate_ratio_is_each_runs_rate_over_its_configurations_in_the_sample(table):
    one = table.iloc[[0]]
    sample = LT._sample()
    same = sample[
        (sample["sock_mode"] == one["sock_mode"].iloc[0])
        & (sample["client_sock_mode"] == one["client_sock_mode"].iloc[0])
        & (sample["qd"] == one["qd"].iloc[0])
    ]
    assert LT.rate_ratio(one) == pytest.approx(one["iops"].iloc[0] / same["iops"].mean())
    assert 0.5 < LT.rate_ratio(table) < 2.0

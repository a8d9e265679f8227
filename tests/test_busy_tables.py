"""Chapter 4's tables as functions: the busy-count table beside the
simulated one (models.validation.simulator) and the first CPU-bound queue
depth of each server socket (models.presets)."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

from models import presets
from models.data import load
from models.sim import simulate
from models.validation import simulator as V


@pytest.mark.parametrize("mode", presets.BUSY_MODES)
def test_busy_table_rounds_the_simulated_shares(mode):
    t = V.busy_table(mode)
    assert list(t.index) == list(V.BUSY_QDS) and t.index.name == "QD"
    for qd in V.BUSY_QDS:
        shares = V.busy_shares(mode, qd)
        row = t.loc[qd]
        for k in t.columns:
            if k > qd:
                assert math.isnan(row[k])  # no busy period handles more than QD
            else:
                assert row[k] == round(shares.get(k, 0.0))
        # whole percents of shares that sum to 100: off by at most half a
        # point per count
        assert abs(row.dropna().sum() - 100) <= qd / 2


def test_busy_count_comparison_shows_the_dataset_beside_the_simulation():
    both = V.busy_count_comparison(label="random wake-ups", wake_spread_s=60e-6)
    assert both.columns.names == ["server socket", "", "busy count (ops)"]
    csv = load("butterfield2017_busy_count")
    for r in csv.itertuples():
        got = both.loc[int(r.queue_depth), (r.socket_option, "measured (%)", int(r.busy_count))]
        assert got == r.cycles_pct
    sim = both[("Nagle", "random wake-ups (%)")]
    assert sim.equals(V.busy_table("nagle", wake_spread_s=60e-6))


def test_busy_count_comparison_looks_up_without_a_sort():
    """The columns are lexsorted as they stand: a label lookup raises no
    PerformanceWarning, and the sockets keep the order of the table."""
    both = V.busy_count_comparison()
    assert list(dict.fromkeys(both.columns.get_level_values(0))) == ["TCP_NODELAY", "Nagle"]
    assert list(dict.fromkeys(both.columns.get_level_values(1))) == [
        "measured (%)",
        "simulated (%)",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)
        shares = both.loc[4, ("Nagle", "measured (%)")]
    assert list(shares.index) == sorted(shares.index)


def test_first_cpu_bound_is_the_first_queue_depth_at_the_limit():
    qd, iops = presets.first_cpu_bound("nodelay", range(8, 33, 4))
    limit = 1 / presets.busy_count("nodelay", qd).server.proc_s
    assert iops >= presets.CPU_BOUND_SHARE * limit
    below = simulate(presets.busy_count("nodelay", qd - 4, ops=2000))
    assert below.iops < presets.CPU_BOUND_SHARE * limit


def test_first_cpu_bound_none_when_the_queue_is_too_shallow():
    assert presets.first_cpu_bound("nagle", (1, 2)) is None
    t = presets.cpu_bound_onset(qds=(1, 2))
    assert list(t.index) == list(presets.BUSY_MODES)
    assert t["first CPU-bound QD"].isna().all()


def test_nagle_needs_at_least_the_queue_nodelay_needs():
    t = presets.cpu_bound_onset()
    assert t.loc["nagle", "first CPU-bound QD"] >= t.loc["nodelay", "first CPU-bound QD"]
    assert (t["IOPS there (1/s)"] >= presets.CPU_BOUND_SHARE * t["limit 1/SP (1/s)"]).all()


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        presets.first_cpu_bound("cork")


def test_first_overtake():
    assert presets.first_overtake([4, 8, 16], [3, 3, 3], [1, 3, 4]) == 16
    assert presets.first_overtake([4, 8], [3, 3], [3.01, 3.5], margin=0.01) == 8
    assert presets.first_overtake([4, 8], [3, 3], [1, 3]) is None


def test_mode_sweep_runs_both_sockets():
    t = presets.mode_sweep([1, 2], run={"ops": 200})
    assert list(t.index) == [1, 2] and t.index.name == "QD"
    for qd in (1, 2):
        for mode, col in (("nodelay", "TCP_NODELAY (1/s)"), ("nagle", "Nagle (1/s)")):
            sc = presets.busy_count(mode, qd).replace(run={"ops": 200})
            assert t.loc[qd, col] == simulate(sc).iops

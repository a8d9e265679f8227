"""The calibrated host model (models.kernel.calibrate): the split of the sweep,
the congestion-control rows, and the fit recovering known costs."""

from __future__ import annotations

import math

import pytest

from models import kernel as KR
from models.kernel import calibrate


@pytest.fixture(scope="module")
def sweep():
    run = KR.load_kernel_run()  # the bundled sweep
    df = calibrate.split(run.iscsi, run.iscsi["stalled_pct"] >= KR.STALL_SHARE_PCT)
    return run, df


def test_min_segments_per_response():
    assert calibrate.min_segments("nodelay", 512, 1448) == 2
    assert calibrate.min_segments("nodelay", 4096, 1448) == 4
    assert calibrate.min_segments("more_nodelay", 4096, 1448) == 3
    assert calibrate.min_segments("more_nodelay", 512, 65483) == 1
    assert calibrate.min_segments("nagle", 512, 1448) is None


def test_the_training_set_is_the_stated_subset(sweep):
    _, df = sweep
    train = df[df["role"] == "train"]
    assert set(train["link"]) == {calibrate.TRAIN["link"]}
    assert set(train["cc"]) == {calibrate.TRAIN["cc"]}
    assert set(train["sock_mode"]) == set(calibrate.TRAIN["sock_mode"])
    assert train["qd"].max() <= calibrate.TRAIN["qd_max"]
    assert (train["stalled_pct"] < KR.STALL_SHARE_PCT).all()
    # every run has exactly one role, and no stalled run is tested
    assert set(df["role"]) == {"train", "test", "bbr", "stall"}
    tested = df[df["role"].isin(["test", "bbr"])]
    assert (tested["stalled_pct"] < KR.STALL_SHARE_PCT).all()


def test_only_bbr_merges_segments_on_links_without_a_limit(sweep):
    _, df = sweep
    bbr = df[df["role"] == "bbr"]
    assert len(bbr) > 0 and (bbr["cc"] == "bbr").all()
    assert bbr["rate_limit_bits_per_s"].isna().all()
    cubic = df[(df["cc"] == "cubic")]
    assert not calibrate.set_by_congestion_control(cubic).any()


def test_the_fit_recovers_known_costs(sweep):
    # Rows whose "measured" medians are the simulator's own for known
    # costs: the search must find costs that give them back.
    run, df = sweep
    truth = calibrate.HostCosts(op_s=3e-6, tx_s=7e-6, ack_s=1e-6, wake_s=2e-6, path_s=3e-6)
    median_us = KR.tables._median_us(run)
    pick = df[(df["role"] == "train") & (df["iosize_bytes"] == 512) & df["qd"].isin([1, 4])]
    rows = [dict(r, lat_p50_us=median_us(r, truth)) for r in pick.to_dict("records")]
    fit = calibrate.fit_costs(rows, median_us, max_evaluations=300)
    assert fit.loss < 1e-3
    assert all(abs(r) < 0.05 for r in fit.residuals)
    got = fit.costs
    # per-operation and per-segment costs are identified by these rows
    assert got.tx_s == pytest.approx(truth.tx_s, rel=0.2)
    assert got.op_s == pytest.approx(truth.op_s, rel=0.3)
    assert math.isfinite(got.path_s) and got.path_s > 0


def test_an_optional_cost_is_searched_only_when_asked():
    # a made-up model: the median is the work per message plus four times a wake-up's CPU, so
    # the fit must find the wake-up's CPU only when it may search it
    truth = {"op_s": 2e-6, "wcpu_s": 3e-6}
    rows = [{"lat_p50_us": 1e6 * (truth["op_s"] + 4 * truth["wcpu_s"]) + k} for k in range(2)]

    def median_us(row, c):
        return 1e6 * (c.op_s + 4 * c.wcpu_s) + rows.index(row)

    fixed = {"op_s": truth["op_s"], "tx_s": 1e-6, "ack_s": 1e-6, "wake_s": 1e-6, "path_s": 1e-6}
    fit = calibrate.fit_costs(rows, median_us, fixed=fixed, also=("wcpu_s",))
    assert fit.costs.wcpu_s == pytest.approx(truth["wcpu_s"], rel=0.02)
    assert fit.costs.host_fields()["wake_cpu_s"] == fit.costs.wcpu_s
    assert fit.fitted == ("wcpu_s",)  # the profile records it among the fitted costs
    plain = calibrate.fit_costs(rows, median_us, fixed=fixed)
    assert plain.costs.wcpu_s == 0 and "wake_cpu_s" not in plain.costs.host_fields()
    assert plain.fitted == ()
    with pytest.raises(ValueError, match="not an optional cost"):
        calibrate.fit_costs(rows, median_us, fixed=fixed, also=("op_s",))

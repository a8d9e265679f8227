"""Chapter 9's views of the kernel tables (models.kernel): the stall map, the MSS rule's
thresholds, the repeat factors and the calibrated model's changed verdicts, on small tables whose
answers are known, and on the bundled run."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from models import framing
from models import kernel as KR


@pytest.mark.parametrize(
    "h, n, mss",
    [(48, 512, 1448), (48, 512, 8948), (48, 2048, 8948), (48, 4096, 65483), (8, 1447, 1448)],
)
def test_qd_max_rule_is_the_last_qd_that_can_stall(h, n, mss):
    q = KR.qd_max_rule(h, n, mss)
    assert q == 0 or KR.stall_possible(q, h, n, mss)
    assert not KR.stall_possible(q + 1, h, n, mss)


def _runs(rows):
    cols = ["link", "cc", "iosize_bytes", "mtu_bytes", "qd", "sock_mode", "kernel_stalls"]
    cols += ["sim_stalls", "excluded"]
    return pd.DataFrame(rows, columns=cols)


def test_stall_map_marks_verdicts_disagreements_and_exclusions():
    df = _runs(
        [
            ("lo", "bbr", 512, 1500, 1, "nagle", True, True, ""),
            ("lo", "bbr", 512, 1500, 2, "nagle", True, False, ""),
            ("lo", "bbr", 512, 1500, 3, "nagle", False, False, "repeats disagree"),
            ("lo", "bbr", 512, 1500, 4, "nagle", False, True, ""),
        ]
    )
    m = KR.stall_map(df, ["link", "cc", "iosize_bytes"], "qd")
    assert list(m.loc[("lo", "bbr", 512)]) == ["●", "●≠", "·?", "·≠"]
    flory = df.drop(columns="excluded")  # Flory's table has no exclusions
    assert list(KR.stall_map(flory, ["link"], "qd").loc["lo"]) == ["●", "●≠", "·", "·≠"]


def test_stall_thresholds_per_group_from_kept_nagle_runs():
    df = _runs(
        [
            ("v", "bbr", 512, 1500, 1, "nagle", True, True, ""),
            ("v", "bbr", 512, 1500, 2, "nagle", True, True, ""),
            ("v", "bbr", 512, 1500, 3, "nagle", False, False, ""),
            ("v", "bbr", 512, 1500, 4, "nagle", True, True, "left out"),  # excluded: ignored
            ("v", "bbr", 512, 1500, 8, "nodelay", True, True, ""),  # not Nagle: ignored
            ("v", "bbr", 2048, 1500, 1, "nagle", False, False, ""),
        ]
    )
    t = KR.stall_thresholds(df).set_index("iosize_bytes")
    mss = framing.mss(1500)
    assert t.loc[512, "mss_bytes"] == mss and t.loc[512, "rule_qd_max"] == 2
    assert (t.loc[512, "kernel_qd_max"], t.loc[512, "sim_qd_max"]) == (2, 2)
    assert (t.loc[2048, "rule_qd_max"], t.loc[2048, "kernel_qd_max"]) == (0, 0)


def _pairs(values):
    rows = []
    for i, (a, b) in enumerate(values):
        for cc, v in (("bbr", a), ("cubic", b)):
            rows.append(
                dict(
                    link="lo",
                    sock_mode="more",
                    client_sock_mode="nagle",
                    iosize_bytes=512,
                    qd=i + 1,
                    cc=cc,
                    iops=v,
                    kernel_stalls=False,
                )
            )
    return pd.DataFrame(rows)


def test_repeat_factor_is_the_larger_over_the_smaller():
    df = _pairs([(100.0, 200.0), (300.0, 100.0), (50.0, 50.0)])
    p = KR.repeat_pairs(df, "iops")
    assert list(p["factor"]) == pytest.approx([2.0, 3.0, 1.0])
    assert KR.repeat_factor(df, "iops") == pytest.approx(2.0)
    # between the two middle pairs of four: their geometric mean
    four = _pairs([(1.0, 1.0), (2.0, 1.0), (8.0, 1.0), (9.0, 1.0)])
    assert KR.repeat_factor(four, "iops") == pytest.approx(4.0)


def test_repeat_factor_without_repeats_is_nan():
    one_cc = _pairs([(100.0, 200.0)])
    one_cc = one_cc[one_cc.cc == "bbr"]
    assert KR.repeat_pairs(one_cc, "iops").empty
    assert math.isnan(KR.repeat_factor(one_cc, "iops"))
    stalled = _pairs([(100.0, 200.0)]).assign(kernel_stalls=True)
    assert math.isnan(KR.repeat_factor(stalled, "iops"))


def test_calibrated_verdicts_lists_only_the_changed_runs():
    df = pd.DataFrame(
        dict(
            qd=[2, 32, 3],
            iosize_bytes=[512, 512, 512],
            mtu_bytes=[65536, 1500, 1500],
            stalled_pct=[30.0, 0.0, 0.0],
            sim_stalls=[True, True, False],
        )
    )
    v = KR.calibrated_verdicts(df)
    assert list(v.qd) == [32] and not v.kernel_stalls.iloc[0] and v.beyond_rule.iloc[0]


def test_views_on_the_bundled_run():
    run, host, flory, iscsi, busy = KR.kernel_tables("")
    thr = KR.stall_thresholds(iscsi)
    assert (thr.kernel_qd_max == thr.sim_qd_max).all()
    assert (thr.kernel_qd_max <= thr.rule_qd_max).all()
    m = KR.stall_map(flory, ["link", "payload_bytes"], "sock_mode")
    assert not m.stack().str.contains("≠").any()
    assert KR.repeat_factor(iscsi, "lat_p50_us") < KR.repeat_factor(iscsi, "iops")


def test_bbr_runs_and_their_cubic_twins():
    t = pd.DataFrame(
        dict(
            role=["bbr", "test", "test", "train"],
            cc=["bbr", "cubic", "cubic", "bbr"],
            link=["lo", "lo", "lo", "lo"],
            sock_mode=["nodelay", "nodelay", "nodelay", "more"],
            iosize_bytes=[512, 512, 512, 512],
            qd=[16, 16, 8, 16],
            mtu_bytes=[65536] * 4,
        )
    )
    bbr, twins = KR.bbr_runs(t)
    assert list(bbr.index) == [0] and list(twins.index) == [1]
    assert list(bbr.mode_segments) == [2]  # TCP_NODELAY: header, then the data

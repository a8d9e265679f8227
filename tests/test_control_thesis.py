"""Back-tests of chapter 10 against the Oslo thesis (2010) datasets."""

import pytest

from models import data
from models.control import thesis as th
from models.validation import run


def test_read_end_points_imply_one_delayed_wait_per_read():
    assert th.fitted_rounds("read") == pytest.approx(1.0, abs=0.05)


def test_write_end_points_imply_about_two():
    k = th.fitted_rounds("write")
    assert 1.9 < k < 2.5


def test_delay_classes_match_the_sweep_end_point():
    cls = data.load("thesis2010_delay_classes")
    rates = data.load("thesis2010_delay_rate")
    assert cls["delay_ms"].max() == rates["delay_ms"].max() == 9.6
    assert cls["delay_ms"].diff().dropna().round(9).eq(0.5).all()


def test_overhead_table_is_consistent():
    ov = data.load("thesis2010_overhead").set_index("direction")
    for d in ("read", "write"):
        r = ov.loc[d]
        assert r["ci99_low_s"] < r["mean_diff_s"] < r["ci99_high_s"]
        assert r["with_tc_mean_s"] - r["without_tc_mean_s"] == pytest.approx(r["mean_diff_s"], abs=1.5e-3)


@pytest.mark.parametrize("name", ["ch10.throttle", "ch10.closed_loop"])
def test_chapter_10_comparisons_pass(name):
    rows = run(name)
    assert rows and all(r.passed for r in rows), [r.row() for r in rows if not r.passed]

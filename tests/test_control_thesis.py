"""Back-tests of chapter 10 against the datasets of Bjørgeengen (2010)."""

import numpy as np
import pytest

from models import data
from models.control import thesis as th
from models.control.throttle import DelayThrottle
from models.validation import assert_all_pass, checks, run


def test_read_end_points_imply_one_delayed_wait_per_read():
    assert th.fitted_rounds("read") == pytest.approx(1.0, abs=0.05)


def test_write_end_points_imply_about_two():
    k = th.fitted_rounds("write")
    assert 1.9 < k < 2.5


def test_the_exchange_counts_one_wait_per_read_and_two_per_write():
    assert th.delayed_waits("read") == 1
    # InitialR2T=Yes on the target decides it, whatever ImmediateData is
    assert th.delayed_waits("write") == th.delayed_waits("write", immediate_data=False) == 2
    s = th.assumed_session()
    assert s.initial_r2t and s.first_burst_length == 65536 and s.target_mrdsl == 8192
    with pytest.raises(ValueError, match="direction"):
        th.delayed_waits("trim")


def test_delay_classes_match_the_sweep_end_point():
    cls = data.load("thesis2010_delay_classes")
    rates = data.load("thesis2010_delay_rate")
    assert cls["delay_ms"].max() == rates["delay_ms"].max() == 9.6
    assert cls["delay_ms"].diff().dropna().round(9).eq(0.5).all()


def test_listed_ladder_falls_through_above_its_classes():
    lad = th.listed_ladder()
    d = lad.delays()
    assert len(d) == 41 and d[1] == pytest.approx(0.1e-3) and d[20] == pytest.approx(9.6e-3)
    assert (d[21:] == 0).all() and lad.max_delay_s == pytest.approx(9.6e-3)
    assert th.text_ladder() == DelayThrottle()
    assert th.text_ladder().max_delay_s == pytest.approx(20e-3)


def test_overhead_table_is_consistent():
    ov = data.load("thesis2010_overhead").set_index("direction")
    for d in ("read", "write"):
        r = ov.loc[d]
        assert r["ci99_low_s"] < r["mean_diff_s"] < r["ci99_high_s"]
        assert r["with_tc_mean_s"] - r["without_tc_mean_s"] == pytest.approx(
            r["mean_diff_s"], abs=1.5e-3
        )


def test_overhead_ttest_reconstruction():
    for d, per_op_us in (("read", 2.81), ("write", 13.67)):
        t = th.overhead_ttest(d)
        # the reconstructed interval is the printed one (by construction of se) ...
        assert t.ci_recomputed_s == pytest.approx((t.ci_low_s, t.ci_high_s), abs=1e-12)
        # ... and the test is significant at 1 % even with the fewest Welch degrees of freedom
        assert t.df == pytest.approx(38) and t.p_value < t.p_fewest_df < 1e-3
        assert t.t == pytest.approx(t.ci_centre_s / t.se_s)
        assert t.operations == 8192 and t.per_operation_s * 1e6 == pytest.approx(
            per_op_us, abs=0.01
        )
    with pytest.raises(ValueError, match="direction"):
        th.overhead_ttest("both")


def test_interference_statements_parse():
    st = th.interference_statements()
    assert st.loc["more_writers_longer_wait", "writers"] == (1, 3, 12)
    assert st.loc["delay_shortens_wait", "delay_ms"] == (0.0, 4.6, 9.6)
    assert set(st["relation"]) <= {"above", "between", "increasing", "decreasing"}


def test_plant_defaults_to_the_counted_waits():
    assert th.thesis_plant().rounds_per_write == 2.0
    assert th.thesis_plant(rounds_per_write=1.0).rounds_per_write == 1.0


def test_listed_ladder_locks_the_listing_controller_out():
    from models.control.loop import summarize
    from models.validation import throttling as VT

    runs = VT.thesis_loop_runs(setpoints_ms=(20.0,), throttle=th.listed_ladder())
    df = runs[20.0]
    assert (df["steps"] > 20).any()
    # a step chosen at the end of a sample is in force in the next one: past the last class, no delay
    after = df["delay_s"].to_numpy()[1:][df["steps"].to_numpy()[:-1] > 20]
    assert after.size and (after == 0).all()
    assert summarize(df, VT.LOOP_TRANSIENT_S).mean_smoothed_s > 30e-3


@pytest.mark.parametrize("name", ["ch10.throttle", "ch10.out_of_sample", "ch10.closed_loop"])
def test_chapter_10_comparisons_hold_as_recorded(name):
    rows = run(name)
    assert checks(rows)
    assert_all_pass(rows)


def test_write_prediction_is_a_test_and_the_undelayed_rates_are_fits():
    rows = {r.quantity: r for r in run("ch10.throttle")}
    kinds = {q.split(" (")[0]: r.kind for q, r in rows.items() if "rate" in q and "MB /" not in q}
    assert (
        kinds["undelayed write rate"] == "fit"
        and kinds["write rate at 9.6 ms added delay"] == "test"
    )
    w = next(r for q, r in rows.items() if q.startswith("write rate at 9.6"))
    assert w.extra["rounds"] == 2 and w.passed and np.isclose(w.rel_tol, 0.10)


def test_overhead_arithmetic_is_audited_not_tested():
    """Section 5.8's figures recomputed from the thesis's own numbers are audits: of the throttle's
    rows only the two 9.6 ms rates count."""
    rows = run("ch10.throttle")
    assert [r.quantity.split(" (")[0] for r in checks(rows)] == [
        "read rate at 9.6 ms added delay",
        "write rate at 9.6 ms added delay",
    ]
    assert sum(r.kind == "audit" for r in rows) == 12
    assert all("5.8" in r.source or "E.2" in r.source for r in rows if r.kind == "audit")


def test_plant_write_rates_are_failing_tests_outside_the_thesis_spread():
    rows = [r for r in run("ch10.closed_loop") if r.quantity.startswith("writers' aggregate")]
    assert len(rows) == 2 and all(r.kind == "test" and r.fails and not r.passed for r in rows)
    facts = th.closed_loop_facts()
    x0, x1 = (
        facts.loc[c, "aggregate_write_MBps"] for c in ("unregulated", "unregulated_automated")
    )
    for r in rows:
        assert r.rel_tol > abs(x0 - x1) / min(x0, x1)  # at least the thesis's own spread
        assert r.predicted > r.measured * (1 + r.rel_tol)  # the plant keeps too much


def test_section_4_4_ladder_disagrees_with_itself():
    (row,) = [r for r in run("ch10.closed_loop") if r.quantity.startswith("section 4.4")]
    assert row.kind == "audit" and row.fails and not row.passed
    design = th.controller_parameters("design_text")
    assert design["max_throttle_steps"] * design["delay_step_ms"] < design["max_delay_ms"]
    # the book's ladder keeps the step and the largest delay: as many steps as the clamp
    assert th.text_ladder().max_steps == th.controller_parameters("reg_pl")["max_throttle_steps"]


def test_loop_schedule_says_what_is_sourced():
    from models.validation import throttling as VT

    assert set(VT.LOOP_SCHEDULE_SOURCED) <= set(VT.LOOP_SCHEDULE)
    assert "on_s" not in VT.LOOP_SCHEDULE_SOURCED and "off_s" in VT.LOOP_SCHEDULE_SOURCED

"""The seventh machine's calibration, its copies' costs from the loop benchmark, held to the
machine's sample of the field runs (models.validation.machine7): each claim holds, and fails on
a wrong world."""

from __future__ import annotations

import dataclasses

import pytest

from models.sim import hostprofile
from models.validation import machine7 as M7


@pytest.fixture(scope="module")
def ev():
    return M7.evaluate()


def test_every_claim_holds(ev):
    found = M7.findings(ev)
    assert all(found.values()), found
    assert set(found) == {
        "loop reads dearer",
        "loop writes cheaper",
        "best rules nearer",
        "reader's farther",
        "large rows still fast",
        "verdicts kept",
        "held tails carry it",
        "kernel repeats itself",
        "misses are the model's",
        "the wait closes the large rows",
        "held tails come nearer",
        "the wait keeps the rest",
    }


def test_the_profile_s_copies_are_the_loop_s_and_the_contrast_its_own_record_s():
    p = hostprofile.shipped(M7.PROFILE)
    m = p.records["measured"]
    assert p.provenance["recv_byte_cpu_s"].endswith("(loop_bytes)")
    assert p.host["recv_byte_cpu_s"] == pytest.approx(m["loop_bytes"]["recv_per_byte_ns"] * 1e-9)
    one = M7.one_transfer(p)
    assert one.host["recv_byte_cpu_s"] == pytest.approx(m["recv"]["large"]["per_byte_ns"] * 1e-9)
    assert one.host["handoff_byte_cpu_s"] == pytest.approx(
        m["large_cross"]["send_extra_per_byte_ns"] * 1e-9
    )
    # everything else equal
    same = {
        k: v for k, v in one.host.items() if k not in ("recv_byte_cpu_s", "handoff_byte_cpu_s")
    }
    assert same == {k: p.host[k] for k in same}


def _swapped(ev):
    """The wrong world: each scenario's two profiles' results exchanged."""
    t, c = dict(ev.tables), dict(ev.copies)
    for a, o in M7.PAIRS:
        t[a], t[o] = t[o], t[a]
        c[a], c[o] = c[o], c[a]
    bands = ev.bands.copy()
    for a, o in M7.PAIRS:
        bands[a], bands[o] = ev.bands[o], ev.bands[a]
    return dataclasses.replace(ev, tables=t, copies=c, bands=bands)


def test_the_claims_fail_with_the_copies_swapped(ev):
    found = M7.findings(_swapped(ev))
    for claim in ("loop reads dearer", "loop writes cheaper", "best rules nearer"):
        assert not found[claim], claim
    assert not found["reader's farther"]


def test_a_band_at_the_kernel_s_rate_fails_the_still_fast_claim(ev):
    bands = ev.bands.copy()
    bands.loc[M7.LARGE_BAND, M7.MODELS[1]] = 1.0
    assert not M7.findings(dataclasses.replace(ev, bands=bands))["large rows still fast"]


def test_a_verdict_lost_fails_the_claim(ev):
    t = dict(ev.tables)
    loop = t[M7.MODELS[2]].copy()
    test = loop.index[loop["role"] == "test"]
    right = test[loop.loc[test, "kernel_stalls"] == loop.loc[test, "sim_stalls"]]
    flip = right[: 1 + len(right) // 50]  # a few right verdicts turned wrong
    loop.loc[flip, "sim_stalls"] = ~loop.loc[flip, "sim_stalls"]
    t[M7.MODELS[2]] = loop
    assert not M7.findings(dataclasses.replace(ev, tables=t))["verdicts kept"]


def test_held_tails_fail_the_claim_when_the_unheld_rows_miss_too(ev):
    t = dict(ev.tables)
    best = t[M7.MODELS[2]].copy()
    unheld = best["sock_mode"].isin(M7.UNHELD)
    best.loc[unheld, "sim_iops"] = best.loc[unheld, "iops"] * 2  # the unheld rows twice as fast
    t[M7.MODELS[2]] = best
    assert M7.held_medians(best)["unheld"] == pytest.approx(2.0)
    assert not M7.findings(dataclasses.replace(ev, tables=t))["held tails carry it"]


def test_the_single_try_is_a_draw_the_three_tries_did_not_keep():
    one = hostprofile.shipped(M7.ONE_TRY)
    kept = hostprofile.shipped(M7.PROFILE)
    assert one.records["fit"]["loss"] > 10 * kept.records["fit"]["loss"]
    assert len(kept.records["fit"]["tries"]) == 3 and "tries" not in one.records["fit"]


def test_the_repeat_counts_the_rows_the_models_are_counted_on(ev):
    from models.validation import draws as DR
    from models.validation import fidelity as FID

    key = DR.ROW_KEY
    rows = FID.iops_table(ev.repeat)[key].sort_values(key).reset_index(drop=True)
    model = FID.iops_table(ev.tables[M7.MODELS[2]])[key].sort_values(key).reset_index(drop=True)
    assert rows.equals(model)
    assert len(ev.repeat) == len(ev.tables[M7.MODELS[2]])  # every run of the sample, again


def test_a_scattered_second_draw_fails_the_repeat_claim(ev):
    again = ev.repeat.copy()
    again.loc[again.index[::3], "sim_iops"] *= 1.5  # every third run half as fast again
    assert not M7.findings(dataclasses.replace(ev, repeat=again))["kernel repeats itself"]


def test_a_verdict_the_second_draw_loses_fails_the_repeat_claim(ev):
    again = ev.repeat.copy()
    test = again.index[again["role"] == "test"]
    again.loc[test[0], "sim_stalls"] = not again.loc[test[0], "kernel_stalls"]
    assert not M7.findings(dataclasses.replace(ev, repeat=again))["kernel repeats itself"]


def test_misses_are_the_kernel_s_spread_when_the_second_draw_runs_at_the_model_s_rates(ev):
    from models.validation import draws as DR

    best = ev.tables[M7.MODELS[2]][DR.ROW_KEY + ["sim_iops"]]
    again = ev.repeat.drop(columns="sim_iops").merge(best, on=DR.ROW_KEY, validate="one_to_one")
    missed, repeated = M7.best_misses(dataclasses.replace(ev, repeat=again))
    assert missed > 0 and repeated == 0
    assert not M7.findings(dataclasses.replace(ev, repeat=again))["misses are the model's"]


def test_a_band_the_second_draw_runs_off_fails_the_repeat_claim(ev):
    bands = ev.bands.copy()
    bands.loc[M7.SMALL_BAND, M7.REPEAT] = 1 + 2 * M7.REPEAT_BAND_TOL
    assert not M7.findings(dataclasses.replace(ev, bands=bands))["kernel repeats itself"]


def test_a_wait_that_leaves_the_large_band_where_it_was_fails(ev):
    bands = ev.bands.copy()
    bands.loc[M7.LARGE_BAND, M7.WAIT] = bands.loc[M7.LARGE_BAND, M7.MODELS[2]]
    assert not M7.findings(dataclasses.replace(ev, bands=bands))["the wait closes the large rows"]


def test_a_wait_that_moves_the_unheld_rows_fails_the_held_claim(ev):
    t = dict(ev.tables)
    wait = t[M7.WAIT].copy()
    unheld = wait["sock_mode"].isin(M7.UNHELD)
    wait.loc[unheld, "sim_iops"] *= 0.8  # the servers that hold nothing slowed too
    t[M7.WAIT] = wait
    assert not M7.findings(dataclasses.replace(ev, tables=t))["held tails come nearer"]


def test_a_wait_that_loses_a_verdict_fails_the_rest_claim(ev):
    t = dict(ev.tables)
    wait = t[M7.WAIT].copy()
    test = wait.index[(wait["role"] == "test") & (wait["kernel_stalls"] == wait["sim_stalls"])]
    wait.loc[test[0], "sim_stalls"] = not wait.loc[test[0], "sim_stalls"]
    t[M7.WAIT] = wait
    assert not M7.findings(dataclasses.replace(ev, tables=t))["the wait keeps the rest"]


def _goals(within: str, q8: str, flory: str, verdicts: str = "1354 of 1404"):
    import pandas as pd

    return pd.Series(
        {
            "stall verdicts": verdicts,
            "IOPS within 25%": within,
            "median ratio, QD >= 8": q8,
            "Flory's thresholds": flory,
        }
    )


def test_the_sixth_machine_s_claims_read_the_goals_and_fail_on_a_wrong_world():
    best = _goals("49%", "1.30", "2 of 4", "1355 of 1404")
    wait = _goals("55%", "1.26", "3 of 4")
    assert all(M7.sixth_findings(best, wait).values())
    n = M7.sixth_numbers(best, wait)
    assert (n["m6_wait_within"], n["m6_best_flory"], n["m6_verdict_rows"]) == (55.0, 2, 1404)
    # the wait changing nothing, or costing a step, or overshooting QD 8
    same = M7.sixth_findings(best, best)
    assert not same["more rates right"] and not same["QD 8 nearer"]
    assert not M7.sixth_findings(best, _goals("55%", "1.26", "1 of 4"))["no Flory step lost"]
    assert not M7.sixth_findings(best, _goals("55%", "0.70", "3 of 4"))["QD 8 nearer"]

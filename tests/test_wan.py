"""Unit tests for models.wan and back-tests against Charrouf (2008)."""

import math

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from models import data
from models import wan as w
from models.analytic import S
from models.validation import run
from models.validation.wan import bound_table


def test_symbolic_bounds():
    assert sp.simplify(w.window_bound_expr() - w.W / S.RTT) == 0
    assert sp.simplify(w.bdp_expr() - w.C * S.RTT) == 0
    assert sp.simplify(w.crossover_rtt_expr() - w.W / w.C) == 0


def test_numbers():
    assert w.bdp_bytes(0.05) == pytest.approx(281250)
    assert w.crossover_rtt_s(65535) == pytest.approx(65535 * 8 / 45e6)
    assert w.throughput_bound_Bps(65536, 0.0) == pytest.approx(45e6 / 8)
    assert w.throughput_bound_Bps(65536, 0.1) == pytest.approx(655360)
    assert w.throughput_bound_Bps(65536, 0.1, connections=2) == pytest.approx(1310720)
    assert w.effective_window_bytes(1300e3, 0.05) == pytest.approx(65000)


def test_message_window_fit_reproduces_both_windows():
    m, lat = w.message_window_fit(8, 0.0, 62, 0.05)
    c = 45e6 / 8
    assert 8 * m / (0.0 + lat) == pytest.approx(c) and 62 * m / (0.05 + lat) == pytest.approx(c)


@given(st.floats(1e3, 1e8), st.floats(1e-4, 1.0), st.floats(1e6, 1e10))
def test_bound_never_exceeds_either_limit(win, rtt, link):
    b = w.throughput_bound_Bps(win, rtt, link)
    assert b <= win / rtt * (1 + 1e-12) and b <= link / 8 * (1 + 1e-12)


@pytest.mark.parametrize("call, name", [
    (lambda: w.window_bound_Bps(0, 0.1), "window_bytes"),
    (lambda: w.window_bound_Bps(1, -0.1), "rtt_s"),
    (lambda: w.throughput_bound_Bps(1, 0.1, link_bps=0), "link_bps"),
    (lambda: w.throughput_bound_Bps(1, 0.1, connections=1.5), "connections"),
    (lambda: w.bdp_bytes(float("nan")), "rtt_s"),
    (lambda: w.message_window_fit(62, 0.0, 8, 0.05), "n2 > n1"),
    (lambda: w.effective_window_bytes(-1, 0.1), "throughput_Bps"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_stated_averages_are_the_means_of_the_runs():
    runs = data.load("charrouf2008_wan_reads")
    avg = data.load("charrouf2008_wan_reads_avg").set_index(["rtt_ms", "config"])
    means = runs.groupby(["rtt_ms", "config"])[["cold_MBps", "remote_warm_KBps"]].mean()
    for key, r in means.iterrows():
        assert r["cold_MBps"] == pytest.approx(avg.loc[key, "cold_avg_MBps"], rel=1e-6)
        assert r["remote_warm_KBps"] == pytest.approx(avg.loc[key, "remote_warm_avg_KBps"], rel=1e-6)


def test_every_run_is_below_its_bound_and_cold_reads_never_crossed_the_wan():
    t = bound_table()
    assert len(t) == 24
    assert (t["ratio"] <= 1).all() and (t["ratio"] > 0).all()
    assert (t["cold_over_link"] > 10).all()


@pytest.mark.parametrize("name", ["ch11.wan_bound", "ch11.window64k", "ch11.buffer"])
def test_chapter_11_comparisons_pass(name):
    rows = run(name)
    assert rows and all(r.passed for r in rows)

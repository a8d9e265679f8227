"""Wake-ups that scatter (models.validation.wakespread): the spread measured from each machine's
benchmark, the profile it builds, what the draws do in a run, and the chapter's claims, each
failed by a wrong world.  The comparison's goals are given here as the evaluation's text
(evaluate() itself runs in chapter 9e)."""

from __future__ import annotations

import statistics

import pandas as pd
import pytest

from models.measure.wakeups import wake_spread
from models.sim import Scenario, hostprofile, simulate
from models.validation import machine8 as M8
from models.validation import wakespread as W


def test_the_width_is_the_median_of_each_gaps_uniform_width():
    """(p90 - median) / 0.4 at each gap, the median over the gaps: one wide gap does not set it."""
    gaps = [(10, 20.0, 22.0), (20, 20.0, 24.0), (40, 30.0, 90.0)]  # widths 5, 10, 150 us
    w = {"tcp_by_gap": [{"gap_us": g, "median_us": m, "p90_us": p} for g, m, p in gaps]}
    assert wake_spread(w) == pytest.approx(10e-6)
    assert wake_spread({"tcp_by_gap": [{"gap_us": 10, "median_us": 5.0}]}) == 0.0


def test_the_profile_keeps_every_gaps_median():
    """The curve moves down by half the width, so the uniform draw's median (and mean) at each
    gap is the measured one; the shipped eighth machine's width is what its records give."""
    p = hostprofile.shipped(M8.PROFILE)
    s = W.spread_profile(p)
    width = s.host["wake_spread_s"]
    assert width == pytest.approx(wake_spread(p.records["measured"]["wake"]))
    assert 5e-6 < width < 15e-6
    for (i0, t0), (i1, t1) in zip(p.host["wake_curve_s"], s.host["wake_curve_s"], strict=True):
        assert i0 == i1 and t1 + width / 2 == pytest.approx(t0)
    # a profile without the benchmark's records is left alone
    assert W.spread_profile(hostprofile.shipped()).host.get("wake_spread_s", 0.0) in (0.0, None)


def test_a_spread_too_wide_for_the_curve_is_refused():
    p = hostprofile.shipped(M8.PROFILE)
    records = dict(p.records)
    wide = {"tcp_by_gap": [{"gap_us": 20, "median_us": 20.0, "p90_us": 60.0}]}  # 100 us wide
    records["measured"] = {**records["measured"], "wake": wide}
    bad = hostprofile.validate({**p.to_dict(), **records})
    with pytest.raises(ValueError, match="wake_spread_s .* half of it must stay below"):
        W.spread_profile(bad)


def test_the_profile_field_is_bounded_and_named():
    with pytest.raises(ValueError, match=r"host.wake_spread_s must be in \[0, 0.0001\]"):
        hostprofile.shipped().with_host(wake_spread_s=5e-4)


def _qd1(spread_s: float, ops: int = 1500):
    """A QD 1 run whose round trip is mostly the two wake-ups, the curve moved down by half the
    spread as the profile moves it."""
    curve = ((2e-6, 30e-6 - spread_s / 2), (1e-3, 30e-6 - spread_s / 2))
    host = {"wake_curve_s": curve, "wake_spread_s": spread_s}
    sc = Scenario(
        workload={"qd": 1}, client={**host, "nodelay": True}, server={**host, "nodelay": True}
    )
    return simulate(sc.replace(run={"ops": ops}))


def test_the_draws_scatter_the_round_trips_and_keep_their_mean():
    """With a 10 us spread on both ends each round trip holds two draws: the round trips spread
    by several microseconds and their mean stays within a microsecond; without it every round
    trip is alike (and the fast-forward runs, which the draws turn off)."""
    fixed, drawn = _qd1(0.0), _qd1(10e-6)
    assert statistics.pstdev(fixed.rtts_s) < 1e-9
    assert statistics.pstdev(drawn.rtts_s) > 2e-6
    assert abs(statistics.mean(drawn.rtts_s) - statistics.mean(fixed.rtts_s)) < 1e-6
    assert "wake_spread_s" in (drawn.fast_forward_off_reason or "")


def _goals(within: dict[tuple[str, str], int], extra=None) -> pd.DataFrame:
    """A goals table as the evaluation writes it: the share within the tolerance (%) per column,
    the verdicts and largest stalling QDs as given in ``extra`` (else the evaluation's)."""
    base = {
        (W.SITES[0], "stall verdicts"): "216 of 217",
        (W.SITES[1], "stall verdicts"): "216 of 217",
        (W.SITES[2], "stall verdicts"): "1353 of 1404",
        (W.SITES[2], "largest stalling QD"): "171 of 192",
    }
    cols = {}
    for (site, rule), v in within.items():
        col = {W.WITHIN: f"{v}%"}
        for (s, name), value in base.items():
            if s == site:
                col[name] = (extra or {}).get((site, rule, name), value)
        cols[(site, rule)] = col
    return pd.DataFrame(cols)


ONE, SPREAD = W.RULES
WITHIN = {
    (W.SITES[0], ONE): 70, (W.SITES[0], SPREAD): 72,
    (W.SITES[1], ONE): 69, (W.SITES[1], SPREAD): 71,
    (W.SITES[2], ONE): 51, (W.SITES[2], SPREAD): 49,
}  # fmt: skip
SWEEP = {
    (W.SITES[2], SPREAD, "stall verdicts"): "1362 of 1404",
    (W.SITES[2], SPREAD, "largest stalling QD"): "173 of 192",
}
GOALS = _goals(WITHIN, SWEEP)
SP = {
    W.SITES[0]: 11.9e-6, f"{W.SITES[0]} curve": 26.2e-6,
    W.SITES[1]: 8.6e-6, f"{W.SITES[1]} curve": 26.7e-6,
    W.SITES[2]: 3.5e-6, f"{W.SITES[2]} curve": 6.7e-6,
}  # fmt: skip
SEEDS = pd.DataFrame(
    {W.SITES[0]: [72.0, 72.0, 72.0, 70.0], W.SITES[1]: [71.0, 73.0, 72.0, 69.0]},
    index=pd.Index([*W.SEEDS, "one"], name="seed"),
)
LONE = {"kernel": 0.044, "one": 0.5, "spread": 0.5}


def test_every_claim_holds():
    found = W.findings(SP, GOALS, SEEDS, LONE)
    assert all(found.values()), found
    assert len(found) == 5
    num = W.numbers(SP, GOALS, SEEDS, LONE)
    assert num["ws_1_us"] == pytest.approx(8.6) and num["ws_1_mean"] == 72.0
    assert num["ws_2s_verdicts"] == 1362 and num["ws_2o_largest"] == 171
    assert num["ws_seeds_n"] == len(W.SEEDS) and num["ws_lone_kernel"] == pytest.approx(4.4)


def test_a_spread_of_nothing_or_wider_than_the_curve_fails():
    for site, value in ((W.SITES[1], 0.0), (W.SITES[2], 14e-6)):
        assert not W.findings({**SP, site: value}, GOALS, SEEDS, LONE)[
            "a few microseconds, below every curve"
        ]


def test_a_spread_that_loses_rows_on_a_sample_fails():
    worse = SEEDS.copy()
    worse.loc[list(W.SEEDS), W.SITES[1]] = [70.0, 68.0, 68.0]  # mean 68.7 < 69
    assert not W.findings(SP, GOALS, worse, LONE)["more rows within the tolerance on both samples"]


def test_changed_verdicts_or_fewer_on_the_sweep_fail():
    claim = "the same verdicts, no fewer on the sweep"
    changed = _goals(WITHIN, {**SWEEP, (W.SITES[0], SPREAD, "stall verdicts"): "215 of 217"})
    assert not W.findings(SP, changed, SEEDS, LONE)[claim]
    fewer = _goals(WITHIN, {**SWEEP, (W.SITES[2], SPREAD, "largest stalling QD"): "170 of 192"})
    assert not W.findings(SP, fewer, SEEDS, LONE)[claim]


def test_a_sweep_that_moves_far_fails():
    moved = _goals({**WITHIN, (W.SITES[2], SPREAD): 46}, SWEEP)
    assert not W.findings(SP, moved, SEEDS, LONE)["the sweep's magnitudes hold"]


def test_the_qd2_row_claim_fails_when_the_kernel_or_a_model_moves():
    """Wrong worlds: a kernel that sends lone headers often, or a rule that makes them rare."""
    claim = "the QD 2 row stays apart"
    assert not W.findings(SP, GOALS, SEEDS, {**LONE, "kernel": 0.3})[claim]
    assert not W.findings(SP, GOALS, SEEDS, {**LONE, "spread": 0.05})[claim]


def test_the_capture_and_the_models_lone_headers():
    """Counted on the bundled capture and the two models' traces (the chapter's numbers)."""
    got = W.lone_shares()
    assert got["kernel"] < 0.1 and got["one"] >= 0.4 and got["spread"] >= 0.4


def test_roles():
    assert W.role(W.SITES[0], SPREAD) == "test" and W.role(W.SITES[1], ONE) == "fit"
    with pytest.raises(ValueError, match="rule must be one of"):
        W.role(W.SITES[0], "no wake-ups")

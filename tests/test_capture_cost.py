"""What a tcpdump capture does to Flory's rates (models.validation.capture_cost,
data/kernel6_machine7_capture_cost, tools/capture_cost.py): the findings chapter 9d states hold on
the bundled runs, and each fails on runs where the capture changes nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from models.validation import capture_cost as CC
from models.validation.flory import FLORY_PAIRS

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return CC.load()


def test_the_bundled_runs_hold_every_finding(runs):
    found = CC.findings(runs)
    assert all(found.values()), found


def test_every_point_of_flory_s_pairs_was_run_both_ways_in_each_sweep(runs):
    points = {(link, n) for link, a, b in FLORY_PAIRS for n in (a, b)}
    got = runs.groupby(["sweep", "link", "payload_bytes", "sock_mode", "captured"]).size()
    assert len(got) == 2 * len(points) * 2 * 2  # sweeps, points, modes, captured or not
    assert set(runs["capture_tool"][runs["captured"]]) == {"tcpdump"}
    assert set(runs["capture_tool"][~runs["captured"]]) == {"none"}


def _no_capture_cost(runs: pd.DataFrame) -> pd.DataFrame:
    """A wrong world: each captured run made as fast as the uncaptured run beside it."""
    free = runs[~runs["captured"]]
    return pd.concat([free, free.assign(captured=True, capture_tool="tcpdump")])


def test_the_slowdown_findings_fail_where_the_capture_costs_nothing(runs):
    found = CC.findings(_no_capture_cost(runs))
    assert not found["the capture slows most points that do not stall"]
    assert not found["by more than 5 % at the median"]
    assert not found["one step turns under the capture"]
    with pytest.raises(ValueError, match="no step of Flory's turns under the capture"):
        CC.numbers(_no_capture_cost(runs))


def test_a_capture_that_moved_a_stall_or_a_step_fails_its_finding(runs):
    stall = runs.copy()
    hit = stall["captured"] & (stall["payload_bytes"] == 1447) & (stall["sock_mode"] == "nagle")
    stall.loc[hit, "iops"] *= 0.5
    assert not CC.findings(stall)["a stalled point keeps its rate"]
    step = runs.copy()
    hit = step["captured"] & (step["payload_bytes"] == 1449) & (step["sock_mode"] == "nagle")
    step.loc[hit, "iops"] *= 0.6
    found = CC.findings(step)
    assert not found["no step moves by more than the goal's quarter"]
    assert not found["the kernel's repeat moves that step farther than the capture moves any"]


def test_steps_and_rates_read_the_medians():
    df = pd.DataFrame(
        [
            {
                "sweep": 0,
                "link": "veth-1500",
                "payload_bytes": n,
                "sock_mode": "nagle",
                "captured": cap,
                "iops": iops,
                "exchange_p50_us": 1e6 / iops,
            }
            for n, cap, iops in [
                (1448, True, 100.0),
                (1448, False, 120.0),
                (1449, True, 80.0),
                (1449, False, 60.0),
            ]
        ]
    )
    st = CC.steps(df)
    assert list(st.index) == ["1448/1449"]
    assert st.loc["1448/1449", "captured"] == pytest.approx(0.8)
    assert st.loc["1448/1449", "free"] == pytest.approx(0.5)
    assert not st.loc["1448/1449", "within"]  # 0.8 / 0.5 = 1.6
    assert CC.repeat_steps(df).loc["1448/1449", 0] == pytest.approx(0.5)


def test_a_miss_the_capture_could_explain_is_said_to_be_covered(runs):
    st = CC.steps(runs)
    kernel = 0.8
    near = st.loc["1448/1449", "ratio"] ** 0.5  # half the capture's move, in ratio
    model = pd.DataFrame(
        {
            "payloads": ["1448/1449", "4344/4345"],
            "kernel_change": [kernel, kernel],
            "sim_change": [kernel * near, kernel * 2.0],
            "right": [False, False],
        }
    )
    got = CC.against_misses(model, runs)
    assert bool(got.loc["1448/1449", "covers"]) and not bool(got.loc["4344/4345", "covers"])
    assert CC.worst_miss(got) == ("4344/4345", pytest.approx(2.0))
    with pytest.raises(ValueError, match="missed no step"):
        CC.worst_miss(got.iloc[:0])


def test_the_tool_runs_each_point_both_ways_alternating():
    sys.path.insert(0, str(ROOT / "tools"))
    import capture_cost as tool

    cfgs = tool.configs(["veth-1500"])
    assert {c["link"] for c in cfgs} == {"veth-1500"}
    assert [c["captured"] for c in cfgs[:4]] == [True, False, True, False]
    assert len(cfgs) == 5 * 2 * 2  # five payloads on the veth, two modes, both ways

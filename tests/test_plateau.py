"""A Nagle server's calls on bbr's pacing plateau, kernel and model (models.validation.plateau):
each claim holds, and fails on a wrong world (a wrong kernel's trace, or a wrong model's row)."""

from __future__ import annotations

import pytest

from models.validation import plateau as PL


@pytest.fixture(scope="module")
def calls():
    from models import data

    return data.load(PL.DATASET)


@pytest.fixture(scope="module")
def table(calls):
    return PL.table(calls)


def _fails(t, claim: str) -> bool:
    return not PL.findings(t)[claim]


def test_every_claim_holds(table):
    found = PL.findings(table)
    assert all(found.values()), found
    assert len(found) == 7


def test_the_dataset_has_both_runs_of_each_scenario_and_the_server_s_calls_only(calls):
    runs = calls.groupby(PL.BY)["repeat"].nunique()
    assert set(runs.index) == {tuple(sc[k] for k in PL.BY) for sc in PL.SCENARIOS}
    assert (runs == 2).all() and (calls["call_us"] >= 0).all()
    per_run = calls.groupby([*PL.BY, "repeat", "kind"]).size().unstack()
    # one header and one data call per operation: their counts differ by at most the window's ends
    assert ((per_run["header"] - per_run["data"]).abs() <= 2).all()


def test_the_tool_writes_the_dataset_s_columns():
    from tool_columns import tool_writes_dataset_columns

    assert tool_writes_dataset_columns("plateau_calls_trace", PL.DATASET)


def test_a_kernel_whose_header_arms_fails_one_armed_call(calls):
    wrong = calls.copy()
    wrong.loc[wrong["kind"] == "header", "armed"] = True
    assert _fails(PL.table(wrong), "one armed call an operation")


def test_a_kernel_whose_calls_leave_time_over_fails_one_armed_call(calls):
    wrong = calls.copy()
    wrong["call_us"] = wrong["call_us"] / 2  # half the operation outside the calls
    assert _fails(PL.table(wrong), "one armed call an operation")


def test_a_kernel_twice_as_fast_at_one_size_fails_one_plateau(calls):
    wrong = calls.copy()
    small = wrong["iosize_bytes"] == 2048
    wrong.loc[small, "run_iops"] = 2 * wrong.loc[small, "run_iops"]
    assert _fails(PL.table(wrong), "one plateau")


def test_a_model_at_the_kernel_s_pace_fails_the_longer_operation(table):
    wrong = table.copy()
    wrong["m_op_us"] = wrong["op_us"]
    assert _fails(wrong, "the model's operation is longer")


def test_a_model_whose_header_costs_the_kernel_s_fails_the_dearer_header(table):
    wrong = table.copy()
    wrong["m_header_us"] = wrong["header_us"]
    assert _fails(wrong, "its header's call is dearer")


def test_a_model_that_arms_in_the_data_s_call_fails_the_header_claim(table):
    wrong = table.copy()
    wrong["m_header_armed_pct"] = 0.0
    assert _fails(wrong, "the timer in the header's call")


def test_a_model_whose_armed_call_is_the_kernel_s_fails_the_longer_call(table):
    wrong = table.copy()
    wrong["m_data_us"], wrong["m_fire_us"] = wrong["data_us"], 0.0
    assert _fails(wrong, "armed call and interrupt longer")


def test_a_model_always_busy_fails_idle_at_qd_2(table):
    wrong = table.copy()
    wrong["m_calls_share"] = 100.0
    assert _fails(wrong, "idle at QD 2")


def test_the_recorder_times_every_call_of_a_model_run():
    got = PL.model(PL.SCENARIOS[1], ops=300, warmup=100)
    # the kernel's shape of a call: a header and a data call per operation, the data's armed
    assert got["data_armed_pct"] > 50 and got["header_us"] > 0
    assert got["op_us"] == pytest.approx(1e6 / got["iops"])
    # the rate from the recorded calls is the simulation's own, within its start-up
    assert got["iops"] == pytest.approx(got["sim_iops"], rel=0.05)
    with pytest.raises(ValueError, match="warmup"):
        PL.model(PL.SCENARIOS[0], ops=10, warmup=10)
    with pytest.raises(ValueError, match="has no bbr run of veth-1500, server nagle"):
        PL.model({**PL.SCENARIOS[0], "qd": 5})  # not a row of the sample

"""The held pacing call, counted once (models.validation.heldcall): the kernel's anatomy of an
armed call against the machine's microbenchmarks, and the two rules' comparison; each claim
holds and fails on a wrong world.  The comparison's goals are given here as the evaluation's
text (evaluate() itself runs in chapter 9e)."""

from __future__ import annotations

import pandas as pd
import pytest

from models.validation import heldcall as HC


@pytest.fixture(scope="module")
def calls():
    from models import data

    return data.load(HC.DATASET)


@pytest.fixture(scope="module")
def kernel(calls):
    return HC.kernel(calls), HC.pooled(calls), HC.host_us()


def _goals(within: dict[tuple[str, str], int], verdicts=None, q1=None, q8=None) -> pd.DataFrame:
    """A goals table as the evaluation writes it: the share within the tolerance (%) given per
    column, the verdicts and the two medians alike unless given."""
    rows = {}
    for col, v in within.items():
        rows[col] = {
            HC.WITHIN: f"{v}%",
            "stall verdicts": (verdicts or {}).get(col, "216 of 217"),
            "median ratio, QD 1": f"{(q1 or {}).get(col, 1.0):.2f}",
            "median ratio, QD >= 8": f"{(q8 or {}).get(col, 1.1):.2f}",
        }
    return pd.DataFrame(rows)


WITHIN = {
    (HC.SITES[0], HC.RULES[0]): 65, (HC.SITES[0], HC.RULES[1]): 70,
    (HC.SITES[1], HC.RULES[0]): 64, (HC.SITES[1], HC.RULES[1]): 69,
    (HC.SITES[2], HC.RULES[0]): 55, (HC.SITES[2], HC.RULES[1]): 51,
}  # fmt: skip
GOALS = _goals(WITHIN)


def _fails(k, pool, host, goals, claim: str) -> bool:
    return not HC.findings(k, pool, host, goals)[claim]


def test_every_claim_holds(kernel):
    found = HC.findings(*kernel, GOALS)
    assert all(found.values()), found
    assert len(found) == 5
    num = HC.numbers(*kernel, GOALS)
    assert num["hc_0o_within"] == 70 and num["hc_busy_n"] >= 1
    assert num["hc_six_qd8"] == 1.1 and 1 < num["hc_six_timer"] < num["hc_arm_fire"]


def test_every_scenario_of_the_plateau_is_traced(calls):
    from models.validation import plateau as PL

    assert {tuple(sc[k] for k in HC.BY) for sc in PL.SCENARIOS} == set(HC.kernel(calls).index)
    fired = calls[calls["fire_after_arm_us"].notna()]
    # only armed calls carry a fire (almost all of them the data's), each after its arming
    assert fired["armed"].all() and (fired["kind"] == "data").mean() > 0.95
    assert (fired["fire_after_arm_us"] > 0).all() and (fired["returned_after_fire_us"] >= 0).all()


def test_a_timer_twice_as_dear_fails_the_timer_s_costs(kernel):
    k, pool, host = kernel
    assert _fails(k, pool, {**host, "arm_fire_us": 2 * host["arm_fire_us"]}, GOALS,
                  "the timer's costs")  # fmt: skip


def test_calls_that_return_before_the_fire_fail_the_timer_s_costs(calls):
    wrong = calls.copy()
    late = wrong.index[wrong["fire_after_arm_us"].notna()][::10]  # a tenth fire after the return
    wrong.loc[late, ["fire_after_arm_us", "returned_after_fire_us", "peer_idle_at_fire"]] = None
    k, pool, host = HC.kernel(wrong), HC.pooled(wrong), HC.host_us()
    assert _fails(k, pool, host, GOALS, "the timer's costs")


def test_a_call_that_ends_alike_whatever_the_client_fails_the_work_after_it(calls):
    wrong = calls.copy()
    wrong.loc[wrong["peer_idle_at_fire"] == True, "returned_after_fire_us"] = 1.0  # noqa: E712
    k, pool, host = HC.kernel(wrong), HC.pooled(wrong), HC.host_us()
    assert _fails(k, pool, host, GOALS, "the work after it")


def test_swapped_rules_fail_the_comparison_s_claims(kernel):
    swapped = GOALS.rename(columns={HC.RULES[0]: "x", HC.RULES[1]: HC.RULES[0]}, level=1)
    swapped = swapped.rename(columns={"x": HC.RULES[1]}, level=1)
    found = HC.findings(*kernel, swapped)
    assert not found["better where tested"] and not found["worse on the sixth"]


def test_the_tool_reads_the_fire_and_the_client_s_cpu():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import plateau_calls_trace as T

    assert "sched/sched_switch" in T.EVENTS and "timer/hrtimer_expire_entry" in T.EVENTS
    assert set(T.OPTIONAL) <= {f[0] for f in T.FIELDS}


def test_a_flag_that_changes_a_verdict_fails_same_verdicts(kernel):
    wrong = _goals(WITHIN, verdicts={(HC.SITES[1], HC.RULES[1]): "215 of 217"})
    assert _fails(*kernel, wrong, "same verdicts, medians in range")


def test_a_median_out_of_range_fails_same_verdicts(kernel):
    wrong = _goals(WITHIN, q8={(HC.SITES[0], HC.RULES[1]): 1.4})
    assert _fails(*kernel, wrong, "same verdicts, medians in range")


def test_a_sixth_machine_not_already_fast_fails_worse_on_the_sixth(kernel):
    wrong = _goals(WITHIN, q8={(HC.SITES[2], HC.RULES[0]): 0.9})
    assert _fails(*kernel, wrong, "worse on the sixth")

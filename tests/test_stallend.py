"""models.validation.stallend: where a Nagle server's stall ends on a third machine, with the
wake-up after a long idle measured, or without it (chapter 4, "Where the stall ends on a real
kernel")."""

from __future__ import annotations

import copy
import math

import pytest

from models import analytic as A
from models.kernel import load_kernel_run
from models.sim import hostprofile
from models.validation import stallend as SE


@pytest.fixture(scope="module")
def ev():
    return SE.evaluate()


def test_the_profile_measured_its_deep_wake_up_and_the_sweep_is_its_machine_s():
    p = hostprofile.shipped(SE.PROFILE)
    assert p.provenance["wake_deep_s"].startswith("measured")
    assert p.host["wake_deep_s"] > 2 * p.host["wake_s"]  # a step, not noise
    assert p.host["wake_deep_idle_s"] > 1e-3  # milliseconds of idle
    long = p.records["measured"]["wake"]["cross_by_long_gap"]
    assert [g["gap_us"] for g in long][-1] == 40000.0
    assert p.host["wake_deep_s"] == pytest.approx(long[-1]["median_us"] * 1e-6)
    run = load_kernel_run(prefix=SE.PREFIX)
    assert run.release == p.machine["kernel"] and run.hz == p.machine["config_hz"]
    t = run.table("iscsi_loop")
    assert set(t["sock_mode"]) == {"nagle"} and set(t["client_sock_mode"]) == {"nagle", "nodelay"}
    # none of the profile's training runs is a Nagle server: every row is a test row
    assert {r["sock_mode"] for r in p.records["fit"]["training_rows"]} <= {"more", "nodelay"}


def test_the_inequality_is_the_derivation():
    expr = A.qd_max_stall_expr()
    f = A.numeric(expr)
    vals = {"SD": 61e-6, "SE": 5.5e-6, "CE": 5.5e-6, "W1": 1.2e-6, "W2": 0.8e-6}
    assert f(**vals) == pytest.approx(
        A.qd_max_stall(vals["SD"], vals["SE"], vals["CE"], vals["W1"], vals["W2"])
    )
    # at the boundary the client issues its last request as the first header returns
    q = A.qd_max_stall(**{k.lower(): v for k, v in vals.items()})
    assert q * vals["CE"] == pytest.approx(
        vals["CE"] + vals["W1"] + vals["SD"] + vals["SE"] + vals["W2"]
    )
    with pytest.raises(ValueError, match="ce"):
        A.qd_max_stall(sd=1e-6, se=1e-6, ce=0.0)


def test_the_findings_hold(ev):
    assert all(SE.findings(ev).values()), SE.findings(ev)
    s = ev.summary
    assert s.loc[SE.MODELS[0], "rows"] == len(
        load_kernel_run(prefix=SE.PREFIX).table("iscsi_loop")
    )


def test_the_wrong_model_fails_the_findings(ev):
    # the deep wake-up's model made as short as the ordinary one: every claim fails
    p = hostprofile.shipped(SE.PROFILE)
    d = copy.deepcopy(p.to_dict())
    d["host"]["wake_deep_s"] = p.host["wake_s"] * 1.01
    flat = hostprofile.load(d)
    wrong = SE.evaluate(models={SE.MODELS[0]: flat, SE.MODELS[1]: SE.without_deep_wake(p)})
    f = SE.findings(wrong)
    assert not f["more verdicts right with the deep wake-up"]
    assert not f["some wake-up stall ends right with it, none without"]


def test_the_deep_wake_up_moves_the_stall_s_end_by_what_the_inequality_says():
    p = hostprofile.shipped(SE.PROFILE)
    t = SE.emit_costs_s(p)
    flat = SE.emit_costs_s(SE.without_deep_wake(p))
    assert t["CE"] == flat["CE"] and t["SD"] > flat["SD"]
    moved = A.qd_max_stall(t["SD"], t["SE"], t["CE"], t["W1"], t["W2"]) - A.qd_max_stall(
        flat["SD"], flat["SE"], flat["CE"], flat["W1"], flat["W2"]
    )
    assert moved == pytest.approx((t["SD"] - flat["SD"]) / t["CE"])
    assert math.floor(moved) >= 5  # several queue depths more

"""models.validation.stallend: where a Nagle server's stall ends on a third machine, with the
wake-up after a long idle measured, or without it (chapter 4, "Where the stall ends on a real
kernel")."""

from __future__ import annotations

import copy
import math

import pytest

from models import analytic as A
from models.kernel import load_kernel_run
from models.sim import Scenario, hostprofile, simulate
from models.validation import stallend as SE


@pytest.fixture(scope="module")
def ev():
    return SE.evaluate()


def test_the_profile_measured_its_wake_up_curve_and_the_sweep_is_its_machine_s():
    p = hostprofile.shipped(SE.PROFILE)
    assert p.provenance["wake_curve_s"].startswith("measured")
    curve = p.host["wake_curve_s"]
    long = p.records["measured"]["wake"]["cross_by_long_gap"]
    assert curve[-1][0] == long[-1]["gap_us"] * 1e-6 == SE.STALL_IDLE_S
    assert curve[-1][1] == pytest.approx(long[-1]["median_us"] * 1e-6)
    server = p.side("server")
    # after the stall's 40 ms the wake-up is more than twice the one after a millisecond
    assert SE.wake_after(server, SE.STALL_IDLE_S) > 2 * SE.wake_after(server, 1e-3)
    # the wrong model's wake-up after 40 ms is the one after a millisecond
    flat = SE.without_deep_wake(p).side("server")
    assert SE.wake_after(flat, SE.STALL_IDLE_S) == SE.wake_after(flat, SE.SHORT_IDLE_S)
    run = load_kernel_run(prefix=SE.PREFIX)
    assert run.release == p.machine["kernel"] and run.hz == p.machine["config_hz"]
    t = run.table("iscsi_loop")
    assert set(t["sock_mode"]) == {"nagle"} and set(t["client_sock_mode"]) == {"nagle", "nodelay"}
    # none of the profile's training runs is a Nagle server: every row is a test row
    assert {r["sock_mode"] for r in p.records["fit"]["training_rows"]} <= {"more", "nodelay"}


def test_the_inequality_is_the_derivation():
    expr = A.qd_max_stall_expr()
    f = A.numeric(expr)
    vals = {"SD": 61e-6, "SE": 5.5e-6, "CE": 5.5e-6, "W1": 1.2e-6, "W2": 0.8e-6, "CD": 9e-6}
    assert f(**vals) == pytest.approx(
        A.qd_max_stall(vals["SD"], vals["SE"], vals["CE"], vals["W1"], vals["W2"], vals["CD"])
    )
    # at the boundary the client issues its last request, late by the waker's cost, as the
    # first header returns
    q = A.qd_max_stall(**{k.lower(): v for k, v in vals.items()})
    assert q * vals["CE"] + vals["CD"] == pytest.approx(
        vals["CE"] + vals["W1"] + vals["SD"] + vals["SE"] + vals["W2"]
    )
    # the waker's cost takes CD/CE requests off the end; none is the inequality without it
    assert A.qd_max_stall(61e-6, 5.5e-6, 5.5e-6, cd=9e-6) == pytest.approx(
        A.qd_max_stall(61e-6, 5.5e-6, 5.5e-6) - 9e-6 / 5.5e-6
    )
    with pytest.raises(ValueError, match="ce"):
        A.qd_max_stall(sd=1e-6, se=1e-6, ce=0.0)
    with pytest.raises(ValueError, match="cd"):
        A.qd_max_stall(sd=1e-6, se=1e-6, ce=1e-6, cd=-1e-6)


def test_the_findings_hold(ev):
    assert all(SE.findings(ev).values()), SE.findings(ev)
    s = ev.summary
    assert s.loc[SE.MODELS[0], "rows"] == len(
        load_kernel_run(prefix=SE.PREFIX).table("iscsi_loop")
    )


def test_the_wrong_model_fails_the_findings(ev):
    # the wake-up after long idles made as short as after a millisecond (plus 1 %): the claims fail
    p = hostprofile.shipped(SE.PROFILE)
    d = copy.deepcopy(p.to_dict())
    short = SE.wake_after(p.side("server"), 1e-3)
    d["host"]["wake_curve_s"] = [
        [i, w if i <= SE.SHORT_IDLE_S else short * 1.01] for i, w in d["host"]["wake_curve_s"]
    ]
    flat = hostprofile.load(d)
    wrong = SE.evaluate(models={SE.MODELS[0]: flat, SE.MODELS[1]: SE.without_deep_wake(p)})
    f = SE.findings(wrong)
    assert not f["more verdicts right with the deep wake-up"]
    assert not f[NEAR_KEY]


#: The finding that the stall's end lies near the kernel's with the deep wake-up.
NEAR_KEY = (
    f"with it every wake-up stall end at or up to {SE.NEAR_QD} QD past the kernel's, "
    f"without it each {SE.SHORT_QD} or more short"
)


def test_without_the_waker_s_cost_the_stall_ends_too_late():
    # the profile without its measured waker's cost (the wrong model): the client issues its queue
    # about three requests sooner, the stall sustains up to QD 16, eight past the kernel's end
    # under bbr
    p = hostprofile.shipped(SE.PROFILE)
    assert p.provenance["waker_curve_s"].startswith("measured")
    d = copy.deepcopy(p.to_dict())
    del d["host"]["waker_curve_s"]
    no_waker = hostprofile.load(d)
    wrong = SE.evaluate(models={SE.MODELS[0]: no_waker, SE.MODELS[1]: SE.without_deep_wake(p)})
    f = SE.findings(wrong)
    assert not f[NEAR_KEY]
    e = wrong.ends[SE.MODELS[0]]
    bbr = e[(e["ended_by"] == "wake-up") & (e["cc"] == "bbr")]
    assert (bbr["sim_qd"] - bbr["kernel_qd"] > SE.NEAR_QD).all()


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


def _stalls(qd: int, sd: float, ce: float, se: float, path: float, cd: float = 0.0) -> bool:
    """Whether a Nagle server with a NODELAY client stalls at ``qd`` on a loopback-like link
    (a 64 KiB MSS, no send() cost), from a stall's restart; waking the server costs the
    client's send() ``cd`` after 10 ms of the server's idle and more."""
    h = {
        "tx_latency_s": path / 2,
        "rx_latency_s": path / 2,
        "wake_curve_s": ((1e-6, 20e-6), (1e-3, 20e-6), (10e-3, sd)),  # sd after 10 ms and more
    }
    waker = {"waker_curve_s": ((1e-6, 0.0), (1e-3, 0.0), (10e-3, cd))} if cd else {}
    sc = Scenario(
        workload={"qd": qd},
        link={"mtu": 65536, "bandwidth_bps": 1e11},
        client={**h, **waker, "nodelay": True, "proc_s": ce},
        server={**h, "proc_s": se},
        run={"start": "established", "ops": 20 * (qd + 1), "warmup_ops": 2 * qd + 2},
    )
    return simulate(sc).rtt_mean_s > 20e-3  # every operation waits for the 40 ms timer


@pytest.mark.parametrize(
    "sd, ce, se, path",
    [(60e-6, 5.5e-6, 5.5e-6, 1.2e-6), (100e-6, 4e-6, 6e-6, 2e-6), (40e-6, 8e-6, 3e-6, 0.5e-6)],
)
def test_the_simulator_ends_the_stall_where_the_derivation_does(sd, ce, se, path):
    # the inequality's largest stalling QD, away from a whole number, against the simulator's
    top = A.qd_max_stall(sd, se, ce, path, path)
    assert 0.2 < top % 1 < 0.8
    last = math.floor(top)
    assert _stalls(last, sd, ce, se, path) and _stalls(last - 2, sd, ce, se, path)
    assert not _stalls(last + 1, sd, ce, se, path)
    # the wake-up after the stall decides it: with the ordinary one the stall ends sooner
    assert not _stalls(last, 20e-6, ce, se, path)


@pytest.mark.parametrize(
    "sd, ce, se, path, cd",
    [(60e-6, 5.5e-6, 5.5e-6, 1.2e-6, 11e-6), (100e-6, 4e-6, 6e-6, 2e-6, 8e-6)],
)
def test_the_simulator_ends_the_stall_where_the_derivation_does_with_the_waker_s_cost(
    sd, ce, se, path, cd
):
    # the waker's cost takes whole queue depths off the end, in the simulator as in the
    # inequality
    top = A.qd_max_stall(sd, se, ce, path, path, cd)
    assert 0.2 < top % 1 < 0.8
    last = math.floor(top)
    assert last <= math.floor(A.qd_max_stall(sd, se, ce, path, path)) - 2
    assert _stalls(last, sd, ce, se, path, cd)
    assert not _stalls(last + 1, sd, ce, se, path, cd)
    # the wrong model (no waker's cost) still stalls one past the end
    assert _stalls(last + 1, sd, ce, se, path)

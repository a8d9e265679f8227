"""The rate limit's bucket depth (models.validation.burst): the late tbf watchdog against the burst
sweep, the on-time watchdog as the wrong model that fails, and the second draw as the audit."""

from __future__ import annotations

import pytest

from models import framing
from models.kernel import load_kernel_run, row_scenario
from models.validation import burst as BU
from models.validation import fidelity as FID

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def ev() -> BU.BurstEvaluation:
    return BU.evaluate()


def test_every_row_carries_its_bucket_to_the_simulated_link():
    run = load_kernel_run(prefix=BU.PREFIX)
    rows = run.table("iscsi_loop").to_dict("records")
    depths = {framing.burst_frames(r["link"]) for r in rows}
    assert depths == {2, 4, 10, 40}
    host = FID.ProfileHost(_profile())
    for r in rows:
        sc = row_scenario("iscsi_loop", r, host, run.hz)
        want = framing.tbf_burst_bytes(int(r["mtu_bytes"]), framing.burst_frames(r["link"]))
        assert sc.link.bucket_bytes == want
        # and the harness recorded the same depth, in bytes, for the link it made
        meta = run.measurement["links"][r["link"]]
        assert meta["tbf_burst_bytes"] == want


def _profile():
    from models.sim import hostprofile
    from models.validation import apart

    return hostprofile.shipped(apart.lowest_loss())


def test_the_goal_table_has_both_models_and_the_audit(ev):
    assert list(ev.goals.columns) == [*BU.MODELS, BU.AUDIT]
    assert list(ev.goals.index) == list(BU.GOALS)
    assert all(t["role"].eq("test").all() for t in ev.tables.values())


def _met(ev, name):
    return {g.name: g.met for g in BU.goals(ev.tables[name])}


def test_the_kernel_repeats_itself(ev):
    # the audit: the second draw meets every goal, so the goals are ones a model can meet
    assert all(_met(ev, BU.AUDIT).values())


def test_the_late_watchdog_gets_the_rates_and_the_direction_of_every_gain(ev):
    late = ev.tables[BU.MODELS[0]]
    assert late["within"].mean() >= FID.IOPS_SHARE
    met = _met(ev, BU.MODELS[0])
    assert met[BU.GOALS[0]] and met[BU.GOALS[1]] and met[BU.GOALS[2]] and not met[BU.GOALS[3]]
    g = BU.gains(late)
    assert len(g) == 9 and ((g["kernel_gain"] > 1.05) & (g["sim_gain"] > 1.05)).all()
    # every simulated gain is larger than the kernel's: the shallow bucket costs the simulator
    # more; right in size at 64 KiB for every QD, and furthest off at 4 KiB
    assert (g["sim_gain"] > g["kernel_gain"]).all()
    assert g.loc[g["iosize_bytes"] == 65536, "right"].all()
    small = g[g["iosize_bytes"] == 4096]
    assert (~small["right"]).all() and (small["sim_gain"] > 1.25 * small["kernel_gain"]).all()
    # what the shallow bucket costs an operation falls from QD 1 to QD 8 in both, the kernel's
    # by more
    cost = BU.bucket_cost_us(late).set_index(["iosize_bytes", "qd"])
    for size in (4096, 16384, 65536):
        k1, k8 = cost.loc[(size, 1), "kernel_us"], cost.loc[(size, 8), "kernel_us"]
        s1, s8 = cost.loc[(size, 1), "sim_us"], cost.loc[(size, 8), "sim_us"]
        assert s8 < s1 and k8 < k1 and k8 / k1 < s8 / s1


def test_the_on_time_watchdog_fails_where_the_bucket_matters(ev):
    wrong = ev.tables[BU.MODELS[1]]
    assert not _met(ev, BU.MODELS[1])[BU.GOALS[1]]
    g = BU.gains(wrong)
    # it predicts almost no gain from a deeper bucket where the kernel gains a third or more
    big = g[g["kernel_gain"] > 1.3]
    assert len(big) >= 3 and (big["sim_gain"] < 1.15).all()
    assert not _met(ev, BU.MODELS[1])[BU.GOALS[3]]
    assert wrong["within"].mean() < ev.tables[BU.MODELS[0]]["within"].mean()


def test_simulate_refuses_an_unknown_model():
    with pytest.raises(ValueError, match="model must be one of"):
        BU.simulate("early watchdog")

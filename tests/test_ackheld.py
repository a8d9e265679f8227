"""models.validation.ackheld: a pure ACK's cost held at its measured value or fitted, on a third
machine's pinned sample (chapter 9, "A pure ACK, measured")."""

from __future__ import annotations

import copy

import pytest

from models.sim import hostprofile
from models.validation import ackheld as AH
from models.validation import apart as AP
from models.validation import fidelity as FID
from models.validation import machines as MA


@pytest.fixture(scope="module")
def ev():
    return AH.evaluate()


def test_every_profile_is_what_its_name_says():
    for _k, way, name in AH.profile_names():
        p = hostprofile.shipped(name)
        fit = p.records["fit"]
        assert ("ack_s" in fit["fixed"]) == (way == "held"), name
        assert p.provenance["ack_cpu_s"].startswith("measured" if way == "held" else "fitted")
        assert p.machine["kernel"] == "6.18.44-fc-v669"
    # the two profiles of a try share every measurement
    for k in range(1, AH.TRIES + 1):
        held, fitted = (hostprofile.shipped(f"{AH.PROFILE_PREFIX}_try{k}_{w}") for w in AH.WAYS)
        assert held.records["fit"]["training_rows"][0]["measured_p50_us"] == pytest.approx(
            fitted.records["fit"]["training_rows"][0]["measured_p50_us"]
        )
        assert held.host["wake_s"] == fitted.host["wake_s"]
        assert "ack" in held.records["measured"] and "ack" not in fitted.records["measured"]


def test_the_findings_hold(ev):
    t = ev.table
    assert list(t.index) == [(k, w) for k, w, _ in AH.profile_names()]
    assert (t["test_rows"] > 0).all() and (t["verdicts_right"] <= t["test_rows"]).all()
    assert AH.findings(t) == dict.fromkeys(AH.findings(t), True)
    assert AH.split_findings(ev) == dict.fromkeys(AH.split_findings(ev), True)
    n = AH.numbers(ev)
    assert n["held_lo"] <= n["held_hi"] < n["fit_hi"]
    io = FID.iops_table(ev.tables[n["k"], "held"])
    below = int((~MA.bbr_held(io) & (io["qd"] < AP.BUSY_QD)).sum())
    assert n["bbr_n"] + n["busy_n"] + n["slept_n"] + below == len(io)
    # only unlimited-link rows were simulated
    for table in ev.tables.values():
        assert not FID.link_limited(table).any()


def test_a_wrong_ack_cost_fails_the_comparison(ev):
    """The kept held profile (lowest fit loss) with its ACK five times its measured cost: its share
    of rows within the tolerance falls below its fitted twin's by more than the findings allow,
    so the comparison can tell a wrong ACK cost."""
    k = int(AH.kept(ev.table, "held").name)
    d = copy.deepcopy(hostprofile.shipped(f"{AH.PROFILE_PREFIX}_try{k}_held").to_dict())
    d["host"]["ack_cpu_s"] *= 5
    wrong = AH.summary(AH.simulate(hostprofile.load(d)))
    table = ev.table.copy()
    table.loc[(k, "held"), "within_pct"] = wrong["within_pct"]
    assert not AH.findings(table)["holding it lowers no try's share by more than a few points"]


def test_a_dearer_wake_up_fails_the_busy_split():
    """The kept held profile with every wake-up 10 us dearer than measured (the wrong model): the
    runs whose simulated server sleeps between batches fall outside the tolerance at their median,
    so the claim that neither part is can tell a wrong wake-up."""
    from models.validation import apart
    from models.validation.fidelity import IOPS_TOL

    d = copy.deepcopy(hostprofile.shipped(AH.kept_name()).to_dict())
    d["host"]["wake_curve_s"] = [[i, w + 10e-6] for i, w in d["host"]["wake_curve_s"]]
    io = FID.iops_table(AH.simulate(hostprofile.load(d)))
    _, busy, slept = (row for _, row in apart.busy_split(io[~MA.bbr_held(io)]).iterrows())
    assert abs(slept.median_ratio - 1) > IOPS_TOL

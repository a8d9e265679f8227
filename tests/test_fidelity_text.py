"""Chapter 9's claims about the pacing timer's CPU on the field sweep
(models.validation.fidelity_text, models.validation.timer_carry).

The book's profile prices bbr's pacing timer at nothing; the three machines measured since agree
on its costs, and carried to the field sweep's machine (a what-if: the costs are borrowed) they
bring the sweep's share within a quarter to the kernel's own second draw.  Each claim is checked on
the simulated rows, and a wrong model (the borrowed costs three times over) fails them."""

from __future__ import annotations

import pytest

from models.kernel import load_kernel_run
from models.sim import hostprofile
from models.validation import draws as DR
from models.validation import fidelity as FID
from models.validation import fidelity_text as FT
from models.validation import timer_carry as TC


@pytest.fixture(scope="module")
def field():
    return load_kernel_run(prefix=FID.FIELD_PREFIX)


@pytest.fixture(scope="module")
def book():
    return hostprofile.shipped()


@pytest.fixture(scope="module")
def sims(book, field):
    return TC.simulate(book, field)


@pytest.fixture(scope="module")
def shipped(book, field):
    return FID.simulate_loop(field, book)


@pytest.fixture(scope="module")
def repeat():
    first, second, _ = DR.bundled_draws()
    return DR.repeat_table(first, second)


def test_the_donors_agree_and_the_carried_cost_is_their_median(book):
    assert not any(book.host.get(k) for k in TC.TIMER_FIELDS)  # the book's timer costs nothing
    d = TC.donor_costs()
    assert list(d.index) == list(TC.DONORS)
    assert len(set(d["kernel"])) == len(TC.DONORS)  # three builds, three machines
    for f in TC.TIMER_FIELDS:
        assert d[f].max() / d[f].min() < 1.25  # within a fifth of each other
        assert TC.carried_costs()[f] * 1e6 == pytest.approx(sorted(d[f])[1])  # us
    lent = TC.carried(book)
    assert {k: lent.host[k] for k in TC.TIMER_FIELDS} == TC.carried_costs()
    assert all(lent.provenance[k].startswith("carried") for k in TC.TIMER_FIELDS)
    others = {k: v for k, v in lent.host.items() if k not in TC.TIMER_FIELDS}
    assert others == book.host  # nothing else moves


def test_the_veth_1500_nagle_rows_too_fast_unpriced_most_within_priced(field, shipped, sims):
    plain = FID.iops_table(shipped)
    plain = plain[FT.v1500_rows(plain)]
    lent = FID.iops_table(sims[TC.CARRIED])
    lent = lent[FT.v1500_rows(lent)]
    assert len(plain) == len(lent) >= 10
    assert plain.ratio.median() > 1 + FID.IOPS_TOL  # the claim "too fast"
    assert lent.within.mean() > 0.5  # the what-if: most within
    assert lent.ratio.median() < plain.ratio.median()


def test_only_bbr_rows_move_when_the_timer_is_priced(shipped, sims):
    other = shipped.cc != "bbr"
    assert other.sum() > 50
    assert (shipped.loc[other, "sim_iops"] == sims[TC.CARRIED].loc[other, "sim_iops"]).all()
    bbr = ~other
    assert (shipped.loc[bbr, "sim_iops"] != sims[TC.CARRIED].loc[bbr, "sim_iops"]).any()


def test_the_chapter_claims_hold(shipped, sims, repeat):
    t = TC.table(shipped, sims, repeat)
    found = TC.findings(t)
    assert all(found.values()), found
    n = TC.numbers(t)
    assert n["tc_ship_within"] < n["tc_carry_within"] < n["tc_freed_within"]
    assert n["tc_arm_lo"] <= n["tc_arm_us"] <= n["tc_arm_hi"]


def test_a_wrong_price_fails_them(book, field, shipped, sims, repeat):
    # the borrowed costs three times over, frames freed: the wrong model in the freed row's place
    tripled = TC.carried(book).to_dict()
    for k in TC.TIMER_FIELDS:
        tripled["host"][k] *= 3
    wrong = hostprofile.load(tripled)
    wrong_sims = dict(sims)
    wrong_sims[TC.FREED] = FID.simulate_loop(field, wrong, scenario=TC.freed_scenario)
    found = TC.findings(TC.table(shipped, wrong_sims, repeat))
    assert not found["each step brings more rows within a quarter"]
    assert not found["with frames freed the model is as close as the kernel's second draw"]


def test_the_table_keeps_its_roles(shipped, sims, repeat):
    t = TC.table(shipped, sims, repeat)
    assert list(t.index) == [TC.SHIPPED, TC.CARRIED, TC.FREED, TC.REPEAT]
    assert t.loc[TC.REPEAT, "role"] == "audit"
    assert t.loc[TC.SHIPPED, "role"] == "test"

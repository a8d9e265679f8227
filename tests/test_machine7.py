"""The seventh machine's calibration, its copies' costs from the loop benchmark, held to the
machine's sample of the field runs (models.validation.machine7): each claim holds, and fails on
a wrong world."""

from __future__ import annotations

import dataclasses

import pytest

from models.sim import hostprofile
from models.validation import machine7 as M7


@pytest.fixture(scope="module")
def ev():
    return M7.evaluate()


@pytest.fixture(scope="module")
def cut():
    return M7.segment_contrast()


def test_every_claim_holds(ev, cut):
    found = M7.findings(ev, cut)
    assert all(found.values()), found
    assert set(found) == {
        "loop reads dearer",
        "large rows closer",
        "small rows unmoved",
        "verdicts kept",
        "segments slow the small rows",
    }


def test_the_profile_s_copies_are_the_loop_s_and_the_contrast_its_own_record_s():
    p = hostprofile.shipped(M7.PROFILE)
    m = p.records["measured"]
    assert p.provenance["recv_byte_cpu_s"].endswith("(loop_bytes)")
    assert p.host["recv_byte_cpu_s"] == pytest.approx(m["loop_bytes"]["recv_per_byte_ns"] * 1e-9)
    one = M7.one_transfer(p)
    assert one.host["recv_byte_cpu_s"] == pytest.approx(m["recv"]["large"]["per_byte_ns"] * 1e-9)
    assert one.host["handoff_byte_cpu_s"] == pytest.approx(
        m["large_cross"]["send_extra_per_byte_ns"] * 1e-9
    )
    # everything else equal
    same = {
        k: v for k, v in one.host.items() if k not in ("recv_byte_cpu_s", "handoff_byte_cpu_s")
    }
    assert same == {k: p.host[k] for k in same}


def _swapped(ev):
    """The wrong world: each scenario's two profiles' results exchanged."""
    t, c = dict(ev.tables), dict(ev.copies)
    for a, o in M7.PAIRS:
        t[a], t[o] = t[o], t[a]
        c[a], c[o] = c[o], c[a]
    bands = ev.bands.copy()
    for a, o in M7.PAIRS:
        bands[a], bands[o] = ev.bands[o], ev.bands[a]
    return dataclasses.replace(ev, tables=t, copies=c, bands=bands)


def test_the_claims_fail_with_the_copies_swapped(ev):
    found = M7.findings(_swapped(ev))
    assert not found["loop reads dearer"] and not found["large rows closer"]


def test_small_rows_that_moved_fail_the_claim(ev):
    bands = ev.bands.copy()
    bands.loc["QD >= 8, under 16 KiB", M7.MODELS[0]] += 0.1
    assert not M7.findings(dataclasses.replace(ev, bands=bands))["small rows unmoved"]


def test_a_verdict_lost_fails_the_claim(ev):
    t = dict(ev.tables)
    loop = t[M7.MODELS[2]].copy()
    test = loop.index[loop["role"] == "test"]
    right = test[loop.loc[test, "kernel_stalls"] == loop.loc[test, "sim_stalls"]]
    flip = right[: 1 + len(right) // 50]  # a few right verdicts turned wrong
    loop.loc[flip, "sim_stalls"] = ~loop.loc[flip, "sim_stalls"]
    t[M7.MODELS[2]] = loop
    assert not M7.findings(dataclasses.replace(ev, tables=t))["verdicts kept"]


def test_a_cut_that_changes_nothing_fails_the_segment_claim(ev, cut):
    as_fitted = M7.band_medians(ev.tables[M7.MODELS[2]])
    assert not M7.findings(ev, as_fitted)["segments slow the small rows"]
    assert M7.findings(ev, cut)["segments slow the small rows"]

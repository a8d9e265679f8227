"""Chapter 9's placement comparison (models.validation.placement): the kernel's runs with both ends
on one CPU, on a CPU each, and unpinned (data/kernel6_placement) against the simulator's one- and
two-CPU machine.  Every row must be as recorded (a known failure stays failing with its cause, the
rest pass), and wrong models fail: per-message CPU doubled, and the profile before its hand-off
split (one CPU paying the whole two-CPU cost)."""

from __future__ import annotations

import pandas as pd
import pytest

from models import data
from models.sim import hostprofile
from models.validation import placement as P


@pytest.fixture(scope="module")
def kernel() -> pd.DataFrame:
    return P.kernel_table(data.load(P.DATASET))


@pytest.fixture(scope="module")
def shipped_sim(kernel) -> pd.DataFrame:
    return P.simulated_table(kernel.index)


def _not_as_recorded(rows) -> list[str]:
    return [f"{r.quantity}: {r.status}" for r in rows if not r.ok]


def test_the_sweep_has_every_link_size_and_placement_repeated(kernel):
    links = ("loopback", "veth-1500", "veth-9000")
    assert list(kernel.index) == [(k, s) for k in links for s in (512, 4096, 16384, 65536)]
    assert (kernel["runs"] >= 3).all()
    # one CPU repeats within about a fifth everywhere; with a CPU each the veth runs do not
    assert (kernel["same_hi"] / kernel["same_lo"] < 1.25).all()
    assert (
        kernel.loc[["veth-1500", "veth-9000"], "apart_hi"]
        / kernel.loc[["veth-1500", "veth-9000"], "apart_lo"]
        > 1.25
    ).all()


def _profile(**host) -> hostprofile.HostProfile:
    p = hostprofile.shipped()
    return hostprofile.validate({**p.to_dict(), "host": {**p.host, **host}})


def test_every_row_is_as_recorded_with_the_shipped_profile(kernel, shipped_sim):
    rows = P.placement_rows(kernel, shipped_sim, source="test")
    assert not _not_as_recorded(rows)
    assert {r.kind for r in rows} == {"fit", "test", "audit"}
    tests = [r for r in rows if r.kind == "test"]
    assert len(tests) == 32
    # the one-CPU rows of the loopback are fitted (the hand-off split) and agree closely; the
    # veth's are tests, and pass below 64 KiB
    fits = [r for r in rows if r.kind == "fit"]
    assert len(fits) == 4 and all("loopback" in r.quantity and r.rel_error < 0.05 for r in fits)
    veth_one = [r for r in tests if "one CPU" in r.quantity and "65536" not in r.quantity]
    assert len(veth_one) == 6 and all(r.passed for r in veth_one)


def test_a_wrong_model_is_caught(kernel):
    """Per-message CPU tripled on both ends (its own and its hand-off part): rows that pass with
    the shipped profile fail, with one CPU and with two.  (Doubled, it only turns some known
    failures into passes: the kernel's slow level is that much slower.)"""
    h = hostprofile.shipped().host
    wrong = _profile(proc_s=3 * h["proc_s"], handoff_cpu_s=3 * h["handoff_cpu_s"])
    rows = P.placement_rows(kernel, P.simulated_table(kernel.index, profile=wrong), "test")
    bad = _not_as_recorded(rows)
    assert any("512 B responses: two CPUs" in b and "FAIL" in b for b in bad), bad
    assert any("one CPU" in b and "FAIL" in b for b in bad), bad


def test_the_model_without_hand_off_costs_fails_the_second_cpu_rows(kernel):
    """The profile before the split: one CPU pays the whole two-CPU cost, so a second CPU
    doubles the simulated rate, which the kernel's never does."""
    whole = hostprofile.handoff_split(hostprofile.shipped(), 1.0)
    sim = P.simulated_table(kernel.index, profile=whole)
    rows = P.placement_rows(kernel, sim, "test")
    bad = _not_as_recorded(rows)
    assert sum("what the second CPU adds" in b and "FAIL" in b for b in bad) >= 6, bad
    # and its two-CPU rates are the shipped profile's: the split changes nothing there
    shipped = P.simulated_table(kernel.index)
    assert (sim["sim_apart"] == shipped["sim_apart"]).all()
    assert (sim.loc["loopback", "sim_same"] < 0.8 * kernel.loc["loopback", "same"]).all()


def test_a_model_that_matched_the_kernel_passes_every_test(kernel):
    same = pd.DataFrame(
        {"sim_same": kernel["same"], "sim_apart": kernel["apart"], "sim_gain": kernel["gain"]}
    )
    rows = P.placement_rows(kernel, same, "test")
    tests = [r for r in rows if r.kind == "test"]
    assert all(r.passed for r in tests)
    # so each known failure would show as passing, not as recorded
    assert {r.status for r in tests if r.expected_to_fail} == {"passes (expected to fail)"}


def test_the_kernel_predicts_its_own_unpinned_runs_only_so_well():
    df = data.load(P.DATASET)
    assert P.repeat_share(df, "same") == 1.0
    assert 0.5 < P.repeat_share(df, "none") < 0.95
    with pytest.raises(ValueError, match="pin 'nowhere'"):
        P.repeat_share(df, "nowhere")

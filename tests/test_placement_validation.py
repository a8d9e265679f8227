"""Chapter 9's placement comparison (models.validation.placement): the kernel's runs with both ends
on one CPU, on a CPU each, and unpinned (data/kernel6_placement) against the simulator's one- and
two-CPU machine.  Every row must be as recorded (a known failure stays failing with its cause, the
rest pass); a wrong model and a model that matched the kernel each change the statuses, so the
check can fail both ways."""

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


def test_the_sweep_has_every_size_and_placement_repeated(kernel):
    assert list(kernel.index) == [512, 4096, 16384, 65536]
    assert (kernel["runs"] >= 3).all()
    # one CPU repeats within a few percent, the unpinned runs do not (the audits' finding)
    assert (kernel["same_hi"] / kernel["same_lo"] < 1.15).all()
    assert (kernel["none_hi"] / kernel["none_lo"] > 1.25).all()


def test_every_row_is_as_recorded_with_the_shipped_profile(kernel, shipped_sim):
    rows = P.placement_rows(kernel, shipped_sim, source="test")
    assert not _not_as_recorded(rows)
    assert {r.kind for r in rows} == {"test", "audit"}
    tests = [r for r in rows if r.kind == "test"]
    assert len(tests) == 12 and sum(r.passed for r in tests) == 5


def test_a_wrong_model_is_caught(kernel):
    """Per-operation CPU doubled on both ends: the two-CPU rows, which pass, fail."""
    p = hostprofile.shipped()
    wrong = hostprofile.validate(
        {**p.to_dict(), "host": {**p.host, "proc_s": 2 * p.host["proc_s"]}}
    )
    rows = P.placement_rows(kernel, P.simulated_table(kernel.index, profile=wrong), "test")
    bad = _not_as_recorded(rows)
    assert any("two CPUs" in b and "FAIL" in b for b in bad), bad


def test_a_model_that_matched_the_kernel_would_show_the_known_failures_passing(kernel):
    same = pd.DataFrame(
        {"sim_same": kernel["same"], "sim_apart": kernel["apart"], "sim_gain": kernel["gain"]}
    )
    rows = P.placement_rows(kernel, same, "test")
    tests = [r for r in rows if r.kind == "test"]
    assert all(r.passed for r in tests)
    assert {r.status for r in tests if r.expected_to_fail} == {"passes (expected to fail)"}


def test_the_kernel_predicts_its_own_unpinned_runs_only_so_well():
    df = data.load(P.DATASET)
    assert P.repeat_share(df, "same") == 1.0
    assert 0.5 < P.repeat_share(df, "none") < 0.9
    with pytest.raises(ValueError, match="pin 'nowhere'"):
        P.repeat_share(df, "nowhere")

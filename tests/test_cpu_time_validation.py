"""Chapter 9's time on one CPU per end (models.validation.cpu_time): the scheduler trace's
findings hold and a contrary trace fails them, the rows are as recorded, a simulator that
charges each end's work to the other fails the share rows, and the configuration is the
measuring tool's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models import data
from models.sim import hostprofile
from models.validation import cpu_time as CT

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import preempt_trace  # noqa: E402


@pytest.fixture(scope="module")
def kernel():
    return CT.kernel_table(data.load(CT.DATASET))


@pytest.fixture(scope="module")
def sim(kernel):
    return CT.simulated_table(kernel.index)


def test_the_findings_hold_and_a_contrary_trace_fails_them(kernel):
    assert all(CT.findings(kernel).values())
    df = data.load(CT.DATASET)
    swapped = df.assign(end=df["end"].map({"client": "server", "server": "client"}))
    assert not any(CT.findings(CT.kernel_table(swapped)).values())


def test_every_row_is_as_recorded(kernel, sim):
    rows = CT.cpu_time_rows(kernel, sim, "trace")
    assert len(rows) == 2 * len(CT.TESTED)
    assert all(r.ok for r in rows), [r.quantity for r in rows if not r.ok]
    assert all(r.kind == "test" for r in rows)
    shares = [r for r in rows if "share" in r.quantity]
    assert all(r.passed for r in shares)


def test_a_simulator_that_swaps_the_ends_fails_the_share_row(kernel, sim):
    wrong = sim.assign(client_share=1 - sim["client_share"])
    rows = CT.cpu_time_rows(kernel, wrong, "trace")
    assert not any(r.passed for r in rows if "share" in r.quantity)


def test_before_the_hand_off_split_the_time_comes_closer_but_stays_short(kernel, sim):
    """The known failure's cause, as its text says: under half the kernel's time; with the
    profile as it was before its hand-off split, closer, and still short."""
    whole = CT.simulated_table(kernel.index, hostprofile.handoff_split(hostprofile.shipped(), 1.0))
    ratio, ratio_whole = (t["total_us"] / kernel["total_us"] for t in (sim, whole))
    assert (ratio < 0.5).all()
    assert (ratio < ratio_whole).all() and (ratio_whole < 1).all()


def test_the_configuration_is_the_tools():
    args = preempt_trace.RUN_ARGS
    assert args[args.index("--link") + 1] == CT.CONFIG["link"]
    assert int(args[args.index("--iosize") + 1]) == CT.CONFIG["iosize_bytes"]
    assert int(args[args.index("--qd") + 1]) == CT.CONFIG["qd"]
    assert args[args.index("--sock") + 1] == "nagle"
    assert args[args.index("--pin") + 1] == "same"


def test_the_dataset_has_the_tools_columns():
    df = data.load(CT.DATASET)
    assert list(df.columns) == [name for name, *_ in preempt_trace.CPU_FIELDS]
    assert sorted(set(df["client_sock_mode"])) == sorted(preempt_trace.CLIENTS)

"""bbr's start read by the kernel's server itself (tools/cc_timeline.py, qdperf server
--cc-log-every): models.validation.cc_timeline states what the runs and the model with the
first connection's handshake show, and each claim fails with a wrong model in its place."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import cc_timeline as CT  # noqa: E402

from models.data import describe  # noqa: E402
from models.validation import cc_timeline as C  # noqa: E402
from models.validation import turnaround as TURN  # noqa: E402
from models.validation.fidelity import IOPS_TOL  # noqa: E402


@pytest.fixture(scope="module")
def runs():
    return C.runs()


@pytest.fixture(scope="module")
def table(runs):
    return C.table(runs)


def test_the_runs_and_the_model_show_what_the_text_says(table, runs):
    f = C.findings(table, runs)
    assert all(f.values()), f


def test_a_warm_handshake_in_the_models_place_fails(table, runs):
    """The model with a warm connection's handshake (the path's idle round trip): its first
    rate is several times the kernel's and behind the Nagle server it never leaves start-up."""
    t = table.copy()
    warm = TURN.turnaround_run("bbr", 0.0, None, warm=True)
    nagle = t.index[t["server_sock_mode"] == "nagle"][0]
    first_gbps = warm.bbr_trace[0][1] * 8 / 1e9  # its first pacing rate, bytes/s -> Gb/s
    t.loc[nagle, "model_first_gbps"] = first_gbps
    t.loc[nagle, "first_ratio"] = first_gbps / t.loc[nagle, "first_gbps"]
    t.loc[nagle, "within"] = abs(t.loc[nagle, "first_ratio"] - 1) <= IOPS_TOL
    t.loc[nagle, ["model_left_ms", "state_right"]] = [math.nan, False]
    f = C.findings(t, runs)
    assert not f["the model's first srtt and rate are the runs' within the tolerance"]
    assert not f["with the first connection's handshake its state is the kernel's"]


def test_the_kernels_times_in_the_models_place_fail_the_known_failure(table, runs):
    t = table.copy()
    t["model_left_ms"] = t["left_ms"]
    assert not C.findings(t, runs)["but it leaves start-up sooner than any kernel run"]


def test_the_bundled_dataset_is_the_tools():
    desc = describe(C.DATASET)
    command = desc["sources"][0]["section"]
    draws = int(command.split("--draws ")[1].split()[0])
    every = int(command.split("--every ")[1].split()[0])
    k = C.kernel()
    modes = sum(len(CT.modes(s)) for s in CT.SETS.values())
    assert k.groupby(C.RUN).ngroups == draws * modes
    assert (k["op"] % every == 0).all()
    assert set(CT.COLUMNS.values()) <= set(k.columns)


def test_the_tool_refuses_bad_options():
    for bad in (["--draws", "0"], ["--every", "0"], ["--keep", "5"], ["--duration", "50"]):
        with pytest.raises(SystemExit):
            CT.main(["--out", "/tmp/unused", *bad])

"""The handshake's round trip: tools/handshake_rtt.py reads TCP_INFO after connect() and
accept(), and models.validation.handshake states what the bundled connections and the model
show, each claim able to fail."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import handshake_rtt as HR  # noqa: E402

from models.data import describe, load  # noqa: E402
from models.validation import handshake as H  # noqa: E402
from models.validation import pacing_rate as PR  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return H.table()


def traced_first_gbps() -> float:
    """The first pacing rate of the traced start (bytes/s -> Gb/s)."""
    start = load(PR.START).sort_values("time_us")
    return float(start["pacing_rate_bytes_per_s"].iloc[0]) * 8 / 1e9


def startup_gbps() -> float:
    """The rate ss read behind the 2 KiB server: the draws' geometric mean, Gb/s."""
    k = PR.kernel()
    small = k[k["set"] == "small"]["pacing_gbps"]
    return math.exp(small.map(math.log).mean())


def test_the_kernels_connections_show_what_the_text_says(table):
    f = H.kernel_findings(table, traced_first_gbps(), startup_gbps())
    assert all(f.values()), f


def test_the_rule_is_exact_on_veth_and_would_fail_anywhere_else(table):
    """The simulator's bbr_init_pacing_rate_from_rtt gives the kernel's first rate from the
    kernel's own srtt on every veth connection; with srtt one microsecond off, on none."""
    k = H.kernel()
    veth = k[k["link"] == "veth-1500"].copy()
    assert (table[table["link"] == "veth-1500"]["formula_share"] == 1.0).all()
    veth["srtt_us"] += 1
    shifted = H.table(veth)
    assert (shifted["formula_share"] == 0.0).all()
    f = H.kernel_findings(shifted, traced_first_gbps(), startup_gbps())
    assert not f["bbr's first rate is the rule's on every veth connection"]


def test_the_model_beside_the_kernel(table):
    f = H.model_findings(table)
    assert all(f.values()), f
    apart = table[table["pin"] == "apart"]
    assert apart["model_trip_us"].notna().all()
    # the ends on one CPU: no model row, and no verdict
    same = table[table["pin"] == "same"]
    assert same["model_srtt_us"].isna().all() and same["srtt_within"].isna().all()


def test_the_kernels_own_numbers_in_the_models_place_fail_the_known_failure(table):
    t = table.copy()
    apart = t["pin"] == "apart"  # (the rows with a model)
    t.loc[apart, "model_srtt_us"] = t.loc[apart, "kernel_srtt_us"]
    t.loc[apart, "srtt_ratio"] = 1.0
    t.loc[apart, "srtt_within"] = True
    f = H.model_findings(t)
    assert not f["the model's round trip is short by a fifth to a half"]
    assert not f["outside the tolerance on the servers' rows"]


def test_a_handshake_as_fast_as_the_trace_fails_the_tracing_claim(table):
    server = table[(table["link"] == "veth-1500") & (table["side"] == "server")]
    fast = float(server["kernel_pacing_gbps"].iloc[0])
    assert not H.kernel_findings(table, fast, startup_gbps())[
        "tracing slowed the handshake: its first rate under half"
    ]


def test_the_tool_refuses_bad_options():
    for bad in (["--connections", "5"], ["--connections", "9999"]):
        with pytest.raises(SystemExit):
            HR.main(["--out", "/tmp/unused", *bad])


def test_the_bundled_dataset_is_the_tools():
    desc = describe(H.DATASET)
    command = desc["sources"][0]["section"]
    n = int(command.split("--connections ")[1].split()[0])
    k = H.kernel()
    assert len(k) == n * len(HR.CASES) * 2  # a row per side of each connection
    assert set(zip(k["link"], k["pin"])) == set(HR.CASES)


def test_the_tool_reads_tcp_info_on_loopback():
    """Ten real handshakes over the host's loopback (no root): one sample each, so the minimum
    RTT is srtt, and a pacing rate (bbr's, or the kernel's default for another control)."""
    got = HR.measure("loopback", "same", 10)
    for side in ("server", "client"):
        assert len(got[side]) == 10
        for srtt, min_rtt, rate in got[side]:
            assert 0 < srtt < 10_000 and min_rtt == srtt and rate > 0

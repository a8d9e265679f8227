"""The handshake's round trip: tools/handshake_rtt.py reads TCP_INFO after connect() and
accept(), and models.validation.handshake states what the bundled connections and the model
show, each claim able to fail."""

from __future__ import annotations

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


def test_the_kernels_connections_show_what_the_text_says(table):
    f = H.kernel_findings(table, traced_first_gbps())
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
    f = H.kernel_findings(shifted, traced_first_gbps())
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


def test_a_warm_connections_rate_in_the_traces_place_fails(table):
    """The traced start's connection was its processes' first: a warm connection's median rate
    in its place fails the claim; and first connections as fast as the rest fail theirs."""
    server = table[(table["link"] == "veth-1500") & (table["side"] == "server")]
    warm = float(server["kernel_pacing_gbps"].iloc[0])
    assert not H.kernel_findings(table, warm)[
        "the traced start's first rate is the first connection's"
    ]
    t = table.copy()
    t["kernel_first_srtt_us"] = t["kernel_srtt_us"]
    assert not H.kernel_findings(t, traced_first_gbps())[
        "a first connection takes at least twice the median"
    ]


def test_the_first_connections_round_trip_is_read_from_the_dataset():
    k = H.kernel()
    first = k[(k["conn"] == 1) & (k["side"] == "server") & (k["link"] == "veth-1500")]
    assert H.first_rtt_s("veth-9000", "server") == first["srtt_us"].median() * 1e-6
    with pytest.raises(ValueError, match="no first connection over 'tun-1500'"):
        H.first_rtt_s("tun-1500", "server")


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

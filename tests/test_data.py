"""Tests of models.data: every bundled dataset validates (corrupt copies: tests/test_data_copies.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from models import data

ALL = data.list_datasets()
#: A dataset with every field type but boolean, a composite key, constraints and an enum.
SAMPLE = "butterfield2017_busy_count"


# ---- every dataset in data/, whoever wrote it -------------------------------------------------------


def test_there_are_datasets():
    assert (
        SAMPLE in ALL
        and "butterfield2017_rtt_breakdown" in ALL
        and "hpe2019_latency_layers" in ALL
    )


@pytest.mark.parametrize("name", ALL)
def test_dataset_loads_and_matches_its_schema(name):
    desc = data.describe(name)
    df = data.load(name)
    fields = desc["schema"]["fields"]
    assert list(df.columns) == [f["name"] for f in fields]
    assert len(df) > 0
    assert data.sha256_of(data.DATA_DIR / desc["path"]) == desc["hash"]
    kinds = {"number": "f", "integer": "iu", "boolean": "b"}
    for f in fields:
        if f["type"] in kinds:
            assert df[f["name"]].dtype.kind in kinds[f["type"]], (
                name,
                f["name"],
                df[f["name"]].dtype,
            )
    key = data._primary_key(desc["schema"])
    assert not df.duplicated(subset=key).any()
    assert df.attrs["name"] == name and set(df.attrs["units"]) == set(df.columns)
    assert all(s["author"] and s["file"] for s in desc["sources"])


@pytest.mark.parametrize("name", ALL)
def test_source_file_exists(name):
    """Each source names a file: a source document (``../shared/seeds/``, beside the clone) or, for data the
    project measured itself, the code in this repository that produced it."""
    repo = Path(__file__).resolve().parents[1]
    seeds = repo.parent / "shared" / "seeds"
    for s in data.describe(name)["sources"]:
        if (repo / s["file"]).exists():
            continue
        if not seeds.is_dir():
            pytest.skip(f"source documents not available beside this clone ({seeds})")
        assert (seeds / s["file"]).is_file(), (name, s["file"])


def test_datapackage_is_in_sync():
    data.check_datapackage()
    pkg = json.loads((data.DATA_DIR / data.DATAPACKAGE).read_text())
    assert [r["name"] for r in pkg["resources"]] == ALL


def test_validate_counts_rows():
    counts = data.validate()
    assert set(counts) == set(ALL) and all(n > 0 for n in counts.values())


# ---- what the transcriptions must satisfy -----------------------------------------------------------


def test_busy_count_rows_sum_to_100_percent():
    df = data.load("butterfield2017_busy_count")
    assert (df.busy_count <= df.queue_depth).all()
    sums = df.groupby(["socket_option", "queue_depth"]).cycles_pct.sum()
    assert len(sums) == 10 and (sums == 100).all(), sums


def test_rtt_breakdown_arithmetic_as_printed():
    v = data.load("butterfield2017_rtt_breakdown").set_index("quantity").value_us
    # Differences of one-decimal numbers: exact up to float rounding.
    assert v["RTT"] - v["C2_minus_C1"] == pytest.approx(v["client_time"], abs=1e-9)
    assert v["C2_minus_C1"] - v["S2_minus_S1"] == pytest.approx(v["network_time"], abs=1e-9)
    assert v["network_time"] - v["W1_plus_W2"] == pytest.approx(
        v["CT_plus_SR_plus_ST_plus_CR"], abs=1e-9
    )


def test_flory_sequence_and_ack_numbers_are_consistent():
    t = data.load("flory2001_trace")
    for trace, g in t.groupby("trace"):
        next_seq: dict[tuple, int] = {}
        for r in g.sort_values("number").itertuples():
            flow, back = (r.src_ip, r.dst_ip), (r.dst_ip, r.src_ip)
            if flow in next_seq:
                assert r.seq == next_seq[flow], (trace, r.number)
            if "ACK" in r.flags and back in next_seq:
                assert r.ack == next_seq[back], (trace, r.number)
            next_seq[flow] = r.seq + r.length_bytes + ("SYN" in r.flags or "FIN" in r.flags)
    # one stall, the longest gap of either trace, before the 1447-byte
    # payload; Flory's text states it too, in whole milliseconds
    stall = t[t.marker == "stall"]
    assert list(zip(stall.trace, stall.number)) == [("payload_1447", 10)]
    gap_s = float(stall.inter_packet_s.iloc[0])
    assert gap_s == t.inter_packet_s.max()
    stated = data.load("flory2001_stated").set_index("quantity")
    assert round(gap_s * 1e3) == stated.loc["ethernet_trace_stall", "value"]  # s -> ms


def test_hpe_counts_multiply():
    run = data.load("hpe2019_rdma_run").iloc[0]
    assert run.io_requests * run.pages_per_request == run.pages_4k
    req = data.load("hpe2019_io_requests")
    assert (req.ftrace_function_pairs == req.io_requests + 1).all()
    layers = data.load("hpe2019_latency_layers").set_index("layer")
    assert set(layers.parent.dropna()) <= set(layers.index)


# ---- the chapters' comparisons built on these datasets (back-tests) -----------------------------------


def test_chapter_comparisons_on_bundled_data_pass():
    from models.validation import assert_all_pass, run

    for name in ("ch7.eight_stages", "ch8.latency_budget"):
        rows = run(name)
        assert len(rows) >= 8, name
        assert_all_pass(rows)


def test_eight_stage_identities_and_clocks():
    import sympy as sp

    from models.analytic import S
    from models.validation import eight_stages as E

    ids = E.latency_identities()
    m = E.MEASURED
    assert sp.simplify(ids["CT+SR+ST+CR"] - (m["C2-C1"] - m["S2-S1"] - S.W1 - S.W2)) == 0
    assert sp.simplify(sum(ids.values()) - E.start_latency_total()) == 0
    assert E.clock_free("C1", "C2") and E.clock_free("S1", "S2") and not E.clock_free("C1", "S1")
    b = E.breakdown()
    parts = (
        b["client_cpu"]
        + b["client_latency"]
        + b["server_cpu"]
        + b["server_latency"]
        + b["wire"]
        + b["tx_rx_latency"]
    )
    assert parts == pytest.approx(b["RTT"], abs=1e-11)
    assert b["client_cpu"] == pytest.approx(8.6e-6) and b["server_cpu"] == pytest.approx(15.9e-6)


def test_a_wrong_transcription_would_fail_the_comparisons(tmp_path, monkeypatch):
    """Change the CPU-bound IOPS in a copy of the data folder: the chapter 7 check must fail."""
    from models.validation import eight_stages as E

    for p in data.DATA_DIR.glob("butterfield2017_*"):
        shutil.copy(p, tmp_path / p.name)
    csv_path = tmp_path / "butterfield2017_cpu_bound_iops.csv"
    csv_path.write_text(csv_path.read_text().replace("63000", "53000"))
    data.rehash("butterfield2017_cpu_bound_iops", tmp_path)
    monkeypatch.setenv("QUEUE_DEPTH_DATA", str(tmp_path))
    bad = [r for r in E.eight_stage_comparisons() if not r.passed]
    assert [r.quantity for r in bad] == ["CPU-bound TPT (1/IOPS) vs server stages SI+SP+SK"]


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(rtt_s=0.0, pages=32, qd=2), "rtt_s"),
        (dict(rtt_s=1e-4, pages=0, qd=2), "pages"),
        (dict(rtt_s=1e-4, pages=32, qd=0.5), "qd"),
        (dict(rtt_s=float("nan"), pages=32, qd=2), "rtt_s"),
    ],
)
def test_page_time_rejects_bad_input(kwargs, word):
    from models.validation import latency_budget as L

    with pytest.raises(ValueError, match=word):
        L.page_time(**kwargs)


def test_page_time_is_littles_law():
    from models.validation import latency_budget as L

    assert L.page_time(210e-6, 32, 2) == pytest.approx(210e-6 / 64)
    assert L.pages_per_request(131072) == 32
    with pytest.raises(ValueError, match="request_bytes"):
        L.pages_per_request(5000)
    wf = L.layer_waterfall()
    parts = wf[wf.bar == "part"]
    assert (parts.start_us.diff().dropna() > 0).all()


def test_page_time_without_sympy_is_the_derived_expression():
    """models.analytic.page_time (standard library, run by chapter 8's live
    figure) is the expression latency_budget derives, bit for bit."""
    import sympy as sp

    from models import analytic as A
    from models.analytic import S
    from models.validation import latency_budget as L

    expr = L.page_time_expr()
    assert sp.simplify(expr - S.RTT / (L.PAGES * S.QD)) == 0
    f = sp.lambdify((S.RTT, L.PAGES, S.QD), expr)
    for rtt, pages, qd in [(210e-6, 32, 2), (1e-3, 1, 1), (37.3e-6, 7, 13.5)]:
        assert A.page_time(rtt, pages, qd) == f(rtt, pages, qd)
        assert A.page_time(rtt, pages, qd) == L.page_time(rtt, pages, qd)
    assert A.page_time(210e-6, 32, [1, 2]) == [210e-6 / 32, 210e-6 / 64]
    for kwargs, word in [
        (dict(rtt_s=0.0, pages=32, qd=2), "rtt_s"),
        (dict(rtt_s=1e-4, pages=0.5, qd=2), "pages"),
        (dict(rtt_s=1e-4, pages=32, qd=0.5), "qd"),
    ]:
        with pytest.raises(ValueError, match=word):
            A.page_time(**kwargs)


def test_hpe_run_totals_disagree_with_the_budget_as_recorded():
    """The run's own totals: 13 passes of 8,193 requests, 4.82 us per page, 1.36 requests in service."""
    from models.validation import latency_budget as L

    tot = L.run_totals()
    assert tot["requests"] == 13 * 8193 and tot["passes"] == 13
    assert tot["page_time_us"] == pytest.approx(16.42 / 3408288 * 1e6)
    assert tot["in_flight"] == pytest.approx(106509 * 210e-6 / 16.42)
    assert tot["page_time_us"] == pytest.approx(
        210 / 32 / tot["in_flight"]
    )  # one identity, two faces
    rows = L.latency_budget_comparisons()
    assert {r.extra["part"] for r in rows} == set(L.PARTS)
    failing = [r for r in rows if r.fails]
    assert len(failing) == 5 and not any(r.passed for r in failing)
    assert (
        sum(r.kind == "test" for r in failing) == 1
    )  # the others are the notes' own disagreements


def test_new_thesis_and_charrouf_datasets_load():
    st = data.load("thesis2010_interference")
    assert set(st["section"]) == {"5.5", "5.6"}
    conv = data.load("charrouf2008_connections")
    assert conv.groupby("config").size().to_dict() == {"default": 8, "tuned": 4}


def test_every_dataset_is_read_by_a_model_or_said_to_be_context():
    from models.validation import coverage

    assert coverage.uncovered() == []
    for name in data.list_datasets():
        assert coverage.readers(name) or coverage.role(name).startswith("context:"), name

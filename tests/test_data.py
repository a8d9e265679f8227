"""Tests of models.data: every bundled dataset validates, and corrupt copies are refused by name."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models import data
from models.data import DatasetError

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


# ---- corrupt copies are refused, and the message names the file --------------------------------------


@pytest.fixture
def copy_dir(tmp_path):
    for suffix in (".csv", ".json"):
        shutil.copy(data.DATA_DIR / f"{SAMPLE}{suffix}", tmp_path / f"{SAMPLE}{suffix}")
    return tmp_path


def _csv(d: Path) -> Path:
    return d / f"{SAMPLE}.csv"


def _edit_csv(d: Path, fn, fix_hash: bool = True) -> None:
    """Rewrite the copied CSV with ``fn(rows)``; store the new hash so later checks are reached."""
    rows = list(csv.reader(io.StringIO(_csv(d).read_text())))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(fn(rows))
    _csv(d).write_text(buf.getvalue())
    if fix_hash:
        sidecar = d / f"{SAMPLE}.json"
        desc = json.loads(sidecar.read_text())
        desc["hash"] = data.sha256_of(_csv(d))
        sidecar.write_text(json.dumps(desc, indent=2))


def _refused(d: Path, *words: str, path: Path | None = None) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        data.load(SAMPLE, d)
    msg = str(info.value)
    where = path or _csv(d)
    assert msg.startswith(str(where)), msg
    assert info.value.path == where
    for w in words:
        assert w in msg, msg
    assert isinstance(info.value, ValueError)
    return info.value


def test_copy_loads_like_the_original(copy_dir):
    pd.testing.assert_frame_equal(data.load(SAMPLE, copy_dir), data.load(SAMPLE))


def test_changed_byte_is_refused(copy_dir):
    raw = bytearray(_csv(copy_dir).read_bytes())
    i = raw.index(b"76")
    raw[i : i + 2] = b"67"  # same length, different table
    _csv(copy_dir).write_bytes(bytes(raw))
    _refused(copy_dir, "sha256", "does not match", "rehash")


def test_missing_file_is_refused(copy_dir):
    _csv(copy_dir).unlink()
    _refused(copy_dir, "not found")


def test_missing_sidecar_is_refused(copy_dir):
    (copy_dir / f"{SAMPLE}.json").unlink()
    _refused(copy_dir, "descriptor not found", path=copy_dir / f"{SAMPLE}.json")


def test_missing_column_is_refused(copy_dir):
    _edit_csv(copy_dir, lambda rows: [r[:-1] for r in rows])
    _refused(copy_dir, "missing columns ['cycles_pct']")


def test_extra_and_reordered_columns_are_refused(copy_dir):
    _edit_csv(copy_dir, lambda rows: [r + ["x"] for r in rows])
    _refused(copy_dir, "unexpected columns ['x']")
    _edit_csv(copy_dir, lambda rows: [[r[1], r[0]] + r[2:-1] for r in rows])
    _refused(copy_dir, "different order")


def test_wrong_type_is_refused(copy_dir):
    def bad(rows):
        rows[3][1] = "three"
        return rows

    _edit_csv(copy_dir, bad)
    _refused(copy_dir, "line 4", "'queue_depth'", "'three' is not an integer")


def test_fraction_in_integer_column_is_refused(copy_dir):
    def bad(rows):
        rows[2][2] = "1.5"
        return rows

    _edit_csv(copy_dir, bad)
    _refused(copy_dir, "line 3", "not an integer")


def test_duplicate_key_is_refused(copy_dir):
    _edit_csv(copy_dir, lambda rows: rows + [rows[5]])
    _refused(copy_dir, "duplicate primary key", f"lines 6 and {len(data.load(SAMPLE)) + 2}")


def test_constraints_are_enforced(copy_dir):
    cases = [
        (3, "-1", "below the minimum 0"),
        (3, "101", "above the maximum 100"),
        (3, "", "required"),
        (0, "Cork", "not one of"),
    ]
    original = _csv(copy_dir).read_text()
    for col, value, words in cases:
        _csv(copy_dir).write_text(original)

        def bad(rows, col=col, value=value):
            rows[1][col] = value
            return rows

        _edit_csv(copy_dir, bad)
        _refused(copy_dir, "line 2", words)


def test_short_row_and_empty_file_are_refused(copy_dir):
    original = _csv(copy_dir).read_text()
    _edit_csv(copy_dir, lambda rows: rows[:2] + [rows[2][:2]] + rows[3:])
    _refused(copy_dir, "line 3", "2 values, expected 4")
    _csv(copy_dir).write_text(original.splitlines()[0] + "\n")
    _edit_csv(copy_dir, lambda rows: rows)
    _refused(copy_dir, "no data rows")


def test_non_finite_number_is_refused(copy_dir):
    def bad(rows):
        rows[1][3] = "nan"
        return rows

    _edit_csv(copy_dir, bad)
    _refused(copy_dir, "not a finite number")


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda d: d.pop("sources"), "lacks ['sources']"),
        (lambda d: d.update(profile="data-package"), "profile must be 'tabular-data-resource'"),
        (lambda d: d.update(hash="md5:abc"), "hash must look like"),
        (lambda d: d["schema"]["fields"][0].update(type="text"), "type must be one of"),
        (lambda d: d["schema"]["fields"][3].pop("unit"), "needs a unit"),
        (lambda d: d["schema"].update(primaryKey=["nope"]), "unknown fields ['nope']"),
        (
            lambda d: d["schema"]["fields"][1]["constraints"].update(minimun=0),
            "unknown constraints",
        ),
        (lambda d: d["sources"][0].update(year="2017"), "year must be an integer"),
        (lambda d: d.update(name="other"), "name must be"),
    ],
)
def test_bad_descriptor_is_refused(copy_dir, edit, words):
    sidecar = copy_dir / f"{SAMPLE}.json"
    desc = json.loads(sidecar.read_text())
    edit(desc)
    sidecar.write_text(json.dumps(desc))
    _refused(copy_dir, words, path=sidecar)


def test_invalid_json_is_refused(copy_dir):
    sidecar = copy_dir / f"{SAMPLE}.json"
    sidecar.write_text("{not json")
    _refused(copy_dir, "not valid UTF-8 JSON", path=sidecar)


def test_bad_names_are_refused(copy_dir):
    with pytest.raises(ValueError, match="name must be"):
        data.load("../etc/passwd")
    with pytest.raises(ValueError, match="package descriptor"):
        data.load("datapackage")
    with pytest.raises(DatasetError, match="known datasets: " + SAMPLE):
        data.load("nonexistent", copy_dir)


# ---- maintenance commands ----------------------------------------------------------------------------


def test_rehash_and_datapackage_commands(copy_dir, capsys):
    _edit_csv(copy_dir, lambda rows: rows[:-1], fix_hash=False)
    with pytest.raises(DatasetError, match="sha256"):
        data.load(SAMPLE, copy_dir)
    assert data.main(["--dir", str(copy_dir), "check"]) == 1
    assert data.main(["--dir", str(copy_dir), "rehash", SAMPLE]) == 0
    assert len(data.load(SAMPLE, copy_dir)) == len(data.load(SAMPLE)) - 1
    assert data.main(["--dir", str(copy_dir), "check"]) == 1  # datapackage.json missing
    assert "datapackage" in capsys.readouterr().err
    assert data.main(["--dir", str(copy_dir), "datapackage"]) == 0
    assert data.main(["--dir", str(copy_dir), "check"]) == 0
    # A rehash never hides a table that breaks its schema.
    _edit_csv(copy_dir, lambda rows: rows + [rows[1]], fix_hash=False)
    assert data.main(["--dir", str(copy_dir), "rehash", "--all"]) == 1
    assert "duplicate primary key" in capsys.readouterr().err


def test_citation():
    assert data.citation("butterfield2017_rtt_breakdown") == "D. A. Butterfield (2017)"


# ---- round trip of arbitrary tables -------------------------------------------------------------------


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ints=st.lists(st.integers(0, 10**9), min_size=1, max_size=20, unique=True),
    floats=st.data(),
    words=st.data(),
    flags=st.data(),
)
def test_round_trip(tmp_path, ints, floats, words, flags):
    n = len(ints)
    fl = floats.draw(
        st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=n, max_size=n)
    )
    ws = words.draw(
        st.lists(
            st.text(
                st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]),
                min_size=1,
                max_size=8,
            ),
            min_size=n,
            max_size=n,
        )
    )
    bs = flags.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    d = tmp_path / "rt"
    d.mkdir(exist_ok=True)
    frame = pd.DataFrame(
        {
            "key_bytes": pd.Series(ints, dtype="int64"),
            "x_us": pd.Series(fl, dtype="float64"),
            "label": pd.Series(ws, dtype="object"),
            "flag": pd.Series(bs, dtype="bool"),
        }
    )
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(frame.columns)
    for row in frame.itertuples(index=False):
        w.writerow([row.key_bytes, repr(row.x_us), row.label, "true" if row.flag else "false"])
    (d / "rt.csv").write_text(buf.getvalue(), encoding="utf-8")
    desc = {
        "name": "rt",
        "path": "rt.csv",
        "profile": "tabular-data-resource",
        "format": "csv",
        "encoding": "utf-8",
        "title": "t",
        "description": "d",
        "transcription": "generated",
        "sources": [{"title": "t", "author": "a", "year": 2000, "file": "f", "section": "s"}],
        "hash": data.sha256_of(d / "rt.csv"),
        "schema": {
            "primaryKey": "key_bytes",
            "fields": [
                {"name": "key_bytes", "type": "integer", "unit": "bytes", "description": "k"},
                {"name": "x_us", "type": "number", "unit": "us", "description": "x"},
                {"name": "label", "type": "string", "description": "l"},
                {"name": "flag", "type": "boolean", "description": "f"},
            ],
        },
    }
    (d / "rt.json").write_text(json.dumps(desc), encoding="utf-8")
    got = data.load("rt", d)
    pd.testing.assert_frame_equal(got, frame)
    assert all(math.isfinite(v) for v in got.x_us)


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
    failing = [r.quantity for r in rows if r.kind == "failing"]
    assert len(failing) == 4 and all(not r.passed for r in rows if r.kind == "failing")


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

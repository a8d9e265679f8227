"""Tests of models.data on copies: corrupt files are refused by name, maintenance commands, round trips.

(Split from ``tests/test_data.py``, which checks every bundled dataset as it is.)
"""

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

#: A dataset with every field type but boolean, a composite key, constraints and an enum.
SAMPLE = "butterfield2017_busy_count"


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

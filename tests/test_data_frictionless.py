"""The Frictionless library and models.data agree on every sidecar, and on corrupted copies.

``frictionless`` (pinned in requirements.txt) validates each ``data/<name>.json`` as a tabular data
resource: descriptor, hash, header, types, constraints and primary key.  Every bundled dataset must pass
both checkers.  On corrupted copies both must reject; where the project's checker is stricter than the
Table Schema standard (a table without rows, a non-finite number, a numeric field without a unit, a
boolean written ``1`` or ``0``) it rejects and Frictionless accepts, and those cases are listed here so that
a new disagreement of either kind fails.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import frictionless  # pinned in requirements.txt: CI runs it beside the project's checker
import pytest

from models import data

SAMPLE = "butterfield2017_busy_count"  # socket_option (enum), queue_depth, busy_count, cycles_pct


def _frictionless_ok(sidecar: Path) -> tuple[bool, list[str]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = frictionless.validate(str(sidecar))
    return report.valid, sorted({t for (t,) in report.flatten(["type"])})


def _ours_ok(name: str, folder: Path) -> tuple[bool, str]:
    try:
        data.load(name, folder)
    except data.DatasetError as exc:
        return False, exc.problem
    return True, ""


@pytest.mark.parametrize("name", data.list_datasets())
def test_every_bundled_dataset_passes_both_checkers(name):
    ok, errors = _frictionless_ok(data.DATA_DIR / f"{name}.json")
    assert ok, (name, errors)
    assert _ours_ok(name, data.DATA_DIR) == (True, "")


def test_the_package_descriptor_passes_frictionless():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = frictionless.validate(str(data.DATA_DIR / data.DATAPACKAGE))
    assert report.valid, report.flatten(["resourcePath", "type", "note"])[:5]


# ---- corrupted copies ------------------------------------------------------------------------------


def _cell(row: int, col: int, value: str) -> Callable[[list[list[str]]], list[list[str]]]:
    def edit(rows: list[list[str]]) -> list[list[str]]:
        rows[row][col] = value
        return rows

    return edit


def _copy(tmp_path: Path, edit: Callable | None, fix_hash: bool = True, desc_edit=None) -> Path:
    for suffix in (".csv", ".json"):
        shutil.copy(data.DATA_DIR / f"{SAMPLE}{suffix}", tmp_path / f"{SAMPLE}{suffix}")
    csv_path, sidecar = tmp_path / f"{SAMPLE}.csv", tmp_path / f"{SAMPLE}.json"
    if edit is not None:
        rows = list(csv.reader(io.StringIO(csv_path.read_text())))
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(edit(rows))
        csv_path.write_text(buf.getvalue())
    desc = json.loads(sidecar.read_text())
    if fix_hash:  # so the checks after the hash are reached
        desc["hash"] = data.sha256_of(csv_path)
    if desc_edit is not None:
        desc_edit(desc)
    sidecar.write_text(json.dumps(desc, indent=2))
    return tmp_path


def _flip_byte(rows: list[list[str]]) -> list[list[str]]:
    rows[7][3] = rows[7][3][::-1] if len(rows[7][3]) > 1 else rows[7][3] + "0"
    return rows


#: Corruptions both checkers must reject: (edit of the rows, keep the stale hash?, what Frictionless
#: reports).
BOTH_REJECT = {
    "changed bytes, stale hash": (_flip_byte, False, "hash-count"),
    "word in an integer column": (_cell(3, 1, "three"), True, "type-error"),
    "fraction in an integer column": (_cell(2, 2, "1.5"), True, "type-error"),
    "below the minimum": (_cell(1, 3, "-1"), True, "constraint-error"),
    "above the maximum": (_cell(1, 3, "101"), True, "constraint-error"),
    "required value empty": (_cell(1, 3, ""), True, "constraint-error"),
    "value outside the enum": (_cell(1, 0, "Cork"), True, "constraint-error"),
    "duplicate primary key": (lambda rows: rows + [rows[5]], True, "primary-key"),
    "missing column": (lambda rows: [r[:-1] for r in rows], True, "missing-label"),
    "extra column": (lambda rows: [r + ["x"] for r in rows], True, "extra-label"),
    "columns swapped": (
        lambda rows: [[r[1], r[0]] + r[2:] for r in rows],
        True,
        "incorrect-label",
    ),
    "short row": (lambda rows: rows[:2] + [rows[2][:2]] + rows[3:], True, "missing-cell"),
    "long row": (lambda rows: rows[:2] + [rows[2] + ["9"]] + rows[3:], True, "extra-cell"),
    "NaN where a minimum applies": (_cell(1, 3, "nan"), True, "constraint-error"),
}


@pytest.mark.parametrize("case", sorted(BOTH_REJECT))
def test_a_corrupted_copy_is_rejected_by_both(tmp_path, case):
    edit, fix_hash, kind = BOTH_REJECT[case]
    d = _copy(tmp_path, edit, fix_hash)
    ok, errors = _frictionless_ok(d / f"{SAMPLE}.json")
    assert not ok and kind in errors, errors
    ours, problem = _ours_ok(SAMPLE, d)
    assert not ours, case


def _no_unit(desc: dict) -> None:
    desc["schema"]["fields"][3].pop("unit")


def _no_constraints(desc: dict) -> None:
    desc["schema"]["fields"][3].pop("constraints")


#: Where the project's checker is deliberately stricter than the standard: it rejects, Frictionless
#: accepts.  (A new case belongs here only with its reason in data/README.md.)
ONLY_OURS_REJECT = {
    "no data rows": (lambda rows: rows[:1], None, "no data rows"),
    "numeric field without a unit": (None, _no_unit, "needs a unit"),
    "non-finite number in an unconstrained column": (
        _cell(1, 3, "inf"),
        _no_constraints,
        "not a finite number",
    ),
}


@pytest.mark.parametrize("case", sorted(ONLY_OURS_REJECT))
def test_where_the_project_is_stricter(tmp_path, case):
    edit, desc_edit, words = ONLY_OURS_REJECT[case]
    d = _copy(tmp_path, edit, True, desc_edit)
    assert _frictionless_ok(d / f"{SAMPLE}.json")[0], case
    ours, problem = _ours_ok(SAMPLE, d)
    assert not ours and words in problem, problem


def test_the_untouched_copy_passes_both(tmp_path):
    d = _copy(tmp_path, None)
    assert _frictionless_ok(d / f"{SAMPLE}.json") == (True, [])
    assert _ours_ok(SAMPLE, d) == (True, "")


def test_single_cell_corruptions_never_pass_ours_when_frictionless_rejects(tmp_path):
    """Every cell of the sample, replaced in turn by values of the wrong kind: whenever Frictionless
    rejects the copy, so does models.data (the project's checker is never the looser one)."""
    rows = list(csv.reader(io.StringIO((data.DATA_DIR / f"{SAMPLE}.csv").read_text())))
    tried = 0
    for r in (1, len(rows) // 2, len(rows) - 1):
        for c in range(len(rows[0])):
            for value in ("", "x", "-5", "1e3", "2.5", "TCP_NODELAY", "true"):
                d = tmp_path / f"{r}-{c}-{tried}"
                d.mkdir()
                _copy(d, _cell(r, c, value))
                fl_ok, _ = _frictionless_ok(d / f"{SAMPLE}.json")
                ours, problem = _ours_ok(SAMPLE, d)
                tried += 1
                if not fl_ok:
                    assert not ours, (r, c, value)
    assert tried >= 60


def test_a_boolean_written_as_0_or_1_is_only_refused_by_the_project(tmp_path):
    name = "kernel6_busy_counts"  # or_more: boolean
    for suffix in (".csv", ".json"):
        shutil.copy(data.DATA_DIR / f"{name}{suffix}", tmp_path / f"{name}{suffix}")
    csv_path = tmp_path / f"{name}.csv"
    rows = list(csv.reader(io.StringIO(csv_path.read_text())))
    col = rows[0].index("or_more")
    rows[1][col] = "1" if rows[1][col] == "true" else "0"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    csv_path.write_text(buf.getvalue())
    desc = json.loads((tmp_path / f"{name}.json").read_text())
    desc["hash"] = data.sha256_of(csv_path)
    (tmp_path / f"{name}.json").write_text(json.dumps(desc))
    assert _frictionless_ok(tmp_path / f"{name}.json")[0]
    ours, problem = _ours_ok(name, tmp_path)
    assert not ours and "is not a boolean" in problem

"""The maintenance command line of models.data: rehash checks before it writes, and pipes close quietly.

``rehash`` validates every named CSV against its schema first and writes nothing for a broken table, a
name that is not a dataset name, or a sidecar or CSV that resolves outside the data folder.
``list | head -1`` ends without a BrokenPipeError traceback.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from models import data
from models.data import DatasetError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "butterfield2017_busy_count"
OTHER = "butterfield2017_rtt_breakdown"


def _copy(names: list[str], dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        for suffix in (".csv", ".json"):
            shutil.copy(data.DATA_DIR / f"{name}{suffix}", dest / f"{name}{suffix}")
    return dest


def _edit(csv_path: Path, fn) -> None:
    """Rewrite a CSV with ``fn(rows)``, leaving its sidecar's hash stale."""
    rows = list(csv.reader(io.StringIO(csv_path.read_text())))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(fn(rows))
    csv_path.write_text(buf.getvalue())


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _bad_type(rows: list[list[str]]) -> list[list[str]]:
    rows[3][1] = "three"  # queue_depth is an integer column
    return rows


def test_rehash_refuses_a_table_broken_against_its_schema(tmp_path, capsys):
    d = _copy([SAMPLE], tmp_path / "d")
    _edit(d / f"{SAMPLE}.csv", _bad_type)
    before = _snapshot(d)
    with pytest.raises(DatasetError, match="'three' is not an integer") as info:
        data.rehash(SAMPLE, d)
    assert info.value.path == d / f"{SAMPLE}.csv"
    assert _snapshot(d) == before  # the sidecar keeps its old hash
    assert data.main(["--dir", str(d), "rehash", SAMPLE]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an integer" in err and "no sidecar was written" in err
    assert _snapshot(d) == before


def test_rehash_all_writes_nothing_when_one_table_is_broken(tmp_path, capsys):
    d = _copy([SAMPLE, OTHER], tmp_path / "d")
    _edit(d / f"{OTHER}.csv", lambda rows: rows[:-1])  # a valid edit: drop the last row
    _edit(d / f"{SAMPLE}.csv", lambda rows: rows + [rows[1]])  # a duplicate primary key
    before = _snapshot(d)
    assert data.main(["--dir", str(d), "rehash", "--all"]) == 1
    assert "duplicate primary key" in capsys.readouterr().err
    assert _snapshot(d) == before  # not even the valid table's sidecar
    # once the broken one is repaired, both are stored
    _edit(d / f"{SAMPLE}.csv", lambda rows: rows[:-1])
    assert data.main(["--dir", str(d), "rehash", "--all"]) == 0
    for name in (SAMPLE, OTHER):
        assert data.describe(name, d)["hash"] == data.sha256_of(d / f"{name}.csv")
        assert len(data.load(name, d)) > 0


def test_rehash_keeps_the_sidecar_but_its_hash(tmp_path):
    d = _copy([SAMPLE], tmp_path / "d")
    old = json.loads((d / f"{SAMPLE}.json").read_text())
    mode = (d / f"{SAMPLE}.json").stat().st_mode & 0o777
    _edit(d / f"{SAMPLE}.csv", lambda rows: rows[:-1])
    new_hash = data.rehash(SAMPLE, d)
    new = json.loads((d / f"{SAMPLE}.json").read_text())
    assert new_hash == new["hash"] != old["hash"]
    assert {k: v for k, v in new.items() if k != "hash"} == {
        k: v for k, v in old.items() if k != "hash"
    }
    assert (d / f"{SAMPLE}.json").stat().st_mode & 0o777 == mode
    assert sorted(p.name for p in d.iterdir()) == [f"{SAMPLE}.csv", f"{SAMPLE}.json"]


@pytest.mark.parametrize("name", ["../d/" + SAMPLE, "/etc/passwd", "..", "datapackage", ""])
def test_rehash_refuses_a_name_that_is_not_a_dataset_name(tmp_path, capsys, name):
    d = _copy([SAMPLE], tmp_path / "d")
    _edit(d / f"{SAMPLE}.csv", lambda rows: rows[:-1])
    before = _snapshot(d)
    with pytest.raises(ValueError, match="name"):
        data.rehash(name, d)
    assert data.main(["--dir", str(d), "rehash", name]) == 1
    assert "name" in capsys.readouterr().err
    assert _snapshot(d) == before


@pytest.mark.parametrize("linked", [".json", ".csv"])
def test_rehash_refuses_files_that_resolve_outside_the_data_folder(tmp_path, capsys, linked):
    """A sidecar or CSV that is a link to a file elsewhere is not rewritten through the link."""
    outside = _copy([SAMPLE], tmp_path / "outside")
    d = _copy([SAMPLE], tmp_path / "d")
    _edit(outside / f"{SAMPLE}.csv", lambda rows: rows[:-1])
    _edit(d / f"{SAMPLE}.csv", lambda rows: rows[:-1])
    (d / f"{SAMPLE}{linked}").unlink()
    (d / f"{SAMPLE}{linked}").symlink_to(outside / f"{SAMPLE}{linked}")
    before = _snapshot(outside), _snapshot(d)
    with pytest.raises(DatasetError, match="outside the data folder"):
        data.rehash(SAMPLE, d)
    assert data.main(["--dir", str(d), "rehash", "--all"]) == 1
    assert "outside the data folder" in capsys.readouterr().err
    assert (_snapshot(outside), _snapshot(d)) == before


def _bash(command: str, unbuffered: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:  # every line written at once: the pipe closes between two writes
        env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run(
        ["/bin/bash", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("unbuffered", [False, True])
def test_list_into_head_ends_quietly(unbuffered):
    res = _bash(
        f"{sys.executable} -m models.data list | head -1; echo ${{PIPESTATUS[0]}}", unbuffered
    )
    assert res.stderr == "", res.stderr  # no BrokenPipeError traceback, no "Exception ignored"
    first, status = res.stdout.splitlines()
    assert first.split()[0] == data.list_datasets()[0]
    assert status in ("0", "141")  # 141 if the reader left before the last write


@pytest.mark.timeout(300)
@pytest.mark.parametrize("unbuffered", [False, True])
def test_list_into_a_reader_that_reads_nothing_ends_quietly(unbuffered):
    res = _bash(
        f"{sys.executable} -m models.data list | true; echo ${{PIPESTATUS[0]}}", unbuffered
    )
    assert res.stderr == "", res.stderr
    assert res.stdout.strip() == "141"  # 128 + SIGPIPE, as a shell reports a writer SIGPIPE ended


def test_list_to_a_reader_that_keeps_reading_exits_0():
    res = subprocess.run(
        [sys.executable, "-m", "models.data", "list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0 and res.stderr == ""
    assert len(res.stdout.splitlines()) == len(data.list_datasets())

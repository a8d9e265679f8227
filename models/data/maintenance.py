"""Keeping ``data/`` consistent after an edit: store a CSV's new hash, regenerate ``datapackage.json``.

:func:`rehash_all` validates every named CSV against its schema *before* writing anything, so a
table that breaks its schema never gets a fresh hash, and it writes only sidecars that are inside
the data folder (a sidecar or CSV that is a link to a file elsewhere is refused).  Sidecars and
``datapackage.json`` are replaced atomically (written beside, then renamed over).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .descriptor import (
    DATAPACKAGE,
    DatasetError,
    check_name,
    data_dir,
    describe,
    list_datasets,
    read_descriptor,
)
from .table import check_table

__all__ = [
    "rehash",
    "rehash_all",
    "datapackage",
    "write_datapackage",
    "check_datapackage",
    "table_schema",
    "tool_sidecar",
]


def table_schema(
    fields: Iterable[tuple[str, str, str | None, str]],
    key: list[str],
    optional: Iterable[str] = (),
) -> dict:
    """A sidecar's Table Schema from ``(name, type, unit or None, description)`` per column,
    every column required but those named in ``optional`` (a tool that measures a quantity on
    some rows only), and the primary ``key`` (as a measuring tool writes it).

    >>> s = table_schema([("n", "integer", "runs", "a count"), ("x", "number", "", "")], ["n"],
    ...                  optional=["x"])
    >>> s["fields"][0]["unit"], [f["constraints"]["required"] for f in s["fields"]]
    ('runs', [True, False])
    >>> table_schema([("n", "integer", "", "")], ["n"], optional=["m"])
    Traceback (most recent call last):
    ...
    ValueError: optional names columns the table does not have: ['m']
    """
    fields = list(fields)
    free = set(optional)
    unknown = sorted(free - {name for name, *_ in fields})
    if unknown:
        raise ValueError(f"optional names columns the table does not have: {unknown}")
    return {
        "fields": [
            {
                "name": name,
                "type": typ,
                "description": desc,
                **({"unit": unit} if unit else {}),
                "constraints": {"required": name not in free},
            }
            for name, typ, unit, desc in fields
        ],
        "primaryKey": list(key),
    }


def tool_sidecar(
    csv_path: Path,
    fields: Iterable[tuple[str, str, str | None, str]],
    key: list[str],
    *,
    title: str,
    description: str,
    source: tuple[str, str, str],
    year: int,
    transcription: str,
    measurement: dict,
    optional: Iterable[str] = (),
) -> dict:
    """The sidecar a measuring tool writes beside the CSV it wrote (``csv_path``): its
    :func:`table_schema` (``optional`` the columns that may be empty), the CSV's hash, and its
    provenance: ``source`` is (title, the tool's file, the section: its command line),
    ``transcription`` how and where it was measured, ``measurement`` the run's own records.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = Path(d) / "t.csv"
    ...     _ = path.write_text("n\\n1\\n")
    ...     meta = tool_sidecar(path, [("n", "integer", "", "a count")], ["n"], title="T",
    ...                         description="D", source=("S", "tools/t.py", "command line: tools/t.py --x"),
    ...                         year=2026, transcription="measured", measurement={})
    >>> meta["name"], meta["path"], meta["sources"][0]["section"]
    ('t', 't.csv', 'command line: tools/t.py --x')
    """
    from .descriptor import sha256_of

    src_title, src_file, section = source
    return {
        "name": csv_path.stem,
        "path": csv_path.name,
        "profile": "tabular-data-resource",
        "format": "csv",
        "encoding": "utf-8",
        "title": title,
        "description": description,
        "sources": [
            {
                "title": src_title,
                "author": "Queue Depth authors",
                "year": year,
                "file": src_file,
                "section": section,
            }
        ],
        "transcription": transcription,
        "hash": sha256_of(csv_path),
        "schema": table_schema(fields, key, optional),
        "measurement": measurement,
    }


def dump(obj: dict) -> str:
    """The JSON text every sidecar and ``datapackage.json`` is written as."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) by renaming a complete file over it; keep its mode."""
    mode = (path.stat().st_mode & 0o777) if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _inside(folder: Path, path: Path) -> Path:
    """``path`` if it resolves (links followed) to a file directly inside ``folder``."""
    if path.resolve().parent != folder.resolve():
        raise DatasetError(
            path,
            f"resolves to {path.resolve()}, outside the data folder {folder.resolve()}; "
            "rehash writes only there",
        )
    return path


def rehash_all(names: Iterable[str], directory: Path | str | None = None) -> dict[str, str]:
    """Store each named CSV's current SHA-256 in its sidecar, after every one of them validates.

    Every name is checked first: a dataset name (no folder part), its sidecar and CSV inside the
    data folder, the descriptor well formed, and the CSV valid against the schema (header, types,
    constraints, keys).  Only when all pass are the sidecars written (each atomically, other keys
    untouched, and only when the hash changed).  Returns ``{name: "sha256:<hex>"}``.

    Raises
    ------
    DatasetError
        The first problem found, naming its file; nothing has been written.
    ValueError
        A name is not a dataset name; nothing has been written.
    """
    d = data_dir(directory)
    planned: list[tuple[str, Path, dict, str]] = []
    for name in names:
        check_name(name)
        sidecar = _inside(d, d / f"{name}.json")
        desc, _ = read_descriptor(name, d)
        csv_path = _inside(d, d / desc["path"])
        if not csv_path.is_file():
            raise DatasetError(csv_path, "file not found")
        raw = csv_path.read_bytes()  # validated and hashed from the same bytes
        check_table(desc, csv_path, raw)
        planned.append((name, sidecar, desc, "sha256:" + hashlib.sha256(raw).hexdigest()))
    out = {}
    for name, sidecar, desc, new in planned:
        if desc["hash"] != new:
            desc["hash"] = new
            _write_atomic(sidecar, dump(desc))
        out[name] = new
    return out


def rehash(name: str, directory: Path | str | None = None) -> str:
    """Validate ``name``'s CSV against its schema, then store its SHA-256 in the sidecar.

    See :func:`rehash_all`; a table that breaks its schema is refused and nothing is written.
    """
    return rehash_all([name], directory)[name]


def datapackage(directory: Path | str | None = None) -> dict:
    """The package descriptor: every dataset's sidecar, in name order, under ``resources``."""
    return {
        "name": "queue-depth-data",
        "title": "Queue Depth: measurements transcribed from the book's sources",
        "profile": "data-package",
        "description": "Generated by `python -m models.data datapackage` from the data/*.json "
        "sidecars; do not edit by hand.",
        "resources": [describe(n, directory) for n in list_datasets(directory)],
    }


def write_datapackage(directory: Path | str | None = None) -> Path:
    """Regenerate ``datapackage.json`` in the data folder and return its path."""
    path = data_dir(directory) / DATAPACKAGE
    _write_atomic(path, dump(datapackage(directory)))
    return path


def check_datapackage(directory: Path | str | None = None) -> None:
    """Raise :class:`DatasetError` unless ``datapackage.json`` is what :func:`datapackage` makes."""
    path = data_dir(directory) / DATAPACKAGE
    if not path.is_file():
        raise DatasetError(path, "missing; run: python -m models.data datapackage")
    if path.read_text(encoding="utf-8") != dump(datapackage(directory)):
        raise DatasetError(
            path, "out of date with the sidecars; run: python -m models.data datapackage"
        )

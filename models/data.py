"""Bundled measurement datasets: load a CSV after checking it against its Frictionless sidecar.

Every dataset in ``data/`` is a pair of files:

``data/<name>.csv``
    A tidy table, one observation per row, units in the column names (``_us``, ``_ms``, ``_s``,
    ``_bytes``, ``_KBps``, ``_MBps``, ``_pct``, ``_iops`` ...).
``data/<name>.json``
    A Frictionless *tabular data resource* descriptor: where the numbers come from (``sources``,
    ``transcription``), the SHA-256 of the CSV bytes (``hash``) and the table schema (``schema``).

:func:`load` refuses a dataset whose CSV is missing, whose bytes do not match the recorded hash, whose
header differs from the schema, or whose values break a type, a constraint or the primary key; the error
(:class:`DatasetError`, a ``ValueError``) names the file and the problem.

Command line (run from the repository root)::

    python -m models.data list                 # names, rows, titles
    python -m models.data check                # validate every dataset and datapackage.json
    python -m models.data rehash NAME [NAME..] # store the CSV's new sha256 in its sidecar
    python -m models.data rehash --all
    python -m models.data datapackage          # regenerate data/datapackage.json

>>> df = load("butterfield2017_rtt_breakdown")
>>> float(df.set_index("quantity").loc["RTT", "value_us"])
275.7
"""

from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import io
import json
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = [
    "DATA_DIR",
    "DatasetError",
    "data_dir",
    "list_datasets",
    "describe",
    "load",
    "validate",
    "sha256_of",
    "rehash",
    "datapackage",
    "write_datapackage",
    "check_datapackage",
    "citation",
    "main",
]

#: The repository's ``data/`` folder (override with the ``QUEUE_DEPTH_DATA`` environment variable).
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

#: File name of the generated package descriptor listing every resource.
DATAPACKAGE = "datapackage.json"

_FIELD_TYPES = ("string", "number", "integer", "boolean")
_REQUIRED_KEYS = (
    "name",
    "path",
    "profile",
    "format",
    "encoding",
    "title",
    "description",
    "sources",
    "transcription",
    "hash",
    "schema",
)
_SOURCE_KEYS = ("title", "author", "year", "file", "section")
_KNOWN_CONSTRAINTS = {
    "required",
    "unique",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
}
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_INTEGER_RE = re.compile(r"^[+-]?\d+$")
_HASH_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class DatasetError(ValueError):
    """A dataset file is missing, corrupt, or does not match its descriptor.

    The message starts with the offending file's path; ``path`` holds it too.
    """

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


# --------------------------------------------------------------------------------------------------
# Locating files
# --------------------------------------------------------------------------------------------------


def data_dir(directory: Path | str | None = None) -> Path:
    """The data folder: ``directory`` if given, else ``$QUEUE_DEPTH_DATA``, else :data:`DATA_DIR`."""
    if directory is not None:
        return Path(directory)
    env = os.environ.get("QUEUE_DEPTH_DATA")
    return Path(env) if env else DATA_DIR


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"name must be a dataset name like 'butterfield2017_busy_count', got {name!r}"
        )
    if name == Path(DATAPACKAGE).stem:
        raise ValueError(f"name {name!r} is the package descriptor, not a dataset")
    return name


def list_datasets(directory: Path | str | None = None) -> list[str]:
    """Names of every dataset in the data folder (every ``*.json`` sidecar except ``datapackage.json``)."""
    d = data_dir(directory)
    if not d.is_dir():
        raise DatasetError(d, "data folder not found")
    return sorted(p.stem for p in d.glob("*.json") if p.name != DATAPACKAGE)


def sha256_of(path: Path | str) -> str:
    """``"sha256:<hex>"`` of a file's bytes."""
    p = Path(path)
    if not p.is_file():
        raise DatasetError(p, "file not found")
    return "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest()


# --------------------------------------------------------------------------------------------------
# The descriptor
# --------------------------------------------------------------------------------------------------


def _read_descriptor(name: str, directory: Path | str | None) -> tuple[dict, Path]:
    d = data_dir(directory)
    sidecar = d / f"{_check_name(name)}.json"
    if not sidecar.is_file():
        known = list_datasets(d) if d.is_dir() else []
        raise DatasetError(
            sidecar, f"descriptor not found (known datasets: {', '.join(known) or 'none'})"
        )
    try:
        desc = json.loads(sidecar.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(sidecar, f"not valid UTF-8 JSON: {exc}") from None
    _check_descriptor(desc, name, sidecar)
    return desc, sidecar


def _check_descriptor(desc: Any, name: str, sidecar: Path) -> None:
    """Check the sidecar's own structure (not the CSV): keys, sources, hash format, schema."""
    if not isinstance(desc, dict):
        raise DatasetError(sidecar, "descriptor must be a JSON object")
    missing = [k for k in _REQUIRED_KEYS if k not in desc]
    if missing:
        raise DatasetError(sidecar, f"descriptor lacks {missing}")
    expect = {
        "name": name,
        "path": f"{name}.csv",
        "profile": "tabular-data-resource",
        "format": "csv",
        "encoding": "utf-8",
    }
    for key, value in expect.items():
        if desc[key] != value:
            raise DatasetError(sidecar, f"{key} must be {value!r}, got {desc[key]!r}")
    for key in ("title", "description", "transcription"):
        if not isinstance(desc[key], str) or not desc[key].strip():
            raise DatasetError(sidecar, f"{key} must be a non-empty string")
    sources = desc["sources"]
    if not isinstance(sources, list) or not sources:
        raise DatasetError(sidecar, "sources must be a non-empty list")
    for i, src in enumerate(sources):
        if not isinstance(src, dict):
            raise DatasetError(sidecar, f"sources[{i}] must be an object")
        lacking = [k for k in _SOURCE_KEYS if k not in src]
        if lacking:
            raise DatasetError(sidecar, f"sources[{i}] lacks {lacking}")
        if not isinstance(src["year"], int):
            raise DatasetError(
                sidecar, f"sources[{i}].year must be an integer, got {src['year']!r}"
            )
    if not isinstance(desc["hash"], str) or not _HASH_RE.match(desc["hash"]):
        raise DatasetError(
            sidecar, f"hash must look like 'sha256:<64 hex digits>', got {desc['hash']!r}"
        )
    _check_schema(desc["schema"], sidecar)


def _check_schema(schema: Any, sidecar: Path) -> None:
    if (
        not isinstance(schema, dict)
        or not isinstance(schema.get("fields"), list)
        or not schema["fields"]
    ):
        raise DatasetError(sidecar, "schema.fields must be a non-empty list")
    names = []
    for i, f in enumerate(schema["fields"]):
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"]:
            raise DatasetError(sidecar, f"schema.fields[{i}] needs a name")
        where = f"schema field {f['name']!r}"
        if f.get("type") not in _FIELD_TYPES:
            raise DatasetError(
                sidecar, f"{where}: type must be one of {_FIELD_TYPES}, got {f.get('type')!r}"
            )
        if not isinstance(f.get("description"), str) or not f["description"].strip():
            raise DatasetError(sidecar, f"{where}: needs a description")
        if f["type"] in ("number", "integer") and not (
            isinstance(f.get("unit"), str) and f["unit"].strip()
        ):
            raise DatasetError(sidecar, f"{where}: a numeric field needs a unit")
        cons = f.get("constraints", {})
        if not isinstance(cons, dict):
            raise DatasetError(sidecar, f"{where}: constraints must be an object")
        unknown = set(cons) - _KNOWN_CONSTRAINTS
        if unknown:
            raise DatasetError(sidecar, f"{where}: unknown constraints {sorted(unknown)}")
        if "enum" in cons and (not isinstance(cons["enum"], list) or not cons["enum"]):
            raise DatasetError(sidecar, f"{where}: enum must be a non-empty list")
        names.append(f["name"])
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DatasetError(sidecar, f"schema names fields more than once: {dup}")
    pk = schema.get("primaryKey")
    if pk is None:
        raise DatasetError(sidecar, "schema.primaryKey is required")
    pk = [pk] if isinstance(pk, str) else pk
    if not isinstance(pk, list) or not pk or not all(isinstance(k, str) for k in pk):
        raise DatasetError(
            sidecar, f"schema.primaryKey must be a field name or a list of them, got {pk!r}"
        )
    unknown_pk = [k for k in pk if k not in names]
    if unknown_pk:
        raise DatasetError(sidecar, f"schema.primaryKey names unknown fields {unknown_pk}")


def _primary_key(schema: dict) -> list[str]:
    pk = schema["primaryKey"]
    return [pk] if isinstance(pk, str) else list(pk)


def describe(name: str, directory: Path | str | None = None) -> dict:
    """The dataset's descriptor (a copy), after checking its structure.

    Keys: ``name``, ``title``, ``description``, ``sources``, ``transcription``, ``hash``, ``schema`` ...
    """
    desc, _ = _read_descriptor(name, directory)
    return copy.deepcopy(desc)


def citation(name: str, directory: Path | str | None = None) -> str:
    """Short citation of a dataset's sources: ``"Butterfield (2017)"``."""
    return _citation(describe(name, directory))


def _citation(desc: dict) -> str:
    """Each distinct author and year of the sources, in order."""
    return "; ".join(dict.fromkeys(f"{s['author']} ({s['year']})" for s in desc["sources"]))


# --------------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------------


def _parse_cell(text: str, field: dict, where: str, csv_path: Path) -> Any:
    """Convert one CSV cell to a Python value of the field's type (``None`` when empty)."""
    if text == "":
        return None
    kind = field["type"]
    if kind == "string":
        return text
    if kind == "integer":
        if not _INTEGER_RE.match(text):
            raise DatasetError(csv_path, f"{where}: {text!r} is not an integer")
        return int(text)
    if kind == "number":
        try:
            value = float(text)
        except ValueError:
            raise DatasetError(csv_path, f"{where}: {text!r} is not a number") from None
        if not math.isfinite(value):
            raise DatasetError(csv_path, f"{where}: {text!r} is not a finite number")
        return value
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise DatasetError(csv_path, f"{where}: {text!r} is not a boolean (true/false)")


def _check_constraints(value: Any, text: str, field: dict, where: str, csv_path: Path) -> None:
    cons = field.get("constraints", {})
    if value is None:
        if cons.get("required"):
            raise DatasetError(csv_path, f"{where}: value is required but empty")
        return
    if "enum" in cons:
        allowed = [str(a) if field["type"] == "string" else a for a in cons["enum"]]
        if value not in allowed:
            raise DatasetError(csv_path, f"{where}: {text!r} is not one of {cons['enum']}")
    if field["type"] in ("number", "integer"):
        checks = (
            ("minimum", lambda v, b: v >= b, "below the minimum"),
            ("maximum", lambda v, b: v <= b, "above the maximum"),
            ("exclusiveMinimum", lambda v, b: v > b, "not above the exclusive minimum"),
            ("exclusiveMaximum", lambda v, b: v < b, "not below the exclusive maximum"),
        )
        for key, ok, words in checks:
            if key in cons and not ok(value, cons[key]):
                raise DatasetError(csv_path, f"{where}: {text} is {words} {cons[key]}")
    if field["type"] == "string":
        if "pattern" in cons and not re.fullmatch(cons["pattern"], value):
            raise DatasetError(
                csv_path, f"{where}: {text!r} does not match pattern {cons['pattern']!r}"
            )
        if "minLength" in cons and len(value) < cons["minLength"]:
            raise DatasetError(
                csv_path, f"{where}: {text!r} is shorter than {cons['minLength']} characters"
            )
        if "maxLength" in cons and len(value) > cons["maxLength"]:
            raise DatasetError(
                csv_path, f"{where}: {text!r} is longer than {cons['maxLength']} characters"
            )


def _column(values: list, kind: str) -> pd.Series:
    """A pandas column of the field's type; integer and boolean columns with gaps become nullable."""
    has_gap = any(v is None for v in values)
    if kind == "number":
        return pd.Series([math.nan if v is None else v for v in values], dtype="float64")
    if kind == "integer":
        return pd.Series(values, dtype="Int64" if has_gap else "int64")
    if kind == "boolean":
        return pd.Series(values, dtype="boolean" if has_gap else "bool")
    return pd.Series(values, dtype="object")


def _read_table(desc: dict, csv_path: Path) -> pd.DataFrame:
    raw = csv_path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(csv_path, f"not valid UTF-8: {exc}") from None
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows:
        raise DatasetError(csv_path, "file is empty (no header)")
    header, body = rows[0], rows[1:]
    fields = desc["schema"]["fields"]
    expected = [f["name"] for f in fields]
    if header != expected:
        missing = [c for c in expected if c not in header]
        extra = [c for c in header if c not in expected]
        detail = []
        if missing:
            detail.append(f"missing columns {missing}")
        if extra:
            detail.append(f"unexpected columns {extra}")
        if not detail:
            detail.append("columns in a different order")
        raise DatasetError(
            csv_path, f"header {header} does not match the schema {expected}: " + "; ".join(detail)
        )
    if not body:
        raise DatasetError(csv_path, "no data rows")
    columns: dict[str, list] = {f["name"]: [] for f in fields}
    for i, row in enumerate(body):
        line = i + 2  # 1-based file line; line 1 is the header
        if len(row) != len(fields):
            raise DatasetError(csv_path, f"line {line}: {len(row)} values, expected {len(fields)}")
        for f, cell in zip(fields, row):
            where = f"line {line}, column {f['name']!r}"
            value = _parse_cell(cell, f, where, csv_path)
            _check_constraints(value, cell, f, where, csv_path)
            columns[f["name"]].append(value)
    for f in fields:
        if f.get("constraints", {}).get("unique"):
            seen: dict[Any, int] = {}
            for i, v in enumerate(columns[f["name"]]):
                if v is None:
                    continue
                if v in seen:
                    raise DatasetError(
                        csv_path,
                        f"column {f['name']!r}: value {v!r} on lines {seen[v]} and {i + 2} "
                        "must be unique",
                    )
                seen[v] = i + 2
    pk = _primary_key(desc["schema"])
    seen_keys: dict[tuple, int] = {}
    for i in range(len(body)):
        key = tuple(columns[k][i] for k in pk)
        if any(v is None for v in key):
            raise DatasetError(csv_path, f"line {i + 2}: primary key {pk} has an empty value")
        if key in seen_keys:
            raise DatasetError(
                csv_path,
                f"duplicate primary key {pk} = {key} on lines {seen_keys[key]} and {i + 2}",
            )
        seen_keys[key] = i + 2
    return pd.DataFrame({f["name"]: _column(columns[f["name"]], f["type"]) for f in fields})


def load(name: str, directory: Path | str | None = None) -> pd.DataFrame:
    """Load dataset ``name`` as a DataFrame after validating it against its sidecar descriptor.

    Checks, in order: the descriptor's structure; the CSV exists; its SHA-256 equals ``hash``; the header
    equals the schema's field names (same order); every value parses as its field's type and meets the
    field's constraints (``required``, ``unique``, ``minimum``/``maximum``, ``enum``, ``pattern`` ...);
    the primary key is complete and unique.

    Returns
    -------
    pandas.DataFrame
        Columns typed from the schema (``number`` -> float64, ``integer`` -> int64, or nullable Int64 if
        a value is empty, ``boolean`` -> bool, ``string`` -> object).  ``df.attrs`` holds ``name``,
        ``title``, ``citation`` and ``units`` (column -> unit).

    Raises
    ------
    DatasetError
        A ``ValueError`` whose message starts with the path of the file at fault.
    """
    desc, _sidecar = _read_descriptor(name, directory)
    csv_path = data_dir(directory) / desc["path"]
    actual = sha256_of(csv_path)
    if actual != desc["hash"]:
        raise DatasetError(
            csv_path,
            f"content hash {actual} does not match the descriptor's {desc['hash']} "
            f"(if the edit was intended: python -m models.data rehash {name})",
        )
    df = _read_table(desc, csv_path)
    df.attrs.update(
        name=name,
        title=desc["title"],
        citation=_citation(desc),
        units={f["name"]: f.get("unit", "") for f in desc["schema"]["fields"]},
    )
    return df


def validate(directory: Path | str | None = None) -> dict[str, int]:
    """Load every dataset (raising on the first bad one) and return ``{name: row count}``."""
    return {name: len(load(name, directory)) for name in list_datasets(directory)}


# --------------------------------------------------------------------------------------------------
# Maintenance: hashes and the package descriptor
# --------------------------------------------------------------------------------------------------


def _dump(obj: dict) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def rehash(name: str, directory: Path | str | None = None) -> str:
    """Store the CSV's current SHA-256 in the sidecar (other keys untouched) and return it.

    The table is then validated, so a rehash never hides a table that breaks its schema.
    """
    d = data_dir(directory)
    sidecar = d / f"{_check_name(name)}.json"
    if not sidecar.is_file():
        raise DatasetError(sidecar, "descriptor not found")
    desc = json.loads(sidecar.read_text(encoding="utf-8"))
    new = sha256_of(d / desc.get("path", f"{name}.csv"))
    if desc.get("hash") != new:
        desc["hash"] = new
        sidecar.write_text(_dump(desc), encoding="utf-8")
    load(name, d)
    return new


def datapackage(directory: Path | str | None = None) -> dict:
    """The package descriptor: every dataset's sidecar, in name order, under ``resources``."""
    return {
        "name": "queue-depth-data",
        "title": "Queue Depth: measurements transcribed from the book's sources",
        "profile": "data-package",
        "description": "Generated by `python -m models.data datapackage` from the data/*.json sidecars; "
        "do not edit by hand.",
        "resources": [describe(n, directory) for n in list_datasets(directory)],
    }


def write_datapackage(directory: Path | str | None = None) -> Path:
    """Regenerate ``datapackage.json`` in the data folder and return its path."""
    path = data_dir(directory) / DATAPACKAGE
    path.write_text(_dump(datapackage(directory)), encoding="utf-8")
    return path


def check_datapackage(directory: Path | str | None = None) -> None:
    """Raise :class:`DatasetError` unless ``datapackage.json`` equals what :func:`datapackage` generates."""
    path = data_dir(directory) / DATAPACKAGE
    if not path.is_file():
        raise DatasetError(path, "missing; run: python -m models.data datapackage")
    if path.read_text(encoding="utf-8") != _dump(datapackage(directory)):
        raise DatasetError(
            path, "out of date with the sidecars; run: python -m models.data datapackage"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m models.data", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--dir", default=None, help="data folder (default: the repository's data/)"
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="list datasets with row counts")
    sub.add_parser("check", help="validate every dataset and datapackage.json")
    p_re = sub.add_parser("rehash", help="store a CSV's new sha256 in its sidecar")
    p_re.add_argument("names", nargs="*")
    p_re.add_argument("--all", action="store_true")
    sub.add_parser("datapackage", help="regenerate datapackage.json")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "list":
            for n in list_datasets(args.dir):
                print(
                    f"{n:40s} {len(load(n, args.dir)):5d} rows  {describe(n, args.dir)['title']}"
                )
        elif args.cmd == "check":
            counts = validate(args.dir)
            check_datapackage(args.dir)
            print(
                f"{len(counts)} datasets, {sum(counts.values())} rows: all valid; {DATAPACKAGE} in sync"
            )
        elif args.cmd == "rehash":
            names = list_datasets(args.dir) if args.all else args.names
            if not names:
                parser.error("name a dataset or pass --all")
            for n in names:
                print(f"{n}: {rehash(n, args.dir)}")
        elif args.cmd == "datapackage":
            print(write_datapackage(args.dir))
    except (DatasetError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through the command line
    sys.exit(main())

"""Where the datasets are, and the structure of their Frictionless sidecars (standard library only).

A sidecar ``data/<name>.json`` is a *tabular data resource* descriptor: provenance (``sources``,
``transcription``), the SHA-256 of the CSV (``hash``) and the table schema (``schema``).  This module
finds the files, checks a descriptor's own structure (not its CSV: see :mod:`models.data.table`) and
returns copies of it.  It imports no third-party package, so the kernel harness (``models.measure``)
reads its table schemas through it without pandas.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from models._paths import bundled_data_dir

__all__ = [
    "DATA_DIR",
    "DATAPACKAGE",
    "DatasetError",
    "data_dir",
    "list_datasets",
    "sha256_of",
    "describe",
    "citation",
    "check_name",
    "read_descriptor",
    "primary_key",
]


def _default_data_dir() -> Path:
    """The checkout's ``data/``, else the copy installed in the package (:mod:`models._paths`)."""
    try:
        return bundled_data_dir()
    except FileNotFoundError:  # neither: errors name the checkout's folder
        return Path(__file__).resolve().parents[2] / "data"


#: The repository's ``data/`` folder (override with the ``QUEUE_DEPTH_DATA`` environment variable).
DATA_DIR = _default_data_dir()

#: File name of the generated package descriptor listing every resource.
DATAPACKAGE = "datapackage.json"

FIELD_TYPES = ("string", "number", "integer", "boolean")
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
    """The data folder: ``directory`` if given, else ``$QUEUE_DEPTH_DATA``, else ``DATA_DIR``."""
    if directory is not None:
        return Path(directory)
    env = os.environ.get("QUEUE_DEPTH_DATA")
    return Path(env) if env else DATA_DIR


def check_name(name: str) -> str:
    """Return ``name`` if it is a dataset name (no folder part); raise ``ValueError`` if not."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"name must be a dataset name like 'butterfield2017_busy_count', got {name!r}"
        )
    if name == Path(DATAPACKAGE).stem:
        raise ValueError(f"name {name!r} is the package descriptor, not a dataset")
    return name


def list_datasets(directory: Path | str | None = None) -> list[str]:
    """Names of every dataset in the data folder (each ``*.json`` sidecar but ``datapackage.json``)."""
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


def read_descriptor(name: str, directory: Path | str | None = None) -> tuple[dict, Path]:
    """The parsed sidecar of ``name`` after :func:`check_descriptor`, and the sidecar's path."""
    d = data_dir(directory)
    sidecar = d / f"{check_name(name)}.json"
    if not sidecar.is_file():
        known = list_datasets(d) if d.is_dir() else []
        raise DatasetError(
            sidecar, f"descriptor not found (known datasets: {', '.join(known) or 'none'})"
        )
    try:
        desc = json.loads(sidecar.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(sidecar, f"not valid UTF-8 JSON: {exc}") from None
    check_descriptor(desc, name, sidecar)
    return desc, sidecar


def check_descriptor(desc: Any, name: str, sidecar: Path) -> None:
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
    check_schema(desc["schema"], sidecar)


def check_schema(schema: Any, sidecar: Path) -> None:
    """Check a Table Schema: typed, described fields (numeric ones with a unit) and a primary key."""
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
        if f.get("type") not in FIELD_TYPES:
            raise DatasetError(
                sidecar, f"{where}: type must be one of {FIELD_TYPES}, got {f.get('type')!r}"
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


def primary_key(schema: dict) -> list[str]:
    """The schema's primary key as a list of field names."""
    pk = schema["primaryKey"]
    return [pk] if isinstance(pk, str) else list(pk)


def describe(name: str, directory: Path | str | None = None) -> dict:
    """The dataset's descriptor (a copy), after checking its structure.

    Keys: ``name``, ``title``, ``description``, ``sources``, ``transcription``, ``hash``, ``schema`` ...
    """
    desc, _ = read_descriptor(name, directory)
    return copy.deepcopy(desc)


def citation(name: str, directory: Path | str | None = None) -> str:
    """Short citation of a dataset's sources: ``"Butterfield (2017)"``."""
    return citation_of(describe(name, directory))


def citation_of(desc: dict) -> str:
    """Each distinct author and year of a descriptor's sources, in order."""
    return "; ".join(dict.fromkeys(f"{s['author']} ({s['year']})" for s in desc["sources"]))

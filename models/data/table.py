"""A dataset's CSV checked against its sidecar's schema, and loaded as a typed DataFrame.

:func:`check_table` is the validator (standard library only): header, types, constraints, uniqueness
and the primary key, every failure a :class:`~models.data.descriptor.DatasetError` naming the file,
the line and the column.  :func:`load` adds the hash check and returns a pandas DataFrame (pandas is
imported on first use, so the validator runs without it).
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .descriptor import (
    DatasetError,
    citation_of,
    data_dir,
    list_datasets,
    primary_key,
    read_descriptor,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; pandas is imported when a table is loaded
    import pandas as pd

__all__ = ["check_table", "load", "validate"]

_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_INTEGER_RE = re.compile(r"^[+-]?\d+$")


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


def _check_header(header: list[str], expected: list[str], csv_path: Path) -> None:
    if header == expected:
        return
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


def _check_keys(desc: dict, columns: dict[str, list], rows: int, csv_path: Path) -> None:
    for f in desc["schema"]["fields"]:
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
    pk = primary_key(desc["schema"])
    seen_keys: dict[tuple, int] = {}
    for i in range(rows):
        key = tuple(columns[k][i] for k in pk)
        if any(v is None for v in key):
            raise DatasetError(csv_path, f"line {i + 2}: primary key {pk} has an empty value")
        if key in seen_keys:
            raise DatasetError(
                csv_path,
                f"duplicate primary key {pk} = {key} on lines {seen_keys[key]} and {i + 2}",
            )
        seen_keys[key] = i + 2


def check_table(desc: dict, csv_path: Path, raw: bytes | None = None) -> dict[str, list]:
    """Validate a CSV (its bytes ``raw``, else read from ``csv_path``) against ``desc``'s schema.

    The hash is not checked here (:func:`load` does).  Returns ``{column: [values]}`` with each value
    of its field's Python type (``None`` for an empty cell); raises :class:`DatasetError` naming
    ``csv_path``, the line and the column of the first problem.
    """
    if raw is None:
        if not csv_path.is_file():
            raise DatasetError(csv_path, "file not found")
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
    _check_header(header, [f["name"] for f in fields], csv_path)
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
    _check_keys(desc, columns, len(body), csv_path)
    return columns


def _column(values: list, kind: str) -> pd.Series:
    """A pandas column of the field's type; integer and boolean columns with gaps become nullable."""
    import pandas as pd  # noqa: PLC0415 - only loading needs pandas; validating does not

    has_gap = any(v is None for v in values)
    if kind == "number":
        return pd.Series([math.nan if v is None else v for v in values], dtype="float64")
    if kind == "integer":
        return pd.Series(values, dtype="Int64" if has_gap else "int64")
    if kind == "boolean":
        return pd.Series(values, dtype="boolean" if has_gap else "bool")
    return pd.Series(values, dtype="object")


def load(name: str, directory: Path | str | None = None) -> pd.DataFrame:
    """Load dataset ``name`` as a DataFrame after validating it against its sidecar descriptor.

    Checks, in order: the descriptor's structure; the CSV exists; its SHA-256 equals ``hash``; the
    header equals the schema's field names (same order); every value parses as its field's type and
    meets the field's constraints (``required``, ``unique``, ``minimum``/``maximum``, ``enum``,
    ``pattern`` ...); the primary key is complete and unique.

    Returns
    -------
    pandas.DataFrame
        Columns typed from the schema (``number`` -> float64, ``integer`` -> int64, or nullable
        Int64 if a value is empty, ``boolean`` -> bool, ``string`` -> object).  ``df.attrs`` holds
        ``name``, ``title``, ``citation`` and ``units`` (column -> unit).

    Raises
    ------
    DatasetError
        A ``ValueError`` whose message starts with the path of the file at fault.
    """
    import pandas as pd  # noqa: PLC0415 - see _column

    desc, _sidecar = read_descriptor(name, directory)
    csv_path = data_dir(directory) / desc["path"]
    if not csv_path.is_file():
        raise DatasetError(csv_path, "file not found")
    raw = csv_path.read_bytes()  # hashed and parsed from the same bytes
    actual = "sha256:" + hashlib.sha256(raw).hexdigest()
    if actual != desc["hash"]:
        raise DatasetError(
            csv_path,
            f"content hash {actual} does not match the descriptor's {desc['hash']} "
            f"(if the edit was intended: python -m models.data rehash {name})",
        )
    columns = check_table(desc, csv_path, raw)
    fields = desc["schema"]["fields"]
    df = pd.DataFrame({f["name"]: _column(columns[f["name"]], f["type"]) for f in fields})
    df.attrs.update(
        name=name,
        title=desc["title"],
        citation=citation_of(desc),
        units={f["name"]: f.get("unit", "") for f in fields},
    )
    return df


def validate(directory: Path | str | None = None) -> dict[str, int]:
    """Load every dataset (raising on the first bad one) and return ``{name: row count}``."""
    return {name: len(load(name, directory)) for name in list_datasets(directory)}

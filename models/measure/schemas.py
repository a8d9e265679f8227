"""The schemas of the harness's tables, read from the bundled sidecars (written once, in ``data/``).

The standard sweep writes three tables, ``<prefix>_flory``, ``<prefix>_iscsi_loop`` and
``<prefix>_busy_counts``.  Their Frictionless sidecars in ``data/`` (``kernel6_flory.json`` and so on,
from the sweep the book uses) hold each table's title, description and schema: fields with types,
units, descriptions and constraints, and the primary key.  That is the one place they are written;
:data:`SCHEMAS` reads them from there (checked with :mod:`models.data.descriptor`, which needs no
pandas), and every table a sweep writes carries the same schema, title and description.

To change a table (add a column, reword a description), edit the schema in its ``data/kernel6_*.json``
sidecar and :func:`models.measure.tables.rows_for`, then run the sweep again with ``--out data``:
``python -m models.data check`` refuses the bundled CSV until its columns match.

>>> [f["name"] for f in SCHEMAS["busy_counts"]["fields"]][-3:]
['or_more', 'cycles', 'cycles_pct']
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from models.data.descriptor import DATA_DIR, DatasetError, primary_key, read_descriptor

__all__ = ["TABLES", "TEMPLATE_PREFIX", "SCHEMAS", "template", "SchemaError"]

#: The tables of a sweep, in the order they are written.
TABLES = ("flory", "iscsi_loop", "busy_counts")
#: Prefix of the bundled sidecars that hold the schemas.
TEMPLATE_PREFIX = "kernel6"


class SchemaError(RuntimeError):
    """A table's sidecar in ``data/`` is missing or malformed, so its schema cannot be read."""


def template(table: str, directory: Path | None = None) -> dict[str, Any]:
    """``{"title", "description", "fields", "primaryKey"}`` of ``table``, from its bundled sidecar.

    Parameters
    ----------
    table
        ``"flory"``, ``"iscsi_loop"`` or ``"busy_counts"``.
    directory
        Folder holding ``kernel6_<table>.json`` (default: the bundled data, never
        ``$QUEUE_DEPTH_DATA``, which points at datasets to read, not at the harness's schemas).

    Raises
    ------
    SchemaError
        The sidecar is missing or fails :func:`models.data.descriptor.check_descriptor`.
    """
    if table not in TABLES:
        raise ValueError(f"table must be one of {TABLES}, got {table!r}")
    return copy.deepcopy(_read(table, directory))


@functools.cache
def _read(table: str, directory: Path | None) -> dict[str, Any]:
    name = f"{TEMPLATE_PREFIX}_{table}"
    try:
        desc, _ = read_descriptor(name, DATA_DIR if directory is None else directory)
    except (DatasetError, ValueError) as exc:
        raise SchemaError(f"schema of the {table!r} table: {exc}") from None
    return {
        "title": desc["title"],
        "description": desc["description"],
        "fields": desc["schema"]["fields"],
        "primaryKey": primary_key(desc["schema"]),
    }


class _Schemas(Mapping[str, dict[str, Any]]):
    """``{table: template(table)}``, each sidecar read on first use."""

    def __getitem__(self, table: str) -> dict[str, Any]:
        if table not in TABLES:
            raise KeyError(table)
        return template(table)

    def __iter__(self) -> Iterator[str]:
        return iter(TABLES)

    def __len__(self) -> int:
        return len(TABLES)

    def __repr__(self) -> str:
        return f"SCHEMAS({', '.join(TABLES)}; read from {DATA_DIR}/{TEMPLATE_PREFIX}_*.json)"


#: ``{table: {"title", "description", "fields", "primaryKey"}}`` for the three tables of a sweep.
SCHEMAS: Mapping[str, dict[str, Any]] = _Schemas()

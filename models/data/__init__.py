"""Bundled measurement datasets: load a CSV after checking it against its Frictionless sidecar.

Every dataset in ``data/`` is a pair of files:

``data/<name>.csv``
    A tidy table, one observation per row, units in the column names (``_us``, ``_ms``, ``_s``,
    ``_bytes``, ``_KBps``, ``_MBps``, ``_pct``, ``_iops`` ...).
``data/<name>.json``
    A Frictionless *tabular data resource* descriptor: where the numbers come from (``sources``,
    ``transcription``), the SHA-256 of the CSV bytes (``hash``) and the table schema (``schema``).

:func:`load` refuses a dataset whose CSV is missing, whose bytes do not match the recorded hash,
whose header differs from the schema, or whose values break a type, a constraint or the primary
key; the error (:class:`DatasetError`, a ``ValueError``) names the file and the problem.

Modules: ``models.data.descriptor`` (finding files, the sidecar's structure; standard library
only), ``models.data.table`` (a CSV checked against its schema, and :func:`load`),
``models.data.maintenance`` (``rehash``, ``datapackage.json``) and
``models.data.cli`` (the command line).  The checks agree with the Frictionless library's own
validation of the same sidecars, and are stricter (``tests/test_data_frictionless.py``).

Command line (run from the repository root)::

    python -m models.data list                 # names, rows, titles
    python -m models.data check                # validate every dataset
    python -m models.data rehash NAME [NAME..] # validate, then store its sha256
    python -m models.data rehash --all
    python -m models.data datapackage          # regenerate data/datapackage.json

>>> df = load('butterfield2017_rtt_breakdown')
>>> float(df.set_index('quantity').loc['RTT', 'value_us'])
275.7
"""

# (Dataset names in this package's docstrings are in single quotes: models.validation.coverage
# counts a double-quoted name in models/ as a module reading that dataset.)

from .cli import main
from .descriptor import (
    DATA_DIR,
    DATAPACKAGE,
    DatasetError,
    citation,
    data_dir,
    describe,
    list_datasets,
    sha256_of,
)
from .descriptor import primary_key as _primary_key  # noqa: F401 - the old private name
from .maintenance import (
    check_datapackage,
    datapackage,
    rehash,
    rehash_all,
    table_schema,
    tool_sidecar,
    write_datapackage,
)
from .table import check_table, load, validate

__all__ = [
    "DATA_DIR",
    "DATAPACKAGE",
    "DatasetError",
    "data_dir",
    "list_datasets",
    "describe",
    "load",
    "validate",
    "check_table",
    "sha256_of",
    "rehash",
    "rehash_all",
    "datapackage",
    "write_datapackage",
    "check_datapackage",
    "table_schema",
    "tool_sidecar",
    "citation",
    "main",
]

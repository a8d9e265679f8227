"""``python -m models.data``: list, check, rehash and regenerate the bundled datasets.

Run from the repository root::

    python -m models.data list                 # names, rows, titles
    python -m models.data check                # validate every dataset
    python -m models.data rehash NAME [NAME..] # validate, then store the CSV's sha256 in its sidecar
    python -m models.data rehash --all
    python -m models.data datapackage          # regenerate data/datapackage.json

Exit status 0 on success, 1 when a dataset is at fault (one ``error:`` line naming the file), 2 for a
usage error.  Output piped into a reader that stops early (``list | head -1``) ends quietly with the
status of a process ended by SIGPIPE (141), without a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .descriptor import DATAPACKAGE, DatasetError, describe, list_datasets
from .maintenance import check_datapackage, rehash_all, write_datapackage
from .table import load, validate

__all__ = ["main", "silence_stdout", "SIGPIPE_STATUS"]

#: Exit status after the reader of standard output went away: 128 + SIGPIPE (13), as a shell reports
#: a process that SIGPIPE ended.
SIGPIPE_STATUS = 141


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m models.data",
        description="Bundled measurement datasets: load a CSV after checking it against its "
        "Frictionless sidecar.",
    )
    parser.add_argument(
        "--dir", default=None, help="data folder (default: the repository's data/)"
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="list datasets with row counts")
    sub.add_parser("check", help="validate every dataset and datapackage.json")
    p_re = sub.add_parser(
        "rehash",
        help="validate a CSV against its schema, then store its new sha256 in its sidecar",
    )
    p_re.add_argument("names", nargs="*")
    p_re.add_argument("--all", action="store_true")
    sub.add_parser("datapackage", help="regenerate datapackage.json")
    return parser


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.cmd == "list":
        for n in list_datasets(args.dir):
            print(f"{n:40s} {len(load(n, args.dir)):5d} rows  {describe(n, args.dir)['title']}")
    elif args.cmd == "check":
        counts = validate(args.dir)
        check_datapackage(args.dir)
        print(
            f"{len(counts)} datasets, {sum(counts.values())} rows: all valid; "
            f"{DATAPACKAGE} in sync"
        )
    elif args.cmd == "rehash":
        names = list_datasets(args.dir) if args.all else args.names
        if not names:
            parser.error("name a dataset or pass --all")
        try:
            hashes = rehash_all(names, args.dir)
        except ValueError as exc:  # DatasetError too: found before any write
            raise _NothingWritten(exc) from exc
        for n, h in hashes.items():
            print(f"{n}: {h}")
    elif args.cmd == "datapackage":
        print(write_datapackage(args.dir))


class _NothingWritten(ValueError):
    """A rehash refused before writing anything."""

    def __init__(self, cause: ValueError) -> None:
        super().__init__(f"{cause} (no sidecar was written)")


def silence_stdout() -> None:
    """After a BrokenPipeError: point standard output at /dev/null, so the interpreter's last
    flush cannot fail again (and print "Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        _run(args, parser)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
    except BrokenPipeError:
        silence_stdout()
        return SIGPIPE_STATUS
    except (DatasetError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0

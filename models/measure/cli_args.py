"""Argument types of ``python -m models.measure``: every value checked against its documented bounds.

Each helper is an ``argparse`` ``type=``: it returns the parsed value or raises
:class:`argparse.ArgumentTypeError` with the allowed range, and :class:`OneLineParser` prints that as a
single line naming the flag (``python -m models.measure run: error: argument --qd: must be an integer
1..4096, got '0'``) and exits with status 2.  The bounds are those of
:class:`~models.measure.runner.RunSpec` and :class:`~models.measure.netns.LinkSpec`, so the command
line refuses what a run would refuse, before any namespace is created or any program compiled.

>>> bounded_int(1, 4096)("64")
64
>>> rate("1g"), rate("100m"), rate("2.5e9")
(1000000000, 100000000, 2500000000)
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from .netns import MTU_MAX, MTU_MIN, RATE_MAX_BITS_PER_S, RATE_MIN_BITS_PER_S
from .runner import CC_NAME_MAX, cc_name_ok

__all__ = [
    "OneLineParser",
    "bounded_int",
    "bounded_float",
    "rate",
    "cc_name",
    "table_prefix",
    "link_list",
    "new_file",
    "folder",
    "MTU_RANGE",
    "RATE_RANGE",
]

#: ``--mtu`` bounds as shown in help texts, bytes.
MTU_RANGE = f"{MTU_MIN}..{MTU_MAX}"
#: ``--rate`` bounds as shown in help texts.
RATE_RANGE = "1m..100g bits per second"
_PREFIX_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,39}$")


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line: ``PROG: error: MESSAGE (see PROG --help)``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def bounded_int(lo: int, hi: int, unit: str = "") -> Callable[[str], int]:
    """An integer ``lo..hi`` (inclusive)."""
    what = f"an integer {lo}..{hi}" + (f" {unit}" if unit else "")

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def bounded_float(
    lo: float, hi: float, lo_open: bool = False, unit: str = "seconds"
) -> Callable[[str], float]:
    """A finite number in ``[lo, hi]``, or ``(lo, hi]`` when ``lo_open``."""
    what = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}] {unit}".rstrip()

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        above = value > lo if lo_open else value >= lo
        if not (math.isfinite(value) and above and value <= hi):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def rate(text: str) -> int:
    """A rate such as ``1g``, ``100m``, ``2.5e9`` or ``1000000000``, in bits per second, 1m..100g."""
    t = text.strip().lower().removesuffix("bit").removesuffix("bps").removesuffix("b")
    mult = {"k": 10**3, "m": 10**6, "g": 10**9}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if mult != 1 else t) * mult
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and RATE_MIN_BITS_PER_S <= value <= RATE_MAX_BITS_PER_S):
        raise argparse.ArgumentTypeError(
            f"must be a rate {RATE_RANGE} (e.g. 1g, 100m, 1000000000), got {text!r}"
        )
    return int(value)


def cc_name(text: str) -> str:
    """A congestion-control name: ASCII letters, digits and ``_``, 1..15 characters (``cubic``)."""
    if not cc_name_ok(text):
        raise argparse.ArgumentTypeError(
            f"must be a congestion-control name of 1..{CC_NAME_MAX} letters, digits or _ "
            f"(e.g. cubic, reno, bbr), got {text!r}"
        )
    return text


def table_prefix(text: str) -> str:
    """A prefix of dataset names: lower-case letters, digits and ``_``, 1..40, not starting with _."""
    if not _PREFIX_RE.match(text):
        raise argparse.ArgumentTypeError(
            "must be 1..40 lower-case letters, digits or _ (not first), as in kernel6, "
            f"got {text!r}"
        )
    return text


def link_list(labels: tuple[str, ...]) -> Callable[[str], list[str]]:
    """A comma-separated, non-empty list of distinct names from ``labels``."""

    def parse(text: str) -> list[str]:
        items = [x.strip() for x in text.split(",")]
        bad = [x for x in items if x not in labels]
        if bad or len(set(items)) != len(items):
            raise argparse.ArgumentTypeError(
                f"must be distinct comma-separated names from {','.join(labels)}, got {text!r}"
            )
        return items

    parse.__name__ = "links"
    return parse


def new_file(text: str) -> Path:
    """A file to write: its folder exists, and it is not itself a folder."""
    p = Path(text)
    if not text or p.is_dir() or not p.parent.is_dir():
        raise argparse.ArgumentTypeError(
            f"must be a file name in an existing folder, got {text!r}"
        )
    return p


def folder(text: str) -> Path:
    """A folder to write into: existing, or creatable (not an existing file)."""
    p = Path(text)
    if not text or (p.exists() and not p.is_dir()):
        raise argparse.ArgumentTypeError(f"must be a folder (existing or new), got {text!r}")
    return p

"""What the repeat plan's evaluations read off a simulated field table, beyond the goals.

The field evaluation's goals (:func:`models.validation.fidelity.goals`) say how many rows a model
gets right; the evaluations of a machine's sample of the field runs
(:mod:`models.validation.machine7`, :mod:`models.validation.machine8`) also ask where the misses
lie: the median ratio (simulated over kernel IOPS) by queue depth and response size
(:func:`band_medians`), for the servers that may hold a response's tail back and those that do not
(:func:`held_medians`), and the plain shares and counts behind the goals (:func:`within`,
:func:`qd8`, :func:`verdicts`).  A table here is what
:func:`models.validation.fidelity.simulated` returns (or a kernel draw put in a model's place by
:func:`models.validation.draws.repeat_table`).

>>> import pandas as pd
>>> t = pd.DataFrame({"ratio": [0.5, 1.0, 2.0], "m": [True, True, False]})
>>> median_ratio(t, t["m"])
0.75
>>> round(off(0.5), 3) == round(off(2.0), 3)
True
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from models.validation import fidelity as FID

__all__ = [
    "LARGE_BYTES",
    "SMALL_BAND",
    "LARGE_BAND",
    "HELD",
    "UNHELD",
    "band_medians",
    "held_medians",
    "median_ratio",
    "off",
    "within",
    "qd8",
    "verdicts",
]

#: Responses from this size up are the large ones (bytes): the copies weigh most there.
LARGE_BYTES = 16384
#: The bands of :func:`band_medians` at QD 8 and more, small and large responses.
SMALL_BAND, LARGE_BAND = "QD >= 8, under 16 KiB", "QD >= 8, 16 KiB and more"
#: The servers that may hold a response's tail back (Nagle's algorithm, ``MSG_MORE`` on the
#: header), and those that send it at once.
HELD, UNHELD = ("nagle", "more"), ("nodelay", "more_nodelay")


def median_ratio(io: Any, mask: Any) -> float:
    """The median ``ratio`` of the rows of ``io`` that ``mask`` selects (NaN if none)."""
    r = list(io.loc[mask, "ratio"])
    return float(statistics.median(r)) if r else math.nan


def band_medians(table: Any) -> dict[str, float]:
    """The median ratio (simulated over kernel IOPS) of the IOPS goal's rows
    (:func:`~models.validation.fidelity.iops_table`) in four bands: QD 1, QD 2-7, and QD 8 and
    more with responses under and from :data:`LARGE_BYTES`."""
    io = FID.iops_table(table)
    big = io["iosize_bytes"] >= LARGE_BYTES
    return {
        "QD 1": median_ratio(io, io["qd"] == 1),
        "QD 2-7": median_ratio(io, (io["qd"] >= 2) & (io["qd"] < 8)),
        SMALL_BAND: median_ratio(io, (io["qd"] >= 8) & ~big),
        LARGE_BAND: median_ratio(io, (io["qd"] >= 8) & big),
    }


def held_medians(table: Any, size: int = LARGE_BYTES) -> dict[str, float]:
    """The median ratio of the IOPS goal's rows at QD 8 and more with ``size``-byte responses,
    for the servers that may hold a tail back (:data:`HELD`) and those that do not."""
    io = FID.iops_table(table)
    rows = (io["qd"] >= 8) & (io["iosize_bytes"] == size)
    return {
        "held": median_ratio(io, rows & io["sock_mode"].isin(HELD)),
        "unheld": median_ratio(io, rows & io["sock_mode"].isin(UNHELD)),
    }


def off(x: float) -> float:
    """How far a median ratio is from 1, as a factor's logarithm."""
    return abs(math.log(x))


def within(table: Any) -> float:
    """The share (0-1) of the IOPS goal's rows within the field evaluation's tolerance."""
    return float(FID.iops_table(table)["within"].mean())


def qd8(table: Any) -> float:
    """The median ratio of the IOPS goal's rows at QD 8 and more."""
    io = FID.iops_table(table)
    return median_ratio(io, io["qd"] >= 8)


def verdicts(table: Any) -> int:
    """How many test rows get the kernel's stall verdict."""
    test = table[table["role"] == "test"]
    return int((test["kernel_stalls"] == test["sim_stalls"]).sum())

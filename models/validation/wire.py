"""Chapter 2 comparisons: framing and wire-time values recomputed against the numbers Butterfield states.

The source prints each value rounded (94.15 %, 388 ns, 1.1 us ...), so each tolerance is half a unit in
the last digit printed: the recomputed value must round to what the source wrote.
"""

from __future__ import annotations

from .. import analytic as A
from . import Comparison, comparisons

_SOURCE = "Butterfield 2017, wire-time section"
_WHY = "the source prints the value rounded; half a unit in its last digit"


def _stated(
    quantity: str, stated: float, predicted: float, unit: str, last_digit: float
) -> Comparison:
    return Comparison(
        "ch2",
        quantity,
        measured=stated,
        predicted=predicted,
        unit=unit,
        abs_tol=last_digit / 2,
        why=_WHY,
        source=_SOURCE,
        kind="test",
    )


@comparisons("ch2.wire")
def wire_comparisons() -> list[Comparison]:
    """Every framing and wire-time figure the source states, against :mod:`models.analytic`."""
    gbit = 1e9  # bits per second
    return [
        _stated(
            "framing efficiency, MTU 1500", 94.15, 100 * A.framing_efficiency(1500), "%", 0.01
        ),
        _stated(
            "framing efficiency, MTU 9000", 99.00, 100 * A.framing_efficiency(9000), "%", 0.01
        ),
        _stated(
            "least request wire time, packed frames, MTU 9000, 1 Gb/s",
            388,
            A.w1_lower_bound(gbit, mtu=9000) * 1e9,
            "ns",
            1,
        ),
        _stated(
            "request wire time, own frame, 48 bytes, 1 Gb/s",
            1.1,
            A.wire_time(48, gbit) * 1e6,
            "us",
            0.1,
        ),
        _stated(
            "response wire time, 48 + 512 bytes, 1 Gb/s",
            5.2,
            A.wire_time(560, gbit) * 1e6,
            "us",
            0.1,
        ),
        _stated(
            "wire time both directions, 512-byte read, 1 Gb/s",
            6.3,
            (A.wire_time(48, gbit) + A.wire_time(560, gbit)) * 1e6,
            "us",
            0.1,
        ),
    ]

"""Order statistics of benchmark samples (microseconds in, microseconds out), standard library
only: what :mod:`models.measure.costs` and :mod:`models.measure.wakestats` summarise with.

>>> percentile([1.0, 2.0, 3.0, 4.0], 50), median([3.0, 1.0, 2.0]), median([])
(2.5, 2.0, nan)
"""

from __future__ import annotations

import math
import statistics

__all__ = ["percentile", "median"]


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, linear between order statistics."""
    if not values:
        raise ValueError("values: need at least one value, got none")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q!r}")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(xs: list[float]) -> float:
    """The median of ``xs``; NaN when there are none (a benchmark the program did not run)."""
    return float(statistics.median(xs)) if xs else math.nan

"""Order statistics of benchmark samples (microseconds in, microseconds out), standard library
only: what :mod:`models.measure.costs` and :mod:`models.measure.wakestats` summarise with.

>>> percentile([1.0, 2.0, 3.0, 4.0], 50), median([3.0, 1.0, 2.0]), median([])
(2.5, 2.0, nan)
"""

from __future__ import annotations

import math
import statistics

from models.sim.result import percentile as _percentile

__all__ = ["percentile", "median"]


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, linear between order statistics (the
    simulator's :func:`models.sim.result.percentile`); a benchmark's samples must not be empty."""
    if not values:
        raise ValueError("values: need at least one value, got none")
    return float(_percentile(values, q))


def median(xs: list[float]) -> float:
    """The median of ``xs``; NaN when there are none (a benchmark the program did not run)."""
    return float(statistics.median(xs)) if xs else math.nan

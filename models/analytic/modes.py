"""Latencies with two modes: what a mean and a median report about them.

Butterfield (2017) saw round trips that alternate between a low and a high
level in a fixed pattern.  An average over many operations reports the
weighted mean of the modes, a latency no single operation has.  Standard
library only, so the same functions run in the reader's browser.

>>> mean_of_modes([338.0, 135.0], [1, 2])
202.66666666666666
>>> median_of_modes([338.0, 135.0], [1, 2])
135.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["mean_of_modes", "median_of_modes"]


def _check(values: Sequence[float], weights: Sequence[float]) -> float:
    if len(values) != len(weights) or not values:
        raise ValueError(
            f"values and weights must be non-empty and equally long, got {values!r}, {weights!r}"
        )
    if any(w < 0 for w in weights) or math.fsum(weights) <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {weights!r}")
    return math.fsum(weights)


def mean_of_modes(values: Sequence[float], weights: Sequence[float]) -> float:
    """Weighted mean of a pattern's modes: what an average over many
    operations reports (``weights``: operations, or shares, in each mode).
    """
    total = _check(values, weights)
    # fsum: correctly rounded, the same in every Python version.
    return math.fsum(v * w for v, w in zip(values, weights)) / total


def median_of_modes(values: Sequence[float], weights: Sequence[int]) -> float:
    """Median latency of ``weights[i]`` operations at ``values[i]``.

    With an even count it is the mean of the two middle operations, as
    ``statistics.median`` has it.
    """
    _check(values, weights)
    if any(w != int(w) for w in weights):
        raise ValueError(f"weights must be whole operations, got {weights!r}")
    ordered = sorted(zip(values, (int(w) for w in weights)))
    n = sum(w for _, w in ordered)

    def at(k: int) -> float:  # the k-th operation in order, from 0
        for v, w in ordered:
            if k < w:
                return v
            k -= w
        raise AssertionError("k beyond the count")  # pragma: no cover

    if n % 2:
        return float(at(n // 2))
    return (at(n // 2 - 1) + at(n // 2)) / 2

"""Input checks shared by the models: each raises ``ValueError`` naming the parameter and its bad value."""

from __future__ import annotations

import math


def finite(name: str, value: float) -> float:
    """``value`` as a float, or ``ValueError`` if it is not a finite number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def positive(name: str, value: float) -> float:
    """``value`` as a float, or ``ValueError`` unless it is finite and > 0."""
    v = finite(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return v


def non_negative(name: str, value: float) -> float:
    """``value`` as a float, or ``ValueError`` unless it is finite and >= 0."""
    v = finite(name, value)
    if v < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return v


def whole(name: str, value: float, minimum: int = 0) -> int:
    """``value`` as an int, or ``ValueError`` unless it is a whole number >= ``minimum``."""
    v = finite(name, value)
    if v != int(v):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if v < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return int(v)


def fraction(name: str, value: float, *, open_low: bool = True) -> float:
    """``value`` in (0, 1] (or [0, 1] with ``open_low=False``), else ``ValueError``."""
    v = finite(name, value)
    low_ok = v > 0 if open_low else v >= 0
    if not (low_ok and v <= 1):
        bound = "(0, 1]" if open_low else "[0, 1]"
        raise ValueError(f"{name} must lie in {bound}, got {value!r}")
    return v

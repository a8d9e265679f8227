"""The controls of a live figure: :class:`Range` (a slider with a number
box), :class:`Number` (a number box) and :class:`Select` (a choice).

Each control checks its declaration (a ``ValueError`` naming the control
and the bad value), coerces a value from the page to what the figure's
function receives (:meth:`Range.coerce`), and describes itself as the page's
JSON (:meth:`Range.to_json`), from which the browser rebuilds it
(:func:`control_from_json`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from models.checks import finite

__all__ = ["Range", "Number", "Select", "Control", "control_from_json"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_name(what: str, name: str) -> str:
    """``name`` if it is a Python identifier, else ``ValueError`` naming
    ``what``."""
    if not _NAME.match(name):
        raise ValueError(f"{what} must be a Python identifier, got {name!r}")
    return name


def _number(name: str, value: Any) -> float:
    """``value`` as a finite float (:func:`models.checks.finite`), a bool
    refused: a control's value is never ``True``."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return finite(name, value)


def _nice_step(raw: float) -> float:
    """1, 2 or 5 times a power of ten, near ``raw`` (a slider step).

    >>> _nice_step(0.3), _nice_step(0.05), _nice_step(4.9)
    (0.2, 0.05, 5.0)
    """
    exponent = math.floor(math.log10(raw))
    mantissa = raw / 10**exponent
    nice = 1 if mantissa < 1.5 else 2 if mantissa < 3.5 else 5 if mantissa < 7.5 else 10
    return float(f"{nice * 10.0**exponent:.12g}")


@dataclass(frozen=True)
class Range:
    """A slider with a number box: any value from ``min`` to ``max``.

    Parameters
    ----------
    name : str
        Keyword argument of the figure function.
    label : str
        What the reader sees, with the unit, e.g. ``"SP (µs)"``.
    min, max : float
        The stated range; the browser accepts any value in it.
    grid : sequence of float
        Values precomputed at build time (at least two, inside the range):
        the first view and the fallback.
    value : float
        The first view; one of ``grid``.
    step : float, optional
        Slider step (default: 1/200 of the range, or 1 for integers); the
        number box takes any value.
    integer : bool
        Whole numbers only (the function gets an ``int``).
    log : bool
        The slider moves in equal ratios (``min`` must be positive); grid
        snapping uses ratios too.
    """

    kind: ClassVar[str] = "range"

    name: str
    label: str
    min: float
    max: float
    grid: Sequence[float]
    value: float
    step: float | None = None
    integer: bool = False
    log: bool = False

    def __post_init__(self) -> None:
        _check_name("name", self.name)
        lo = _number(f"{self.name}: min", self.min)
        hi = _number(f"{self.name}: max", self.max)
        if not lo < hi:
            raise ValueError(
                f"{self.name}: min must be below max, got {self.min!r} and {self.max!r}"
            )
        if self.log and lo <= 0:
            raise ValueError(
                f"{self.name}: min must be positive for a log scale, got {self.min!r}"
            )
        grid = list(self.grid)
        if len(grid) < 2:
            raise ValueError(f"{self.name}: grid needs at least two values, got {grid!r}")
        for g in grid:
            if not lo <= _number(f"{self.name}: grid", g) <= hi:
                raise ValueError(
                    f"{self.name}: grid value {g!r} lies outside [{self.min!r}, {self.max!r}]"
                )
            if self.integer and g != int(g):
                raise ValueError(f"{self.name}: grid value {g!r} is not a whole number")
        if sorted(grid) != grid or len(set(grid)) != len(grid):
            raise ValueError(f"{self.name}: grid must increase, got {grid!r}")
        if self.value not in grid:
            raise ValueError(f"{self.name}: value {self.value!r} is not on the grid {grid!r}")
        if self.step is not None and not _number(f"{self.name}: step", self.step) > 0:
            raise ValueError(f"{self.name}: step must be positive, got {self.step!r}")
        object.__setattr__(self, "grid", tuple(grid))

    def coerce(self, value: Any) -> float | int:
        """``value`` as the function receives it, or ``ValueError``.

        >>> Range("qd", "QD", 1, 64, [1, 8], 1, integer=True).coerce(7.6)
        8
        """
        v = _number(self.name, value)
        if self.integer:
            v = round(v)
        if not self.min <= v <= self.max:
            raise ValueError(
                f"{self.name} must lie in [{self.min!r}, {self.max!r}], got {value!r}"
            )
        return int(v) if self.integer else float(v)

    def to_json(self) -> dict:
        """The control as the page's JSON describes it."""
        step = self.step
        if step is None:
            step = 1 if self.integer else _nice_step((self.max - self.min) / 200)
        return {
            "kind": self.kind,
            "name": self.name,
            "label": self.label,
            "min": self.min,
            "max": self.max,
            "grid": list(self.grid),
            "value": self.value,
            "step": step,
            "integer": self.integer,
            "log": self.log,
        }


@dataclass(frozen=True)
class Number(Range):
    """A number box alone: any value from ``min`` to ``max``.

    Same parameters as :class:`Range`.
    """

    kind: ClassVar[str] = "number"


@dataclass(frozen=True)
class Select:
    """A choice among ``options`` (numbers or strings), all precomputed.

    Parameters
    ----------
    name : str
        Keyword argument of the figure function.
    label : str
        What the reader sees.
    options : sequence
        The choices, at least two.
    value
        The first view; one of ``options``.
    """

    kind: ClassVar[str] = "select"

    name: str
    label: str
    options: Sequence[Any]
    value: Any

    def __post_init__(self) -> None:
        _check_name("name", self.name)
        options = list(self.options)
        if len(options) < 2:
            raise ValueError(f"{self.name}: options needs at least two choices, got {options!r}")
        if self.value not in options:
            raise ValueError(f"{self.name}: value {self.value!r} is not one of {options!r}")
        object.__setattr__(self, "options", tuple(options))

    @property
    def grid(self) -> tuple:
        """Every option is precomputed."""
        return tuple(self.options)

    def coerce(self, value: Any) -> Any:
        """``value`` if it is one of the options, else ``ValueError``."""
        for option in self.options:
            if value == option and not isinstance(value, bool):
                return option
        raise ValueError(f"{self.name} must be one of {list(self.options)!r}, got {value!r}")

    def to_json(self) -> dict:
        """The control as the page's JSON describes it."""
        return {
            "kind": self.kind,
            "name": self.name,
            "label": self.label,
            "grid": list(self.options),
            "value": self.value,
        }


Control = Range | Number | Select
_KINDS = {"range": Range, "number": Number, "select": Select}


def control_from_json(data: Mapping[str, Any]) -> Control:
    """Rebuild a control from the page's JSON (the browser's side).

    >>> c = Range("mtu", "MTU", 576, 9000, [576, 1500], 1500, integer=True)
    >>> control_from_json(c.to_json()).coerce(2000.4)
    2000
    """
    kind = data.get("kind")
    if kind == "select":
        return Select(data["name"], data["label"], data["grid"], data["value"])
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
    return _KINDS[kind](
        data["name"],
        data["label"],
        data["min"],
        data["max"],
        data["grid"],
        data["value"],
        data.get("step"),
        data.get("integer", False),
        data.get("log", False),
    )

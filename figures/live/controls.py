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

__all__ = [
    "Range",
    "Number",
    "Select",
    "Control",
    "control_from_json",
    "MIN_STEP_FRACTION",
]

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


#: The smallest slider step, as a fraction of the slider's span: one press
#: of an arrow key must move the thumb visibly (issue 24).
MIN_STEP_FRACTION = 0.01


def _nice_step(raw: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten at or above ``raw``
    (a slider step that is never finer than asked).

    >>> _nice_step(0.3), _nice_step(0.05), _nice_step(4.9), _nice_step(0.59)
    (0.5, 0.05, 5.0, 1.0)
    """
    exponent = math.floor(math.log10(raw))
    mantissa = raw / 10**exponent
    tol = 1e-9  # 0.05 / 10**-2 is 5.000000000000001
    nice = next(m for m in (1, 2, 5, 10) if mantissa <= m * (1 + tol))
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
        Slider step, in the slider's own unit: the control's unit on a
        linear slider, decades (powers of ten) on a log slider (``0.01``
        moves by a factor of 10**0.01).  It must be at least 1 % of the
        slider's span (:attr:`span`: ``max - min``, or ``log10(max / min)``
        on a log slider), else ``ValueError``: one press of an arrow key
        moves the thumb visibly.  Default (:attr:`slider_step`): on a
        linear slider the smallest 1, 2 or 5 times a power of ten at or
        above 1 % of the span (a whole number for integers), on a log
        slider 1 % of its decades.  The number box takes any value.
    integer : bool
        Whole numbers only (the function gets an ``int``).
    log : bool
        The slider moves in equal ratios (``min`` must be positive); grid
        snapping uses ratios too.  Use it for a range over more than a
        decade or two, such as sizes from 1 byte to 64 KiB.

    Examples
    --------
    >>> Range("qd", "QD", 1, 256, [1, 8], 1, integer=True).slider_step
    5
    >>> Range("qd", "QD", 1, 256, [1, 8], 1, integer=True, step=1)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: qd (QD): step 1 is below 1 % of the slider's span 255 ...
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
        object.__setattr__(self, "grid", tuple(grid))
        if self.step is not None:
            self._check_step(_number(f"{self.name}: step", self.step))

    @property
    def span(self) -> float:
        """The slider's span in its own unit: ``max - min``, or
        ``log10(max / min)`` decades on a log slider."""
        if self.log:
            return math.log10(self.max) - math.log10(self.min)
        return float(self.max - self.min)

    def _check_step(self, step: float) -> None:
        """``ValueError`` unless ``step`` moves the slider by 1 % to 100 %
        of :attr:`span` (whole for a linear integer slider)."""
        where = f"{self.name} ({self.label})"
        span = f"{self.span:.4g}{' decades' if self.log else ''}"
        bounds = f"range [{self.min!r}, {self.max!r}]"
        least = self.span * MIN_STEP_FRACTION
        if step < least * (1 - 1e-9):  # 1e-9: 0.01 over 0.01 to 1.01
            raise ValueError(
                f"{where}: step {self.step!r} is below 1 % of the slider's span "
                f"{span} ({bounds}); use a step of at least {least:.4g}, "
                "a log slider or a Select"
            )
        if step > self.span * (1 + 1e-9):
            raise ValueError(
                f"{where}: step {self.step!r} exceeds the slider's span {span} ({bounds})"
            )
        if self.integer and not self.log and step != int(step):
            raise ValueError(f"{where}: step {self.step!r} must be a whole number (integer=True)")

    @property
    def slider_step(self) -> float | int:
        """The slider's step in its own unit (see ``step``)."""
        if self.step is not None:
            return int(self.step) if self.integer and not self.log else self.step
        raw = self.span * MIN_STEP_FRACTION
        if self.log:
            return float(f"{raw:.12g}")
        if self.integer:
            return max(1, int(_nice_step(raw)))
        return _nice_step(raw)

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
        return {
            "kind": self.kind,
            "name": self.name,
            "label": self.label,
            "min": self.min,
            "max": self.max,
            "grid": list(self.grid),
            "value": self.value,
            "step": self.slider_step,
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

"""Declared parameters: one :class:`Spec` per scenario field.

Every field of a scenario part (:mod:`models.sim.scenario`) is declared
with :func:`param`, which records its kind, unit, help text, bounds and a
range for property tests.  From that one declaration come

* the validation (``ValueError`` naming ``part.field`` and the value),
* the command-line option (:mod:`models.sim.cli`),
* the hypothesis strategy of the property tests
  (``tests/sim_strategies.py``),

so the three cannot drift apart.  :class:`Part` is the base of every
part: keyword-only, frozen, and strict about unknown names.

>>> spec = Spec("count", "operations", "queue depth", low=1)
>>> spec.check("workload.qd", 4)
4
>>> spec.check("workload.qd", 0)
Traceback (most recent call last):
...
ValueError: workload.qd must be a whole number >= 1 (operations), got 0
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
from typing import Any

from models.sim.exchange import check_messages

__all__ = [
    "Spec",
    "param",
    "Part",
    "KINDS",
    "Between",
    "OneOf",
    "parse_sizes",
    "parse_legs",
    "MAX_SECONDS",
    "MAX_RATE_BPS",
    "MAX_SEND_BYTES",
    "MAX_QD",
    "MAX_OPS",
    "MAX_BUCKET_BYTES",
    "MAX_EVENTS",
]

#: The longest time any parameter may give in seconds, an hour, far beyond any stage or path.
MAX_SECONDS = 3600.0
#: The fastest link rate in bits per second, 1 Pb/s, far beyond any link (an unlimited link is
#: simulated as 1 Tb/s).
MAX_RATE_BPS = 1e15
#: The largest single ``send()`` in bytes (1 GiB).
MAX_SEND_BYTES = 1 << 30

#: The deepest queue a scenario may keep outstanding, in operations.
MAX_QD = 4096
#: The most operations a run may measure or warm up with, since per-operation times are kept in memory.
MAX_OPS = 1_000_000
#: The deepest token bucket in bytes, 1 GiB, far beyond any tbf burst in use.
MAX_BUCKET_BYTES = 1 << 30
#: The default event budget of a run (``Run.max_events``).
MAX_EVENTS = 20_000_000


#: The kinds of parameter and what each accepts.
KINDS = {
    "count": "a whole number",
    "bytes": "a whole number of bytes",
    "seconds": "a non-negative number of seconds",
    "rate": "a positive number of bits per second",
    "fraction": "a number in [0, 1)",
    "sizes": "send() sizes in bytes",
    "curve": "(idle, latency) points in seconds, idle rising",
    "legs": "legs of send() sizes",
    "messages": "messages of send() sizes, each released by a message of the other side",
    "flag": "True or False",
    "choice": "one of the listed values",
}


@dataclasses.dataclass(frozen=True)
class Between:
    """Property tests draw a number in ``[low, high]``."""

    low: Any
    high: Any


@dataclasses.dataclass(frozen=True)
class OneOf:
    """Property tests draw one of ``values``."""

    values: tuple

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", values)


@dataclasses.dataclass(frozen=True)
class Spec:
    """How one field is checked, shown and sampled.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    unit : str
        Unit shown in messages and help ("seconds", "bytes", ...).
    help : str
        One line for ``--help`` and the docs.
    low, high : number, optional
        Inclusive bounds (``high`` exclusive for ``fraction``).
    optional : bool
        ``None`` is allowed (meaning "the profile's value" or "derived").
    choices : tuple or dict
        Allowed values of a ``choice`` (a tuple, or a registry dict whose
        keys are the values, looked up at each check).
    sample : Between, OneOf or str
        What property tests draw: a range, a set of values, or the name
        of a strategy in ``tests/sim_strategies.py``.
    """

    kind: str
    unit: str
    help: str
    low: Any = None
    high: Any = None
    optional: bool = False
    choices: Any = ()
    sample: Any = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")

    def check(self, name: str, value: Any) -> Any:
        """``value`` normalized, or ``ValueError`` naming ``name``."""
        if value is None:
            if self.optional:
                return None
            raise ValueError(f"{name} must be {self._what()}, got None")
        return getattr(self, "_check_" + self.kind)(name, value)

    def _what(self) -> str:
        what = KINDS[self.kind]
        if self.kind == "choice":
            what = f"one of {list(self.choices)}"
        if self.kind in ("count", "bytes"):
            if self.low is not None and self.high is not None:
                what += f" from {self.low} to {self.high}"
            elif self.low is not None:
                what += f" >= {self.low}"
        if self.unit and self.kind not in ("flag", "choice", "seconds", "rate", "bytes"):
            what += f" ({self.unit})"
        return what

    def _fail(self, name: str, value: Any) -> ValueError:
        return ValueError(f"{name} must be {self._what()}, got {value!r}")

    def _whole(self, name: str, value: Any) -> int:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value != int(value)
            or (self.low is not None and value < self.low)
            or (self.high is not None and value > self.high)
        ):
            raise self._fail(name, value)
        return int(value)

    _check_count = _whole
    _check_bytes = _whole

    def _check_seconds(self, name: str, value: Any) -> float:
        high = MAX_SECONDS if self.high is None else self.high
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
            or value > high
        ):
            unit = self.unit or "seconds"
            raise ValueError(f"{name} must be from 0 to {high:g} {unit}, got {value!r}")
        return float(value)

    def _check_rate(self, name: str, value: Any) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or round(value) < 1
            or value > MAX_RATE_BPS
        ):
            raise ValueError(
                f"{name} must be from 1 to {MAX_RATE_BPS:g} bits per second, got {value!r}"
            )
        return float(value)

    def _check_fraction(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise self._fail(name, value)
        return float(value)

    def _check_sizes(self, name: str, value: Any) -> tuple:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = (value,)
        if isinstance(value, str):
            value = parse_sizes(value)
        try:
            sizes = tuple(value)
        except TypeError:
            raise self._fail(name, value) from None
        for v in sizes:
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v != int(v)
                or v < 1
                or v > MAX_SEND_BYTES
            ):
                raise ValueError(
                    f"{name} must list send() sizes from 1 to {MAX_SEND_BYTES} bytes, got {value!r}"
                )
        if not sizes and (self.low or 0) > 0:
            raise ValueError(f"{name} must list at least one send() size in bytes, got ()")
        return tuple(int(v) for v in sizes)

    def _check_legs(self, name: str, value: Any) -> tuple:
        if isinstance(value, str):
            value = parse_legs(value)
        try:
            legs = tuple(value)
        except TypeError:
            raise self._fail(name, value) from None
        if legs and len(legs) % 2:
            raise ValueError(
                f"{name} must alternate client->server and server->client "
                f"legs (an even number), got {len(legs)} legs"
            )
        inner = Spec("sizes", "bytes", "", low=1)
        return tuple(inner._check_sizes(f"{name}[{i}]", leg) for i, leg in enumerate(legs))

    def _check_messages(self, name: str, value: Any) -> tuple:
        return check_messages(name, value, Spec("sizes", "bytes", "", low=1)._check_sizes)

    def _check_curve(self, name: str, value: Any) -> tuple:
        memo = (self.high, value) if _float_pairs(value) else None
        if memo is not None and memo in _CURVES_CHECKED:
            return _CURVES_CHECKED[memo]
        out = self._check_curve_points(name, value)
        if memo is not None:
            if len(_CURVES_CHECKED) >= _CURVES_MEMO_MAX:
                _CURVES_CHECKED.clear()
            _CURVES_CHECKED[memo] = out
        return out

    def _check_curve_points(self, name: str, value: Any) -> tuple:
        if isinstance(value, str):
            value = parse_curve(value)
        try:
            points = tuple(tuple(p) for p in value)
        except TypeError:
            raise self._fail(name, value) from None
        high = MAX_SECONDS if self.high is None else self.high
        for p in points:
            if len(p) != 2 or not all(
                isinstance(v, (int, float))
                and not isinstance(v, bool)
                and math.isfinite(v)
                and 0 <= v <= high
                for v in p
            ):
                raise ValueError(
                    f"{name} must list (idle, latency) pairs of seconds from 0 to {high:g}, "
                    f"got {value!r}"
                )
        if len(points) == 1 or any(a[0] >= b[0] for a, b in zip(points, points[1:])):
            raise ValueError(
                f"{name} must list two or more points with the idle rising, or none, got {value!r}"
            )
        return tuple((float(i), float(w)) for i, w in points)

    def _check_flag(self, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self._fail(name, value)
        return value

    def _check_choice(self, name: str, value: Any) -> Any:
        if value not in self.choices:
            raise self._fail(name, value)
        return value


#: Curves already checked, by (upper bound, curve): a host profile's curves are checked again for
#: every scenario built on it, thousands in a field sweep.  Only tuples of float pairs are kept
#: (hashable, and equal only to themselves: ``True == 1.0`` would let a bool pass as a number).
_CURVES_CHECKED: dict[tuple, tuple] = {}
_CURVES_MEMO_MAX = 4096


def _float_pairs(value: Any) -> bool:
    """Whether ``value`` is a tuple of tuples of floats (what a checked curve is)."""
    return type(value) is tuple and all(
        type(p) is tuple and all(type(v) is float for v in p) for p in value
    )


def parse_sizes(text: str) -> tuple:
    """``"48,512"`` -> ``(48, 512)`` (``ValueError`` on anything else)."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(
            f"expected comma-separated byte counts such as 48,512, got {text!r}"
        ) from None


def parse_curve(text: str) -> tuple:
    """``"2e-6:10e-6,1e-3:24e-6"`` -> ``((2e-06, 1e-05), (0.001, 2.4e-05))``: (idle, latency)
    points in seconds, ``idle:latency`` split by commas (``ValueError`` on anything else); an
    empty text is no points."""
    try:
        return tuple(
            tuple(float(v) for v in point.split(":", 1))
            for point in text.split(",")
            if point.strip()
        )
    except ValueError:
        raise ValueError(
            f"expected comma-separated idle:latency points in seconds such as 2e-6:10e-6,"
            f"1e-3:24e-6, got {text!r}"
        ) from None


def parse_legs(text: str) -> tuple:
    """``"48/48,512"`` -> ``((48,), (48, 512))``: legs split by ``/``.

    Every leg must list at least one size: ``"///"`` or ``"48//48"`` is an error, not "no legs".
    An empty text is no legs (the request/response default).
    """
    if not text.strip():
        return ()
    legs = tuple(parse_sizes(leg) for leg in text.split("/"))
    if any(not leg for leg in legs):
        raise ValueError(
            f"expected legs of comma-separated byte counts split by /, such as 48/48,512, "
            f"with no empty leg; got {text!r}"
        )
    return legs


def param(default: Any, kind: str, unit: str, help: str, **spec: Any) -> Any:
    """A dataclass field carrying its :class:`Spec` in its metadata."""
    return dataclasses.field(default=default, metadata={"spec": Spec(kind, unit, help, **spec)})


_NAMES: list = []  # the name a part is being built under ("server" ...)


class _PartMeta(type):
    """Checks the keywords of every construction, ``replace`` included:
    positional arguments and unknown names raise ``ValueError``."""

    def __call__(cls, *args: Any, _as: str | None = None, **kw: Any) -> Any:
        name = _as or cls.part_name  # type: ignore[attr-defined]
        if args:
            raise ValueError(f"{name} takes keyword arguments only, got {args!r}")
        check_names(cls, kw, name)
        _NAMES.append(name)
        try:
            return super().__call__(**kw)
        finally:
            _NAMES.pop()


class Part(metaclass=_PartMeta):
    """Base of the scenario parts: keyword-only, validated, frozen.

    Subclasses are ``@dataclasses.dataclass(frozen=True, kw_only=True)``
    with every field declared by :func:`param`.  Unknown or misspelled
    names raise ``ValueError`` naming them (with the closest match).
    ``Host(_as="server", ...)`` names the part "server" in messages.
    """

    #: The name of the part inside a scenario ("workload", "server" ...).
    part_name = "part"

    def __post_init__(self) -> None:
        where = _NAMES[-1] if _NAMES else self.part_name
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            spec: Spec = f.metadata["spec"]
            value = spec.check(f"{where}.{f.name}", getattr(self, f.name))
            object.__setattr__(self, f.name, value)
        self._check_together(where)

    def _check_together(self, where: str) -> None:
        """Checks across fields of one part (override)."""

    @classmethod
    def specs(cls) -> dict:
        """``{field name: Spec}`` in declaration order."""
        return {f.name: f.metadata["spec"] for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    def replace(self, _as: str | None = None, **changes: Any) -> Any:
        """A copy with some fields changed: the changed fields checked as at construction, then
        the checks across fields.  The others were checked when this part was made, and a
        check's output passes it unchanged, so they are not checked again (a field sweep builds
        each of its thousands of scenarios by a chain of replaces).

        >>> from models.sim.parts import Workload
        >>> w = Workload().replace(qd=4)
        >>> w.qd, w == Workload(qd=4)
        (4, True)
        >>> Workload().replace(qd=0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: workload.qd must be a whole number from 1 to 4096 ... got 0
        """
        where = _as or self.part_name
        cls = type(self)
        check_names(cls, changes, where)
        specs = _specs(cls)
        new = object.__new__(cls)
        new.__dict__.update(self.__dict__)
        for name, value in changes.items():
            object.__setattr__(new, name, specs[name].check(f"{where}.{name}", value))
        new._check_together(where)
        return new

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore


@functools.cache
def _specs(cls: type) -> dict:
    """``cls.specs()``, once per part class."""
    return cls.specs()  # type: ignore[attr-defined]


def check_names(cls: Any, values: dict, where: str, known: list | None = None) -> None:
    """``ValueError`` for any key of ``values`` that is not a field."""
    names = known if known is not None else list(_specs(cls))
    for key in values:
        if key not in names:
            near = difflib.get_close_matches(key, names, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ValueError(f"{where} has no parameter {key!r}{hint} (known: {', '.join(names)})")

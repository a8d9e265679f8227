"""Model-versus-measurement comparisons, collected in one registry so the book can list them all.

Each chapter's comparisons live in a module of this package (``models/validation/<topic>.py``) as a
function decorated with :func:`comparisons`; the function computes model predictions, reads the
measurements, and returns :class:`Comparison` rows.  A chapter calls its function, shows the rows and
asserts they pass; the validation dashboard calls :func:`run_all` and shows every row of every chapter.

Not every row is a test.  ``kind`` says what a row is (:data:`KINDS`):

``"check"`` (the default)
    A prediction that could have come out wrong: it counts, and :func:`assert_all_pass` requires it to
    hold.
``"fit"``
    A value the model was fitted to (it agrees by construction): shown so the reader sees what was used,
    never counted as a pass.
``"context"``
    A row that cannot fail for the data at hand (e.g. a bound far from binding): shown, not counted.
``"failing"``
    A check that fails, kept on record with its reason in ``why``: it counts as a failed check, and
    :func:`assert_all_pass` raises if it ever *passes*, so the text that explains the failure stays true.

>>> row = Comparison("ch2", "wire time, 48-byte request", measured=1.1e-6, predicted=1.104e-6,
...                  unit="s", rel_tol=0.01, why="the source rounds to two digits", source="Butterfield 2017")
>>> row.passed, row.counts, row.result
(True, True, 'pass')
>>> Comparison("ch2", "fitted rate", 1.0, 1.0, "MB/s", rel_tol=0.1, why="fitted here", kind="fit").counts
False
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

__all__ = [
    "KINDS",
    "Comparison",
    "comparisons",
    "registered",
    "run_all",
    "run",
    "assert_all_pass",
    "checks",
]

#: The four kinds of comparison row, described in the module docstring (a test that counts, a fitted
#: value, context that cannot fail, a check recorded as failing).
KINDS = ("check", "fit", "context", "failing")


@dataclass(frozen=True)
class Comparison:
    """One model prediction held against one measured (or source-stated) value.

    Parameters
    ----------
    chapter : str
        Where the comparison appears, e.g. ``"ch2"``.
    quantity : str
        What is compared, in words.
    measured, predicted : float
        The measured or source-stated value, and the model's value, in ``unit``.
    unit : str
        Unit of both values (``"s"``, ``"us"``, ``"IOPS"``, ``"MB/s"``, ``"%"``...).
    rel_tol, abs_tol : float, optional
        Allowed relative error ``|p - m| / |m|`` and/or absolute error ``|p - m|``; the row passes when
        either stated tolerance holds.  At least one must be given.
    why : str
        Why this tolerance: the precision the source states, measurement noise, a known model gap.
    source : str
        Where the measurement comes from (author and year, dataset name).
    kind : str
        One of :data:`KINDS`; ``"check"`` unless the row is a fit, context, or a known failure.
    """

    chapter: str
    quantity: str
    measured: float
    predicted: float
    unit: str
    rel_tol: float | None = None
    abs_tol: float | None = None
    why: str = ""
    source: str = ""
    extra: dict = field(default_factory=dict, compare=False)
    kind: str = "check"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.quantity}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.rel_tol is None and self.abs_tol is None:
            raise ValueError(f"{self.quantity}: a comparison needs rel_tol or abs_tol")
        for name in ("rel_tol", "abs_tol"):
            v = getattr(self, name)
            if v is not None and not (v >= 0 and math.isfinite(v)):
                raise ValueError(
                    f"{self.quantity}: {name} must be a non-negative number, got {v!r}"
                )
        if not self.why:
            raise ValueError(f"{self.quantity}: state why the tolerance is what it is (why=...)")
        for name in ("measured", "predicted"):
            if not math.isfinite(float(getattr(self, name))):
                raise ValueError(
                    f"{self.quantity}: {name} must be finite, got {getattr(self, name)!r}"
                )

    @property
    def abs_error(self) -> float:
        return abs(float(self.predicted) - float(self.measured))

    @property
    def rel_error(self) -> float:
        m = abs(float(self.measured))
        return self.abs_error / m if m else math.inf

    @property
    def passed(self) -> bool:
        ok_rel = self.rel_tol is not None and self.rel_error <= self.rel_tol
        ok_abs = self.abs_tol is not None and self.abs_error <= self.abs_tol
        return bool(ok_rel or ok_abs)

    @property
    def counts(self) -> bool:
        """True for rows that are tests (``"check"`` and ``"failing"``); fits and context never count."""
        return self.kind in ("check", "failing")

    @property
    def result(self) -> str:
        """``"pass"``/``"FAIL"`` for a check, ``"fails (known)"``, ``"fit"`` or ``"context"``."""
        if self.kind == "check":
            return "pass" if self.passed else "FAIL"
        if self.kind == "failing":
            return "fails (known)" if not self.passed else "passes (expected to fail)"
        return self.kind

    @property
    def tolerance(self) -> str:
        parts = []
        if self.rel_tol is not None:
            parts.append(f"±{self.rel_tol:.3g} rel")
        if self.abs_tol is not None:
            parts.append(f"±{self.abs_tol:.3g} {self.unit}")
        return " or ".join(parts)

    def row(self) -> dict:
        """A flat dict for a table: chapter, quantity, measured, predicted, unit, error, tolerance, pass."""
        d = asdict(self)
        d.pop("extra")
        d.update(
            rel_error=self.rel_error,
            tolerance=self.tolerance,
            passed=self.passed,
            counts=self.counts,
            result=self.result,
        )
        return d


_REGISTRY: dict[str, Callable[[], list[Comparison]]] = {}


def comparisons(
    name: str,
) -> Callable[[Callable[[], list[Comparison]]], Callable[[], list[Comparison]]]:
    """Register a function returning a chapter's comparisons under ``name`` (e.g. ``"ch2.wire"``)."""

    def register(fn: Callable[[], list[Comparison]]) -> Callable[[], list[Comparison]]:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise ValueError(f"comparison set {name!r} is registered twice")
        _REGISTRY[name] = fn
        return fn

    return register


def _import_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


def registered() -> list[str]:
    """Names of every registered comparison set, after importing every module of this package."""
    _import_all()
    return sorted(_REGISTRY)


def run(name: str) -> list[Comparison]:
    """Run one registered comparison set."""
    _import_all()
    if name not in _REGISTRY:
        raise ValueError(f"unknown comparison set {name!r}; known: {sorted(_REGISTRY)}")
    return list(_REGISTRY[name]())


def run_all() -> list[Comparison]:
    """Run every registered comparison set, in name order."""
    return [c for name in registered() for c in _REGISTRY[name]()]


def checks(rows: list[Comparison]) -> list[Comparison]:
    """The rows that count as tests (kind ``"check"`` or ``"failing"``), in order."""
    return [r for r in rows if r.counts]


def assert_all_pass(rows: list[Comparison]) -> None:
    """Raise ``AssertionError`` listing every check outside its tolerance.

    Rows of kind ``"fit"`` and ``"context"`` are not tests and are skipped.  A row of kind ``"failing"``
    must stay outside its tolerance: if it passes, the explanation of its failure is out of date, and
    that is reported too.
    """
    bad = [r for r in rows if r.kind == "check" and not r.passed]
    stale = [r for r in rows if r.kind == "failing" and r.passed]
    lines = [
        f"{r.chapter} {r.quantity}: measured {r.measured:g} predicted {r.predicted:g} {r.unit} "
        f"(error {r.rel_error:.3g} rel, tolerance {r.tolerance})"
        for r in bad
    ]
    lines += [
        f"{r.chapter} {r.quantity}: recorded as failing but now within {r.tolerance} "
        f"(measured {r.measured:g}, predicted {r.predicted:g} {r.unit}); update its kind and text"
        for r in stale
    ]
    if lines:
        raise AssertionError("comparisons outside tolerance:\n" + "\n".join(lines))

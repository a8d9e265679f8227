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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the registry itself needs no pandas
    import pandas as pd

__all__ = [
    "KINDS",
    "Comparison",
    "comparisons",
    "registered",
    "run_all",
    "run",
    "run_sets",
    "assert_all_pass",
    "checks",
    "SetInfo",
    "set_info",
    "tally",
    "tally_by_chapter",
    "TALLY_COLUMNS",
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


@dataclass(frozen=True, order=True)
class SetInfo:
    """What a comparison set's registered name says: ``"ch9.kernel"`` is chapter 9's set ``kernel``.

    Sorting :class:`SetInfo` values puts the sets in the book's order (chapter number, then topic).
    """

    number: int
    topic: str
    chapter: str
    name: str


_NAME = re.compile(r"^(?P<chapter>ch(?P<number>[1-9][0-9]*))\.(?P<topic>[a-z0-9_]+)$")
_REGISTRY: dict[str, Callable[[], list[Comparison]]] = {}
_INFO: dict[str, SetInfo] = {}


def _parse_name(name: str) -> SetInfo:
    m = _NAME.match(name)
    if m is None:
        raise ValueError(
            f"comparison set {name!r}: name it '<chapter>.<topic>', e.g. 'ch9.kernel' "
            "(chapter 'ch' and its number, topic in lower case)"
        )
    return SetInfo(int(m["number"]), m["topic"], m["chapter"], name)


def comparisons(
    name: str,
) -> Callable[[Callable[[], list[Comparison]]], Callable[[], list[Comparison]]]:
    """Register a function returning a chapter's comparisons under ``name`` (e.g. ``"ch2.wire"``).

    ``name`` is ``"ch<N>.<topic>"``: the chapter the rows belong to (every row's ``chapter`` must be
    ``"ch<N>"``, checked by :func:`run_sets`) and a topic.
    """
    info = _parse_name(name)

    def register(fn: Callable[[], list[Comparison]]) -> Callable[[], list[Comparison]]:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise ValueError(f"comparison set {name!r} is registered twice")
        _REGISTRY[name] = fn
        _INFO[name] = info
        return fn

    return register


def _import_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


def registered() -> list[str]:
    """Names of every registered comparison set, after importing every module of this package."""
    _import_all()
    return sorted(_REGISTRY)


def set_info(name: str) -> SetInfo:
    """The chapter and topic of the registered set ``name``."""
    _import_all()
    if name not in _INFO:
        raise ValueError(f"unknown comparison set {name!r}; known: {sorted(_REGISTRY)}")
    return _INFO[name]


def run(name: str) -> list[Comparison]:
    """Run one registered comparison set."""
    _import_all()
    if name not in _REGISTRY:
        raise ValueError(f"unknown comparison set {name!r}; known: {sorted(_REGISTRY)}")
    return list(_REGISTRY[name]())


def run_sets() -> dict[str, list[Comparison]]:
    """Run every registered set once: its rows by set name, in the book's order (chapter, topic).

    Raises ``ValueError`` if a set returns a row of another chapter than its name says.
    """
    out: dict[str, list[Comparison]] = {}
    for info in sorted(set_info(n) for n in registered()):
        rows = list(_REGISTRY[info.name]())
        wrong = sorted({r.chapter for r in rows} - {info.chapter})
        if wrong:
            raise ValueError(f"comparison set {info.name!r} returned rows of {wrong}")
        out[info.name] = rows
    return out


def run_all() -> list[Comparison]:
    """Run every registered comparison set; all their rows, in the book's order (chapter, topic)."""
    return [c for rows in run_sets().values() for c in rows]


#: The columns :func:`tally` counts, after ``rows``: tests, and the rows of each kind.
TALLY_COLUMNS = ("checks", "passing", "known_failures", "fits", "context")


def _counts(rows: Sequence[Comparison]) -> dict:
    kinds = [r.kind for r in rows]
    return {
        "rows": len(rows),
        "checks": sum(r.counts for r in rows),
        "passing": sum(r.kind == "check" and r.passed for r in rows),
        "known_failures": kinds.count("failing"),
        "fits": kinds.count("fit"),
        "context": kinds.count("context"),
    }


def tally(results: Mapping[str, Sequence[Comparison]]) -> pd.DataFrame:
    """One row per comparison set of ``results`` (as :func:`run_sets` returns them), in the book's
    order: ``set``, ``chapter``, ``number`` (the chapter's), ``rows``, then the counts of
    :data:`TALLY_COLUMNS`: tests (checks and known failures), checks that pass, known failures, fits
    and rows of context.  The chapter of each set is the one it was registered under."""
    import pandas as pd

    infos = sorted(set_info(name) for name in results)
    records = [
        {"set": i.name, "chapter": i.chapter, "number": i.number, **_counts(results[i.name])}
        for i in infos
    ]
    cols = ["set", "chapter", "number", "rows", *TALLY_COLUMNS]
    return pd.DataFrame(records, columns=cols)


def tally_by_chapter(results: Mapping[str, Sequence[Comparison]]) -> pd.DataFrame:
    """:func:`tally` summed per chapter (indexed by chapter, in the book's order), with the sets of
    each chapter and the sources its rows cite (each source's name before its first comma)."""
    per_set = tally(results)
    summed = per_set.groupby("chapter", sort=False)[["rows", *TALLY_COLUMNS]].sum()
    sets = per_set.groupby("chapter", sort=False)["set"].agg(", ".join)
    cited: dict[str, set[str]] = {}
    for name, rows in results.items():
        chapter = set_info(name).chapter
        cited.setdefault(chapter, set()).update(r.source.split(",")[0] for r in rows if r.source)
    summed["sets"] = sets
    summed["sources"] = ["; ".join(sorted(cited.get(chapter, set()))) for chapter in summed.index]
    return summed


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

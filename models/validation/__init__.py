"""Model-versus-measurement comparisons, collected in one registry so the book can list them all.

Each chapter's comparisons live in a module of this package (``models/validation/<topic>.py``) as a
function decorated with :func:`comparisons`; the function computes model predictions, reads the
measurements, and returns :class:`Comparison` rows.  A chapter calls its function, shows the rows and
asserts them; the validation dashboard calls :func:`run_sets` and shows every row of every chapter.

Every row says what it is (``kind``, one of :data:`KINDS`), and only tests are counted:

``"audit"``
    The source checked against itself: a number it prints recomputed from other numbers it prints
    (a sum, a quotient, a rounding).  Worth showing, since a source that disagrees with itself must be
    read with care, but it tests no model: never counted as a pass.
``"fit"``
    A value the model was fitted to (a parameter set from this row): it agrees by construction, is
    shown so the reader sees what was used, and is never counted as a pass.
``"test"``
    A model prediction held against a number it was not fitted on, with its tolerance: the only rows
    that count.
``"context"``
    A row shown beside the others that claims nothing (a case outside the model's domain): never
    counted.

An audit or a test that fails is kept on record with its cause in ``fails``: it stays a test (or an
audit) whose :attr:`~Comparison.status` is failing, and :func:`assert_all_pass` raises if it ever
*passes*, so the text that explains the failure stays true.

>>> row = Comparison("ch2", "wire time, 48-byte request",
...                  measured=1.1e-6, predicted=1.104e-6, unit="s",
...                  rel_tol=0.01, why="the source rounds to two digits",
...                  source="Butterfield 2017", kind="test")
>>> row.passed, row.counts, row.status
(True, True, 'pass')
>>> Comparison("ch2", "fitted rate", 1.0, 1.0, "MB/s", rel_tol=0.1,
...            why="fitted here", kind="fit").counts
False
>>> Comparison("ch8", "a sum the notes print", 3.0, 2.0, "us", abs_tol=0.1,
...            why="two digits", kind="audit",
...            fails="the notes add wrongly").status
'fails (known)'
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
    "COUNTED",
    "Comparison",
    "comparisons",
    "registered",
    "run_all",
    "run",
    "run_sets",
    "assert_all_pass",
    "counted",
    "checks",
    "by_kind",
    "kind_counts",
    "summary",
    "SetInfo",
    "set_info",
    "tally",
    "tally_by_chapter",
    "TALLY_COLUMNS",
]

#: The kinds of comparison row, in the order tables show them (see the module docstring).
KINDS = ("audit", "fit", "test", "context")
#: The kinds that may be recorded as failing (with their cause in ``fails``).
_CAN_FAIL = ("audit", "test")
#: The only kind the counts of passes and failures use.
COUNTED = "test"


@dataclass(frozen=True)
class Comparison:
    """One model prediction (or one recomputed number) held against one measured or stated value.

    Parameters
    ----------
    chapter : str
        Where the comparison appears, e.g. ``"ch2"``.
    quantity : str
        What is compared, in words.
    measured, predicted : float
        The measured or source-stated value, and the model's (or the recomputed) value, in ``unit``.
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
        One of :data:`KINDS`, always stated: ``"audit"`` (the source against itself), ``"fit"`` (a
        parameter set from this row), ``"test"`` (a prediction against a number it was not fitted
        on) or ``"context"``.
    fails : str, optional
        For an audit or a test that is outside its tolerance and kept on record: the cause, in words.
        Empty for a row expected to pass.
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
    kind: str = ""
    fails: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"{self.quantity}: kind must be one of {KINDS} (state it), got {self.kind!r}"
            )
        if self.fails and self.kind not in _CAN_FAIL:
            raise ValueError(
                f"{self.quantity}: only an audit or a test can be recorded as failing "
                f"(fails=...), not a row of kind {self.kind!r}"
            )
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
        """The row is within its tolerance (whatever its kind)."""
        ok_rel = self.rel_tol is not None and self.rel_error <= self.rel_tol
        ok_abs = self.abs_tol is not None and self.abs_error <= self.abs_tol
        return bool(ok_rel or ok_abs)

    @property
    def counts(self) -> bool:
        """True for tests (passing or recorded as failing); audits, fits and context never count."""
        return self.kind == COUNTED

    @property
    def expected_to_fail(self) -> bool:
        """True for an audit or a test kept on record as failing (``fails`` states the cause)."""
        return bool(self.fails)

    @property
    def ok(self) -> bool:
        """Whether the row is as recorded (within tolerance, or outside it with a stated cause)."""
        if self.kind not in _CAN_FAIL:
            return True
        return self.passed != self.expected_to_fail

    @property
    def status(self) -> str:
        """``"pass"``/``"FAIL"`` for an audit or a test, ``"fails (known)"`` for one recorded as
        failing (``"passes (expected to fail)"`` if it no longer does), else the kind."""
        if self.kind not in _CAN_FAIL:
            return self.kind
        if self.expected_to_fail:
            return "fails (known)" if not self.passed else "passes (expected to fail)"
        return "pass" if self.passed else "FAIL"

    @property
    def result(self) -> str:
        """The same as :attr:`status` (the column tables show)."""
        return self.status

    @property
    def tolerance(self) -> str:
        parts = []
        if self.rel_tol is not None:
            parts.append(f"±{self.rel_tol:.3g} rel")
        if self.abs_tol is not None:
            parts.append(f"±{self.abs_tol:.3g} {self.unit}")
        return " or ".join(parts)

    def row(self) -> dict:
        """A flat dict for a table: the fields, error, tolerance, passed, counts, status, result."""
        d = asdict(self)
        d.pop("extra")
        d.update(
            rel_error=self.rel_error,
            tolerance=self.tolerance,
            passed=self.passed,
            counts=self.counts,
            status=self.status,
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


#: The columns :func:`tally` counts, after ``rows``: the tests, those that pass, those recorded as
#: failing, and the rows of each other kind.
TALLY_COLUMNS = ("tests", "passing", "known_failures", "audits", "fits", "context")


def kind_counts(rows: Sequence[Comparison]) -> dict:
    """Counts of ``rows`` by what they are: ``rows``; ``tests``, ``passing`` (tests within their
    tolerance), ``known_failures`` (tests recorded as failing); ``audits`` (and
    ``audits_failing``, those recorded as failing), ``fits`` and ``context``.

    >>> from models.validation import Comparison as C
    >>> rows = [C("ch1", "a", 1, 1, "s", abs_tol=0, why="w", kind=k)
    ...         for k in ("audit", "fit")]
    >>> kind_counts(rows)["audits"], kind_counts(rows)["tests"]
    (1, 0)
    """
    kinds = [r.kind for r in rows]
    return {
        "rows": len(rows),
        "tests": kinds.count("test"),
        "passing": sum(r.kind == "test" and r.passed and not r.fails for r in rows),
        "known_failures": sum(r.kind == "test" and bool(r.fails) for r in rows),
        "audits": kinds.count("audit"),
        "audits_failing": sum(r.kind == "audit" and bool(r.fails) for r in rows),
        "fits": kinds.count("fit"),
        "context": kinds.count("context"),
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary(rows: Sequence[Comparison]) -> str:
    """One line for a chapter: how many audits, fits and tests ``rows`` hold, and how the tests and
    audits came out.

    >>> from models.validation import Comparison as C
    >>> kw = dict(abs_tol=0, why="w")
    >>> rows = [C("ch1", "a", 1, 1, "s", kind="test", **kw),
    ...         C("ch1", "b", 1, 2, "s", kind="test", fails="cause", **kw),
    ...         C("ch1", "c", 1, 1, "s", kind="fit", **kw)]
    >>> summary(rows)
    '0 audits, 1 fit and 2 tests: 1 test passes, 1 fails as recorded'
    """
    c = kind_counts(rows)
    audits = _plural(c["audits"], "audit")
    if c["audits_failing"]:
        audits += f" ({c['audits_failing']} showing the source disagreeing with itself)"
    line = f"{audits}, {_plural(c['fits'], 'fit')} and {_plural(c['tests'], 'test')}"
    if c["tests"]:
        passes = "passes" if c["passing"] == 1 else "pass"
        line += f": {_plural(c['passing'], 'test')} {passes}"
        if c["known_failures"]:
            line += f", {c['known_failures']} fail{'s' if c['known_failures'] == 1 else ''}"
            line += " as recorded"
    if c["context"]:
        line += f"; {c['context']} rows of context"
    return line


def _counts(rows: Sequence[Comparison]) -> dict:
    c = kind_counts(rows)
    return {k: c[k] for k in ("rows", *TALLY_COLUMNS)}


def tally(results: Mapping[str, Sequence[Comparison]]) -> pd.DataFrame:
    """One row per comparison set of ``results`` (as :func:`run_sets` returns them), in the book's
    order: ``set``, ``chapter``, ``number`` (the chapter's), ``rows``, then the counts of
    :data:`TALLY_COLUMNS`: tests, tests that pass, tests recorded as failing, audits, fits and rows of
    context.  The chapter of each set is the one it was registered under."""
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


def counted(rows: Sequence[Comparison]) -> list[Comparison]:
    """The rows that count: the tests (passing or recorded as failing), in order."""
    return [r for r in rows if r.counts]


#: The former name of :func:`counted`.
checks = counted


def by_kind(rows: Sequence[Comparison]) -> list[Comparison]:
    """``rows`` grouped in the order of :data:`KINDS` (audits, fits, tests, context), each group in
    its original order: how the chapters' tables show them."""
    return sorted(rows, key=lambda r: KINDS.index(r.kind))


def assert_all_pass(rows: Sequence[Comparison]) -> None:
    """Raise ``AssertionError`` listing every audit or test that is not as recorded.

    An audit or a test must be within its tolerance, unless it is recorded as failing (``fails``
    states the cause), in which case it must stay outside it: if it passes, the explanation of its
    failure is out of date, and that is reported too.  Fits and context are not checked.
    """
    bad = [r for r in rows if r.kind in _CAN_FAIL and not r.fails and not r.passed]
    stale = [r for r in rows if r.kind in _CAN_FAIL and r.fails and r.passed]
    lines = [
        f"{r.chapter} {r.kind} {r.quantity}: measured {r.measured:g} predicted {r.predicted:g} "
        f"{r.unit} (error {r.rel_error:.3g} rel, tolerance {r.tolerance})"
        for r in bad
    ]
    lines += [
        f"{r.chapter} {r.kind} {r.quantity}: recorded as failing ({r.fails}) but now within "
        f"{r.tolerance} (measured {r.measured:g}, predicted {r.predicted:g} {r.unit}); update it "
        "and its text"
        for r in stale
    ]
    if lines:
        raise AssertionError("comparisons outside tolerance:\n" + "\n".join(lines))

"""Declaring and running a live figure: :class:`Live` (the declaration),
:func:`evaluate_json` and :func:`browser_call` (one path for the build, the
browser and the tests), and :class:`LiveFigure` (the grid computed at build
time, shown on the page).

Everything here is standard library: the browser's worker imports it.
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import page
from .controls import Control, control_from_json

__all__ = [
    "LIVE_MODULES",
    "Live",
    "LiveFigure",
    "browser_call",
    "evaluate_json",
    "json_data",
    "rounded",
]

#: The ``figures`` modules whose functions run in the browser: this package
#: and every module of ``figures.chapters`` (a chapter's live figures).  Each
#: must import with the standard library alone (checked by ``tests/test_live_figures.py`` and by
#: ``tools/build_live_bundle.py``).
LIVE_MODULES: tuple[str, ...] = (
    "figures.live",
    "figures.chapters.flight",
    "figures.chapters.wire",
    "figures.chapters.bottleneck",
    "figures.chapters.modes",
    "figures.chapters.iscsi",
    "figures.chapters.r2t",
    "figures.chapters.windows",
    "figures.chapters.budget",
    "figures.chapters.nagle",
    "figures.chapters.delack",
    "figures.chapters.sequence",
    "figures.chapters.simulator",
    "figures.chapters.kernel",
    "figures.chapters.control",
    "figures.chapters.predictor",
)

_ID = re.compile(r"^[a-z][a-z0-9-]*$")


# ---------------------------------------------------------------------------
# A figure's result as JSON-able data
# ---------------------------------------------------------------------------


def json_data(obj: Any) -> Any:
    """``obj`` as JSON-able data, non-finite floats as ``None``.

    >>> json_data({"y": (1.5, float("nan"))})
    {'y': [1.5, None]}
    """
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): json_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_data(v) for v in obj]
    if hasattr(obj, "tolist"):  # a NumPy array or scalar
        return json_data(obj.tolist())
    if hasattr(obj, "__float__"):
        return json_data(float(obj))
    raise ValueError(f"figure data must be JSON-able, got {type(obj)!r}")


def rounded(obj: Any, digits: int) -> Any:
    """Floats rounded to ``digits`` significant digits (keeps the page
    small).

    >>> rounded({"y": [1234.5678, 0.0]}, 3)
    {'y': [1230.0, 0.0]}
    """
    if isinstance(obj, float):
        if not math.isfinite(obj) or obj == 0:
            return obj if math.isfinite(obj) else None
        return float(f"{obj:.{digits}g}")
    if isinstance(obj, Mapping):
        return {k: rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [rounded(v, digits) for v in obj]
    if hasattr(obj, "tolist"):
        return rounded(obj.tolist(), digits)
    return obj


# ---------------------------------------------------------------------------
# Calling a figure function: the same path in the build, the browser and
# the tests
# ---------------------------------------------------------------------------


def _function_path(fn: Callable[..., Any]) -> str:
    module = getattr(fn, "__module__", "") or ""
    qualname = getattr(fn, "__qualname__", "") or ""
    if not module.startswith("figures.") or not qualname.isidentifier():
        raise ValueError(
            "function must be defined at module level in a figures module, "
            f"got {module}:{qualname}"
        )
    if module not in LIVE_MODULES:
        raise ValueError(
            f"function: module {module} is not listed in "
            "figures.live.LIVE_MODULES (its functions run in "
            "the browser; see the docstring of figures.live)"
        )
    return f"{module}:{qualname}"


def _call(path: str, kwargs: Mapping[str, Any]) -> dict:
    """Import ``module:function``, call it, return its JSON-able result."""
    module, sep, name = path.partition(":")
    if not sep or module not in LIVE_MODULES:
        raise ValueError(f"function must name a function in one of {LIVE_MODULES}, got {path!r}")
    fn = getattr(importlib.import_module(module), name)
    result = fn(**kwargs)
    if not isinstance(result, Mapping) or not isinstance(result.get("traces"), list):
        raise ValueError(f"{path} must return a dict with a 'traces' list")
    return json_data(result)


def evaluate_json(spec: Mapping[str, Any]) -> dict:
    """Run a figure as described by its page JSON.

    ``spec`` has ``"function"`` (``"module:name"``), ``"fixed"``
    (keyword arguments), ``"controls"`` (as :meth:`Range.to_json` writes
    them) and ``"values"`` (control name to value; a missing one takes the
    control's first-view value).  Each value is coerced by its control.
    """
    controls = [control_from_json(c) for c in spec["controls"]]
    values = dict(spec.get("values") or {})
    unknown = set(values) - {c.name for c in controls}
    if unknown:
        raise ValueError(f"values: no control named {sorted(unknown)}")
    kwargs = dict(spec.get("fixed") or {})
    for c in controls:
        kwargs[c.name] = c.coerce(values.get(c.name, c.value))
    return _call(spec["function"], kwargs)


def browser_call(spec_json: str) -> str:
    """The browser worker's entry point: :func:`evaluate_json` on a JSON
    string, the result as a JSON string (full precision: JSON numbers
    round-trip a float exactly)."""
    return json.dumps(evaluate_json(json.loads(spec_json)), allow_nan=False, separators=(",", ":"))


# ---------------------------------------------------------------------------
# Declaring a live figure
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Live:
    """A figure whose function runs both at build time and in the browser.

    Parameters
    ----------
    fig_id : str
        Unique id on the page (lower case, digits and dashes).
    function : callable
        Module-level function of a module in :data:`LIVE_MODULES`; called
        with ``**fixed`` and one keyword per control, returns
        ``{"traces": [...], "shapes": [...], "title": ...}``.
    controls : sequence of Range, Number or Select
        The controls, in the order shown.
    fixed : mapping
        Keyword arguments that are not controls; JSON-able.
    layout : mapping
        Plotly layout shared by every point.
    caption : str
        What the figure shows and what the grid covers; the page adds a
        status line saying whether the figure is precomputed or live.
    exact : bool
        The browser's numbers equal CPython's bit for bit (the browser test
        checks this); ``False`` allows a relative 1e-12.
    digits : int
        Significant digits kept in the precomputed grid.
    precompute : sequence of str, optional
        Names of the controls whose grids are precomputed (default: all).  Every other control
        is precomputed at its first-view value only, and a page that cannot run Python keeps
        it there (``live.js``): for a figure with more controls than the product of their
        grids can hold.
    """

    fig_id: str
    function: Callable[..., Mapping[str, Any]]
    controls: Sequence[Control]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    layout: Mapping[str, Any] = field(default_factory=dict)
    caption: str = ""
    exact: bool = True
    digits: int = 5
    precompute: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if not _ID.match(self.fig_id):
            raise ValueError(f"fig_id must match {_ID.pattern}, got {self.fig_id!r}")
        _function_path(self.function)
        controls = tuple(self.controls)
        if not controls:
            raise ValueError("controls must name at least one control")
        names = [c.name for c in controls]
        labels = [c.label for c in controls]
        if len(set(names)) != len(names) or len(set(labels)) != len(labels):
            raise ValueError(f"controls: names and labels must be unique, got {names}")
        clash = set(names) & set(self.fixed)
        if clash:
            raise ValueError(f"fixed: {sorted(clash)} are also controls")
        fixed = dict(self.fixed)
        if json.loads(json.dumps(fixed)) != fixed:
            raise ValueError(
                "fixed must survive a JSON round trip unchanged "
                "(plain numbers, strings, lists, dicts), got "
                f"{fixed!r}"
            )
        if self.precompute is not None:
            unknown = set(self.precompute) - set(names)
            if unknown or isinstance(self.precompute, str):
                raise ValueError(
                    f"precompute must name controls among {names}, got {self.precompute!r}"
                )
            object.__setattr__(self, "precompute", tuple(self.precompute))
        object.__setattr__(self, "controls", controls)
        object.__setattr__(self, "fixed", fixed)

    def precomputed(self, control: Control) -> bool:
        """Whether ``control``'s whole grid is precomputed (else only its first view)."""
        return self.precompute is None or control.name in self.precompute

    def grid_indices(self, control: Control) -> list[int]:
        """The indices into ``control``'s grid that the precomputed frames cover."""
        if self.precomputed(control):
            return list(range(len(control.grid)))
        return [list(control.grid).index(control.value)]

    @property
    def path(self) -> str:
        """``"module:function"``, as the browser imports it."""
        return _function_path(self.function)

    def spec_json(self) -> dict[str, Any]:
        """What the page (and :func:`evaluate_json`) needs to run it."""
        out = {
            "function": self.path,
            "fixed": dict(self.fixed),
            "controls": [c.to_json() for c in self.controls],
        }
        if self.precompute is not None:
            out["precompute"] = list(self.precompute)  # live.js keeps the others at their value
        return out

    def evaluate(self, **values: Any) -> dict:
        """The figure at control values (default: the first view), exactly
        as the browser computes it."""
        return evaluate_json({**self.spec_json(), "values": values})

    def figure(self) -> LiveFigure:
        """Compute the grid and return the figure for the page."""
        return LiveFigure(self)


# ---------------------------------------------------------------------------
# The figure on the page: the declaration and its grid
# ---------------------------------------------------------------------------


def _frames(live: Live) -> tuple[dict[str, dict], float]:
    """Every precomputed grid point's figure, rounded, keyed by its grid indices; and the
    seconds they took to compute."""
    t0 = time.perf_counter()
    frames = {}
    for idx in itertools.product(*(live.grid_indices(c) for c in live.controls)):
        values = {c.name: c.grid[i] for c, i in zip(live.controls, idx)}
        frames[",".join(map(str, idx))] = rounded(live.evaluate(**values), live.digits)
    return frames, time.perf_counter() - t0


def _stored_frames(live: Live) -> tuple[dict[str, dict], float]:
    """:func:`_frames`, kept in the simulation cache's folder when it is on
    (:mod:`models.kernel.simcache`; build time only): a chapter's grid is computed under its
    test, again in the book build, and some again by the tests of its figure.  The frames are a
    pure function of the declaration (its spec: function, fixed values, controls and grids) and of
    the code of ``models`` and ``figures``, which the key holds; the browser's functions read no
    file.  Frames are stored only when JSON gives them back unchanged, with the seconds their
    computation took (read back, that is still what they cost, not the read)."""
    from models.kernel import simcache

    spec = json.dumps([live.spec_json(), live.digits], sort_keys=True)
    figures = simcache.fingerprint(Path(__file__).resolve().parents[1])  # (the package's code)
    k = simcache.key_of(figures, "live frames", spec)
    return simcache.once(k, _read_frames, lambda: _frames(live), _write_frames)  # (off: computed)


def _write_frames(k: str, got: tuple[dict[str, dict], float]) -> None:
    """Keep the frames and their computing time under ``k``, if JSON gives them back unchanged."""
    from models.kernel import simcache

    frames, seconds = got
    if json.loads(json.dumps(frames)) == frames:
        simcache.store_json(k, {"frames": frames, "compute_seconds": seconds})


def _read_frames(k: str) -> tuple[dict[str, dict], float] | None:
    """The frames and their computing time stored under ``k``, or ``None``."""
    from models.kernel import simcache

    got = simcache.load_json(k)
    if not isinstance(got, dict) or set(got) != {"frames", "compute_seconds"}:
        return None
    frames, seconds = got["frames"], got["compute_seconds"]
    if not isinstance(frames, dict) or not isinstance(seconds, float):
        return None
    return frames, seconds


class LiveFigure:
    """A :class:`Live` declaration with its grid computed: the Plotly
    figure on the page (built by :meth:`Live.figure`).

    Attributes
    ----------
    live : Live
        The declaration.
    axes : dict of str to list
        Control label to its precomputed values, in the controls' order.
    frames : dict of str to dict
        Every grid point's figure, rounded to ``live.digits`` significant
        digits, keyed by the grid indices joined with commas (``"0,2"``).
    compute_seconds : float
        Time taken to compute the grid (by the process that computed it, when it was read
        from the simulation cache's folder).
    """

    def __init__(self, live: Live):
        self.live = live
        self.fig_id = live.fig_id
        self.layout = dict(live.layout)
        self.caption = live.caption
        self.axes = {c.label: [c.grid[i] for i in live.grid_indices(c)] for c in live.controls}
        self.frames: dict[str, dict]
        self.frames, self.compute_seconds = _stored_frames(live)

    @property
    def grid_size(self) -> int:
        """Number of precomputed grid points."""
        return len(self.frames)

    def _index(self, values: Mapping[str, Any]) -> str:
        by_key = {k: c for c in self.live.controls for k in (c.name, c.label)}
        chosen: dict[str, Any] = {}
        for key, value in values.items():
            if key not in by_key:
                raise ValueError(f"no control named {key!r}; known: {sorted(self.axes)}")
            chosen[by_key[key].name] = value
        idx = []
        for c in self.live.controls:
            value = chosen.get(c.name, c.value)
            if value not in c.grid or not self.live.precomputed(c) and value != c.value:
                raise ValueError(
                    f"{c.label} = {value!r} is not on the grid {self.axes[c.label]!r}"
                )
            idx.append(list(c.grid).index(value))
        return ",".join(map(str, idx))

    def frame(self, **values: Any) -> dict:
        """The precomputed frame for control values (keys: control labels
        or names; values on the grid; missing ones take the first view)."""
        return self.frames[self._index(values)]

    def payload(self) -> dict:
        """The page's JSON: the spec, the grid, the layout and the key of
        the first view."""
        return {
            **self.live.spec_json(),
            "exact": self.live.exact,
            "frames": self.frames,
            "layout": self.layout,
            "default": self._index({}),
        }

    def to_html(self) -> str:
        """The figure as an HTML fragment, drawn by the book's
        ``static/qd/live.js`` (with Plotly.js, both served by the book)."""
        return page.figure_html(
            self.fig_id, self.payload(), self.grid_size, self.caption, self.live.path
        )

    def _repr_html_(self) -> str:
        return self.to_html()

    def show(self):
        """Display in a notebook (and so in the built page)."""
        from IPython.display import HTML, display  # only in a notebook

        display(HTML(self.to_html()))

    def plot(self, ax=None, **values: Any):
        """Draw the live function at ``values`` with Matplotlib, for a
        static image (the printed book); returns the axes (see
        :func:`figures.live.image.draw`)."""
        from .image import draw  # Matplotlib: never in the browser

        return draw(self.live.evaluate(**values), self.layout, ax)

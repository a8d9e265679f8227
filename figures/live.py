"""Figures that stay interactive in the HTML book: the real Python model
runs in the reader's browser, and a precomputed grid is the first view and
the fallback.

How a live figure works
-----------------------
A figure is one Python function in a ``figures`` module that returns a
Plotly figure as plain data::

    def rtt_tpt(sp_us: float, cp_us: float, cl_us: float,
                max_qd: int = 16, ops: int = 400) -> dict:
        ...
        return {"traces": [{"x": [...], "y": [...], "name": "RTT"}],
                "shapes": [...], "title": "..."}   # shapes, title optional

and a :class:`Live` declaration naming that function, its controls and the
keyword arguments that stay fixed::

    RTT_TPT = Live(
        "ch1-rtt-tpt", rtt_tpt,
        controls=[Range("sp_us", "SP (µs)", 1, 60,
                        grid=[5, 10, SP_US, 25, 40], value=SP_US), ...],
        fixed={"max_qd": 16, "ops": 400},
        layout={"xaxis": {"title": {"text": "queue depth QD"}}},
        caption="...")

The chapter shows it with ``live = RTT_TPT.figure(); live.show()``.

* **At build time** :meth:`Live.figure` calls the function at every point
  of the controls' grids (the product of the ``grid`` of every control) and
  embeds the results, rounded to ``digits`` significant digits, in the page
  as JSON.  The default point is drawn at once when the page opens.
  :meth:`LiveFigure.plot` draws any point with Matplotlib for a static
  image (the printed book), from the same function.
* **In the browser** ``static/qd/live.js`` (one small script for every
  figure; no framework, no bundler) draws the precomputed point nearest to
  the controls.  On the first change of a control, or a click on
  "run live", it starts ``static/qd/live-worker.js`` in a Web Worker, which
  loads Pyodide (CPython in WebAssembly, served by the book from
  ``_static/pyodide/``) and the book's own Python (``models`` and
  ``figures``, zipped by ``tools/build_live_bundle.py`` into
  ``_static/live/queue-depth-python.zip``).  From then on every change
  calls :func:`browser_call`, which calls the same function with the
  controls' values, and the figure is redrawn with Plotly.  Without Web
  Workers or WebAssembly, or if loading fails, the figure stays on the grid
  (values snap to the nearest grid point) and its status line says so.

Rules for a live figure's function
----------------------------------
* Module level in a ``figures`` module listed in :data:`LIVE_MODULES`.
  That module, and everything it imports when imported, uses only the
  standard library and the standard-library parts of ``models``
  (``models.analytic``, ``models.framing``, ``models.ring`` ...): no NumPy,
  SymPy, pandas, Matplotlib or Plotly at import time and in the function.
  ``tests/test_live_figures.py`` imports every listed module and calls every
  declared figure with those packages blocked.
* It returns JSON-able data: numbers, strings, lists and dicts.  NaN and
  infinities become ``null`` (Plotly leaves a gap).
* It is deterministic, and avoids results that depend on the Python
  version or the C library: use :func:`math.fsum` for sums of floats
  (``sum`` rounds differently from Python 3.12 on; Pyodide runs 3.14, the
  build 3.11).  ``Live(exact=False)`` declares a figure whose numbers may
  differ in the last bits (say through ``math.exp``); the browser test then
  compares to a relative 1e-12 instead of exactly.
* Values arrive coerced by the control: a float for a :class:`Range` or
  :class:`Number`, an int when ``integer=True``, one of the options for a
  :class:`Select`.  ``fixed`` must survive a JSON round trip unchanged
  (lists, not tuples), because the browser receives it from the page.

How to convert a figure of the old kind (a grid only)
-----------------------------------------------------
1. Move the body of its ``_frame``/``frame`` helper into a module-level
   function of a standard-library-only ``figures`` module (split the module
   if it must also import Matplotlib, pandas or the simulator's heavy
   parts; import those inside the functions that need them).  Data loaded
   with pandas at build time goes into ``fixed`` as plain lists.
2. Add the module to :data:`LIVE_MODULES`.
3. Replace ``LiveFigure(fig_id, axes, compute, ...)`` with a :class:`Live`
   declaration: one control per old axis -- a :class:`Range` (slider and
   number box) or :class:`Number` (number box) with a stated ``min``/``max``
   that contains the old grid, or a :class:`Select` for a choice -- and
   ``.figure()`` in the chapter.  ``frame(**values)`` still returns a
   precomputed point (keys: control names or labels), ``frames``,
   ``grid_size`` and ``compute_seconds`` are unchanged.
4. Say in the caption what the grid covers and what the live model runs;
   replace the chapter's text about sliders that "switch between curves"
   and remove its ipywidgets explorer if the live figure now has its
   controls (no control on a page may look usable and do nothing).
5. In ``book/status.md``, move the figure's row of ``MAIN_FIGURES`` from
   "grid" to "live" with its ``module:function`` and what it runs in the
   browser.  If the module builds the declaration from data (like
   :func:`figures.modes.mean_median_figure`), add a representative call to
   ``declared()`` in ``tests/test_live_figures.py``.
6. Integer controls need room between their first two grid points (the
   browser test sets a value there), and a Select cannot be the only
   control (the browser test needs one number to set off the grid).
7. Rebuild the bundle (``make book`` does) and run
   ``tests/test_live_figures.py`` and ``browser_tests/test_live.py``; the
   latter finds every live figure in the built book by itself, sets its
   number controls between their first two grid points, compares the
   plotted numbers with the function run in CPython and reports the
   timings.  The grid (``grid`` of each control) is what a browser without
   WebAssembly shows, and it weighs on the page: keep a page under 1 MiB.

The old form ``LiveFigure(fig_id, axes, compute, ...)`` still works: it is a
grid-only figure (sliders step through the grid; no Python in the browser),
drawn by the same script.
"""

from __future__ import annotations

import html
import importlib
import itertools
import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = [
    "LIVE_MODULES",
    "Range",
    "Number",
    "Select",
    "Live",
    "LiveFigure",
    "browser_call",
    "evaluate_json",
    "iops_qd_layout",
]

#: The ``figures`` modules whose functions run in the browser.  Each must
#: import with the standard library alone (checked by
#: ``tests/test_live_figures.py`` and by ``tools/build_live_bundle.py``).
LIVE_MODULES: tuple[str, ...] = (
    "figures.live",
    "figures.flight",
    "figures.wire",
    "figures.bottleneck",
    "figures.modes",
    "figures.iscsi",
    "figures.windows",
    "figures.budget",
    "figures.nagle",
    "figures.delack",
    "figures.simulator",
    "figures.kernel",
    "figures.control",
)

_ID = re.compile(r"^[a-z][a-z0-9-]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------------
# Cleaning results for JSON
# ---------------------------------------------------------------------------


def _finite_or_none(obj: Any) -> Any:
    """``obj`` as JSON-able data, non-finite floats as ``None``."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_or_none(v) for v in obj]
    if hasattr(obj, "tolist"):  # a NumPy array or scalar
        return _finite_or_none(obj.tolist())
    if hasattr(obj, "__float__"):
        return _finite_or_none(float(obj))
    raise ValueError(f"figure data must be JSON-able, got {type(obj)!r}")


def _round(obj: Any, digits: int) -> Any:
    """Round floats to ``digits`` significant digits (keeps the page small)."""
    if isinstance(obj, float):
        if not math.isfinite(obj) or obj == 0:
            return obj if math.isfinite(obj) else None
        return float(f"{obj:.{digits}g}")
    if isinstance(obj, Mapping):
        return {k: _round(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_round(v, digits) for v in obj]
    if hasattr(obj, "tolist"):
        return _round(obj.tolist(), digits)
    return obj


# ---------------------------------------------------------------------------
# Controls
# ---------------------------------------------------------------------------


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


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
        if not _NAME.match(self.name):
            raise ValueError(f"name must be a Python identifier, got {self.name!r}")
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
        """``value`` as the function receives it, or ``ValueError``."""
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
        if not _NAME.match(self.name):
            raise ValueError(f"name must be a Python identifier, got {self.name!r}")
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


def _nice_step(raw: float) -> float:
    """1, 2 or 5 times a power of ten, near ``raw`` (a slider step)."""
    exponent = math.floor(math.log10(raw))
    mantissa = raw / 10**exponent
    nice = 1 if mantissa < 1.5 else 2 if mantissa < 3.5 else 5 if mantissa < 7.5 else 10
    return float(f"{nice * 10.0**exponent:.12g}")


Control = Range | Number | Select
_KINDS = {"range": Range, "number": Number, "select": Select}


def _control_from_json(data: Mapping[str, Any]) -> Control:
    """Rebuild a control from the page's JSON (the browser's side)."""
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


# ---------------------------------------------------------------------------
# Calling a figure function: the same path in the build, the browser and
# the tests
# ---------------------------------------------------------------------------


def _function_path(fn: Callable[..., Any]) -> str:
    module = getattr(fn, "__module__", "") or ""
    qualname = getattr(fn, "__qualname__", "") or ""
    if not module.startswith("figures.") or not _NAME.match(qualname):
        raise ValueError(
            "function must be defined at module level in a figures module, "
            f"got {module}:{qualname}"
        )
    if module not in LIVE_MODULES:
        raise ValueError(
            f"function: module {module} is not listed in "
            "figures.live.LIVE_MODULES (its functions run in "
            "the browser; see this module's docstring)"
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
    return _finite_or_none(result)


def evaluate_json(spec: Mapping[str, Any]) -> dict:
    """Run a figure as described by its page JSON.

    ``spec`` has ``"function"`` (``"module:name"``), ``"fixed"``
    (keyword arguments), ``"controls"`` (as :meth:`Range.to_json` writes
    them) and ``"values"`` (control name to value; a missing one takes the
    control's first-view value).  Each value is coerced by its control.
    """
    controls = [_control_from_json(c) for c in spec["controls"]]
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
    """

    fig_id: str
    function: Callable[..., Mapping[str, Any]]
    controls: Sequence[Control]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    layout: Mapping[str, Any] = field(default_factory=dict)
    caption: str = ""
    exact: bool = True
    digits: int = 5

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
        object.__setattr__(self, "controls", controls)
        object.__setattr__(self, "fixed", fixed)

    @property
    def path(self) -> str:
        """``"module:function"``, as the browser imports it."""
        return _function_path(self.function)

    def spec_json(self) -> dict:
        """What the page (and :func:`evaluate_json`) needs to run it."""
        return {
            "function": self.path,
            "fixed": dict(self.fixed),
            "controls": [c.to_json() for c in self.controls],
        }

    def evaluate(self, **values: Any) -> dict:
        """The figure at control values (default: the first view), exactly
        as the browser computes it."""
        return evaluate_json({**self.spec_json(), "values": values})

    def figure(self) -> LiveFigure:
        """Compute the grid and return the figure for the page."""
        return LiveFigure.from_live(self)


# ---------------------------------------------------------------------------
# The figure on the page
# ---------------------------------------------------------------------------


class LiveFigure:
    """A Plotly figure on the page with its precomputed grid.

    Built by :meth:`Live.figure` (live in the browser), or directly with
    the old signature below (grid only: sliders step through the grid).

    Parameters
    ----------
    fig_id : str
        Unique id on the page (lower case, digits and dashes).
    axes : mapping of str to sequence
        Slider name to the grid values it can take, in order.
    compute : callable
        ``compute(**{name: value})`` for one grid point; returns
        ``{"traces": [...], "shapes": [...]}``.  Parameter names are the
        values of ``arg_names`` (default: the axis names).
    layout : dict
        Plotly layout shared by every grid point.
    defaults : mapping, optional
        The starting value of each slider (default: the middle of each axis).
    arg_names : mapping, optional
        Axis name to keyword name for ``compute`` when the slider labels are
        not identifiers.
    digits : int
        Significant digits kept in the embedded data.
    caption : str
        Shown under the figure.
    """

    def __init__(
        self,
        fig_id: str,
        axes: Mapping[str, Sequence[Any]],
        compute: Callable[..., dict],
        layout: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
        arg_names: Mapping[str, str] | None = None,
        digits: int = 5,
        caption: str = "",
    ):
        if not _ID.match(fig_id):
            raise ValueError(f"fig_id must match {_ID.pattern}, got {fig_id!r}")
        if not axes:
            raise ValueError("axes must name at least one slider")
        for name, values in axes.items():
            if len(values) < 2:
                raise ValueError(
                    f"axes[{name!r}] needs at least two grid values, got {list(values)!r}"
                )
        self.fig_id = fig_id
        self.axes = {k: list(v) for k, v in axes.items()}
        self.arg_names = dict(arg_names or {k: k for k in axes})
        missing = set(self.axes) - set(self.arg_names)
        if missing:
            raise ValueError(f"arg_names: no keyword for axes {sorted(missing)}")
        self.layout = dict(layout or {})
        defaults = dict(defaults or {})
        self.defaults: dict[str, int] = {}
        for k, v in self.axes.items():
            d = defaults.get(k, v[len(v) // 2])
            if d not in v:
                raise ValueError(f"defaults[{k!r}] = {d!r} is not on the grid {v!r}")
            self.defaults[k] = v.index(d)
        self.digits = digits
        self.caption = caption
        self.live: Live | None = None
        t0 = time.perf_counter()
        self.frames: dict[str, dict] = {}
        for idx in itertools.product(*(range(len(v)) for v in self.axes.values())):
            params = {self.arg_names[k]: self.axes[k][i] for k, i in zip(self.axes, idx)}
            result = compute(**params)
            if "traces" not in result:
                raise ValueError("compute must return a dict with a 'traces' list")
            self.frames[",".join(map(str, idx))] = _round(dict(result), digits)
        self.compute_seconds = time.perf_counter() - t0

    @classmethod
    def from_live(cls, spec: Live) -> LiveFigure:
        """The grid of a :class:`Live` declaration, computed now."""
        axes = {c.label: list(c.grid) for c in spec.controls}
        fig = cls(
            spec.fig_id,
            axes,
            spec.evaluate,
            layout=spec.layout,
            defaults={c.label: c.value for c in spec.controls},
            arg_names={c.label: c.name for c in spec.controls},
            digits=spec.digits,
            caption=spec.caption,
        )
        fig.live = spec
        return fig

    @property
    def grid_size(self) -> int:
        """Number of precomputed grid points."""
        return len(self.frames)

    def _index(self, values: Mapping[str, Any]) -> str:
        by_name = {n: label for label, n in self.arg_names.items()}
        chosen: dict[str, Any] = {}
        for key, value in values.items():
            label = key if key in self.axes else by_name.get(key)
            if label is None:
                raise ValueError(f"no control named {key!r}; known: {sorted(self.axes)}")
            chosen[label] = value
        idx = []
        for label, grid in self.axes.items():
            value = chosen.get(label, grid[self.defaults[label]])
            if value not in grid:
                raise ValueError(f"{label} = {value!r} is not on the grid {grid!r}")
            idx.append(grid.index(value))
        return ",".join(map(str, idx))

    def frame(self, **values: Any) -> dict:
        """The precomputed frame for control values (keys: control labels
        or names; values on the grid; missing ones take the first view)."""
        return self.frames[self._index(values)]

    def _payload(self) -> dict:
        if self.live is None:
            controls = [
                {
                    "kind": "steps",
                    "name": self.arg_names[label],
                    "label": label,
                    "grid": grid,
                    "value": grid[self.defaults[label]],
                }
                for label, grid in self.axes.items()
            ]
            payload = {"controls": controls}
        else:
            payload = {**self.live.spec_json(), "exact": self.live.exact}
        payload.update(frames=self.frames, layout=self.layout, default=self._index({}))
        return payload

    def _controls_html(self, controls: list[dict]) -> str:
        fid = self.fig_id
        rows = []
        for n, c in enumerate(controls):
            label = html.escape(c["label"])
            cid = f"{fid}-c{n}"
            if c["kind"] == "steps":
                grid = c["grid"]
                widget = (
                    f'<input type="range" id="{cid}" min="0" '
                    f'max="{len(grid) - 1}" step="1" '
                    f'value="{grid.index(c["value"])}" '
                    f'aria-label="{label}">'
                    f"<output>{html.escape(str(c['value']))}</output>"
                )
            elif c["kind"] == "select":
                options = "".join(
                    f'<option value="{i}"'
                    f"{' selected' if o == c['value'] else ''}>"
                    f"{html.escape(str(o))}</option>"
                    for i, o in enumerate(c["grid"])
                )
                widget = f'<select id="{cid}" aria-label="{label}">{options}</select>'
            else:
                # A range: the slider (set up by live.js, which knows the
                # log scale) and a number box; a number: the box alone.
                slider = c["kind"] == "range"
                box_id = f"{cid}-box" if slider else cid
                widget = f'<input type="range" id="{cid}" aria-label="{label}">' if slider else ""
                widget += (
                    f'<input type="number" class="qd-live-number" '
                    f'id="{box_id}" min="{c["min"]}" max="{c["max"]}" '
                    f'step="{1 if c["integer"] else "any"}" '
                    f'value="{c["value"]}" aria-label="{label}">'
                    f'<span class="qd-live-range">{c["min"]:g}–'
                    f"{c['max']:g}</span>"
                )
            rows.append(
                f'<div class="qd-live-control" data-kind="{c["kind"]}"'
                f' data-name="{html.escape(c["name"])}">'
                f'<label for="{cid}">{label}</label>{widget}</div>'
            )
        return "".join(rows)

    def to_html(self) -> str:
        """The figure as an HTML fragment, drawn by the book's
        ``static/qd/live.js`` (with Plotly.js, both served by the book)."""
        fid = self.fig_id
        payload = self._payload()
        data = json.dumps(payload, separators=(",", ":"), allow_nan=False)
        # "</" cannot end the script element early inside JSON strings.
        data = data.replace("</", "<\\/")
        live = f' data-live="{html.escape(self.live.path)}"' if self.live else ""
        caption = (
            f'<span class="qd-live-text">{html.escape(self.caption)}</span> '
            if self.caption
            else ""
        )
        return (
            f'<div class="qd-live-figure" id="{fid}" data-mode="static"'
            f' data-grid-points="{self.grid_size}"{live}>\n'
            f'<div class="qd-live-plot" id="{fid}-plot" style="width:100%;'
            'max-width:760px;height:420px">This figure is drawn '
            "by the book's HTML pages, which serve Plotly.js and the live "
            "Python themselves; in a notebook, call its function or use "
            "its .plot() method.</div>\n"
            f'<div class="qd-live-controls">'
            f"{self._controls_html(payload['controls'])}</div>\n"
            f'<div class="qd-live-caption">{caption}'
            '<span class="qd-live-status" role="status"></span></div>\n'
            f'<script type="application/json" id="{fid}-data">{data}'
            "</script>\n</div>"
        )

    def _repr_html_(self) -> str:
        return self.to_html()

    def show(self):
        """Display in a notebook (and so in the built page)."""
        from IPython.display import HTML, display

        display(HTML(self.to_html()))

    def plot(self, ax=None, **values: Any):
        """Draw a point with Matplotlib, for a static image (the printed
        book): the live function at ``values`` for a live figure, else the
        precomputed frame.  Lines, markers, dashes, steps, shapes, the
        title and the axis titles are drawn; returns the axes."""
        import matplotlib.pyplot as plt

        if self.live is not None:
            frame = self.live.evaluate(**values)
        else:
            frame = self.frame(**values)
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 3.8))
        for n, trace in enumerate(frame["traces"]):
            _plot_trace(ax, trace, n)
        for shape in frame.get("shapes", []):
            if shape.get("type", "line") == "line":
                ax.plot(
                    [shape["x0"], shape["x1"]],
                    [shape["y0"], shape["y1"]],
                    color=shape.get("line", {}).get("color", "grey"),
                    lw=1,
                )
        layout = {**self.layout, **{k: frame[k] for k in ("title",) if k in frame}}
        for axis, setter in (("xaxis", ax.set_xlabel), ("yaxis", ax.set_ylabel)):
            title = layout.get(axis, {}).get("title", {})
            setter(title.get("text", "") if isinstance(title, dict) else title)
            if layout.get(axis, {}).get("type") == "log":
                (ax.set_xscale if axis == "xaxis" else ax.set_yscale)("log")
            rng = layout.get(axis, {}).get("range")
            if rng and layout.get(axis, {}).get("type") != "log":
                (ax.set_xlim if axis == "xaxis" else ax.set_ylim)(*rng)
        if layout.get("yaxis", {}).get("rangemode") == "tozero":
            ax.set_ylim(bottom=0)
        title = layout.get("title")
        if title:
            ax.set_title(title["text"] if isinstance(title, dict) else title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        return ax


_DASH = {"dash": "--", "dot": ":", "dashdot": "-.", "solid": "-"}


def _plot_trace(ax, trace: Mapping[str, Any], n: int) -> None:
    """One Plotly scatter trace on Matplotlib axes."""
    x = [v if v is not None else math.nan for v in trace.get("x", [])]
    y = [v if v is not None else math.nan for v in trace.get("y", [])]
    mode = trace.get("mode", "lines+markers")
    line = trace.get("line", {})
    kw: dict[str, Any] = {
        "label": trace.get("name"),
        "color": line.get("color", trace.get("marker", {}).get("color", f"C{n}")),
    }
    if "lines" in mode:
        kw.update(ls=_DASH.get(line.get("dash", "solid"), "-"), lw=line.get("width", 1.5))
    else:
        kw.update(ls="none")
    if "markers" in mode:
        kw.update(marker="o", ms=3 if "lines" in mode else 6)
    if line.get("shape") == "hv":
        kw.update(drawstyle="steps-post")
    ax.plot(x, y, **kw)


def iops_qd_layout(max_qd: float, legend_x: float = 0.5) -> dict:
    """The Plotly layout shared by the book's IOPS-against-queue-depth
    figures (y in thousand IOPS)."""
    return {
        "xaxis": {"title": {"text": "queue depth QD"}, "range": [0, max_qd]},
        "yaxis": {"title": {"text": "thousand IOPS"}, "rangemode": "tozero"},
        "legend": {"x": legend_x, "y": 0.05, "font": {"size": 11}},
        "margin": {"t": 40, "r": 10, "b": 45, "l": 55},
    }

"""Figures that stay interactive in the HTML book: the real Python model
runs in the reader's browser, and a precomputed grid is the first view and
the fallback.

The package, by concept (all standard library: the browser imports it):

* ``figures.live.controls`` -- ``Range``, ``Number``,
  ``Select``: what a reader can change, checked when declared and
  coerced when a value arrives.
* ``figures.live.runtime`` -- ``Live`` (a declaration),
  ``evaluate_json`` and ``browser_call`` (one path for the build,
  the browser and the tests), ``LiveFigure`` (the grid, computed at
  build time) and ``LIVE_MODULES``.
* ``figures.live.page`` -- the HTML fragment and JSON the page carries
  for ``static/qd/live.js``, and the Plotly layout and trace the
  IOPS-against-QD figures share.
* ``figures.live.image`` -- a figure drawn with Matplotlib for a static
  image (imported only when called).

The figures themselves, one module per figure, are in
:mod:`figures.chapters`.

How a live figure works
-----------------------
A figure is one Python function in a ``figures.chapters`` module that
returns a Plotly figure as plain data::

    def rtt_tpt(sp_us: float, cp_us: float, cl_us: float,
                max_qd: int = 16, ops: int = 400) -> dict:
        ...
        return {"traces": [{"x": [...], "y": [...], "name": "RTT"}],
                "shapes": [...], "title": "..."}   # shapes, title optional

and a ``Live`` declaration naming that function, its controls and the
keyword arguments that stay fixed::

    RTT_TPT = Live(
        "ch1-rtt-tpt", rtt_tpt,
        controls=[Range("sp_us", "SP (µs)", 1, 60,
                        grid=[5, 10, SP_US, 25, 40], value=SP_US), ...],
        fixed={"max_qd": 16, "ops": 400},
        layout={"xaxis": {"title": {"text": "queue depth QD"}}},
        caption="...")

The chapter shows it with ``live = RTT_TPT.figure(); live.show()``.

* **At build time** ``Live.figure`` calls the function at every point
  of the controls' grids (the product of the ``grid`` of every control) and
  embeds the results, rounded to ``digits`` significant digits, in the page
  as JSON.  The default point is drawn at once when the page opens.
  ``LiveFigure.plot`` draws any point with Matplotlib for a static
  image (the printed book), from the same function.
* **In the browser** ``static/qd/live.js`` (one small script for every
  figure; no framework, no bundler) draws the precomputed point nearest to
  the controls.  On the first change of a control, or a click on
  "run live", it starts ``static/qd/live-worker.js`` in a Web Worker, which
  loads Pyodide (CPython in WebAssembly, served by the book from
  ``_static/pyodide/``) and the book's own Python (``models`` and
  ``figures``, zipped by ``tools/build_live_bundle.py`` into
  ``_static/live/queue-depth-python.zip``).  From then on every change
  calls ``browser_call``, which calls the same function with the
  controls' values, and the figure is redrawn with Plotly.  Without Web
  Workers or WebAssembly, or if loading fails, the figure stays on the grid
  (values snap to the nearest grid point) and its status line says so.

Rules for a live figure's function
----------------------------------
* Module level in a ``figures.chapters`` module listed in
  ``LIVE_MODULES``.  That module, and everything it imports when
  imported, uses only the standard library and the standard-library parts
  of ``models`` (``models.analytic.numbers``, ``models.framing``,
  ``models.ring`` ...): no NumPy, SymPy, pandas, Matplotlib or Plotly at
  import time and in the function.  ``tests/test_live_figures.py`` imports
  every listed module and calls every declared figure with those packages
  blocked (the list is ``BLOCKED`` in ``tools/build_live_bundle.py``), and
  ``lint-imports`` holds the browser-side modules free of NumPy, SymPy and
  pandas (the contract in ``pyproject.toml``).
* It returns JSON-able data: numbers, strings, lists and dicts.  NaN and
  infinities become ``null`` (Plotly leaves a gap).
* It is deterministic, and avoids results that depend on the Python
  version or the C library: use ``math.fsum`` for sums of floats
  (``sum`` rounds differently from Python 3.12 on; Pyodide runs 3.14, the
  build 3.11).  ``Live(exact=False)`` declares a figure whose numbers may
  differ in the last bits (say through ``math.exp``); the browser test then
  compares to a relative 1e-12 instead of exactly.
* Its legend goes below the plot: wrap the ``Live`` layout in
  ``page.legend_below`` (``page.iops_qd_layout`` already is); at a
  phone's 390 px a legend inside the plot
  covers the data (``browser_tests/test_legends.py`` checks every live
  figure at that width).
* Values arrive coerced by the control: a float for a ``Range`` or
  ``Number``, an int when ``integer=True``, one of the options for a
  ``Select``.  ``fixed`` must survive a JSON round trip unchanged
  (lists, not tuples), because the browser receives it from the page.

Adding a live figure
--------------------
1. Write the function in the chapter's module of ``figures.chapters`` (a
   new chapter: a new module there, added to ``LIVE_MODULES``).  Keep
   Matplotlib, pandas and the simulator's heavy parts out of it (import
   them inside the functions that need them, which the browser never
   calls); data loaded with pandas at build time goes into ``fixed`` as
   plain lists.
2. Declare it with ``Live``: one control per parameter a reader may
   change -- a ``Range`` (slider and number box) or ``Number``
   (number box) with a stated ``min``/``max`` that contains its ``grid``,
   or a ``Select`` for a choice.  A slider's ``step`` must move it by at
   least 1 % of its span (``controls.MIN_STEP_FRACTION``; ``log=True`` for
   a span of decades, where the 1 % is of the decades), so the arrow keys
   visibly move it; ``Range`` refuses a finer step when declared, and the
   number box still takes any value in range -- and show ``.figure()`` in the
   chapter.  ``frame(**values)`` returns a precomputed point (keys:
   control names or labels); ``frames``, ``axes``, ``grid_size`` and
   ``compute_seconds`` describe the grid.
3. Say in the caption what the grid covers and what the live model runs
   (no control on a page may look usable and do nothing).
4. In ``book/status.md``, give the figure's row of ``MAIN_FIGURES`` its
   ``module:function`` and what it runs in the browser.  If the module
   builds the declaration from data (like
   ``figures.chapters.modes.mean_median_figure``), add a representative
   call to ``declared()`` in ``tests/test_live_figures.py``.
5. Integer controls need room between their first two grid points (the
   browser test sets a value there), and a Select cannot be the only
   control (the browser test needs one number to set off the grid).
6. Rebuild the bundle (``make book`` does) and run
   ``tests/test_live_figures.py`` and ``browser_tests/test_live.py``; the
   latter finds every live figure in the built book by itself, sets its
   number controls between their first two grid points, compares the
   plotted numbers with the function run in CPython and reports the
   timings.  The grid (``grid`` of each control) is what a browser without
   WebAssembly shows, and it weighs on the page: keep a page under 1 MiB.
"""

from __future__ import annotations

from .controls import Control, Number, Range, Select
from .page import iops_bound_trace, iops_qd_layout
from .runtime import LIVE_MODULES, Live, LiveFigure, browser_call, evaluate_json

__all__ = [
    "LIVE_MODULES",
    "Range",
    "Number",
    "Select",
    "Control",
    "Live",
    "LiveFigure",
    "browser_call",
    "evaluate_json",
    "iops_qd_layout",
    "iops_bound_trace",
]

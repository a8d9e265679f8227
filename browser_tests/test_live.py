"""Live figures in headless Chromium: the real Python model runs in the page.

For every live figure in the built book (every ``.qd-live-figure`` with a
``data-live`` function), found in the HTML so newly converted figures are
covered without editing this file:

* the page first shows the precomputed grid, with no Python loaded;
* a control set to a value that is not a grid point starts Pyodide in a Web
  Worker; the test waits for the live redraw, reads the plotted numbers
  from the Plotly graph and compares them with the same function run here
  in CPython (:func:`figures.live.evaluate_json` on the page's own JSON):
  identical numbers for a figure declared ``exact`` (all of them so far:
  ring simulations and closed forms built from + - * / and ``math.fsum``),
  else within a relative 1e-12;
* five more changes measure the update time;
* no JavaScript error and no request leaving the book's origin (the
  worker's requests included).

Timings are reported, not asserted: printed, and written to
``_build/browser_timings.json`` -- the time from the first interaction to
the first live update (Python starting included) and the median time from a
change to its redraw, per figure.

With the worker unavailable (no ``Worker`` at all, the worker script or the
Python bundle missing), every figure stays on its grid, snaps to the nearest
point, says so, and raises no JavaScript error.
"""

from __future__ import annotations

import json
import math
import re
import statistics

import conftest
import pytest
from conftest import HTML, ROOT, visit
from test_pages import PAGES

from figures.live import evaluate_json

TIMINGS = ROOT / "_build" / "browser_timings.json"
LIVE_TIMEOUT_MS = 180_000
UPDATES = 5


def _live_figures() -> dict[str, list[str]]:
    """docname -> ids of its live figures, read from the built HTML."""
    found = {}
    for docname, _ in PAGES:
        path = HTML / f"{docname}.html"
        if path.exists():
            ids = re.findall(
                r'<div class="qd-live-figure" id="([a-z0-9-]+)"'
                r'[^>]*data-live="',
                path.read_text(),
            )
            if ids:
                found[docname] = ids
    return found


LIVE = _live_figures()


@pytest.fixture(scope="module")
def timings():
    """Collects each figure's timings; written to :data:`TIMINGS` and
    printed in pytest's summary (conftest.pytest_terminal_summary)."""
    results = conftest.LIVE_TIMINGS
    yield results
    if results:
        TIMINGS.parent.mkdir(parents=True, exist_ok=True)
        TIMINGS.write_text(json.dumps(results, indent=2) + "\n")


def test_the_book_has_live_figures():
    """Every numbered chapter's main figure is live."""
    assert HTML.joinpath("index.html").exists(), "build the book first"
    chapters = {docname for docname, numbered in PAGES if numbered}
    assert len(chapters) >= 12
    assert chapters <= set(LIVE), sorted(chapters - set(LIVE))


def _spec(page, fid: str) -> dict:
    return json.loads(page.locator(f"#{fid}-data").text_content())


def _off_grid_values(spec: dict, shift: int = 0) -> dict:
    """Values for every number-valued control between its first two grid
    points (so on no grid point), nudged by ``shift``."""
    values = {}
    for c in spec["controls"]:
        if c["kind"] not in ("range", "number"):
            continue
        a, b = c["grid"][0], c["grid"][1]
        if c["log"]:
            v = a * (b / a) ** (0.37 + 0.05 * shift)
        else:
            v = a + (b - a) * (0.37 + 0.05 * shift)
        v = round(v) if c["integer"] else float(f"{v:.4g}")
        assert v not in c["grid"] and c["min"] <= v <= c["max"]
        values[c["name"]] = v
    assert values, f"{spec['function']}: no control takes a free value"
    return values


def _set(page, fid: str, spec: dict, values: dict) -> None:
    """Type each value into its control's number box, as a reader would."""
    for n, c in enumerate(spec["controls"]):
        if c["name"] in values:
            box = page.locator(f"#{fid} .qd-live-control").nth(n).locator("input[type=number]")
            box.fill(str(values[c["name"]]))
            box.dispatch_event("change")


def _wait_live(page, fid: str, values: dict) -> dict:
    """Wait until the figure is drawn live for ``values``; return them as
    the page has them."""
    page.wait_for_function(
        """([id, want]) => {
            const root = document.getElementById(id);
            if (root.dataset.mode !== "live" || !root.dataset.values) {
                return false;
            }
            const have = JSON.parse(root.dataset.values);
            return Object.keys(want).every(k => have[k] === want[k]);
        }""",
        arg=[fid, values],
        timeout=LIVE_TIMEOUT_MS,
    )
    return json.loads(page.get_attribute(f"#{fid}", "data-values"))


def _plotted(page, fid: str) -> dict:
    return page.evaluate(
        """id => { const gd = document.getElementById(id + "-plot");
            return {traces: gd.data.map(
                        t => ({name: t.name, x: t.x, y: t.y})),
                    title: gd.layout.title && gd.layout.title.text}; }""",
        fid,
    )


def _words(title: str | None) -> list[str] | None:
    """A figure title's words, whatever lines it is drawn in."""
    return None if title is None else title.replace("<br>", " ").split()


def _compare(plotted: dict, expected: dict, exact: bool) -> float:
    """Assert the plotted numbers equal CPython's; return the largest
    relative difference."""
    # live.js breaks a title too wide for its figure into lines at spaces
    assert _words(plotted["title"]) == _words(expected.get("title"))
    assert len(plotted["traces"]) == len(expected["traces"])
    worst = 0.0
    for got, want in zip(plotted["traces"], expected["traces"]):
        assert got["name"] == want.get("name")
        for axis in ("x", "y"):
            g, w = got[axis], want[axis]
            assert len(g) == len(w), (want.get("name"), axis)
            for a, b in zip(g, w):
                if exact:
                    assert a == b, (want.get("name"), axis, a, b)
                elif a != b:
                    rel = abs(a - b) / max(abs(a), abs(b))
                    worst = max(worst, rel)
                    assert rel <= 1e-12, (want.get("name"), axis, a, b)
    return worst


@pytest.mark.parametrize("docname", sorted(LIVE))
def test_live_figure_matches_cpython(browser, book_url, timings, docname):
    page, problems = visit(browser, f"{book_url}/{docname}.html")
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        for n, fid in enumerate(LIVE[docname]):
            spec = _spec(page, fid)
            root = page.locator(f"#{fid}")
            root.locator("svg.main-svg").first.wait_for(timeout=15_000)
            # The precomputed default is drawn at once, and nothing of
            # Python is loaded before the page's first interaction (a
            # later figure of the page shares the worker the first one
            # started, and still waits on its grid until touched).
            assert root.get_attribute("data-mode") == "grid"
            assert root.get_attribute("data-frame") == spec["default"]
            if n == 0:
                assert not [u for u in requests if "/pyodide/" in u]
            assert (
                _plotted(page, fid)["traces"][0]["y"]
                == spec["frames"][spec["default"]]["traces"][0]["y"]
            )

            first = _off_grid_values(spec)
            _set(page, fid, spec, first)
            have = _wait_live(page, fid, first)
            expected = evaluate_json({**spec, "values": have})
            worst = _compare(_plotted(page, fid), expected, spec["exact"])
            assert "Live:" in root.locator(".qd-live-status").text_content()

            updates = []
            name = next(iter(first))  # one control at a time, as a reader moves a slider
            for shift in range(1, UPDATES + 1):
                values = {name: _off_grid_values(spec, shift)[name]}
                _set(page, fid, spec, values)
                have = _wait_live(page, fid, values)
                updates.append(float(root.get_attribute("data-update-ms")))
            worst = max(
                worst,
                _compare(
                    _plotted(page, fid),
                    evaluate_json({**spec, "values": have}),
                    spec["exact"],
                ),
            )
            t = page.evaluate("window.qdLive.timings")
            timings[fid] = {
                "page": docname,
                "function": spec["function"],
                "first_update_ms": round(t["firstLiveUpdateMs"], 1),
                "python_ready_ms": round(t["readyMs"], 1),
                "worker_phases_ms": t["workerPhasesMs"],
                "median_update_ms": round(statistics.median(updates), 1),
                "updates_ms": [round(u, 1) for u in updates],
                "exact": spec["exact"],
                "largest_relative_difference": worst,
                "python": page.evaluate("window.qdLive.python"),
            }
        # Pyodide and the bundle came from the book itself.
        assert [u for u in requests if u.endswith("/_static/pyodide/pyodide.asm.wasm")]
        assert [u for u in requests if u.endswith("/_static/live/queue-depth-python.zip")]
        assert problems == [], "\n".join(problems)
    finally:
        page.close()


def _snapped(spec: dict, values: dict) -> dict:
    """The grid point the page must fall back to (nearest; in ratios for
    a log control)."""
    out = {}
    for c in spec["controls"]:
        v = values.get(c["name"], c["value"])
        if c["kind"] in ("range", "number"):
            dist = (
                (lambda g, v=v: abs(math.log(v / g))) if c["log"] else (lambda g, v=v: abs(v - g))
            )
            v = min(c["grid"], key=dist)
        out[c["name"]] = v
    return out


BLOCKS = {
    "no-worker": {"init_script": "delete window.Worker; window.Worker = undefined;"},
    "worker-script-missing": {"block": "**/_static/qd/live-worker.js"},
    "python-bundle-missing": {"block": "**/_static/live/queue-depth-python.zip"},
}


@pytest.mark.parametrize("how", list(BLOCKS))
def test_grid_fallback_when_the_worker_cannot_run(browser, book_url, how):
    docname = "book/03_bottleneck"
    fid = LIVE[docname][0]
    blocked = BLOCKS[how].get("block")
    route = (
        (blocked, lambda r: r.fulfill(status=404, body="blocked by the test")) if blocked else None
    )
    page, problems = visit(
        browser,
        f"{book_url}/{docname}.html",
        init_script=BLOCKS[how].get("init_script"),
        route=route,
    )
    try:
        spec = _spec(page, fid)
        root = page.locator(f"#{fid}")
        root.locator("svg.main-svg").first.wait_for(timeout=15_000)
        values = _off_grid_values(spec)
        _set(page, fid, spec, values)
        page.wait_for_function(
            "id => document.getElementById(id).dataset.mode === 'fallback'",
            arg=fid,
            timeout=LIVE_TIMEOUT_MS,
        )
        snapped = _snapped(spec, values)
        page.wait_for_function(
            """([id, want]) => {
                const root = document.getElementById(id);
                const have = JSON.parse(root.dataset.values || "{}");
                return Object.keys(want).every(k => have[k] === want[k]);
            }""",
            arg=[fid, snapped],
            timeout=10_000,
        )
        key = ",".join(str(c["grid"].index(snapped[c["name"]])) for c in spec["controls"])
        assert root.get_attribute("data-frame") == key
        assert _plotted(page, fid)["traces"][1]["y"] == spec["frames"][key]["traces"][1]["y"]
        status = root.locator(".qd-live-status").text_content()
        assert "Precomputed grid only" in status and "nearest" in status, status
        # The one expected failure is the blocked file itself; anything
        # else is a problem.
        unexpected = [p for p in problems if not (blocked and blocked.strip("*") in p)]
        assert unexpected == [], "\n".join(unexpected)
    finally:
        page.close()

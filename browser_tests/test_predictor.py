"""The diagnose page's "your numbers" predictor in headless Chromium: controls moved to values
off any grid (number boxes and the socket-mode choices) re-run the simulator in the page, and the
IOPS it shows change and equal the same function run here in CPython."""

from __future__ import annotations

import re

from conftest import HTML, visit
from test_live import _compare, _plotted, _set, _spec, _wait_live

from figures.live import evaluate_json

DOC = "book/diagnose"
FID = "diag-predictor"

#: Settings off every control's grid, one after another (the last adds the socket modes).
MOVES = [
    {"gbps": 2.5, "io_bytes": 3000, "qd": 3, "latency_ms": 0.37},
    {"gbps": 37.0, "mtu": 2222, "io_bytes": 150_000, "qd": 77, "server_us": 23.3},
    {"op": "write", "client_us": 41.0, "server_mode": "TCP_CORK", "client_mode": "Nagle"},
]


def _iops(title: str) -> str:
    """The IOPS the figure's title shows (a number, or a range)."""
    m = re.match(r"([\d,.]+(?: to [\d,.]+)?) IOPS", title)
    assert m, title
    return m.group(1)


def _select(page, spec: dict, values: dict) -> None:
    for n, c in enumerate(spec["controls"]):
        if c["kind"] == "select" and c["name"] in values:
            box = page.locator(f"#{FID} .qd-live-control").nth(n).locator("select")
            box.select_option(str(c["grid"].index(values[c["name"]])))


def test_predictor_runs_live_and_matches_cpython(browser, book_url) -> None:
    assert HTML.joinpath(f"{DOC}.html").exists(), "build the book first"
    page, problems = visit(browser, f"{book_url}/{DOC}.html")
    try:
        spec = _spec(page, FID)
        root = page.locator(f"#{FID}")
        root.locator("svg.main-svg").first.wait_for(timeout=15_000)
        assert root.get_attribute("data-mode") == "grid"
        shown = [_iops(_plotted(page, FID)["title"])]
        values: dict = {}
        for move in MOVES:
            numbers = {k: v for k, v in move.items() if isinstance(v, (int, float))}
            for k, v in numbers.items():
                c = next(c for c in spec["controls"] if c["name"] == k)
                assert v not in c["grid"] and c["min"] <= v <= c["max"], k
            _select(page, spec, move)
            _set(page, FID, spec, numbers)
            values.update(move)
            have = _wait_live(page, FID, values)
            plotted = _plotted(page, FID)
            expected = evaluate_json({**spec, "values": have})
            _compare(plotted, expected, spec["exact"])
            assert not plotted["title"].startswith("No prediction"), plotted["title"]
            shown.append(_iops(plotted["title"]))
        assert len(set(shown)) == len(shown), shown  # every move changed the IOPS shown
        assert "Live:" in root.locator(".qd-live-status").text_content()
        assert problems == [], "\n".join(problems)
    finally:
        page.close()

"""The built book reads offline and stays a reasonable size (no browser needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tools"))

import html_report  # noqa: E402

#: Budgets. The offline MathJax bundle alone is about 23 MiB, Plotly.js
#: 4.6 MiB, the widget JavaScript 3.5 MiB, and the live figures' runtime
#: about 13 MiB (Pyodide 314.0.7: the WebAssembly CPython 9.2 MiB, its
#: standard library 2.4 MiB, its loader 1.3 MiB; the book's Python bundle
#: 0.13 MiB): about 61 MiB with the pages. The total budget stays 80 MiB.
#: The runtime has its own budget, 16 MiB: room for the bundle to grow as
#: chapters are converted, none for a Pyodide package (a NumPy or SciPy
#: wheel) or a second runtime, which must raise it on purpose. The runtime
#: is fetched only when a reader starts a live figure, so it does not count
#: against a page: a page carrying precomputed figures should stay well
#: under a megabyte so it opens quickly on a slow link.
TOTAL_MIB = 80
LIVE_RUNTIME_MIB = 16
PAGE_KIB = 1024


@pytest.fixture(scope="module")
def files():
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML}/index.html is missing: build the book first (make book)")
    return html_report.sizes(HTML)


def test_no_script_or_stylesheet_leaves_the_book():
    assert html_report.external_refs(HTML) == []


def test_total_size_within_budget(files):
    total = sum(files.values()) / 2**20
    print(f"HTML book: {total:.1f} MiB")
    assert total < TOTAL_MIB


def test_every_page_within_budget(files):
    heavy = {f: s // 1024 for f, s in files.items() if f.endswith(".html") and s > PAGE_KIB * 1024}
    assert heavy == {}, f"pages over {PAGE_KIB} KiB: {heavy}"


def test_live_runtime_within_budget(files):
    runtime = html_report.live_runtime(files)
    print(
        "live figures' runtime: "
        + ", ".join(f"{k} {v / 2**20:.2f} MiB" for k, v in runtime.items())
    )
    assert all(runtime.values()), f"a runtime part is missing: {runtime}"
    assert sum(runtime.values()) / 2**20 < LIVE_RUNTIME_MIB


def test_offline_assets_present(files):
    live = (
        "_static/qd/live.js",
        "_static/qd/live-worker.js",
        "_static/qd/live.css",
        "_static/pyodide/pyodide.mjs",
        "_static/pyodide/pyodide.asm.mjs",
        "_static/pyodide/pyodide.asm.wasm",
        "_static/pyodide/python_stdlib.zip",
        "_static/pyodide/pyodide-lock.json",
        "_static/live/queue-depth-python.zip",
    )
    for needed in (
        "_static/mathjax/tex-chtml.js",
        "_static/plotly/plotly.min.js",
        "_static/widgets/embed-amd.js",
        "_static/widgets/require.js",
        "_static/qd/mathjax-hub-shim.js",
    ) + live:
        assert needed in files, f"missing {needed}"

"""Fixtures for the browser tests: the built book served on localhost, and headless Chromium.

The tests need the HTML book (``make book``) and a Chromium binary (Debian's ``chromium`` package, or the
path in ``$CHROMIUM``).  Without Chromium every test is skipped with that reason; a missing book is an error,
because ``make test`` builds it first.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import socketserver
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"

#: Timings of the live figures measured by test_live.py, printed at the end.
LIVE_TIMINGS: dict = {}

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    for cand in (
        os.environ.get("CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if cand and Path(cand).exists():
            return cand
    return None


_STARTED = time.time()


def pytest_terminal_summary(terminalreporter):
    """Report the live figures' timings (measured, not asserted)."""
    saved = ROOT / "_build" / "browser_timings.json"
    if not LIVE_TIMINGS and saved.exists() and saved.stat().st_mtime >= _STARTED:
        LIVE_TIMINGS.update(json.loads(saved.read_text()))  # written by a pytest-xdist worker
    if not LIVE_TIMINGS:
        return
    tr = terminalreporter
    tr.section("live figures: time in headless Chromium on this machine")
    for fid, t in LIVE_TIMINGS.items():
        tr.write_line(
            f"{fid:20s} first live update {t['first_update_ms'] / 1e3:5.1f} s "
            f"after the first interaction (Python ready "
            f"{t['python_ready_ms'] / 1e3:.1f} s: {t['worker_phases_ms']} ms);"
            f" median update {t['median_update_ms']:4.0f} ms of "
            f"{len(t['updates_ms'])}"
        )
    tr.write_line("(also in _build/browser_timings.json)")


def pytest_report_header(config):
    path = chromium_path()
    found = (
        f"Chromium at {path}" if path else "SKIPPED, no Chromium found (apt-get install chromium)"
    )
    return f"browser tests: {found}"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output readable
        pass


@pytest.fixture(scope="session")
def book_url():
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML}/index.html is missing: build the book first (make book)")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    socketserver.TCPServer.allow_reuse_address = True
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}"
        server.shutdown()


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    if path is None:
        pytest.skip(
            "no Chromium on this machine (install Debian's chromium package); browser tests skipped"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def screenshots():
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


def visit(browser, url: str, init_script: str | None = None, route=None):
    """Open ``url`` in a new page; returns the page and a list that
    collects every problem seen.

    Problems: uncaught JavaScript errors, console errors, failed requests,
    HTTP errors from the book, and any request that leaves the book's
    origin (the book must read offline).  ``init_script`` runs before the
    page's own scripts; ``route`` is ``(pattern, handler)`` for
    ``page.route``.
    """
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    host = urlparse(url).netloc
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text} ({m.location.get('url')})")
            if m.type == "error"
            else None
        ),
    )
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))

    def on_request(r):
        u = urlparse(r.url)
        if u.scheme in ("http", "https", "ws", "wss") and u.netloc != host:
            problems.append(f"request leaves the book: {r.url}")

    def on_response(r):
        if urlparse(r.url).netloc == host and r.status >= 400:
            problems.append(f"HTTP {r.status}: {r.url}")

    page.on("request", on_request)
    page.on("response", on_response)
    # Requests made by the live figures' Web Worker (Pyodide, the Python
    # bundle) are reported through the page's "request" and "response"
    # events too, so they are checked like the page's own.
    if init_script:
        page.add_init_script(init_script)
    if route:
        page.route(*route)
    page.goto(url, wait_until="networkidle")
    # The book's own fonts (static/qd/book.css) may still be loading when the network goes idle; until
    # they are, text is laid out in a stand-in font, so widths are measured only after this.
    page.evaluate("async () => { document.body.offsetWidth; await document.fonts.ready; }")
    return page, problems

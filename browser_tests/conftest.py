"""Fixtures for the browser tests: the built book served on localhost, and headless Chromium.

The tests need the HTML book (``make book``) and a Chromium binary (Debian's ``chromium`` package, or the
path in ``$CHROMIUM``).  Without Chromium every test is skipped with that reason; a missing book is an error,
because ``make test`` builds it first.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import socketserver
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_path() -> str | None:
    for cand in (os.environ.get("CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser")):
        if cand and Path(cand).exists():
            return cand
    return None


def pytest_report_header(config):
    path = chromium_path()
    return f"browser tests: {'Chromium at ' + path if path else 'SKIPPED, no Chromium found (apt-get install chromium)'}"


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
        pytest.skip("no Chromium on this machine (install Debian's chromium package); browser tests skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def screenshots():
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS

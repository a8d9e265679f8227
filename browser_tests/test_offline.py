"""The built book reads offline and stays a reasonable size (no browser needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tools"))

import html_report  # noqa: E402

#: Budgets. The offline MathJax bundle alone is about 23 MiB; a page carrying precomputed figures should
#: stay well under a megabyte so it opens quickly on a slow link.
TOTAL_MIB = 80
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


def test_offline_assets_present(files):
    for needed in ("_static/mathjax/tex-chtml.js", "_static/plotly/plotly.min.js", "_static/widgets/embed-amd.js",
                   "_static/widgets/require.js", "_static/qd/mathjax-hub-shim.js"):
        assert needed in files, f"missing {needed}"

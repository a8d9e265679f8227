"""Every page of the built book, loaded in headless Chromium as a reader would meet it.

For each page in ``_toc.yml``: no JavaScript errors, no failed requests, no request leaving localhost (the
book must read offline), math typeset where there is math, every figure drawn, saved ipywidgets drawn from
their state, and, in every numbered chapter, a main figure that responds to its slider with no Python
kernel (a live figure re-runs its Python in the browser;
``test_live.py`` checks its numbers).  A screenshot of each page is saved
under ``_build/screenshots/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import visit

ROOT = Path(__file__).resolve().parents[1]


def _toc_pages() -> list[tuple[str, bool]]:
    """(docname, is_numbered_chapter) for every page of the table of contents: each chapter, then
    the pages listed as its ``sections`` (a chapter's further pages, never a numbered chapter)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [(toc["root"], False)]

    def sections(entry: dict) -> None:
        for sub in entry.get("sections", []):
            pages.append((sub["file"], False))
            sections(sub)

    for part in toc.get("parts", []):
        for ch in part.get("chapters", []):
            pages.append((ch["file"], bool(part.get("numbered"))))
            sections(ch)
    return pages


PAGES = _toc_pages()


def _chapter_sections() -> set[str]:
    """The further pages of the numbered chapters (``sections``): notebooks like their chapter."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found: set[str] = set()

    def walk(entry: dict) -> None:
        for sub in entry.get("sections", []):
            found.add(sub["file"])
            walk(sub)

    for part in toc.get("parts", []):
        if part.get("numbered"):
            for ch in part.get("chapters", []):
                walk(ch)
    return found


#: Pages offering Binder and an .ipynb download: the numbered chapters and their further pages.
NOTEBOOKS = [p for p, numbered in PAGES if numbered or p in _chapter_sections()]


@pytest.mark.parametrize("docname, numbered", PAGES, ids=[p for p, _ in PAGES])
def test_page(browser, book_url, screenshots, docname, numbered):
    page, problems = visit(browser, f"{book_url}/{docname}.html")
    try:
        # Math: every display/inline math node is typeset by the book's own MathJax.
        n_math = page.locator("div.math, span.math").count()
        if n_math:
            page.wait_for_selector("mjx-container", timeout=15_000)
            assert page.locator("mjx-container").count() >= n_math

        # Figures: every image has loaded with a real size.
        broken = page.evaluate(
            "Array.from(document.querySelectorAll('article img')).filter(i => !(i.complete && i.naturalWidth > 0))"
            ".map(i => i.src)"
        )
        assert broken == [], f"images not drawn: {broken}"

        # Live figures: each draws an SVG plot.
        live = page.locator(".qd-live-figure")
        for i in range(live.count()):
            fig = live.nth(i)
            fig.locator("svg.main-svg").first.wait_for(timeout=15_000)

        # ipywidgets saved with the page are drawn from their saved state by the book's own widget manager.
        views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
        if views:
            page.wait_for_selector(".jupyter-widgets", timeout=15_000)
            assert (
                page.locator(
                    ".widget-slider, .widget-hslider, .widget-dropdown, .widget-toggle-buttons"
                ).count()
                > 0
            )

        if numbered:
            assert live.count() >= 1, "a numbered chapter needs an interactive main figure"
            fig = live.first
            before_frame = fig.get_attribute("data-frame")
            before_svg = fig.locator(".qd-live-plot").inner_html()
            slider = fig.locator("input[type=range]").first
            slider.focus()
            key = (
                "ArrowLeft"
                if slider.input_value() == slider.get_attribute("max")
                else "ArrowRight"
            )
            page.keyboard.press(key)
            # A grid-only figure redraws at once. A live one may snap to the
            # same grid point at first and redraw when Python has started
            # in the browser (browser_tests/test_live.py times it).
            page.wait_for_function(
                "([id, f]) => document.getElementById(id).getAttribute('data-frame') !== f",
                arg=[fig.get_attribute("id"), before_frame],
                timeout=120_000 if fig.get_attribute("data-live") else 5_000,
            )
            page.wait_for_timeout(300)
            after_svg = fig.locator(".qd-live-plot").inner_html()
            assert after_svg != before_svg, "moving the slider did not change the figure"

        page.screenshot(path=str(screenshots / f"{docname.replace('/', '_')}.png"), full_page=True)
        assert problems == [], "\n".join(problems)
    finally:
        page.close()


def _hrefs(html: str) -> list[str]:
    """The ``href`` of every link in ``html``, as written (entities decoded)."""
    from html.parser import HTMLParser

    found: list[str] = []

    class Links(HTMLParser):
        def handle_starttag(self, tag, attrs):
            href = dict(attrs).get("href")
            if tag == "a" and href is not None:
                found.append(href)

    Links().feed(html)
    return found


def test_links_are_read_from_the_html():
    html = '<p><a class="x" href="a.ipynb">d</a><a name="n"></a><A HREF="b?x=1&amp;y=2"><link href="c">'
    assert _hrefs(html) == ["a.ipynb", "b?x=1&y=2"]


def test_launch_and_download_buttons(browser, book_url):
    """Chapters (and their further pages) offer Binder and an .ipynb download, and the files those
    links name exist."""
    assert "book/09b_host_profiles" in NOTEBOOKS
    page = browser.new_page()
    try:
        for docname in NOTEBOOKS:
            # The buttons are links in the page's HTML as the book serves it: read from there,
            # without rendering the page (test_page visits every page whole, scripts and all).
            html = page.request.get(f"{book_url}/{docname}.html")
            assert html.ok, f"{docname}: HTTP {html.status}"
            hrefs = _hrefs(html.text())
            binder = [h for h in hrefs if h.startswith("https://mybinder.org/v2/gh/")]
            assert binder, f"{docname}: no Binder launch button"
            path_in_repo = binder[0].split("urlpath=lab/tree/")[1]
            assert (ROOT / path_in_repo).is_file(), (
                f"Binder link names {path_in_repo}, not in the repository"
            )
            ipynb = [h for h in hrefs if h.endswith(".ipynb")]
            assert ipynb, f"{docname}: no .ipynb download"
            resp = page.request.get(f"{book_url}/{docname.rsplit('/', 1)[0]}/{ipynb[0]}")
            assert resp.ok and resp.json()["cells"], (
                f"{docname}: the .ipynb download is not a notebook"
            )
    finally:
        page.close()
    for needed in (
        "binder/requirements.txt",
        "binder/postBuild",
        "requirements.txt",
        "pyproject.toml",
    ):
        assert (ROOT / needed).is_file(), f"Binder needs {needed}"

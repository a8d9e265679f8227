"""How every page reads: code that fits its column, math that typesets,
screenshots at a laptop's width and a phone's.

At 1280 px (a laptop window) no code block may be wider than its column:
a reader should not scroll sideways to read a cell.  Cells are written to
79 columns and set at a size that fits them (``static/qd/book.css``);
what a cell prints wraps at the column, so outputs are held to the same
rule.  At any width no
formula may fail to typeset (MathJax marks those with ``mjx-merror``), and
no TeX may be left as raw text.  Each page is saved as
``_build/screenshots/<page>-1280.png`` and ``<page>-390.png`` (a phone
held upright), for a person to look at.
"""

from __future__ import annotations

import pytest
from conftest import visit
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_pages import PAGES

WIDTHS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}

# Code blocks: cell inputs, literal includes and other highlighted code.
_WIDE_CODE = """() => {
  const out = [];
  for (const pre of document.querySelectorAll(
      'article div.highlight pre, article div.cell_input pre')) {
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const line = (pre.textContent.split('\\n').find(
          l => l.length > 79) || pre.textContent.split('\\n')[0]);
      out.push(`${pre.scrollWidth - pre.clientWidth} px too wide: `
               + line.slice(0, 100));
    }
  }
  return out;
}"""

_MATH_PROBLEMS = """() => {
  const out = [];
  document.querySelectorAll('mjx-merror').forEach(
      e => out.push('MathJax error: ' + e.textContent.slice(0, 100)));
  const walker = document.createTreeWalker(
      document.querySelector('article') || document.body,
      NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const parent = node.parentElement;
    if (!parent || parent.closest('pre, code, script, mjx-container, '
                                  + 'style, .highlight, textarea')) continue;
    const t = node.textContent;
    if (/\\\\(frac|mathrm|cdot|left|right|sum)\\b/.test(t)
        || /\\$\\$[^$]+\\$\\$/.test(t)) {
      out.push('raw TeX left in the text: ' + t.trim().slice(0, 100));
    }
  }
  return out;
}"""


# What MathJax says of itself, for a failure's message.
_MATHJAX_STATE = """() => {
  const mj = window.MathJax || {};
  return `MathJax ${mj.version || 'not loaded'}, `
    + `${document.querySelectorAll('mjx-container').length} formulas typeset, `
    + `${document.querySelectorAll('div.math, span.math').length} math elements`;
}"""


@pytest.mark.parametrize("docname, numbered", PAGES, ids=[p for p, _ in PAGES])
def test_page_layout(browser, book_url, screenshots, docname, numbered):
    page, problems = visit(browser, f"{book_url}/{docname}.html")
    try:
        if page.locator("div.math, span.math").count():
            # MathJax 3 resolves startup.promise once its first pass over the
            # page is done; a long page is still being typeset well after
            # its first formula appears, and raw TeX then is not an error yet.
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                timeout=15_000,
            )
            page.evaluate("async () => { await MathJax.startup.promise; }")
            # Under a loaded CI machine, one run found every formula of a page's cell
            # outputs still raw after the first pass had resolved (never seen alone or
            # under CPU load).  Let the page settle for a bounded time: a formula a
            # reader sees typeset a few seconds later is typeset; one that never is
            # still fails below, with MathJax's state in the message.
            try:
                page.wait_for_function(f"() => ({_MATH_PROBLEMS})().length === 0", timeout=30_000)
            except PlaywrightTimeout:
                pass
        wide = page.evaluate(_WIDE_CODE)
        math = page.evaluate(_MATH_PROBLEMS)
        name = docname.replace("/", "_")
        for label, size in WIDTHS.items():
            page.set_viewport_size(size)
            page.wait_for_timeout(200)
            page.screenshot(path=str(screenshots / f"{name}-{label}.png"), full_page=True)
            math += [m for m in page.evaluate(_MATH_PROBLEMS) if m not in math]
        assert not wide, f"code wider than its column at 1280 px: {wide}"
        assert not math, (
            f"math that did not typeset: {math}; {page.evaluate(_MATHJAX_STATE)}; "
            + ("; ".join(problems) or "no page problems")
        )
        assert problems == [], "\n".join(problems)
    finally:
        page.close()

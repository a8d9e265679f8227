"""Issue 24: on a phone held upright (390 px), no legend covers data, and
every slider moves by at least 1 % of its span per step.

For every page with a live figure (drawn by Plotly in the page), at a
390 px viewport:

* every data point of every trace, placed on the screen with the figure's
  own axes (Plotly's ``l2p``), and every line segment between two points,
  sampled every pixel or so, lies outside the box of every legend (the
  legend's background rectangle, shrunk by one pixel for antialiasing);
  points the axes' ranges clip away do not count;
* no legend covers an axis title or a tick label (a reader must be able to
  read the axes);
* the legend lies inside the figure's own box (not cut off by the page);
* the figure's title lies inside the figure's box and above its plot area
  (live.js breaks a title too wide for the figure into lines).

The legend's box and the points are both read from the page as drawn, so
the test measures what a reader sees, whatever the layout asked for.

Static images (Matplotlib PNGs) are the same picture at every width: their
legends are checked in Python, on the figure, by
:func:`figures.legends.legend_overlaps` (``tests/test_legends.py``).
"""

from __future__ import annotations

import re

import pytest
from conftest import HTML, visit
from test_pages import PAGES

PHONE = {"width": 390, "height": 844}


def _pages_with_plots() -> list[str]:
    """Pages whose built HTML holds a live figure."""
    return [
        docname
        for docname, _ in PAGES
        if (HTML / f"{docname}.html").exists()
        and re.search(r'class="qd-live-figure"', (HTML / f"{docname}.html").read_text())
    ]


PLOT_PAGES = _pages_with_plots()

#: For every Plotly graph on the page: its legends' boxes and whatever they
#: cover (data points, line segments, axis labels), in page pixels.
_COVERED = """() => {
  const report = [];
  const inside = (r, x, y) =>
      x > r.left + 1 && x < r.right - 1 && y > r.top + 1 && y < r.bottom - 1;
  const meets = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
      && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  for (const root of document.querySelectorAll('.qd-live-figure')) {
    const gd = document.getElementById(root.id + '-plot');
    if (!gd || !gd._fullLayout) {
      report.push({figure: root.id, problems: ['not drawn by Plotly']});
      continue;
    }
    const fl = gd._fullLayout;
    const box = gd.getBoundingClientRect();
    const legends = Array.from(gd.querySelectorAll('g.legend rect.bg'))
        .map(r => r.getBoundingClientRect())
        .filter(r => r.width > 0 && r.height > 0);
    const problems = [];
    let points = 0;
    for (const r of legends) {
      if (r.left < box.left - 1 || r.right > box.right + 1
          || r.top < box.top - 1 || r.bottom > box.bottom + 1) {
        problems.push('legend outside the figure: '
                      + JSON.stringify([r.left, r.top, r.right, r.bottom])
                      + ' not in ' + JSON.stringify(
                          [box.left, box.top, box.right, box.bottom]));
      }
    }
    for (const trace of gd._fullData) {
      if (trace.visible !== true || !trace.x || !trace.y) continue;
      const xa = fl[(trace.xaxis || 'x').replace('x', 'xaxis')];
      const ya = fl[(trace.yaxis || 'y').replace('y', 'yaxis')];
      const screen = (x, y) => {
        if (x === null || y === null || x === undefined
            || y === undefined) return null;
        const px = xa.l2p(xa.d2l(x));
        const py = ya.l2p(ya.d2l(y));
        if (!isFinite(px) || !isFinite(py) || px < -0.5
            || px > xa._length + 0.5 || py < -0.5
            || py > ya._length + 0.5) return null;  // clipped away
        return [box.left + xa._offset + px, box.top + ya._offset + py];
      };
      const lines = String(trace.mode || '').includes('lines');
      let previous = null;
      let hits = 0;
      for (let i = 0; i < trace.x.length; i++) {
        const p = screen(trace.x[i], trace.y[i]);
        if (p !== null) {
          points++;
          for (const r of legends) hits += inside(r, p[0], p[1]) ? 1 : 0;
          if (lines && previous !== null) {
            const n = Math.ceil(Math.hypot(p[0] - previous[0],
                                           p[1] - previous[1]));
            for (let k = 1; k < n; k++) {
              const x = previous[0] + (p[0] - previous[0]) * k / n;
              const y = previous[1] + (p[1] - previous[1]) * k / n;
              for (const r of legends) hits += inside(r, x, y) ? 1 : 0;
            }
          }
        }
        previous = p;
      }
      if (hits) {
        problems.push(`legend covers "${trace.name || '(unnamed)'}"`
                      + ` (${hits} points of its markers and lines)`);
      }
    }
    const labels = gd.querySelectorAll(
        'g.xtick text, g.ytick text, g.x2tick text, g.y2tick text, '
        + 'text.xtitle, text.ytitle, text.x2title, text.y2title');
    for (const t of labels) {
      const b = t.getBoundingClientRect();
      if (b.width === 0) continue;
      for (const r of legends) {
        if (meets(r, b)) {
          problems.push(`legend covers the axis label "${t.textContent}"`);
        }
      }
    }
    report.push({figure: root.id, legends: legends.length, points: points,
                 width: box.width, problems: problems});
  }
  return report;
}"""

#: For every Plotly graph with a title: what is wrong with where the title
#: is drawn (page pixels, 1 px of slack): past the figure's left, right or
#: top edge, or below the top of the plot area (covering data).
_TITLES = """() => Array.from(document.querySelectorAll('.qd-live-figure')).map(root => {
  const gd = document.getElementById(root.id + '-plot');
  const t = gd && gd.querySelector('.gtitle');
  if (!t || !t.textContent || !gd._fullLayout) return null;
  const tb = t.getBoundingClientRect(), fb = gd.getBoundingClientRect();
  const plotTop = fb.top + gd._fullLayout._size.t;
  const problems = [];
  if (tb.left < fb.left - 1 || tb.right > fb.right + 1) {
    problems.push(`title from x ${Math.round(tb.left - fb.left)} to ${Math.round(tb.right - fb.left)} px`
                  + ` in a figure ${Math.round(fb.width)} px wide`);
  }
  if (tb.top < fb.top - 1) {
    problems.push(`title from ${Math.round(fb.top - tb.top)} px above the figure's top`);
  }
  if (tb.bottom > plotTop + 1) {
    problems.push(`title down to ${Math.round(tb.bottom - plotTop)} px into the plot area`);
  }
  return {figure: root.id, title: t.textContent, problems: problems};
}).filter(Boolean)"""

#: Scroll a plot into the middle of the window, then read its box every
#: 50 ms (timers, not animation frames: a busy renderer may hold frames
#: back, which once made Playwright's own wait for a still element time out
#: after 30 s) until three readings in a row agree, for at most 3 s. A plot
#: that never settles is a finding a reader would see; the boxes say how
#: it moved.  Boxes are [left, top, width, height] in window pixels.
_SETTLED = """async (id) => {
  const el = document.getElementById(id);
  el.scrollIntoView({block: 'center', behavior: 'instant'});
  const boxes = [];
  const same = (a, b) => a.every((v, k) => v === b[k]);
  for (let i = 0; i < 60; i++) {
    await new Promise(r => setTimeout(r, 50));
    const r = el.getBoundingClientRect();
    boxes.push([r.left, r.top, r.width, r.height].map(Math.round));
    const n = boxes.length;
    if (n >= 3 && same(boxes[n - 1], boxes[n - 2]) && same(boxes[n - 2], boxes[n - 3])) {
      return {settled: true, box: boxes[n - 1], boxes: boxes};
    }
  }
  return {settled: false, box: null, boxes: boxes};
}"""

#: Every slider: its step as a fraction of its span (live.js sets a log
#: slider's min, max and step in decades, so the span is max - min here).
_STEPS = """() => Array.from(
    document.querySelectorAll('.qd-live-figure input[type=range]')).map(
  s => ({id: s.id, fraction: +s.step / (+s.max - +s.min),
         step: s.step, min: s.min, max: s.max}))"""


def test_there_are_pages_with_plots():
    assert HTML.joinpath("index.html").exists(), "build the book first"
    assert len(PLOT_PAGES) >= 12, PLOT_PAGES


@pytest.mark.parametrize("docname", PLOT_PAGES)
def test_no_legend_covers_data_at_390_px(browser, book_url, screenshots, docname):
    page, problems = visit(browser, f"{book_url}/{docname}.html")
    try:
        page.set_viewport_size(PHONE)
        # Plotly redraws a responsive graph on the window's resize event.
        page.wait_for_function(
            """() => Array.from(document.querySelectorAll(
                   '.qd-live-figure .js-plotly-plot')).every(
                   gd => gd._fullLayout && gd._fullLayout.width <= 390)""",
            timeout=15_000,
        )
        page.wait_for_timeout(300)  # the last relayout's legend
        # live.js draws a title again in lines 150 ms after the resize
        # (a few draws); give it up to 5 s to fit, then report what is left.
        for _ in range(25):
            titles = page.evaluate(_TITLES)
            if not any(t["problems"] for t in titles):
                break
            page.wait_for_timeout(200)
        off = {t["figure"]: (t["title"], t["problems"]) for t in titles if t["problems"]}
        assert not off, f"{docname} at 390 px, titles: {off}"
        report = page.evaluate(_COVERED)
        assert report, f"{docname}: no live figure found"
        for fig in report:
            # The measurement measured something.
            assert fig.get("points", 0) > 0 and fig["width"] <= 390, fig
        for i in range(page.locator(".qd-live-figure").count()):
            fid = page.locator(".qd-live-figure").nth(i).get_attribute("id")
            still = page.evaluate(_SETTLED, f"{fid}-plot")
            assert still["settled"], f"{docname}: {fid} still moving at 390 px: {still['boxes']}"
            left, top, width, height = still["box"]
            clip = {
                "x": left,
                "y": top,
                "width": width,
                "height": min(height, PHONE["height"] - top),
            }
            page.screenshot(path=str(screenshots / f"{fid}-plot-390.png"), clip=clip)
        covered = {f["figure"]: f["problems"] for f in report if f["problems"]}
        assert not covered, f"{docname} at 390 px: {covered}"

        steps = page.evaluate(_STEPS)
        fine = [s for s in steps if not s["fraction"] >= 0.01 * (1 - 1e-9)]
        assert not fine, f"sliders stepping below 1 % of their span: {fine}"
        assert problems == [], "\n".join(problems)
    finally:
        page.close()

"""Chapter 8 figure: the wall-clock cost of a page against the requests in
service, live in the book (standard library only: it runs in the
browser)."""

from __future__ import annotations

from figures.live import Live, Range
from figures.live.page import legend_below
from models.analytic import numbers as A

__all__ = ["page_cost", "page_cost_figure"]


def page_cost(
    rtt_us: float, pages_per_request: int, parallel: int, lmbench_us: float, max_qd: int = 16
) -> dict:
    """µs per 4 KiB page against the requests in service, QD 1..``max_qd``
    (:func:`models.analytic.page_time`: ``RTT / (PAGES x QD)``), for a
    request latency of ``rtt_us`` µs carrying ``pages_per_request`` pages,
    with the point at QD ``parallel`` marked and the measured lmbench cost
    ``lmbench_us`` as a line."""
    if not 1 <= parallel <= max_qd:
        raise ValueError(f"parallel must lie in [1, {max_qd}], got {parallel!r}")
    qds = list(range(1, max_qd + 1))
    rtt_s = rtt_us * 1e-6  # µs -> s
    us = 1e6  # s -> µs
    y = [t * us for t in A.page_time(rtt_s, pages_per_request, qds)]
    now = A.page_time(rtt_s, pages_per_request, parallel) * us
    return {
        "traces": [
            {"x": qds, "y": y, "name": "µs per page (Little's law)", "mode": "lines+markers"},
            {
                "x": [1, max_qd],
                "y": [lmbench_us, lmbench_us],
                "name": "lmbench, measured",
                "mode": "lines",
                "line": {"dash": "dot", "color": "black"},
            },
            {
                "x": [parallel],
                "y": [now],
                "name": f"QD {parallel}",
                "mode": "markers",
                "marker": {"symbol": "square", "size": 9, "color": "#d62728"},
            },
        ],
        "title": (
            f"{now:.2f} µs per page at QD {parallel}: "
            f"{pages_per_request} pages per {rtt_us:g} µs request"
        ),
    }


def page_cost_figure(lmbench_us: float) -> Live:
    """The chapter's figure, with the measured lmbench cost per page (from
    the chapter's data, so it is passed in)."""
    return Live(
        "ch8-page-cost",
        page_cost,
        controls=[
            Range(
                "rtt_us",
                "request latency (µs)",
                10,
                1000,
                grid=[float(r) for r in range(50, 450, 50)],
                value=200.0,
            ),
            Range(
                "pages_per_request",
                "pages per request",
                1,
                256,
                grid=[1, 4, 8, 16, 32, 64, 128],
                value=32,
                integer=True,
                log=True,
            ),
            Range(
                "parallel",
                "requests in parallel",
                1,
                16,
                grid=[2, 4, 8, 16],
                value=2,
                integer=True,
            ),
        ],
        fixed={"lmbench_us": lmbench_us, "max_qd": 16},
        layout=legend_below(
            {
                "xaxis": {"title": {"text": "requests in parallel (QD)"}},
                "yaxis": {"title": {"text": "µs per 4 KiB page"}, "type": "log"},
                "margin": {"t": 40, "r": 10, "b": 45, "l": 60},
            }
        ),
        caption=(
            "RTT / (PAGES x QD) (models.analytic.page_time), the "
            "request latency held constant at every QD. 224 points "
            "(latency x pages x QD marked) were computed when the "
            "book was built."
        ),
    )

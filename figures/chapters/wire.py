"""Chapter 2 figure: wire time of one message against its size, live in the
book (standard library only: it runs in the browser)."""

from __future__ import annotations

from figures.live import Live, Range
from figures.live.page import legend_below
from models.analytic import numbers as A

__all__ = ["wire_time_curve", "WIRE_TIME"]


def wire_time_curve(mtu: int, gbps: float, max_bytes: int = 20000) -> dict:
    """Wire time (µs) against payload 0..``max_bytes`` bytes at this MTU
    and link rate (Gb/s), from :func:`models.analytic.wire_time`.

    The sizes are 241 even steps plus both sides of every multiple of the
    MSS, so each step of the staircase is drawn where it happens.
    """
    bw = gbps * 1e9  # Gb/s -> bits per second
    mss = A.mss(mtu)
    even = {max_bytes * i // 240 for i in range(241)}
    steps = {k * mss + d for k in range(1, max_bytes // mss + 1) for d in (0, 1)}
    sizes = sorted(s for s in even | steps if s <= max_bytes)
    us = 1e6  # seconds -> microseconds
    wire = [A.wire_time(s, bw, mtu) * us for s in sizes]
    alone = [s * 8 / bw * us for s in sizes]  # payload bits at line rate
    return {
        "traces": [
            {
                "x": sizes,
                "y": wire,
                "name": f"wire time, MTU {mtu}",
                "mode": "lines",
                "line": {"shape": "hv"},
            },
            {
                "x": sizes,
                "y": alone,
                "name": "payload alone at line rate",
                "mode": "lines",
                "line": {"dash": "dot", "color": "black", "width": 1},
            },
        ],
        "title": (
            f"MSS {mss} bytes; efficiency with full segments "
            f"{100 * A.framing_efficiency(mtu):.2f} %; a 560-byte "
            f"response takes {A.wire_time(560, bw, mtu) * us:.3g} µs"
        ),
    }


#: The chapter's main figure.
WIRE_TIME = Live(
    "ch2-wire-time",
    wire_time_curve,
    controls=[
        Range(
            "mtu",
            "MTU (bytes)",
            576,
            65536,
            grid=[576, 1500, 4000, 9000],
            value=1500,
            integer=True,
            log=True,
        ),
        Range(
            "gbps",
            "link (Gb/s)",
            0.01,
            400,
            grid=[0.1, 1.0, 10.0, 25.0, 100.0],
            value=1.0,
            log=True,
        ),
    ],
    fixed={"max_bytes": 20000},
    layout=legend_below(
        {
            "xaxis": {"title": {"text": "message payload (bytes)"}},
            "yaxis": {"title": {"text": "wire time (µs)"}, "rangemode": "tozero"},
            "margin": {"t": 40, "r": 10, "b": 45, "l": 60},
        }
    ),
    caption=(
        "models.analytic.wire_time over payloads 0-20,000 bytes; 20 "
        "points (MTU x link rate) were computed when the book was "
        "built."
    ),
)

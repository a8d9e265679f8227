"""Chapter 2 figure: wire time of one message against its size, live in the static book."""

from __future__ import annotations

import numpy as np

from models import analytic as A

from .live import LiveFigure

__all__ = ["wire_time_live_figure"]


def _frame(mtu: int, gbps: float, max_bytes: int) -> dict:
    bw = gbps * 1e9  # Gb/s -> bits per second
    sizes = np.unique(np.concatenate([np.linspace(0, max_bytes, 241).astype(int),
                                      [k * A.mss(mtu) + d for k in range(1, max_bytes // A.mss(mtu) + 1)
                                       for d in (0, 1)]]))
    sizes = sizes[sizes <= max_bytes]
    wire = [A.wire_time(int(s), bw, mtu) * 1e6 for s in sizes]       # seconds -> microseconds
    alone = [s * 8 / bw * 1e6 for s in sizes]                          # payload bits at line rate
    return {"traces": [
        {"x": sizes.tolist(), "y": wire, "name": f"wire time, MTU {mtu}", "mode": "lines", "line": {"shape": "hv"}},
        {"x": sizes.tolist(), "y": alone, "name": "payload alone at line rate", "mode": "lines",
         "line": {"dash": "dot", "color": "black", "width": 1}},
    ], "title": (f"MSS {A.mss(mtu)} bytes; efficiency with full segments {100 * A.framing_efficiency(mtu):.2f} %; "
                 f"a 560-byte response takes {A.wire_time(560, bw, mtu) * 1e6:.3g} µs")}


def wire_time_live_figure(max_bytes: int = 20000) -> LiveFigure:
    """Wire time against message payload over a grid of MTU and link rate."""
    axes = {"MTU (bytes)": [576, 1500, 4000, 9000], "link (Gb/s)": [0.1, 1.0, 10.0, 25.0, 100.0]}
    return LiveFigure(
        "ch2-wire-time", axes, lambda mtu, gbps: _frame(mtu, gbps, max_bytes),
        layout={"xaxis": {"title": {"text": "message payload (bytes)"}},
                "yaxis": {"title": {"text": "wire time (µs)"}, "rangemode": "tozero"},
                "legend": {"x": 0.02, "y": 0.98}, "margin": {"t": 40, "r": 10, "b": 45, "l": 60}},
        arg_names=dict(zip(axes, ["mtu", "gbps"])), defaults={"MTU (bytes)": 1500, "link (Gb/s)": 1.0},
        caption=("Precomputed when the book was built from models.analytic.wire_time: 20 grid points "
                 "(MTU x link rate), each a staircase over payloads 0-20,000 bytes."))

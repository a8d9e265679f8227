"""Chapter 11 figure: throughput bound min(W/RTT, C) against Charrouf's runs, live in the static book."""

from __future__ import annotations

import numpy as np
import pandas as pd

from models import wan
from models.validation.wan import KB  # the source's KB/s: 1000 bytes per second

from .live import LiveFigure

__all__ = ["window_live_figure"]

KiB = 1024


def window_live_figure(runs: pd.DataFrame) -> LiveFigure:
    """The bound over a grid of window and link rate, with the measured remote-warm reads as points.

    ``runs`` has columns ``config``, ``rtt_ms`` and ``remote_warm_KBps`` (the chapter's table).
    """
    rtts_ms = np.linspace(1, 160, 160)
    points = []
    for cfg, symbol in (("default", "circle-open"), ("tuned", "square-open")):
        s = runs[runs["config"] == cfg]
        points.append({"x": s["rtt_ms"].tolist(), "y": s["remote_warm_KBps"].tolist(), "mode": "markers",
                       "name": f"Charrouf 2008, {cfg}", "marker": {"symbol": symbol, "size": 8}})

    def frame(window_kib: float, link_mbps: float) -> dict:
        w = window_kib * KiB                 # KiB -> bytes
        c = link_mbps * 1e6                  # Mb/s -> bits per second
        bound = [wan.throughput_bound_Bps(w, r * 1e-3, c) / KB for r in rtts_ms]   # bytes/s -> KB/s
        cross = wan.crossover_rtt_s(w, c) * 1e3
        return {"traces": [{"x": rtts_ms.tolist(), "y": bound, "mode": "lines", "name": "min(W/RTT, C)",
                            "line": {"color": "black"}}] + points,
                "title": f"window {window_kib:g} KiB on {link_mbps:g} Mb/s: link-limited below {cross:.1f} ms"}

    axes = {"window (KiB)": [16, 32, 64, 128, 256, 512, 1024], "link (Mb/s)": [10, 45, 100, 1000]}
    layout = {"xaxis": {"title": {"text": "round-trip time (ms)"}},
              "yaxis": {"title": {"text": "read throughput (KB/s)"}, "type": "log"},
              "legend": {"x": 0.6, "y": 0.98}, "margin": {"t": 40, "r": 10, "b": 45, "l": 60}}
    return LiveFigure("ch11-window", axes, frame, layout=layout,
                      arg_names=dict(zip(axes, ["window_kib", "link_mbps"])),
                      defaults={"window (KiB)": 64, "link (Mb/s)": 45},
                      caption=("Precomputed when the book was built from models.wan.throughput_bound_Bps: "
                               "28 grid points (window x link rate); the points are the measured runs."))

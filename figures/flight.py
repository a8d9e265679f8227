"""Chapter 1 figure: RTT and TPT against queue depth for the four-stage ring, live in the static book."""

from __future__ import annotations

from models import analytic as A
from models.ring import Ring

from .live import LiveFigure

__all__ = ["rtt_tpt_live_figure"]


def _frame(sp_us: float, cp_us: float, cl_us: float, max_qd: int, ops: int) -> dict:
    times = {"W1": A.wire_time(48, 1e9), "SP": sp_us * 1e-6,  # microseconds -> seconds
             "W2": A.wire_time(560, 1e9), "CP": cp_us * 1e-6}
    ring = Ring.from_times(times, {"CP": cl_us * 1e-6})
    qds = list(range(1, max_qd + 1))
    runs = [ring.run(q, ops=ops) for q in qds]
    rtt = [r.rtt_mean * 1e6 for r in runs]   # seconds -> microseconds
    tpt = [r.tpt * 1e6 for r in runs]
    return {"traces": [
        {"x": qds, "y": rtt, "name": "RTT (one operation, round trip)", "mode": "lines+markers"},
        {"x": qds, "y": tpt, "name": "TPT = 1/IOPS (between completions)", "mode": "lines+markers"},
        {"x": qds, "y": [q / r.iops * 1e6 for q, r in zip(qds, runs)], "name": "QD x TPT (Little's law)",
         "mode": "lines", "line": {"dash": "dot", "color": "black", "width": 1}},
    ], "title": f"TPT settles at the slowest stage, {max(times.values()) * 1e6:.1f} µs"}


def rtt_tpt_live_figure(max_qd: int = 16, ops: int = 400) -> LiveFigure:
    """RTT, TPT and QD x TPT against QD, over a grid of SP, CP and the client wake-up latency CL."""
    axes = {"SP (µs)": [5.0, 10.0, 15.9, 25.0, 40.0], "CP (µs)": [2.0, 8.0, 15.0, 30.0],
            "CL (µs)": [0.0, 23.7, 60.0]}
    return LiveFigure(
        "ch1-rtt-tpt", axes, lambda sp, cp, cl: _frame(sp, cp, cl, max_qd, ops),
        layout={"xaxis": {"title": {"text": "queue depth QD"}}, "yaxis": {"title": {"text": "microseconds"}},
                "legend": {"x": 0.02, "y": 0.98}, "margin": {"t": 40, "r": 10, "b": 45, "l": 55}},
        arg_names=dict(zip(axes, ["sp", "cp", "cl"])),
        defaults={"SP (µs)": 15.9, "CP (µs)": 8.0, "CL (µs)": 0.0},
        caption=(f"Precomputed when the book was built: {5 * 4 * 3} grid points (SP x CP x CL), each a ring "
                 f"simulation of {ops} operations per queue depth 1-{max_qd} (W1, W2 of a 512-byte read at "
                 "1 Gb/s). The dotted line is QD x TPT: Little's law says it equals RTT."))

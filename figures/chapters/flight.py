"""Chapter 1 figure: RTT and TPT against queue depth for the four-stage
ring, live in the book (standard library only: it runs in the browser)."""

from __future__ import annotations

from figures.live import Live, Range
from figures.live.page import legend_below
from models.analytic import numbers as A
from models.ring import Ring
from models.sim import BUTTERFIELD_CLIENT, BUTTERFIELD_SERVER

__all__ = ["SP_US", "CL_US", "rtt_tpt", "RTT_TPT"]

GBIT = 1e9  # bits per second
#: Butterfield's (2017) server time SP and client wake-up latency CL in
#: µs, rounded to 0.1 µs (the number boxes take any value).
SP_US = round(BUTTERFIELD_SERVER.proc_s * 1e6, 1)  # s -> us
CL_US = round(BUTTERFIELD_CLIENT.wake_s * 1e6, 1)  # s -> us


def rtt_tpt(sp_us: float, cp_us: float, cl_us: float, max_qd: int = 16, ops: int = 400) -> dict:
    """RTT, TPT and QD x TPT against QD for a ring of 512-byte reads.

    W1 and W2 are the wire times of the request and response at 1 Gb/s;
    ``sp_us`` and ``cp_us`` the server and client processing times and
    ``cl_us`` the client's wake-up latency, all in µs.  Each queue depth
    1..``max_qd`` is a :class:`models.ring.Ring` run of ``ops`` operations.
    """
    times = {
        "W1": A.wire_time(48, GBIT),
        "W2": A.wire_time(560, GBIT),
        "SP": sp_us * 1e-6,
        "CP": cp_us * 1e-6,
    }  # µs -> seconds
    ring = Ring.from_times({k: times[k] for k in A.RING4}, {"CP": cl_us * 1e-6})
    qds = list(range(1, max_qd + 1))
    runs = [ring.run(q, ops=ops) for q in qds]
    us = 1e6  # seconds -> microseconds
    return {
        "traces": [
            {
                "x": qds,
                "y": [r.rtt_mean * us for r in runs],
                "name": "RTT (one operation, round trip)",
                "mode": "lines+markers",
            },
            {
                "x": qds,
                "y": [r.tpt * us for r in runs],
                "name": "TPT = 1/IOPS (between completions)",
                "mode": "lines+markers",
            },
            {
                "x": qds,
                "y": [q / r.iops * us for q, r in zip(qds, runs)],
                "name": "QD x TPT (Little's law)",
                "mode": "lines",
                "line": {"dash": "dot", "color": "black", "width": 1},
            },
        ],
        "title": (f"TPT settles at the slowest stage, {max(times.values()) * us:.1f} µs"),
    }


#: The chapter's main figure.
RTT_TPT = Live(
    "ch1-rtt-tpt",
    rtt_tpt,
    controls=[
        Range("sp_us", "SP (µs)", 1, 60, grid=[5.0, 10.0, SP_US, 25.0, 40.0], value=SP_US),
        Range("cp_us", "CP (µs)", 1, 60, grid=[2.0, 8.0, 15.0, 30.0], value=8.0),
        Range("cl_us", "CL (µs)", 0, 200, grid=[0.0, CL_US, 60.0], value=0.0),
    ],
    fixed={"max_qd": 16, "ops": 400},
    layout=legend_below(
        {
            "xaxis": {"title": {"text": "queue depth QD"}},
            "yaxis": {"title": {"text": "microseconds"}},
            "margin": {"t": 40, "r": 10, "b": 45, "l": 55},
        }
    ),
    caption=(
        "Each curve is a ring simulation (models.ring) of 400 "
        "operations per queue depth 1-16, with W1 and W2 of a 512-byte "
        "read at 1 Gb/s. 60 points (SP x CP x CL) were computed when the "
        "book was built. The dotted line is QD x TPT: Little's law says "
        "it equals RTT."
    ),
)

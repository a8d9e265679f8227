"""The "your numbers" predictor on the diagnose page: a reader's link, sizes, host times, queue
depth and socket modes, run through the packet simulator live in the book (standard library
only: it runs in the browser).

Each update is one call of :func:`models.sim.predict.predict`: a simulator run bounded to
:data:`~models.sim.predict.SEGMENT_BUDGET` data segments (and the usual fixes when a timer
binds), :func:`models.sim.explain.explain`'s verdict, and chapter 3's bound.  The plot shows the
bound against the queue depth, each stage's rate limit, the simulated rate at the chosen depth
(and the fixes' rates), and the depth that keeps the link busy.
"""

from __future__ import annotations

import math
from typing import Any

from figures.live import Live, Range, Select
from figures.live.page import legend_below
from models.sim import BUTTERFIELD_CLIENT, BUTTERFIELD_SERVER
from models.sim.explain import LIMITS
from models.sim.predict import bound_iops, predict

__all__ = ["MODES", "OPS", "SP_US", "CP_US", "QDS", "your_numbers", "prediction", "PREDICTOR"]

#: Socket modes as the reader sees them -> :data:`models.sim.explain.SOCKET_MODES` keys.
MODES = {
    "Nagle": "nagle",
    "TCP_NODELAY": "nodelay",
    "MSG_MORE on the header": "msg-more",
    "TCP_CORK": "cork",
}
#: The operation: a read (the data in the response) or a write (the data in the request).
OPS = ("read", "write")
#: Butterfield's (2017) server and client time per operation, µs (the first view).
SP_US = round(BUTTERFIELD_SERVER.proc_s * 1e6, 2)  # s -> us
CP_US = round(BUTTERFIELD_CLIENT.proc_s * 1e6, 2)  # s -> us
#: Queue depths of the bound curve.
QDS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
_QD_MAX = int(LIMITS["qd"][1])

_NAMES = {
    "W1": "request link",
    "W2": "response link",
    "SP": "server CPU",
    "CP": "client CPU",
}
_VERDICT = {
    "delayed-ack": "a timer: Nagle meets the delayed ACK",
    "probe": "a timer: held data waits for the probe timer",
    "link": "the link",
    "server-cpu": "the server's CPU",
    "client-cpu": "the client's CPU",
    "queue-depth": "too little queue depth",
    "unknown": "not known at this size (see the range)",
}


def prediction(
    gbps: float,
    mtu: int,
    latency_ms: float,
    io_bytes: int,
    op: str,
    server_us: float,
    client_us: float,
    qd: int,
    server_mode: str,
    client_mode: str,
) -> dict[str, Any]:
    """:func:`models.sim.predict.predict` for the figure's controls: link rate in Gb/s, MTU in
    bytes, one-way latency in ms, I/O size in bytes, ``"read"`` or ``"write"``, each host's time
    per operation in µs, queue depth and each side's socket mode (a key of :data:`MODES`)."""
    for key, mode in (("server_mode", server_mode), ("client_mode", client_mode)):
        if mode not in MODES:
            raise ValueError(f"{key} must be one of {sorted(MODES)}, got {mode!r}")
    return predict(
        link_bps=gbps * 1e9,  # Gb/s -> bits per second
        mtu=mtu,
        latency_s=latency_ms * 1e-3,  # ms -> seconds
        io_bytes=io_bytes,
        op=op,
        server_s=server_us * 1e-6,  # µs -> seconds
        client_s=client_us * 1e-6,
        qd=qd,
        server_mode=MODES[server_mode],
        client_mode=MODES[client_mode],
    )


def _title(p: dict[str, Any]) -> str:
    qd = p["qd"]
    if p["iops_high"] is None:
        rate = f"{p['iops']:,.1f} IOPS, {p['mb_per_s']:,.3f} MB/s"
    else:
        high_mb = p["iops_high"] * p["io_bytes"] / 1e6  # bytes/s -> MB/s
        rate = (
            f"{p['iops']:,.1f} to {p['iops_high']:,.1f} IOPS, "
            f"{p['mb_per_s']:,.3f} to {high_mb:,.3f} MB/s"
        )
    link = _NAMES[p["link_stage"]]
    if p["link_saturates"]:
        need = f"QD to saturate the {link}: {p['qd_link']:,.1f} (" + (
            "inequality [1])" if p["qd_link_rule"] == "[1]" else "the ring's knee)"
        )
    else:
        need = f"no QD saturates the {link}: the {_NAMES[p['slowest']]} is slower"
    if p["stalls"]:
        timer = "the delayed ACK" if p["binds"] == "delayed-ack" else "the probe timer"
        stall = (
            f"stalls: yes, the {p['held']} holds data until {timer}, "
            f"{1e3 * p['period_s']:,.1f} ms per operation in flight"  # s -> ms
        )
        if p["fixes"]:
            option, fixed = max(p["fixes"].items(), key=lambda kv: kv[1])
            stall += f"<br>best fix: {option} gives {fixed:,.0f} IOPS"
    else:
        stall = f"stalls: no; {p['why']}"
    lines = [
        f"{rate} at QD {qd} (MB = 10^6 bytes of data)",
        f"binds: {_VERDICT[p['binds']]}; {need}",
        stall,
    ]
    return "<br>".join(lines)


def your_numbers(
    gbps: float,
    mtu: int,
    latency_ms: float,
    io_bytes: int,
    op: str,
    server_us: float,
    client_us: float,
    qd: int,
    server_mode: str,
    client_mode: str,
) -> dict[str, Any]:
    """The figure: IOPS against queue depth (log axes) with chapter 3's bound, each stage's rate
    limit, the simulated rate at ``qd`` (and the fixes' rates when a timer binds) and the queue
    depth that keeps the link busy; the verdict in the title.  Settings the simulator refuses
    give an empty plot whose title says why."""
    try:
        p = prediction(
            gbps, mtu, latency_ms, io_bytes, op, server_us, client_us, qd, server_mode, client_mode
        )
    except ValueError as e:
        return {
            "traces": [{"x": [], "y": [], "name": "no prediction", "mode": "markers"}],
            "title": f"No prediction for these settings:<br>{e}",
        }
    stages, rtt = p["stages"], p["rtt_min_s"]
    bound = [bound_iops(q, stages, rtt) for q in QDS]
    span = [QDS[0], QDS[-1]]
    traces: list[dict[str, Any]] = [
        {
            "x": QDS,
            "y": bound,
            "name": "bound min(QD/RTT, 1/TPT)",
            "mode": "lines",
            "line": {"color": "black", "dash": "dash", "width": 1},
        },
        {
            "x": [qd] if p["iops_high"] is None else [qd, qd],
            "y": [p["iops"]] if p["iops_high"] is None else [p["iops"], p["iops_high"]],
            "name": f"simulated, QD {qd}"
            + ("" if p["plan"]["kind"] != "reduced" else f" (run at QD {p['plan']['qd']})"),
            "mode": "markers" if p["iops_high"] is None else "lines+markers",
            "marker": {"size": 11, "color": "#d62728"},
        },
    ]
    colors = {"W1": "#1f77b4", "W2": "#17becf", "SP": "#ff7f0e", "CP": "#2ca02c"}
    for stage, limit in p["limits"].items():
        traces.append(
            {
                "x": span,
                "y": [limit, limit],
                "name": f"{_NAMES[stage]} 1/{stage}",
                "mode": "lines",
                "line": {"color": colors[stage], "dash": "dot", "width": 1},
            }
        )
    for option, rate in p["fixes"].items():
        traces.append(
            {
                "x": [qd],
                "y": [rate],
                "name": f"fix {option}",
                "mode": "markers",
                "marker": {"symbol": "triangle-up", "size": 10},
            }
        )
    if p["link_saturates"] and math.isfinite(p["qd_link"]) and p["qd_link"] <= _QD_MAX:
        ys = [y for t in traces for y in t["y"] if y > 0]
        traces.append(
            {
                "x": [p["qd_link"], p["qd_link"]],
                "y": [min(ys) / 2, max(ys) * 2],
                "name": f"QD {p['qd_link']:,.1f} keeps the link busy",
                "mode": "lines",
                "line": {"color": "grey", "dash": "dot", "width": 1},
            }
        )
    return {"traces": traces, "title": _title(p)}


#: The legend under the x axis as in every live figure (``legend_below``: its height reserved in
#: the bottom margin, so a title drawn in more lines on a phone cannot push the plot onto it).
_LAYOUT = legend_below(
    {
        "xaxis": {"title": {"text": "queue depth QD"}, "type": "log"},
        "yaxis": {"title": {"text": "operations per second"}, "type": "log"},
        "title": {"font": {"size": 12}},
        "margin": {"t": 75, "r": 10, "b": 45, "l": 60},
        "height": 520,
    }
)

#: The diagnose page's predictor.  Only the operation and the socket modes are precomputed (at
#: the other controls' first view): the book cannot hold the product of ten controls' grids.
PREDICTOR = Live(
    "diag-predictor",
    your_numbers,
    controls=[
        Range("gbps", "link rate (Gb/s)", 0.001, 100, grid=[1.0, 10.0], value=1.0, log=True),
        Range(
            "mtu", "MTU (bytes)", 576, 65536, grid=[1500, 9000], value=1500, integer=True, log=True
        ),
        Range("latency_ms", "one-way latency (ms)", 0, 100, grid=[0.0, 10.0], value=0.0, step=1),
        Range(
            "io_bytes",
            "I/O size (bytes)",
            512,
            1 << 20,
            grid=[512, 4096],
            value=512,
            integer=True,
            log=True,
        ),
        Select("op", "operation", list(OPS), "read"),
        Range(
            "server_us",
            "server time per op (µs)",
            0.1,
            10_000,
            grid=[SP_US, 100.0],
            value=SP_US,
            log=True,
        ),
        Range(
            "client_us",
            "client time per op (µs)",
            0.1,
            10_000,
            grid=[CP_US, 100.0],
            value=CP_US,
            log=True,
        ),
        Range("qd", "queue depth", 1, _QD_MAX, grid=[1, 16], value=1, integer=True, log=True),
        Select("server_mode", "server socket", list(MODES), "Nagle"),
        Select("client_mode", "client socket", list(MODES), "TCP_NODELAY"),
    ],
    precompute=("op", "server_mode", "client_mode"),
    layout=_LAYOUT,
    digits=5,
    caption=(
        "Your numbers through the book's packet simulator (models.sim.predict): a read is a "
        "48-byte command answered by a 48-byte header and the data as two send() calls, a write "
        "the command and the data, answered by a 48-byte status. Each update simulates at most "
        "a fixed number of segments: a steady run when it fits, else one round of the queue, "
        "else a round at a smaller queue depth (saturated: the same rate; if not, the title "
        "gives a range). Dashed: chapter 3's bound; dotted: each stage's limit and the queue "
        "depth that keeps the link busy. Precomputed: the 32 combinations of operation and "
        "socket modes at the other controls' first view; every other value runs live."
    ),
)

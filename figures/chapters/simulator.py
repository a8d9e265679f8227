"""Chapter 6 figure: the packet simulator's IOPS against queue depth under
the operational bound, with the threshold of inequality [1] or [2], live
in the book (standard library only: it runs in the browser).

Every curve is a run of :func:`models.sim.simulate`: a 48-byte request and
a response written as a 48-byte header with MSG_MORE then the data (one
message, as SCST does), with the default stage times and host start
latencies of :class:`models.sim.Scenario`.
"""

from __future__ import annotations

import math

from figures.live import Live, Range, Select, iops_bound_trace, iops_qd_layout
from models.analytic import numbers as A
from models.presets import one_segment
from models.sim import BUTTERFIELD_SERVER, Scenario, simulate

__all__ = ["QDS", "SP_US", "bound_scenario", "thresholds", "bound_qd", "BOUND_QD"]

#: Queue depths of every curve.
QDS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 32)
HEADER = 48  # bytes of the iSCSI header in the request and the response
#: Butterfield's (2017) server time SP in µs, rounded to 0.1 µs: the
#: figure's default.
SP_US = round(BUTTERFIELD_SERVER.proc_s * 1e6, 1)  # s -> us


def bound_scenario(data: int, sp_us: float, nodelay: str, ops: int) -> Scenario:
    """The chapter's one-message scenario with ``data`` response bytes,
    ``sp_us`` µs of server time and TCP_NODELAY on ``nodelay`` ``"both"``
    sockets or ``"none"``."""
    if nodelay not in ("both", "none"):
        raise ValueError(f"nodelay must be 'both' or 'none', got {nodelay!r}")
    on = nodelay == "both"
    return one_segment(
        workload={"response_writes": (HEADER, data)},
        client={"nodelay": on},
        server={"nodelay": on, "proc_s": sp_us * 1e-6},  # µs -> seconds
        run={"ops": ops},
    )


def thresholds(sc: Scenario) -> dict:
    """Stage times (s), the start latencies every lone operation pays (s),
    and the queue depth at which inequality [2] (server CPU bound) or [1]
    (response link busy) says the bottleneck saturates.

    ``label`` names the inequality that applies: [1] when the response's
    wire time W2 exceeds SP, else [2] (when the client's CP is the largest
    stage neither applies and ``qd`` is ``None``).
    """
    times = sc.stage_times()
    v = sc.symbol_values()
    lat = sc.path_latency_s()
    rtt = math.fsum(times.values()) + lat
    slowest = max(times, key=times.get)
    label = A.bottleneck_inequality(times)
    qd = None
    if label is not None:
        qd = A.qd_min_bottleneck(times, sl=v["SL"], cl=v["CL"], rtt_s=rtt)
    return {"times": times, "latency": lat, "slowest": slowest, "qd": qd, "label": label}


def bound_qd(data: int, sp_us: float, nodelay: str, ops: int = 1000) -> dict:
    """Simulated IOPS (thousands) against QD under the bound
    ``min(QD/RTTmin, 1/TPTmin)``, the same with the start latencies in
    RTTmin, and the threshold of [2] or [1].

    ``data`` response bytes after the 48-byte header, ``sp_us`` the server
    time (µs), TCP_NODELAY on ``nodelay`` ``"both"`` sockets or
    ``"none"``; each queue depth runs at least ``ops`` operations, in
    whole rounds of QD.
    """
    qds = list(QDS)
    sc = bound_scenario(data, sp_us, nodelay, ops)
    th = thresholds(sc)
    stages = list(th["times"].values())
    k = 1e-3  # IOPS -> thousands
    # Whole rounds of QD completions per run: in a periodic steady state
    # that removes the window-edge error.
    sim = [
        simulate(sc.replace(workload={"qd": q}, run={"ops": -(-ops // q) * q})).iops * k
        for q in qds
    ]
    bound = [x * k for x in A.iops_bound(qds, stages)]
    alone = [x * k for x in A.iops_bound(qds, stages, latency=th["latency"])]
    peak = k / th["times"][th["slowest"]]  # 1/TPTmin, thousands
    reached = [q for q, v in zip(qds, sim) if v >= 0.99 * peak]
    traces = [
        iops_bound_trace(qds, bound, dash="dot"),
        {
            "x": qds,
            "y": sim,
            "name": "packet simulation",
            "mode": "lines+markers",
            "line": {"color": "#1f77b4"},
        },
        {
            "x": qds,
            "y": alone,
            "name": "the same, start latencies in RTTmin",
            "mode": "lines",
            "line": {"color": "grey", "dash": "dashdot", "width": 1},
        },
    ]
    if th["qd"] is not None:
        what = "server CPU bound" if th["label"] == "[2]" else "response link busy"
        traces.append(
            {
                "x": [th["qd"], th["qd"]],
                "y": [0, 1.1 * peak],
                "mode": "lines",
                "name": f"{th['label']} {what} from QD ≥ {th['qd']:.1f}",
                "line": {"color": "#d62728", "width": 1, "dash": "dash"},
            }
        )
    first = (
        f"99 % of it from QD {reached[0]}" if reached else f"below 99 % of it up to QD {qds[-1]}"
    )
    slowest = th["slowest"]
    title = f"slowest stage {slowest} = {th['times'][slowest] * 1e6:.1f} µs; simulation {first}"
    return {"traces": traces, "title": title}


_OPS = 1000

#: The chapter's main figure.
BOUND_QD = Live(
    "ch6-bound-qd",
    bound_qd,
    controls=[
        Range(
            "data",
            "data (bytes)",
            1,
            8192,
            grid=[512, 1024, 2048, 4096, 8192],
            value=512,
            integer=True,
            log=True,
        ),
        Range("sp_us", "SP (µs)", 1, 60, grid=[10.0, SP_US, 30.0], value=SP_US),
        Select("nodelay", "TCP_NODELAY", ["both", "none"], "both"),
    ],
    fixed={"ops": _OPS},
    layout=iops_qd_layout(QDS[-1] + 1),
    digits=4,
    caption=(
        f"Each curve is a packet simulation (models.sim) of at least "
        f"{_OPS} operations (whole rounds of QD) at each of "
        f"{len(QDS)} queue depths {QDS[0]}-{QDS[-1]} (48-byte header "
        "sent with MSG_MORE, 1 Gb/s, MTU 1500, the default start "
        "latencies). The dotted bound leaves the start latencies out "
        "of RTTmin; the dash-dotted line counts them, as an operation "
        "travelling alone pays them. 30 points (data x SP x "
        "TCP_NODELAY on both sockets or none) were computed when the "
        "book was built."
    ),
)

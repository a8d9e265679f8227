"""Chapter 6 figure: the packet simulator's IOPS against queue depth under the operational bound, with the
threshold of inequality [1] or [2], live in the static book.

Every curve is a run of :func:`models.sim.simulate` made when the page is built: a 48-byte request and a
response written as a 48-byte header with MSG_MORE then the data (one message, as SCST does), with the
default stage times and host start latencies of :class:`models.sim.Scenario`.
"""

from __future__ import annotations

from models import analytic as A
from models.presets import one_segment
from models.sim import Scenario, simulate

from .live import LiveFigure, iops_qd_layout

__all__ = ["QDS", "bound_scenario", "thresholds", "bound_live_figure"]

#: Queue depths of every curve.
QDS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 32)
HEADER = 48  # bytes of the iSCSI header in the request and the response


def bound_scenario(data: int, sp_us: float, nodelay: str, ops: int) -> Scenario:
    """The chapter's one-message scenario with ``data`` response bytes, ``sp_us`` µs of server time and
    TCP_NODELAY on ``nodelay`` ``"both"`` sockets or ``"none"``."""
    if nodelay not in ("both", "none"):
        raise ValueError(f"nodelay must be 'both' or 'none', got {nodelay!r}")
    on = nodelay == "both"
    return one_segment(workload={"response_writes": (HEADER, data)}, client={"nodelay": on},
                       server={"nodelay": on, "proc_s": sp_us * 1e-6},  # microseconds -> seconds
                       run={"ops": ops})


def thresholds(sc: Scenario) -> dict:
    """Stage times (s), the start latencies every lone operation pays (s), and the queue depth at which
    inequality [2] (server CPU bound) or [1] (response link busy) says the bottleneck saturates.

    ``label`` names the inequality that applies: [1] when the response's wire time W2 exceeds SP, else [2]
    (when the client's CP is the largest stage neither applies and ``qd`` is ``None``).
    """
    times = sc.stage_times()
    v = sc.symbol_values()
    lat = sc.path_latency_s()
    rtt = sum(times.values()) + lat
    slowest = max(times, key=times.get)
    if slowest == "SP":
        qd, label = float(A.numeric(A.qd_min_cpu_bound())(CL=v["CL"], SP=v["SP"], RTTmin=rtt)), "[2]"
    elif slowest == "W2":
        qd = float(A.numeric(A.qd_min_network_bound())(CL=v["CL"], SL=v["SL"], W2=times["W2"], RTTmin=rtt))
        label = "[1]"
    else:
        qd, label = None, None
    return {"times": times, "latency": lat, "slowest": slowest, "qd": qd, "label": label}


def _frame(data: int, sp_us: float, nodelay: str, ops: int) -> dict:
    qds = list(QDS)
    sc = bound_scenario(data, sp_us, nodelay, ops)
    th = thresholds(sc)
    stages = list(th["times"].values())
    # Whole rounds of QD completions per run: in a periodic steady state that removes the window-edge error.
    sim = [simulate(sc.replace(workload={"qd": q}, run={"ops": -(-ops // q) * q})).iops / 1e3   # -> thousands
           for q in qds]
    bound = [x / 1e3 for x in A.iops_bound(qds, stages)]   # -> thousand IOPS
    alone = [x / 1e3 for x in A.iops_bound(qds, stages, latency=th["latency"])]
    peak = 1e-3 / th["times"][th["slowest"]]                            # 1/TPTmin in thousand IOPS
    reached = [q for q, v in zip(qds, sim) if v >= 0.99 * peak]
    traces = [
        {"x": qds, "y": bound, "name": "bound min(QD/RTTmin, 1/TPTmin)", "mode": "lines",
         "line": {"color": "black", "dash": "dot", "width": 1}},
        {"x": qds, "y": sim, "name": "packet simulation", "mode": "lines+markers", "line": {"color": "#1f77b4"}},
        {"x": qds, "y": alone, "name": "the same, start latencies in RTTmin", "mode": "lines",
         "line": {"color": "grey", "dash": "dashdot", "width": 1}},
    ]
    if th["qd"] is not None:
        what = "server CPU bound" if th["label"] == "[2]" else "response link busy"
        traces.append({"x": [th["qd"], th["qd"]], "y": [0, 1.1 * peak], "mode": "lines",
                       "name": f"{th['label']} {what} from QD ≥ {th['qd']:.1f}",
                       "line": {"color": "#d62728", "width": 1, "dash": "dash"}})
    first = f"99 % of it from QD {reached[0]}" if reached else f"below 99 % of it up to QD {qds[-1]}"
    title = f"slowest stage {th['slowest']} = {th['times'][th['slowest']] * 1e6:.1f} µs; simulation {first}"
    return {"traces": traces, "title": title}


def bound_live_figure(ops: int = 300) -> LiveFigure:
    """Simulated IOPS against QD under the bound, over the data size, SP and TCP_NODELAY."""
    axes = {"data (bytes)": [512, 1024, 2048, 4096, 8192],
            "SP (µs)": [10.0, 15.9, 30.0],
            "TCP_NODELAY": ["both", "none"]}
    n = 5 * 3 * 2
    return LiveFigure(
        "ch6-bound-qd", axes, lambda data, sp_us, nodelay: _frame(data, sp_us, nodelay, ops),
        layout=iops_qd_layout(QDS[-1] + 1, legend_x=0.4),
        arg_names=dict(zip(axes, ["data", "sp_us", "nodelay"])),
        defaults={"data (bytes)": 512, "SP (µs)": 15.9, "TCP_NODELAY": "both"},
        digits=4,
        caption=(f"Precomputed when the book was built: {n} grid points (data x SP x TCP_NODELAY on both "
                 f"sockets or none), each a packet simulation of at least {ops} operations (whole rounds of QD) "
                 f"at each of {len(QDS)} queue "
                 f"depths {QDS[0]}-{QDS[-1]} (48-byte header sent with MSG_MORE, 1 Gb/s, MTU 1500, the "
                 "default start latencies). The dotted bound leaves the start latencies out of RTTmin; the "
                 "dash-dotted line counts them, as an operation travelling alone pays them. Move a slider to "
                 "switch curves; no Python runs in your browser."))

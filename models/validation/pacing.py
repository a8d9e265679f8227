"""bbr's state in the kernel's traced runs beside the simulator's (comparisons only).

The kernel side is the dataset ``kernel6_bbr_trace`` (``tools/bbr_trace.py``: bpftrace at every
segment the server socket of a veth-1500, 16 KiB, QD-8 run received, one run with a Nagle server and
one with a NODELAY server); the simulator side runs the same scenario (the pacing sweep's row,
:func:`models.validation.fidelity.field_scenario`) and records bbr's estimate after every ACK.  Each
side is summarised per server mode: the mode bbr spent most rows in, the share of rows in start-up,
the pacing gain, and quantiles of the bandwidth estimate in Gb/s.

Rows are labelled as everywhere in the book: both sides here are *tests* of the bbr model (nothing
in it was fitted to the trace), and :func:`states_agree` is the check: the simulated server is in
start-up exactly when the kernel's was (a share of rows above one half).  Each summary also gives
quantiles of bbr's congestion window, and :func:`window_within` holds the simulated median to the
kernel's within :data:`WINDOW_TOL`.

>>> row = {"startup_share": 1.0}
>>> states_agree(pd.DataFrame([{"source": "kernel", "server_sock_mode": "nodelay", **row},
...                            {"source": "simulator", "server_sock_mode": "nodelay", **row}]))
True
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from models import framing
from models.validation.fidelity import IOPS_TOL

__all__ = [
    "TRACE_TABLE",
    "TRACE_QD",
    "TRACE_IOSIZE_BYTES",
    "QUANTILES",
    "MSS_BYTES",
    "GBPS_PER_PACKET_PER_US",
    "kernel_states",
    "simulated_states",
    "states_agree",
    "WINDOW_TOL",
    "window_within",
    "state_numbers",
    "state_findings",
]

#: The bundled trace (``tools/bbr_trace.py``).
TRACE_TABLE = "kernel6_bbr_trace"
#: Quantiles of the estimate each summary gives.
QUANTILES = (0.1, 0.5, 0.9)
#: The traced scenario's queue depth and response payload, bytes.
TRACE_QD = 8
TRACE_IOSIZE_BYTES = 16384
#: The traced runs' MSS (veth at MTU 1500), bytes.
MSS_BYTES = framing.mss(1500)
#: Gb/s of one full segment per microsecond (x MSS bytes x 8 bits, / 1000: Mb/us -> Gb/s).
GBPS_PER_PACKET_PER_US = MSS_BYTES * 8 / 1e3
#: How far the simulated window's median may lie from the kernel's, relative: the book's IOPS
#: tolerance (within one traced run the kernel's own window's 10th and 90th percentiles lie within
#: a fifth of its median).
WINDOW_TOL = IOPS_TOL


def _summary(
    source: str, mode: str, bw_gbps: pd.Series, modes: pd.Series, gain: float, cwnd: pd.Series
) -> dict:
    out: dict[str, Any] = {
        "source": source,
        "server_sock_mode": mode,
        "bbr_mode": modes.mode().iloc[0],
        "startup_share": float((modes == "startup").mean()),
        "pacing_gain": gain,
    }
    for q in QUANTILES:
        out[f"estimate_q{round(q * 100)}_gbps"] = float(bw_gbps.quantile(q))
    for q in QUANTILES:
        out[f"window_q{round(q * 100)}_packets"] = float(cwnd.quantile(q))
    return out


def kernel_states(trace: pd.DataFrame | None = None) -> pd.DataFrame:
    """One summary row per server mode of the kernel's trace (default: the bundled one)."""
    from models import data

    t = data.load(TRACE_TABLE) if trace is None else trace
    rows = []
    for mode, g in t.groupby("server_sock_mode", sort=True):
        bw = g["bw_estimate_packets_per_us"] * GBPS_PER_PACKET_PER_US
        rows.append(
            _summary(
                "kernel",
                str(mode),
                bw,
                g["bbr_mode"],
                float(g["pacing_gain"].median()),
                g["cwnd_packets"],
            )
        )
    return pd.DataFrame(rows)


def simulated_states(profile: Any = None, ops: int = 1500) -> pd.DataFrame:
    """The simulator's summary for the traced scenario, each server mode run for ``ops``
    operations without the fast-forward (every ACK recorded), host ``profile`` (default the shipped
    one)."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.sim.engine import Simulation
    from models.sim.rules.bbr_model import BBR_UNIT, BW_SCALE
    from models.validation.fidelity import PACING_PREFIX, ProfileHost, field_scenario

    run = load_kernel_run(prefix=PACING_PREFIX)
    t = run.table("iscsi_loop")
    pick = (
        (t["link"] == "veth-1500") & (t["cc"] == "bbr") & (t["iosize_bytes"] == TRACE_IOSIZE_BYTES)
    )
    host = ProfileHost(profile or hostprofile.shipped())
    rows = []
    for mode in ("nagle", "nodelay"):
        row = t[pick & (t["qd"] == TRACE_QD) & (t["sock_mode"] == mode)].iloc[0].to_dict()
        sc = field_scenario("iscsi_loop", row, host, run.hz)
        sim = Simulation(sc.replace(run={"ops": ops, "fast_forward": False}))
        model = sim.server_ep.sender.cc.model
        model.trace = []
        sim.run()
        tr = model.trace[len(model.trace) // 10 :]  # past the start
        bw = pd.Series([b for b, *_ in tr], dtype=float) / (1 << BW_SCALE) * GBPS_PER_PACKET_PER_US
        modes = pd.Series([m for _, _, m, *_ in tr])
        cwnd = pd.Series([w for _, _, _, w, _ in tr], dtype=float)
        rows.append(_summary("simulator", mode, bw, modes, model.pacing_gain / BBR_UNIT, cwnd))
    return pd.DataFrame(rows)


def states_agree(states: pd.DataFrame) -> bool:
    """Whether, for every server mode, the simulator is in start-up (in more than half of its
    rows) exactly when the kernel is."""
    k = states[states["source"] == "kernel"].set_index("server_sock_mode")["startup_share"]
    s = states[states["source"] == "simulator"].set_index("server_sock_mode")["startup_share"]
    return bool(((k > 0.5) == (s.reindex(k.index) > 0.5)).all())


def window_within(states: pd.DataFrame) -> dict[str, bool]:
    """Per server mode, whether the simulator's median congestion window is within
    :data:`WINDOW_TOL` of the kernel's.

    >>> row = {"window_q50_packets": 200.0}
    >>> window_within(pd.DataFrame([{"source": "kernel", "server_sock_mode": "nodelay", **row},
    ...     {"source": "simulator", "server_sock_mode": "nodelay", "window_q50_packets": 240.0}]))
    {'nodelay': True}
    """
    w = states.set_index(["source", "server_sock_mode"])["window_q50_packets"]
    out = {}
    for mode in sorted(w.loc["kernel"].index):
        k, sim = float(w.loc[("kernel", mode)]), float(w.loc[("simulator", mode)])
        out[str(mode)] = abs(sim / k - 1.0) <= WINDOW_TOL
    return out


def state_numbers(states: pd.DataFrame) -> dict[str, float]:
    """What chapter 9 quotes of :func:`kernel_states` beside :func:`simulated_states`
    (``states``, both concatenated) and of the bundled trace's Nagle run: the Nagle server's
    estimate (10th, 50th, 90th percentile, Gb/s) in the kernel and its median in the simulator;
    the trace's rows whose last counted sample was a lone tail (one packet), their median interval
    (us) and its rate (Gb/s); the kernel's smallest window (packets) against the segments the
    traced loop keeps in flight (:data:`TRACE_QD` responses of :data:`TRACE_IOSIZE_BYTES`); and
    both servers' median windows (packets) on both sides, with the window tolerance (percent)."""
    from models import data

    st = states.set_index(["source", "server_sock_mode"])
    trace = data.load(TRACE_TABLE)
    ktr = trace[trace["server_sock_mode"] == "nagle"]
    one = ktr[ktr["sample_delivered_packets"] == 1]  # samples of a lone tail
    k_n, s_n = st.loc[("kernel", "nagle")], st.loc[("simulator", "nagle")]
    k_nd, s_nd = st.loc[("kernel", "nodelay")], st.loc[("simulator", "nodelay")]
    tail_us = float(one["sample_interval_us"].median())
    return {
        "k_lo": float(k_n["estimate_q10_gbps"]),
        "k_med": float(k_n["estimate_q50_gbps"]),
        "k_hi": float(k_n["estimate_q90_gbps"]),
        "s_med": float(s_n["estimate_q50_gbps"]),
        "tail_n": len(one),
        "rows_n": len(ktr),
        "tail_us": tail_us,
        "tail_gbps": GBPS_PER_PACKET_PER_US / tail_us,
        "cwnd_min": int(ktr["cwnd_packets"].min()),
        # QD x segments per response (header + data)
        "flight": TRACE_QD * -(-(framing.ISCSI_HEADER_BYTES + TRACE_IOSIZE_BYTES) // MSS_BYTES),
        "win_k_nd": float(k_nd["window_q50_packets"]),
        "win_s_nd": float(s_nd["window_q50_packets"]),
        "win_k_n": float(k_n["window_q50_packets"]),
        "win_s_n": float(s_n["window_q50_packets"]),
        "win_tol": WINDOW_TOL * 100,  # share -> percent
        "s_lo": float(s_n["estimate_q10_gbps"]),
    }


def state_findings(states: pd.DataFrame, n: dict[str, float]) -> dict[str, bool]:
    """What chapter 9 says of the traced runs (``n`` from :func:`state_numbers`): the states
    agree (:func:`states_agree`); the kernel's Nagle estimate spans a factor of ten and the
    simulator's stays near its top; the kernel's window fell below the QD-8 flight; the NODELAY
    server's simulated window is within the tolerance and the Nagle server's below the kernel's."""
    return {
        "the states agree": states_agree(states),
        "the kernel's estimate spans a factor of ten": n["k_hi"] > 10 * n["k_lo"],
        "the simulator's stays near its top": n["s_lo"] > 0.5 * n["k_hi"],
        "the kernel's window fell below the flight": n["cwnd_min"] < n["flight"],
        "the NODELAY window within, the Nagle one not": window_within(states)
        == {"nodelay": True, "nagle": False},
        "the simulated Nagle window below the kernel's": n["win_s_n"] < n["win_k_n"],
    }

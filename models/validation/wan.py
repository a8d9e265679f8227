"""Chapter 11 comparisons: Charrouf's (2008) WAN read tables against window and link bounds.

Which rows are tests: a bound is tested only by a run that comes near it (:data:`CAN_BIND`); runs far
below their bound are context.  The default configuration's rate is predicted from the source's own
32 KB receive window on each of the two connections that carried read data (no fitted window), and the
pre-fetch factor from that window and the source's pre-fetch-8 figure.
"""

from __future__ import annotations

import pandas as pd

from models import data
from models.analytic import windows as w

from . import Comparison, comparisons

SOURCE = "Charrouf 2008"
KB = 1000  # the tables' KB/s (dd's kB = 1000 bytes)
KiB = 1024
#: A run tests an upper bound only if it reaches this share of it: the three runs of a configuration
#: spread by up to 10 %, so a run further below its bound could not exceed it by noise.
CAN_BIND = 0.9
#: The node that served the remote-warm reads in the captures (the source highlights its connections).
READ_SOURCE_NODE = "192.168.20.2"


def bound_table():
    """Every remote-warm run with its bound ``min(connections*buffer/RTT, T3)`` and the measured/bound ratio."""
    df = data.load("charrouf2008_wan_reads").copy()
    link = data.load("charrouf2008_link").set_index("rtt_ms")
    rate_bps = {
        r: float(link.loc[r, "link_rate_Mbps"]) * 1e6 for r in link.index
    }  # Mb/s -> bits/s
    df["measured_Bps"] = df["remote_warm_KBps"] * KB  # KB/s -> bytes/s
    df["bound_Bps"] = [
        w.throughput_bound_Bps(b, r * 1e-3, rate_bps[r], c)  # ms -> s
        for b, r, c in zip(df["buffer_bytes"], df["rtt_ms"], df["tcp_connections"])
    ]
    df["ratio"] = df["measured_Bps"] / df["bound_Bps"]
    df["link_Bps"] = [rate_bps[r] / 8 for r in df["rtt_ms"]]  # bits/s -> bytes/s
    df["cold_over_link"] = df["cold_MBps"] * 1e6 / df["link_Bps"]  # MB/s -> bytes/s
    return df


def read_connections() -> pd.DataFrame:
    """Bytes each captured TCP connection carried away from the read-serving node, per configuration.

    Columns: ``config``, ``row``, ``peer`` (the other node), ``sent_bytes`` (from
    :data:`READ_SOURCE_NODE`), ``received_bytes`` (to it).  Connections not touching that node are
    heartbeats between other nodes and get 0 in both.
    """
    df = data.load("charrouf2008_connections")
    out = []
    for _, r in df.iterrows():
        if r["address_a"] == READ_SOURCE_NODE:
            sent, got, peer = (
                r["bytes_a_to_b"],
                r["bytes_b_to_a"],
                r["address_b"],
            )
        elif r["address_b"] == READ_SOURCE_NODE:
            sent, got, peer = (
                r["bytes_b_to_a"],
                r["bytes_a_to_b"],
                r["address_a"],
            )
        else:
            sent, got, peer = 0, 0, f"{r['address_a']}-{r['address_b']}"
        out.append(
            {
                "config": r["config"],
                "row": int(r["row"]),
                "peer": peer,
                "sent_bytes": int(sent),
                "received_bytes": int(got),
            }
        )
    return pd.DataFrame(out)


def data_connections(config: str, threshold_bytes: float = 1e6) -> int:
    """How many connections carried read data (more than ``threshold_bytes`` from the serving node)."""
    rc = read_connections()
    if config not in set(rc["config"]):
        raise ValueError(f"config must be one of {sorted(set(rc['config']))}, got {config!r}")
    return int((rc.loc[rc["config"] == config, "sent_bytes"] > threshold_bytes).sum())


def source_window_bytes() -> float:
    """The source's average receive window, read as KiB (its '32 KB'), bytes."""
    link = data.load("charrouf2008_link")
    return float(link["theory_rwin_KB"].iloc[0]) * KiB  # KiB -> bytes


@comparisons("ch11.wan_bound")
def wan_bound() -> list[Comparison]:
    """No run may exceed ``min(W/RTT, C)``; only runs that reach :data:`CAN_BIND` of their bound test it."""
    rows = []
    for _, r in bound_table().iterrows():
        excess = max(0.0, r["measured_Bps"] - r["bound_Bps"]) / KB
        binding = r["ratio"] >= CAN_BIND
        rows.append(
            Comparison(
                "ch11",
                f"excess over min(W/RTT, T3): {r['config']}, {r['rtt_ms']:g} ms, run {r['iteration']}",
                measured=excess,
                predicted=0.0,
                unit="KB/s",
                abs_tol=0.0,
                why="an upper bound admits no excess at all"
                + (
                    ""
                    if binding
                    else f"; this run reaches only {r['ratio']:.2f} of its bound, so it cannot "
                    f"test it (context)"
                ),
                source=f"{SOURCE}, section 4.1 (charrouf2008_wan_reads)",
                extra={
                    "ratio": float(r["ratio"]),
                    "bound_KBps": r["bound_Bps"] / KB,
                },
                kind="check" if binding else "context",
            )
        )
    return rows


@comparisons("ch11.window64k")
def window_64k() -> list[Comparison]:
    """Default configuration at 50-150 ms: ``X = connections * 32 KB / RTT``, both numbers the source's."""
    avg = data.load("charrouf2008_wan_reads_avg")
    conns = data_connections("default")
    win = source_window_bytes()
    rows = []
    for _, r in avg[(avg["config"] == "default") & (avg["rtt_ms"] > 0)].iterrows():
        pred = conns * w.window_bound_Bps(win, r["rtt_ms"] * 1e-3) / KB  # ms -> s; bytes/s -> KB/s
        rows.append(
            Comparison(
                "ch11",
                f"default remote-warm read at {r['rtt_ms']:g} ms vs {conns} connections x 32 KB per RTT",
                measured=float(r["remote_warm_avg_KBps"]),
                predicted=pred,
                unit="KB/s",
                rel_tol=0.10,
                why="the three runs at 150 ms spread by 8 % (442-478 KB/s), and reading the window's KB as 1000 "
                "bytes would move the prediction by 2.4 %; the added RTT ignores the sub-millisecond LAN "
                "round trip",
                source=f"{SOURCE}, section 4.1 (charrouf2008_wan_reads_avg, charrouf2008_connections, "
                f"charrouf2008_link)",
            )
        )
    return rows


def prefetch_prediction() -> dict:
    """The pre-fetch 64 over pre-fetch 8 factor at 50 ms from window/RTT.

    Pre-fetch 8: the conclusion's share of the T3 at 50 ms, so ``share*C*RTT`` bytes in flight.
    Pre-fetch 64: eight times as much would be asked for, but the two data connections' 32 KB windows
    cap what is in flight at ``2*32 KiB``; the link caps the rate at ``C``.
    """
    concl = data.load("charrouf2008_conclusions").set_index("statement")
    link = data.load("charrouf2008_link").set_index("rtt_ms")
    pf8 = concl.loc["wan_read_default_50ms"]
    rtt = float(pf8["rtt_ms"]) * 1e-3  # ms -> s
    c = float(link.loc[pf8["rtt_ms"], "link_rate_Mbps"]) * 1e6 / 8  # Mb/s -> bytes/s
    x8 = float(pf8["pct_of_T3"]) / 100 * c  # % -> share of C
    inflight8 = w.effective_window_bytes(x8, rtt)
    cap = data_connections("default") * source_window_bytes()
    inflight64 = min(8 * inflight8, cap)
    x64 = min(inflight64 / rtt, c)
    return {
        "rtt_s": rtt,
        "x8_Bps": x8,
        "inflight8_bytes": inflight8,
        "cap_bytes": cap,
        "inflight64_bytes": inflight64,
        "x64_Bps": x64,
        "factor": x64 / x8,
        "stated": float(concl.loc["prefetch_8x_wan_read_gain", "factor"]),
    }


@comparisons("ch11.prefetch")
def prefetch() -> list[Comparison]:
    """The source's 'unexpected' factor 2.2 for 8 times the pre-fetch, predicted from window/RTT."""
    p = prefetch_prediction()
    return [
        Comparison(
            "ch11",
            "WAN read gain of pre-fetch 64 over pre-fetch 8 (window-capped in-flight bytes)",
            measured=p["stated"],
            predicted=p["factor"],
            unit="ratio",
            rel_tol=0.10,
            why="'about 10 %' of the T3 has one significant figure (±5 %), the factor 2.2 two (±2 %), and the "
            "source does not say at which RTT it holds; if it averaged in the 0 ms runs, where no window "
            "binds, the factor would be up to 10 % lower",
            source=f"{SOURCE}, sections 4.1 and 5 (charrouf2008_conclusions, charrouf2008_connections)",
            extra=p,
        )
    ]


@comparisons("ch11.buffer")
def tuned_buffers() -> list[Comparison]:
    """The tuned buffer sizes against the T3's bandwidth-delay product at each RTT."""
    avg = data.load("charrouf2008_wan_reads_avg")
    link = data.load("charrouf2008_link").set_index("rtt_ms")
    rows = []
    for _, r in avg[(avg["config"] == "tuned") & (avg["rtt_ms"] > 0)].iterrows():
        bdp = w.bdp_bytes(
            r["rtt_ms"] * 1e-3,
            float(link.loc[r["rtt_ms"], "link_rate_Mbps"]) * 1e6,
        )  # ms->s, Mb/s->b/s
        rows.append(
            Comparison(
                "ch11",
                f"tuned buffer at {r['rtt_ms']:g} ms vs the T3 bandwidth-delay product",
                measured=float(r["buffer_bytes"]),
                predicted=bdp,
                unit="bytes",
                rel_tol=0.10,
                why="the source sets round binary sizes (multiples of 128 KiB) near C*RTT and quotes the T3 as "
                "'around 45 Mbps'; rounding to such a size moves the value by up to 10 % at these RTTs",
                source=f"{SOURCE}, section 4.1 (charrouf2008_wan_reads_avg)",
            )
        )
    return rows

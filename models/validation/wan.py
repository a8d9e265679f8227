"""Chapter 11 comparisons: Charrouf's (2008) WAN read tables against window and link bounds."""

from __future__ import annotations

from models import data
from models import wan as w

from . import Comparison, comparisons

SOURCE = "Charrouf 2008"
KB = 1000  # the tables' KB/s (dd's kB = 1000 bytes)


def bound_table():
    """Every remote-warm run with its bound ``min(connections*buffer/RTT, T3)`` and the measured/bound ratio."""
    df = data.load("charrouf2008_wan_reads").copy()
    link = data.load("charrouf2008_link").set_index("rtt_ms")
    rate_bps = {r: float(link.loc[r, "link_rate_Mbps"]) * 1e6 for r in link.index}  # Mb/s -> bits/s
    df["measured_Bps"] = df["remote_warm_KBps"] * KB  # KB/s -> bytes/s
    df["bound_Bps"] = [w.throughput_bound_Bps(b, r * 1e-3, rate_bps[r], c)  # ms -> s
                       for b, r, c in zip(df["buffer_bytes"], df["rtt_ms"], df["tcp_connections"])]
    df["ratio"] = df["measured_Bps"] / df["bound_Bps"]
    df["link_Bps"] = [rate_bps[r] / 8 for r in df["rtt_ms"]]  # bits/s -> bytes/s
    df["cold_over_link"] = df["cold_MBps"] * 1e6 / df["link_Bps"]  # MB/s -> bytes/s
    return df


@comparisons("ch11.wan_bound")
def wan_bound() -> list[Comparison]:
    """No run may exceed ``min(W/RTT, C)``: the excess over the bound must be zero in every row."""
    rows = []
    for _, r in bound_table().iterrows():
        excess = max(0.0, r["measured_Bps"] - r["bound_Bps"]) / KB
        rows.append(Comparison(
            "ch11", f"excess over min(W/RTT, T3): {r['config']}, {r['rtt_ms']:g} ms, run {r['iteration']}",
            measured=excess, predicted=0.0, unit="KB/s", abs_tol=0.0,
            why="an upper bound admits no excess at all; the front-end rate is below the WAN byte rate, which "
                "only makes the test stricter",
            source=f"{SOURCE}, section 4.1 (charrouf2008_wan_reads)",
            extra={"ratio": float(r["ratio"]), "bound_KBps": r["bound_Bps"] / KB}))
    return rows


@comparisons("ch11.window64k")
def window_64k() -> list[Comparison]:
    """Default configuration at 50-150 ms against an effective window of 64 KiB: ``X = 65536 / RTT``."""
    avg = data.load("charrouf2008_wan_reads_avg")
    rows = []
    for _, r in avg[(avg["config"] == "default") & (avg["rtt_ms"] > 0)].iterrows():
        pred = w.window_bound_Bps(65536, r["rtt_ms"] * 1e-3) / KB  # ms -> s; bytes/s -> KB/s
        rows.append(Comparison(
            "ch11", f"default remote-warm read at {r['rtt_ms']:g} ms vs 64 KiB per RTT",
            measured=float(r["remote_warm_avg_KBps"]), predicted=pred, unit="KB/s", rel_tol=0.10,
            why="the three runs at 150 ms spread by 8 % (442-478 KB/s), and reading KB as 1024 bytes would move "
                "the ratio by 2.4 %; the added RTT ignores the sub-millisecond LAN round trip",
            source=f"{SOURCE}, section 4.1 (charrouf2008_wan_reads_avg)"))
    return rows


@comparisons("ch11.buffer")
def tuned_buffers() -> list[Comparison]:
    """The tuned buffer sizes against the T3's bandwidth-delay product at each RTT."""
    avg = data.load("charrouf2008_wan_reads_avg")
    link = data.load("charrouf2008_link").set_index("rtt_ms")
    rows = []
    for _, r in avg[(avg["config"] == "tuned") & (avg["rtt_ms"] > 0)].iterrows():
        bdp = w.bdp_bytes(r["rtt_ms"] * 1e-3, float(link.loc[r["rtt_ms"], "link_rate_Mbps"]) * 1e6)  # ms->s, Mb/s->b/s
        rows.append(Comparison(
            "ch11", f"tuned buffer at {r['rtt_ms']:g} ms vs the T3 bandwidth-delay product",
            measured=float(r["buffer_bytes"]), predicted=bdp, unit="bytes", rel_tol=0.10,
            why="the source sets round binary sizes (multiples of 128 KiB) near C*RTT and quotes the T3 as "
                "'around 45 Mbps'; rounding to such a size moves the value by up to 10 % at these RTTs",
            source=f"{SOURCE}, section 4.1 (charrouf2008_wan_reads_avg)"))
    return rows

"""Chapter 11 comparisons: Charrouf's (2008) WAN read tables against window and link bounds.

What each row is.  A bound is tested only by a run that comes near it (:func:`can_bind`, from the
spread of the source's own repeated runs); a run far below its bound tests nothing and gets no row.
The default configuration's bytes in flight are fitted at one RTT (:data:`FIT_RTT_MS`, a fit) and
``W/RTT`` then predicts the other RTTs (tests).  The pre-fetch factor and the tuned buffer sizes
recompute numbers the source states from other numbers it states (audits).
"""

from __future__ import annotations

import pandas as pd

from models import data
from models.analytic import windows as w

from . import Comparison, comparisons

SOURCE = "Charrouf 2008"
KB = 1000  # the tables' KB/s (dd's kB = 1000 bytes)
KiB = 1024
#: The RTT (ms) at which the default configuration's window is fitted; the other RTTs test it.  At
#: 50 ms the three runs agree exactly, so the fit carries only the table's rounding.
FIT_RTT_MS = 50.0
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


def run_spread() -> pd.DataFrame:
    """The spread of the three runs of each configuration and RTT in the remote-warm table:
    ``spread`` = (largest - smallest) / smallest, and ``spread_of_mean`` = (largest - smallest) /
    mean, with the mean in ``mean_KBps``."""
    df = data.load("charrouf2008_wan_reads")
    g = df.groupby(["config", "rtt_ms"])["remote_warm_KBps"]
    out = pd.DataFrame({"lo": g.min(), "hi": g.max(), "mean_KBps": g.mean()})
    out["spread"] = (out["hi"] - out["lo"]) / out["lo"]
    out["spread_of_mean"] = (out["hi"] - out["lo"]) / out["mean_KBps"]
    return out.reset_index()


def can_bind() -> float:
    """The share of its bound a run must reach to test it: ``1 / (1 + s)`` with ``s`` the largest
    spread of the source's repeated runs (:func:`run_spread`).  A run further below its bound could
    not have exceeded it by the run-to-run noise the source's own tables show."""
    return 1.0 / (1.0 + float(run_spread()["spread"].max()))


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
    """No run may exceed ``min(W/RTT, C)``; a row (a test) only for each run that reaches
    :func:`can_bind` of its bound.  With the bundled tables no run does, and the set is empty."""
    rows = []
    threshold = can_bind()
    for _, r in bound_table().iterrows():
        if r["ratio"] < threshold:
            continue
        excess = max(0.0, r["measured_Bps"] - r["bound_Bps"]) / KB
        rows.append(
            Comparison(
                "ch11",
                f"excess over min(W/RTT, T3): {r['config']}, {r['rtt_ms']:g} ms, run {r['iteration']}",
                measured=excess,
                predicted=0.0,
                unit="KB/s",
                abs_tol=0.0,
                why="an upper bound admits no excess at all",
                source=f"{SOURCE}, section 4.1 (charrouf2008_wan_reads)",
                extra={
                    "ratio": float(r["ratio"]),
                    "bound_KBps": r["bound_Bps"] / KB,
                },
                kind="test",
            )
        )
    return rows


def fitted_window_bytes() -> float:
    """Bytes in flight of the default configuration at :data:`FIT_RTT_MS`: its mean rate times that
    RTT (Little's law read backwards), bytes."""
    avg = data.load("charrouf2008_wan_reads_avg")
    row = avg[(avg["config"] == "default") & (avg["rtt_ms"] == FIT_RTT_MS)].iloc[0]
    rate_Bps = float(row["remote_warm_avg_KBps"]) * KB  # KB/s -> bytes/s
    return w.effective_window_bytes(rate_Bps, FIT_RTT_MS * 1e-3)  # ms -> s


#: The rounding of a rate the table prints to the nearest 100 KB/s (as at 0 and 50 ms), KB/s.
TABLE_ROUNDING_KBps = 50.0


@comparisons("ch11.window64k")
def window_64k() -> list[Comparison]:
    """Default configuration: the window fitted at :data:`FIT_RTT_MS` (a fit), then ``X = W/RTT`` at
    the other RTTs above 0 ms (tests)."""
    avg = data.load("charrouf2008_wan_reads_avg")
    spreads = run_spread().set_index(["config", "rtt_ms"])
    win = fitted_window_bytes()
    src = f"{SOURCE}, section 4.1 (charrouf2008_wan_reads, charrouf2008_wan_reads_avg)"
    rows = []
    for _, r in avg[(avg["config"] == "default") & (avg["rtt_ms"] > 0)].iterrows():
        rtt_ms = float(r["rtt_ms"])
        pred = w.window_bound_Bps(win, rtt_ms * 1e-3) / KB  # ms -> s; bytes/s -> KB/s
        measured = float(r["remote_warm_avg_KBps"])
        if rtt_ms == FIT_RTT_MS:
            rows.append(
                Comparison(
                    "ch11",
                    f"default remote-warm read at {rtt_ms:g} ms: bytes in flight fitted "
                    f"({win / KiB:.1f} KiB)",
                    measured=measured,
                    predicted=pred,
                    unit="KB/s",
                    rel_tol=1e-9,
                    why="fitted: the window is this rate times this RTT",
                    source=src,
                    kind="fit",
                    extra={"window_bytes": win},
                )
            )
            continue
        spread = float(spreads.loc[("default", r["rtt_ms"]), "spread_of_mean"])
        fit_rounding = TABLE_ROUNDING_KBps / float(
            avg[(avg["config"] == "default") & (avg["rtt_ms"] == FIT_RTT_MS)][
                "remote_warm_avg_KBps"
            ].iloc[0]
        )
        rows.append(
            Comparison(
                "ch11",
                f"default remote-warm read at {rtt_ms:g} ms vs the window fitted at "
                f"{FIT_RTT_MS:g} ms, per RTT",
                measured=measured,
                predicted=pred,
                unit="KB/s",
                rel_tol=round(spread + fit_rounding, 3),
                why=f"the three runs at {rtt_ms:g} ms spread by {spread:.1%} of their mean, and "
                f"the fitted rate is printed to the nearest 100 KB/s ({fit_rounding:.1%}); the "
                "added RTT ignores the sub-millisecond LAN round trip",
                source=src,
                kind="test",
                extra={"window_bytes": win},
            )
        )
    return rows


def prefetch_prediction() -> dict:
    """The pre-fetch 64 over pre-fetch 8 factor at 50 ms, read through window/RTT.

    Pre-fetch 8: the conclusion's share of the T3 at 50 ms, so ``share*C*RTT`` bytes in flight.
    Pre-fetch 64: eight times as much would be asked for, but no more than the default
    configuration's bytes in flight at 50 ms (:func:`fitted_window_bytes`, which the 64-page tables
    give) can be in flight; the link caps the rate at ``C``.  Since the cap is read from the same
    source at the same RTT, the factor is the ratio of two of the source's rates: an audit.
    """
    concl = data.load("charrouf2008_conclusions").set_index("statement")
    link = data.load("charrouf2008_link").set_index("rtt_ms")
    pf8 = concl.loc["wan_read_default_50ms"]
    rtt = float(pf8["rtt_ms"]) * 1e-3  # ms -> s
    c = float(link.loc[pf8["rtt_ms"], "link_rate_Mbps"]) * 1e6 / 8  # Mb/s -> bytes/s
    x8 = float(pf8["pct_of_T3"]) / 100 * c  # % -> share of C
    inflight8 = w.effective_window_bytes(x8, rtt)
    cap = fitted_window_bytes()
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
    """The source's 'unexpected' factor for 8 times the pre-fetch against the ratio of its own two
    rates at 50 ms (an audit)."""
    p = prefetch_prediction()
    return [
        Comparison(
            "ch11",
            "WAN read gain of pre-fetch 64 over pre-fetch 8 vs the ratio of the source's rates "
            "at 50 ms",
            measured=p["stated"],
            predicted=p["factor"],
            unit="ratio",
            rel_tol=0.10,
            why="'about 10 %' of the T3 has one significant figure (±5 %), the factor 2.2 two (±2 %), and the "
            "source does not say at which RTT it holds; if it averaged in the 0 ms runs, where no window "
            "binds, the factor would be up to 10 % lower",
            source=f"{SOURCE}, sections 4.1 and 5 (charrouf2008_conclusions, "
            "charrouf2008_wan_reads_avg)",
            extra=p,
            kind="audit",
        )
    ]


@comparisons("ch11.buffer")
def tuned_buffers() -> list[Comparison]:
    """The tuned buffer sizes against the T3's bandwidth-delay product at each RTT: the source's
    sizing rule checked against its own link figures (audits)."""
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
                kind="audit",
            )
        )
    return rows

"""From a capture to a verdict: what holds a request/response connection back, and the fix.

``python -m models.measure analyze FILE.pcap [--server-port P] [--json]`` reads a capture
(``models.measure.pcap.read_capture``), finds each TCP connection, tells the client from the
server, splits the two byte streams into operations without being told their sizes, and says per
connection what ended each idle gap and which mechanism, if any, sets the pace.

How the streams are split
    When the data alternate (a client burst, then a server burst, and so on: one operation in
    flight), each pair of bursts is one operation, whatever the sizes.  When they overlap (several
    operations in flight), the request size is the smallest run of client bytes ending in a PSH
    segment (Linux marks the last segment of every ``send()``), each response is the server's bytes
    divided evenly among the requests, and an operation's latency runs from the segment carrying
    its request's first byte to the one carrying its response's last byte.

What ends a gap (an interval of at least :data:`~models.kernel.runs.STALL_MS` with no segment)
    ``delayed-ack``: the first segment after it is a pure ACK from one side, and the other side,
    which had unacknowledged data, sends more data straight after it: that data was held by Nagle's
    algorithm until the peer's delayed-ACK timer fired (chapter 4 and 5; Flory 2001).  When both
    sides owed an ACK, both timers can fire in the same tick: the gap then ends with two pure ACKs
    and the data after the second.
    ``probe``: the data itself ends the gap, from a side that had nothing in flight, while an
    operation waited: corked data (``TCP_CORK`` or ``MSG_MORE`` left set) released by the 200 ms
    probe timer.  ``zero-window``: the receiver had advertised a zero window.  ``idle``: no
    operation was waiting (the application paused).  ``unexplained``: none of these.

The verdict ``delayed-ack-stall`` needs the operations a ``delayed-ack`` gap held (each over the
stall threshold, with such a gap inside it) to be at least
:data:`~models.kernel.runs.STALL_SHARE_PCT` percent of the connection's operations: the harness's
own criterion for a stalled run, counted on the wire.

A *Nagle hold* is a sub-MSS data segment that left only after the ACK of the same side's previous
sub-MSS segment of the same burst arrived, much later than it could have.  The capture point
matters: a capture on the sending host sees the ACK arrive and the held segment leave at once.
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.kernel.runs import STALL_MS

from . import streams
from .cli_args import OneLineParser
from .pcap import CaptureError, Segment, SynOptions, read_capture

__all__ = [
    "analyze_capture",
    "analyze_connection",
    "VERDICTS",
    "main",
]

#: The diagnose page of the book, where each verdict has a section (anchors ``diag-<verdict>``).
PAGE = "book/diagnose.md"
#: Verdicts, most specific first, each with the page's section that explains it.
VERDICTS = (
    "zero-window",
    "delayed-ack-stall",
    "cork-timeout",
    "window-limited",
    "nagle-hold",
    "no-stall",
    "no-data",
)
#: A gap ended by data after this long (seconds) with nothing in flight is the probe timer's
#: ``max(RTO, TCP_RTO_MIN)``; ``TCP_RTO_MIN`` is 200 ms (``include/net/tcp.h``).
PROBE_MIN_S = 0.150
#: Share of the server's pauses (percent: a data segment after which the client speaks next) that
#: came with the receiver's window full before the connection counts as window-limited.
WINDOW_SHARE_PCT = 50.0
#: Share of operations (percent) with a Nagle hold before holds are the verdict.
HOLD_SHARE_PCT = 5.0


def _verdict_text(v: str, d: dict[str, Any]) -> tuple[str, str]:
    """Cause and fix in words, with the connection's numbers."""
    held = d.get("held_side") or "server"
    peer = "client" if held == "server" else "server"
    period = d.get("stall_period_ms")
    if v == "delayed-ack-stall":
        return (
            f"Nagle's algorithm on the {held} held a partial segment while its previous small "
            f"segment was unacknowledged, and the {peer} delayed that ACK: each stall lasts "
            f"about {period:.0f} ms, the {peer}'s delayed-ACK timer (a write-write-read exchange).",
            f"set TCP_NODELAY on the {held}'s socket, or send each message with one call "
            "(MSG_MORE on the header, or writev/sendmsg of header and data); TCP_NODELAY costs "
            "more, smaller segments when messages are small.",
        )
    if v == "cork-timeout":
        return (
            f"data waited with nothing in flight until the probe timer sent it (about {period:.0f} "
            "ms): TCP_CORK or MSG_MORE was left set after the last write of a message.",
            "clear TCP_CORK after the last write of each message (or drop MSG_MORE from the last "
            "send); the 200 ms probe is a safety net, not a flush.",
        )
    if v == "zero-window":
        return (
            "the receiver advertised a zero window: its application did not read fast enough, "
            "so the sender stopped until a window update.",
            "read faster on the receiving side or give it a larger receive buffer "
            "(SO_RCVBUF / net.ipv4.tcp_rmem).",
        )
    if v == "window-limited":
        w = d.get("receive_window_bytes")
        return (
            f"the data in flight sat at the receiver's advertised window ({w} bytes) for much of "
            "the run: throughput is at most window/RTT.",
            "raise the receive buffer (net.ipv4.tcp_rmem, window scaling on) to the "
            "bandwidth-delay product, or run several connections.",
        )
    if v == "nagle-hold":
        return (
            f"Nagle's algorithm on the {held} holds the second part of a response until the ACK "
            "of the first; the ACKs come back quickly here, so this costs a round trip per "
            "response rather than a timer.",
            f"TCP_NODELAY on the {held}, or one send call per message, removes the wait.",
        )
    if v == "no-data":
        return ("the connection carried no data.", "nothing to fix.")
    return (
        "no timer stall, zero window or Nagle hold: the pace is set by the hosts and the link "
        "(compare IOPS with QD/RTT and the inequalities of chapter 3).",
        "more queue depth if IOPS grows with it; otherwise find the busy stage.",
    )


def analyze_connection(
    segs: Sequence[Segment],
    syn_options: dict[tuple[str, int], SynOptions] | None = None,
    server_port: int | None = None,
    stall_ms: float = STALL_MS,
) -> dict[str, Any] | None:
    """Summary and verdict of one connection's segments (see the module's docstring).

    Returns ``None`` when ``server_port`` is given and is neither end of the connection.
    """
    roles = streams.roles(segs, server_port)
    if roles is None:
        return None
    client, server = roles
    syn_options = syn_options or {}
    sides = {"c": streams.Side(), "s": streams.Side()}
    who = {client: "c", server: "s"}
    other = {"c": "s", "s": "c"}
    for x in segs:
        side = sides[who[(x.src, x.sport)]]
        if x.syn:
            side.base = (x.seq + 1) % streams.WRAP
        elif side.base is None:
            side.base = x.seq
    mss = {}
    for key, name in ((client, "c"), (server, "s")):
        peer_syn = syn_options.get(server if name == "c" else client)
        own = sides[name]
        seen = max(
            (d for d in (x.payload_bytes for x in segs if (x.src, x.sport) == key)), default=0
        )
        mss[name] = (peer_syn.payload_per_segment if peer_syn else None) or seen or None
        own.last_window = None
    timeline: list[dict[str, Any]] = []
    events: list[tuple[float, str, int, int, bool]] = []
    for x in segs:
        name = who[(x.src, x.sport)]
        me, peer = sides[name], sides[other[name]]
        entry: dict[str, Any] = dict(t=x.time_s, side=name, data=0, pure_ack=False, acks_all=False)
        if x.flags & 0x10 and peer.base is not None:
            ack = peer.rel(x.ack)
            entry["acks_all"] = ack >= peer.max_end and peer.max_end > peer.acked_by_peer
            peer.acked_by_peer = max(peer.acked_by_peer, ack)
        opts = syn_options.get((x.src, x.sport))
        shift = opts.wscale if (opts and opts.wscale is not None and not x.syn) else 0
        me.last_window = x.window << shift
        entry["window"] = me.last_window
        if x.payload_bytes > 0 and not x.syn:
            start = me.rel(x.seq)
            end = start + x.payload_bytes
            if end <= me.max_end:
                me.retransmissions += 1
            else:
                new_start = max(start, me.max_end)
                me.data.append((x.time_s, new_start, end, x.psh))
                events.append((x.time_s, name, new_start, end, x.psh))
                entry["data"] = end - new_start
                entry["inflight"] = end - me.acked_by_peer
                me.max_end = end
        elif not (x.syn or x.fin):
            entry["pure_ack"] = True
        entry["unacked_c"] = sides["c"].max_end - sides["c"].acked_by_peer
        entry["unacked_s"] = sides["s"].max_end - sides["s"].acked_by_peer
        timeline.append(entry)

    c, s = sides["c"], sides["s"]
    out: dict[str, Any] = {
        "client": streams.endpoint(*client),
        "server": streams.endpoint(*server),
        "packets": len(segs),
        "client_bytes": c.max_end,
        "server_bytes": s.max_end,
        "retransmissions": c.retransmissions + s.retransmissions,
        "mss_bytes": {"client": mss["c"], "server": mss["s"]},
    }
    # Operations.
    bursts = streams.bursts(events)
    alternating = (
        len(bursts) >= 2 and bursts[0]["side"] == "c" and streams.one_request_per_burst(c, bursts)
    )
    ops: list[streams.Op] = []
    if alternating:
        for i in range(0, len(bursts) - 1, 2):
            b_req, b_resp = bursts[i], bursts[i + 1]
            ops.append(
                streams.Op(
                    b_req["start_t"],
                    b_resp["end_t"],
                    b_req["bytes"],
                    b_resp["bytes"],
                    b_resp["segments"],
                )
            )
        out["split"] = "alternating"
        # Bursts can alternate with several operations in flight too, when a response's parts are
        # cut apart by the next request: then the bursts' sizes vary while the server's bytes
        # divide evenly among the requests, and the pipelined split is the right one.
        if len({o.response_bytes for o in ops}) > 1:
            piped, _, r = streams.split_pipelined(c, s)
            if piped and r is not None and r == int(r):
                ops, out["split"] = piped, "pipelined"
    else:
        ops, _, _ = streams.split_pipelined(c, s)
        out["split"] = "pipelined"
    if not ops:
        cause, fix = _verdict_text("no-data", out)
        return {
            **out,
            "operations": 0,
            "verdict": "no-data",
            "cause": cause,
            "fix": fix,
            "see": f"{PAGE}#diag-no-data",
        }
    lat_ms = [(o.end - o.start) * 1e3 for o in ops]  # s -> ms
    span = ops[-1].end - ops[0].start
    req_sizes = sorted({o.request_bytes for o in ops})
    resp_sizes = sorted({o.response_bytes for o in ops})
    out.update(
        operations=len(ops),
        duration_s=span,
        rate_ops_per_s=(len(ops) / span) if span > 0 else None,
        request_bytes=req_sizes[0] if len(req_sizes) == 1 else req_sizes[:8],
        response_bytes=resp_sizes[0] if len(resp_sizes) == 1 else resp_sizes[:8],
        latency_ms={
            "p50": streams.percentile(lat_ms, 0.5),
            "p90": streams.percentile(lat_ms, 0.9),
            "p99": streams.percentile(lat_ms, 0.99),
            "max": max(lat_ms),
        },
        segments_per_response=statistics.fmean(o.response_segments for o in ops),
    )
    # Gaps and what ended each.
    stall_s = stall_ms / 1e3  # ms -> s
    starts = [o.start for o in ops]
    gaps: list[dict[str, Any]] = []
    for i in range(1, len(timeline)):
        a, b = timeline[i - 1], timeline[i]
        dur = b["t"] - a["t"]
        if dur < stall_s:
            continue
        j = bisect.bisect_right(starts, a["t"])
        waiting = any(o.end > a["t"] for o in ops[max(0, j - 64) : j])
        held = None
        if any(e["window"] == 0 for e in timeline[max(0, i - 4) : i]):
            kind = "zero-window"
        elif b["pure_ack"]:
            held = streams.released_by_ack(timeline, i, stall_s)
            if held is not None:
                kind = "delayed-ack"
            else:
                kind = "idle" if not waiting else "unexplained"
        elif b["data"] and a[f"unacked_{b['side']}"] == 0 and waiting and dur >= PROBE_MIN_S:
            kind, held = "probe", b["side"]
        else:
            kind = "idle" if not waiting else "unexplained"
        gaps.append(
            dict(
                at_s=a["t"] - timeline[0]["t"],
                duration_ms=dur * 1e3,
                ended_by=kind,
                held_side={"c": "client", "s": "server"}.get(held or ""),
            )
        )
    out["gaps"] = gaps[:200]
    out["gaps_by_kind"] = {
        k: sum(g["ended_by"] == k for g in gaps) for k in sorted({g["ended_by"] for g in gaps})
    }
    stalls = [g for g in gaps if g["ended_by"] == "delayed-ack"]
    probes = [g for g in gaps if g["ended_by"] == "probe"]
    zero = [g for g in gaps if g["ended_by"] == "zero-window"]
    stalled_ops = sum(1 for v in lat_ms if v >= stall_ms)
    out["stalled_ops"] = stalled_ops
    out["stalled_share_pct"] = 100.0 * stalled_ops / len(ops)
    # Nagle holds: a partial segment sent just after the ACK of the same burst's previous one.
    holds = {"c": 0, "s": 0}
    last_data: dict[str, dict[str, Any] | None] = {"c": None, "s": None}
    last_ack_all: dict[str, float | None] = {"c": None, "s": None}
    for e in timeline:
        name = e["side"]
        if e["acks_all"]:
            last_ack_all[other[name]] = e["t"]
        if e["data"]:
            prev = last_data[name]
            t_ack = last_ack_all[name]
            m = mss[name] or 0
            if (
                prev is not None
                and t_ack is not None
                and prev["t"] < t_ack <= e["t"]
                and prev["data"] < m
                and e["data"] < m
                and (e["t"] - t_ack) * 4 < (e["t"] - prev["t"])
                and prev.get("burst_open", True)
            ):
                holds[name] += 1
            e["burst_open"] = True
            last_data[name] = e
            if last_data[other[name]] is not None:
                last_data[other[name]]["burst_open"] = False  # type: ignore[index]
    out["nagle_holds"] = {"client": holds["c"], "server": holds["s"]}
    # The receiver's window as a limit on the data in flight.
    out["max_inflight_bytes"] = {
        "client": max((e.get("inflight", 0) for e in timeline if e["side"] == "c"), default=0),
        "server": max((e.get("inflight", 0) for e in timeline if e["side"] == "s"), default=0),
    }
    # A server *pause* is a data segment after which the client speaks next; it happened at the
    # window when the data in flight then were within a segment of the client's advertised window.
    pauses = at_window = 0
    win_c = None
    if syn_options.get(client) is not None:
        for e, nxt in zip(timeline, timeline[1:]):
            if e["side"] == "c":
                win_c = e["window"]
            elif e["data"] and nxt["side"] == "c" and win_c:
                pauses += 1
                slack = min(mss["s"] or 0, win_c / 10)
                at_window += e.get("inflight", 0) >= win_c - slack
    out["receive_window_bytes"] = win_c
    # Verdict.
    if stalls:
        out["stall_period_ms"] = statistics.median(g["duration_ms"] for g in stalls)
        sides_held = [g["held_side"] for g in stalls]
        out["held_side"] = max(set(sides_held), key=sides_held.count)
    elif probes:
        out["stall_period_ms"] = statistics.median(g["duration_ms"] for g in probes)
        out["held_side"] = probes[0]["held_side"]
    else:
        out["stall_period_ms"] = None
    t0 = timeline[0]["t"]
    stall_spans = [(t0 + g["at_s"], t0 + g["at_s"] + g["duration_ms"] / 1e3) for g in stalls]
    held_ops = streams.held_operations(stall_spans, ops, lat_ms, stall_ms)
    out["stall_held_ops"] = held_ops
    if zero:
        verdict = "zero-window"
    elif stalls and streams.stalled_share(held_ops, len(ops)):
        verdict = "delayed-ack-stall"
    elif probes:
        verdict = "cork-timeout"
    elif at_window >= 10 and at_window * 100.0 >= WINDOW_SHARE_PCT * pauses:
        verdict = "window-limited"
    elif max(holds.values()) * 100.0 >= HOLD_SHARE_PCT * len(ops):
        verdict = "nagle-hold"
        out["held_side"] = "server" if holds["s"] >= holds["c"] else "client"
    else:
        verdict = "no-stall"
    cause, fix = _verdict_text(verdict, out)
    out.update(verdict=verdict, cause=cause, fix=fix, see=f"{PAGE}#diag-{verdict}")
    return out


def analyze_capture(path: Path | str, server_port: int | None = None) -> dict[str, Any]:
    """Every TCP connection of a capture file, analysed (:func:`analyze_connection`).

    Raises
    ------
    ValueError
        ``server_port`` is not 1..65535, or no connection has that port; or (as
        ``models.measure.pcap.CaptureError``, a subclass) the file cannot be read as a capture
        with TCP in it.  Each message is one line.
    """
    if server_port is not None and not (
        isinstance(server_port, int) and 1 <= server_port <= 65535
    ):
        raise ValueError(f"server_port must be a TCP port 1..65535, got {server_port!r}")
    cap = read_capture(path)
    conns = []
    for segs in streams.connections(cap.segments).values():
        summary = analyze_connection(segs, cap.syn_options, server_port)
        if summary is not None:
            conns.append(summary)
    if not conns:
        raise ValueError(f"server_port: no connection in {cap.path} uses port {server_port}")
    conns.sort(key=lambda d: -d.get("operations", 0))
    return {"file": str(cap.path), "packets": cap.packets, "connections": conns}


def _text(report: dict[str, Any]) -> str:
    lines = [
        f"{report['file']}: {report['packets']} packets, {len(report['connections'])} "
        "TCP connection(s)"
    ]
    for d in report["connections"]:
        lines.append(f"\n{d['client']} -> {d['server']}: {d['verdict']}")
        if d.get("operations"):
            lat = d["latency_ms"]
            rate = d["rate_ops_per_s"]
            lines.append(
                f"  {d['operations']} operations ({d['split']}), "
                + (f"{rate:,.1f} per second, " if rate else "")
                + f"request {d['request_bytes']} B, response {d['response_bytes']} B, "
                f"{d['segments_per_response']:.2f} segments per response"
            )
            lines.append(
                f"  latency ms: median {lat['p50']:.3f}, p90 {lat['p90']:.3f}, "
                f"p99 {lat['p99']:.3f}, max {lat['max']:.3f}; "
                f"{d['stalled_share_pct']:.1f} % of operations over {STALL_MS:g} ms"
            )
            lines.append(
                f"  gaps >= {STALL_MS:g} ms by what ended them: {d['gaps_by_kind'] or 'none'};"
                f" Nagle holds {d['nagle_holds']}"
            )
            if d.get("stall_period_ms"):
                lines.append(f"  stall period {d['stall_period_ms']:.1f} ms")
        lines.append(f"  cause: {d['cause']}")
        lines.append(f"  fix: {d['fix']}")
        lines.append(f"  see: {d['see']}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    """The parser of ``python -m models.measure analyze`` (one-line errors, exit status 2)."""
    ap = OneLineParser(
        prog="python -m models.measure analyze",
        description="Diagnose the TCP connections of a pcap/pcapng capture: operations, latency, "
        "what ended each gap, and a verdict with its cause and fix.",
    )
    ap.add_argument("file", help="a pcap or pcapng capture (tcpdump -w FILE)")
    ap.add_argument(
        "--server-port",
        type=_port,
        default=None,
        help="the server's TCP port, 1..65535 (default: the side that was connected "
        "to, or that received the first data)",
    )
    ap.add_argument("--json", action="store_true", help="print a JSON object")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m models.measure analyze FILE [--server-port P] [--json]``."""
    args = parser().parse_args(argv)
    try:
        report = analyze_capture(args.file, args.server_port)
    except (CaptureError, ValueError) as exc:
        print(f"analyze: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1) if args.json else _text(report))
    return 0


def _port(text: str) -> int:
    try:
        p = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a TCP port 1..65535, got {text!r}") from None
    if not 1 <= p <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port 1..65535, got {text!r}")
    return p


if __name__ == "__main__":
    raise SystemExit(main())

"""The standard sweep and the tidy tables it writes (``<prefix>_flory``, ``_iscsi_loop``, ``_busy_counts``).

:func:`standard_plan` lists the runs: Flory's exchange (8-byte request; 8-byte descriptor and an N-byte
payload as two writes) for N around each link's MSS boundaries, and the iSCSI-like closed loop at
QD 1, 2, 3, 4, 5, 8, 16, 32, 64 for 512, 2048 and 4096 bytes under the four socket modes, on every link
the user may create (host loopback for a normal user; a private loopback and veth pairs at MTU 1500 and
9000, and MTU 1500 rate-limited to 1 Gb/s, for root), plus a congestion-control variant (cubic).

:func:`run_sweep` runs a plan and writes, for each table, ``<out>/<name>.csv`` and a Frictionless sidecar
``<out>/<name>.json`` (schema, sha256 of the CSV, and a ``measurement`` key with the kernel version,
CONFIG_HZ, sysctls, MTU, offloads, command line and load averages).  Raw per-run reports go to
``<out>/<prefix>_raw.jsonl`` next to them only when ``raw=True``.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import framing
from . import build, sysinfo
from .netns import Link, LinkSpec, is_root
from .runner import RunResult, RunSpec, run_one

__all__ = [
    "PlannedRun",
    "standard_plan",
    "run_sweep",
    "flory_payloads",
    "ISCSI_QDS",
    "ISCSI_SIZES",
    "BOOK_MODES",
    "SCHEMAS",
    "rows_for",
]

ISCSI_QDS = (1, 2, 3, 4, 5, 8, 16, 32, 64)
ISCSI_SIZES = (512, 2048, 4096)
BOOK_MODES = ("nagle", "nodelay", "more", "more_nodelay")
GIGABIT = 1_000_000_000  # bits per second


@dataclass(frozen=True)
class PlannedRun:
    """One run of a sweep: the link it needs and what to run on it."""

    link: LinkSpec
    spec: RunSpec
    table: str  # "flory" or "iscsi"


def flory_payloads(link: LinkSpec) -> tuple[int, ...]:
    """Flory's payload sizes N (bytes) around the MSS boundaries of ``link``.

    MSS = MTU - 40 (IPv4 + TCP) - 12 (timestamps): 1448 at MTU 1500, 8948 at 9000, 65483 on loopback
    (MTU 65536).  Also the old boundaries (1447/1448 on loopback, 16383/16384 of the 2.4 loopback, and
    32768, the MSS a young loopback connection uses while the peer's window is small).
    """
    if link.kind == "loopback":
        return (1447, 1448, 16383, 16384, 32767, 32768, 32769, 65482, 65483, 65484)
    assert link.mtu is not None  # a veth link always has an MTU
    mss = framing.mss(int(link.mtu))  # bytes: MTU less 20 IPv4 + 20 TCP + 12 timestamp option
    sizes = {mss - 1, mss, mss + 1, 2 * mss - 1, 2 * mss, 2 * mss + 1}
    if mss != 1448:
        sizes |= {1447, 1448}
    return tuple(sorted(sizes))


def standard_plan(
    root: bool | None = None,
    quick: bool = False,
    links: Iterable[str] | None = None,
    cubic: bool = True,
) -> list[PlannedRun]:
    """The standard sweep.

    Parameters
    ----------
    root
        Whether namespaces may be created (default: the effective uid is 0).  Without root only the host
        loopback is used.
    quick
        Shorter windows (0.5 s instead of 1.5 s) for a trial run of the whole plan.
    links
        Restrict to these link labels (``loopback``, ``veth-1500``, ``veth-9000``, ``veth-1500-1g``).
    cubic
        Add the cubic congestion-control variant of the iSCSI grid on loopback and ``veth-1500-1g``.
    """
    root = is_root() if root is None else root
    window = 0.5 if quick else 1.5  # seconds
    lo = LinkSpec("loopback", isolate=root)
    all_links = [lo]
    if root:
        all_links += [
            LinkSpec("veth", mtu=1500),
            LinkSpec("veth", mtu=9000),
            LinkSpec("veth", mtu=1500, rate_bits_per_s=GIGABIT),
        ]
    if links is not None:
        wanted = set(links)
        known = {link.label for link in all_links}
        unknown = wanted - known
        if unknown:
            raise ValueError(
                f"links: unknown or unavailable {sorted(unknown)}; available: {sorted(known)}"
            )
        all_links = [link for link in all_links if link.label in wanted]
    plan: list[PlannedRun] = []
    for link in all_links:
        if link.rate_bits_per_s is None:  # Flory: loopback and the plain veths
            for n in flory_payloads(link):
                for mode in ("nagle", "nodelay"):
                    plan.append(
                        PlannedRun(
                            link,
                            RunSpec(
                                "flory", mode, 1, n, duration_s=window, warmup_s=0.3, capture=None
                            ),
                            "flory",
                        )
                    )
        ccs: list[str | None] = [None]
        if cubic and (link.kind == "loopback" or link.rate_bits_per_s) and root:
            ccs.append("cubic")
        for cc in ccs:
            for size in ISCSI_SIZES:
                for mode in BOOK_MODES:
                    for qd in ISCSI_QDS:
                        plan.append(
                            PlannedRun(
                                link,
                                RunSpec(
                                    "iscsi",
                                    mode,
                                    qd,
                                    size,
                                    duration_s=window,
                                    warmup_s=0.3,
                                    cc=cc,
                                    capture=False,
                                ),
                                "iscsi",
                            )
                        )
            if cc is None:  # the MSG_MORE misuse (Butterfield 2017: about 200 ms per operation)
                for qd in (1, 2):
                    plan.append(
                        PlannedRun(
                            link,
                            RunSpec(
                                "iscsi",
                                "more_all",
                                qd,
                                512,
                                duration_s=max(window, 1.0),
                                warmup_s=0.5,
                                capture=False,
                            ),
                            "iscsi",
                        )
                    )
    return plan


# -- tables -------------------------------------------------------------------------------------------


def _f(
    name: str, kind: str, unit: str | None, desc: str, required: bool = True, **cons: Any
) -> dict:
    field: dict[str, Any] = {"name": name, "type": kind, "description": desc}
    if unit is not None:
        field["unit"] = unit
    c = {"required": True} if required else {}
    c.update(cons)
    if c:
        field["constraints"] = c
    return field


_LINK_FIELDS = [
    _f(
        "link",
        "string",
        None,
        "link label: loopback, veth-<MTU>, veth-<MTU>-<rate>g (tbf rate limit)",
    ),
    _f(
        "netns_isolated",
        "boolean",
        None,
        "true when the run had network namespaces of its own (counters and "
        "sysctls not shared with the host)",
    ),
    _f("mtu_bytes", "integer", "bytes", "MTU of the server's interface", minimum=68),
    _f(
        "rate_limit_bits_per_s",
        "integer",
        "bit/s",
        "tbf rate limit on both veth egress sides (empty: none)",
        required=False,
    ),
    _f("cc", "string", None, "congestion control of both sockets (read back with TCP_CONGESTION)"),
]

SCHEMAS: dict[str, dict[str, Any]] = {
    "flory": {
        "title": "Flory's exchange on this kernel: 8-byte request, 8-byte descriptor and an N-byte payload",
        "fields": _LINK_FIELDS
        + [
            _f(
                "sock_mode",
                "string",
                None,
                "server socket mode: nagle (defaults) or nodelay (TCP_NODELAY)",
                enum=["nagle", "nodelay"],
            ),
            _f(
                "payload_bytes",
                "integer",
                "bytes",
                "N, the payload written by the server's second write",
                minimum=0,
            ),
            _f(
                "mss_bytes",
                "integer",
                "bytes",
                "server's MSS at the end of the run (TCP_MAXSEG)",
                minimum=1,
            ),
            _f(
                "exchanges",
                "integer",
                "exchanges",
                "exchanges completed in the measurement window",
                minimum=0,
            ),
            _f("window_s", "number", "s", "measurement window after the warm-up", minimum=0),
            _f("iops", "number", "exchanges/s", "exchanges per second in the window", minimum=0),
            _f(
                "exchange_p50_us",
                "number",
                "us",
                "median time from request write to complete response read",
            ),
            _f("exchange_mean_us", "number", "us", "mean exchange time"),
            _f("exchange_max_us", "number", "us", "longest exchange time"),
            _f(
                "stalled_pct", "number", "%", "exchanges slower than 20 ms", minimum=0, maximum=100
            ),
            _f(
                "stall_mean_ms",
                "number",
                "ms",
                "mean time of the stalled exchanges (empty: none stalled)",
                required=False,
            ),
            _f(
                "server_data_segments_per_exchange",
                "number",
                "segments",
                "server data segments per exchange "
                "(TCP_INFO tcpi_data_segs_out / exchanges, whole run)",
                minimum=0,
            ),
            _f("capture_tool", "string", None, "tcpdump, or none (kernel counters only)"),
            _f(
                "response_spread_p50_us",
                "number",
                "us",
                "median, over responses, of the time between the "
                "captured segment carrying a response's first byte and the one carrying its last byte (server "
                "side capture; empty without capture)",
                required=False,
            ),
            _f(
                "responses_split_pct",
                "number",
                "%",
                "responses carried by more than one segment (capture)",
                required=False,
                minimum=0,
                maximum=100,
            ),
            _f(
                "load_1min",
                "number",
                "tasks",
                "host 1-minute load average when the run started",
                minimum=0,
            ),
        ],
        "primaryKey": ["link", "cc", "sock_mode", "payload_bytes"],
    },
    "iscsi_loop": {
        "title": "iSCSI-like closed loop on this kernel: QD outstanding 48-byte requests, 48-byte header + IOSIZE",
        "fields": _LINK_FIELDS
        + [
            _f(
                "sock_mode",
                "string",
                None,
                "server socket mode: nagle, nodelay (TCP_NODELAY), more (MSG_MORE "
                "on the header), more_nodelay (both), more_all (MSG_MORE on header and data: the misuse)",
                enum=["nagle", "nodelay", "more", "more_nodelay", "more_all"],
            ),
            _f(
                "client_sock_mode",
                "string",
                None,
                "client socket mode (nagle: socket defaults)",
                enum=["nagle", "nodelay"],
            ),
            _f("qd", "integer", "operations", "queue depth: requests kept outstanding", minimum=1),
            _f(
                "iosize_bytes",
                "integer",
                "bytes",
                "data bytes after each 48-byte response header",
                minimum=0,
            ),
            _f(
                "ops",
                "integer",
                "operations",
                "operations completed in the measurement window",
                minimum=0,
            ),
            _f("window_s", "number", "s", "measurement window after the warm-up", minimum=0),
            _f("iops", "number", "operations/s", "operations per second in the window", minimum=0),
            _f(
                "lat_mean_us",
                "number",
                "us",
                "mean operation time, request write to response read",
            ),
            _f("lat_p10_us", "number", "us", "10th percentile operation time"),
            _f("lat_p50_us", "number", "us", "median operation time"),
            _f("lat_p90_us", "number", "us", "90th percentile operation time"),
            _f("lat_p99_us", "number", "us", "99th percentile operation time"),
            _f("lat_max_us", "number", "us", "longest operation time"),
            _f(
                "stalled_pct",
                "number",
                "%",
                "operations slower than 20 ms",
                minimum=0,
                maximum=100,
            ),
            _f(
                "stall_mean_ms",
                "number",
                "ms",
                "mean time of the stalled operations (empty: none)",
                required=False,
            ),
            _f(
                "server_data_segments_per_op",
                "number",
                "segments",
                "server data segments per operation (TCP_INFO, whole run)",
                minimum=0,
            ),
            _f(
                "client_pure_acks_per_op",
                "number",
                "segments",
                "client segments without data per operation "
                "(TCP_INFO segs_out - data_segs_out, whole run, includes SYN and FIN)",
                minimum=0,
            ),
            _f(
                "client_delayed_acks_per_op",
                "number",
                "ACKs",
                "delayed ACKs sent per operation in the client's "
                "namespace (TcpExtDelayedACKs; on a private loopback the namespace holds both ends; empty when the "
                "namespace is the host's)",
                required=False,
                minimum=0,
            ),
            _f(
                "mean_busy_count",
                "number",
                "operations",
                "server requests handled per wake-up (ops / wake-ups)",
                minimum=0,
            ),
            _f(
                "empty_wakeups",
                "integer",
                "wake-ups",
                "server wake-ups that found no complete request",
                minimum=0,
            ),
            _f(
                "server_mss_bytes",
                "integer",
                "bytes",
                "server's MSS at the end of the run (TCP_MAXSEG)",
                minimum=1,
            ),
            _f(
                "srtt_us",
                "number",
                "us",
                "server's smoothed RTT estimate at the end (tcpi_rtt)",
                minimum=0,
            ),
            _f(
                "load_1min",
                "number",
                "tasks",
                "host 1-minute load average when the run started",
                minimum=0,
            ),
        ],
        "primaryKey": ["link", "cc", "sock_mode", "client_sock_mode", "qd", "iosize_bytes"],
    },
    "busy_counts": {
        "title": "Server busy counts on this kernel: requests handled per wake-up at QD 1-5",
        "fields": _LINK_FIELDS
        + [
            _f(
                "sock_mode",
                "string",
                None,
                "server socket mode (as in the iscsi_loop table)",
                enum=["nagle", "nodelay", "more", "more_nodelay", "more_all"],
            ),
            _f("qd", "integer", "operations", "queue depth", minimum=1),
            _f("iosize_bytes", "integer", "bytes", "data bytes per response", minimum=0),
            _f(
                "busy_count",
                "integer",
                "operations",
                "requests handled between two sleeps of the server "
                "(1..QD, then one row for QD+1 or more)",
                minimum=1,
            ),
            _f(
                "or_more",
                "boolean",
                None,
                "true on the last row of a run: cycles that handled busy_count or more "
                "requests (possible when successor requests arrive before the server sleeps)",
            ),
            _f(
                "cycles",
                "integer",
                "cycles",
                "busy cycles (wake-up to sleep) ending with this busy count",
                minimum=0,
            ),
            _f(
                "cycles_pct",
                "number",
                "%",
                "share of the run's busy cycles (cycles with at least one request)",
                minimum=0,
                maximum=100,
            ),
        ],
        "primaryKey": ["link", "cc", "sock_mode", "qd", "iosize_bytes", "busy_count"],
    },
}


def _num(x: float | None, digits: int = 6) -> str:
    """Format a number with ``digits`` significant digits; empty for None/NaN."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}"


def _median(v: list[float]) -> float | None:
    if not v:
        return None
    s = sorted(v)
    m = len(s) // 2
    return s[m] if len(s) % 2 else 0.5 * (s[m - 1] + s[m])


def _link_cols(res: RunResult, link: Link) -> dict[str, Any]:
    return {
        "link": link.spec.label,
        "netns_isolated": link.server_ns is not None,
        "mtu_bytes": link.mtu,
        "rate_limit_bits_per_s": link.spec.rate_bits_per_s,
        "cc": res.server.get("cc") or "",
    }


def rows_for(table: str, res: RunResult, link: Link) -> list[dict[str, Any]]:
    """Rows of ``table`` (``flory``, ``iscsi_loop`` or ``busy_counts``) contributed by one run."""
    c, s = res.client, res.server
    ti_s, ti_c = s.get("tcp_info") or {}, c.get("tcp_info") or {}
    base = _link_cols(res, link)
    stalled_pct = 100.0 * c["stalled_ops"] / c["window_ops"] if c["window_ops"] else 0.0
    stall_ms = c["stall_mean_us"] / 1e3 if c["stalled_ops"] else None  # us -> ms
    if table == "flory":
        cap = res.capture_summary
        spread = split = None
        if cap is not None and cap.get("response_spread_us"):
            spreads = cap["response_spread_us"]
            spread = _median(spreads)
            split = 100.0 * cap["responses_split"] / len(spreads)
        return [
            dict(
                base,
                sock_mode=res.spec.sock,
                payload_bytes=res.spec.payload_bytes,
                mss_bytes=s["tcp_maxseg_bytes"],
                exchanges=c["window_ops"],
                window_s=c["window_s"],
                iops=c["iops"],
                exchange_p50_us=c["lat_p50_us"],
                exchange_mean_us=c["lat_mean_us"],
                exchange_max_us=c["lat_max_us"],
                stalled_pct=stalled_pct,
                stall_mean_ms=stall_ms,
                server_data_segments_per_exchange=ti_s.get("data_segs_out", 0) / max(s["ops"], 1),
                capture_tool=res.capture_tool,
                response_spread_p50_us=spread,
                responses_split_pct=split,
                load_1min=res.load_before[0],
            )
        ]
    if table == "iscsi_loop":
        ops_total = max(s["ops"], 1)
        delacks = None
        # a namespace of our own: the counter is not shared with the host
        if link.client_ns is not None:
            delacks = c.get("netstat_delta", {}).get("TcpExtDelayedACKs", 0) / max(
                c["completed"], 1
            )
        busy = {int(k): v for k, v in s["busy_hist"].items()}
        return [
            dict(
                base,
                sock_mode=res.spec.sock,
                client_sock_mode=res.spec.client_sock,
                qd=res.spec.qd,
                iosize_bytes=res.spec.payload_bytes,
                ops=c["window_ops"],
                window_s=c["window_s"],
                iops=c["iops"],
                lat_mean_us=c["lat_mean_us"],
                lat_p10_us=c["lat_p10_us"],
                lat_p50_us=c["lat_p50_us"],
                lat_p90_us=c["lat_p90_us"],
                lat_p99_us=c["lat_p99_us"],
                lat_max_us=c["lat_max_us"],
                stalled_pct=stalled_pct,
                stall_mean_ms=stall_ms,
                server_data_segments_per_op=ti_s.get("data_segs_out", 0) / ops_total,
                client_pure_acks_per_op=(ti_c.get("segs_out", 0) - ti_c.get("data_segs_out", 0))
                / ops_total,
                client_delayed_acks_per_op=delacks,
                mean_busy_count=s["ops"] / max(s["wakeups"] - busy.get(0, 0), 1),
                empty_wakeups=busy.get(0, 0),
                server_mss_bytes=s["tcp_maxseg_bytes"],
                srtt_us=ti_s.get("rtt_us"),
                load_1min=res.load_before[0],
            )
        ]
    if table == "busy_counts":
        busy = {int(k): v for k, v in s["busy_hist"].items() if int(k) > 0}
        total = sum(busy.values())
        qd = res.spec.qd
        counts = {k: busy.get(k, 0) for k in range(1, qd + 1)}
        counts[qd + 1] = sum(v for k, v in busy.items() if k > qd)
        return [
            dict(
                base,
                sock_mode=res.spec.sock,
                qd=qd,
                iosize_bytes=res.spec.payload_bytes,
                busy_count=k,
                or_more=k > qd,
                cycles=n,
                cycles_pct=100.0 * n / total if total else 0.0,
            )
            for k, n in counts.items()
        ]
    raise ValueError(f"table must be flory, iscsi_loop or busy_counts, got {table!r}")


def _csv_text(table: str, rows: list[dict[str, Any]]) -> str:
    names = [f["name"] for f in SCHEMAS[table]["fields"]]
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(names)
    for r in rows:
        w.writerow([_num(r.get(n)) if not isinstance(r.get(n), str) else r[n] for n in names])
    return buf.getvalue()


_DESCRIPTIONS = {
    "flory": "Flory (2001) exchange reproduced with models/measure (C client and server) on this machine's kernel: "
    "the client writes an 8-byte request, the server answers with an 8-byte descriptor and an N-byte payload "
    "as two write calls; N is swept around each link's MSS boundaries, with Nagle on (socket defaults) and "
    "with TCP_NODELAY. A stall shows as exchanges of about 40 ms or more.",
    "iscsi_loop": "Butterfield (2017) iSCSI-like closed loop reproduced with models/measure on this machine's kernel: "
    "the client keeps QD 48-byte requests outstanding (one send call each); the server answers each with "
    "a 48-byte header and IOSIZE data bytes as two send calls, under Nagle, TCP_NODELAY, MSG_MORE on the "
    "header, and both; one row per run.",
    "busy_counts": "Server busy counts (requests handled between wake-up and sleep) from the "
    "iSCSI-like loop at QD 1-5, the kernel counterpart of Butterfield (2017)'s busy-count table; "
    "percentages of busy cycles.",
}


def _sidecar(name: str, table: str, csv_bytes: bytes, meta: dict[str, Any]) -> dict[str, Any]:
    cmd = meta["command_line"]
    return {
        "name": name,
        "path": f"{name}.csv",
        "profile": "tabular-data-resource",
        "format": "csv",
        "encoding": "utf-8",
        "title": SCHEMAS[table]["title"],
        "description": _DESCRIPTIONS[table],
        "sources": [
            {
                "title": "Queue Depth kernel harness sweep",
                "author": "Queue Depth authors",
                "year": int(meta["started_utc"][:4]),
                "file": "models/measure",
                "section": f"command line: {cmd}",
            }
        ],
        "transcription": (
            f"Measured by `{cmd}` on kernel {meta['kernel']['release']} (CONFIG_HZ="
            f"{meta['kernel']['config_hz']}, {meta['kernel']['cpus']} CPUs), default congestion control "
            f"{meta['host_sysctls'].get('net.ipv4.tcp_congestion_control')}, tcp_autocorking="
            f"{meta['host_sysctls'].get('net.ipv4.tcp_autocorking')}; load average "
            f"{meta['load_start']} at the start and {meta['load_end']} at the end, {meta['started_utc']} to "
            f"{meta['finished_utc']}. Per-link sysctls, MTU and offloads are under 'measurement'."
        ),
        "hash": "sha256:" + hashlib.sha256(csv_bytes).hexdigest(),
        "schema": {"fields": SCHEMAS[table]["fields"], "primaryKey": SCHEMAS[table]["primaryKey"]},
        "measurement": meta,
    }


def run_sweep(
    plan: list[PlannedRun],
    out_dir: Path | str,
    prefix: str = "kernel6",
    raw: bool = False,
    command_line: str | None = None,
    progress: Callable[[str], None] | None = None,
    pcap_dir: Path | None = None,
) -> dict[str, Path]:
    """Run ``plan`` link by link and write the three tables; return ``{table: csv path}``.

    Links are created one at a time and removed before the next (also on errors and Ctrl-C).  A run that
    fails is retried once; if it fails again the sweep stops with the error (no partial table is written).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    cmd = command_line or " ".join(
        shlex.quote(a) for a in ["python", "-m", "models.measure", *sys.argv[1:]]
    )
    meta: dict[str, Any] = {
        "command_line": cmd,
        "started_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "kernel": sysinfo.kernel_info(),
        "host_sysctls": sysinfo.tcp_sysctls(),
        "tools": sysinfo.tool_versions(),
        "qdperf_source_sha256": build.source_sha256(),
        "euid": os.geteuid(),
        "load_start": sysinfo.load_average(),
        "links": {},
        "stall_threshold_ms": 20.0,
        "notes": [
            "Socket modes apply to the server's response writes; the client socket keeps the defaults "
            "(Nagle on) unless client_sock_mode says otherwise.",
            "Congestion control variants are set per socket with TCP_CONGESTION; the host's sysctls are "
            "never changed.",
            "iSCSI-loop runs are not captured (tcpdump costs throughput); segment counts come from TCP_INFO.",
            "IOPS of CPU-bound runs depend on the host load (load_1min column); stall periods do not.",
        ],
    }
    tables: dict[str, list[dict[str, Any]]] = {"flory": [], "iscsi_loop": [], "busy_counts": []}
    raw_f = (out / f"{prefix}_raw.jsonl").open("w") if raw else None
    by_link: dict[LinkSpec, list[PlannedRun]] = {}
    for pr in plan:
        by_link.setdefault(pr.link, []).append(pr)
    done = 0
    t0 = time.monotonic()
    try:
        for spec, runs in by_link.items():
            with Link(spec) as link:
                meta["links"][spec.label] = link.describe()
                for pr in runs:
                    done += 1
                    res = None
                    for attempt in (1, 2):
                        try:
                            keep = None
                            if pcap_dir is not None and pr.table == "flory":
                                keep = Path(pcap_dir) / (
                                    f"{spec.label}-{pr.spec.sock}-{pr.spec.payload_bytes}.pcap"
                                )
                            res = run_one(pr.spec, link, keep_pcap=keep)
                            break
                        except Exception as exc:  # noqa: BLE001 - retry once, then give up loudly
                            if attempt == 2:
                                raise
                            say(f"  retrying after: {exc}")
                    assert res is not None
                    if raw_f is not None:
                        raw_f.write(json.dumps(res.to_dict()) + "\n")
                    if pr.table == "flory":
                        tables["flory"] += rows_for("flory", res, link)
                    else:
                        tables["iscsi_loop"] += rows_for("iscsi_loop", res, link)
                        if pr.spec.qd <= 5 and pr.spec.sock in BOOK_MODES:
                            tables["busy_counts"] += rows_for("busy_counts", res, link)
                    c = res.client
                    say(
                        f"[{done}/{len(plan)} {time.monotonic() - t0:6.0f}s] {spec.label:>14} {pr.spec.proto:5} "
                        f"{pr.spec.sock:12} cc={res.server.get('cc')} qd={pr.spec.qd:<3} n={pr.spec.payload_bytes:<6} "
                        f"iops={c['iops']:10.1f} p50={c['lat_p50_us']:9.1f}us "
                        f"stalled={c['stalled_ops']}/{c['window_ops']}"
                        f" load={res.load_before[0]}"
                    )
    finally:
        if raw_f is not None:
            raw_f.close()
    meta["finished_utc"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    meta["load_end"] = sysinfo.load_average()
    written: dict[str, Path] = {}
    for table, rows in tables.items():
        if not rows:
            continue
        name = f"{prefix}_{table}"
        text = _csv_text(table, rows).encode("utf-8")
        (out / f"{name}.csv").write_bytes(text)
        (out / f"{name}.json").write_text(
            json.dumps(_sidecar(name, table, text, meta), indent=2) + "\n", encoding="utf-8"
        )
        written[table] = out / f"{name}.csv"
    return written

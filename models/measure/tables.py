"""The rows a run contributes to each table, and the CSV text and Frictionless sidecar of a table.

Columns, types and units are those of :data:`models.measure.schemas.SCHEMAS` (read from the bundled
sidecars); :func:`rows_for` fills them from one :class:`~models.measure.runner.RunResult`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from typing import Any

from .netns import Link
from .runner import RunResult
from .schemas import SCHEMAS

__all__ = ["rows_for", "csv_text", "sidecar"]


def _num(x: float | None, digits: int = 6) -> str:
    """Format a number with ``digits`` significant digits; empty for None/NaN.

    >>> _num(1 / 3), _num(None), _num(True), _num(7)
    ('0.333333', '', 'true', '7')
    """
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


def _stalls(c: dict[str, Any]) -> dict[str, Any]:
    """Share of operations slower than the stall threshold, and their mean time (ms)."""
    return {
        "stalled_pct": 100.0 * c["stalled_ops"] / c["window_ops"] if c["window_ops"] else 0.0,
        "stall_mean_ms": c["stall_mean_us"] / 1e3 if c["stalled_ops"] else None,  # us -> ms
    }


def _flory_row(
    res: RunResult, base: dict[str, Any], spread_from: RunResult | None = None
) -> dict[str, Any]:
    c, s = res.client, res.server
    ti_s = s.get("tcp_info") or {}
    seen = res if spread_from is None else spread_from  # the run the capture columns come from
    cap = seen.capture_summary
    spread = split = None
    if cap is not None and cap.get("response_spread_us"):
        spreads = cap["response_spread_us"]
        spread = _median(spreads)
        split = 100.0 * cap["responses_split"] / len(spreads)
    return dict(
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
        **_stalls(c),
        server_data_segments_per_exchange=ti_s.get("data_segs_out", 0) / max(s["ops"], 1),
        capture_tool=seen.capture_tool,
        response_spread_p50_us=spread,
        responses_split_pct=split,
        load_1min=res.load_before[0],
    )


def _iscsi_row(res: RunResult, link: Link, base: dict[str, Any]) -> dict[str, Any]:
    c, s = res.client, res.server
    ti_s, ti_c = s.get("tcp_info") or {}, c.get("tcp_info") or {}
    ops_total = max(s["ops"], 1)
    delacks = None
    # a namespace of our own: the counter is not shared with the host
    if link.client_ns is not None:
        delacks = c.get("netstat_delta", {}).get("TcpExtDelayedACKs", 0) / max(c["completed"], 1)
    busy = {int(k): v for k, v in s["busy_hist"].items()}
    return dict(
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
        **_stalls(c),
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


def _busy_rows(res: RunResult, base: dict[str, Any]) -> list[dict[str, Any]]:
    s = res.server
    busy = {int(k): v for k, v in s["busy_hist"].items() if int(k) > 0}
    total = sum(busy.values())
    qd = res.spec.qd
    counts = {k: busy.get(k, 0) for k in range(1, qd + 1)}
    counts[qd + 1] = sum(v for k, v in busy.items() if k > qd)
    return [
        dict(
            base,
            sock_mode=res.spec.sock,
            client_sock_mode=res.spec.client_sock,
            qd=qd,
            iosize_bytes=res.spec.payload_bytes,
            busy_count=k,
            or_more=k > qd,
            cycles=n,
            cycles_pct=100.0 * n / total if total else 0.0,
        )
        for k, n in counts.items()
    ]


def rows_for(
    table: str, res: RunResult, link: Link, spread_from: RunResult | None = None
) -> list[dict[str, Any]]:
    """Rows of ``table`` (``flory``, ``iscsi_loop`` or ``busy_counts``) contributed by one run.

    ``spread_from`` (``flory`` only): a second run of the same exchange, captured, whose capture
    gives the row's ``capture_tool``, ``response_spread_p50_us`` and ``responses_split_pct`` while
    every other column comes from ``res`` (a run without the capture, whose rate the capture does
    not slow: ``models.validation.capture_cost``)."""
    if table not in ("flory", "iscsi_loop", "busy_counts"):
        raise ValueError(f"table must be flory, iscsi_loop or busy_counts, got {table!r}")
    if spread_from is not None and table != "flory":
        raise ValueError(f"spread_from is for the flory table only, got table {table!r}")
    base = _link_cols(res, link)
    if table == "flory":
        return [_flory_row(res, base, spread_from)]
    if table == "iscsi_loop":
        return [_iscsi_row(res, link, base)]
    return _busy_rows(res, base)


def csv_text(table: str, rows: list[dict[str, Any]]) -> str:
    """The CSV of ``table``: a header of the schema's fields, then ``rows`` in that column order."""
    names = [f["name"] for f in SCHEMAS[table]["fields"]]
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(names)
    for r in rows:
        w.writerow([_num(r.get(n)) if not isinstance(r.get(n), str) else r[n] for n in names])
    return buf.getvalue()


def sidecar(name: str, table: str, csv_bytes: bytes, meta: dict[str, Any]) -> dict[str, Any]:
    """The Frictionless descriptor of a written table: schema, hash, provenance, ``measurement``."""
    schema = SCHEMAS[table]
    cmd = meta["command_line"]
    return {
        "name": name,
        "path": f"{name}.csv",
        "profile": "tabular-data-resource",
        "format": "csv",
        "encoding": "utf-8",
        "title": schema["title"],
        "description": schema["description"],
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
            f"{meta['kernel']['config_hz']}, {meta['kernel']['cpus']} CPUs), default congestion "
            f"control {meta['host_sysctls'].get('net.ipv4.tcp_congestion_control')}, "
            f"tcp_autocorking={meta['host_sysctls'].get('net.ipv4.tcp_autocorking')}; load average "
            f"{meta['load_start']} at the start and {meta['load_end']} at the end, "
            f"{meta['started_utc']} to {meta['finished_utc']}. Per-link sysctls, MTU and offloads "
            "are under 'measurement'."
        ),
        "hash": "sha256:" + hashlib.sha256(csv_bytes).hexdigest(),
        "schema": {"fields": schema["fields"], "primaryKey": schema["primaryKey"]},
        "measurement": meta,
    }

"""The standard sweep and the tidy tables it writes (``<prefix>_flory``, ``_iscsi_loop``, ``_busy_counts``).

``models.measure.plan.standard_plan`` lists the runs (see ``models.measure.plan``).

:func:`run_sweep` runs a plan and writes, for each table, ``<out>/<name>.csv`` and a Frictionless
sidecar ``<out>/<name>.json`` (schema, sha256 of the CSV, and a ``measurement`` key with the kernel
version, CONFIG_HZ, sysctls, MTU, offloads, command line and load averages).  The schemas, titles and
descriptions are those of the bundled sidecars (``models.measure.schemas``); the rows come from
``models.measure.tables``.  Raw per-run reports go to ``<out>/<prefix>_raw.jsonl`` next to them
only when ``raw=True``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import build, capture, sysinfo
from .netns import Link, LinkSpec
from .plan import (
    BOOK_MODES,
    ISCSI_QDS,
    ISCSI_SIZES,
    PlannedRun,
    flory_payloads,
    standard_plan,
)
from .runner import RunResult, run_one
from .schemas import SCHEMAS, TABLES
from .tables import csv_text, rows_for, sidecar

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

#: An operation slower than this counts as stalled (the C harness's threshold), milliseconds.
STALL_THRESHOLD_MS = 20.0
#: A run during which other processes used more than this share of all CPUs' time is run again once
#: (after :data:`SETTLE_S`), percent; the second result is kept either way and the sidecar lists it.
OTHER_CPU_MAX_PCT = 10.0
#: Pause before running a disturbed run again, seconds.
SETTLE_S = 2.0


def _metadata(command_line: str) -> dict[str, Any]:
    return {
        "command_line": command_line,
        "started_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "kernel": sysinfo.kernel_info(),
        "host_sysctls": sysinfo.tcp_sysctls(),
        "tools": sysinfo.tool_versions(),
        "qdperf_source_sha256": build.source_sha256(),
        "euid": os.geteuid(),
        "load_start": sysinfo.load_average(),
        "links": {},
        "stall_threshold_ms": STALL_THRESHOLD_MS,
        "notes": [
            "Socket modes apply to the server's response writes; the client socket keeps the "
            "defaults (Nagle on) unless client_sock_mode says otherwise.",
            "Congestion control variants are set per socket with TCP_CONGESTION; the host's "
            "sysctls are never changed.",
            "iSCSI-loop runs are not captured (tcpdump costs throughput); segment counts come "
            "from TCP_INFO.",
            "Each Flory row's rates come from a run without a capture; where tcpdump may "
            "capture, a second run of the same exchange, captured, gives the row's "
            "capture_tool, response_spread_p50_us and responses_split_pct (since 2026-12-03: "
            "before, one captured run gave every column, and the capture slowed it).",
            "IOPS of CPU-bound runs depend on the host load (load_1min column); stall periods "
            "do not.",
            f"A run during which other processes used more than {OTHER_CPU_MAX_PCT:g} % of all "
            "CPUs' time (/proc/stat busy time minus the harness's own rusage) was run again "
            "once; other_cpu_pct summarises every kept run and lists those still over.",
        ],
    }


def _may_capture(asked: bool | None, pcap_dir: Path | None) -> bool:
    """Whether a Flory run is captured: asked for (``True``, or a folder to keep captures in),
    or left to the harness (``None``) where tcpdump is installed and may capture (root).

    >>> _may_capture(False, None), _may_capture(True, None)
    (False, True)
    """
    if asked is False and pcap_dir is None:
        return False
    if asked or pcap_dir is not None:
        return True
    return capture.tcpdump_path() is not None and os.geteuid() == 0


def _run_with_retry(
    pr: PlannedRun, link: Link, pcap_dir: Path | None, say: Callable[[str], None]
) -> RunResult:
    """Run once; on failure say why and run again; a second failure is raised."""
    keep, spec = None, pr.spec
    if pcap_dir is not None and pr.table == "flory":
        keep = Path(pcap_dir) / f"{pr.link.label}-{pr.spec.sock}-{pr.spec.payload_bytes}.pcap"
        spec = dataclasses.replace(spec, capture=True)  # a capture asked for, or an error
    for attempt in (1, 2):
        try:
            return run_one(spec, link, keep_pcap=keep)
        except Exception as exc:  # noqa: BLE001 - retry once, then give up loudly
            if attempt == 2:
                raise
            say(f"  retrying after: {exc}")
    raise AssertionError("unreachable")  # pragma: no cover


def _run_undisturbed(
    pr: PlannedRun,
    link: Link,
    pcap_dir: Path | None,
    say: Callable[[str], None],
    pause: Callable[[float], None] = time.sleep,
) -> RunResult:
    """:func:`_run_with_retry`, run once more if other processes took over
    :data:`OTHER_CPU_MAX_PCT` of the CPUs meanwhile; the second result is kept either way."""
    res = _run_with_retry(pr, link, pcap_dir, say)
    if res.other_cpu_pct > OTHER_CPU_MAX_PCT:
        say(
            f"  other processes used {res.other_cpu_pct:g} % of the CPUs during the run "
            f"(limit {OTHER_CPU_MAX_PCT:g} %): running it again"
        )
        pause(SETTLE_S)
        res = _run_with_retry(pr, link, pcap_dir, say)
    return res


def _other_cpu_summary(kept: list[tuple[str, float]]) -> dict[str, Any]:
    """Median and maximum of the kept runs' ``other_cpu_pct`` and the runs still over the limit.

    >>> _other_cpu_summary([("a", 0.5), ("b", 12.0), ("c", 1.0)])["over_limit"]
    ['b: 12 %']
    """
    values = sorted(v for _, v in kept if v == v)  # NaN (no /proc/stat) left out
    mid = values[len(values) // 2] if values else None
    return {
        "limit_pct": OTHER_CPU_MAX_PCT,
        "median_pct": mid,
        "max_pct": values[-1] if values else None,
        "over_limit": [f"{k}: {v:g} %" for k, v in kept if v > OTHER_CPU_MAX_PCT],
    }


def _run_label(pr: PlannedRun) -> str:
    s = pr.spec
    cc = f" cc={s.cc}" if s.cc else ""
    return f"{pr.link.label} {s.proto} {s.sock}/{s.client_sock}{cc} qd={s.qd} n={s.payload_bytes}"


def _progress_line(pr: PlannedRun, res: RunResult, done: int, total: int, t0: float) -> str:
    c, spec = res.client, pr.spec
    return (
        f"[{done}/{total} {time.monotonic() - t0:6.0f}s] {pr.link.label:>14} {spec.proto:5} "
        f"{spec.sock:12} cc={res.server.get('cc')} qd={spec.qd:<3} n={spec.payload_bytes:<6} "
        f"iops={c['iops']:10.1f} p50={c['lat_p50_us']:9.1f}us "
        f"stalled={c['stalled_ops']}/{c['window_ops']}"
        f" load={res.load_before[0]} other={res.other_cpu_pct:g}%"
    )


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

    Links are created one at a time and removed before the next (also on errors and Ctrl-C).  A run
    that fails is retried once; if it fails again the sweep stops with the error (no partial table
    is written).  The schemas are read before the first run, so a broken sidecar in ``data/`` stops
    the sweep before it measures anything.
    """
    for table in TABLES:
        SCHEMAS[table]  # raises SchemaError now rather than after hours of runs
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    cmd = command_line or " ".join(
        shlex.quote(a) for a in ["python", "-m", "models.measure", *sys.argv[1:]]
    )
    meta = _metadata(cmd)
    tables: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    raw_f = (out / f"{prefix}_raw.jsonl").open("w") if raw else None
    by_link: dict[LinkSpec, list[PlannedRun]] = {}
    for pr in plan:
        by_link.setdefault(pr.link, []).append(pr)
    done = 0
    kept: list[tuple[str, float]] = []  # (run, other_cpu_pct) of every kept run
    t0 = time.monotonic()
    try:
        for spec, runs in by_link.items():
            with Link(spec) as link:
                meta["links"][spec.label] = link.describe()
                for pr in runs:
                    done += 1
                    spread = None
                    if pr.table == "flory" and _may_capture(pr.spec.capture, pcap_dir):
                        # the rates from a run without the capture, the spreads from one with it
                        spread = _run_undisturbed(pr, link, pcap_dir, say)
                        if raw_f is not None:
                            raw_f.write(json.dumps(spread.to_dict()) + "\n")
                        free = dataclasses.replace(
                            pr, spec=dataclasses.replace(pr.spec, capture=False)
                        )
                        res = _run_undisturbed(free, link, None, say)
                    else:
                        res = _run_undisturbed(pr, link, pcap_dir, say)
                    kept.append((_run_label(pr), res.other_cpu_pct))
                    if raw_f is not None:
                        raw_f.write(json.dumps(res.to_dict()) + "\n")
                    if pr.table == "flory":
                        tables["flory"] += rows_for("flory", res, link, spread)
                    else:
                        tables["iscsi_loop"] += rows_for("iscsi_loop", res, link)
                        if pr.spec.qd <= 5 and pr.spec.sock in BOOK_MODES:
                            tables["busy_counts"] += rows_for("busy_counts", res, link)
                    say(_progress_line(pr, res, done, len(plan), t0))
    finally:
        if raw_f is not None:
            raw_f.close()
    meta["finished_utc"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    meta["load_end"] = sysinfo.load_average()
    meta["other_cpu_pct"] = _other_cpu_summary(kept)
    written: dict[str, Path] = {}
    for table, rows in tables.items():
        if not rows:
            continue
        name = f"{prefix}_{table}"
        text = csv_text(table, rows).encode("utf-8")
        (out / f"{name}.csv").write_bytes(text)
        (out / f"{name}.json").write_text(
            json.dumps(sidecar(name, table, text, meta), indent=2) + "\n", encoding="utf-8"
        )
        written[table] = out / f"{name}.csv"
    return written

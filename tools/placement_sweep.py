"""Measure how much the kernel's rate depends on where the two ends run.

    sudo .venv/bin/python tools/placement_sweep.py --out data --prefix kernel6_placement

The iSCSI-like loop on the loopback inside a namespace of its own
(``python -m models.measure run --isolate``) and on veth pairs at MTU 9000
and 1500 (``--links``), TCP_NODELAY on both sockets, QD 8, responses of
512 B, 4 KiB, 16 KiB and 64 KiB, each run
with the server and client processes placed three ways (``--pin``):
wherever the scheduler puts them (``none``), both on one CPU (``same``)
and each on a CPU of its own (``apart``).  Every placement of every size
on every link is run ``--repeats`` times, the placements and sizes
interleaved within each repeat so that a drift of the machine touches
them alike.  Writes
``PREFIX.csv`` (one row per run) and its sidecar ``PREFIX.json`` with the
machine's settings; ``--append`` adds a further sweep (numbered in the
``sweep`` column) to an existing pair, to see whether the machine's rates
move between hours.  Needs root (the namespace) and two CPUs.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.data import tool_sidecar  # noqa: E402
from models.measure import sysinfo  # noqa: E402
from models.measure.netns import Link, LinkSpec  # noqa: E402
from models.measure.plan import ETHERNET_MTU  # noqa: E402
from models.measure.runner import PIN_MODES, RunSpec, run_one  # noqa: E402
from models.validation import placement as PL  # noqa: E402

#: Response payloads measured, bytes.
SIZES = (512, 4096, 16384, 65536)
#: The links, by the field sweep's labels.
LINKS = {
    "loopback": LinkSpec("loopback", isolate=True),
    "veth-9000": LinkSpec("veth", mtu=9000),
    "veth-1500": LinkSpec("veth", mtu=ETHERNET_MTU),
}
#: The one socket configuration and queue depth of the sweep (what chapter 9 simulates).
SOCK, CLIENT_SOCK, QD = (PL.CONFIG[k] for k in ("sock_mode", "client_sock_mode", "qd"))

#: The sysctls a sweep's machine record keeps beside its kernel and congestion control.
RCVBUF_SYSCTLS = (
    "net.ipv4.tcp_rmem",
    "net.core.rmem_max",
    "net.ipv4.tcp_moderate_rcvbuf",
    "net.ipv4.tcp_timestamps",
)

#: (name, type, unit, description) of each column.
FIELDS = [
    ("sweep", "integer", "sweeps", "the sweep the run belongs to, from 0 (see the sidecar)"),
    ("link", "string", None, "the link, as the field sweep labels it"),
    ("iosize_bytes", "integer", "bytes", "payload bytes per response"),
    ("pin", "string", None, "placement: none (scheduler), same (one CPU), apart (two CPUs)"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("iops", "number", "1/s", "operations completed per second of the measured window"),
    ("lat_p50_us", "number", "us", "median operation latency"),
    ("other_cpu_pct", "number", "%", "CPU time other processes used during the run"),
    ("load_1min", "number", "tasks", "1-minute load average before the run"),
]


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number`` on ``links``, one row each (see :data:`FIELDS`)."""
    rows = []
    for label in links:
        with Link(LINKS[label]) as link:
            rows += _runs(number, label, link, repeats, duration_s)
    return rows


def _runs(number: int, label: str, link: Link, repeats: int, duration_s: float) -> list[dict]:
    rows = []
    for rep in range(repeats):
        for size in SIZES:
            for pin in PIN_MODES:
                spec = RunSpec(
                    "iscsi",
                    SOCK,
                    QD,
                    size,
                    duration_s=duration_s,
                    client_sock=CLIENT_SOCK,
                    capture=False,
                    pin=pin,
                )
                res = run_one(spec, link)
                rows.append(
                    {
                        "sweep": number,
                        "link": label,
                        "iosize_bytes": size,
                        "pin": pin,
                        "repeat": rep,
                        "iops": round(res.client["iops"], 1),
                        "lat_p50_us": round(res.client["lat_p50_us"], 1),
                        "other_cpu_pct": round(res.other_cpu_pct, 1),
                        "load_1min": res.load_before[0],
                    }
                )
                print(
                    f"{label:9s} {size:6d} B  pin {pin:5s}  repeat {rep}: "
                    f"{rows[-1]['iops']:,.0f} IOPS"
                )
    return rows


def each_config(
    links: list[str], repeats: int, configs: Any, run: Callable[[dict, Link, int], list[dict]]
) -> list[dict]:
    """The rows of ``run(cfg, link, repeat)`` for every configuration of ``configs`` on each of
    ``links`` (a link made once, the configurations on it interleaved ``repeats`` times)."""
    rows: list[dict] = []
    for label in links:
        with Link(LINKS[label]) as link:
            for rep in range(repeats):
                for cfg in configs:
                    if cfg["link"] == label:
                        rows += run(cfg, link, rep)
    return rows


def machine(start: str) -> dict:
    """The machine's settings under measurement, for a sweep started at ``start`` (ISO time)."""
    k = sysinfo.kernel_info()
    ctl = sysinfo.tcp_sysctls()
    return {
        "kernel": k["release"],
        "config_hz": k["config_hz"],
        "cpus": k["cpus"],
        "congestion_control": ctl.get("net.ipv4.tcp_congestion_control"),
        "autocorking": ctl.get("net.ipv4.tcp_autocorking"),
        "date": start,
        # what sets a receive buffer and its autotuning (models.validation.rcvbuf)
        "sysctls": {k: ctl[k] for k in RCVBUF_SYSCTLS if k in ctl},
    }


def write_dataset(
    out: Path,
    prefix: str,
    fields: list,
    key: list[str],
    rows: list[dict],
    sweeps: list[dict],
    *,
    title: str,
    description: str,
    source: tuple[str, str],
    others: str = "each run's other_cpu_pct says what else used the CPUs",
) -> Path:
    """Write ``rows`` as ``out/PREFIX.csv`` (columns ``fields``: name, type, unit, description)
    and its sidecar ``PREFIX.json`` (the sweeps' commands and machines, the CSV's hash, primary
    key ``key``; ``source`` is the tool's title and file; ``others`` says how the rows show what
    else ran); returns the CSV's path."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f"{prefix}.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[name for name, *_ in fields], lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    first = sweeps[-1]["machine"]
    kernel = f"{first['kernel']} (CONFIG_HZ={first['config_hz']}, {first['cpus']} CPUs)"
    meta = tool_sidecar(
        csv_path,
        fields,
        key,
        title=title,
        description=description,
        source=(
            source[0],
            source[1],
            "command lines: " + "; ".join(w["command"] for w in sweeps),
        ),
        year=int(sweeps[-1]["machine"]["date"][:4]),
        transcription=(
            f"Measured by {source[1]} on kernel {kernel} (default congestion "
            f"control {first['congestion_control']}, tcp_autocorking "
            f"{first['autocorking']}); sweeps started "
            f"{', '.join(w['machine']['date'] for w in sweeps)}; no other job was run on the "
            f"machine meanwhile ({others})."
        ),
        measurement={"sweeps": sweeps},
    )
    (out / f"{prefix}.json").write_text(json.dumps(meta, indent=2) + "\n")
    return csv_path


def add_arguments(
    p: argparse.ArgumentParser, prefix: str, repeats: int, duration_s: float
) -> None:
    """The options every placement tool takes (its default ``prefix``, ``repeats`` and
    ``duration_s``)."""
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default=prefix)
    p.add_argument("--repeats", type=int, default=repeats, help="runs of each configuration")
    p.add_argument(
        "--duration", type=float, default=duration_s, help="measured seconds of each run"
    )
    p.add_argument("--append", action="store_true", help="add a sweep to PREFIX.csv and .json")
    p.add_argument(
        "--links", default=",".join(LINKS), help=f"comma-separated subset of {', '.join(LINKS)}"
    )


def checked(p: argparse.ArgumentParser, ns: argparse.Namespace) -> tuple[list, list, list]:
    """The options of :func:`add_arguments` checked (``p.error`` names a bad one, before any
    run): the links, and with ``--append`` the rows and sweeps already written."""
    if not 1 <= ns.repeats <= 20:
        p.error(f"--repeats must be 1..20, got {ns.repeats}")
    if not 0 < ns.duration <= 10:
        p.error(f"--duration must be in (0, 10] seconds, got {ns.duration}")
    links = ns.links.split(",")
    if not links or len(set(links)) != len(links) or not set(links) <= set(LINKS):
        p.error(f"--links must be distinct names from {', '.join(LINKS)}, got {ns.links!r}")
    csv_path = ns.out / f"{ns.prefix}.csv"
    old_rows: list[dict] = []
    old_sweeps: list[dict] = []
    if ns.append:
        if not csv_path.is_file():
            p.error(f"--append: {csv_path} does not exist")
        with csv_path.open(newline="") as f:
            old_rows = list(csv.DictReader(f))
        old_sweeps = json.loads((ns.out / f"{ns.prefix}.json").read_text())["measurement"][
            "sweeps"
        ]
    if len(os.sched_getaffinity(0)) < 2:
        p.error("needs two CPUs (pin 'apart')")
    return links, old_rows, old_sweeps


def new_sweep(tool: str, ns: argparse.Namespace, links: list[str], number: int) -> dict:
    """The sidecar's record of sweep ``number``: its command line and the machine now."""
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    command = (
        f"tools/{tool} --out {ns.out} --prefix {ns.prefix} "
        f"--repeats {ns.repeats} --duration {ns.duration:g} --links {','.join(links)}"
        + (" --append" if ns.append else "")
    )
    return {"sweep": number, "command": command, "machine": machine(start)}


def run_tool(
    argv: list[str] | None,
    *,
    doc: str,
    tool: str,
    defaults: tuple[str, int, float],
    sweep_runs: Callable[[int, list[str], int, float], list[dict]],
    fields: list,
    key: list[str],
    title: str,
    describe: Callable[[argparse.Namespace, int], str],
    source: str,
    links: tuple[str, ...] | None = None,
) -> int:
    """A placement tool's command line: its options (:func:`add_arguments`, ``defaults`` the
    prefix, repeats and duration; ``links`` the links measured unless ``--links`` says), checked
    before any run; one sweep (``sweep_runs(number, links, repeats, duration_s)``); the CSV and its
    sidecar (:func:`write_dataset`, ``describe(ns, sweeps)`` its description)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    add_arguments(p, *defaults)
    if links is not None:
        p.set_defaults(links=",".join(links))
    ns = p.parse_args(argv)
    chosen, old_rows, old_sweeps = checked(p, ns)
    this = new_sweep(tool, ns, chosen, len(old_sweeps))
    rows = old_rows + sweep_runs(len(old_sweeps), chosen, ns.repeats, ns.duration)
    sweeps = [*old_sweeps, this]
    csv_path = write_dataset(
        ns.out,
        ns.prefix,
        fields,
        key,
        rows,
        sweeps,
        title=title,
        description=describe(ns, len(sweeps)),
        source=(source, f"tools/{tool}"),
    )
    print(f"wrote {csv_path} ({len(rows)} rows)")
    return 0


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    return (
        "Harness runs of the iSCSI-like loop on the loopback in a namespace of its own and "
        f"on veth pairs, TCP_NODELAY on both sockets, QD {QD}, responses of "
        f"{', '.join(str(s) for s in SIZES)} bytes, the server and client processes pinned "
        "to one CPU (same), to a CPU each (apart), or not pinned (none); "
        f"{ns.repeats} repeats, interleaved, per sweep; {sweeps} sweep(s), each "
        "with its start time and the machine's settings under measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="placement_sweep.py",
        defaults=("kernel6_placement", 3, 1.0),
        sweep_runs=sweep,
        fields=FIELDS,
        key=["sweep", "link", "iosize_bytes", "pin", "repeat"],
        title="The iSCSI-like loop with both ends on one CPU, on two, or where the scheduler puts them",
        describe=_describe,
        source="Queue Depth placement sweep",
    )


if __name__ == "__main__":
    raise SystemExit(main())

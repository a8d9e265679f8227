"""Measure whether a Nagle server's delayed-ACK stall depends on where the two ends run.

    sudo .venv/bin/python tools/stall_placement_sweep.py --out data --prefix kernel6_stall_placement

The iSCSI-like loop with the server's header and data in two ``send()`` calls under Nagle
(``--sock nagle``), the client with Nagle and with TCP_NODELAY, responses of 512 B and 4 KiB,
queue depths 2 to 64, on the loopback inside a namespace of its own and on a veth pair at
MTU 9000 (``--links``), each run with the server and client processes placed three ways
(``--pin``): wherever the scheduler puts them (``none``), both on one CPU (``same``) and each
on a CPU of its own (``apart``).  The field sweep's Nagle servers kept stalling at queue depths
where the simulator, whose two ends each have a CPU, stops; this sweep asks whether the
placement is the difference.  Every configuration is run ``--repeats`` times, the placements
interleaved within each configuration so that a drift of the machine touches them alike.
Writes ``PREFIX.csv`` (one row per run) and its sidecar ``PREFIX.json`` with the machine's
settings (``--append`` adds a further sweep).  Needs root (the namespace, the veth pair) and
two CPUs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from placement_sweep import LINKS, run_tool  # noqa: E402

from models.measure.netns import Link  # noqa: E402
from models.measure.runner import PIN_MODES, RunSpec, run_one  # noqa: E402

#: The server's socket mode: header and data in two calls, Nagle on.
SOCK = "nagle"
#: The client's socket modes.
CLIENT_SOCKS = ("nagle", "nodelay")
#: Response payloads, bytes: both well under the loopback's and MTU 9000's MSS.
SIZES = (512, 4096)
#: Queue depths.
QDS = (2, 4, 8, 16, 32, 64)
#: The links by default (veth at MTU 1500 stops stalling at QD 2 for these sizes anyway).
DEFAULT_LINKS = ("loopback", "veth-9000")

#: (name, type, unit, description) of each column.
FIELDS = [
    ("sweep", "integer", "sweeps", "the sweep the run belongs to, from 0 (see the sidecar)"),
    ("link", "string", None, "the link, as the field sweep labels it"),
    ("client_sock_mode", "string", None, "the client's socket: nagle or nodelay"),
    ("iosize_bytes", "integer", "bytes", "payload bytes per response"),
    ("qd", "integer", "operations", "requests the client keeps outstanding"),
    ("pin", "string", None, "placement: none (scheduler), same (one CPU), apart (two CPUs)"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("iops", "number", "1/s", "operations completed per second of the measured window"),
    ("stalled_pct", "number", "%", "share of the window's operations slower than 20 ms"),
    ("lat_p50_us", "number", "us", "median operation latency"),
    ("other_cpu_pct", "number", "%", "CPU time other processes used during the run"),
    ("load_1min", "number", "tasks", "1-minute load average before the run"),
]
KEY = ["sweep", "link", "client_sock_mode", "iosize_bytes", "qd", "pin", "repeat"]


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number`` on ``links``, one row each (see :data:`FIELDS`)."""
    rows = []
    for label in links:
        with Link(LINKS[label]) as link:
            for rep in range(repeats):
                for client in CLIENT_SOCKS:
                    for size in SIZES:
                        for qd in QDS:
                            for pin in PIN_MODES:
                                rows.append(
                                    _run(
                                        number, label, link, rep, client, size, qd, pin, duration_s
                                    )
                                )
    return rows


def _run(
    number: int,
    label: str,
    link: Link,
    rep: int,
    client: str,
    size: int,
    qd: int,
    pin: str,
    duration_s: float,
) -> dict:
    spec = RunSpec(
        "iscsi",
        SOCK,
        qd,
        size,
        duration_s=duration_s,
        client_sock=client,
        capture=False,
        pin=pin,
    )
    res = run_one(spec, link)
    c = res.client
    row = {
        "sweep": number,
        "link": label,
        "client_sock_mode": client,
        "iosize_bytes": size,
        "qd": qd,
        "pin": pin,
        "repeat": rep,
        "iops": round(c["iops"], 1),
        # operations over 20 ms of the window's, as a percentage
        "stalled_pct": round(100.0 * c["stalled_ops"] / max(c["window_ops"], 1), 2),
        "lat_p50_us": round(c["lat_p50_us"], 1),
        "other_cpu_pct": round(res.other_cpu_pct, 1),
        "load_1min": res.load_before[0],
    }
    print(
        f"{label:9s} {client:7s} {size:5d} B QD {qd:2d} pin {pin:5s} repeat {rep}: "
        f"{row['iops']:>10,.0f} IOPS, {row['stalled_pct']:5.1f} % stalled"
    )
    return row


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    return (
        "Harness runs of the iSCSI-like loop, the server's header and data in two send() "
        "calls with Nagle on, the client with Nagle and with TCP_NODELAY, responses of "
        f"{', '.join(str(s) for s in SIZES)} bytes, queue depths "
        f"{', '.join(str(q) for q in QDS)}, on the loopback in a namespace of its own and on "
        "veth pairs; the server and client processes pinned to one CPU (same), to a CPU "
        f"each (apart), or not pinned (none); {ns.repeats} repeats per sweep, the placements "
        f"interleaved; {sweeps} sweep(s), each with its start time and the machine's "
        "settings under measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="stall_placement_sweep.py",
        defaults=("kernel6_stall_placement", 2, 0.5),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="A Nagle server's stalls with both ends on one CPU, on two, or where the scheduler "
        "puts them",
        describe=_describe,
        source="Queue Depth stall placement sweep",
        links=DEFAULT_LINKS,
    )


if __name__ == "__main__":
    raise SystemExit(main())

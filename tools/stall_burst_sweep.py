"""Measure how a NODELAY client issues its queue after each of a Nagle server's delayed-ACK stalls.

    sudo .venv/bin/python tools/stall_burst_sweep.py --out data --prefix kernel6_machine3_stallburst

In a Nagle server's stall loop (header and data in two send() calls, Nagle on; the Linux initiator's
TCP_NODELAY client; :data:`QD` operations of :data:`SIZE`-byte responses), every operation waits
for the client's delayed ACK; when it comes, the server's held data leave, the client reads them
and writes its requests, and the first request wakes the server, asleep since the stall began.
Each run is captured with tcpdump, and for every stall :func:`models.measure.streams.stall_bursts`
reads the gap from the client's first request to its second, the median of its later gaps, and the
time from the first request to the server's next data.  Waking a thread whose CPU has idled for a
stall's 40 ms costs the waker more than waking one still polling (``Host.waker_curve_s``), so the
first gap is where that cost shows.  Per run the medians over its stalls; bbr and reno on both
sockets, each end pinned to a CPU of its own, the loopback in a namespace of its own.  Writes
``PREFIX.csv`` (one row per run) and its sidecar ``PREFIX.json`` with the machine's settings
(``--append`` adds a further sweep).  Needs root (the namespace, tcpdump) and two CPUs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from ack_delay_sweep import HOST_FIELDS, RUN_FIELDS, captured  # noqa: E402
from placement_sweep import LINKS, run_tool  # noqa: E402

from models.measure import streams  # noqa: E402
from models.measure.netns import Link  # noqa: E402
from models.measure.runner import RunSpec  # noqa: E402
from models.validation import stallburst as SB  # noqa: E402

#: The loop: server socket mode, client socket mode, queue depth, payload bytes.
SOCK, CLIENT_SOCK, QD, SIZE = (
    SB.LOOP[k] for k in ("sock_mode", "client_sock_mode", "qd", "iosize_bytes")
)
#: The congestion control set on both sockets, in the order each repeat runs them.
CCS = ("bbr", "reno")

#: (name, type, unit, description) of each column.
FIELDS = [
    *RUN_FIELDS,
    ("bursts", "integer", "stalls", "stalls after which the client wrote three or more requests"),
    ("first_gap_p50_us", "number", "us", "median gap from the first request to the second"),
    ("later_gap_p50_us", "number", "us", "median of the bursts' medians of the later gaps"),
    ("server_p50_us", "number", "us", "median time from the first request to the server's data"),
    *HOST_FIELDS,
]
KEY = ["sweep", "link", "iosize_bytes", "qd", "cc", "repeat"]


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number`` on ``links``, one row each (see :data:`FIELDS`); a clear
    exit before any run without tcpdump or root, which every run's capture needs."""
    if shutil.which("tcpdump") is None or os.geteuid() != 0:
        raise SystemExit("stall_burst_sweep.py: needs tcpdump and root (each run is captured)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="qd-stallburst-") as tmp:
        for label in links:
            with Link(LINKS[label]) as link:
                for rep in range(repeats):
                    for cc in CCS:
                        pcap = Path(tmp) / f"{label}-{cc}-{rep}.pcap"
                        rows.append(_run(number, label, link, rep, cc, duration_s, pcap))
                        pcap.unlink(missing_ok=True)
    return rows


def _run(
    number: int, label: str, link: Link, rep: int, cc: str, duration_s: float, pcap: Path
) -> dict:
    spec = RunSpec(
        "iscsi",
        SOCK,
        QD,
        SIZE,
        duration_s=duration_s,
        cc=cc,
        client_sock=CLIENT_SOCK,
        capture=True,
        pin="apart",
    )
    res, conn, client, server = captured(spec, link, pcap)
    times = {
        end: [x.time_s for x in conn if (x.src, x.sport) == end and x.payload_bytes and not x.syn]
        for end in (client, server)
    }
    bursts = streams.stall_bursts(times[client], times[server])

    def median_us(name: str) -> float | str:
        # seconds -> microseconds; no burst: empty
        return round(statistics.median(b[name] for b in bursts) * 1e6, 2) if bursts else ""

    row: dict = {
        "sweep": number,
        "link": label,
        "iosize_bytes": SIZE,
        "qd": QD,
        "cc": res.server.get("cc") or "",
        "repeat": rep,
        "iops": round(res.client["iops"], 1),
        "bursts": len(bursts),
        "first_gap_p50_us": median_us("first_gap_s"),
        "later_gap_p50_us": median_us("later_gap_s"),
        "server_p50_us": median_us("server_s"),
        "other_cpu_pct": round(res.other_cpu_pct, 1),
        "load_1min": res.load_before[0],
    }
    print(
        f"{label:9s} {cc:4s} repeat {rep}: {row['iops']:>8,.0f} IOPS, {len(bursts)} bursts, "
        f"first gap {row['first_gap_p50_us']} us, later {row['later_gap_p50_us']} us, "
        f"server's data after {row['server_p50_us']} us (medians)"
    )
    return row


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    return (
        "Harness runs of the iSCSI-like loop, the server's header and data in two send() calls "
        f"with Nagle on, the client with TCP_NODELAY, QD {QD}, {SIZE}-byte responses, each end "
        "pinned to a CPU of its own, bbr or reno on both sockets, captured with tcpdump; the "
        f"loopback in a namespace of its own; {ns.repeats} repeats per sweep.  Per run, from the "
        "capture: after each delayed-ACK stall, the gap from the client's first request to its "
        "second, the median of its later gaps, and the time from its first request to the "
        f"server's next data (medians over the run's stalls); {sweeps} sweep(s), each with its "
        "start time and the machine's settings under measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="stall_burst_sweep.py",
        defaults=("kernel6_machine3_stallburst", 3, 1.0),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="How a NODELAY client issues its queue after a Nagle server's stall",
        describe=_describe,
        source="Queue Depth stall burst sweep",
        links=("loopback",),
    )


if __name__ == "__main__":
    raise SystemExit(main())

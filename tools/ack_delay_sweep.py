"""Measure how long a Nagle server's data wait for the client's ACK, under bbr and under reno.

    sudo .venv/bin/python tools/ack_delay_sweep.py --out data --prefix kernel6_machine3_ackdelay

bbr's delivery-rate samples divide the packets an ACK delivers by the time since the data left (or
since the previous ACK), so the time a super-packet waits for its ACK sets the bandwidth bbr
estimates.  This sweep runs the cases of ``tools/cc_side_sweep.py`` (the Nagle server, the Linux
initiator's TCP_NODELAY client, each end on a CPU of its own) with bbr and with reno on both
sockets, captures each run with tcpdump on the server's interface, and reads from the capture, for
every data segment the server sent (a super-packet counts once, as the capture shows it), the time
until the client's first ACK that covers it (:func:`models.measure.streams.ack_delays`): for full
segments (at least an MSS) and for the tails under an MSS that Nagle holds, the 10th, 50th and
90th percentile.  The capture slows the loop, so each row's rate is kept beside the delays.
Writes ``PREFIX.csv`` (one row per run) and its sidecar ``PREFIX.json`` with the machine's settings
(``--append`` adds a further sweep).  Needs root (the namespace, the veth pairs, tcpdump) and two
CPUs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from cc_side_sweep import CASES, CLIENT_SOCK, SOCK, cases_text  # noqa: E402
from placement_sweep import LINKS, run_tool  # noqa: E402

from models.measure import streams  # noqa: E402
from models.measure.netns import Link  # noqa: E402
from models.measure.pcap import read_capture  # noqa: E402
from models.measure.runner import RunSpec, run_one  # noqa: E402

#: The congestion control set on both sockets, in the order each repeat runs them.
CCS = ("bbr", "reno")
#: The two kinds of segment: full (at least an MSS) and tails.
KINDS = ("full", "tail")
#: The percentiles kept, in percent.
PERCENTILES = (10, 50, 90)

#: (name, type, unit, description) of the columns that say which run a row is, first in the
#: captured sweeps' tables (this one's and ``tools/stall_burst_sweep.py``'s) ...
RUN_FIELDS = [
    ("sweep", "integer", "sweeps", "the sweep the run belongs to, from 0 (see the sidecar)"),
    ("link", "string", None, "the link, as the field sweep labels it"),
    ("iosize_bytes", "integer", "bytes", "payload bytes per response"),
    ("qd", "integer", "operations", "requests the client keeps outstanding"),
    ("cc", "string", None, "congestion control of both sockets, as the server reported it"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("iops", "number", "1/s", "operations completed per second, under the capture"),
]
#: ... and the machine's state during the run, last.
HOST_FIELDS = [
    ("other_cpu_pct", "number", "%", "CPU time other processes used during the run"),
    ("load_1min", "number", "tasks", "1-minute load average before the run"),
]

#: (name, type, unit, description) of each column.
FIELDS = [
    *RUN_FIELDS,
    ("mss_bytes", "integer", "bytes", "the server's MSS, which tells a full segment from a tail"),
    *[
        (f"{kind}_segments", "integer", "segments", f"{kind} data segments with an ACK")
        for kind in KINDS
    ],
    *[
        (
            f"{kind}_ack_p{q}_us",
            "number",
            "us",
            f"{q}th percentile of a {kind} segment's wait for the ACK that covers it",
        )
        for kind in KINDS
        for q in PERCENTILES
    ],
    *HOST_FIELDS,
]
KEY = ["sweep", "link", "iosize_bytes", "qd", "cc", "repeat"]


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number`` on ``links``, one row each (see :data:`FIELDS`); a clear
    exit before any run without tcpdump or root, which every run's capture needs."""
    if shutil.which("tcpdump") is None or os.geteuid() != 0:
        raise SystemExit("ack_delay_sweep.py: needs tcpdump and root (each run is captured)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="qd-ackdelay-") as tmp:
        for label in links:
            with Link(LINKS[label]) as link:
                for rep in range(repeats):
                    for size, qd in CASES[label]:
                        for cc in CCS:
                            pcap = Path(tmp) / f"{label}-{size}-{cc}-{rep}.pcap"
                            rows.append(
                                _run(number, label, link, rep, size, qd, cc, duration_s, pcap)
                            )
                            pcap.unlink(missing_ok=True)
    return rows


def captured(spec: RunSpec, link: Link, pcap: Path) -> tuple:
    """Run ``spec`` on ``link`` captured into ``pcap``: the run's result, the capture's connection
    (its segments) and its client and server ends."""
    res = run_one(spec, link, keep_pcap=pcap)
    cap = read_capture(pcap)
    conn = max(streams.connections(cap.segments).values(), key=len)
    ends = streams.roles(conn, None)
    assert ends is not None  # (no port given: always a pair)
    return (res, conn, *ends)


def _run(
    number: int,
    label: str,
    link: Link,
    rep: int,
    size: int,
    qd: int,
    cc: str,
    duration_s: float,
    pcap: Path,
) -> dict:
    spec = RunSpec(
        "iscsi",
        SOCK,
        qd,
        size,
        duration_s=duration_s,
        cc=cc,
        client_sock=CLIENT_SOCK,
        capture=True,
        pin="apart",
    )
    res, conn, client, server = captured(spec, link, pcap)
    mss = int(res.server["tcp_maxseg_bytes"])
    waits = streams.ack_delays(*streams.stream_and_acks(conn, server, client), mss)
    row: dict = {
        "sweep": number,
        "link": label,
        "iosize_bytes": size,
        "qd": qd,
        "cc": res.server.get("cc") or "",
        "repeat": rep,
        "iops": round(res.client["iops"], 1),
        "mss_bytes": mss,
    }
    for kind in KINDS:
        w = waits[kind]
        row[f"{kind}_segments"] = len(w)
        for q in PERCENTILES:
            # seconds -> microseconds; no segment of the kind: empty
            row[f"{kind}_ack_p{q}_us"] = (
                round(streams.percentile(w, q / 100) * 1e6, 2) if w else ""
            )
    row["other_cpu_pct"] = round(res.other_cpu_pct, 1)
    row["load_1min"] = res.load_before[0]
    print(
        f"{label:9s} {size:6d} B QD {qd:2d} {cc:4s} repeat {rep}: {row['iops']:>10,.0f} IOPS, "
        f"ACK after full {row['full_ack_p50_us']} us, tail {row['tail_ack_p50_us']} us (medians)"
    )
    return row


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    cases = cases_text()
    return (
        "Harness runs of the iSCSI-like loop, the server's header and data in two send() calls "
        "with Nagle on, the client with TCP_NODELAY, each end pinned to a CPU of its own, bbr or "
        f"reno on both sockets, captured with tcpdump on the server's interface; {cases}; the "
        f"loopback in a namespace of its own; {ns.repeats} repeats per sweep.  Per run, from the "
        "capture: each data segment the server sent (a super-packet once) and the time until the "
        "client's first ACK covering it, percentiles for full segments and for tails under an "
        f"MSS; {sweeps} sweep(s), each with its start time and the machine's settings under "
        "measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="ack_delay_sweep.py",
        defaults=("kernel6_machine3_ackdelay", 2, 0.5),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="How long a Nagle server's data wait for the client's ACK, under bbr and reno",
        describe=_describe,
        source="Queue Depth ACK delay sweep",
    )


if __name__ == "__main__":
    raise SystemExit(main())

"""Measure which end's congestion control slows a Nagle server under bbr.

    sudo .venv/bin/python tools/cc_side_sweep.py --out data --prefix kernel6_machine3_ccside

Under bbr the kernel's Nagle server runs at about 30 k operations/s whatever its response size
or queue depth, where reno lets it run two or three times faster; the simulator's bbr changes
nothing there.  This sweep asks which socket's congestion control does it: the iSCSI-like loop
with the server's header and data in two ``send()`` calls under Nagle and the Linux initiator's
TCP_NODELAY client, each end on a CPU of its own (``--pin apart``), run with the four pairings of
bbr and reno on the server's and the client's socket (``RunSpec.client_cc``), at the
configurations where the plateau shows (:data:`CASES`: 64 KiB on the loopback in a namespace of
its own, 4 and 16 KiB on veth at MTU 1500, 16 KiB at MTU 9000).  The pairings are interleaved
within each repeat, so that a drift of the machine touches them alike.  (The sockets' ``tcp_info``
at the end of a run is not kept: by then the loop has drained, and bbr's window and rate say more
about the drain than about the run.)  Writes ``PREFIX.csv`` (one row per
run) and its sidecar ``PREFIX.json`` with the machine's settings (``--append`` adds a further
sweep).  Needs root (the namespace, the veth pairs) and two CPUs.
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
from models.measure.runner import RunSpec, run_one  # noqa: E402

#: The server's socket mode (header and data in two calls, Nagle on) and the client's.
SOCK, CLIENT_SOCK = "nagle", "nodelay"
#: (response payload bytes, queue depth) measured on each link.
CASES = {
    "loopback": ((65536, 16),),
    "veth-1500": ((4096, 8), (16384, 8)),
    "veth-9000": ((16384, 8),),
}
#: (server's, client's) congestion control, in the order each repeat runs them.
PAIRS = (("bbr", "bbr"), ("reno", "reno"), ("bbr", "reno"), ("reno", "bbr"))

#: (name, type, unit, description) of each column.
FIELDS = [
    ("sweep", "integer", "sweeps", "the sweep the run belongs to, from 0 (see the sidecar)"),
    ("link", "string", None, "the link, as the field sweep labels it"),
    ("iosize_bytes", "integer", "bytes", "payload bytes per response"),
    ("qd", "integer", "operations", "requests the client keeps outstanding"),
    ("server_cc", "string", None, "the server socket's congestion control, as it reported it"),
    ("client_cc", "string", None, "the client socket's congestion control, as it reported it"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("iops", "number", "1/s", "operations completed per second of the measured window"),
    ("lat_p50_us", "number", "us", "median operation latency"),
    ("other_cpu_pct", "number", "%", "CPU time other processes used during the run"),
    ("load_1min", "number", "tasks", "1-minute load average before the run"),
]
KEY = ["sweep", "link", "iosize_bytes", "qd", "server_cc", "client_cc", "repeat"]


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number`` on ``links``, one row each (see :data:`FIELDS`)."""
    rows = []
    for label in links:
        with Link(LINKS[label]) as link:
            for rep in range(repeats):
                for size, qd in CASES[label]:
                    for server_cc, client_cc in PAIRS:
                        rows.append(
                            _run(
                                number,
                                label,
                                link,
                                rep,
                                size,
                                qd,
                                (server_cc, client_cc),
                                duration_s,
                            )
                        )
    return rows


def _run(
    number: int,
    label: str,
    link: Link,
    rep: int,
    size: int,
    qd: int,
    ccs: tuple[str, str],
    duration_s: float,
) -> dict:
    spec = RunSpec(
        "iscsi",
        SOCK,
        qd,
        size,
        duration_s=duration_s,
        cc=ccs[0],
        client_cc=ccs[1],
        client_sock=CLIENT_SOCK,
        capture=False,
        pin="apart",
    )
    res = run_one(spec, link)
    c, s = res.client, res.server
    row = {
        "sweep": number,
        "link": label,
        "iosize_bytes": size,
        "qd": qd,
        "server_cc": s.get("cc") or "",
        "client_cc": c.get("cc") or "",
        "repeat": rep,
        "iops": round(c["iops"], 1),
        "lat_p50_us": round(c["lat_p50_us"], 1),
        "other_cpu_pct": round(res.other_cpu_pct, 1),
        "load_1min": res.load_before[0],
    }
    if (row["server_cc"], row["client_cc"]) != ccs:
        raise SystemExit(
            f"asked for {ccs}, the sockets report {row['server_cc'], row['client_cc']}"
        )
    print(
        f"{label:9s} {size:6d} B QD {qd:2d} server {ccs[0]:4s} client {ccs[1]:4s} "
        f"repeat {rep}: {row['iops']:>10,.0f} IOPS"
    )
    return row


def cases_text() -> str:
    """:data:`CASES` in words, for a sidecar's description."""
    return "; ".join(
        f"{link}: " + ", ".join(f"{size} B at QD {qd}" for size, qd in CASES[link])
        for link in CASES
    )


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    cases = cases_text()
    return (
        "Harness runs of the iSCSI-like loop, the server's header and data in two send() calls "
        "with Nagle on, the client with TCP_NODELAY, each end pinned to a CPU of its own, with "
        "bbr or reno set on each socket independently (all four pairings, interleaved within "
        f"each repeat); {cases}; the loopback in a namespace of its own; {ns.repeats} repeats "
        f"per sweep; {sweeps} sweep(s), each with its start time and the machine's settings "
        "under measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="cc_side_sweep.py",
        defaults=("kernel6_machine3_ccside", 3, 1.0),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="A Nagle server under bbr or reno on each end of the connection, set apart",
        describe=_describe,
        source="Queue Depth congestion control by side sweep",
    )


if __name__ == "__main__":
    raise SystemExit(main())

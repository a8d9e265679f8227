"""When a Nagle server's response tail leaves, against the client's two ACKs, from a capture.

    sudo .venv/bin/python tools/tail_order.py --out data [--duration 0.5]

Behind a Nagle server that writes 16 KiB responses (the ownership traces' ``paced`` scenario:
veth at MTU 1500, the two ends a CPU apart, a NODELAY client, QD 8), each response leaves as
its full segments and a tail shorter than an MSS that Nagle holds until the previous tail is
acknowledged (Minshall's rule).  Two client segments can release it: the client's next request,
which carries the previous tail's ACK, and the client's ACK of this response's full segments.
Whether the tail leaves before or after the second decides whether bbr counts its delivery-rate
sample (``tcp_rate_check_app_limited`` marks each ``send()``; the period ends once everything in
flight then has been delivered).  This tool runs that scenario with the server in Nagle mode
under bbr and under reno, captures it with tcpdump (which slows the loop less than bpftrace),
and writes one row per tail: when it left after the ACK of the previous tail and after the ACK
of its own response's full segments (negative: that ACK came later).

Needs root (the harness makes network namespaces) and tcpdump.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ownership_trace import run_args, write_dataset  # noqa: E402

from models import framing  # noqa: E402
from models.measure.capture import read_pcap  # noqa: E402
from models.measure.netns import SERVER_ADDR  # noqa: E402
from models.validation.ownership import PACED  # noqa: E402
from models.validation.tail_order import tails  # noqa: E402

#: The runs: the server's socket mode and congestion control.
RUNS = (("nagle", "bbr"), ("nagle", "reno"))

FIELDS = [
    ("cc", "string", "", "congestion control of both sockets"),
    ("tail", "integer", "tails", "the tail's number in the captured run (1, 2, ...)"),
    ("time_us", "number", "us", "when the tail was captured, from the run's first segment"),
    ("tail_bytes", "integer", "bytes", "the tail's payload"),
    ("after_prev_ack_us", "number", "us", "tail time less the first ACK of the previous tail"),
    (
        "after_data_ack_us",
        "number",
        "us",
        "tail time less the first ACK of this response's full segments (negative: it came later)",
    ),
]
KEY = ["cc", "tail"]


def data_connection(segments: list) -> list:
    """The segments of the connection whose server sent the most payload."""
    c = Counter((g.sport, g.dport) for g in segments if g.src == SERVER_ADDR and g.payload_bytes)
    ports = set(c.most_common(1)[0][0])
    return [g for g in segments if {g.sport, g.dport} == ports]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default="kernel6_machine4_tail_order")
    p.add_argument("--duration", type=float, default=0.5, help="measured s of each run")
    p.add_argument("--keep", type=int, default=2000, help="tails kept per run (the first)")
    ns = p.parse_args(argv)
    if not 0.1 <= ns.duration <= 10:
        p.error(f"--duration must be in [0.1, 10] seconds, got {ns.duration}")
    if not 10 <= ns.keep <= 100_000:
        p.error(f"--keep must be in [10, 100000], got {ns.keep}")
    if os.geteuid() != 0:
        p.exit(2, "tail_order.py: error: needs root (the harness's namespaces and tcpdump)\n")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    mss = framing.mss(int(PACED.link.mtu or 1500))
    rows, runs = [], {}
    for mode, cc in RUNS:
        with tempfile.TemporaryDirectory() as tmp:
            pcap = Path(tmp) / "run.pcap"
            args = [a for a in run_args(PACED) if a != "--no-capture"]
            cmd = [sys.executable, "-m", "models.measure", "run", "--sock", mode, "--cc", cc]
            cmd += [*args, "--duration", str(ns.duration), "--warmup", "0.3"]
            cmd += ["--capture", "--pcap", str(pcap)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
            report = json.loads(out.stdout)
            found = tails(data_connection(read_pcap(pcap)), mss, SERVER_ADDR)
        kept = found[: ns.keep]
        for i, r in enumerate(kept, 1):
            rows.append({"cc": cc, "tail": i, **r})
        runs[cc] = {"iops": report["client"]["iops"], "tails": len(found), "kept": len(kept)}
        print(cc, runs[cc], flush=True)
    load = os.getloadavg()[0]
    write_dataset(
        ns,
        start,
        ("Queue Depth tail order", "tools/tail_order.py"),
        rows,
        FIELDS,
        KEY,
        title="When a Nagle server's response tail leaves against the client's two ACKs",
        description=(
            "The ownership traces' paced scenario (veth-1500, ends a CPU apart, NODELAY client, "
            "16 KiB responses at QD 8) with a Nagle server under bbr and under reno, captured "
            "with tcpdump on the server's side: one row per response tail (the first "
            f"{ns.keep} of each run). Runs (captured rate, tails found, kept): "
            f"{json.dumps(runs)}; load average (1 min) after: {load:.2f}."
        ),
        runs=runs,
        command=f"tools/tail_order.py --out {ns.out} --prefix {ns.prefix} "
        f"--duration {ns.duration:g} --keep {ns.keep}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""bbr's state from a run's first response on, read by the server itself, untraced.

    sudo .venv/bin/python tools/cc_timeline.py --out data [--draws 5] [--every 4]

The start-up trace (``tools/bbr_trace.py --keep start``) saw bbr through bpftrace, which slows the
loop; ``ss`` (``tools/pacing_rate_sample.py``) cannot read a socket often enough to see the first
milliseconds. Here the harness's server reads its own socket (``qdperf server --cc-log-every N``:
``TCP_INFO``, ``TCP_CC_INFO`` and ``SO_MEMINFO``, three ``getsockopt()`` calls) before every N-th
response, from the first one on, and nothing else watches. The tool runs the bbr runs of both sets
of :data:`models.validation.ownership.SETS` (16 KiB at QD 8 behind a Nagle and a MSG_MORE server, 2
KiB at QD 64 behind a server with MSG_MORE and TCP_NODELAY; veth at MTU 1500, the ends a CPU apart,
a NODELAY client), ``--draws`` times each, every run in namespaces of its own (so its connection is
the first one they carry, as in every run of the harness), and writes one row per reading up to
response ``--keep``: bbr's pacing rate, estimate and gains, the last kept rate sample and whether
it was application-limited, the window and what is in flight, and the bytes still charged to the
socket's transmit memory. The first reading's round trip is the handshake's (nothing has been sent
yet).

Needs root (the harness makes network namespaces).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ownership_trace import run_args, write_dataset  # noqa: E402

from models.validation.ownership import SETS  # noqa: E402


def modes(trace) -> list[str]:
    """The server's socket modes that ``trace`` (a :class:`~models.validation.ownership.TraceSet`)
    runs under bbr.

    >>> modes(SETS["paced"]), modes(SETS["small"])
    (['more', 'nagle'], ['more_nodelay'])
    """
    return [mode for mode, cc in trace.runs if cc == "bbr"]


#: ``qdperf``'s reading columns kept, with this dataset's names.
COLUMNS = {
    "t_us": "time_us",
    "op": "op",
    "pacing_Bps": "pacing_rate_bytes_per_s",
    "delivery_Bps": "delivery_rate_bytes_per_s",
    "app_limited": "delivery_app_limited",
    "bw_Bps": "bw_bytes_per_s",
    "bbr_min_rtt_us": "bbr_min_rtt_us",
    "pacing_gain_x256": "pacing_gain_x256",
    "cwnd_gain_x256": "cwnd_gain_x256",
    "cwnd": "cwnd",
    "unacked": "unacked",
    "notsent_bytes": "notsent_bytes",
    "delivered": "delivered",
    "rtt_us": "srtt_us",
    "wmem_alloc": "wmem_alloc_bytes",
}

FIELDS = [
    ("draw", "integer", "passes", "which pass over the runs (1, 2, ...)"),
    ("set", "string", "", "the set of runs (tools/ownership_trace.py --set): paced or small"),
    (
        "server_sock_mode",
        "string",
        "",
        "server socket mode of the run: nagle, more (MSG_MORE) or more_nodelay (and TCP_NODELAY)",
    ),
    ("time_us", "number", "us", "when the server read its socket, after accept() returned"),
    ("op", "integer", "responses", "responses written before this reading"),
    ("pacing_rate_bytes_per_s", "integer", "bytes/s", "sk_pacing_rate (tcpi_pacing_rate)"),
    (
        "delivery_rate_bytes_per_s",
        "integer",
        "bytes/s",
        "the last kept delivery-rate sample (tcpi_delivery_rate; 0 before the first)",
    ),
    (
        "delivery_app_limited",
        "integer",
        "flag",
        "1 if that sample was application-limited (tcpi_delivery_rate_app_limited)",
    ),
    ("bw_bytes_per_s", "integer", "bytes/s", "bbr's bandwidth estimate (TCP_CC_INFO bbr_bw)"),
    ("bbr_min_rtt_us", "integer", "us", "bbr's minimum round trip (TCP_CC_INFO)"),
    (
        "pacing_gain_x256",
        "integer",
        "1/256",
        "bbr's pacing gain times 256: 739 start-up, 320/256/192 probing, 88 draining "
        "(0 before bbr's first ACK)",
    ),
    ("cwnd_gain_x256", "integer", "1/256", "bbr's window gain times 256"),
    ("cwnd", "integer", "packets", "the congestion window (tcpi_snd_cwnd)"),
    ("unacked", "integer", "packets", "packets sent and not acknowledged (tcpi_unacked)"),
    ("notsent_bytes", "integer", "bytes", "bytes written and not sent (tcpi_notsent_bytes)"),
    ("delivered", "integer", "packets", "packets delivered so far (tcpi_delivered)"),
    ("srtt_us", "integer", "us", "the smoothed round trip (tcpi_rtt); the first: the handshake's"),
    (
        "wmem_alloc_bytes",
        "integer",
        "bytes",
        "bytes charged to the socket's transmit memory (SO_MEMINFO's SK_MEMINFO_WMEM_ALLOC)",
    ),
]
KEY = ["draw", "set", "server_sock_mode", "op"]


def readings(report: dict, keep: int) -> list[dict]:
    """The server's readings of one run's JSON report (``report["server"]``), up to response
    ``keep``, in this dataset's columns.

    >>> rep = {"server": {"cc_log_columns": ["t_us", "op", "rtt_us"],
    ...                   "cc_log": [[1.5, 0, 17], [9.0, 4, 20], [30.0, 8, 21]]}}
    >>> readings(rep, 4)
    [{'time_us': 1.5, 'op': 0, 'srtt_us': 17}, {'time_us': 9.0, 'op': 4, 'srtt_us': 20}]
    """
    server = report["server"]
    names = server["cc_log_columns"]
    out = []
    for values in server["cc_log"]:
        row = dict(zip(names, values, strict=True))
        if row["op"] > keep:
            break
        out.append({COLUMNS[k]: v for k, v in row.items()})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default="kernel6_machine4_cc_timeline")
    p.add_argument("--draws", type=int, default=5, help="passes over the runs")
    p.add_argument("--every", type=int, default=4, help="responses between readings")
    p.add_argument("--keep", type=int, default=2000, help="last response whose reading is kept")
    p.add_argument("--duration", type=float, default=0.3, help="measured s of each run")
    ns = p.parse_args(argv)
    if not 1 <= ns.draws <= 20:
        p.error(f"--draws must be in [1, 20], got {ns.draws}")
    if not 1 <= ns.every <= 1000:
        p.error(f"--every must be in [1, 1000], got {ns.every}")
    if not 10 <= ns.keep <= 100_000:
        p.error(f"--keep must be in [10, 100000], got {ns.keep}")
    if not 0.1 <= ns.duration <= 10:
        p.error(f"--duration must be in [0.1, 10] seconds, got {ns.duration}")
    if os.geteuid() != 0:
        p.exit(2, "cc_timeline.py: error: needs root (the harness's namespaces)\n")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    load_before = os.getloadavg()[0]
    rows, runs = [], []
    for draw in range(1, ns.draws + 1):
        for name, trace in SETS.items():
            for mode in modes(trace):
                cmd = [sys.executable, "-m", "models.measure", "run", "--sock", mode]
                cmd += ["--cc", "bbr", *run_args(trace), "--cc-log-every", str(ns.every)]
                cmd += ["--duration", str(ns.duration), "--warmup", "0.3"]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
                report = json.loads(out.stdout)
                got = readings(report, ns.keep)
                head = {"draw": draw, "set": name, "server_sock_mode": mode}
                rows.extend({**head, **r} for r in got)
                runs.append({**head, "iops": round(report["client"]["iops"], 1)})
                print(runs[-1], len(got), flush=True)
    load = os.getloadavg()[0]
    write_dataset(
        ns,
        start,
        ("Queue Depth bbr timeline", "tools/cc_timeline.py"),
        rows,
        FIELDS,
        KEY,
        title="bbr's state from a run's first response on, read by the server, untraced",
        description=(
            "The ownership traces' bbr runs (veth-1500, ends a CPU apart, NODELAY client; "
            "16 KiB at QD 8 behind a Nagle and a MSG_MORE server, 2 KiB at QD 64 behind a "
            "MSG_MORE and TCP_NODELAY server), "
            f"{ns.draws} draws, every run in fresh namespaces; the server read its own socket "
            f"before every {ns.every}th response (qdperf --cc-log-every), rows up to response "
            f"{ns.keep}. Runs: {json.dumps(runs)}; load average (1 min) before "
            f"{load_before:.2f}, after {load:.2f}."
        ),
        runs=runs,
        command=f"tools/cc_timeline.py --out {ns.out} --prefix {ns.prefix} "
        f"--draws {ns.draws} --every {ns.every} --keep {ns.keep} --duration {ns.duration:g}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""bbr's first responses on the loopback at QD 32 with 64 KiB responses, read by the server, untraced.

    sudo .venv/bin/python tools/window_startup.py --out data [--draws 5] [--keep 64]

The row of the eighth machine's sample that the best rules ran furthest from
(:data:`models.validation.peerwindow.ROW`: loopback, bbr, a ``TCP_NODELAY`` server and client, QD
32, 64 KiB responses; the model 3.7 times the kernel's rate). Each run is the harness's own (0.3 s
warm-up, then ``--duration`` s measured; fresh namespaces, the scheduler placing the ends as in the
sample) with the server reading its socket before every response (``qdperf server --cc-log-every
1``, as :mod:`tools.cc_timeline` reads it), and the readings up to response ``--keep`` are kept:
bbr's mode (its pacing gain), estimate and rate, the window, the packets in flight and the bytes
written but not sent. Reading every response costs the loop three ``getsockopt()`` calls per
response; only the start is kept.

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

from cc_timeline import FIELDS as TIMELINE_FIELDS  # noqa: E402
from cc_timeline import readings  # noqa: E402
from ownership_trace import write_dataset  # noqa: E402

from models.validation.peerwindow import ROW  # noqa: E402

_LINK, _SERVER, _CLIENT, _QD, _SIZE = ROW
#: The runs' shape (the row's).
RUN = [
    "--proto", "iscsi", "--sock", _SERVER, "--client-sock", _CLIENT, "--iosize", str(_SIZE),
    "--qd", str(_QD), "--link", _LINK, "--isolate", "--cc", "bbr", "--no-capture", "--json",
]  # fmt: skip

FIELDS = [
    ("draw", "integer", "passes", "which run (1, 2, ...)"),
    *[f for f in TIMELINE_FIELDS if f[0] not in ("draw", "set", "server_sock_mode")],
]
KEY = ["draw", "op"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default="kernel6_machine8_window_startup")
    p.add_argument("--draws", type=int, default=5, help="runs")
    p.add_argument("--keep", type=int, default=64, help="last response whose reading is kept")
    p.add_argument("--duration", type=float, default=0.3, help="measured s of each run")
    ns = p.parse_args(argv)
    if not 1 <= ns.draws <= 20:
        p.error(f"--draws must be in [1, 20], got {ns.draws}")
    if not 8 <= ns.keep <= 100_000:
        p.error(f"--keep must be in [8, 100000], got {ns.keep}")
    if not 0.1 <= ns.duration <= 10:
        p.error(f"--duration must be in [0.1, 10] seconds, got {ns.duration}")
    if os.geteuid() != 0:
        p.exit(2, "window_startup.py: error: needs root (the harness's namespaces)\n")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    load_before = os.getloadavg()[0]
    rows, runs = [], []
    for draw in range(1, ns.draws + 1):
        cmd = [sys.executable, "-m", "models.measure", "run", *RUN, "--cc-log-every", "1"]
        cmd += ["--duration", str(ns.duration)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
        report = json.loads(out.stdout)
        got = readings(report, ns.keep)
        rows.extend({"draw": draw, **r} for r in got)
        runs.append({"draw": draw, "iops": round(report["client"]["iops"], 1)})
        print(runs[-1], len(got), flush=True)
    load = os.getloadavg()[0]
    write_dataset(
        ns,
        start,
        ("Queue Depth window start-up", "tools/window_startup.py"),
        rows,
        FIELDS,
        KEY,
        title="bbr's first responses on the loopback at QD 32, 64 KiB, read by the server",
        description=(
            "The eighth machine's sample row furthest from the best rules (loopback in fresh "
            "namespaces, bbr, TCP_NODELAY server and client, QD 32, 64 KiB iSCSI responses), "
            f"{ns.draws} runs (0.3 s warm-up, then {ns.duration:g} s measured); the server read "
            "its own socket before every response (qdperf --cc-log-every 1), the readings up to "
            f"response {ns.keep} kept. Runs (the rate includes the readings' cost): "
            f"{json.dumps(runs)}; load average (1 min) before {load_before:.2f}, after {load:.2f}."
        ),
        runs=runs,
        command=f"tools/window_startup.py --out {ns.out} --prefix {ns.prefix} "
        f"--draws {ns.draws} --keep {ns.keep} --duration {ns.duration:g}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

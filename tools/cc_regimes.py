"""bbr's state through whole runs at two queue depths, read by the server itself, untraced.

    sudo .venv/bin/python tools/cc_regimes.py --out data [--draws 3] [--every 500]

The eighth machine's start-up probe (``models.validation.machine8.PROBE``: veth at MTU 1500, bbr, a
``TCP_NODELAY`` server, a Nagle client, 16 KiB responses) at QD 8, where the kernel keeps the fast
rate, and at QD 32, where it falls to the pacing-wait plateau. Each run is the harness's own (0.3 s
warm-up, then ``--duration`` s measured; the ends a CPU apart; fresh namespaces), with the server
reading its socket before every ``--every``-th response from the first on (``qdperf server
--cc-log-every``, as :mod:`tools.cc_timeline` does for the first responses only), so the readings
cover the warm-up and the measured window: bbr's mode, estimate and gains, the window, the flight
and the smoothed round trip. Reading every 500th response costs the loop a few ``getsockopt()``
calls per 500 operations.

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

from models.validation.machine8 import PROBE  # noqa: E402
from models.validation.regimes import DEPTHS  # noqa: E402

_LINK, _SERVER, _CLIENT, _QD, _SIZE = PROBE  # the probe's own QD is one of DEPTHS
_KIND, _MTU = _LINK.split("-")  # "veth-1500"
#: The runs' shape besides the queue depth (machine8.PROBE's).
RUN = [
    "--proto", "iscsi", "--sock", _SERVER, "--client-sock", _CLIENT, "--iosize", str(_SIZE),
    "--link", _KIND, "--mtu", _MTU, "--cc", "bbr", "--pin", "apart", "--no-capture", "--json",
]  # fmt: skip

FIELDS = [
    ("draw", "integer", "passes", "which pass over the runs (1, 2, ...)"),
    ("qd", "integer", "operations", "the run's queue depth"),
    *[f for f in TIMELINE_FIELDS if f[0] not in ("draw", "set", "server_sock_mode")],
]
KEY = ["draw", "qd", "op"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default="kernel6_machine8_cc_regimes")
    p.add_argument("--draws", type=int, default=3, help="passes over the two depths")
    p.add_argument("--every", type=int, default=500, help="responses between readings")
    p.add_argument("--duration", type=float, default=1.0, help="measured s of each run")
    ns = p.parse_args(argv)
    if not 1 <= ns.draws <= 20:
        p.error(f"--draws must be in [1, 20], got {ns.draws}")
    if not 10 <= ns.every <= 100_000:
        p.error(f"--every must be in [10, 100000], got {ns.every}")
    if not 0.1 <= ns.duration <= 10:
        p.error(f"--duration must be in [0.1, 10] seconds, got {ns.duration}")
    if os.geteuid() != 0:
        p.exit(2, "cc_regimes.py: error: needs root (the harness's namespaces)\n")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    load_before = os.getloadavg()[0]
    rows, runs = [], []
    for draw in range(1, ns.draws + 1):
        for qd in DEPTHS:
            cmd = [sys.executable, "-m", "models.measure", "run", *RUN, "--qd", str(qd)]
            cmd += ["--cc-log-every", str(ns.every), "--duration", str(ns.duration)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
            report = json.loads(out.stdout)
            got = readings(report, 10**9)
            rows.extend({"draw": draw, "qd": qd, **r} for r in got)
            runs.append({"draw": draw, "qd": qd, "iops": round(report["client"]["iops"], 1)})
            print(runs[-1], len(got), flush=True)
    load = os.getloadavg()[0]
    write_dataset(
        ns,
        start,
        ("Queue Depth bbr regimes", "tools/cc_regimes.py"),
        rows,
        FIELDS,
        KEY,
        title="bbr's state through whole runs at QD 8 and QD 32, read by the server, untraced",
        description=(
            "The eighth machine's start-up probe (veth-1500, bbr, ends a CPU apart, a TCP_NODELAY "
            "server and a Nagle client, 16 KiB responses) at QD 8 and QD 32, "
            f"{ns.draws} draws, every run in fresh namespaces (0.3 s warm-up, then "
            f"{ns.duration:g} s measured); the server read its own socket before every "
            f"{ns.every}th response from the first on (qdperf --cc-log-every). Runs: "
            f"{json.dumps(runs)}; load average (1 min) before {load_before:.2f}, after {load:.2f}."
        ),
        runs=runs,
        command=f"tools/cc_regimes.py --out {ns.out} --prefix {ns.prefix} "
        f"--draws {ns.draws} --every {ns.every} --duration {ns.duration:g}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

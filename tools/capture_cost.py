"""Measure what a tcpdump capture costs Flory's exchange, with and without it, run by run.

    sudo .venv/bin/python tools/capture_cost.py --out data --prefix kernel6_machine7_capture_cost

Until 2026-12-03 the Flory sweep (``python -m models.measure sweep --plan flory``) captured every
run with tcpdump when it could, for its table's spread columns, and took the rates from the same
captured run; the simulator, which has no capture in it, is held to those rates.  This tool runs
Flory's exchange (QD 1, 8-byte request, 8-byte descriptor and the payload) at the payloads of
Flory's thresholds (``models.validation.flory.FLORY_PAIRS``) behind a Nagle and a ``TCP_NODELAY``
server, the two ends a CPU apart as the sweep's runs were, each once with the capture and once
without, interleaved within each repeat so that a drift of the machine touches both alike.
Writes ``PREFIX.csv`` (one row per run) and its sidecar ``PREFIX.json`` with the machine's
settings.  Needs root (namespaces, tcpdump) and two CPUs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from placement_sweep import each_config, run_tool  # noqa: E402

from models.measure.netns import Link  # noqa: E402
from models.measure.plan import WARMUP_S  # noqa: E402
from models.measure.runner import RunSpec, run_one  # noqa: E402
from models.validation.flory import FLORY_PAIRS  # noqa: E402

#: The server's socket modes measured: Flory's Nagle server and the NODELAY contrast.
MODES = ("nagle", "nodelay")
#: (link, payload bytes) of every run: both sides of each of Flory's thresholds.
POINTS = tuple(sorted({(link, n) for link, a, b in FLORY_PAIRS for n in (a, b)}))

FIELDS = [
    ("sweep", "integer", "sweeps", "the sweep the run belongs to, from 0 (see the sidecar)"),
    ("link", "string", None, "the link, as the field sweep labels it"),
    ("payload_bytes", "integer", "bytes", "payload bytes per response (Flory's N)"),
    ("sock_mode", "string", None, "server socket mode: nagle or nodelay"),
    ("captured", "boolean", None, "whether tcpdump captured the run"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("iops", "number", "1/s", "exchanges completed per second of the measured window"),
    ("exchange_p50_us", "number", "us", "median exchange time"),
    ("capture_tool", "string", None, "tcpdump, or none"),
    ("other_cpu_pct", "number", "%", "CPU time other processes used during the run"),
    ("load_1min", "number", "tasks", "1-minute load average before the run"),
]
KEY = ["sweep", "link", "payload_bytes", "sock_mode", "captured", "repeat"]


def configs(links: list[str]) -> list[dict]:
    """Every (link, payload, mode, capture) of a repeat, the capture alternating innermost."""
    return [
        {"link": link, "payload_bytes": n, "sock_mode": mode, "captured": cap}
        for link, n in POINTS
        if link in links
        for mode in MODES
        for cap in (True, False)
    ]


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number`` on ``links``, one row each (see :data:`FIELDS`)."""

    def run(cfg: dict, link: Link, rep: int) -> list[dict]:
        spec = RunSpec(
            "flory",
            cfg["sock_mode"],
            1,
            cfg["payload_bytes"],
            duration_s=duration_s,
            warmup_s=WARMUP_S,
            capture=cfg["captured"],
            pin="apart",
        )
        res = run_one(spec, link)
        row = {
            "sweep": number,
            **cfg,
            "repeat": rep,
            "iops": round(res.client["iops"], 1),
            "exchange_p50_us": round(res.client["lat_p50_us"], 2),
            "capture_tool": res.capture_tool,
            "other_cpu_pct": round(res.other_cpu_pct, 1),
            "load_1min": res.load_before[0],
        }
        print(
            f"{cfg['link']:9s} {cfg['payload_bytes']:6d} B {cfg['sock_mode']:7s} "
            f"captured {cfg['captured']!s:5s} repeat {rep}: {row['iops']:,.0f}/s, "
            f"p50 {row['exchange_p50_us']} us",
            flush=True,
        )
        return [row]

    return each_config(links, repeats, configs(links), run)


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    return (
        "Flory's exchange at QD 1 at the payloads of Flory's thresholds, behind a Nagle and a "
        "TCP_NODELAY server, the two ends a CPU apart, each run once with a tcpdump capture on "
        f"the server's side and once without; {ns.repeats} repeats, interleaved, per sweep; "
        f"{sweeps} sweep(s), each with its start time and the machine's settings under "
        "measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="capture_cost.py",
        defaults=("kernel6_capture_cost", 3, 1.0),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="What a tcpdump capture costs Flory's exchange",
        describe=_describe,
        source="Queue Depth capture cost",
        links=("loopback", "veth-1500"),
    )


if __name__ == "__main__":
    raise SystemExit(main())

"""What a TCP wake-up costs the thread that wakes it, after each idle gap, measured ``--runs`` times.

    .venv/bin/python tools/tcp_waker.py --out data [--prefix kernel6_machine6_tcp_waker] [--runs 5]

Each run is one ``python -m models.measure costs`` (about 21 s on two CPUs; no root needed).  Kept
per run and idle gap (2 us to 1.28 ms with the waker spinning through the gap, 2.5 to 40 ms with
it asleep through it): the medians of the waker's ``send()`` with the peer asleep in ``poll()``
and with it spinning on a non-blocking peek (no wake-up), the one-way latency of both, and, from
the same run, the two readings host profiles took before this was measured: the waker's pipe
``write()`` after the same gap (``cross_by_gap``, ``cross_by_long_gap``: the waker spinning, and
for a long gap asleep as well) and the ping-pong's waker cost (``pingpong``'s ``waker_us``) at its
idle gap.  :mod:`models.validation.tcp_waker` compares them.  Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ownership_trace import write_dataset  # noqa: E402

from models.measure import costs  # noqa: E402
from models.validation import tcp_waker as TW  # noqa: E402

FIELDS = [
    ("run", "integer", "runs", "the costs run, from 0 (its settings under measurement.runs)"),
    ("gap_us", "number", "us", "the sleeper's idle gap before the wake-up (varied +-25 or 50 %)"),
    (
        "waker_idle",
        "string",
        "",
        "spin: the waker spun through the gap (tcp_by_gap); sleep: it slept (tcp_by_long_gap)",
    ),
    ("samples", "integer", "samples", "wake-ups per mode of the peer (asleep, spinning)"),
    ("lat_median_us", "number", "us", "send() to the peer's poll() return, the peer asleep"),
    (
        "spin_peer_lat_median_us",
        "number",
        "us",
        "send() to the spinning peer's peek seeing the byte (no wake-up)",
    ),
    ("waker_median_us", "number", "us", "the waker's send(), wall clock, the peer asleep"),
    (
        "spin_peer_waker_median_us",
        "number",
        "us",
        "the waker's send(), wall clock, the peer spinning (interleaved with the asleep samples)",
    ),
    (
        "pipe_waker_median_us",
        "number",
        "us",
        "the same run's pipe write() after the same gap, the waker spinning (cross_by_gap or "
        "cross_by_long_gap)",
    ),
    (
        "pipe_asleep_waker_median_us",
        "number",
        "us",
        "the same, the waker asleep through the gap too (long gaps only; empty otherwise)",
    ),
    (
        "pingpong_waker_us",
        "number",
        "us",
        "the same run's ping-pong: the requester's send() CPU with the responder in poll() less "
        "spinning",
    ),
    ("pingpong_idle_us", "number", "us", "the idle gap each side of that ping-pong sees"),
]
KEY = ["run", "gap_us"]


def rows_of(run: int, wake: dict[str, Any]) -> list[dict[str, Any]]:
    """One costs run's ``wake`` section (:func:`models.measure.costs.summarise`) as dataset rows;
    a clear error if the run lacks a part (one CPU, or a benchmark from before the TCP waker)."""
    pp = wake.get("pingpong") or {}
    if "waker_us" not in pp or not wake.get("tcp_by_long_gap"):
        raise SystemExit("tcp_waker.py: this costs run has no TCP waker timing (one CPU?)")
    out = []
    for tcp_name, pipe_name, idle in (
        ("tcp_by_gap", "cross_by_gap", "spin"),
        ("tcp_by_long_gap", "cross_by_long_gap", "sleep"),
    ):
        pipe = {g["gap_us"]: g for g in wake[pipe_name]}
        for g in wake[tcp_name]:
            p = pipe[g["gap_us"]]
            out.append(
                {
                    "run": run,
                    "gap_us": g["gap_us"],
                    "waker_idle": idle,
                    "samples": g["samples"],
                    "lat_median_us": round(g["median_us"], 3),
                    "spin_peer_lat_median_us": round(g["spin_peer_median_us"], 3),
                    "waker_median_us": round(g["waker_median_us"], 3),
                    "spin_peer_waker_median_us": round(g["spin_peer_waker_median_us"], 3),
                    "pipe_waker_median_us": round(p["waker_median_us"], 3),
                    "pipe_asleep_waker_median_us": round(p["asleep_waker_median_us"], 3)
                    if "asleep_waker_median_us" in p
                    else "",
                    "pingpong_waker_us": round(pp["waker_us"], 3),
                    "pingpong_idle_us": round(pp["idle_us"], 3),
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default=TW.DATASET)
    p.add_argument("--runs", type=int, default=5, help="costs runs (1-20)")
    ns = p.parse_args(argv)
    if not 1 <= ns.runs <= 20:
        p.error(f"--runs must be in [1, 20], got {ns.runs}")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows: list[dict[str, Any]] = []
    runs = {}
    for i in range(ns.runs):
        result = costs.run_costs()
        rows += rows_of(i, result["costs"]["wake"])
        runs[str(i)] = result["settings"]
        print(f"run {i}: done", flush=True)
    write_dataset(
        ns,
        start,
        ("Queue Depth TCP waker timing", "tools/tcp_waker.py"),
        rows,
        FIELDS,
        KEY,
        title="What a TCP wake-up costs its waker after each idle gap, with the pipe's readings",
        description=(
            f"{ns.runs} run(s) of python -m models.measure costs on one machine, one after "
            "another: per run and idle gap of the sleeper's CPU, the medians of the waker's "
            "send() of 8 bytes on a loopback TCP connection (TCP_NODELAY; waker and sleeper "
            "pinned to two CPUs) with the sleeper asleep in poll() and, interleaved, with it "
            "spinning on a non-blocking peek, and the same run's pipe write() after the same gap "
            "and ping-pong waker cost; each run's settings (kernel, idle driver, load) under "
            "measurement.runs."
        ),
        runs=runs,
        command=f"tools/tcp_waker.py --out {ns.out} --prefix {ns.prefix} --runs {ns.runs}",
        # the asleep pipe write() is timed at the long gaps only: empty on the short gaps' rows
        optional=("pipe_asleep_waker_median_us",),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

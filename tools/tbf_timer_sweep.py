"""Measure how late a ``tbf`` rate limit's watchdog timer releases a waiting frame.

    sudo .venv/bin/python tools/tbf_timer_sweep.py --out data --prefix kernel6_tbf_timer

For each rate of ``--rates`` (bits per second) and each state of the sending CPU (``idle``: the
sender sleeps once its burst is in the qdisc; ``spin``: a busy process of the lowest priority
keeps that CPU out of idle), ``--repeats`` runs of :func:`models.measure.tbftimer.measure`:
bursts of full frames at MTU 1500 through ``tbf`` on a veth pair, with a bucket of two frames as
the field sweep's rate limits have, the sender pinned to one CPU and the receiver to the other.
The rates span the wait for tokens (a frame's time at the rate less what was left over), from
about 25 us to 600 us; faster rates cannot be measured this way, because one ``send()`` on
this path costs the sending CPU more than a frame's time at the rate, so no queue forms.  The
configurations are interleaved within each repeat.  Writes ``PREFIX.csv`` (one row per frame
that waited for the watchdog) and its sidecar ``PREFIX.json`` with the machine's settings.
Needs root (the namespaces) and two CPUs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from placement_sweep import machine, write_dataset  # noqa: E402

from models.measure import tbftimer  # noqa: E402

#: Rates measured, bits per second (a full frame's time: 40 us to 606 us).
RATES = (300e6, 200e6, 100e6, 50e6, 20e6)
#: States of the sending CPU while the watchdog waits.
STATES = ("idle", "spin")
#: Frames per burst and bursts per run.
FRAMES, BURSTS = 60, 8
#: The frames: full frames at MTU 1500 (IP packet + Ethernet header), bytes.
FRAME_BYTES = tbftimer.FRAME_BYTES_RANGE[1]

#: (name, type, unit, description) of each column.
FIELDS = [
    ("sweep", "integer", "sweeps", "the sweep the run belongs to, from 0 (see the sidecar)"),
    ("rate_bits_per_s", "number", "bit/s", "the tbf rate"),
    ("cpu_state", "string", None, "the sending CPU: idle (sender asleep) or spin (kept busy)"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("burst", "integer", "bursts", "the burst within the run, from 0"),
    ("frame", "integer", "frames", "the frame's place among the burst's waiting frames, from 0"),
    ("wait_us", "number", "us", "from the previous departure until the frame's tokens sufficed"),
    ("late_us", "number", "us", "from then until the frame left: the watchdog's lateness"),
]
KEY = ["sweep", "rate_bits_per_s", "cpu_state", "repeat", "burst", "frame"]
#: What the sidecar says about other load: the rows cannot show it.
OTHERS = "the rows do not record other load; a busy CPU would show as scattered lateness"


def sweep(number: int, rates: list[float], repeats: int) -> list[dict]:
    """Every rate and CPU state ``repeats`` times, interleaved; a row per waiting frame."""
    rows: list[dict] = []
    for rep in range(repeats):
        for rate in rates:
            for state in STATES:
                res = tbftimer.measure(
                    rate, FRAME_BYTES, frames=FRAMES, bursts=BURSTS, spin=state == "spin"
                )
                n = 0
                for b in res["bursts"]:
                    for k, f in enumerate(b["frames"]):
                        rows.append(
                            {
                                "sweep": number,
                                "rate_bits_per_s": rate,
                                "cpu_state": state,
                                "repeat": rep,
                                "burst": b["burst"],
                                "frame": k,
                                "wait_us": round(f["wait_ns"] / 1e3, 3),  # ns -> us
                                "late_us": round(f["late_ns"] / 1e3, 3),
                            }
                        )
                        n += 1
                print(f"{rate / 1e6:5.0f} Mb/s {state:4s} repeat {rep}: {n} waiting frames")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default="kernel6_tbf_timer")
    p.add_argument("--repeats", type=int, default=2, help="runs of each configuration, 1..10")
    p.add_argument(
        "--rates",
        default=",".join(f"{r:g}" for r in RATES),
        help="comma-separated tbf rates, bits/s, each 1e6..300e6",
    )
    ns = p.parse_args(argv)
    if not 1 <= ns.repeats <= 10:
        p.error(f"--repeats must be 1..10, got {ns.repeats}")
    try:
        rates = [float(r) for r in ns.rates.split(",")]
    except ValueError:
        p.error(f"--rates must be numbers, got {ns.rates!r}")
    if not rates or any(not 1e6 <= r <= 300e6 for r in rates):
        p.error(f"--rates must each be 1e6..300e6 bits/s, got {ns.rates!r}")
    if len(os.sched_getaffinity(0)) < 2:
        p.error("needs two CPUs (the sender on one, the receiver on the other)")
    if os.geteuid() != 0:
        p.error("needs root (it creates network namespaces and a veth pair)")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    command = (
        f"tools/tbf_timer_sweep.py --out {ns.out} --prefix {ns.prefix} "
        f"--repeats {ns.repeats} --rates {ns.rates}"
    )
    this = {"sweep": 0, "command": command, "machine": machine(start)}
    rows = sweep(0, rates, ns.repeats)
    path = write_dataset(
        ns.out,
        ns.prefix,
        FIELDS,
        KEY,
        rows,
        [this],
        title="How late a tbf rate limit's watchdog timer releases a waiting frame",
        description=(
            "Bursts of full frames at MTU 1500 through a tbf qdisc (bucket of two frames) on a "
            "veth pair, at rates of "
            + ", ".join(f"{r / 1e6:g}" for r in rates)
            + " Mb/s, the sender pinned to one CPU, asleep (idle) or with a lowest-priority busy "
            f"process on its CPU (spin), the receiver on the other; {FRAMES} frames a burst, "
            f"{BURSTS} bursts a run, {ns.repeats} runs of each configuration, interleaved.  A row "
            "per frame that waited for tokens and left after the sender's last send(): the wait "
            "and the lateness replayed from the frames' kernel receive times "
            "(models.measure.tbftimer.watchdog_lateness)."
        ),
        source=("Queue Depth tbf timer sweep", "tools/tbf_timer_sweep.py"),
        others=OTHERS,
    )
    print(f"wrote {path} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

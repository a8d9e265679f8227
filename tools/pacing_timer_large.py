"""Count bbr's pacing timer behind 64 KiB loopback servers, in the kernel.

    sudo .venv/bin/python tools/pacing_timer_large.py --out data --repeats 2

The configurations are the 64 KiB loopback runs under bbr of the seeded pinned sample
(:func:`models.validation.large_timers.configs`: servers with ``TCP_NODELAY``, Nagle and
``MSG_MORE``, clients of both kinds, QD 1-64), on the machine it runs on, each counted as
``tools/pacing_timer_sweep.py`` counts them (``perf stat`` on the ``timer:hrtimer_start`` and
``timer:hrtimer_expire_entry`` events of ``tcp_pace_kick``, bbr on both sockets, each end on a CPU
of its own, the loopback in a namespace of its own), into ``PREFIX.csv`` and its sidecar
``PREFIX.json`` with the machine's settings (the same columns as that tool's dataset).  Needs root,
``perf`` and two CPUs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from pacing_timer_sweep import FIELDS, KEY, _run, function_address  # noqa: E402
from placement_sweep import LINKS, run_tool  # noqa: E402

from models.measure.netns import Link  # noqa: E402
from models.validation import large_timers as LT  # noqa: E402


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number``: every configuration of :func:`LT.configs`, ``repeats``
    times, interleaved; a clear exit before any run without perf or root."""
    if shutil.which("perf") is None or os.geteuid() != 0:
        raise SystemExit("pacing_timer_large.py: needs perf and root (the tracepoints)")
    address = function_address()
    rows = []
    for label in links:
        with Link(LINKS[label]) as link:
            for rep in range(repeats):
                for cfg in LT.configs():
                    if cfg["link"] == label:
                        rows.append(_run(number, cfg, link, rep, duration_s, address))
    return rows


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    return (
        "Harness runs of the iSCSI-like loop in every configuration of the fourth machine's "
        "pinned sample (kernel6_machine4_apart) with 64 KiB responses on the loopback under bbr "
        "(TCP_NODELAY, Nagle and MSG_MORE servers; Nagle and TCP_NODELAY clients; QD 1-64), the "
        "loopback in a namespace of its own, bbr on both sockets, each end pinned to a CPU of "
        "its own, counted with perf stat: the pacing timer (tcp_pace_kick) armed and fired, "
        f"system-wide, over each whole run; {ns.repeats} repeat(s) per sweep, interleaved; "
        f"{sweeps} sweep(s), each with its start time and the machine's settings under "
        "measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="pacing_timer_large.py",
        defaults=(LT.DATASET, 2, 1.0),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="bbr's pacing timer behind 64 KiB loopback servers, per operation",
        describe=_describe,
        source="Queue Depth pacing timer sweep",
        links=("loopback",),
    )


if __name__ == "__main__":
    raise SystemExit(main())

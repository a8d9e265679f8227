"""Measure the calibration's busy run on this machine and refit host profiles with it.

Profiles made before ``calibrate`` ran the busy run (:data:`models.measure.calruns.BUSY_RUNS`)
were fitted to its eight runs alone (:data:`~models.measure.calruns.RUNS`), which have one kind of
run whose server's CPU sets the rate (``TCP_NODELAY`` at QD 8, two segments per operation): such a
fit cannot tell the work per message (``proc_s``) from the cost per segment (``gso_cpu_s``), and
refits of the third machine's profiles landed in either of two basins of nearly equal loss, the
kept one with the cost in the work per message where the kernel's busy runs put it in the segments
(validation set ``ch9.busylaw``).  The busy run, about a third of a segment per operation, tells
them apart.  This tool, on the machine the profiles were made on (the kernel release must be each
profile's) and with the machine otherwise idle (a busy run's rate is the CPU's: any other load
lowers it):

1. runs the busy runs ``--runs`` times on the loopback, as ``calibrate`` does
   (:func:`~models.measure.calruns.busy_repeats`; every repeat is kept in
   ``measured.busy_runs``), or takes the repeats another profile recorded (``--repeats-from``:
   refit without measuring again);
2. refits each profile from its own records (:func:`measure_socket_wake.rebuild`): its recorded
   microbenchmarks, its training rows with the busy run's median rate in place of any earlier
   one (:func:`~models.measure.calruns.busy_rows`), the path held where its socket wake-up put it;
   with the busy run the fit can also tell a thread's CPU per wake-up (``wake_cpu_s``, what a
   QD-1 round trip pays beyond the measured wake-up latency) from the work per message, so it
   fits that too (``--no-wake-cpu``: not).

    .venv/bin/python tools/measure_busy_run.py --profile data/hosts/kernel6_machine3.json \\
        [--profile ...] [--runs 5 | --repeats-from PROFILE] [--write]

Without ``--write`` it prints what it would write.  About 1 s a run, then about 15 s a refit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from measure_socket_wake import rebuild, refit_all
from measure_waker import profile_args, same_kernel

from models.measure.calruns import (
    BUSY_KEYS,
    BUSY_REPEATS,
    busy_record,
    busy_repeats,
    busy_rows,
)


def update(
    d: dict[str, Any],
    settings: dict[str, Any],
    repeats: list[dict[str, Any]],
    fit_wake_cpu: bool = True,
) -> dict[str, Any]:
    """The profile ``d`` refitted with the busy runs of ``repeats`` (and a thread's CPU per
    wake-up, ``fit_wake_cpu``); refuses a profile of another kernel than ``settings``' or one
    without a recorded socket wake-up (its held path)."""
    import copy  # noqa: PLC0415

    same_kernel(d, settings)
    socket = (d.get("measured") or {}).get("socket_wake")
    if not socket or "min_rtt_us" not in socket:
        raise ValueError("the profile has no socket wake-up: run tools/measure_socket_wake.py")
    measured = copy.deepcopy(d["measured"])
    measured["busy_runs"] = busy_record(settings, repeats)  # as calibrate records them
    rows = [{**r, "min_rtt_us": socket["min_rtt_us"]} for r in busy_rows(repeats)]
    note = (
        f" (refitted {settings['date']} by tools/measure_busy_run.py: the busy run's rate added "
        f"to the eight runs)"
    )
    fields = ("proc_s", "gso_cpu_s", "wake_cpu_s")
    return rebuild(d, measured, float(socket["min_rtt_us"]), fields, note, rows, fit_wake_cpu)


def recorded(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The busy runs a profile recorded (``measured.busy_runs``): the settings they were measured
    under (date, kernel, load) and their repeats."""
    d = json.loads(path.read_text())
    busy = (d.get("measured") or {}).get("busy_runs")
    if not busy:
        raise ValueError(f"--repeats-from: {path} records no busy runs")
    settings = {"date": busy["date"], "kernel": {"release": busy["kernel"]}, "load": busy["load"]}
    return settings, busy["repeats"]


def main(argv: list[str] | None = None) -> list[dict]:
    def more(p):
        p.add_argument(
            "--repeats-from",
            type=Path,
            help="take the busy runs this profile recorded instead of measuring them",
        )

    ns, profiles = profile_args(
        __doc__,
        argv,
        runs=BUSY_REPEATS,
        flags={"--no-wake-cpu": "do not fit a thread's CPU per wake-up"},
        runs_help="repeats of the busy run (1..50)",
        more=more,
    )
    wake_cpu = not ns.no_wake_cpu
    if ns.repeats_from is not None:
        if not ns.repeats_from.is_file():
            sys.exit(f"--repeats-from: no such file: {ns.repeats_from}")
        settings, repeats = recorded(ns.repeats_from)
    else:
        from models.measure.costs import settings as machine_settings  # noqa: PLC0415

        settings = machine_settings()
        repeats = busy_repeats(ns.runs)
    for row in busy_rows(repeats):
        each = " ".join(
            f"{r['lat_p50_us']:.1f}" for r in repeats if all(r[k] == row[k] for k in BUSY_KEYS)
        )
        print(
            f"busy run {row['sock_mode']} QD {row['qd']} {row['iosize_bytes']} B: median "
            f"{row['lat_p50_us']:.1f} us, {row['iops'] / 1e3:.1f} k ops/s (repeats' medians: "
            f"{each} us)"
        )
    fields = ("proc_s", "gso_cpu_s", "wake_cpu_s")
    return refit_all(profiles, lambda d: update(d, settings, repeats, wake_cpu), fields, ns.write)


if __name__ == "__main__":
    main()

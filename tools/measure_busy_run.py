"""Measure the calibration's busy run on this machine and refit host profiles with it.

The eight calibration runs (:data:`models.measure.calruns.RUNS`) have one kind of run whose
server's CPU sets the rate (``TCP_NODELAY`` at QD 8, two segments per operation), so a fit cannot
tell the work per message (``proc_s``) from the cost per segment (``gso_cpu_s``): refits of the
third machine's profiles land in either of two basins of nearly equal loss, and the kept one puts
the cost into the work per message where the kernel's busy runs put it into the segments
(validation set ``ch9.busylaw``).  :data:`~models.measure.calruns.BUSY_RUNS` adds a run with about
a third of a segment per operation whose server's CPU sets the rate too.  This tool, on the
machine the profiles were made on (the kernel release must be each profile's) and with the machine
otherwise idle (a busy run's rate is the CPU's: any other load lowers it):

1. runs the busy runs ``--runs`` times on the loopback, as ``calibrate`` runs its eight, and takes
   each one's median operation time over the repeats (every repeat's kept in
   ``measured.busy_runs``);
2. refits each profile from its own records (:func:`measure_socket_wake.rebuild`): its recorded
   microbenchmarks, its training rows and the busy runs' medians, the path held where its socket
   wake-up put it; with the busy run the fit can also tell a thread's CPU per wake-up
   (``wake_cpu_s``, what a QD-1 round trip pays beyond the measured wake-up latency) from the
   work per message, so it fits that too (``--no-wake-cpu``: not).

    .venv/bin/python tools/measure_busy_run.py --profile data/hosts/kernel6_machine3.json \\
        [--profile ...] [--runs 5] [--write]

Without ``--write`` it prints what it would write.  About 1 s a run, then about 10 s a refit.
"""

from __future__ import annotations

import statistics
from typing import Any

from measure_socket_wake import rebuild, refit_all
from measure_waker import profile_args, same_kernel

from models.measure.calruns import BUSY_RUNS, sweep_rows

#: The row keys a repeat keeps (besides its median operation time and rate).
KEYS = ("sock_mode", "client_sock_mode", "qd", "iosize_bytes")


def measure(n: int) -> list[dict[str, Any]]:
    """``n`` repeats of :data:`BUSY_RUNS`: one record per run and repeat (:data:`KEYS`, the
    median operation time ``lat_p50_us``, ``iops``, ``stalled_pct``, the server's data segments
    per operation and its median busy period)."""
    out = []
    for k in range(n):
        for row in sweep_rows(runs=BUSY_RUNS):
            out.append(
                {
                    "repeat": k,
                    **{key: row[key] for key in KEYS},
                    **{
                        key: float(row[key])
                        for key in (
                            "lat_p50_us",
                            "iops",
                            "stalled_pct",
                            "server_data_segments_per_op",
                            "mean_busy_count",
                        )
                    },
                }
            )
    return out


def medians(repeats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One training row per busy run: the median over its repeats of the operation time, the
    largest stalled share.

    >>> reps = [{"sock_mode": "more", "client_sock_mode": "nagle", "qd": 64, "iosize_bytes": 512,
    ...          "lat_p50_us": x, "stalled_pct": 0.0} for x in (180.0, 176.0, 190.0)]
    >>> medians(reps)[0]["lat_p50_us"], medians(reps)[0]["repeats"]
    (180.0, 3)
    """
    out = []
    for run in sorted({tuple(r[k] for k in KEYS) for r in repeats}):
        each = [r for r in repeats if tuple(r[k] for k in KEYS) == run]
        out.append(
            {
                **dict(zip(KEYS, run)),
                "link": "loopback",
                "mtu_bytes": 65536,
                "rate_limit_bits_per_s": None,
                "lat_p50_us": statistics.median(r["lat_p50_us"] for r in each),
                "stalled_pct": max(r["stalled_pct"] for r in each),
                "repeats": len(each),
            }
        )
    return out


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

    release = same_kernel(d, settings)
    socket = (d.get("measured") or {}).get("socket_wake")
    if not socket or "min_rtt_us" not in socket:
        raise ValueError("the profile has no socket wake-up: run tools/measure_socket_wake.py")
    measured = copy.deepcopy(d["measured"])
    measured["busy_runs"] = {
        "date": settings["date"],
        "kernel": release,
        "load": settings.get("load"),
        "repeats": repeats,
    }
    rows = [{**r, "min_rtt_us": socket["min_rtt_us"]} for r in medians(repeats)]
    note = (
        f" (refitted {settings['date']} by tools/measure_busy_run.py: a busy run added to the "
        f"eight)"
    )
    fields = ("proc_s", "gso_cpu_s", "wake_cpu_s")
    return rebuild(d, measured, float(socket["min_rtt_us"]), fields, note, rows, fit_wake_cpu)


def main(argv: list[str] | None = None) -> list[dict]:
    from models.measure.costs import settings as machine_settings  # noqa: PLC0415

    ns, profiles = profile_args(
        __doc__, argv, flags={"--no-wake-cpu": "do not fit a thread's CPU per wake-up"}
    )
    wake_cpu = not ns.no_wake_cpu
    settings = machine_settings()
    repeats = measure(ns.runs)
    for row in medians(repeats):
        each = " ".join(
            f"{r['lat_p50_us']:.1f}" for r in repeats if all(r[k] == row[k] for k in KEYS)
        )
        print(
            f"busy run {row['sock_mode']} QD {row['qd']} {row['iosize_bytes']} B: median "
            f"{row['lat_p50_us']:.1f} us (repeats: {each})"
        )
    fields = ("proc_s", "gso_cpu_s", "wake_cpu_s")
    return refit_all(profiles, lambda d: update(d, settings, repeats, wake_cpu), fields, ns.write)


if __name__ == "__main__":
    main()

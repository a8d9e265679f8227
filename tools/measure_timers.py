"""Add the pacing timer's two measured costs to host profiles made before they were measured.

A profile made before 2026-11-29 has no ``timer_arm_cpu_s`` (arming a timer that becomes the CPU's
next event) and no ``timer_fire_cpu_s`` (that timer's interrupt), the costs of bbr's pacing timer.
Both are microbenchmarks of ``python -m models.measure costs`` (``timer_arm``, ``timer_fire``) and
need nothing fitted: this tool runs it ``--runs`` times on the same machine (the kernel release
must be each profile's), takes the median of each cost over the runs
(:func:`models.measure.profile.timer_costs` of each run), and writes both into every profile
given, with every run's values in ``measured.timers``.  About 11 s a run:

    .venv/bin/python tools/measure_timers.py --profile data/hosts/kernel6_machine3.json \\
        [--profile ...] [--runs 5] [--write]

Without ``--write`` it prints what it would write.  Everything else in a profile is left as it was:
only bbr's pacing pays these costs, and the eight loopback runs of a ``calibrate`` fit seldom arm
the timer (the pacing timer sweep, ``data/kernel6_machine3_pacing_timer``, counts under 0.04 per
operation on the loopback up to 16 KiB).
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from measure_waker import profile_args, same_kernel, save

from models.measure import costs
from models.measure.profile import TIMER_FIELDS, timer_costs
from models.sim import hostprofile

#: The two fields, in the order printed.
FIELDS = TIMER_FIELDS


def measure(n: int) -> tuple[dict[str, Any], list[dict[str, float]]]:
    """``n`` costs runs: the machine's settings at the start and each run's timer costs."""
    first = None
    runs = []
    for _ in range(n):
        res = costs.run_costs()
        first = first or res["settings"]
        runs.append(timer_costs(res["costs"]))
    return first, runs


def update(d: dict[str, Any], settings: dict[str, Any], runs: list[dict[str, float]]) -> dict:
    """The profile ``d`` with the median over ``runs`` of each timer cost, its provenance, and the
    runs in ``measured.timers``; refuses a profile of another kernel than ``settings``', or runs
    that did not all give both costs.

    >>> d = {"schema": hostprofile.SCHEMA, "version": 1, "host": {}, "provenance": {},
    ...      "machine": {"kernel": "6.1-x", "config_hz": 250, "congestion_control": "bbr",
    ...                  "date": "2026-01-01"}, "measured": {}}
    >>> st = {"kernel": {"release": "6.1-x"}, "date": "2026-11-29", "load": [0.1, 0.1, 0.1]}
    >>> runs = [{"timer_arm_cpu_s": a * 1e-6, "timer_fire_cpu_s": f * 1e-6}
    ...         for a, f in ((5.8, 12.5), (6.0, 12.1), (5.7, 12.9))]
    >>> out = update(d, st, runs)
    >>> [round(out["host"][k] * 1e6, 2) for k in FIELDS]
    [5.8, 12.5]
    """
    release = same_kernel(d, settings)
    if not runs or any(set(r) != set(FIELDS) for r in runs):
        raise ValueError("runs: every costs run must give both timer costs")
    d = json.loads(json.dumps(d))  # a copy
    date = settings["date"]
    d["measured"]["timers"] = {
        "date": date,
        "kernel": release,
        "load": settings.get("load"),
        **{f: [r[f] for r in runs] for f in FIELDS},
    }
    for f in FIELDS:
        d["host"][f] = statistics.median(r[f] for r in runs)
        d["provenance"][f] = (
            f"measured later ({date}, same kernel, tools/measure_timers.py): the median over "
            f"{len(runs)} runs of python -m models.measure costs ("
            + ("timer_arm: arming a timer that becomes the CPU's next event less one that "
               "does not" if f == "timer_arm_cpu_s" else
               "timer_fire: the longest pause of a thread spinning on the clock while its "
               "timer fires, less the longest without a timer")
            + "; measured.timers keeps every run's)"
        )  # fmt: skip
    hostprofile.validate(d)
    return d


def main(argv: list[str] | None = None) -> list[dict]:
    ns, profiles = profile_args(__doc__, argv)
    settings, runs = measure(ns.runs)
    outs = []
    for path, d in profiles:
        out = update(d, settings, runs)
        outs.append(out)
        for f in FIELDS:
            each = " ".join(f"{r[f] * 1e6:.2f}" for r in runs)  # s -> us
            print(f"{path.name}: {f} {out['host'][f] * 1e6:.2f} us (runs: {each})")
        if ns.write:
            save(path, out)
    return outs


if __name__ == "__main__":
    main()

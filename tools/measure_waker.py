"""Bring a host profile up to date with the two wake-up mechanisms added after it was made.

A profile made before 2026-11-29 has no ``timer_spread_s`` (how late a delayed-ACK timer on an
idle CPU may fire) and no ``waker_curve_s`` (what waking a thread on an idle CPU adds to the
``send()`` that wakes it).  The first comes from the profile's own records (the wake-up
benchmark's long gaps, :func:`models.measure.wakeups.timer_spread`).  The second needs the
waker's ``write()`` timed, which older benchmarks did not do: this tool runs
``python -m models.measure costs`` ``--runs`` times on the same machine (the kernel release must
be the profile's), keeps each run's waker medians per idle gap, takes the median over the runs
per gap and turns it into the curve (:func:`models.measure.wakeups.waker_curve`).  One run's
medians after the long gaps come from 50 samples and move by several microseconds from run to
run, so the runs are kept beside the curve (``measured.waker``).  About 7 s a run:

    .venv/bin/python tools/measure_waker.py --profile data/hosts/kernel6_machine3.json \\
        [--runs 8] [--write]

Without ``--write`` it prints what it would write.  Everything else in the profile is left as it
was: the waker's cost is paid only by a ``send()`` that finds the peer's thread asleep (a stall's
restart, an idle loop), which none of a ``calibrate`` fit's eight runs does.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from models.measure import costs
from models.measure.wakeups import timer_spread, waker_curve
from models.sim import hostprofile

#: The wake-up benchmark's gap lists whose waker medians are combined.
GAP_LISTS = ("cross_by_gap", "cross_by_long_gap")


#: The waker's medians kept per gap: with the waker spinning through the gap, and (long gaps, from
#: 2026-11-29) with it asleep through the gap too.
WAKER_KEYS = ("waker_median_us", "asleep_waker_median_us")


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per gap list and gap, the median over ``runs`` (each a costs run's ``wake`` section) of each
    of the waker's medians (:data:`WAKER_KEYS`, those every run has), microseconds, with every
    run's value (``runs_us``, and ``asleep_runs_us``).

    >>> r = [{"cross_by_gap": [{"gap_us": 2.0, "waker_median_us": w}], "cross_by_long_gap": []}
    ...      for w in (5.0, 7.0, 6.5)]
    >>> combine(r)["cross_by_gap"]
    [{'gap_us': 2.0, 'waker_median_us': 6.5, 'runs_us': [5.0, 7.0, 6.5]}]
    """
    out: dict[str, Any] = {}
    for name in GAP_LISTS:
        gaps = [g["gap_us"] for g in runs[0][name]]
        for r in runs[1:]:
            if [g["gap_us"] for g in r[name]] != gaps:
                raise ValueError(f"runs: {name} gaps differ between runs ({gaps} first)")
        rows = []
        for i, gap in enumerate(gaps):
            row: dict[str, Any] = {"gap_us": gap}
            for key in WAKER_KEYS:
                if all(key in r[name][i] for r in runs):
                    values = [r[name][i][key] for r in runs]
                    row[key] = statistics.median(values)
                    row[key.replace("waker_median_us", "runs_us")] = values
            rows.append(row)
        out[name] = rows
    return out


def measure(n: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``n`` costs runs: the machine's settings at the start and each run's ``wake`` section."""
    first = None
    runs = []
    for _ in range(n):
        res = costs.run_costs()
        first = first or res["settings"]
        runs.append(res["costs"]["wake"])
    return first, runs


def profile_args(
    doc: str,
    argv: list[str] | None,
    runs: int = 5,
    flags: dict[str, str] | None = None,
    runs_help: str = "costs runs (1..50)",
    more: Callable[[argparse.ArgumentParser], None] | None = None,
) -> tuple[Any, list]:
    """The command line of a tool that measures into several host profiles (``--profile`` one or
    more times, ``--runs`` 1..50 with its help ``runs_help``, ``--write``, the tool's own on/off
    ``flags``, each with its help, and what ``more`` adds to the parser): the parsed options and
    each profile as ``(path, JSON object)``."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument(
        "--profile", type=Path, action="append", required=True, help="a host profile (JSON)"
    )
    p.add_argument("--runs", type=int, default=runs, help=runs_help)
    p.add_argument("--write", action="store_true", help="write the profiles back")
    for flag, help_text in (flags or {}).items():
        p.add_argument(flag, action="store_true", help=help_text)
    if more is not None:
        more(p)
    ns = p.parse_args(argv)
    if not 1 <= ns.runs <= 50:
        p.error(f"--runs must be 1..50, got {ns.runs}")
    return ns, [(path, json.loads(path.read_text())) for path in ns.profile]


def save(path: Path, d: dict[str, Any]) -> None:
    """Write the profile ``d`` to ``path`` as the bundled profiles are written, and say so."""
    path.write_text(json.dumps(d, indent=2) + "\n")
    print(f"wrote {path}")


def same_kernel(d: dict[str, Any], settings: dict[str, Any]) -> str:
    """The kernel release of ``settings`` (where a measurement was made), if it is the profile
    ``d``'s; else ValueError naming both."""
    release = settings["kernel"]["release"]
    if release != d["machine"]["kernel"]:
        raise ValueError(
            f"profile: made on kernel {d['machine']['kernel']!r}, this machine runs {release!r}"
        )
    return release


def update(d: dict[str, Any], settings: dict[str, Any], runs: list[dict[str, Any]]) -> dict:
    """The profile ``d`` with ``timer_spread_s`` from its own records and ``waker_curve_s`` from
    ``runs``, their provenance, and the runs in ``measured.waker``; refuses a profile of another
    kernel than ``settings``' (where the runs were measured)."""
    release = same_kernel(d, settings)
    spread = timer_spread(d["measured"]["wake"])
    combined = combine(runs)
    curve = waker_curve(combined)
    if not spread or not curve:
        raise ValueError("profile: its records give no timer spread, or the runs no waker curve")
    date = settings["date"]
    d = json.loads(json.dumps(d))  # a copy
    d["measured"]["waker"] = {
        "date": date,
        "kernel": release,
        "load": settings.get("load"),
        "runs": len(runs),
        **combined,
    }
    d["host"]["timer_spread_s"] = spread
    d["host"]["waker_curve_s"] = [list(p) for p in curve]
    d["provenance"]["timer_spread_s"] = (
        "measured: the 90th percentile less the median of the pipe wake-ups of a thread on "
        "another CPU after the longest idle gap (measured.wake.cross_by_long_gap; added "
        "afterwards by tools/measure_waker.py from the profile's own records)"
    )
    d["provenance"]["waker_curve_s"] = (
        f"measured later ({date}, same kernel, tools/measure_waker.py): per idle gap the median "
        f"over {len(runs)} runs of the wake-up benchmark of the waker's pipe write() median (for "
        "the long gaps with the waker asleep through the gap too), less that after the shortest "
        "gap (measured.waker keeps every run's)"
    )
    hostprofile.validate(d)
    return d


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", type=Path, required=True, help="the host profile (JSON)")
    p.add_argument("--runs", type=int, default=8, help="costs runs (1..50)")
    p.add_argument("--write", action="store_true", help="write the profile back")
    ns = p.parse_args(argv)
    if not 1 <= ns.runs <= 50:
        p.error(f"--runs must be 1..50, got {ns.runs}")
    d = json.loads(ns.profile.read_text())
    settings, runs = measure(ns.runs)
    out = update(d, settings, runs)
    print(f"timer_spread_s {out['host']['timer_spread_s'] * 1e6:.1f} us")  # s -> us
    for (idle, cost), g in zip(
        out["host"]["waker_curve_s"],
        out["measured"]["waker"]["cross_by_gap"] + out["measured"]["waker"]["cross_by_long_gap"],
    ):
        runs_us = " ".join(f"{v:.1f}" for v in g.get("asleep_runs_us", g["runs_us"]))
        asleep = "waker asleep" if "asleep_runs_us" in g else "waker spinning"
        print(f"idle {idle * 1e6:>8.0f} us: +{cost * 1e6:5.2f} us   ({asleep}, runs: {runs_us})")
    if ns.write:
        save(ns.profile, out)
    return out


if __name__ == "__main__":
    main()

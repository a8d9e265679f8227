"""Give host profiles made before it was measured the socket wake-up, hold their path at half the
kernel's smallest round trip, and refit what is still fitted.

A profile made before 2026-11-29 (evening) took its wake-ups from a pipe (``cross_by_gap``) and
fitted the path latency; on the third machine the fit put the one-way path at 10.7 us
(5.34 us at each end) where the kernel's smallest round trip on the loopback is 3 us, so one way
is at most 1.5 us.  The fitted path stood in for what the harness's wake-up costs beyond a pipe's:
its threads wait in ``poll()`` on a TCP socket, and each goes idle right after its ``send()``.
``python -m models.measure costs`` now measures that wake-up (``tcp_by_gap``, and ``pingpong`` for
its level in a request/response loop; :func:`models.measure.wakeups.socket_wake_curve`).  This
tool, on the same machine (the kernel release must be each profile's):

1. runs ``costs`` ``--runs`` times and takes, per idle gap, the median over the runs of each run's
   median, and the median of the ping-pong's round trips (every run's kept in
   ``measured.socket_wake``);
2. runs the calibration's eight loopback runs once, quickly, for the kernel's smallest round trip
   (``tcpi_min_rtt``; the profiles' own records predate it);
3. rebuilds each profile with :func:`models.measure.profile.build_profile` from its own recorded
   microbenchmarks (``measured``, the new ``tcp_by_gap`` added) and its own training rows (the
   measured medians in ``fit.training_rows``), so the path is held and the work per message and
   per segment are fitted again; host fields measured later by a tool (the pacing timer's costs,
   a waker curve; their provenance says "measured later") and fields the rebuild does not make
   are carried over as they were, with their provenance.

    .venv/bin/python tools/measure_socket_wake.py --profile data/hosts/kernel6_machine3.json \\
        [--profile ...] [--runs 5] [--write]

Without ``--write`` it prints what it would write.  About 13 s a costs run and 15 s for the
round trip, then about 7 s a refit.
"""

from __future__ import annotations

import copy
import statistics
import sys
from collections.abc import Callable
from typing import Any

from measure_waker import profile_args, same_kernel, save

from models.kernel import calibrate
from models.measure import costs, wakestats
from models.measure.profile import build_profile, smallest_round_trip_us, sweep_rows
from models.measure.wakeups import WAKE_STEPS
from models.sim import hostprofile

#: The training rows' keys a rebuilt fit needs besides the measured median.
ROW_KEYS = ("sock_mode", "client_sock_mode", "qd", "iosize_bytes")


def measure(n: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``n`` costs runs: the machine's settings at the start and each run's ``tcp_by_gap``
    (``gap_us``, ``median_us``, ``samples`` per gap) and ``pingpong`` summaries."""
    first = None
    runs = []
    for _ in range(n):
        res = costs.run_costs()
        first = first or res["settings"]
        wake = res["costs"]["wake"]
        if not wake.get("tcp_by_gap") or not wake.get("pingpong"):
            raise RuntimeError("costs gave no tcp_by_gap or pingpong (one CPU? both need two)")
        runs.append(
            {
                "tcp_by_gap": [
                    {k: g[k] for k in ("gap_us", "median_us", "samples")}
                    for g in wake["tcp_by_gap"]
                ],
                "pingpong": wake["pingpong"],
            }
        )
    return first, runs


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per gap, the median over ``runs`` of each run's median (samples summed); the ping-pong's
    round trips, each the median over the runs, and what follows from them
    (:func:`models.measure.wakestats.pingpong`'s fields).

    >>> pp = [{"bytes": 48, "poll_median_us": p, "spin_median_us": 7.0, "samples": 10}
    ...       for p in (50.0, 53.0, 60.0)]
    >>> runs = [{"tcp_by_gap": [{"gap_us": 2.0, "median_us": m, "samples": 500}], "pingpong": q}
    ...         for m, q in zip((18.0, 20.0, 25.0), pp)]
    >>> c = combine(runs)
    >>> c["tcp_by_gap"]
    [{'gap_us': 2.0, 'median_us': 20.0, 'samples': 1500, 'runs': 3}]
    >>> c["pingpong"]["wake_us"], c["pingpong"]["idle_us"]
    (23.0, 49.5)
    """
    gaps = sorted({g["gap_us"] for run in runs for g in run["tcp_by_gap"]})
    by_gap = []
    for gap in gaps:
        each = [g for run in runs for g in run["tcp_by_gap"] if g["gap_us"] == gap]
        by_gap.append(
            {
                "gap_us": gap,
                "median_us": statistics.median(g["median_us"] for g in each),
                "samples": sum(int(g["samples"]) for g in each),
                "runs": len(each),
            }
        )
    pps = [run["pingpong"] for run in runs]
    poll = statistics.median(p["poll_median_us"] for p in pps)
    spin = statistics.median(p["spin_median_us"] for p in pps)
    samples = sum(int(p["samples"]) for p in pps)
    pingpong = {
        **wakestats.pingpong_summary(poll, spin, pps[0]["bytes"], samples),
        "runs": len(pps),
    }
    return {"tcp_by_gap": by_gap, "pingpong": pingpong}


def training_rows(d: dict[str, Any], min_rtt_us: float) -> list[dict[str, Any]]:
    """A profile's training rows as ``build_profile`` takes them: the loopback rows of its fit with
    their measured medians (a row fitted by its mean operation time, a busy run, with its rate:
    ``fit_target`` ``"mean"`` and the IOPS its mean gives), and the kernel's smallest round trip
    on each."""
    fit = d.get("fit") or {}
    if fit.get("target") != "median operation time":
        raise ValueError(f"fit.target must be 'median operation time', got {fit.get('target')!r}")
    rows = []
    for r in fit["training_rows"]:
        if "measured_mean_us" in r:
            # Little's law backwards: the IOPS of QD operations in flight for that mean, us -> s
            held = {"fit_target": "mean", "iops": 1e6 * float(r["qd"]) / r["measured_mean_us"]}
        else:
            held = {"lat_p50_us": r["measured_p50_us"]}
        rows.append(
            {
                **{k: r[k] for k in ROW_KEYS if k in r},
                "link": "loopback",
                "mtu_bytes": 65536,
                "rate_limit_bits_per_s": None,
                **held,
                "stalled_pct": 0.0,
                "min_rtt_us": min_rtt_us,
            }
        )
    return rows


def update(
    d: dict[str, Any],
    settings: dict[str, Any],
    runs: list[list[dict[str, float]]],
    min_rtt_us: float,
) -> dict[str, Any]:
    """The profile ``d`` rebuilt with the socket wake-up of ``runs`` and the path held at half of
    ``min_rtt_us``; refuses a profile of another kernel than ``settings``'."""
    release = same_kernel(d, settings)
    measured = copy.deepcopy(d["measured"])
    measured["wake"].update(combine(runs))
    measured["socket_wake"] = {
        "date": settings["date"],
        "kernel": release,
        "load": settings.get("load"),
        "min_rtt_us": min_rtt_us,
        "runs": runs,
    }
    note = (
        f" (refitted {settings['date']} by tools/measure_socket_wake.py: the socket wake-up "
        f"measured, the path held)"
    )
    fields = ("wake_curve_s", "tx_latency_s", "rx_latency_s", "proc_s", "gso_cpu_s")
    return rebuild(d, measured, min_rtt_us, fields, note)


def rebuild(
    d: dict[str, Any],
    measured: dict[str, Any],
    min_rtt_us: float,
    fields: tuple[str, ...],
    note: str,
    extra_rows: list[dict[str, Any]] | None = None,
    fit_wake_cpu: bool = False,
) -> dict[str, Any]:
    """The profile ``d`` made again by ``build_profile`` from ``measured`` (its microbenchmarks,
    updated) and its own training rows (and ``extra_rows``, ``iscsi_loop`` rows measured later)
    with the kernel's smallest round trip ``min_rtt_us`` (a row of ``extra_rows`` replaces its
    run's earlier row); ``note`` is appended to the provenance of ``fields``.  Host fields
    measured later by a tool and fields the rebuild does not make are carried over as they were
    (a field the fit makes never is); ``fit_wake_cpu`` fits a thread's CPU per wake-up too
    (``build_profile``'s)."""
    extra = list(extra_rows or ())
    again = {tuple(r.get(k) for k in ROW_KEYS) for r in extra}
    # a run measured again replaces its earlier row (refitting twice adds nothing twice)
    own = [
        r for r in training_rows(d, min_rtt_us) if tuple(r.get(k) for k in ROW_KEYS) not in again
    ]
    rows = own + extra
    out = build_profile(
        {"settings": d["settings"], "costs": measured},
        rows,
        training=d["fit"]["training"],
        fit_wake_cpu=fit_wake_cpu,
    )
    for field in fields:
        if field in out["provenance"]:
            out["provenance"][field] += note
    for field, value in d["host"].items():
        how = d["provenance"].get(field, "")
        later = how.startswith("measured later")  # by a tool over several runs: kept as it is
        # a field the fit makes (calibrate.FIELDS) is the new fit's, or absent if it was not
        # searched this time (wake_cpu_s without fit_wake_cpu): never the old fit's value
        fitted = field in calibrate.FIELDS.values()
        if later or (field not in out["host"] and field not in WAKE_STEPS and not fitted):
            out["host"][field] = value
            out["provenance"][field] = how or "carried over"
    if "notes" in d:
        out["notes"] = d["notes"]
    hostprofile.validate(out)
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    ns, profiles = profile_args(__doc__, argv)
    settings, runs = measure(ns.runs)
    trip = smallest_round_trip_us(sweep_rows(quick=True))
    if trip is None:
        sys.exit("the sweep's runs gave no tcpi_min_rtt")
    print(f"kernel's smallest round trip: {trip:g} us")
    both = combine(runs)
    for g in both["tcp_by_gap"]:
        each = " ".join(
            f"{x['median_us']:.1f}"
            for run in runs
            for x in run["tcp_by_gap"]
            if x["gap_us"] == g["gap_us"]
        )
        print(f"tcp_by_gap {g['gap_us']:g} us: {g['median_us']:.2f} us (runs: {each})")
    pp = both["pingpong"]
    each = " ".join(
        f"{r['pingpong']['poll_median_us']:.1f}/{r['pingpong']['spin_median_us']:.1f}"
        for r in runs
    )
    print(
        f"pingpong: round trip {pp['poll_median_us']:.2f} us in poll(), {pp['spin_median_us']:.2f}"
        f" us spinning; a wake-up adds {pp['wake_us']:.2f} us (runs: {each})"
    )
    fields = ("proc_s", "gso_cpu_s", "tx_latency_s")
    return refit_all(profiles, lambda d: update(d, settings, runs, trip), fields, ns.write)


def refit_all(
    profiles: list, refit: Callable[[dict[str, Any]], dict[str, Any]], fields: tuple, write: bool
) -> list[dict]:
    """``refit`` each of ``profiles`` (``(path, JSON object)``), print each one's fit loss and
    ``fields`` (microseconds) before and after, and write it back if ``write``."""
    outs = []
    for path, d in profiles:
        out = refit(d)
        outs.append(out)
        h, old = out["host"], d["host"]
        print(
            f"{path.name}: loss {d['fit']['loss']:.4f} -> {out['fit']['loss']:.4f}; "
            + ", ".join(
                f"{k} {old.get(k, 0) * 1e6:.2f} -> {h.get(k, 0) * 1e6:.2f} us" for k in fields
            )
            + f"; at bound {out['fit']['at_bound']}"
        )
        if write:
            save(path, out)
    return outs


if __name__ == "__main__":
    main()

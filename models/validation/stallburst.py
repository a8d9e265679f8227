"""A Nagle server's stall loop seen from the client: the request that wakes the sleeping server,
and the rest of the queue.

After each delayed-ACK stall the client reads the responses the stall released and writes its
requests; the first wakes the server, whose thread has slept since the stall began.  The third
machine's captures (:data:`DATASET`, ``tools/stall_burst_sweep.py``) show that first request
followed by the second much later than the rest follow each other: waking a thread whose CPU has
idled for 40 ms costs the waker more than waking one still polling (an interrupt to a halted
virtual CPU).  The simulator has that cost as ``Host.waker_curve_s``; the shipped profile of the
machine (:data:`PROFILE`) was made before it, and its curve was measured afterwards on the same
machine by the wake-up benchmark (``tools/measure_waker.py``: the waker's ``write()`` with both
threads' CPUs idle for the gap), never from these captures.

:func:`table` holds the simulator to the captures, row by congestion control (the sweep ran bbr and
reno on both sockets): the shipped profile with its measured waker's cost (``test``), the same
without it (``wrong``: the model before the cost was measured, whose first gap should miss) and the
same with a waker's cost fitted to the captures (``fit``: the kernel's first gap less its later
gaps, as the cost of waking a server asleep for a stall; it reproduces the first gap by
construction, so it never counts as a pass; it says what the measurement should come near).  The
tolerance is the field evaluation's (:data:`TOL`).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DATASET",
    "PROFILE",
    "LOOP",
    "TOL",
    "MEASURES",
    "MODELS",
    "runs",
    "kernel_medians",
    "simulated",
    "measured_waker_s",
    "table",
    "findings",
]

#: The captures' table, named in full so that :mod:`models.validation.coverage` finds the reader.
DATASET = "kernel6_machine3_stallburst"
#: The machine's bundled profile (``calibrate`` of 2026-11-29 01:37 UTC).
PROFILE = "kernel6_machine3"
#: The loop the captures measured (``tools/stall_burst_sweep.py`` runs it): a Nagle server (header
#: and data in two ``send()`` calls), a NODELAY client, QD 8, 512-byte responses.
LOOP = {"sock_mode": "nagle", "client_sock_mode": "nodelay", "qd": 8, "iosize_bytes": 512}
#: What each row compares, the dataset's medians (microseconds).
MEASURES = ("first_gap_p50_us", "later_gap_p50_us", "server_p50_us")
#: The simulated models, each with its role.
MODELS = {"as shipped": "test", "no waker cost": "wrong", "waker cost fitted": "fit"}


def _tol() -> float:
    from models.validation.fidelity import IOPS_TOL

    return IOPS_TOL


#: Relative tolerance of every comparison: the field evaluation's (a kernel run repeats itself to
#: about that, chapter 9's second draw).
TOL = _tol()


def runs() -> pd.DataFrame:
    """The bundled captures' runs (:data:`DATASET`), one row each."""
    from models import data

    return data.load(DATASET)


def kernel_medians(df: pd.DataFrame, cc: str) -> dict[str, float]:
    """The median over the runs of ``cc`` of each of :data:`MEASURES`, microseconds."""
    part = df[df["cc"] == cc]
    return {m: float(statistics.median(part[m])) for m in MEASURES}


def simulated(
    df: pd.DataFrame, cc: str, waker_s: float | None = None, profile: Any = None, ops: int = 200
) -> dict[str, float]:
    """The simulator's medians of :data:`MEASURES` (microseconds) for the dataset's loop under
    ``cc``, begun as a stall restarts, with ``profile`` (default :data:`PROFILE`) and its own
    waker's cost, or, with ``waker_s`` (seconds), a cost of that much for waking a thread asleep
    for a stall instead (none if 0)."""
    from models.measure.streams import stall_bursts
    from models.sim import hostprofile, simulate
    from models.validation.ccside import link_mtu, sweep_hz
    from models.validation.fidelity import ProfileHost
    from models.validation.stallend import STALL_IDLE_S, established_scenario

    first = df.iloc[0]
    link = str(first["link"])
    row = {
        "link": link,
        "mtu_bytes": link_mtu(link),
        "rate_limit_bits_per_s": None,
        "cc": cc,
        **LOOP,
        "qd": int(first["qd"]),
        "iosize_bytes": int(first["iosize_bytes"]),
    }
    host = ProfileHost(profile or hostprofile.shipped(PROFILE))
    sc = established_scenario("iscsi_loop", row, host, sweep_hz(DATASET))
    if waker_s is not None:
        # nothing after a millisecond asleep, waker_s after a stall's idle (linear between)
        curve = ((1e-3, 0.0), (STALL_IDLE_S, waker_s)) if waker_s else ()
        sc = sc.replace(client={"waker_curve_s": curve})
    r = simulate(sc.replace(run={"ops": ops, "trace": True, "trace_at": "client"}))
    ends = {
        d: [t.time for t in r.trace if t.direction == d and t.length] for d in ("C > S", "S > C")
    }
    bursts = stall_bursts(ends["C > S"], ends["S > C"])
    names = ("first_gap_s", "later_gap_s", "server_s")
    return {
        m: statistics.median(b[n] for b in bursts) * 1e6  # s -> us
        for m, n in zip(MEASURES, names)
    }


def table(df: pd.DataFrame | None = None, profile: Any = None) -> pd.DataFrame:
    """Per congestion control of the dataset (or ``df``): the kernel's medians, and each model of
    :data:`MODELS` with its role, its medians and whether each is within :data:`TOL`."""
    import pandas as pd

    d = runs() if df is None else df
    rows = []
    for cc in sorted(d["cc"].unique()):
        k = kernel_medians(d, cc)
        fitted = (k["first_gap_p50_us"] - k["later_gap_p50_us"]) * 1e-6  # us -> s
        rows.append({"cc": cc, "model": "kernel", "role": "reference", **k})
        own = measured_waker_s(profile)
        for name, role in MODELS.items():
            waker = {"test": None, "wrong": 0.0, "fit": max(fitted, 0.0)}[role]
            s = simulated(d, cc, waker, profile)
            within = {f"{m}_within": abs(s[m] / k[m] - 1.0) <= TOL for m in MEASURES}
            cost = own if waker is None else waker
            rows.append(
                {"cc": cc, "model": name, "role": role, "waker_us": cost * 1e6, **s, **within}
            )
    return pd.DataFrame(rows)


def measured_waker_s(profile: Any = None) -> float:
    """What the profile's (default :data:`PROFILE`) client pays for waking a server asleep for a
    stall, seconds (:func:`models.validation.stallend.waker_after`)."""
    from models.sim import hostprofile
    from models.validation.stallend import STALL_IDLE_S, waker_after

    return waker_after((profile or hostprofile.shipped(PROFILE)).side("client"), STALL_IDLE_S)


def findings(t: pd.DataFrame) -> dict[str, bool]:
    """What the text says about :func:`table`'s result, each as a claim that holds or not."""
    kern = t[t["model"] == "kernel"]
    shipped = t[t["model"] == "as shipped"]
    wrong = t[t["model"] == "no waker cost"]
    fit = t[t["model"] == "waker cost fitted"]
    return {
        "the kernel's first gap is at least twice its later gaps": bool(
            (kern["first_gap_p50_us"] >= 2 * kern["later_gap_p50_us"]).all()
        ),
        "as shipped, with the measured waker's cost, every measure is within the tolerance": bool(
            all(shipped[f"{m}_within"].all() for m in MEASURES)
        ),
        "without the waker's cost the first gap misses, the rest are within": bool(
            not wrong["first_gap_p50_us_within"].any()
            and wrong["later_gap_p50_us_within"].all()
            and wrong["server_p50_us_within"].all()
        ),
        "the measured waker's cost is within the tolerance of the fitted one": bool(
            (abs(shipped["waker_us"].to_numpy() / fit["waker_us"].to_numpy() - 1.0) <= TOL).all()
        ),
        "with the fitted waker cost every measure is within the tolerance (a fit)": bool(
            all(fit[f"{m}_within"].all() for m in MEASURES)
        ),
    }

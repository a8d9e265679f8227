"""A Nagle server's stall loop seen from the client: the request that wakes the sleeping server,
and the rest of the queue.

After each delayed-ACK stall the client reads the responses the stall released and writes its
requests; the first wakes the server, whose thread has slept since the stall began.  The third
machine's captures (:data:`DATASET`, ``tools/stall_burst_sweep.py``) show that first request
followed by the second much later than the rest follow each other: waking a thread whose CPU has
idled for 40 ms costs the waker more than waking one still polling (an interrupt to a halted
virtual CPU).  The simulator has that cost as ``Host.waker_curve_s``; the shipped profile of the
machine (:data:`PROFILE`) was made before it and has none.

:func:`table` holds the simulator to the captures, row by congestion control (the sweep ran bbr and
reno on both sockets): the shipped profile (``test``: its later gaps and the time to the server's
data should be right, its first gap is the stated miss) and the same profile with a waker cost
fitted to the captures (``fit``: the kernel's first gap less its later gaps, as the cost of waking
a server asleep for a stall; it reproduces the first gap by construction, so it never counts as a
pass).  The tolerance is the field evaluation's (:data:`TOL`).
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
    "kernel_medians",
    "simulated",
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
MODELS = {"as shipped": "test", "waker cost fitted": "fit"}


def _tol() -> float:
    from models.validation.fidelity import IOPS_TOL

    return IOPS_TOL


#: Relative tolerance of every comparison: the field evaluation's (a kernel run repeats itself to
#: about that, chapter 9's second draw).
TOL = _tol()


def kernel_medians(df: pd.DataFrame, cc: str) -> dict[str, float]:
    """The median over the runs of ``cc`` of each of :data:`MEASURES`, microseconds."""
    part = df[df["cc"] == cc]
    return {m: float(statistics.median(part[m])) for m in MEASURES}


def simulated(
    df: pd.DataFrame, cc: str, waker_s: float = 0.0, profile: Any = None, ops: int = 200
) -> dict[str, float]:
    """The simulator's medians of :data:`MEASURES` (microseconds) for the dataset's loop under
    ``cc``, begun as a stall restarts, with ``profile`` (default :data:`PROFILE`) and, if
    ``waker_s`` (seconds), a waker cost of that much for waking a thread asleep for a stall."""
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
    # nothing after a millisecond asleep, waker_s after a stall's idle (linear between)
    curve = ((1e-3, 0.0), (STALL_IDLE_S, waker_s)) if waker_s else ()
    r = simulate(
        sc.replace(
            client={"waker_curve_s": curve},
            run={"ops": ops, "trace": True, "trace_at": "client"},
        )
    )
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

    from models import data

    d = data.load(DATASET) if df is None else df
    rows = []
    for cc in sorted(d["cc"].unique()):
        k = kernel_medians(d, cc)
        fitted = (k["first_gap_p50_us"] - k["later_gap_p50_us"]) * 1e-6  # us -> s
        rows.append({"cc": cc, "model": "kernel", "role": "reference", **k})
        for name, role in MODELS.items():
            waker = max(fitted, 0.0) if role == "fit" else 0.0
            s = simulated(d, cc, waker, profile)
            within = {f"{m}_within": abs(s[m] / k[m] - 1.0) <= TOL for m in MEASURES}
            rows.append(
                {"cc": cc, "model": name, "role": role, "waker_us": waker * 1e6, **s, **within}
            )
    return pd.DataFrame(rows)


def findings(t: pd.DataFrame) -> dict[str, bool]:
    """What the text says about :func:`table`'s result, each as a claim that holds or not."""
    kern = t[t["model"] == "kernel"]
    shipped = t[t["model"] == "as shipped"]
    fit = t[t["model"] == "waker cost fitted"]
    return {
        "the kernel's first gap is at least twice its later gaps": bool(
            (kern["first_gap_p50_us"] >= 2 * kern["later_gap_p50_us"]).all()
        ),
        "as shipped, the later gaps and the server's time are within the tolerance": bool(
            shipped["later_gap_p50_us_within"].all() and shipped["server_p50_us_within"].all()
        ),
        "as shipped, the first gap misses": bool(not shipped["first_gap_p50_us_within"].any()),
        "with the fitted waker cost every measure is within the tolerance (a fit)": bool(
            all(fit[f"{m}_within"].all() for m in MEASURES)
        ),
    }

"""bbr's pacing rate on the fourth machine, read with ``ss``, beside the simulator's (comparisons).

The dataset (:data:`DATASET`, ``tools/pacing_rate_sample.py``) holds the bbr runs of the two sets
of ownership traces (:data:`models.validation.ownership.SETS`), each run twice, with what ``ss
-tin`` showed of the server's socket during the run: bbr's pacing gain (which names its state:
above 2 in start-up), its bandwidth estimate and the socket's pacing rate, median, lowest and
highest.  :func:`table` puts beside each run what two models do on the same scenario: the owned
model of :mod:`models.validation.ownership` (the fourth machine's calibration refitted with a
segment sent after its ``send()``'s CPU and a socket owner, replies on their CPU; columns
``owned_``), the same with the pacing clock read after the call's CPU so far
(``Host.xmit_clock_in_call``; columns ``clock_``) and the same with the handshake's round trip as
bbr's first sample (``Host.handshake_rtt``; columns ``handshake_``): the median pacing rate over the run's ACKs
past its first fifth, its spread, and the share of those ACKs in start-up.  Every row is a test:
nothing of any model was fitted to these readings.

The tolerance is stated from the kernel's own repeat: the two draws' medians of one run differ by
up to :func:`repeat_factor` (about 1.7), so a model's median counts as the kernel's when it is
within :data:`FACTOR` of the geometric mean of the draws; the tolerance was set after the
readings were seen.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DATASET",
    "FACTOR",
    "STARTUP_GAIN",
    "kernel",
    "repeat_factor",
    "simulated",
    "table",
    "kernel_findings",
    "model_findings",
    "START",
    "start_table",
    "start_findings",
]

#: The readings (``tools/pacing_rate_sample.py``).
DATASET = "kernel6_machine4_pacing_rate"
#: bbr's state from each run's first segment on, pinned apart (``tools/bbr_trace.py --keep
#: start --pin apart``: 16 KiB responses at QD 8, a Nagle and a MSG_MORE server).
START = "kernel6_machine4_bbr_start"
#: A model's median pacing rate is the kernel's within this factor either way.
FACTOR = 2.0
#: A pacing gain above this is bbr's start-up (``bbr_high_gain``, 2.89); the others are 1.25 and
#: below.
STARTUP_GAIN = 2.0
#: The runs' key besides the draw.
RUN = ["set", "server_sock_mode", "cc"]


def kernel() -> pd.DataFrame:
    """The readings, one row per draw and run."""
    from models.data import load

    return load(DATASET)


def repeat_factor(k: pd.DataFrame) -> float:
    """The largest factor between two draws' median pacing rates of one run in ``k``."""
    g = k.groupby(RUN)["pacing_gbps"]
    return float((g.max() / g.min()).max())


def simulated(make: Any, profile: Any, row: dict[str, Any], hz: int, ops: int = 4000) -> dict:
    """The server's bbr over one simulation of ``ops`` operations, every event run, of the
    scenario ``make`` builds for the pinned sample's ``row`` with ``profile``: the median pacing
    rate (Gb/s) over its ACKs past the first fifth, the lowest and highest there, and the share of
    them in start-up; its first pacing rate, before any ACK (``start_gbps``), when it left
    start-up (``left_ms``, ms from the run's start; NaN: never) and the run's length
    (``run_ms``)."""
    from models.sim.engine import Simulation
    from models.sim.rules.bbr_model import STARTUP
    from models.validation.fidelity import ProfileHost

    sc = make("iscsi_loop", row, ProfileHost(profile), hz)
    sim = Simulation(sc.replace(run={"ops": ops, "fast_forward": False}))
    model = sim.server_ep.sender.cc.model
    start_gbps = model.rate * 8 / 1e9  # bytes/s -> Gb/s
    model.trace = []  # (max_bw, pacing rate in bytes/s, mode, cwnd, fs) after every ACK
    r = sim.run()
    past = model.trace[len(model.trace) // 5 :]
    gbps = sorted(rate * 8 / 1e9 for _, rate, *_ in past)  # bytes/s -> Gb/s
    return {
        "pacing_gbps": gbps[len(gbps) // 2],
        "pacing_lo_gbps": gbps[0],
        "pacing_hi_gbps": gbps[-1],
        "startup_share": sum(mode == STARTUP for _, _, mode, *_ in past) / len(past),
        "start_gbps": start_gbps,
        "left_ms": _left_startup_ms(model.trace),
        "run_ms": r.sim_time_s * 1e3,  # s -> ms
    }


def table() -> pd.DataFrame:
    """One row per run of :func:`kernel` (its draws' medians combined by their geometric mean,
    ``pacing_gbps``; their lowest and highest readings, their start-up share) with the three
    models' numbers (every field of :func:`simulated`, columns ``owned_``, ``clock_`` and
    ``handshake_``),
    each model's ratio to
    the kernel's median (``*_ratio``) and whether it is within :data:`FACTOR` (``*_within``) and
    in start-up when the kernel is (``*_state_right``)."""
    from models.kernel import load_kernel_run
    from models.validation import machine4, ownership

    k = kernel()
    g = k.groupby(RUN, sort=False)
    t = g.agg(
        draws=("draw", "size"),
        iops=("iops", "mean"),
        startup_share=("startup_share", "mean"),
        pacing_lo_gbps=("pacing_lo_gbps", "min"),
        pacing_hi_gbps=("pacing_hi_gbps", "max"),
    )
    t["pacing_gbps"] = g["pacing_gbps"].apply(lambda s: math.exp(s.map(math.log).mean()))
    t = t.reset_index()
    hz = load_kernel_run(prefix=machine4.PREFIX).hz
    owned = machine4.owned_profile()
    models = {
        "owned": machine4.replies_scenario,
        "clock": machine4.clock_scenario,
        "handshake": machine4.handshake_scenario,
    }
    for name, make in models.items():
        sims = [
            simulated(make, owned, ownership.sample_row(r["server_sock_mode"], r["cc"], trace), hz)
            for r in t.to_dict("records")
            for trace in [ownership.SETS[r["set"]]]
        ]
        for key in sims[0]:
            t[f"{name}_{key}"] = [s[key] for s in sims]
        t[f"{name}_ratio"] = t[f"{name}_pacing_gbps"] / t["pacing_gbps"]
        t[f"{name}_within"] = t[f"{name}_ratio"].between(1 / FACTOR, FACTOR)
        t[f"{name}_state_right"] = (t[f"{name}_startup_share"] > 0.5) == (t["startup_share"] > 0.5)
    return t


def kernel_findings(k: pd.DataFrame) -> dict[str, bool]:
    """What the text says of the readings ``k``: behind the 2 KiB server bbr stays in start-up in
    every reading of both draws, its estimate never moving within a run; behind the 16 KiB
    servers it probes for bandwidth in every reading (gain 1.25 or less), its estimate moving
    over a factor of ten within every run; and the two draws' medians of a run differ by less
    than :data:`FACTOR`.

    >>> import pandas as pd
    >>> k = pd.DataFrame({"draw": [1, 1, 2, 2], "set": ["paced", "small"] * 2,
    ...                   "server_sock_mode": ["more", "more_nodelay"] * 2, "cc": ["bbr"] * 4,
    ...                   "startup_share": [0.0, 1.0] * 2, "bw_lo_gbps": [0.4, 20.0] * 2,
    ...                   "bw_hi_gbps": [74.0, 20.0] * 2, "pacing_gbps": [17.0, 58.0, 29.0, 57.0]})
    >>> all(kernel_findings(k).values())
    True
    >>> k.loc[0, "bw_hi_gbps"] = 2.0  # the 16 KiB estimate steady: a claim fails
    >>> kernel_findings(k)["behind the 16 KiB servers bbr probes, its estimate moving tenfold"]
    False
    """
    small, paced = k[k["set"] == "small"], k[k["set"] == "paced"]
    return {
        "behind the 2 KiB server bbr stays in start-up, its estimate still": bool(
            (small["startup_share"] == 1.0).all()
            and (small["bw_lo_gbps"] == small["bw_hi_gbps"]).all()
        ),
        "behind the 16 KiB servers bbr probes, its estimate moving tenfold": bool(
            (paced["startup_share"] == 0.0).all()
            and (paced["bw_hi_gbps"] > 10 * paced["bw_lo_gbps"]).all()
        ),
        "the draws repeat within the tolerance": repeat_factor(k) < FACTOR,
    }


def model_findings(t: pd.DataFrame) -> dict[str, bool]:
    """What the text says of the models in :func:`table` ``t`` (known failures with their
    causes, each a claim that holds or not): both models stay in start-up behind the 16 KiB
    Nagle server, where the kernel probes for bandwidth; behind the MSG_MORE server both models'
    median pacing rates are the kernel's within :data:`FACTOR`; both models pace the 2 KiB
    server's responses at less than half the kernel's rate (their estimate from start-up is
    lower); and behind the MSG_MORE server the owned model's rate moves by a factor of two or
    more within a run, as the kernel's moves tenfold, while the clock model's moves in no run.
    (Before the rate samples read whole microseconds, 2026-12-04, neither model's rate moved
    and only the clock model's median was within the factor there.)  The owned model with the handshake a
    process's first connection measures as its first sample (``handshake_``,
    :func:`models.validation.machine4.handshake_scenario`) leaves start-up behind the Nagle
    server, as the kernel does, and paces it at the kernel's rate within :data:`FACTOR`; behind
    the 2 KiB server it stays in start-up at the rate the handshake gave, which the kernel also
    keeps for its first thousands of responses (:mod:`models.validation.cc_timeline`) but has
    raised to more than twice that by the time ``ss`` reads it.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"set": ["paced", "paced", "small"],
    ...     "server_sock_mode": ["more", "nagle", "more_nodelay"],
    ...     "startup_share": [0.0, 0.0, 1.0],
    ...     "owned_state_right": [True, False, True], "clock_state_right": [True, False, True],
    ...     "owned_ratio": [1.1, 3.9, 0.36], "clock_ratio": [1.28, 3.9, 0.38],
    ...     "owned_pacing_lo_gbps": [5.2, 99.0, 20.0], "owned_pacing_hi_gbps": [28.7, 99.0, 20.0],
    ...     "clock_pacing_lo_gbps": [26.0, 99.0, 22.0], "clock_pacing_hi_gbps": [26.0, 99.0, 22.0],
    ...     "handshake_ratio": [0.6, 0.94, 0.34], "handshake_state_right": [True, True, True]})
    >>> all(model_findings(t).values())
    True
    >>> t.loc[1, "handshake_state_right"] = False  # a warm handshake: still in start-up
    >>> model_findings(t)["with the first connection's handshake the Nagle server's is right"]
    False
    """
    idx = t.set_index(["set", "server_sock_mode"])
    more, nagle = idx.loc[("paced", "more")], idx.loc[("paced", "nagle")]
    small = idx.loc[("small", "more_nodelay")]
    models = ("owned", "clock")
    return {
        "both stay in start-up behind the Nagle server, the kernel probes": all(
            not nagle[f"{m}_state_right"] and more[f"{m}_state_right"] for m in models
        ),
        "behind the MSG_MORE server both models' rates are the kernel's within the factor": all(
            1 / FACTOR <= more[f"{m}_ratio"] <= FACTOR for m in models
        ),
        "both pace the 2 KiB server at under half the kernel's rate": all(
            small[f"{m}_ratio"] < 0.5 for m in models
        ),
        "the owned model's rate moves twofold behind the MSG_MORE server, the clock's nowhere": bool(
            more["owned_pacing_hi_gbps"] >= 2 * more["owned_pacing_lo_gbps"]
            and (t["clock_pacing_hi_gbps"] < 2 * t["clock_pacing_lo_gbps"]).all()
        ),
        "with the first connection's handshake the Nagle server's is right": bool(
            nagle["handshake_state_right"] and 1 / FACTOR <= nagle["handshake_ratio"] <= FACTOR
        ),
        "it keeps the 2 KiB server in start-up at under half the rate ss read": bool(
            small["handshake_state_right"] and small["handshake_ratio"] < 0.5
        ),
    }


def _left_startup_ms(trace: list) -> float:
    """Milliseconds from the run's start to the first ACK a model's bbr processed outside
    start-up (``BbrModel.trace`` entries), or NaN if it never left."""
    from models.sim.rules.bbr_model import STARTUP

    for _bw, _rate, mode, _cwnd, at_fs in trace:
        if mode != STARTUP:
            return at_fs / 1e12  # fs -> ms
    return math.nan


def start_table(runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per server mode of :data:`START`: when the kernel's bbr left start-up (ms after the
    run's first segment; the trace keeps the first ``window_ms``), how many segments arrived
    with one packet in flight (``lone_rows``) and the share of those that found the
    application-limited period over (``tp->app_limited`` 0: ``lone_ended_share``), and the
    pacing rate at the first segment (``kernel_start_gbps``, Gb/s: bbr's first rate, from the
    handshake's round trip); beside them, from the models' runs of the same scenarios in
    ``runs`` (:func:`table`, simulated if not given), when the owned, clock and handshake
    models' bbr left
    start-up (``*_ms``; NaN: never), their run's length (``*_run_ms``) and their first pacing
    rate (``*_start_gbps``)."""
    import pandas as pd

    from models.data import describe, load

    runs = table() if runs is None else runs
    paced = runs[runs["set"] == "paced"].set_index("server_sock_mode")
    k = load(START)
    window_ms = float(describe(START)["sources"][0]["section"].split("--window-ms ")[1].split()[0])
    rows = []
    for mode, g in k.groupby("server_sock_mode", sort=False):
        out = g[g["bbr_mode"] != "startup"]
        lone = g[g["packets_out"] == 1]  # a segment arrived with one packet in flight
        first = g.sort_values("time_us").iloc[0]
        row: dict[str, Any] = {
            "server_sock_mode": mode,
            "window_ms": window_ms,
            # the pacing rate at the first segment, from the handshake's RTT (bytes/s -> Gb/s)
            "kernel_start_gbps": float(first["pacing_rate_bytes_per_s"]) * 8 / 1e9,
            "kernel_ms": float(out["time_us"].min()) / 1e3 if len(out) else math.nan,  # us -> ms
            "lone_rows": len(lone),
            "lone_ended_share": float((lone["app_limited_mark"] == 0).mean()),
        }
        for name in ("owned", "clock", "handshake"):  # (the pacing-rate table's runs)
            sim = paced.loc[mode]
            row[f"{name}_ms"] = float(sim[f"{name}_left_ms"])
            row[f"{name}_run_ms"] = float(sim[f"{name}_run_ms"])
            row[f"{name}_start_gbps"] = float(sim[f"{name}_start_gbps"])
        rows.append(row)
    return pd.DataFrame(rows)


def start_findings(t: pd.DataFrame) -> dict[str, bool]:
    """What the text says of :func:`start_table` ``t``: the kernel's bbr left start-up within the
    traced window behind both servers, and most of the segments that reached its server with one
    packet in flight found the application-limited period over; both models' bbr left start-up
    behind the MSG_MORE server and never behind the Nagle server in their whole run, and they
    start pacing at under a tenth of the kernel's first rate (known failures); with the handshake
    a process's first connection measures, the model leaves start-up behind both servers, sooner
    than the traced kernel.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"server_sock_mode": ["nagle", "more"], "window_ms": [10.0, 10.0],
    ...                   "kernel_ms": [1.3, 4.3], "lone_ended_share": [0.84, 0.9],
    ...                   "owned_ms": [math.nan, 0.6], "kernel_start_gbps": [19.5, 19.5],
    ...                   "owned_start_gbps": [0.33, 0.33], "clock_start_gbps": [0.33, 0.33],
    ...                   "clock_ms": [math.nan, 0.6], "owned_run_ms": [120.0, 120.0],
    ...                   "clock_run_ms": [90.0, 90.0], "handshake_ms": [0.3, 0.2]})
    >>> all(start_findings(t).values())
    True
    >>> t.loc[0, "owned_ms"] = 2.0  # the Nagle server's model leaving too
    >>> start_findings(t)["both models stay in start-up behind the Nagle server"]
    False
    """
    by = t.set_index("server_sock_mode")
    models = ("owned", "clock")
    return {
        "the kernel leaves start-up within the window behind both servers": bool(
            (t["kernel_ms"] <= t["window_ms"]).all()
        ),
        "in the kernel most lone packets in flight find the limited period over": bool(
            (t["lone_ended_share"] > 0.5).all()
        ),
        "both models leave start-up behind the MSG_MORE server": all(
            not math.isnan(by.loc["more", f"{m}_ms"]) for m in models
        ),
        "both models stay in start-up behind the Nagle server": all(
            math.isnan(by.loc["nagle", f"{m}_ms"]) for m in models
        ),
        "with the first connection's handshake it leaves behind both, sooner than the kernel": bool(
            (t["handshake_ms"] < t["kernel_ms"]).all()
        ),
        "the models start pacing at under a tenth of the kernel's first rate": all(
            (t[f"{m}_start_gbps"] < 0.1 * t["kernel_start_gbps"]).all() for m in models
        ),
    }

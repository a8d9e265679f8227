"""The kernel's and the simulator's numbers side by side (chapter 9), and the views the chapter shows.

:func:`flory_table`, :func:`iscsi_table` and :func:`busy_table` put each row of a kernel run
(:mod:`models.kernel.runs`) beside its simulation with the one-number host fit; :func:`calibration`
does the same with the calibrated host model of :mod:`models.kernel.calibrate`.  The views below
(:func:`stall_map`, :func:`stall_thresholds`, :func:`repeat_factor` ...) are what the chapter prints.
The comparisons that hold them together are in ``models.validation.kernel``.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from models import framing

if TYPE_CHECKING:  # annotations only: the scenario code runs without them
    import pandas as pd

    from models.kernel.calibrate import Fit

from .runs import (
    HEADER_BYTES,
    KERNEL_RUN_ENV,
    STALL_SHARE_PCT,
    HostFit,
    KernelRun,
    _missing,
    _mss,
    fit_host,
    load_kernel_run,
    row_scenario,
    simulate_summary,
    simulate_uncached,
    stall_possible,
)

__all__ = [
    "flory_table",
    "iscsi_table",
    "busy_table",
    "kernel_tables",
    "SCENARIO_KEY",
    "link_limited_iops",
    "calibration",
    "calibration_groups",
    "STALL_MARKS",
    "qd_max_rule",
    "stall_map",
    "stall_thresholds",
    "repeat_pairs",
    "repeat_factor",
    "calibrated_verdicts",
    "bbr_runs",
]

# --------------------------------------------------------------------------------------------------
# Side-by-side tables
# --------------------------------------------------------------------------------------------------

#: Columns that name one scenario of the iSCSI loop; rows that differ only in ``cc`` repeat a scenario.
SCENARIO_KEY = ["link", "sock_mode", "client_sock_mode", "iosize_bytes", "qd"]


def _sim_columns(table: str, df: pd.DataFrame, host: HostFit, hz: int) -> pd.DataFrame:
    sims = [simulate_summary(row_scenario(table, r, host, hz)) for r in df.to_dict("records")]
    out = df.copy()
    out["sim_iops"] = [s.iops for s in sims]
    out["sim_stalled_pct"] = [s.stalled_pct for s in sims]
    out["sim_stall_mean_ms"] = [s.stall_mean_ms for s in sims]
    out["sim_p50_us"] = [s.p50_us for s in sims]
    out["kernel_stalls"] = out["stalled_pct"] >= STALL_SHARE_PCT
    out["sim_stalls"] = out["sim_stalled_pct"] >= STALL_SHARE_PCT
    return out


def flory_table(run: KernelRun, host: HostFit | None = None) -> pd.DataFrame:
    """The Flory table with the simulator's columns (``sim_*``), both verdicts and the MSS rule."""
    host = host or fit_host(run.table("iscsi_loop"))
    df = _sim_columns("flory", run.table("flory"), host, run.hz)
    df["rule_stalls"] = [
        mode == "nagle" and stall_possible(1, HEADER_BYTES["flory"], n, int(m))
        for mode, n, m in zip(df["sock_mode"], df["payload_bytes"], _mss(df["mtu_bytes"]))
    ]
    return df


def iscsi_table(run: KernelRun, host: HostFit | None = None) -> pd.DataFrame:
    """The iSCSI-loop table with the simulator's columns, both verdicts, the MSS rule and exclusions.

    ``excluded`` holds the reason a row is left out of the exact stall verdicts ('' when it is kept): only
    a scenario the kernel measured twice (two congestion controls) with opposite verdicts is left out,
    both of its runs, since no model can agree with both.
    """
    import numpy as np

    host = host or fit_host(run.table("iscsi_loop"))
    df = _sim_columns("iscsi_loop", run.table("iscsi_loop"), host, run.hz)
    df["rule_stalls"] = [
        (mode == "nagle" and stall_possible(q, HEADER_BYTES["iscsi"], n, int(m)))
        or mode == "more_all"
        for mode, q, n, m in zip(
            df["sock_mode"], df["qd"], df["iosize_bytes"], _mss(df["mtu_bytes"])
        )
    ]
    split = df.groupby(SCENARIO_KEY)["kernel_stalls"].transform("nunique") > 1
    df["excluded"] = np.where(
        split, "the kernel's two runs of this scenario (bbr, cubic) gave opposite verdicts", ""
    )
    return df


def link_limited_iops(row) -> float:
    """Operations per second the row's rate limit allows (inf without one): response bytes per operation
    including :data:`models.framing.BUCKET_OVERHEAD_BYTES` per segment, against the token rate."""
    rate = row["rate_limit_bits_per_s"]
    if _missing(rate):
        return math.inf
    mss = int(_mss([row["mtu_bytes"]])[0])
    payload = HEADER_BYTES["iscsi"] + int(row["iosize_bytes"])
    segments = 2 if row["sock_mode"] == "nodelay" else 1  # header alone, then the data
    segments = max(segments, math.ceil(payload / mss))
    return (
        float(rate) / 8.0 / (payload + segments * framing.BUCKET_OVERHEAD_BYTES)
    )  # bits/s -> B/s -> ops/s


def busy_table(run: KernelRun, host: HostFit | None = None) -> pd.DataFrame:
    """Per run of the busy-count table: measured and simulated share of busy cycles handling more than QD.

    ``excluded`` is set where the simulated run is held by its link's token bucket (at least 90 % of the
    operations per second the rate allows): the simulated server, which pays nothing per extra segment,
    then outruns the link and sleeps between bursts, while the kernel's server, slower per segment, does
    not reach the rate (chapter 9, where the model falls short).
    """
    import pandas as pd

    host = host or fit_host(run.table("iscsi_loop"))
    b = run.table("busy_counts")
    if "client_sock_mode" in b:  # sweeps before 2026-11-28 did not record it: a Nagle client
        b = b[b["client_sock_mode"] == "nagle"]
    keys = ["link", "cc", "sock_mode", "qd", "iosize_bytes"]
    more = b[b["or_more"]].set_index(keys)["cycles_pct"]
    isc = run.table("iscsi_loop")
    loop = isc[isc["client_sock_mode"] == "nagle"].set_index(keys)
    rows = []
    for key, pct in more.items():
        row = dict(zip(keys, key))
        lrow = dict(loop.loc[key], **row)
        s = simulate_summary(row_scenario("iscsi_loop", lrow, host, run.hz))
        limit = link_limited_iops(lrow)
        excluded = ""
        if s.iops >= 0.9 * limit:
            excluded = (
                f"simulated run held by the {lrow['rate_limit_bits_per_s'] / 1e9:g} Gb/s token bucket "
                f"({s.iops:,.0f} of {limit:,.0f} operations/s; the kernel ran {lrow['iops']:,.0f})"
            )
        rows.append(
            dict(row, kernel_more_pct=float(pct), sim_more_pct=s.busy_more_pct, excluded=excluded)
        )
    return pd.DataFrame(rows)


@functools.lru_cache(maxsize=8)
def _tables_for(source_key: str) -> tuple:
    run = load_kernel_run(source_key or None)
    host = fit_host(run.table("iscsi_loop"))
    return run, host, flory_table(run, host), iscsi_table(run, host), busy_table(run, host)


def kernel_tables(directory: Path | str | None = None) -> tuple:
    """``(run, host, flory, iscsi, busy)`` for the bundled run, ``directory``, or ``$QUEUE_DEPTH_KERNEL_RUN``.

    Cached per source, so the chapter, its figure and the validation dashboard simulate each row once.
    """
    if directory is None:
        directory = os.environ.get(KERNEL_RUN_ENV) or ""
    return _tables_for(str(directory))


# ---------------------------------------------------------------------------
# The calibrated host model (models.calibrate): its tables
# ---------------------------------------------------------------------------


def _median_us(run: KernelRun):
    """``median_us(row, costs)`` for :func:`models.calibrate.fit_costs`:
    a row's simulated median operation time (not cached: the search
    tries thousands of cost sets)."""

    def median_us(row, costs) -> float:
        sc = row_scenario("iscsi_loop", row, costs, run.hz)
        return simulate_uncached(sc).p50_us

    return median_us


def _fit(run: KernelRun, train: list) -> Fit:
    """:func:`models.kernel.calibrate.fit_costs` on the training rows ``train`` of ``run``, kept in
    the simulation cache's folder when it is on (:mod:`models.kernel.simcache`): the chapter, its
    test module and the book build each ask for the same fit, in three processes, and it takes
    hundreds of simulations.  The fit is a pure function of the rows, the run's tick rate and the
    code of ``models``, which its key holds (so a changed dataset or model fits again); one process
    fits while another that asks at the same time waits for its entry (``simcache.claim``)."""
    from models.kernel import calibrate, simcache

    return simcache.once(  # (with the cache off: fitted, nothing kept)
        simcache.key_of("calibrate.fit_costs", repr(run.hz), repr(train)),
        _stored_fit,
        lambda: calibrate.fit_costs(train, _median_us(run)),
        lambda k, fit: simcache.store(k, fit.to_numbers()),
    )


def _stored_fit(k: str) -> Fit | None:
    """The fit the disk cache holds under ``k``, or ``None`` (none, or not a fit)."""
    from models.kernel import calibrate, simcache

    got = simcache.load(k)
    if got is None:
        return None
    try:
        return calibrate.Fit.from_numbers(got)
    except ValueError:
        return None


@functools.lru_cache(maxsize=8)
def _calibration_for(source_key: str) -> tuple:
    from models.kernel import calibrate

    run = load_kernel_run(source_key or None)
    isc = run.table("iscsi_loop")
    stalls = isc["stalled_pct"] >= STALL_SHARE_PCT
    df = calibrate.split(isc, stalls)
    train = df[df["role"] == "train"].to_dict("records")
    fit = _fit(run, train)
    sims = [
        simulate_summary(row_scenario("iscsi_loop", r, fit.costs, run.hz))
        for r in df.to_dict("records")
    ]
    out = df.copy()
    out["sim_p50_us"] = [x.p50_us for x in sims]
    out["sim_iops"] = [x.iops for x in sims]
    out["sim_stalls"] = [x.stalls for x in sims]
    out["sim_segments_per_op"] = [x.segments_per_op for x in sims]
    # IOPS at the median operation time: QD / p50 (us -> s)
    out["rate_iops"] = out["qd"] / (out["lat_p50_us"] * 1e-6)
    out["sim_rate_iops"] = out["qd"] / (out["sim_p50_us"] * 1e-6)
    out["ratio"] = out["sim_p50_us"] / out["lat_p50_us"]
    fl = run.table("flory")
    fl = fl[fl["stalled_pct"] < STALL_SHARE_PCT]
    fsims = [
        simulate_summary(row_scenario("flory", r, fit.costs, run.hz))
        for r in fl.to_dict("records")
    ]
    fl = fl.assign(sim_p50_us=[x.p50_us for x in fsims])
    return run, fit, out, fl


def calibration(directory: Path | str | None = None) -> tuple:
    """``(run, fit, table, flory)``: the fitted host costs
    (``models.calibrate.Fit``), every run of the loop with its role
    (``train``, ``test``, ``bbr``, ``stall``) and the simulated median,
    rate, stall verdict and segments per operation beside the measured
    ones,
    and the Flory runs without a stall with the simulated median
    exchange.  Cached per source like :func:`kernel_tables`."""
    if directory is None:
        directory = os.environ.get(KERNEL_RUN_ENV) or ""
    return _calibration_for(str(directory))


def calibration_groups(table: pd.DataFrame, role: str) -> pd.DataFrame:
    """Per link, congestion control, socket mode and size: the median
    over queue depths of the measured and simulated rate at the median
    operation time (QD / p50), and of the ratio of the medians."""
    g = table[(table["role"] == role) & ~table["sim_stalls"]]
    keys = ["link", "cc", "sock_mode", "iosize_bytes"]
    return (
        g.groupby(keys, sort=False)
        .agg(
            runs=("qd", "size"),
            qds=("qd", lambda q: f"{q.min()}-{q.max()}"),
            rate_iops=("rate_iops", "median"),
            sim_rate_iops=("sim_rate_iops", "median"),
            ratio=("ratio", "median"),
            iops=("iops", "median"),
            sim_iops=("sim_iops", "median"),
        )
        .reset_index()
    )


# ---------------------------------------------------------------------------
# Chapter 9's views of the tables: stall verdicts side by side, the MSS
# rule's thresholds, how well the kernel repeats itself
# ---------------------------------------------------------------------------

#: Marks of :func:`stall_map`: a run that stalled, one that did not, a simulator that disagrees, a run
#: left out of the exact verdicts.
STALL_MARKS = {"stall": "●", "free": "·", "differs": "≠", "excluded": "?"}


def qd_max_rule(header: int, payload: int, mss: int) -> int:
    """The largest queue depth at which a stall can form (``stall_possible``):
    ``ceil((MSS + H) / (H + N)) - 1``, the last QD whose ``QD (H + N) - H`` bytes stay below the MSS."""
    return -(-(mss + header) // (header + payload)) - 1


def stall_map(df: pd.DataFrame, index: list[str], columns: str) -> pd.DataFrame:
    """The kernel's stall verdict of every run in ``df`` (a :func:`flory_table` or :func:`iscsi_table`)
    laid out by ``index`` and ``columns``, each cell marked with :data:`STALL_MARKS`: stalled or not,
    then ``≠`` where the simulator's verdict differs and ``?`` where the run is ``excluded``."""
    excluded = df["excluded"] != "" if "excluded" in df else df["kernel_stalls"] & False
    m = STALL_MARKS
    cell = (
        df["kernel_stalls"].map({True: m["stall"], False: m["free"]})
        + (df["kernel_stalls"] != df["sim_stalls"]).map({True: m["differs"], False: ""})
        + excluded.map({True: m["excluded"], False: ""})
    )
    return df.assign(cell=cell).pivot_table(
        index=index, columns=columns, values="cell", aggfunc="first"
    )


def stall_thresholds(iscsi: pd.DataFrame) -> pd.DataFrame:
    """Per link, congestion control and response size of the kept Nagle runs of an
    :func:`iscsi_table`: the MSS, the rule's :func:`qd_max_rule`, and the largest QD that stalled in the
    kernel and in the simulator (0: none did)."""
    import pandas as pd

    ng = iscsi[(iscsi["sock_mode"] == "nagle") & (iscsi["excluded"] == "")]
    rows = []
    for (link, cc, size), g in ng.groupby(["link", "cc", "iosize_bytes"]):
        mss = framing.mss(int(g["mtu_bytes"].iloc[0]))
        rows.append(
            {
                "link": link,
                "cc": cc,
                "iosize_bytes": int(size),
                "mss_bytes": mss,
                "rule_qd_max": qd_max_rule(HEADER_BYTES["iscsi"], int(size), mss),
                "kernel_qd_max": int(g.loc[g["kernel_stalls"], "qd"].max())
                if g["kernel_stalls"].any()
                else 0,
                "sim_qd_max": int(g.loc[g["sim_stalls"], "qd"].max())
                if g["sim_stalls"].any()
                else 0,
            }
        )
    return pd.DataFrame(rows)


def repeat_pairs(iscsi: pd.DataFrame, column: str) -> pd.DataFrame:
    """The scenarios (:data:`SCENARIO_KEY`) the kernel ran under two congestion controls without a
    stall (the misuse left out): ``column`` of each run, one column per congestion control, and
    ``factor``, the larger over the smaller.  Empty when the run repeats no scenario."""
    import numpy as np

    keep = ~iscsi["kernel_stalls"] & (iscsi["sock_mode"] != "more_all")
    p = iscsi[keep].pivot_table(index=SCENARIO_KEY, columns="cc", values=column).dropna()
    if p.shape[1] != 2:
        return p.iloc[0:0].assign(factor=[])
    return p.assign(factor=np.exp(np.abs(np.log(p.iloc[:, 0] / p.iloc[:, 1]))))


def repeat_factor(iscsi: pd.DataFrame, column: str, quantile: float = 0.5) -> float:
    """The ``quantile`` of :func:`repeat_pairs`' factors, interpolated between logarithms (NaN when no
    scenario was repeated)."""
    import numpy as np

    f = repeat_pairs(iscsi, column)["factor"]
    # on the logarithms: between two middle pairs, their geometric mean
    return float(np.exp(np.log(f).quantile(quantile))) if len(f) else math.nan


def calibrated_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """The runs of a :func:`calibration` table whose simulated stall verdict under the calibrated costs
    differs from the kernel's, with ``kernel_stalls`` and ``beyond_rule`` (the MSS rule says no stall
    can form there: ``stall_possible`` is false)."""
    kernel = table["stalled_pct"] >= STALL_SHARE_PCT
    differ = table[kernel != table["sim_stalls"]]
    beyond = [
        not stall_possible(int(q), HEADER_BYTES["iscsi"], int(n), framing.mss(int(m)))
        for q, n, m in zip(differ["qd"], differ["iosize_bytes"], differ["mtu_bytes"])
    ]
    return differ.assign(kernel_stalls=kernel[differ.index], beyond_rule=beyond)


def bbr_runs(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(bbr, twins)`` of a :func:`calibration` table: the runs whose segments bbr merged (role
    ``bbr``) with ``mode_segments``, the data segments per response their socket mode writes
    (``models.calibrate.min_segments``), and the cubic runs of the same scenarios."""
    from models.kernel import calibrate

    bbr = table[table["role"] == "bbr"]
    key = ["link", "sock_mode", "iosize_bytes", "qd"]
    same = table.set_index(key).index.isin(bbr.set_index(key).index)
    twins = table[(table["cc"] == "cubic") & same]
    need = [
        calibrate.min_segments(m, int(n), framing.mss(int(u)))
        for m, n, u in zip(bbr["sock_mode"], bbr["iosize_bytes"], bbr["mtu_bytes"])
    ]
    return bbr.assign(mode_segments=need), twins

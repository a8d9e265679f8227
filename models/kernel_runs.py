"""The packet simulator beside a run of the real-kernel harness (chapter 9).

The harness (:mod:`models.measure`) writes three tables: Flory's exchange around each link's MSS
boundaries, the iSCSI-like closed loop at QD 1-64 under five server socket modes, and the server's busy
counts at QD 1-5.  This module loads a run, fits the host once (:func:`fit_host`), turns every row into a
``models.sim.Scenario`` on the same link (:func:`row_scenario`), simulates it and summarises it as the
harness does (:func:`simulate_summary`), and lays the kernel's and the simulator's numbers side by side
(:func:`flory_table`, :func:`iscsi_table`, :func:`busy_table`; :func:`calibration` for the calibrated
host model of :mod:`models.calibrate`).  The comparisons that hold them together are in
``models.validation.kernel``.

A run *stalls* when at least :data:`STALL_SHARE_PCT` of its operations took longer than :data:`STALL_MS`
(the harness's own threshold; a stalled operation waits for a timer of 40 ms or more).  A reader's own
run is used instead of the bundled one when the environment variable :data:`KERNEL_RUN_ENV` names the
folder ``python -m models.measure sweep --out DIR`` wrote.

>>> run = load_kernel_run()
>>> sorted(run.tables)
['busy_counts', 'flory', 'iscsi_loop']
>>> run.hz
250

Building and simulating a row's scenario (:func:`row_scenario`, :func:`simulate_summary`) needs only the
standard library, so chapter 9's live figure runs them in the reader's browser; NumPy, pandas and the
dataset loader are imported by the functions that read and tabulate the runs.
"""

from __future__ import annotations

import functools
import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from models import framing
from models.sim import Scenario, simulate

if TYPE_CHECKING:  # annotations only: the scenario code runs without them
    import numpy as np
    import pandas as pd

__all__ = [
    "KERNEL_RUN_ENV",
    "STALL_MS",
    "STALL_SHARE_PCT",
    "HEADER_BYTES",
    "UNLIMITED_BPS",
    "MODE_OPTIONS",
    "KernelRun",
    "HostFit",
    "HostOptions",
    "SimSummary",
    "load_kernel_run",
    "fit_host",
    "link_options",
    "row_scenario",
    "simulate_summary",
    "stall_possible",
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

#: Environment variable naming a folder written by ``python -m models.measure sweep --out DIR``.
KERNEL_RUN_ENV = "QUEUE_DEPTH_KERNEL_RUN"
#: An operation slower than this many milliseconds waited for a timer (the harness's ``STALL_US``, qdperf.c).
STALL_MS = 20.0
#: A run *stalls* when at least this share of its operations (percent) stalled.  Runs below it show at
#: most a handful of isolated slow operations (scheduling under load, or a rare race); runs above it
#: spend a timer period in every cycle (the measured shares are 20 % or more, the simulated ones 50 % or
#: more), so the verdict does not depend on where between 2 % and 15 % the line is drawn.
STALL_SHARE_PCT = 5.0
#: Bytes of the request and of the response header in each protocol (qdperf.c ``--proto``).
HEADER_BYTES = {"flory": 8, "iscsi": framing.ISCSI_HEADER_BYTES}
#: Link rate in bits per second for links without a rate limit (loopback, plain veth); a copy in
#: memory is effectively free next to the microseconds of host time.
UNLIMITED_BPS = 1e12
#: Server socket options of each socket mode (qdperf.c ``--sock``), as :class:`~models.sim.scenario.Host` fields.
MODE_OPTIONS = {
    "nagle": {},
    "nodelay": {"nodelay": True},
    "more": {"msg_more": True},
    "more_nodelay": {"nodelay": True, "msg_more": True},
    "more_all": {"msg_more": True, "msg_more_last": True},
}
_TABLES = ("flory", "iscsi_loop", "busy_counts")
_BUNDLED = "kernel6"


# --------------------------------------------------------------------------------------------------
# Loading a run
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelRun:
    """The tables of one harness sweep and what the simulator needs from its metadata.

    Attributes
    ----------
    tables : dict
        Table name to DataFrame:
        ``"flory"``, ``"iscsi_loop"``, ``"busy_counts"`` (a table the sweep did not write is absent).
    source : str
        Where the tables came from: the bundled datasets or the folder given.
    hz : int
        ``CONFIG_HZ`` of the measured kernel (timer ticks per second).
    release : str
        Kernel release string.
    load_1min : tuple of float
        Smallest and largest 1-minute load average recorded at the start of a run.
    measurement : dict
        The sidecar's ``measurement`` record (command line, times, sysctls, links); empty if absent.
    prefix : str
        The table name prefix (``kernel6`` for the bundled run); the files are ``<prefix>_<table>.csv``.
    folder : path or None
        The folder the tables were read from (``None``: the bundled data folder).
    """

    tables: dict
    source: str
    hz: int
    release: str
    load_1min: tuple = field(default=(math.nan, math.nan))
    measurement: dict = field(default_factory=dict)
    prefix: str = _BUNDLED
    folder: Path | None = None

    @property
    def flory(self) -> pd.DataFrame | None:
        return self.tables.get("flory")

    @property
    def iscsi(self) -> pd.DataFrame | None:
        return self.tables.get("iscsi_loop")

    @property
    def busy(self) -> pd.DataFrame | None:
        return self.tables.get("busy_counts")

    def table(self, name: str) -> pd.DataFrame:
        """The table ``name`` (``"flory"``, ``"iscsi_loop"``, ``"busy_counts"``); a clear error when the
        sweep did not write it."""
        if name not in _TABLES:
            raise ValueError(f"table must be one of {_TABLES}, got {name!r}")
        df = self.tables.get(name)
        if df is None:
            raise ValueError(f"{self.source}: this run has no {self.prefix}_{name} table")
        return df


def _prefix_in(folder: Path) -> str:
    names = sorted(p.name[: -len("_iscsi_loop.json")] for p in folder.glob("*_iscsi_loop.json"))
    if not names:
        names = sorted(p.name[: -len("_flory.json")] for p in folder.glob("*_flory.json"))
    if not names:
        raise ValueError(
            f"{folder}: no <prefix>_iscsi_loop.json or <prefix>_flory.json from "
            "'python -m models.measure sweep --out DIR' in this folder"
        )
    if len(names) > 1:
        raise ValueError(f"{folder}: several sweeps ({', '.join(names)}); pass prefix=")
    return names[0]


def load_kernel_run(directory: Path | str | None = None, prefix: str | None = None) -> KernelRun:
    """The bundled kernel sweep, or the one in ``directory`` (default: ``$QUEUE_DEPTH_KERNEL_RUN``).

    Every table is loaded with :func:`models.data.load`, so a folder written by the harness is checked
    against its sidecars (hash, schema, constraints) exactly as the bundled data are.
    """
    import pandas as pd

    from models import data

    if directory is None:
        directory = os.environ.get(KERNEL_RUN_ENV) or None
    if directory is not None:
        folder = Path(directory).expanduser()
        if not folder.is_dir():
            raise ValueError(
                f"directory: {folder} is not a folder (set {KERNEL_RUN_ENV} to the --out folder "
                "of 'python -m models.measure sweep')"
            )
        prefix = prefix or _prefix_in(folder)
        where, source = folder, str(folder)
    else:
        prefix = prefix or _BUNDLED
        where, source = None, f"bundled datasets {prefix}_*"
    tables, meta = {}, None
    for t in _TABLES:
        name = f"{prefix}_{t}"
        try:
            desc = data.describe(name, where)
        except data.DatasetError:
            continue
        tables[t] = data.load(name, where)
        meta = meta or desc.get("measurement")
    if "iscsi_loop" not in tables and "flory" not in tables:
        raise ValueError(f"{source}: neither {prefix}_iscsi_loop nor {prefix}_flory was found")
    kernel = (meta or {}).get("kernel", {})
    loads = pd.concat([df["load_1min"] for k, df in tables.items() if "load_1min" in df])
    return KernelRun(
        tables=tables,
        source=source,
        hz=int(kernel.get("config_hz") or 250),
        release=str(kernel.get("release", "unknown")),
        load_1min=(float(loads.min()), float(loads.max())) if len(loads) else (math.nan, math.nan),
        measurement=dict(meta or {}),
        prefix=prefix,
        folder=where,
    )


# --------------------------------------------------------------------------------------------------
# Host times, links and scenarios
# --------------------------------------------------------------------------------------------------


def _mss(mtu_bytes) -> np.ndarray:
    """MSS in bytes for the MTU column (:func:`models.framing.mss`: loopback's 65536 gives 65483)."""
    import numpy as np

    return np.array([framing.mss(int(m)) for m in np.atleast_1d(mtu_bytes)])


@dataclass(frozen=True)
class HostFit:
    """Host stage times fitted from a run's undelayed operations (seconds).

    ``rtt1_s`` is the median QD-1 operation time and ``per_op_s`` the median time per operation at QD 64
    (``1 / IOPS``), both over runs whose response leaves as one segment (``more`` and ``more_nodelay``,
    ``48 + IOSIZE <= MSS``) on links without a rate limit.  The server's per-operation time ``SP`` is
    ``per_op_s``: the server is the busier thread (it writes two ``send()`` calls per operation to the
    client's one, and the busy counts show its busy cycles outlasting the client's turnaround).  What is
    left of the QD-1 round trip is split evenly over the server's wake-up ``SL``, the client's wake-up
    ``CL`` and the client's time ``CP``: nothing in the tables tells them apart.  Path latencies are zero:
    on loopback and veth the receiving host's TCP runs inside the sender's own soft interrupt.
    """

    rtt1_s: float
    per_op_s: float
    n_rtt1: int
    n_per_op: int

    @property
    def sp_s(self) -> float:
        return self.per_op_s

    @property
    def rest_s(self) -> float:
        """Each of ``SL``, ``CL``, ``CP``: a third of ``rtt1_s - per_op_s``."""
        return max(self.rtt1_s - self.per_op_s, 0.0) / 3.0

    def scenario_options(self) -> dict:
        """The ``client`` and ``server`` parts of a :class:`~models.sim.scenario.Scenario` for these host times."""
        r = self.rest_s
        quiet = dict(tx_latency_s=0.0, rx_latency_s=0.0)
        return {
            "client": dict(proc_s=r, wake_s=r, **quiet),
            "server": dict(proc_s=self.sp_s, wake_s=r, **quiet),
        }


def fit_host(iscsi: pd.DataFrame) -> HostFit:
    """Fit :class:`HostFit` from an ``iscsi_loop`` table (see :class:`HostFit` for the recipe)."""
    need = {
        "sock_mode",
        "qd",
        "iosize_bytes",
        "mtu_bytes",
        "lat_p50_us",
        "iops",
        "rate_limit_bits_per_s",
    }
    missing = need - set(iscsi.columns)
    if missing:
        raise ValueError(f"iscsi: columns {sorted(missing)} missing")
    one_seg = (
        iscsi["sock_mode"].isin(["more", "more_nodelay"])
        & iscsi["rate_limit_bits_per_s"].isna()
        & (HEADER_BYTES["iscsi"] + iscsi["iosize_bytes"] <= _mss(iscsi["mtu_bytes"]))
    )
    if "cc" in iscsi:  # the congestion-control variants repeat the default runs
        default_cc = iscsi.loc[one_seg, "cc"].mode()
        if len(default_cc):
            one_seg &= iscsi["cc"] == default_cc.iloc[0]
    q1 = iscsi.loc[one_seg & (iscsi["qd"] == 1), "lat_p50_us"]
    top = iscsi.loc[one_seg, "qd"].max()
    qmax = iscsi.loc[one_seg & (iscsi["qd"] == top), "iops"]
    if not len(q1) or not len(qmax) or top < 8:
        raise ValueError(
            "iscsi: the fit needs more/more_nodelay runs at QD 1 and at a QD of 8 or more with "
            "one-segment responses"
        )
    rtt1 = float(q1.median()) * 1e-6  # microseconds -> seconds
    per_op = float((1.0 / qmax).median())  # operations per second -> seconds per operation
    return HostFit(rtt1_s=rtt1, per_op_s=min(per_op, rtt1), n_rtt1=len(q1), n_per_op=len(qmax))


def _missing(value) -> bool:
    """True for a missing table value: ``None``, NaN or pandas' ``NA``."""
    try:
        return value is None or math.isnan(float(value))
    except TypeError:  # float(pandas.NA) raises
        return True


def link_options(mtu_bytes: float, rate_bits_per_s: float | None = None) -> dict:
    """The ``link`` part of the simulated scenario for a row's MTU and rate limit.

    The MTU is the interface's (loopback: 65536; the simulator applies the IPv4 cap to the MSS itself).
    A rate-limited veth is the harness's ``tbf`` qdisc with a burst of two full frames,
    ``2 * (mtu + 14)`` bytes (``models/measure/netns.py``): a token bucket, not a wire, so a response of
    up to two segments leaves at once.
    """
    mtu = int(mtu_bytes)
    rate = rate_bits_per_s
    if rate is None or _missing(rate):
        return dict(mtu=mtu, bandwidth_bps=UNLIMITED_BPS)
    frame = framing.bucket_bytes(framing.mss(mtu))  # one full frame as tbf counts it
    return dict(mtu=mtu, bandwidth_bps=float(rate), bucket_bytes=2 * frame)


def stall_possible(qd: int, header: int, payload: int, mss: int) -> bool:
    """Whether the whole queue's responses can sit behind one unacknowledged short segment.

    A stall needs a header sent alone (nothing else in flight) with everything written after it held by
    Nagle as one *partial* segment: the data of that response plus the ``qd - 1`` other responses,
    ``qd * (header + payload) - header`` bytes, must stay below the MSS (Butterfield 2017: queue depths
    below the number of responses that fill a packet).  For Flory's exchange (``qd = 1``) this is
    ``payload < mss``.
    """
    return qd * (header + payload) - header < mss


def _ops(qd: int) -> tuple[int, int]:
    """(operations measured, warm-up operations) for a simulation at queue depth ``qd``.

    The warm-up passes the quick-ACK start of the connection; the measured span covers at least 20 timer
    periods of a stalled queue and 100 operations, in whole periods: a stalled queue completes QD + 1
    operations per period, so the count is a multiple of QD + 1 (no half cycle at the window's edge).  The
    simulation is deterministic and its cycle repeats exactly, so a longer span changes no number shown.
    """
    return (qd + 1) * max(20, -(-100 // (qd + 1))), 2 * qd + 20


class HostOptions(Protocol):
    """Host times a scenario can be built from: :class:`HostFit`, or the calibrated
    :class:`models.calibrate.HostCosts`."""

    def scenario_options(self) -> dict: ...


def _field(row: Any, key: str, default: Any = None) -> Any:
    """``row[key]`` for a mapping (a record) or ``row.key`` for a named tuple; ``default`` if absent."""
    if hasattr(row, "get"):
        return row.get(key, default)
    return getattr(row, key, default)


def _required(row: Any, key: str) -> Any:
    """``row``'s value of ``key``; a ``ValueError`` naming it when it is absent or missing."""
    value = _field(row, key)
    if value is None:
        raise ValueError(f"row: {key!r} is missing")
    return value


def row_scenario(table: str, row: Any, host: HostOptions, hz: int = 250) -> Scenario:
    """The :class:`~models.sim.scenario.Scenario` of one row of the ``flory`` or ``iscsi_loop`` table, with the
    host times of ``host`` (a :class:`HostFit` or a :class:`models.calibrate.HostCosts`)."""
    if table not in ("flory", "iscsi_loop"):
        raise ValueError(f"table must be 'flory' or 'iscsi_loop', got {table!r}")
    mode = _field(row, "sock_mode")
    if mode not in MODE_OPTIONS:
        raise ValueError(f"sock_mode must be one of {sorted(MODE_OPTIONS)}, got {mode!r}")
    proto = "flory" if table == "flory" else "iscsi"
    h = HEADER_BYTES[proto]
    payload = int(_required(row, "payload_bytes" if table == "flory" else "iosize_bytes"))
    qd = 1 if table == "flory" else int(_required(row, "qd"))
    ops, warm = _ops(qd)
    hosts = host.scenario_options()
    hosts["server"].update(MODE_OPTIONS[mode])
    hosts["client"]["nodelay"] = _field(row, "client_sock_mode", "nagle") == "nodelay"
    return Scenario(
        workload=dict(
            qd=qd, request_writes=(h,), response_writes=(h, payload) if payload else (h,)
        ),
        link=link_options(_required(row, "mtu_bytes"), _field(row, "rate_limit_bits_per_s")),
        kernel=dict(profile="linux-6", hz=int(hz), kernel_timers=True),
        run=dict(ops=ops, warmup_ops=warm),
        **hosts,
    )


@dataclass(frozen=True)
class SimSummary:
    """The simulated counterpart of one harness row (times in the harness's units)."""

    iops: float
    stalled_pct: float
    stall_mean_ms: float
    p50_us: float
    busy_more_pct: float
    segments_per_op: float = math.nan  # server data segments per operation

    @property
    def stalls(self) -> bool:
        return self.stalled_pct >= STALL_SHARE_PCT


@functools.lru_cache(maxsize=4096)
def simulate_summary(scenario: Scenario) -> SimSummary:
    """Simulate ``scenario`` and summarise it as the harness does (cached: scenarios are immutable)."""
    r = simulate(scenario)
    lat_ms = [t * 1e3 for t in r.rtts_s]  # seconds -> milliseconds
    slow = [t for t in lat_ms if t > STALL_MS]
    busy = r.hosts["server"].busy_counts_with_open()  # the busy cycle still running counts too
    cycles = sum(busy.values())
    more = sum(n for k, n in busy.items() if k > scenario.workload.qd)
    return SimSummary(
        iops=float(r.iops),
        stalled_pct=float(100.0 * len(slow) / max(len(lat_ms), 1)),
        stall_mean_ms=math.fsum(slow) / len(slow) if slow else math.nan,
        p50_us=statistics.median(lat_ms) * 1e3 if lat_ms else math.nan,  # ms -> us
        busy_more_pct=float(100.0 * more / cycles) if cycles else math.nan,
        segments_per_op=(r.data_segments["S>C"] / max(r.completed_total, 1)),
    )


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
        return simulate_summary.__wrapped__(sc).p50_us

    return median_us


@functools.lru_cache(maxsize=8)
def _calibration_for(source_key: str) -> tuple:
    from models import calibrate

    run = load_kernel_run(source_key or None)
    isc = run.table("iscsi_loop")
    stalls = isc["stalled_pct"] >= STALL_SHARE_PCT
    df = calibrate.split(isc, stalls)
    train = df[df["role"] == "train"].to_dict("records")
    fit = calibrate.fit_costs(train, _median_us(run))
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
    (:class:`models.calibrate.Fit`), every run of the loop with its role
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
    """The largest queue depth at which a stall can form (:func:`stall_possible`):
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
    can form there: :func:`stall_possible` is false)."""
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
    (:func:`models.calibrate.min_segments`), and the cubic runs of the same scenarios."""
    from models import calibrate

    bbr = table[table["role"] == "bbr"]
    key = ["link", "sock_mode", "iosize_bytes", "qd"]
    same = table.set_index(key).index.isin(bbr.set_index(key).index)
    twins = table[(table["cc"] == "cubic") & same]
    need = [
        calibrate.min_segments(m, int(n), framing.mss(int(u)))
        for m, n, u in zip(bbr["sock_mode"], bbr["iosize_bytes"], bbr["mtu_bytes"])
    ]
    return bbr.assign(mode_segments=need), twins

"""Bjørgeengen's (2010) experiment in the book's terms: its numbers, read from ``data/``, and the plant.

Everything measured is read from the bundled datasets (``thesis2010_*``) through :func:`models.data.load`;
nothing is typed in except unit conversions.  The thesis writes "MB" for 2^20 bytes (its 200 MB job is
fio's ``size=200m``), so rates in MB/s are converted with :data:`MB`.

What the thesis does not print is stated as an assumption here, in one place:

* the login keys of its sessions (:func:`assumed_session`): the IET target's built-in values against the
  open-iscsi initiator's offers (:mod:`models.iscsi`).  From them :func:`delayed_waits` counts how many
  delayed target-to-initiator messages a QD = 1 command waits for in turn;
* the delay ladder under the controller (:func:`text_ladder`, the book's reading of section 4.4: 0.5 ms
  steps to 20 ms) as against the classes listing B.2 builds (:func:`listed_ladder`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from models import data, iscsi

from .plant import SharedDiskPlant, calibrate
from .throttle import DelayThrottle, rounds_from_rates, rtt0_from_rate

__all__ = [
    "MB",
    "EndPoints",
    "end_points",
    "fio_job",
    "controller_parameters",
    "closed_loop_facts",
    "thesis_plant",
    "fitted_rounds",
    "rtt0",
    "assumed_session",
    "delayed_waits",
    "text_ladder",
    "listed_ladder",
    "OverheadTest",
    "overhead_ttest",
    "interference_statements",
]

#: The thesis's megabyte (bytes): fio's 'm' suffix.
MB = 2**20


@dataclass(frozen=True)
class EndPoints:
    """Rates (bytes/s) with no delay and with the largest delay of the sweep, for one direction."""

    direction: str
    rate0_Bps: float
    delay_s: float
    rate_Bps: float


def end_points(direction: str) -> EndPoints:
    """The stated end points of the delay sweep (``thesis2010_delay_rate``) for ``"read"`` or ``"write"``."""
    if direction not in ("read", "write"):
        raise ValueError(f"direction must be 'read' or 'write', got {direction!r}")
    df = data.load("thesis2010_delay_rate")
    rows = df[df["direction"] == direction].sort_values("delay_ms")
    lo, hi = rows.iloc[0], rows.iloc[-1]
    return EndPoints(
        direction,
        float(lo["rate_MBps"]) * MB,
        float(hi["delay_ms"]) * 1e-3,  # ms -> s
        float(hi["rate_MBps"]) * MB,
    )


def fio_job(name: str) -> dict:
    """One row of ``thesis2010_fio_jobs`` as a dict."""
    df = data.load("thesis2010_fio_jobs").set_index("job")
    if name not in df.index:
        raise ValueError(f"name must be one of {sorted(df.index)}, got {name!r}")
    return df.loc[name].to_dict()


def controller_parameters(config: str = "reg_pl") -> dict:
    """One row of ``thesis2010_pid_parameters`` as a dict (missing values as NaN)."""
    df = data.load("thesis2010_pid_parameters").set_index("config")
    if config not in df.index:
        raise ValueError(f"config must be one of {sorted(df.index)}, got {config!r}")
    return df.loc[config].to_dict()


def closed_loop_facts():
    """``thesis2010_closed_loop`` indexed by case."""
    return data.load("thesis2010_closed_loop").set_index("case")


def assumed_session(immediate_data: bool | None = None) -> iscsi.Session:
    """The session the thesis's initiators most likely logged in with (the thesis prints no keys).

    The target is IET (iscsitarget 1.4.19 from section 5.4 on, table 3.2) with its built-in keys, the
    initiators open-iscsi 2.0-871 (table 3.1) with their ``iscsid.conf`` defaults; negotiation follows
    RFC 7143.  IET's manual and its code disagree on ImmediateData's default, so it can be forced either
    way; InitialR2T=Yes on the target decides the write path whatever the initiator offers (OR rule).
    """
    target = dict(iscsi.IET_DEFAULTS)
    if immediate_data is not None:
        target["ImmediateData"] = bool(immediate_data)
    return iscsi.negotiate(iscsi.OPEN_ISCSI_DEFAULTS, target)


def delayed_waits(direction: str, immediate_data: bool | None = None) -> int:
    """Delayed messages a QD = 1 command of the sweep's job waits for in turn: its round trips.

    The throttle (listing A.1) marks every packet the target sends to the initiator, so each
    target-to-initiator leg of the exchange is held ``d`` once (its packets are held side by side).
    A read's data and response form one such leg; a 64 KiB write under InitialR2T=Yes has two, the R2T
    and the response.
    """
    if direction not in ("read", "write"):
        raise ValueError(f"direction must be 'read' or 'write', got {direction!r}")
    size = int(fio_job(f"delay_{direction}")["blocksize_bytes"])
    return iscsi.round_trips(direction, size, assumed_session(immediate_data))


def text_ladder() -> DelayThrottle:
    """The book's reading of section 4.4's ladder: 0.5 ms steps up to 20 ms, one class per mark.

    Section 4.4 states the step, the largest delay and a count of 21 steps, and the three do not fit
    together (21 steps of 0.5 ms reach 10.5 ms); this ladder keeps the step and the largest delay,
    which gives 40 steps, the marks listing A.2's controller can set.  An assumption, stated in
    chapter 10 and audited in ``models.validation.throttling``.
    """
    design = controller_parameters("design_text")
    step_s = float(design["delay_step_ms"]) * 1e-3  # ms -> s
    top = round(float(design["max_delay_ms"]) / float(design["delay_step_ms"]))
    return DelayThrottle(step_s, top)


def listed_ladder() -> DelayThrottle:
    """Listing B.2's 20 classes (0.1 ms + 0.5 ms steps) under listing A.2's marks up to 40.

    Marks above the last class match no filter and leave unshaped (see :class:`DelayThrottle`).
    """
    cls = data.load("thesis2010_delay_classes").sort_values("mark")
    delays_s = cls["delay_ms"].to_numpy() * 1e-3  # ms -> s
    step_s = round(float(delays_s[1] - delays_s[0]), 12)  # 0.6 - 0.1 ms, without float residue
    ladder = DelayThrottle(
        step_s,
        int(controller_parameters("reg_pl")["max_throttle_steps"]),
        first_s=float(delays_s[0]),
        classes=int(cls["mark"].max()),
    )
    for mark, dly in zip(cls["mark"], delays_s):
        if abs(ladder.delay(int(mark)) - dly) > 1e-12:
            raise ValueError(
                f"thesis2010_delay_classes: mark {mark} is not on a uniform ladder ({dly!r} s)"
            )
    return ladder


@dataclass(frozen=True)
class OverheadTest:
    """The overhead t-test of section 5.8 recomputed from the printed figures (times in seconds).

    The printed output gives both means, the mean difference and its 99 % interval, and the number of
    runs; not the spreads.  Welch's test (R's default) with equal spreads has ``2(n - 1)`` degrees of
    freedom, which turns the interval's half-width into the standard error ``se`` and a per-run
    standard deviation ``sd``; ``scipy.stats.ttest_ind_from_stats`` then gives ``t`` and ``p``.  If the
    spreads differ, Welch's degrees of freedom fall towards ``n - 1``: ``p_fewest_df`` is the p-value
    there, the least favourable case.
    """

    direction: str
    runs: int
    with_mean_s: float
    without_mean_s: float
    mean_diff_s: float
    ci_low_s: float
    ci_high_s: float
    se_s: float
    sd_s: float
    t: float
    df: float
    p_value: float
    p_fewest_df: float
    ci_recomputed_s: tuple
    operations: int
    per_operation_s: float

    @property
    def ci_centre_s(self) -> float:
        """Midpoint of the printed interval (a t interval is symmetric about the difference)."""
        return (self.ci_low_s + self.ci_high_s) / 2


def overhead_ttest(direction: str) -> OverheadTest:
    """Recompute the section 5.8 t-test for ``"read"`` or ``"write"`` (see :class:`OverheadTest`)."""
    from scipy import stats  # scipy only where the test is recomputed

    if direction not in ("read", "write"):
        raise ValueError(f"direction must be 'read' or 'write', got {direction!r}")
    r = data.load("thesis2010_overhead").set_index("direction").loc[direction]
    n = int(r["repeats"])
    lo, hi = float(r["ci99_low_s"]), float(r["ci99_high_s"])
    centre = (lo + hi) / 2
    df = 2.0 * (n - 1)  # Welch's degrees of freedom when both spreads are equal
    t_crit = float(stats.t.ppf(0.995, df))  # two-sided 99 %
    se = (hi - lo) / 2 / t_crit
    sd = se / math.sqrt(2.0 / n)  # se of a difference of two means of n runs each
    without = float(r["without_tc_mean_s"])
    res = stats.ttest_ind_from_stats(without + centre, sd, n, without, sd, n, equal_var=False)
    v = sd**2 / n  # squared standard error of each mean
    welch_df = (2 * v) ** 2 / (
        2 * v**2 / (n - 1)
    )  # Welch-Satterthwaite; 2(n - 1) for equal spreads
    half = float(stats.t.ppf(0.995, welch_df)) * se
    p_fewest = float(
        2 * stats.t.sf(centre / ((hi - lo) / 2 / float(stats.t.ppf(0.995, n - 1))), n - 1)
    )
    job = fio_job(f"overhead_{direction}")
    ops = int(job["size_bytes"]) // int(job["blocksize_bytes"])  # bytes / bytes per operation
    return OverheadTest(
        direction,
        n,
        float(r["with_tc_mean_s"]),
        without,
        float(r["mean_diff_s"]),
        lo,
        hi,
        se,
        sd,
        float(res.statistic),
        float(welch_df),
        float(res.pvalue),
        p_fewest,
        (centre - half, centre + half),
        ops,
        float(r["mean_diff_s"]) / ops,
    )


def interference_statements():
    """``thesis2010_interference`` indexed by statement, with the case lists parsed into tuples."""
    df = data.load("thesis2010_interference").set_index("statement")
    df["writers"] = [tuple(int(x) for x in v.split(";")) for v in df["writers"]]
    df["delay_ms"] = [tuple(float(x) for x in v.split(";")) for v in df["delay_ms"]]
    return df


@cache
def thesis_plant(rounds_per_write: float | None = None, stations: int = 1) -> SharedDiskPlant:
    """The plant calibrated to the thesis: 12 unthrottled writers at 39 MB/s while the reader waits 45 ms
    (20 ms set point + 25 ms improvement), one writer alone at 15 MB/s, and the reader's 256 KiB/s of
    8 KiB reads.  Each write waits for ``rounds_per_write`` delayed messages, by default the count the
    iSCSI exchange gives (:func:`delayed_waits`: 2, the R2T and the response)."""
    if rounds_per_write is None:
        rounds_per_write = float(delayed_waits("write"))
    facts = closed_loop_facts()
    unreg = facts.loc["unregulated"]
    pid20 = facts.loc["pid_20ms"]
    wait_unreg_s = (
        float(pid20["setpoint_ms"]) + float(pid20["read_wait_reduction_ms"])
    ) * 1e-3  # ms -> s
    reader = fio_job("smalljob")
    read_rate = float(reader["rate_limit_Bps"]) / float(
        reader["blocksize_bytes"]
    )  # bytes/s / bytes = reads/s
    writer = fio_job("interference")
    single = end_points("write").rate0_Bps
    return calibrate(
        float(unreg["aggregate_write_MBps"]) * MB,
        wait_unreg_s,
        single,
        writers=int(unreg["write_threads"]),
        read_rate_per_s=read_rate,
        write_bytes=int(writer["blocksize_bytes"]),
        rounds_per_write=rounds_per_write,
        stations=stations,
    )


def fitted_rounds(direction: str) -> float:
    """Delayed messages per operation implied by the end points (QD = 1, the fio job's block size)."""
    ep = end_points(direction)
    size = fio_job(f"delay_{direction}")["blocksize_bytes"]
    return rounds_from_rates(ep.rate0_Bps, ep.rate_Bps, ep.delay_s, size)


def rtt0(direction: str) -> float:
    """Undelayed round trip (s) of the delay sweep's job: ``IOSIZE / rate0``."""
    ep = end_points(direction)
    return rtt0_from_rate(ep.rate0_Bps, fio_job(f"delay_{direction}")["blocksize_bytes"])

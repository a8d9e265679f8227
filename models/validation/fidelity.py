"""Issue 22's fidelity goals: one host model, trained on a stated subset of a kernel sweep, tested
on the rest.

The goals, each stated before any result is computed:

``verdicts``
    every stall verdict right (the harness's threshold: :data:`~models.kernel.STALL_SHARE_PCT` of
    operations over :data:`~models.kernel.STALL_MS`), counted over the test rows;
``stall end``
    the largest stalling queue depth right for every (link, congestion control, client mode, server
    mode, size) group of the test rows (0 when no QD stalls);
``iops``
    on links without a rate limit, the test rows that did not stall in the kernel: the simulated IOPS
    within :data:`IOPS_TOL` of the kernel's in at least :data:`IOPS_SHARE` of them, and the median ratio
    (simulated / kernel) at QD 1 and at QD >= 8 inside :data:`RATIO_RANGE`.

Rows behind a rate limit are reported apart (:func:`link_limited`): their rate is the limit's, which any
host model reproduces, so they never count as a host-model pass.

The training subset (:data:`TRAIN`) is one link (the loopback), the default congestion control, two
sizes and both client modes; every other row is a test.

>>> import pandas as pd
>>> df = pd.DataFrame({"link": ["loopback", "veth-1500"], "cc": ["bbr", "bbr"],
...                    "iosize_bytes": [512, 512], "client_sock_mode": ["nodelay"] * 2,
...                    "rate_limit_bits_per_s": [None, None]})
>>> list(roles(df, default_cc="bbr"))
['train', 'test']
"""

from __future__ import annotations

import functools
import math
import multiprocessing
import os
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "TRAIN",
    "IOPS_TOL",
    "IOPS_SHARE",
    "RATIO_RANGE",
    "GROUP_KEY",
    "Goal",
    "roles",
    "link_limited",
    "largest_stalling_qd",
    "stall_end_table",
    "iops_table",
    "goals",
    "simulated",
    "row_summary",
    "workers",
    "FIELD_PREFIX",
    "FIELD_TABLES",
    "SIZE_GOAL_BYTES",
    "ProfileHost",
    "field_scenario",
    "Evaluation",
    "evaluate",
    "simulate_loop",
    "resimulate",
    "PACING_PREFIX",
    "PACING_TABLE",
]

#: The field sweep's tables (``python -m models.measure sweep --plan field``, then ``--plan flory``).
FIELD_PREFIX = "kernel6_field"
FIELD_TABLES = ("kernel6_field_iscsi_loop", "kernel6_field_flory")
#: ``tcp_xmit_size_goal`` of the sweep's links, bytes: loopback and veth offer GSO/TSO, so a send
#: buffer grows to 64 KiB.
SIZE_GOAL_BYTES = 65536

#: The training subset: rows matching every entry (``cc`` is the sweep's default congestion control).
TRAIN = {"link": ("loopback",), "iosize_bytes": (512, 4096)}
#: The IOPS tolerance, relative.  Why a quarter: the kernel repeats one scenario's IOPS under two
#: congestion controls only within about that on the loaded two-CPU machine of the sweep (chapter 9
#: measures the repeat factor), so a model cannot be held closer than its data repeat.
IOPS_TOL = 0.25
#: The share of unlimited-link, non-stalled test rows that must be within :data:`IOPS_TOL`.
IOPS_SHARE = 0.80
#: The range the median ratio (simulated / kernel IOPS) must fall in, at QD 1 and at QD >= 8.
RATIO_RANGE = (0.8, 1.25)
#: bbr against reno and cubic on the veth links (``python -m models.measure sweep --plan pacing``).
PACING_TABLE = "kernel6_pacing_iscsi_loop"
PACING_PREFIX = PACING_TABLE.removesuffix("_iscsi_loop")  # the sweep's --prefix
#: One group of the stall-end goal: everything that sets a row but the queue depth.
GROUP_KEY = ["link", "cc", "client_sock_mode", "sock_mode", "iosize_bytes"]


@dataclass(frozen=True)
class Goal:
    """One goal: what it asks, the value reached, whether it is met, and the rows it counted."""

    name: str
    target: str
    value: str
    met: bool
    rows: int

    def as_row(self) -> dict[str, Any]:
        return {
            "goal": self.name,
            "target": self.target,
            "reached": self.value,
            "met": "yes" if self.met else "no",
            "rows": self.rows,
        }


def roles(df: pd.DataFrame, default_cc: str | None = None) -> pd.Series:
    """``"train"`` for the rows of :data:`TRAIN` under ``default_cc`` (default: the most common
    congestion control of ``df``), ``"test"`` for the others."""
    import pandas as pd

    cc = default_cc if default_cc is not None else str(df["cc"].mode().iloc[0])
    train = df["cc"] == cc
    for key, values in TRAIN.items():
        train &= df[key].isin(values)
    return pd.Series(["train" if t else "test" for t in train], index=df.index, name="role")


def link_limited(df: pd.DataFrame) -> pd.Series:
    """True for the rows measured behind a rate limit (a ``tbf`` qdisc)."""
    return df["rate_limit_bits_per_s"].notna()


def largest_stalling_qd(df: pd.DataFrame, stalls: str) -> pd.Series:
    """Per :data:`GROUP_KEY` group, the largest queue depth whose row stalls by column ``stalls``
    (0 when none does)."""
    return df.groupby(GROUP_KEY, sort=False, dropna=False).apply(
        lambda g: int(g.loc[g[stalls], "qd"].max()) if g[stalls].any() else 0,
        include_groups=False,
    )


def stall_end_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per group of rows (:data:`GROUP_KEY`): the largest stalling QD in the kernel's runs and in the
    simulator's, and whether they agree.  ``df`` needs ``kernel_stalls`` and ``sim_stalls``."""
    out = largest_stalling_qd(df, "kernel_stalls").rename("kernel_qd").to_frame()
    out["sim_qd"] = largest_stalling_qd(df, "sim_stalls")
    out["right"] = out["kernel_qd"] == out["sim_qd"]
    return out.reset_index()


def iops_table(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the IOPS goal (test rows, no rate limit, no stall in the kernel) with the ratio of
    simulated to kernel IOPS and whether it is within :data:`IOPS_TOL`."""
    keep = (df["role"] == "test") & ~link_limited(df) & ~df["kernel_stalls"]
    out = df.loc[keep].copy()
    out["ratio"] = out["sim_iops"] / out["iops"]
    out["within"] = (out["ratio"] - 1.0).abs() <= IOPS_TOL
    return out


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if len(values) else math.nan


def _in_range(x: float) -> bool:
    return RATIO_RANGE[0] <= x <= RATIO_RANGE[1]


def goals(df: pd.DataFrame) -> list[Goal]:
    """The goals for a table with ``role``, ``kernel_stalls``, ``sim_stalls``, ``iops`` and
    ``sim_iops`` columns (one row per kernel run)."""
    test = df[df["role"] == "test"]
    right = int((test["kernel_stalls"] == test["sim_stalls"]).sum())
    ends = stall_end_table(test)
    ends_right = int(ends["right"].sum())
    io = iops_table(df)
    share = float(io["within"].mean()) if len(io) else math.nan
    q1 = _median(list(io.loc[io["qd"] == 1, "ratio"]))
    q8 = _median(list(io.loc[io["qd"] >= 8, "ratio"]))
    lo, hi = RATIO_RANGE
    return [
        Goal(
            "stall verdicts",
            "every test row",
            f"{right} of {len(test)}",
            right == len(test),
            len(test),
        ),
        Goal(
            "largest stalling QD",
            "every group",
            f"{ends_right} of {len(ends)}",
            ends_right == len(ends),
            len(ends),
        ),
        Goal(
            f"IOPS within {IOPS_TOL:.0%}",
            f">= {IOPS_SHARE:.0%} of rows",
            f"{share:.0%}",
            share >= IOPS_SHARE,
            len(io),
        ),
        Goal(
            "median ratio, QD 1",
            f"{lo}-{hi}",
            f"{q1:.2f}",
            _in_range(q1),
            int((io["qd"] == 1).sum()),
        ),
        Goal(
            "median ratio, QD >= 8",
            f"{lo}-{hi}",
            f"{q8:.2f}",
            _in_range(q8),
            int((io["qd"] >= 8).sum()),
        ),
    ]


def workers() -> int:
    """Processes :func:`evaluate` simulates rows in: the CPUs this process may use, at most 2
    (the machines the book is built on have two), and 1 where ``fork`` is not available."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(2, cpus or 1))


def _each(summarise: Callable[[dict[str, Any]], Any], rows: list, processes: int) -> list:
    """``summarise`` of every row, in order; rows are independent (each scenario has its own
    seeds), so splitting them over ``processes`` forked processes changes no number."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be a whole number of at least 1, got {processes!r}")
    if processes == 1 or len(rows) < 2 * processes:
        return [summarise(r) for r in rows]
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(processes, mp_context=context) as pool:
        return list(pool.map(summarise, rows, chunksize=max(1, len(rows) // (8 * processes))))


def simulated(
    df: pd.DataFrame,
    summarise: Callable[[dict[str, Any]], Any],
    default_cc: str | None = None,
    processes: int = 1,
) -> pd.DataFrame:
    """``df`` with ``role``, ``sim_iops``, ``sim_stalls``, ``kernel_stalls``,
    ``sim_client_acks`` (pure ACKs per operation), ``sim_segments`` (the server's data segments
    per operation), ``sim_busy_more_pct`` (the share of the
    simulated server's busy periods that handled more than QD requests, percent) columns:
    ``summarise(row)`` simulates one row and returns its :class:`models.kernel.SimSummary`.  With
    ``processes`` above 1 the rows are simulated in that many forked processes (``summarise`` must
    then pickle: a module-level function or a :func:`functools.partial` of one, not a lambda)."""
    from models.kernel import STALL_SHARE_PCT

    out = df.copy()
    # a Flory table (payload_bytes, no iosize_bytes) is all test: nothing is fitted on it
    out["role"] = roles(df, default_cc) if "iosize_bytes" in df else "test"
    sims = _each(summarise, df.to_dict("records"), processes)
    out["sim_iops"] = [s.iops for s in sims]
    out["sim_stalls"] = [bool(s.stalls) for s in sims]
    out["sim_client_acks"] = [s.client_acks_per_op for s in sims]
    out["sim_segments"] = [s.segments_per_op for s in sims]
    out["sim_busy_more_pct"] = [s.busy_more_pct for s in sims]
    out["kernel_stalls"] = out["stalled_pct"] >= STALL_SHARE_PCT
    return out


class ProfileHost:
    """A host profile (:mod:`models.sim.hostprofile`) as the host of a kernel row's scenario
    (:func:`models.kernel.row_scenario`); ``machine=False`` leaves out that both ends ran on the
    profile's one machine (each thread and each soft interrupt then has a CPU of its own)."""

    def __init__(self, profile: Any, machine: bool = True) -> None:
        self.profile = profile
        self.machine = machine

    @property
    def cpus(self) -> int | None:
        """The CPUs of the profile's machine (``None`` if it does not say, or ``machine`` is
        off)."""
        n = self.profile.machine.get("cpus") if self.machine else None
        return int(n) if n else None

    def scenario_options(self) -> dict:
        return {"client": self.profile.side("client"), "server": self.profile.side("server")}


def field_scenario(
    table: str, row: dict[str, Any], host: Any, hz: int, cpus: int | None = None
) -> Any:
    """The scenario of one field-sweep row with the mechanisms of issue 22 on: the row's congestion
    control (its window, and bbr's pacing), the links' GSO size goal, a veth pair's whole
    super-packets, a ``tbf`` limit's releases by its watchdog timer, late by the sending host's
    wake-up (``Link.watchdog_wake``), and, when ``host`` names its machine's CPUs (``host.cpus``,
    or ``cpus``), both ends on that one machine: a frame's receive soft interrupt runs on the
    sender's CPU (:func:`models.kernel.runs.one_machine`; the sweep runs client and server on one
    machine, over the loopback or a veth pair)."""
    from models.kernel import row_scenario
    from models.kernel.runs import one_machine

    sc = row_scenario(table, row, host, hz)
    cpus = cpus or getattr(host, "cpus", None)
    more: dict[str, Any] = {"link": {**(one_machine(cpus) if cpus else {}), "watchdog_wake": True}}
    if str(row.get("link", "")).startswith("veth"):
        # a veth pair passes a GSO super-packet whole (it offers TSO and segments nothing): the
        # receiving stack takes the aggregate GRO would have made, and ACKs it once
        more.update(client={"gro": True}, server={"gro": True})
    return sc.replace(
        kernel={
            "congestion_control": str(row.get("cc") or "profile"),
            "size_goal": SIZE_GOAL_BYTES,
        },
        **more,
    )


@dataclass(frozen=True)
class Evaluation:
    """:func:`evaluate`'s result: the iSCSI-loop table with the simulator's columns and roles,
    the Flory rows of the steps (:func:`~models.validation.flory.step_rows`) likewise, Flory's steps, and the goals."""

    iscsi: Any
    flory: Any
    steps: Any
    goals: list


def row_summary(make: Callable[..., Any], table: str, host: Any, hz: int, row: dict) -> Any:
    """One row simulated and summarised as the harness does (module level: it pickles)."""
    from models.kernel import simulate_summary

    return simulate_summary(make(table, row, host, hz))


def _on_kernel(kernel: str, table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`field_scenario` on the kernel profile ``kernel`` (module level: it pickles)."""
    return field_scenario(table, row, host, hz).replace(kernel={"profile": kernel})


def evaluate(
    profile: Any = None, run: Any = None, windows: bool = True, processes: int | None = None
) -> Evaluation:
    """Simulate every row of the field sweep (``run``, default the bundled one) with the host
    ``profile`` (default the shipped one, :func:`models.sim.hostprofile.shipped`) and compute the
    goals; ``windows=False`` leaves the congestion window, pacing and size goal out.  The rows
    are simulated in ``processes`` processes (default :func:`workers`)."""
    from models.kernel import load_kernel_run, row_scenario
    from models.sim import hostprofile

    run = run or load_kernel_run(prefix=FIELD_PREFIX)
    host = ProfileHost(profile or hostprofile.shipped())
    make = field_scenario if windows else row_scenario
    n = workers() if processes is None else processes

    def summarise(table: str) -> Callable[[dict[str, Any]], Any]:
        return functools.partial(row_summary, make, table, host, run.hz)

    from models.validation import flory as FL  # it builds on this module

    isc = simulated(run.table("iscsi_loop"), summarise("iscsi_loop"), processes=n)
    # Flory's rows leave out the harness's warm-up (FL.flory_evaluation says why); the iSCSI-loop
    # rows only their quick-ACK start: at their rates the warm-up is thousands of operations each
    warmed = functools.partial(
        row_summary, functools.partial(FL.harness_warmed, make), "flory", host
    )
    fl = simulated(
        FL.step_rows(run.table("flory")), functools.partial(warmed, run.hz), processes=n
    )
    steps = FL.flory_steps(fl)
    return Evaluation(isc, fl, steps, goals(isc) + [FL.flory_goal(steps)])


def simulate_loop(
    run: Any,
    profile: Any = None,
    processes: int | None = None,
    kernel: str | None = None,
    scenario: Callable[..., Any] | None = None,
    rows: Callable[[pd.DataFrame], pd.Series] | None = None,
) -> pd.DataFrame:
    """The iSCSI-loop table of a kernel sweep (``run``, a :class:`models.kernel.KernelRun`, e.g.
    ``load_kernel_run(prefix=PACING_PREFIX)``) with the simulator's columns, each row run as
    :func:`evaluate` runs the field sweep's (:func:`field_scenario`, ``profile`` default the shipped
    one, the run's own timer rate), on the kernel profile ``kernel`` if given (a name of
    ``models.sim.PROFILES``; default the scenario's), or made by ``scenario`` instead of
    :func:`field_scenario` (same arguments; a module-level function, so that it pickles); with
    ``rows`` (a mask of the table, e.g. :func:`link_limited`) only the rows it selects."""
    from models.sim import hostprofile

    if kernel is not None and scenario is not None:
        raise ValueError("give kernel or scenario, not both")
    host = ProfileHost(profile or hostprofile.shipped())
    n = workers() if processes is None else processes
    make = field_scenario if kernel is None else functools.partial(_on_kernel, kernel)
    if scenario is not None:
        make = scenario
    summarise = functools.partial(row_summary, make, "iscsi_loop", host, run.hz)
    table = run.table("iscsi_loop")
    if rows is not None:
        table = table[rows(table)]
    return simulated(table, summarise, processes=n)


def resimulate(
    rows: pd.DataFrame,
    profile: Any,
    hz: int,
    processes: int | None = None,
    scenario: Callable[..., Any] | None = None,
) -> pd.DataFrame:
    """Rows of an evaluated iSCSI-loop table (:attr:`Evaluation.iscsi`) simulated again as
    :func:`evaluate` does, with another host ``profile`` (e.g. a wrong model), each row's scenario
    made by ``scenario`` instead of :func:`field_scenario` if given (same arguments, a
    module-level function); ``hz`` is the sweep's timer rate.  Returns the rows with new
    ``sim_iops`` and ``sim_stalls``."""
    host = ProfileHost(profile)
    n = workers() if processes is None else processes
    summarise = functools.partial(row_summary, scenario or field_scenario, "iscsi_loop", host, hz)
    sims = _each(summarise, rows.to_dict("records"), n)
    return rows.assign(sim_iops=[s.iops for s in sims], sim_stalls=[bool(s.stalls) for s in sims])

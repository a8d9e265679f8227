"""The rate limit's bucket: the ``tbf`` watchdog's late release held to runs that vary the bucket.

A rate-limited veth in the harness is a ``tbf`` qdisc whose bucket holds two full frames
(:data:`models.framing.TBF_BURST_FRAMES`).  A frame that finds too few tokens waits for the
qdisc's watchdog timer, and on these virtual machines that timer fires late; the simulator's
``Link.watchdog_wake`` (:class:`models.sim.rules.qdisc.WatchdogWake`) charges that lateness.  A
deeper bucket absorbs it: tokens keep arriving while the timer is late, and with room for them the
next frames leave at once.  So the mechanism predicts a rate that rises with the bucket's depth and
stops rising once the bucket holds what arrives while the timer is late.

The burst plan (``python -m models.measure sweep --plan burst --pin apart``, :data:`DATASET`)
measured that on the second machine: the 1 Gb/s veth at MTU 1500 with buckets of 2, 4, 10 and 40
frames (:data:`models.measure.plan.BURST_FRAMES`; the depth is in each row's link label), NODELAY
on both ends, 4, 16 and 64 KiB, QD 1, 8 and 32; and the whole plan a second time (:data:`AGAIN`).

Three models meet its rows (:data:`MODELS`), all the second machine's lowest-loss ``calibrate``
profile (:func:`models.validation.apart.lowest_loss`), simulated as the field evaluation simulates
(:func:`~models.validation.fidelity.field_scenario`): ``measured timer`` late by the watchdog's
lateness measured on that machine (:func:`models.validation.tbf_timer.measured_late_s`,
``Host.tbf_late_s``), ``wake-up proxy`` late by the host's measured thread wake-ups that stood in
for it before, and ``on-time watchdog`` with ``watchdog_wake`` off (the wrong model: a timer that
fires when the tokens are there).  Nothing in any of them was fitted to these rows, so every row is
a test; the second draw stands beside them as an audit (:data:`AUDIT`).  The tolerance is the field
evaluation's (:data:`~models.validation.fidelity.IOPS_TOL`), stated there before any result.

The goals (:data:`GOALS`), stated before the results:

* ``IOPS within 25 %``: at least :data:`~models.validation.fidelity.IOPS_SHARE` of the rows;
* ``median ratio, 2 frames, QD 1`` and ``... QD >= 8``: the simulated over the kernel's rate on the
  harness's own bucket, inside :data:`~models.validation.fidelity.RATIO_RANGE`;
* ``bucket's gain``: for every size and QD, the change of rate from 2 frames to the deepest bucket,
  in the kernel's direction and within 25 % of its size (the criterion of Flory's steps,
  :func:`~models.validation.flory.flory_steps`).

>>> GOALS[0], len(GOALS)
('IOPS within 25%', 4)
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from models import framing
from models.validation.fidelity import IOPS_SHARE, IOPS_TOL, RATIO_RANGE, Goal, field_scenario

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "PREFIX",
    "DATASET",
    "AGAIN_PREFIX",
    "AGAIN",
    "MODELS",
    "AUDIT",
    "GOALS",
    "measured_timer",
    "on_time",
    "simulate",
    "pinned_limited",
    "gains",
    "bucket_cost_us",
    "goals",
    "findings",
    "BurstEvaluation",
    "evaluate",
]

#: The burst sweep (``--prefix``) and its table, named in full so that
#: :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_burst"
DATASET = "kernel6_burst_iscsi_loop"
#: The same plan measured a second time, right after.
AGAIN_PREFIX = "kernel6_burst2"
AGAIN = "kernel6_burst2_iscsi_loop"
#: The models, in the order tables show them.
MODELS = ("measured timer", "wake-up proxy", "on-time watchdog")
#: The kernel's second draw, standing where a model stands.
AUDIT = "second draw"
#: The goals, in order.
GOALS = (
    f"IOPS within {IOPS_TOL:.0%}",
    "median ratio, 2 frames, QD 1",
    "median ratio, 2 frames, QD >= 8",
    "bucket's gain",
)


def measured_timer(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`~models.validation.fidelity.field_scenario` with the watchdog late by its measured
    lateness (:func:`models.validation.tbf_timer.measured_late_s`) on both ends, in place of the
    host's wake-ups (module level: it pickles)."""
    from models.validation.tbf_timer import measured_late_s

    late = {"tbf_late_s": measured_late_s()}
    return field_scenario(table, row, host, hz).replace(server=late, client=late)


def on_time(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`~models.validation.fidelity.field_scenario` with the watchdog firing on time (the
    wrong model; module level: it pickles)."""
    return field_scenario(table, row, host, hz).replace(link={"watchdog_wake": False})


def _scenario(model: str) -> Any:
    """How rows are made under ``model``: a scenario function (``None``: the field
    evaluation's own, :func:`~models.validation.fidelity.field_scenario`, the wake-ups standing
    in for the timer)."""
    return {MODELS[0]: measured_timer, MODELS[1]: None, MODELS[2]: on_time}[model]


def simulate(model: str, profile: Any = None, processes: int | None = None) -> pd.DataFrame:
    """The burst runs (:data:`DATASET`) with the simulator's columns under ``model`` (one of
    :data:`MODELS`), the host ``profile`` (default the second machine's lowest-loss profile),
    and a ``burst_frames`` column (the bucket's depth, from the link label)."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import apart
    from models.validation.fidelity import simulate_loop

    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    profile = profile or hostprofile.shipped(apart.lowest_loss())
    out = simulate_loop(
        load_kernel_run(prefix=PREFIX), profile, processes=processes, scenario=_scenario(model)
    )
    out["role"] = "test"  # nothing was fitted on these rows
    return _with_frames(out)


def pinned_limited(model: str, processes: int | None = None) -> pd.DataFrame:
    """The rate-limited runs of the field sweep pinned a CPU apart
    (:data:`models.validation.apart.DATASET`), simulated under ``model`` (one of :data:`MODELS`)
    with the second machine's lowest-loss profile, as :func:`simulate` simulates the burst runs."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import apart
    from models.validation.fidelity import link_limited, simulate_loop

    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    return simulate_loop(
        load_kernel_run(prefix=apart.PREFIX),
        hostprofile.shipped(apart.lowest_loss()),
        processes=processes,
        scenario=_scenario(model),
        rows=link_limited,
    )


def _with_frames(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    out["burst_frames"] = [framing.burst_frames(str(label)) for label in out["link"]]
    out["ratio"] = out["sim_iops"] / out["iops"]
    out["within"] = (out["ratio"] - 1.0).abs() <= IOPS_TOL
    return out


def _shallow_and_deep(table: pd.DataFrame) -> Iterator[tuple[int, int, Any, Any]]:
    """Per payload size and QD that ran both: (size, QD, the row at the harness's bucket, the
    row at the deepest bucket of ``table``)."""
    deepest = int(table["burst_frames"].max())
    for (size, qd), g in table.groupby(["iosize_bytes", "qd"]):
        by = g.set_index("burst_frames")
        if framing.TBF_BURST_FRAMES in by.index and deepest in by.index:
            yield int(size), int(qd), by.loc[framing.TBF_BURST_FRAMES], by.loc[deepest]


def gains(table: pd.DataFrame) -> pd.DataFrame:
    """Per payload size and QD: the kernel's and the other side's change of rate from the
    harness's bucket (:data:`~models.framing.TBF_BURST_FRAMES`) to the deepest of ``table``, and
    whether the other side's change has the kernel's direction and is within
    :data:`~models.validation.fidelity.IOPS_TOL` of its size.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"iosize_bytes": [4096] * 2, "qd": [1, 1], "burst_frames": [2, 40],
    ...                   "iops": [100.0, 130.0], "sim_iops": [100.0, 100.0]})
    >>> gains(t)[["kernel_gain", "sim_gain", "right"]].values.tolist()
    [[1.3, 1.0, False]]
    """
    import pandas as pd

    rows = []
    for size, qd, shallow, deep in _shallow_and_deep(table):
        k = float(deep["iops"] / shallow["iops"])
        s = float(deep["sim_iops"] / shallow["sim_iops"])
        same_way = (k > 1) == (s > 1)
        rows.append(
            {
                "iosize_bytes": size,
                "qd": qd,
                "kernel_gain": k,
                "sim_gain": s,
                "right": bool(same_way and abs(s / k - 1.0) <= IOPS_TOL),
            }
        )
    return pd.DataFrame(rows)


def bucket_cost_us(table: pd.DataFrame) -> pd.DataFrame:
    """Per payload size and QD: what the harness's shallow bucket costs each operation, in
    microseconds, against the deepest bucket of ``table`` (``1 / IOPS`` at
    :data:`~models.framing.TBF_BURST_FRAMES` frames less ``1 / IOPS`` at the deepest), in the
    kernel (``kernel_us``) and on the other side (``sim_us``).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"iosize_bytes": [4096] * 2, "qd": [8, 8], "burst_frames": [2, 40],
    ...                   "iops": [25_000.0, 28_000.0], "sim_iops": [20_000.0, 28_000.0]})
    >>> bucket_cost_us(t).round(1)[["kernel_us", "sim_us"]].values.tolist()
    [[4.3, 14.3]]
    """
    import pandas as pd

    rows = []
    for size, qd, shallow, deep in _shallow_and_deep(table):
        rows.append(
            {
                "iosize_bytes": size,
                "qd": qd,
                # operations per second -> seconds per operation -> microseconds
                "kernel_us": (1.0 / shallow["iops"] - 1.0 / deep["iops"]) * 1e6,
                "sim_us": (1.0 / shallow["sim_iops"] - 1.0 / deep["sim_iops"]) * 1e6,
            }
        )
    return pd.DataFrame(rows)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def goals(table: pd.DataFrame) -> list[Goal]:
    """The goals of :data:`GOALS` for an evaluated table (``burst_frames``, ``qd``, ``ratio``,
    ``within``, ``iops``, ``sim_iops``)."""
    lo, hi = RATIO_RANGE
    share = float(table["within"].mean())
    two = table[table["burst_frames"] == framing.TBF_BURST_FRAMES]
    q1 = _median(list(two.loc[two["qd"] == 1, "ratio"]))
    q8 = _median(list(two.loc[two["qd"] >= 8, "ratio"]))
    g = gains(table)
    right = int(g["right"].sum())
    return [
        Goal(
            GOALS[0],
            f">= {IOPS_SHARE:.0%} of rows",
            f"{share:.0%}",
            share >= IOPS_SHARE,
            len(table),
        ),
        Goal(GOALS[1], f"{lo}-{hi}", f"{q1:.2f}", lo <= q1 <= hi, int((two["qd"] == 1).sum())),
        Goal(GOALS[2], f"{lo}-{hi}", f"{q8:.2f}", lo <= q8 <= hi, int((two["qd"] >= 8).sum())),
        Goal(GOALS[3], "every size and QD", f"{right} of {len(g)}", right == len(g), len(g)),
    ]


@dataclass(frozen=True)
class BurstEvaluation:
    """:func:`evaluate`'s result: per model and the audit (``tables``, keyed by :data:`MODELS`
    and :data:`AUDIT`) the burst runs with the other side's columns, and the goals' values side
    by side (``goals``: one row per goal of :data:`GOALS`, one column each; :func:`goals` of a
    table says which are met)."""

    tables: dict
    goals: Any


@functools.cache
def evaluate(processes: int | None = None) -> BurstEvaluation:
    """Every model of :data:`MODELS` and the audit held to the burst runs (cached: the data
    and the models are fixed)."""
    import pandas as pd

    from models import data
    from models.validation import draws

    tables: dict[str, pd.DataFrame] = {m: simulate(m, processes=processes) for m in MODELS}
    again = draws.repeat_table(data.load(DATASET), data.load(AGAIN))
    again["role"] = "test"
    tables[AUDIT] = _with_frames(again)
    table = pd.DataFrame(
        {name: {g.name: g.value for g in goals(t)} for name, t in tables.items()}
    ).loc[list(GOALS)]
    return BurstEvaluation(tables, table)


def findings(ev: BurstEvaluation, pinned: bool = True) -> dict[str, Any]:
    """What chapter 9 states about an evaluation: per model and the audit the goals met
    (``met``), the gains (``gains``) and the shallow bucket's cost (``cost``, by size and QD);
    and the values it quotes: ``runs``, ``share`` (% within a quarter, measured timer), ``q1`` and
    ``q8`` (its median ratios on the two-frame bucket), ``k64`` and ``s64`` (the kernel's and its
    gain at 64 KiB, QD 8), ``groups``, ``proxy_right`` and ``proxy_share``, ``k{qd}_{size}``,
    ``s{qd}_{size}``, ``p{qd}_{size}`` (what the two-frame bucket costs an operation at QD 1 and 8,
    sizes ``4`` and ``64`` KiB, in the kernel, the measured timer and the proxy, us), ``ot_q1``
    and ``ot_max`` (the on-time timer's QD-1 median, and its largest gain where the kernel gains
    more than 30 %, ``big_n`` cases), ``again`` (% of the second draw within a quarter); with
    ``pinned`` also ``lim_n``, ``lim_m``/``lim_p`` (the pinned sweep's link-limited runs, median
    simulated over kernel rate, measured timer and proxy) and ``lim_m_in``/``lim_p_in`` (% within
    a quarter)."""
    from models.validation.apart import limited_ratio

    measured, proxy, on_time_ = MODELS
    tables = ev.tables
    met = {name: {g.name: g.met for g in goals(t)} for name, t in tables.items()}
    gain = {name: gains(t) for name, t in tables.items()}
    cost = {
        name: bucket_cost_us(tables[name]).set_index(["iosize_bytes", "qd"]) for name in MODELS
    }
    big = gain[on_time_][gain[on_time_]["kernel_gain"] > 1.3]
    two = tables[measured][tables[measured]["burst_frames"] == framing.TBF_BURST_FRAMES]
    at64 = gain[measured].set_index(["iosize_bytes", "qd"]).loc[(65536, 8)]
    out: dict[str, Any] = {
        "met": met,
        "gains": gain,
        "cost": cost,
        "big": big,
        "runs": len(tables[measured]),
        "share": float(tables[measured]["within"].mean() * 100),
        "q1": float(two.loc[two["qd"] == 1, "ratio"].median()),
        "q8": float(two.loc[two["qd"] >= 8, "ratio"].median()),
        "k64": float(at64["kernel_gain"]),
        "s64": float(at64["sim_gain"]),
        "groups": len(gain[measured]),
        "proxy_right": int(gain[proxy]["right"].sum()),
        "proxy_share": float(tables[proxy]["within"].mean() * 100),
        "ot_q1": float(tables[on_time_].query("burst_frames == 2 and qd == 1")["ratio"].median()),
        "ot_max": float(big["sim_gain"].max()),
        "big_n": len(big),
        "again": float(tables[AUDIT]["within"].mean() * 100),
    }
    for size, tag in ((65536, "64"), (4096, "4")):
        for qd in (1, 8):
            out[f"k{qd}_{tag}"] = float(cost[measured].loc[(size, qd), "kernel_us"])
            out[f"s{qd}_{tag}"] = float(cost[measured].loc[(size, qd), "sim_us"])
            out[f"p{qd}_{tag}"] = float(cost[proxy].loc[(size, qd), "sim_us"])
    if pinned:
        for name, tag in ((measured, "m"), (proxy, "p")):
            lim = pinned_limited(name)
            out["lim_n"] = len(lim)
            out[f"lim_{tag}"] = limited_ratio(lim)
            within = ((lim["sim_iops"] / lim["iops"] - 1.0).abs() <= IOPS_TOL).mean()
            out[f"lim_{tag}_in"] = float(within * 100)
    return out

"""The kernel held to itself: more than one draw of the same field runs.

A kernel run is one draw: the same scenario measured again on the same idle machine gives another
rate.  :func:`repeat_table` puts a second draw where the simulator stands, so that
:func:`~models.validation.fidelity.goals` says how far the kernel repeats itself (an audit of the
data, not a test of a model); :func:`pooled` makes one reference of several draws, the median of each
scenario's runs, and :func:`with_reference` holds an evaluated table to it instead of to one draw.

>>> import pandas as pd
>>> key = {k: [v] * 2 for k, v in zip(ROW_KEY, ["loopback", 65536, None, "bbr", "nagle",
...                                            "nodelay", 8, 512])}
>>> one = pd.DataFrame({**key, "qd": [8, 16], "iops": [1000.0, 2000.0], "stalled_pct": [0.0, 0.0]})
>>> two = one.assign(iops=[1200.0, 1000.0])
>>> three = one.assign(iops=[1100.0, 1500.0])
>>> list(pooled([one, two, three])["iops"]), list(pooled([one, two, three])["draws"])
([1100.0, 1500.0], [3, 3])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from models.validation.fidelity import FIELD_TABLES, Goal, goals, roles

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DRAW_TABLES",
    "bundled_draws",
    "ROW_KEY",
    "repeat_table",
    "repeat_goals",
    "pooled",
    "with_reference",
]

#: The field sweep's iSCSI-loop table and its repeats, in the order they ran: the whole sweep
#: (``sweep --plan field``), the whole sweep again (``--prefix kernel6_field2``), and a seeded sample
#: of its runs a third time (``sweep --plan repeat``).
DRAW_TABLES = (
    FIELD_TABLES[0],
    "kernel6_field2_iscsi_loop",
    "kernel6_repeat_iscsi_loop",
)
#: Everything that sets a run of the iSCSI loop: two rows with the same key are the same scenario.
ROW_KEY = [
    "link",
    "mtu_bytes",
    "rate_limit_bits_per_s",
    "cc",
    "sock_mode",
    "client_sock_mode",
    "qd",
    "iosize_bytes",
]


def bundled_draws() -> list[pd.DataFrame]:
    """The tables of :data:`DRAW_TABLES`, each checked against its sidecar."""
    from models import data

    return [data.load(name) for name in DRAW_TABLES]


def _stalls(df: pd.DataFrame, column: str = "stalled_pct") -> pd.Series:
    from models.kernel import STALL_SHARE_PCT

    return df[column] >= STALL_SHARE_PCT


def repeat_table(field: pd.DataFrame, again: pd.DataFrame) -> pd.DataFrame:
    """The kernel held to itself: each run of ``again`` (the same scenario measured a second time)
    beside its row of the ``field`` table, in the columns :func:`goals` reads.

    The second run stands where the simulator stands (``sim_iops``, ``sim_stalls``), so the goals
    computed on this table say how far the kernel repeats itself: an audit of the field table and
    the ceiling no host model can be expected to pass (the model is held to one of two draws).
    Roles are the field table's.  Every run of ``again`` must have exactly one field row."""
    base = field.copy()
    base["role"] = roles(field)
    base["kernel_stalls"] = _stalls(base)
    second = again[ROW_KEY + ["iops", "stalled_pct"]].rename(
        columns={"iops": "sim_iops", "stalled_pct": "again_stalled_pct"}
    )
    merged = base.merge(second, on=ROW_KEY, how="inner", validate="one_to_one")
    if len(merged) != len(again):
        raise ValueError(
            f"again: {len(again) - len(merged)} of its {len(again)} runs have no field row"
        )
    merged["sim_stalls"] = _stalls(merged, "again_stalled_pct")
    return merged


def repeat_goals(table: pd.DataFrame, whole: bool = False) -> list[Goal]:
    """:func:`goals` on a :func:`repeat_table`; the largest stalling QD only if the second draw
    ran the ``whole`` sweep (a sample leaves a group's queue depths incomplete)."""
    return [g for g in goals(table) if whole or g.name != "largest stalling QD"]


def pooled(draws: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One reference of several draws: the rows of the first draw, each scenario's ``iops`` and
    ``stalled_pct`` replaced by their median over every draw that ran it, with ``draws`` (how many
    did) and ``iops_spread`` (their largest IOPS over their smallest)."""
    import pandas as pd

    if not draws:
        raise ValueError("draws: give at least one table")
    every = pd.concat([d[ROW_KEY + ["iops", "stalled_pct"]] for d in draws], ignore_index=True)
    by = every.groupby(ROW_KEY, dropna=False, sort=False)
    stats = by.agg(
        iops=("iops", "median"),
        stalled_pct=("stalled_pct", "median"),
        draws=("iops", "size"),
        iops_max=("iops", "max"),
        iops_min=("iops", "min"),
    ).reset_index()
    stats["iops_spread"] = stats.pop("iops_max") / stats.pop("iops_min")
    stats = stats.astype(draws[0][ROW_KEY].dtypes.to_dict())  # grouping turns empty keys to floats
    first = draws[0].drop(columns=["iops", "stalled_pct"])
    return first.merge(stats, on=ROW_KEY, how="left", validate="one_to_one")


def with_reference(evaluated: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """``evaluated`` (a table of :func:`~models.validation.fidelity.evaluate`, the simulator's
    columns beside one draw) held to ``reference`` instead (e.g. :func:`pooled`): its ``iops``,
    ``stalled_pct`` and ``kernel_stalls`` are the reference's; the simulator's columns and the
    roles stay.  Both must have the same scenarios."""
    ref = reference[ROW_KEY + ["iops", "stalled_pct"]]
    out = evaluated.drop(columns=["iops", "stalled_pct"]).merge(
        ref, on=ROW_KEY, how="inner", validate="one_to_one"
    )
    if len(out) != len(evaluated) or len(out) != len(reference):
        raise ValueError(
            f"reference: {len(reference)} scenarios, evaluated: {len(evaluated)}, "
            f"{len(out)} in both; they must be the same"
        )
    out["kernel_stalls"] = _stalls(out)
    return out

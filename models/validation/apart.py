"""The field sweep with a CPU each: the host models held to runs whose placement is fixed.

The field sweep (:mod:`models.validation.fidelity`) leaves its client and server where the
scheduler puts them, and on these two-CPU machines that is mostly one CPU for both (chapter 9,
"Where the two ends run"): a placement the simulator's one-machine host, a CPU per end, does not
model, and one that no iSCSI deployment has, since its initiator and target are separate
machines.  The same plan was measured on the second machine (:mod:`models.validation.machines`)
with the server pinned to one CPU and the client to the other (``python -m models.measure sweep
--plan field --pin apart``, :data:`DATASET`), and the repeat plan's seeded sample of it a second
time, also pinned apart (:data:`AGAIN`).

Two host models meet its rows (:data:`MODELS`):

``as shipped``
    the first machine's profile (``data/hosts/kernel6.json``), unchanged;
``calibrated``
    the second machine's own ``calibrate`` profile with the lowest fit loss of those bundled
    (:func:`lowest_loss`): the rule ``calibrate --tries`` applies, chosen by the fit's loss on its
    own eight runs, not by any row of this sweep.

Two audits stand beside them, kernel runs where the simulator stands (:data:`AUDITS`): the second
draw of the sample against the first (how far the kernel repeats itself with this placement), and
the same machine's unpinned runs of the same scenarios (``kernel6_machine2``, the repeat sample
the scheduler placed) held as a model of the pinned ones (what the placement changes).

The roles, the tolerance and the goals are the field evaluation's
(:func:`~models.validation.fidelity.roles`, :func:`~models.validation.fidelity.goals`), stated
there before any result; nothing in either model was fitted to these rows.  A sample cannot tell
the largest stalling QD of a group, so the audits leave that goal out (``-``).

>>> sorted(set(GOALS) - set(SAMPLE_GOALS))
['largest stalling QD']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from models.validation import machines
from models.validation.fidelity import IOPS_TOL, goals, simulate_loop

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "PREFIX",
    "DATASET",
    "AGAIN_PREFIX",
    "AGAIN",
    "MODELS",
    "AUDITS",
    "GOALS",
    "SAMPLE_GOALS",
    "lowest_loss",
    "profiles",
    "on_one_cpu",
    "simulate",
    "verdict_misses",
    "limited_ratio",
    "deep_rate",
    "op_time_us",
    "BUSY_QD",
    "busy_split",
    "BUSY_GAP_PCT",
    "BUSY_KERNEL_MIN",
    "busy_findings",
    "ApartEvaluation",
    "evaluate",
]

#: The sweep pinned apart (``--prefix``) and its table, named in full so that
#: :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_field_apart"
DATASET = "kernel6_field_apart_iscsi_loop"
#: The repeat plan's sample, pinned apart, measured after it.
AGAIN_PREFIX = "kernel6_field_apart2"
AGAIN = "kernel6_field_apart2_iscsi_loop"
#: The host models, in the order tables show them.
MODELS = ("as shipped", "calibrated")
#: Kernel runs that stand where a model stands (audits, not tests).
AUDITS = ("second draw, a CPU each", "the scheduler's placement")
#: Every goal of the field evaluation, in its order.
GOALS = (
    "stall verdicts",
    "largest stalling QD",
    f"IOPS within {IOPS_TOL:.0%}",
    "median ratio, QD 1",
    "median ratio, QD >= 8",
)
#: The goals a sample can tell.
SAMPLE_GOALS = machines.GOALS


def lowest_loss() -> str:
    """The name of the second machine's bundled ``calibrate`` profile whose fit matched its own
    eight runs best (lowest ``fit.loss``; ``data/hosts/<name>.json``)."""
    from models.sim import hostprofile

    return min(
        machines.CALIBRATE_PROFILES,
        key=lambda n: float(hostprofile.shipped(n).records["fit"]["loss"]),
    )


def profiles() -> dict[str, Any]:
    """The host profiles of :data:`MODELS`, by name."""
    from models.sim import hostprofile

    return dict(zip(MODELS, (hostprofile.shipped(), hostprofile.shipped(lowest_loss()))))


def on_one_cpu(profile: Any) -> Any:
    """``profile`` with its machine given one CPU, so that the simulator runs both ends and their
    soft interrupts on it (:func:`models.kernel.runs.one_machine`): the placement the first
    machine's scheduler mostly chose, and the wrong model for runs pinned a CPU apart."""
    import copy

    from models.sim import hostprofile

    d = copy.deepcopy(hostprofile.load(profile).to_dict())
    d["machine"]["cpus"] = 1
    return hostprofile.load(d)


def simulate(profile: Any, processes: int | None = None) -> pd.DataFrame:
    """The pinned runs (:data:`DATASET`) simulated with ``profile`` as :func:`evaluate` simulates
    them, with the field evaluation's roles."""
    from models.kernel import load_kernel_run

    return simulate_loop(load_kernel_run(prefix=PREFIX), profile, processes=processes)


def verdict_misses(table: pd.DataFrame) -> pd.DataFrame:
    """The test rows of an evaluated table whose stall verdict the simulator gets wrong, with
    ``missed`` (a kernel stall the simulator does not have) and ``queued`` (a missed stall on a
    rate-limited link, :func:`~models.validation.fidelity.link_limited`, where the kernel still ran
    at least half the simulated rate: its operations were not held by a timer but queued behind the
    limit, QD of them for about QD / IOPS, near the harness's stall threshold).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"role": ["test"] * 3, "rate_limit_bits_per_s": [1e9, 1e9, None],
    ...                   "kernel_stalls": [True, True, False], "sim_stalls": [False] * 2 + [True],
    ...                   "iops": [1400.0, 180.0, 9e4], "sim_iops": [1800.0, 9e4, 500.0]})
    >>> verdict_misses(t)[["missed", "queued"]].values.tolist()
    [[True, True], [True, False], [False, False]]
    """
    from models.validation.fidelity import link_limited

    test = table[table["role"] == "test"]
    out = test[test["kernel_stalls"] != test["sim_stalls"]].copy()
    out["missed"] = out["kernel_stalls"]
    out["queued"] = out["missed"] & link_limited(out) & (out["iops"] >= 0.5 * out["sim_iops"])
    return out


def limited_ratio(table: pd.DataFrame) -> float:
    """The median simulated over kernel rate of an evaluated table's rate-limited rows
    (:func:`~models.validation.fidelity.link_limited`), every role.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"rate_limit_bits_per_s": [1e9, 1e9, None],
    ...                   "iops": [100.0, 200.0, 5.0], "sim_iops": [120.0, 200.0, 50.0]})
    >>> limited_ratio(t)
    1.1
    """
    from models.validation.fidelity import link_limited

    lim = table[link_limited(table)]
    return float((lim["sim_iops"] / lim["iops"]).median())


def deep_rate(table: pd.DataFrame, size: int = 65536) -> float:
    """The kernel's median rate, operations per second, of ``size``-byte responses at QD 8 and
    above on unlimited links.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"rate_limit_bits_per_s": [None, None, 1e9, None],
    ...                   "iosize_bytes": [65536] * 4, "qd": [8, 32, 8, 1],
    ...                   "iops": [60e3, 66e3, 2e3, 20e3]})
    >>> deep_rate(t)
    63000.0
    """
    from models.validation.fidelity import link_limited

    keep = (table["iosize_bytes"] == size) & (table["qd"] >= 8) & ~link_limited(table)
    return float(table.loc[keep, "iops"].median())


def op_time_us(table: pd.DataFrame, column: str = "sim_iops") -> pd.Series:
    """Each row's mean operation time in microseconds by Little's law, QD over the rate in
    ``column`` (operations per second).

    >>> import pandas as pd
    >>> op_time_us(pd.DataFrame({"qd": [32], "sim_iops": [1600.0]})).tolist()
    [20000.0]
    """
    return table["qd"] / table[column] * 1e6  # seconds -> microseconds


#: From this queue depth on, :func:`busy_split` asks whether the server kept busy.
BUSY_QD = 4


def busy_split(io: pd.DataFrame) -> pd.DataFrame:
    """The rows of an IOPS table (:func:`~models.validation.fidelity.iops_table`, with
    ``sim_busy_more_pct``) split by whether the server kept busy: below :data:`BUSY_QD`; from it
    on, where the simulated server's busy periods mostly handled more than QD requests (it went on
    serving as requests came back), and where they did not (it served the queue, slept, and woke
    to the next batch).  Per part: runs, the median of the kernel's mean busy period (requests its
    server handled between two sleeps), the runs within the tolerance (percent) and the median
    ratio of simulated to kernel rate.

    >>> import pandas as pd
    >>> io = pd.DataFrame({"qd": [1, 8, 8, 8], "mean_busy_count": [1.0, 900.0, 800.0, 3.0],
    ...                    "sim_busy_more_pct": [0.0, 100.0, 0.0, 0.0],
    ...                    "within": [True, True, False, False], "ratio": [1.0, 0.9, 0.6, 0.7]})
    >>> busy_split(io)["runs"].tolist(), busy_split(io)["within_pct"].tolist()
    ([1, 1, 2], [100.0, 100.0, 0.0])
    """
    import pandas as pd

    deep = io["qd"] >= BUSY_QD
    sim_busy = io["sim_busy_more_pct"] > 50
    parts = {
        f"QD below {BUSY_QD}": ~deep,
        "simulated server kept busy": deep & sim_busy,
        "simulated server slept between batches": deep & ~sim_busy,
    }
    rows = []
    for keep in parts.values():
        t = io[keep]
        rows.append(
            {
                "runs": len(t),
                "kernel_busy_median": float(t["mean_busy_count"].median()),
                "within_pct": float(t["within"].mean() * 100),
                "median_ratio": float(t["ratio"].median()),
            }
        )
    return pd.DataFrame(rows, index=pd.Index(list(parts), name="runs of"))


#: Percentage points by which the runs whose simulated server slept between batches fall short of
#: the share within tolerance, at least, for :func:`busy_findings` to say the misses gather there.
BUSY_GAP_PCT = 30.0
#: Requests per busy period (the kernel's server, median over a part's runs) above which it is said
#: to have kept serving, for :func:`busy_findings`: QD is at most 64, so a server that slept after
#: each batch would show a few dozen at most.
BUSY_KERNEL_MIN = 1000.0


def busy_findings(split: pd.DataFrame, kernel_min: float = BUSY_KERNEL_MIN) -> dict[str, bool]:
    """What chapter 9 says about a :func:`busy_split` table, each as a claim that holds or not:
    the runs whose simulated server kept busy meet the share within tolerance and those where it
    slept miss it by :data:`BUSY_GAP_PCT` points or more; the slept runs are slower than the
    tolerance allows and the busy ones are not; and the kernel's server kept serving in both
    parts (more than ``kernel_min`` requests per busy period, median) but not below
    :data:`BUSY_QD`.

    >>> import pandas as pd
    >>> split = pd.DataFrame({"runs": [136, 222, 126],
    ...                       "kernel_busy_median": [2.0, 11877.0, 6024.0],
    ...                       "within_pct": [82.0, 87.0, 35.0], "median_ratio": [1.01, 0.9, 0.68]})
    >>> all(busy_findings(split).values())
    True
    >>> split.loc[2, "within_pct"] = 70.0  # a model whose slept runs miss no more than the rest
    >>> [k for k, v in busy_findings(split).items() if not v]
    ['the misses gather where the simulated server slept']
    """
    from models.validation.fidelity import IOPS_SHARE

    low, busy, slept = (row for _, row in split.iterrows())
    return {
        "the misses gather where the simulated server slept": bool(
            busy.within_pct >= IOPS_SHARE * 100 > slept.within_pct + BUSY_GAP_PCT
        ),
        "the slept runs are too slow, the busy ones are not": bool(
            slept.median_ratio < 1 - IOPS_TOL < busy.median_ratio
        ),
        "the kernel's server kept serving from QD 4 on": bool(
            min(busy.kernel_busy_median, slept.kernel_busy_median)
            > kernel_min
            > 2 * low.kernel_busy_median
        ),
    }


@dataclass(frozen=True)
class ApartEvaluation:
    """:func:`evaluate`'s result: per model and per audit (``tables``, keyed by :data:`MODELS` and
    :data:`AUDITS`) the pinned runs with the other side's columns, and the goals side by side
    (``goals``: one row per goal of :data:`GOALS`, one column each)."""

    tables: dict
    goals: Any


def _values(table: pd.DataFrame, names: tuple[str, ...]) -> dict[str, str]:
    return {g.name: (g.value if g.name in names else "-") for g in goals(table)}


def evaluate(processes: int | None = None) -> ApartEvaluation:
    """Both models of :data:`MODELS` and both audits of :data:`AUDITS` held to the pinned runs
    (the bundled :data:`DATASET`; the audits to its scenarios that the sample ran), each row
    simulated as the field evaluation simulates its own
    (:func:`~models.validation.fidelity.simulate_loop`)."""
    import pandas as pd

    from models import data

    tables: dict[str, pd.DataFrame] = {}
    for name, profile in profiles().items():
        tables[name] = simulate(profile, processes)  # with the roles
    again = data.load(AGAIN)
    tables[AUDITS[0]] = machines.kernel_beside(again, data.load(DATASET))
    tables[AUDITS[1]] = machines.kernel_beside(again, data.load(machines.DATASET))
    table = pd.DataFrame(
        {name: _values(t, GOALS if name in MODELS else SAMPLE_GOALS) for name, t in tables.items()}
    ).loc[list(GOALS)]
    return ApartEvaluation(tables, table)

"""Where the two ends run: the kernel's rate with both processes on one CPU, on a CPU each, or
where the scheduler puts them (``data/kernel6_placement``, ``tools/placement_sweep.py``), beside
the simulator's one machine of one CPU and of two (:func:`models.kernel.runs.one_machine`).

The sweep's scenario is one row of the field sweep per link (:data:`CONFIG`: TCP_NODELAY on both
sockets, QD 8, bbr; the loopback and veth pairs at MTU 9000 and 1500); the simulator runs it as
:func:`models.validation.fidelity.evaluate` runs that row, once with ``cpus=1`` and once with
``cpus=2``.

Per response size:

* **one CPU**: the simulator's rate with one shared CPU against the median of the kernel's runs
  pinned to one CPU (``pin same``).  The shipped profile's share of its per-message and per-ACK
  CPU that one CPU pays is fitted on the loopback's rows (:data:`FIT_LINK`,
  ``tools/fit_handoff.py``; the rest is ``handoff_cpu_s`` and ``handoff_ack_cpu_s``): fits there,
  tests on the veth links;
* **two CPUs** (tests): the simulator's rate with a CPU per end against the median of the runs
  pinned apart (``pin apart``); the two-CPU costs were fitted on other rows (the field sweep's
  training rows, unpinned);
* **what the second CPU adds** (tests): the ratio of the two, simulated against measured;
* **repeats** (audits): the slowest and the fastest run of each placement, the data against
  itself.

>>> import pandas as pd
>>> df = pd.DataFrame({"link": ["loopback"] * 4, "iosize_bytes": [512] * 4,
...                    "pin": ["same", "same", "apart", "apart"],
...                    "iops": [60.0, 62.0, 100.0, 120.0]})
>>> kernel_table(df).loc[("loopback", 512), ["same", "apart", "gain"]].round(3).tolist()
[61.0, 110.0, 1.803]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.validation import Comparison, comparisons
from models.validation.fidelity import IOPS_TOL

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DATASET",
    "CONFIG",
    "FIT_LINK",
    "TOL",
    "PLACEMENT_CPUS",
    "KNOWN_FAILING",
    "kernel_table",
    "repeat_share",
    "simulated_table",
    "placement_rows",
    "placement_comparisons",
]

#: The bundled sweep.
DATASET = "kernel6_placement"
#: The link whose one-CPU rows the shipped profile's hand-off split is fitted on.
FIT_LINK = "loopback"
#: The sweep's one configuration on every link, as the field sweep's columns name it.
CONFIG = {
    "sock_mode": "nodelay",
    "client_sock_mode": "nodelay",
    "qd": 8,
    "cc": "bbr",
}
#: Relative tolerance of the model rows: the field goal's quarter, which the kernel's one-CPU
#: runs repeat inside (their audits).
TOL = IOPS_TOL
#: The simulator's host for each placement: the CPUs of the one machine both ends run on.
PLACEMENT_CPUS = {"same": 1, "apart": 2}

_SPREAD_FAILS = (
    "the runs with two CPUs fall into a fast and a slow level within minutes of each other"
)
_SLOW_LEVEL = (
    "most of the kernel's runs with a CPU each were at their slow level, where a second CPU adds "
    "little or nothing from 16 KiB up; the model's hand-off costs the same every time, so it has "
    "only the fast level"
)
_VETH_64K = (
    "on one CPU a 64 KiB response costs the kernel far more on a veth pair than on the loopback "
    "(the table's one-CPU rates); the model charges both links' super-packets alike, so what the "
    "veth adds per byte is missing"
)
_FIT_WHY = (
    "fitted here: the share of the profile's per-message and per-ACK CPU that one CPU pays "
    "(tools/fit_handoff.py)"
)
_TEST_WHY = "the field goal's quarter; the one-CPU runs repeat within about a fifth"
#: The rows recorded as failing, ``(link, what, size in bytes)`` (``None``: every link or every
#: size), each with its cause: set from the bundled sweep, so that a row that starts to pass (or
#: to fail) after a change of the model or the data shows up as a status that is not as recorded.
_GAIN = "what the second CPU adds"
KNOWN_FAILING: dict[tuple[str | None, str, int | None], str] = {
    (None, "two CPUs", 16384): _SLOW_LEVEL,
    (None, "two CPUs", 65536): _SLOW_LEVEL,
    (None, _GAIN, 16384): _SLOW_LEVEL,
    ("loopback", _GAIN, 65536): _SLOW_LEVEL,
    ("veth-1500", "one CPU", 65536): _VETH_64K,
    ("veth-9000", "one CPU", 65536): _VETH_64K,
    ("loopback", "pin apart", 65536): _SPREAD_FAILS,
    ("veth-1500", "pin apart", None): _SPREAD_FAILS,
    ("veth-1500", "pin none", None): _SPREAD_FAILS,
    ("veth-9000", "pin apart", None): _SPREAD_FAILS,
    ("veth-9000", "pin none", None): _SPREAD_FAILS,
}


def _known(link: str, what: str, size: int) -> str:
    for key in ((link, what, size), (link, what, None), (None, what, size), (None, what, None)):
        if key in KNOWN_FAILING:
            return KNOWN_FAILING[key]
    return ""


def kernel_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per link and response size (index ``link``, ``iosize_bytes``): the median IOPS of each
    placement present (columns ``same``, ``apart``, ``none``), the slowest and fastest run of each
    (``*_lo``, ``*_hi``), the runs per placement (``runs``), and ``gain`` = apart / same."""
    import pandas as pd

    key = ["link", "iosize_bytes"]
    g = df.groupby([*key, "pin"])["iops"]
    med, lo, hi = (g.agg(f).unstack("pin") for f in ("median", "min", "max"))
    out = pd.concat([med, lo.add_suffix("_lo"), hi.add_suffix("_hi")], axis=1)
    out["runs"] = g.size().groupby(key).min()
    if {"same", "apart"} <= set(med.columns):
        out["gain"] = out["apart"] / out["same"]
    return out


def repeat_share(df: pd.DataFrame, pin: str = "none") -> float:
    """The share of the runs placed ``pin`` whose IOPS is within :data:`TOL` of the median of
    their link's and size's runs so placed: how often the kernel's own median predicts one of its
    runs.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"link": ["veth-9000"] * 4, "iosize_bytes": [512] * 4,
    ...                    "pin": ["none"] * 4, "iops": [100.0, 100.0, 104.0, 60.0]})
    >>> repeat_share(df)
    0.75
    """
    runs = df.loc[df["pin"] == pin]
    if runs.empty:
        raise ValueError(f"no runs with pin {pin!r}")
    med = runs.groupby(["link", "iosize_bytes"])["iops"].transform("median")
    return float(((runs["iops"] / med - 1).abs() <= TOL).mean())


def _field_row(run: Any, link: str, size: int) -> dict:
    t = run.table("iscsi_loop")
    keep = (t["link"] == link) & (t["iosize_bytes"] == size) & t["rate_limit_bits_per_s"].isna()
    for k, v in CONFIG.items():
        keep &= t[k] == v
    rows = t.loc[keep]
    if len(rows) != 1:
        raise ValueError(
            f"the field sweep has {len(rows)} rows for {CONFIG} on {link} at {size} B, not 1"
        )
    return rows.iloc[0].to_dict()


def simulated_table(
    index: Any, profile: Any = None, run: Any = None, placements: Any = ("same", "apart")
) -> pd.DataFrame:
    """Per ``(link, size)`` of ``index``: the simulator's IOPS with one shared CPU
    (``sim_same``) and with a CPU per end (``sim_apart``) for each of ``placements``
    (:data:`PLACEMENT_CPUS`), the field sweep's row of :data:`CONFIG` run as the fidelity
    evaluation runs it (host ``profile``, default the shipped one), and ``sim_gain`` when both
    are simulated."""
    import pandas as pd

    from models.kernel import load_kernel_run
    from models.sim import hostprofile, simulate
    from models.validation import fidelity

    run = run or load_kernel_run(prefix=fidelity.FIELD_PREFIX)
    host = fidelity.ProfileHost(profile or hostprofile.shipped())
    out = {}
    for link, size in index:
        row = _field_row(run, str(link), int(size))
        rates = {
            f"sim_{pin}": simulate(
                fidelity.field_scenario("iscsi_loop", row, host, run.hz, cpus=PLACEMENT_CPUS[pin])
            ).iops
            for pin in placements
        }
        out[(str(link), int(size))] = rates
    sim = pd.DataFrame.from_dict(out, orient="index")
    sim.index = pd.MultiIndex.from_tuples(sim.index, names=["link", "iosize_bytes"])
    if {"sim_same", "sim_apart"} <= set(sim.columns):
        sim["sim_gain"] = sim["sim_apart"] / sim["sim_same"]
    return sim


def placement_rows(kernel: pd.DataFrame, sim: pd.DataFrame, source: str) -> list[Comparison]:
    """The comparison rows of one kernel table (:func:`kernel_table`) and one simulated table
    (:func:`simulated_table`); a test row outside :data:`TOL` is recorded as failing with its
    cause, so the set states what the model misses."""
    rows: list[Comparison] = []
    for (link, size), k in kernel.iterrows():
        s = sim.loc[(link, size)]
        runs = int(k["runs"])
        one_kind, one_why = ("fit", _FIT_WHY) if link == FIT_LINK else ("test", _TEST_WHY)
        model = (
            ("one CPU", "IOPS", k["same"], s["sim_same"], one_kind, one_why),
            ("two CPUs", "IOPS", k["apart"], s["sim_apart"], "test", _TEST_WHY),
            (_GAIN, "x", k["gain"], s["sim_gain"], "test", _TEST_WHY),
        )
        for what, unit, measured, predicted, kind, why in model:
            rows.append(
                Comparison(
                    "ch9",
                    f"placement, {link}, {size} B responses: {what} (median of {runs} runs)",
                    measured=float(measured),
                    predicted=float(predicted),
                    unit=unit,
                    rel_tol=TOL,
                    why=why,
                    source=source,
                    kind=kind,
                    fails="" if kind == "fit" else _known(link, what, int(size)),
                )
            )
        for pin in ("same", "apart", "none"):
            lo, hi = float(k[f"{pin}_lo"]), float(k[f"{pin}_hi"])
            rows.append(
                Comparison(
                    "ch9",
                    f"placement, {link}, {size} B responses, pin {pin}: fastest of {runs} runs "
                    "against the slowest",
                    measured=lo,
                    predicted=hi,
                    unit="IOPS",
                    rel_tol=TOL,
                    why="a model cannot be held closer than its data repeats",
                    source=source,
                    kind="audit",
                    fails=_known(link, f"pin {pin}", int(size)),
                )
            )
    return rows


@comparisons("ch9.placement")
def placement_comparisons() -> list[Comparison]:
    """Chapter 9's placement sweep against the shipped host profile."""
    from models import data

    df = data.load(DATASET)
    kernel = kernel_table(df)
    sim = simulated_table(kernel.index)
    return placement_rows(kernel, sim, source=f"kernel placement sweep ({DATASET})")

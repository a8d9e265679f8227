"""A second machine: how a host model made on one machine fares on another.

The shipped host profile (``data/hosts/kernel6.json``) and the field sweep it was fitted on come from
one machine.  The repeat plan's seeded sample of the field runs (``python -m models.measure sweep
--plan repeat``, :data:`DATASET`) was measured on a second machine of the same kind (two vCPUs,
kernel 6.18.44, HZ 250, bbr, but another build, another idle configuration and cheaper copies), and
measured there twice (:data:`AGAIN`), with ``python -m models.measure calibrate`` run there first
(:data:`PROFILE`).  Three host models meet its rows (:data:`MODELS`):

``as shipped``
    the first machine's profile unchanged: what a reader gets who does not calibrate;
``carried over``
    the first machine's profile with its measured costs moved to the second machine's
    microbenchmarks (:func:`models.measure.profile.carry_over`), its fitted costs as they were;
``calibrated``
    the second machine's own ``calibrate`` profile (microbenchmarks and eight loopback runs),
    unchanged.

Beside them two audits, where another set of kernel runs stands in for the simulator: the first
machine's own runs of the same scenarios (how far the kernel moved between the machines) and the
second machine's second draw (how far it repeats itself).  The roles and the goals are the field
evaluation's (:func:`~models.validation.fidelity.roles`, :func:`~models.validation.fidelity.goals`),
except the largest stalling QD, which a sample cannot tell.  Nothing in any model was fitted to
these rows, the training rows' scenarios included; the roles keep them apart all the same, so that
a model is held on the same rows on both machines.

>>> import pandas as pd
>>> key = dict(link="loopback", mtu_bytes=65536, rate_limit_bits_per_s=None, cc="bbr",
...            sock_mode="nodelay", client_sock_mode="nodelay", iosize_bytes=16384)
>>> here = pd.DataFrame([{**key, "qd": q, "iops": 100.0, "stalled_pct": 0.0} for q in (1, 8)])
>>> there = here.assign(iops=[50.0, 90.0])
>>> t = kernel_beside(here, pd.concat([there, there.assign(qd=64)]))
>>> list(t["sim_iops"]), list(t["role"])
([50.0, 90.0], ['test', 'test'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from models.validation import draws
from models.validation.fidelity import (
    FIELD_TABLES,
    IOPS_TOL,
    goals,
    iops_table,
    roles,
    simulate_loop,
)

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "PREFIX",
    "DATASET",
    "AGAIN",
    "PROFILE",
    "MODELS",
    "AUDITS",
    "GOALS",
    "AGAIN_PROFILES",
    "TRIES_PROFILE",
    "CALIBRATE_PROFILES",
    "SHARE",
    "SLOW_FIRST_WAKE_US",
    "summary",
    "calibration_runs",
    "calibration_table",
    "HELD_MODES",
    "bbr_held",
    "profiles",
    "kernel_beside",
    "MachineEvaluation",
    "evaluate",
]

#: The second machine's sweep (``--prefix``) and its table (named in full, so that
#: :mod:`models.validation.coverage` finds its reader).
PREFIX = "kernel6_machine2"
DATASET = "kernel6_machine2_iscsi_loop"
#: The same sample measured again on the second machine, minutes later.
AGAIN = "kernel6_machine2b_iscsi_loop"
#: ``data/hosts/<PROFILE>.json``: ``calibrate`` on the second machine, as it wrote it.
PROFILE = "kernel6_machine2"
#: ``calibrate`` run again on the second machine (``data/hosts/<name>.json``, each as it wrote
#: it): three times back to back about 25 minutes after the first, three more 20 minutes later:
#: how far the tool repeats itself.
AGAIN_PROFILES = tuple(f"kernel6_machine2_again{k}" for k in range(1, 7))
#: ``calibrate --tries 3`` on the second machine, just before the last three: the try it kept.
TRIES_PROFILE = "kernel6_machine2_tries3"
#: Every bundled ``calibrate`` profile of the second machine, in the order they were made.
CALIBRATE_PROFILES = (PROFILE, *AGAIN_PROFILES, TRIES_PROFILE)
#: A first wake-up (after the microbenchmark's shortest idle gap) slower than this, microseconds,
#: found the sleeping vCPU already halted (between the two levels the second machine's runs show).
SLOW_FIRST_WAKE_US = 12.0
#: The column of :func:`summary` with the share of IOPS rows within the tolerance.
SHARE = f"within {IOPS_TOL:.0%}"
#: The host models held to the second machine's runs, in the order tables show them.
MODELS = ("as shipped", "carried over", "calibrated")
#: The kernel runs that stand where a model stands (audits, not tests).
AUDITS = ("first machine's kernel", "second machine, again")
#: The goals a sample can tell (:func:`~models.validation.fidelity.goals` less the stall ends).
GOALS = (
    "stall verdicts",
    f"IOPS within {IOPS_TOL:.0%}",
    "median ratio, QD 1",
    "median ratio, QD >= 8",
)


def profiles() -> dict[str, Any]:
    """The host profiles of :data:`MODELS`, by name."""
    from models.measure.profile import carry_over
    from models.sim import hostprofile

    shipped = hostprofile.shipped()
    own = hostprofile.shipped(PROFILE)
    measured = {"costs": own.records["measured"], "settings": own.records["settings"]}
    carried = hostprofile.load(carry_over(shipped, measured))
    return dict(zip(MODELS, (shipped, carried, own)))


def kernel_beside(table: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    """The runs of ``table`` with the runs of ``other`` of the same scenarios
    (:data:`~models.validation.draws.ROW_KEY`) where the simulator stands (``sim_iops``,
    ``sim_stalls``), and the field evaluation's roles: ``other`` held as a model of ``table``.
    ``other`` may run more scenarios; every run of ``table`` must have one there."""
    same = other.merge(table[draws.ROW_KEY], on=draws.ROW_KEY, how="inner")
    out = draws.repeat_table(table, same)
    if len(out) != len(table):
        raise ValueError(f"other: has {len(out)} of the {len(table)} scenarios of table")
    out["role"] = roles(out)
    return out


@dataclass(frozen=True)
class MachineEvaluation:
    """:func:`evaluate`'s result: per model and per audit (``tables``, keyed by
    :data:`MODELS` and :data:`AUDITS`) the second machine's runs with the other side's columns,
    the goals side by side (``goals``: one row per goal of :data:`GOALS`, one column each), and
    the host profiles of :data:`MODELS` (``profiles``, as :func:`profiles` made them)."""

    tables: dict
    goals: Any
    profiles: dict


def evaluate(processes: int | None = None) -> MachineEvaluation:
    """Every model of :data:`MODELS` and every audit of :data:`AUDITS` held to the second
    machine's runs (the bundled :data:`DATASET`), each row simulated as the field evaluation
    simulates its own (:func:`~models.validation.fidelity.simulate_loop`)."""
    import pandas as pd

    from models import data
    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=PREFIX)
    here = run.table("iscsi_loop")
    models = profiles()
    tables: dict[str, pd.DataFrame] = {}
    for name, profile in models.items():
        tables[name] = simulate_loop(run, profile, processes=processes)  # with the roles
    tables[AUDITS[0]] = kernel_beside(here, data.load(FIELD_TABLES[0]))
    tables[AUDITS[1]] = kernel_beside(here, data.load(AGAIN))
    table = pd.DataFrame(
        {
            name: {g.name: g.value for g in goals(t) if g.name in GOALS}
            for name, t in tables.items()
        }
    ).loc[list(GOALS)]
    return MachineEvaluation(tables, table, models)


def summary(table: pd.DataFrame) -> dict[str, Any]:
    """The numbers of the goals for one evaluated table (:func:`evaluate`'s ``tables``): test-row
    stall verdicts right, the share of IOPS rows within :data:`IOPS_TOL`, and the median ratio at
    QD 1 and at QD 8 and above (:func:`~models.validation.fidelity.iops_table`)."""
    io = iops_table(table)
    test = table[table["role"] == "test"]
    return {
        "verdicts right": int((test["kernel_stalls"] == test["sim_stalls"]).sum()),
        SHARE: float(io["within"].mean()),
        "median, QD 1": float(io.loc[io["qd"] == 1, "ratio"].median()),
        "median, QD >= 8": float(io.loc[io["qd"] >= 8, "ratio"].median()),
    }


def calibration_runs(
    first: pd.DataFrame | None = None, processes: int | None = None
) -> dict[str, pd.DataFrame]:
    """Per ``calibrate`` profile of the second machine (:data:`PROFILE`, then
    :data:`AGAIN_PROFILES`, then :data:`TRIES_PROFILE`) its evaluated table of the second
    machine's runs.  ``first`` is :data:`PROFILE`'s if already simulated
    (``evaluate().tables["calibrated"]``), so that it is not simulated twice."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile

    run = load_kernel_run(prefix=PREFIX)
    out = {}
    for name in CALIBRATE_PROFILES:
        if name == PROFILE and first is not None:
            out[name] = first
        else:  # with the roles
            out[name] = simulate_loop(run, hostprofile.shipped(name), processes=processes)
    return out


def calibration_table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per ``calibrate`` profile of :func:`calibration_runs`: when it started, its fit's
    loss and fitted costs, the wake-up its microbenchmark measured after the shortest idle gap,
    and its :func:`summary` on the second machine's runs."""
    import pandas as pd

    from models.sim import hostprofile

    rows = []
    for name, table in runs.items():
        p = hostprofile.shipped(name)
        h = p.host
        gaps = p.records["measured"]["wake"]["cross_by_gap"]
        rows.append(
            {
                "profile": name,
                "started (UTC)": str(p.machine["date"])[11:16],
                "fit loss": float(p.records["fit"]["loss"]),
                "proc_s (us)": h["proc_s"] * 1e6,  # s -> us
                "ack_cpu_s (us)": h["ack_cpu_s"] * 1e6,  # s -> us
                "tx_latency_s (us)": h["tx_latency_s"] * 1e6,  # s -> us
                "wake, shortest gap (us)": min(gaps, key=lambda g: g["gap_us"])["median_us"],
                **summary(table),
            }
        )
    return pd.DataFrame(rows).set_index("profile")


#: Server socket modes whose data Nagle may hold (``more`` sets MSG_MORE on the header only).
HELD_MODES = ("nagle", "more")


def bbr_held(df: pd.DataFrame) -> pd.Series:
    """True for the rows under bbr whose server lets Nagle hold data (:data:`HELD_MODES`): where
    chapter 9's pacing section finds the simulator's bbr leaves the kernel's plateau out.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"cc": ["bbr", "bbr", "reno"], "sock_mode": ["more", "nodelay", "nagle"]})
    >>> bbr_held(df).tolist()
    [True, False, False]
    """
    return (df["cc"] == "bbr") & df["sock_mode"].isin(HELD_MODES)

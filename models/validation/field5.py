"""The whole field sweep on the fifth machine, pinned apart, against that machine's own profiles.

The fifth machine's sample (:mod:`models.validation.machine5`) is 143 runs of the repeat plan.
Here the whole field plan ran on the same instance, a few hours after the machine's calibration,
with the server pinned to one CPU and the client to the other (``python -m models.measure sweep
--plan field --pin apart``, :data:`DATASET`): every client and server mode, 512 B to 64 KiB, QD 1
to 64, loopback and veth at MTU 1500 and 9000, the 1 Gb/s limit, reno and cubic beside bbr.  It
is the first field sweep on a machine whose profile measured the pacing timer's costs, so nothing
in the models below is borrowed or fitted to these runs.  Models (:data:`MODELS`):

``calibrated here``
    ``python -m models.measure calibrate --tries 3`` on this machine
    (:data:`models.validation.machine5.PROFILE`), simulated as the field evaluation simulates
    (:func:`~models.validation.fidelity.field_scenario`): what a reader gets from the book's
    instructions;
``freed, paced by the call's clock``
    that calibration fitted again with a segment sent after its CPU
    (:data:`models.validation.machine5.PROFILE_SENT`), replies on their CPU, frames freed as the
    link takes them and bbr's clock read after the call's CPU
    (:func:`models.validation.machine4.freed_clock_scenario`): the model the fourth and fifth
    machines' samples led to;
``first machine's profile``
    the book's shipped profile, made on another machine (no pacing-timer costs): what a reader gets
    who does not calibrate.

One audit stands beside them (:data:`AUDIT`): the machine's pinned sample, measured about three
hours earlier, held as a model of the same scenarios here (how far the kernel repeats itself on
this machine over those hours).  The roles, tolerance and goals are the field evaluation's
(:func:`~models.validation.fidelity.goals`), fixed before any of these runs; the audit, a sample,
cannot tell the largest stalling QD of a group (``-``).

>>> MODELS[1], AUDIT
("freed, paced by the call's clock", 'the sample, hours earlier')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from models.validation import fidelity as FID
from models.validation import machines

__all__ = [
    "PREFIX",
    "DATASET",
    "FLORY",
    "MODELS",
    "AUDIT",
    "SAMPLE_GOALS",
    "Field5Evaluation",
    "evaluate",
    "findings",
    "numbers",
]

#: The fifth machine's field sweep pinned apart (``--prefix``) and its table, named in full so
#: that :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_machine5_field"
DATASET = "kernel6_machine5_field_iscsi_loop"
FLORY = "kernel6_machine5_field_flory"
#: The models held to it (see the module's docstring).
MODELS = ("calibrated here", "freed, paced by the call's clock", "first machine's profile")
#: The audit beside them.
AUDIT = "the sample, hours earlier"
#: The goals a sample can tell.
SAMPLE_GOALS = machines.GOALS


@dataclass(frozen=True)
class Field5Evaluation:
    """:func:`evaluate`'s result: ``tables``, the evaluated iSCSI-loop tables by model and audit;
    ``goals``, one row per goal (the field evaluation's, Flory's steps last), one column each;
    ``summary``, :func:`models.validation.machine4.summary` of each table (rows by name);
    ``goal_lists``, each column's :class:`~models.validation.fidelity.Goal` objects (the audit's
    all of :func:`~models.validation.fidelity.goals`, of which it tells :data:`SAMPLE_GOALS`)."""

    tables: dict
    goals: Any
    summary: Any
    goal_lists: dict


def _profiles() -> list[tuple[Any, Any]]:
    from models.sim import hostprofile
    from models.validation import machine4 as M4
    from models.validation import machine5 as M5

    return [
        (hostprofile.shipped(M5.PROFILE), FID.field_scenario),
        (hostprofile.shipped(M5.PROFILE_SENT), M4.freed_clock_scenario),
        (hostprofile.shipped(), FID.field_scenario),
    ]


def evaluate(processes: int | None = None) -> Field5Evaluation:
    """Every model of :data:`MODELS` held to every run of :data:`DATASET` (and its Flory runs),
    and the audit beside them."""
    import pandas as pd

    from models import data
    from models.kernel import load_kernel_run
    from models.validation import machine4 as M4
    from models.validation import machine5 as M5

    run = load_kernel_run(prefix=PREFIX)
    n = FID.workers() if processes is None else processes
    tables, lists = {}, {}
    for name, (profile, make) in zip(MODELS, _profiles()):
        t = FID.simulate_loop(run, profile, processes=n, scenario=make)
        steps = FID.flory_evaluation(profile, run, processes=n, scenario=make)
        tables[name] = t
        lists[name] = FID.goals(t) + [FID.flory_goal(steps)]
    sample = data.load(M5.DATASET)
    here = run.table("iscsi_loop")
    tables[AUDIT] = machines.kernel_beside(sample, here)
    lists[AUDIT] = FID.goals(tables[AUDIT])
    goals = {name: {g.name: g.value for g in gs} for name, gs in lists.items()}
    goals[AUDIT] = {k: (v if k in SAMPLE_GOALS else "-") for k, v in goals[AUDIT].items()}
    names = [*MODELS, AUDIT]
    table = pd.DataFrame(goals)[names].fillna("-")  # the audit has no Flory runs
    summary = pd.DataFrame({k: M4.summary(t) for k, t in tables.items()}).T.loc[names]
    return Field5Evaluation(tables, table, summary, lists)


def findings(ev: Field5Evaluation) -> dict[str, bool]:
    """What chapter 9b says of :func:`evaluate`'s result, each a claim that holds or not."""
    s = ev.summary
    cal, rules, ship = (s.loc[m] for m in MODELS)
    audit = s.loc[AUDIT]
    lo, hi = FID.RATIO_RANGE
    return {
        "the rules beat the calibration within a quarter": bool(rules.within_pct > cal.within_pct),
        "the machine's own profiles beat the first machine's": bool(
            min(cal.within_pct, rules.within_pct) > ship.within_pct
        ),
        "the rules' medians lie inside the goal's range": bool(
            lo <= rules.median_q1 <= hi and lo <= rules.median_q8 <= hi
        ),
        "no model reaches the goal's share": bool(
            max(cal.within_pct, rules.within_pct, ship.within_pct) < FID.IOPS_SHARE * 100
        ),
        "the kernel's own repeat stays above every model": bool(
            audit.within_pct > max(cal.within_pct, rules.within_pct, ship.within_pct)
        ),
        # the split the text names: the verdicts go the other way round
        "the stall verdicts go the other way: the first machine's most, the rules' fewest": bool(
            _right(ship.verdicts) >= _right(cal.verdicts) > _right(rules.verdicts)
        ),
        "so do the largest stalling QD and Flory's steps": all(
            _right(g[MODELS[2]]) >= _right(g[MODELS[0]]) > _right(g[MODELS[1]])
            for g in (ev.goals.loc["largest stalling QD"], ev.goals.loc["Flory's thresholds"])
        ),
        "the first machine's copies cost more per byte, its wake-ups less": _first_vs_fifth(),
    }


def _first_vs_fifth() -> bool:
    """Whether the first machine's profile charges more CPU per byte sent than the fifth's, and
    wakes a thread after a brief idle sooner than the fifth's measured curve at its shortest gap."""
    from models.sim import hostprofile
    from models.validation import machine5 as M5

    first, fifth = hostprofile.shipped().host, hostprofile.shipped(M5.PROFILE).host
    return bool(
        first["send_byte_cpu_s"] > fifth["send_byte_cpu_s"]
        and first["wake_fast_s"] < fifth["wake_curve_s"][0][1]
    )


def _right(value: str) -> int:
    """The count right of ``"right/rows"`` or ``"right of rows"``."""
    return int(value.replace(" of ", "/").split("/")[0])


def numbers(ev: Field5Evaluation) -> dict[str, Any]:
    """The values chapter 9b quotes, by glue name (counts, percent, ratios)."""
    s = ev.summary
    out: dict[str, Any] = {
        "f5_rows": len(ev.tables[MODELS[0]]),
        "f5_io_rows": len(FID.iops_table(ev.tables[MODELS[0]])),
        "f5_sample_rows": len(ev.tables[AUDIT]),
        "f5_audit_io_rows": len(FID.iops_table(ev.tables[AUDIT])),
    }
    for key, name in zip(("cal", "rules", "ship", "audit"), [*MODELS, AUDIT]):
        out[f"f5_{key}_within"] = float(s.loc[name, "within_pct"])
        out[f"f5_{key}_held"] = float(s.loc[name, "held_within_pct"])
        out[f"f5_{key}_q1"] = float(s.loc[name, "median_q1"])
        out[f"f5_{key}_q8"] = float(s.loc[name, "median_q8"])
        out[f"f5_{key}_verdicts"] = str(s.loc[name, "verdicts"])
    return out

"""A fifth machine: the rules the fourth machine's sample led to, held to a machine none of them saw.

The fourth machine's sample (:mod:`models.validation.machine4`) led to two rules that are the
kernel's and measured, not fitted: a sent frame freed as the link takes it
(``Link.freed_on_handover``) and bbr's pacing clock read after the call's CPU so far
(``Host.xmit_clock_in_call``).  Both were chosen with that sample in view, so it cannot test them.
A fifth machine of the same kind (two vCPUs, kernel 6.18.44 at HZ 250 under bbr; another instance
and another build of the kernel, as the profile and the sample record, whose 64 KiB copies the
microbenchmarks time faster than the fourth machine's) was measured after both rules had been
committed: first the same repeat plan
pinned a CPU apart (``python -m models.measure sweep --plan repeat --pin apart``, :data:`DATASET`),
then ``python -m models.measure calibrate --tries 3`` (:data:`PROFILE`), then the calibration
fitted again from its own records with ``Host.send_cpu_first`` (``tools/refit_profile.py``,
:data:`PROFILE_SENT`), as the fourth machine's was.  Nothing was fitted to the sample.  The table
holds (:data:`ROWS`):

``calibrated here``
    the machine's own profile, as the fourth machine's first row;
``sent after its CPU, refitted``
    the refit, simulated with replies on their CPU (the fourth machine's :data:`~models.
    validation.machine4.SENT`);
``freed on hand-over too``
    the refit with frames freed (:func:`~models.validation.machine4.freed_scenario`);
``freed, paced by the call's clock``
    and the pacing clock read after the call's CPU
    (:func:`~models.validation.machine4.freed_clock_scenario`): the model to test;
``fourth machine's profile``
    the fourth machine's sent refit under the same two rules: what a reader gets who carries a
    profile from another machine of the same kind instead of calibrating;
``fourth machine's kernel``
    an audit, not a model: the fourth machine's own runs of the same scenarios
    (:func:`models.validation.machines.kernel_beside`), how far the kernel moved between the two;
``this machine, again``
    an audit: the same sample measured again on the fifth machine after the calibration and the
    refit (:data:`AGAIN`), how far its kernel repeats itself.

>>> ROWS[3], len(ROWS)
("freed, paced by the call's clock", 7)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from models.validation.fidelity import IOPS_SHARE, IOPS_TOL, RATIO_RANGE

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "PREFIX",
    "DATASET",
    "AGAIN",
    "PROFILE",
    "PROFILE_SENT",
    "ROWS",
    "Machine5Evaluation",
    "evaluate",
    "findings",
    "fit_bounds",
    "numbers",
]

#: The fifth machine's pinned sample (``--prefix``) and its table, named in full so that
#: :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_machine5_apart"
DATASET = "kernel6_machine5_apart_iscsi_loop"
#: The same sample measured again on the same machine after the calibration.
AGAIN = "kernel6_machine5_apart2_iscsi_loop"
#: Its ``calibrate --tries 3`` profile (``data/hosts/<name>.json``).
PROFILE = "kernel6_machine5"
#: That profile fitted again with ``Host.send_cpu_first`` (``tools/refit_profile.py``).
PROFILE_SENT = "kernel6_machine5_sent_after_cpu"
#: The table's rows, in order (see the module's docstring).
ROWS = (
    "calibrated here",
    "sent after its CPU, refitted",
    "freed on hand-over too",
    "freed, paced by the call's clock",
    "fourth machine's profile",
    "fourth machine's kernel",
    "this machine, again",
)


@dataclass(frozen=True)
class Machine5Evaluation:
    """:func:`evaluate`'s result: ``table``, one row per entry of :data:`ROWS` with
    :func:`models.validation.machine4.summary`'s numbers; ``tables``, the evaluated tables by
    the same names."""

    table: Any
    tables: dict


def evaluate(processes: int | None = None) -> Machine5Evaluation:
    """Every row of :data:`ROWS` held to the sample's unlimited-link runs (the field roles and
    tolerance, :func:`~models.validation.fidelity.simulate_loop`)."""
    import pandas as pd

    from models import data
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import machine4 as M4
    from models.validation.ackheld import unlimited
    from models.validation.fidelity import simulate_loop
    from models.validation.machines import kernel_beside

    run = load_kernel_run(prefix=PREFIX)
    own, sent = hostprofile.shipped(PROFILE), hostprofile.shipped(PROFILE_SENT)
    made = (
        (own, None),
        (sent, M4.replies_scenario),
        (sent, M4.freed_scenario),
        (sent, M4.freed_clock_scenario),
        (M4.sent_profile(), M4.freed_clock_scenario),
    )
    tables = {
        name: simulate_loop(run, p, processes=processes, rows=unlimited, scenario=make)
        for name, (p, make) in zip(ROWS, made)
    }
    here = run.table("iscsi_loop")
    tables[ROWS[5]] = kernel_beside(here[unlimited(here)], data.load(M4.DATASET))
    tables[ROWS[6]] = kernel_beside(here[unlimited(here)], data.load(AGAIN))
    table = pd.DataFrame({name: M4.summary(t) for name, t in tables.items()}).T
    return Machine5Evaluation(table.loc[list(ROWS)], tables)


def findings(table: pd.DataFrame) -> dict[str, bool]:
    """What chapter 9 says about :func:`evaluate`'s table, each a claim that holds or not: the
    fourth machine's pattern, row by row, on a machine that pattern was not seen on.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"within_pct": [48.1, 65.4, 68.4, 69.2, 60.9, 75.2, 85.0],
    ...     "median_q1": [1.10, 1.04, 1.04, 1.04, 0.84, 0.95, 1.0],
    ...     "median_q8": [1.26, 1.00, 0.90, 0.95, 0.83, 0.84, 1.0],
    ...     "held_within_pct": [31.0, 53.4, 70.7, 60.3, 69.0, 79.3, 85.0],
    ...     "large_within_pct": [46.7, 73.3, 53.3, 76.7, 40.0, 60.0, 85.0],
    ...     "verdicts": ["141/143", "138/143", "138/143", "138/143", "140/143", "143/143",
    ...                  "143/143"]},
    ...     index=list(ROWS))
    >>> all(findings(t).values())
    True
    >>> t.loc[ROWS[3]] = t.loc[ROWS[2]]  # the clock read at the call's start: no recovery
    >>> [k for k, v in findings(t).items() if not v]  # doctest: +NORMALIZE_WHITESPACE
    ["paced by the call's clock too, the large responses come back"]
    """
    from models.validation.machine4 import MOVED_PTS

    own, sent, freed, fclock, fourth, kernel4, again = (table.loc[r] for r in ROWS)
    models = table.loc[list(ROWS[:5]), "within_pct"]
    lo, hi = RATIO_RANGE
    return {
        "sent after its CPU and refitted, more runs are within than calibrated": sent.within_pct
        > own.within_pct + MOVED_PTS,
        "freed on hand-over, the runs under bbr behind Nagle gain, the large lose": (
            freed.held_within_pct > sent.held_within_pct + MOVED_PTS
            and freed.large_within_pct < sent.large_within_pct - MOVED_PTS
        ),
        "paced by the call's clock too, the large responses come back": fclock.large_within_pct
        > freed.large_within_pct + MOVED_PTS,
        "with both rules the most runs are within of any model": fclock.within_pct >= models.max(),
        "with both rules the medians at QD 1 and at QD >= 8 are inside the goal's range": (
            lo <= fclock.median_q1 <= hi and lo <= fclock.median_q8 <= hi
        ),
        "no model reaches the goal's share": bool((models < IOPS_SHARE * 100).all()),
        "the fourth machine's profile does worse here than this machine's own": (
            fourth.within_pct < fclock.within_pct - MOVED_PTS
        ),
        "the refit gets fewer stall verdicts right than the calibration": _right(sent.verdicts)
        < _right(own.verdicts),
        "the fourth machine's kernel agrees with this one more often than any model": (
            kernel4.within_pct > models.max()
        ),
        "the fourth machine's kernel itself is short of the goal's share": kernel4.within_pct
        < IOPS_SHARE * 100,
        "measured again, this machine's kernel agrees with itself more often than the fourth's": (
            again.within_pct > kernel4.within_pct
        ),
    }


def fit_bounds() -> dict[str, list]:
    """The costs each of this machine's fits ended at a bound of its range, by profile
    (``fit.at_bound``: ``[name, "lower"|"upper"]`` pairs): a finding to report, not a result.

    >>> fit_bounds()[PROFILE]
    [['op_s', 'lower']]
    """
    from models.sim import hostprofile

    return {
        name: hostprofile.shipped(name).records["fit"]["at_bound"]
        for name in (PROFILE, PROFILE_SENT)
    }


def _right(verdicts: str) -> int:
    """The right verdicts of a ``"right/rows"`` string."""
    return int(verdicts.split("/")[0])


def numbers(ev: Machine5Evaluation) -> dict[str, float]:
    """The numbers chapter 9 quotes: each row's :func:`~models.validation.machine4.summary`
    numbers (suffix the row's index), the runs, the tolerance and the goal (percent), and the CPU
    of a 64 KiB ``send()`` to a reader on the other CPU as this machine's and the fourth
    machine's calibrations measured it (``cross_us``, ``cross4_us``, microseconds)."""
    from models.sim import hostprofile
    from models.validation.fidelity import iops_table
    from models.validation.machine4 import PROFILE as PROFILE4

    cross = {
        name: hostprofile.shipped(name).records["measured"]["large_cross"]["send_cpu_us"]
        for name in (PROFILE, PROFILE4)
    }
    t = ev.table
    return {
        "cross_us": cross[PROFILE],
        "cross4_us": cross[PROFILE4],
        "rows": len(iops_table(ev.tables[ROWS[0]])),
        "tol_pct": IOPS_TOL * 100,  # share -> percent
        "goal_pct": IOPS_SHARE * 100,
        **{
            f"{key}_{i}": float(t.loc[name][key])
            for i, name in enumerate(ROWS)
            for key in (
                "within_pct",
                "median_q1",
                "median_q8",
                "held_within_pct",
                "others_within_pct",
                "large_within_pct",
            )
        },
    }

"""The eighth machine's late wake-ups, measured instead of fitted (chapter 9e).

``Host.wake_late_share`` is the share of brief-idle wake-ups that take as long as a wake-up
after a long idle.  The shipped profile's 2 % was fitted on the first machine's training rows
(``tools/fit_wake_late.py``) because its microbenchmark kept no tail; the wake-up lists now keep
each idle gap's slowest tenth, so ``tools/measure_wake_late.py`` counts the share on the machine
itself (:func:`models.measure.wakeups.late_share`), with the late ones' mean latency
(``Host.wake_late_s``, :func:`models.measure.wakeups.late_mean_s`), and writes :data:`PROFILE`:
the eighth machine's calibration with those two and nothing else changed.  Here it is held to
the same rows as chapter 9e's best rules (:data:`models.validation.machine8.HERE`), a test: the
two were not chosen on them; and once with the share alone, to tell the two apart.
"""

from __future__ import annotations

import functools
from typing import Any

from models.validation import bands as B
from models.validation import fidelity as FID
from models.validation import machine8 as M8

__all__ = [
    "PROFILE",
    "FITTED",
    "BASE",
    "SHARE",
    "LATE",
    "measured",
    "evaluate",
    "summary",
    "findings",
]

#: The eighth machine's profile with the measured share (``tools/measure_wake_late.py``).
PROFILE = "kernel6_machine8_late"
#: The profile whose share was fitted (the first machine's, shipped).
FITTED = "kernel6"
#: The evaluation's models: chapter 9e's best rules here, then with the measured share alone
#: (a late wake-up takes the curve's last point), then with the late ones' latency too.
BASE = M8.HERE[1]
SHARE = "the same, measured late share"
LATE = "the same, late share and latency"


def measured() -> dict[str, float]:
    """What the measurement says (from the profiles): the measured and the fitted share, the
    latency a late wake-up took on average and the one the model gives it without that (the
    curve's last point), both us."""
    from models.sim import hostprofile

    p = hostprofile.shipped(PROFILE)
    return {
        "share": float(p.host["wake_late_share"]),
        "fitted": float(hostprofile.shipped(FITTED).host["wake_late_share"]),
        "late_mean_us": float(p.host["wake_late_s"]) * 1e6,  # s -> us
        "curve_end_us": float(p.host["wake_curve_s"][-1][1]) * 1e6,  # s -> us
    }


@functools.lru_cache(maxsize=1)
def evaluate(processes: int | None = None) -> dict[str, Any]:
    """:data:`BASE` (chapter 9e's table of it), :data:`SHARE` and :data:`LATE` (the same rules and
    scenarios on :data:`PROFILE`, without and with its latency) held to the eighth machine's
    sample: ``{name: table}``."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import machine7 as M7

    run = load_kernel_run(prefix=M8.PREFIX)
    _, make = M8._models()[BASE]
    late = hostprofile.shipped(PROFILE)
    n = FID.workers() if processes is None else processes
    out = {BASE: M8.evaluate(processes).tables[BASE]}
    for name, profile in ((SHARE, late.with_host(wake_late_s=0.0)), (LATE, late)):
        host = FID.ProfileHost(M7.waits(profile))
        summarise = functools.partial(FID.row_summary, make, "iscsi_loop", host, run.hz)
        out[name] = FID.simulated(run.table("iscsi_loop"), summarise, processes=n)
    return out


def _q1(table: Any) -> float:
    io = FID.iops_table(table)
    return B.median_ratio(io, io["qd"] == 1)


def summary(tables: dict[str, Any]) -> Any:
    """The goals chapter 9e shows for each model of ``tables`` (:func:`evaluate`), a column each:
    the share within the tolerance, the stall verdicts and the median ratios at QD 1 and 8+."""
    import pandas as pd

    return pd.DataFrame(
        {
            name: {
                "within a quarter": B.within(t),
                "stall verdicts": B.verdicts(t),
                "median ratio, QD 1": _q1(t),
                "median ratio, QD >= 8": B.qd8(t),
            }
            for name, t in tables.items()
        }
    )


def findings(m: dict[str, float], tables: dict[str, Any]) -> dict[str, bool]:
    """What chapter 9e says of the measurement ``m`` (:func:`measured`) and the evaluation
    ``tables`` (:func:`evaluate`), each a claim that holds or not (thresholds set after the
    numbers were seen; tests in ``tests/test_latewake.py`` fail each with a wrong world):

    * ``near the fitted share``: the measured share is within a factor 1.5 of the first
      machine's fitted one (either way);
    * ``late ones are slower``: a late wake-up took on average over twice the curve's last
      point, the latency the model gave it;
    * ``QD 1 comes nearer``: with the latency the median ratio at QD 1 is nearer 1 than without
      it and than without either;
    * ``the share of rows stays``: with either, the share of rows within the tolerance moves by
      under 3 points and no stall verdict changes.
    """
    base = tables[BASE]
    ratio = m["share"] / m["fitted"]
    q1 = {k: abs(_q1(t) - 1.0) for k, t in tables.items()}
    return {
        "near the fitted share": 1 / 1.5 <= ratio <= 1.5,
        "late ones are slower": m["late_mean_us"] > 2 * m["curve_end_us"],
        "QD 1 comes nearer": q1[LATE] < min(q1[SHARE], q1[BASE]),
        "the share of rows stays": all(
            abs(B.within(tables[k]) - B.within(base)) < 0.03
            and B.verdicts(tables[k]) == B.verdicts(base)
            for k in (SHARE, LATE)
        ),
    }

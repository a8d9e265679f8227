"""The eighth machine's late wake-up share, measured instead of fitted (chapter 9e).

``Host.wake_late_share`` is the share of brief-idle wake-ups that take as long as a wake-up
after a long idle.  The shipped profile's 2 % was fitted on the first machine's training rows
(``tools/fit_wake_late.py``) because its microbenchmark kept no tail; the wake-up lists now keep
each idle gap's slowest tenth, so ``tools/measure_wake_late.py`` counts the share on the machine
itself (:func:`models.measure.wakeups.late_share`) and writes :data:`PROFILE`: the eighth
machine's calibration with that share and nothing else changed.  Here it is held to the same
rows as chapter 9e's best rules (:data:`models.validation.machine8.HERE`), a test: the share was
not chosen on them.
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
    "SLOW_US",
    "BASE",
    "LATE",
    "measured",
    "evaluate",
    "findings",
]

#: The eighth machine's profile with the measured share (``tools/measure_wake_late.py``).
PROFILE = "kernel6_machine8_late"
#: The profile whose share was fitted (the first machine's, shipped).
FITTED = "kernel6"
#: A wake-up this slow or slower (us) is far beyond what the model's late wake-up takes.
SLOW_US = 1000.0
#: The evaluation's two models: chapter 9e's best rules here, without and with the share.
BASE = M8.HERE[1]
LATE = "the same, measured late share"


def measured() -> dict[str, float]:
    """What the measurement says (from the profiles): the measured and the fitted share, the
    latency a late wake-up takes in the model (us), and of the wake-ups counted, the share
    :data:`SLOW_US` or slower and the part of the late ones' excess over that latency they
    hold (from each gap's kept tail, moved as the curve is)."""
    from models.sim import hostprofile

    p = hostprofile.shipped(PROFILE)
    late = p.records["measured"]["late_wake"]
    curve_move = late["late_us"] - _raw_late_us(late)
    total = slow = 0
    excess = slow_excess = 0.0
    for g in late["tcp_by_gap"]:
        total += g["samples"]
        for v in g["tail_us"]:
            over = v + curve_move - late["late_us"]  # us beyond the late latency
            if over >= 0:
                excess += over
                if v >= SLOW_US:
                    slow += 1
                    slow_excess += over
    return {
        "share": float(p.host["wake_late_share"]),
        "fitted": float(hostprofile.shipped(FITTED).host["wake_late_share"]),
        "late_us": float(late["late_us"]),
        "slow_share": slow / total,
        "slow_excess_part": slow_excess / excess if excess else 0.0,
    }


def _raw_late_us(late: dict[str, Any]) -> float:
    """The late latency as the benchmark sampled it (us): the curve's last point less the move
    that set the short gaps' level (:func:`models.measure.wakeups.socket_wake_curve`)."""
    from models.measure.wakeups import socket_wake_curve

    curve = socket_wake_curve(late)
    first = sorted(late["tcp_by_gap"], key=lambda g: g["gap_us"])[0]
    move = curve[0][1] * 1e6 - float(first["median_us"])  # s -> us
    return late["late_us"] - move


@functools.lru_cache(maxsize=1)
def evaluate(processes: int | None = None) -> dict[str, Any]:
    """:data:`BASE` (chapter 9e's table of it) and :data:`LATE` (the same rules and scenarios
    on :data:`PROFILE`) held to the eighth machine's sample: ``{name: table}``."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import machine7 as M7

    run = load_kernel_run(prefix=M8.PREFIX)
    _, make = M8._models()[BASE]
    host = FID.ProfileHost(M7.waits(hostprofile.shipped(PROFILE)))
    summarise = functools.partial(FID.row_summary, make, "iscsi_loop", host, run.hz)
    n = FID.workers() if processes is None else processes
    return {
        BASE: M8.evaluate(processes).tables[BASE],
        LATE: FID.simulated(run.table("iscsi_loop"), summarise, processes=n),
    }


def findings(m: dict[str, float], tables: dict[str, Any]) -> dict[str, bool]:
    """What chapter 9e says of the measurement ``m`` (:func:`measured`) and the evaluation
    ``tables`` (:func:`evaluate`), each a claim that holds or not (thresholds set after the
    numbers were seen; tests in ``tests/test_latewake.py`` fail each with a wrong world):

    * ``near the fitted share``: the measured share is within a factor 1.5 of the first
      machine's fitted one (either way);
    * ``a small move``: with it the share of rows within the tolerance moves by under 3 points
      and no stall verdict changes;
    * ``the millisecond tail``: under 1 % of the wake-ups take :data:`SLOW_US` or more, yet they
      hold over half of the late wake-ups' time beyond the model's late latency.
    """
    base, late = tables[BASE], tables[LATE]
    ratio = m["share"] / m["fitted"]
    return {
        "near the fitted share": 1 / 1.5 <= ratio <= 1.5,
        "a small move": abs(B.within(late) - B.within(base)) < 0.03
        and B.verdicts(late) == B.verdicts(base),
        "the millisecond tail": m["slow_share"] < 0.01 and m["slow_excess_part"] > 0.5,
    }

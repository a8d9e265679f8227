"""Chapter 9b's measured-waker model against the fifth machine's field sweep.

What waking a sleeping thread costs the thread that wakes it (``Host.waker_curve_s``) was taken
from the pipe benchmark as the waker's ``write()`` after each idle gap *less* its value after the
shortest gap, on the view that the call itself is already in the ``send()`` costs.  But those
costs were timed with nobody asleep on the other end, and after the shortest gap the pipe's
reader had blocked too, so that subtraction dropped most of the wake-up's price: the fifth
machine's profile charges about 1.5 us after 40 us of idle, where its TCP ping-pong measures
7.5 us (a requester's ``send()`` with the responder asleep in ``poll()``, less the same call with
the responder spinning).  :func:`models.measure.wakeups.socket_waker_curve` keeps the pipe's shape
and takes its level from the ping-pong; :data:`~models.validation.field5.PROFILE_WAKER` is the
fifth machine's calibration fitted again with it (``tools/refit_profile.py``, ``--set
send_cpu_first=true``, as :data:`models.validation.machine5.PROFILE_SENT` was; nothing else
changed), and :data:`~models.validation.field5.WAKER` simulates it as
:data:`~models.validation.field5.SOFTIRQ` does, without the late wake-ups that model's profile
fitted.  Beside them :func:`pipe_waker_soft` is the same scenario on the old waker curve without
late wake-ups: what the measured cost is held against.  :func:`findings` are chapter 9b's claims,
:func:`numbers` the values it quotes.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from models.validation import fidelity as FID
from models.validation.field5 import (
    PREFIX,
    PROFILE_WAKER,
    SOFTIRQ,
    WAKER,
    _right,
    softirq_scenario,
)

__all__ = [
    "QD1_OVER",
    "waker_levels",
    "pipe_waker_soft",
    "training_ratios",
    "findings",
    "numbers",
]

#: How far above the kernel's a training row's model time must be for the claim that the refit
#: gave up the QD-1 rows (relative): a tenth, well beyond the fit's loss per row before it.
QD1_OVER = 0.10


def _profiles(sent: Any = None, waker: Any = None) -> tuple[Any, Any]:
    """The pipe-waker refit and the measured-waker one (default the bundled profiles)."""
    from models.sim import hostprofile
    from models.validation import machine5 as M5

    return (
        sent if sent is not None else hostprofile.shipped(M5.PROFILE_SENT),
        waker if waker is not None else hostprofile.shipped(PROFILE_WAKER),
    )


def waker_levels(sent: Any = None, waker: Any = None) -> dict[str, float]:
    """Microseconds: the ping-pong's waker cost and idle gap (``pp_waker``, ``pp_idle``), each
    profile's curve at that gap (``pipe_at_idle``, ``socket_at_idle``), and the smallest and
    largest difference between the two curves at their common gaps (``move_min``,
    ``move_max``: one number when the shape is kept)."""
    from models.measure.wakeups import curve_at_s

    a, b = _profiles(sent, waker)
    pp = b.records["measured"]["wake"]["pingpong"]

    def at(curve: list) -> float:
        return curve_at_s(curve, float(pp["idle_us"]) * 1e-6) * 1e6  # us -> s -> us

    old, new = a.host["waker_curve_s"], b.host["waker_curve_s"]
    moves = [(c1 - c0) * 1e6 for (i0, c0), (i1, c1) in zip(old, new) if i0 == i1]  # s -> us
    return {
        "pp_waker": float(pp["waker_us"]),
        "pp_idle": float(pp["idle_us"]),
        "pipe_at_idle": at(old),
        "socket_at_idle": at(new),
        "move_min": min(moves),
        "move_max": max(moves),
    }


def _measured(sent: Any = None, waker: Any = None) -> bool:
    """Whether the measured-waker profile's curve reads the ping-pong's cost at its idle gap
    (within 0.01 us), keeps the pipe curve's shape (every gap moved by one amount, within
    0.01 us, and up), and its fit ends at no bound, where the pipe-waker refit's does."""
    a, b = _profiles(sent, waker)
    lv = waker_levels(a, b)
    return bool(
        abs(lv["socket_at_idle"] - lv["pp_waker"]) <= 0.01
        and lv["move_max"] - lv["move_min"] <= 0.01
        and lv["move_min"] > 1.0
        and not b.records["fit"]["at_bound"]
        and a.records["fit"]["at_bound"]
    )


@functools.lru_cache(maxsize=1)
def pipe_waker_soft() -> Any:
    """:data:`~models.validation.field5.SOFTIRQ`'s scenario on the pipe-waker refit
    (:data:`models.validation.machine5.PROFILE_SENT`) without late wake-ups: the field sweep's
    iSCSI-loop table with the simulator's columns (simulated once per process)."""
    from models.kernel import load_kernel_run

    sent, _ = _profiles()
    return FID.simulate_loop(load_kernel_run(prefix=PREFIX), sent, scenario=softirq_scenario)


def _contrast() -> dict[str, int]:
    """:func:`pipe_waker_soft`'s verdicts and stall ends right."""
    gs = {g.name: g.value for g in FID.goals(pipe_waker_soft())}
    return {"verdicts": _right(gs["stall verdicts"]), "ends": _right(gs["largest stalling QD"])}


def _verdicts(ev: Any, contrast: dict[str, int] | None = None) -> bool:
    """Whether :data:`WAKER` gets at least :data:`SOFTIRQ`'s verdicts and stall ends right
    without its late wake-ups, where the same scenario on the pipe waker without them gets fewer
    of each than :data:`SOFTIRQ`."""
    g = ev.goals
    c = contrast or _contrast()
    verdicts, ends = g.loc["stall verdicts"], g.loc["largest stalling QD"]
    return bool(
        _right(verdicts[WAKER]) >= _right(verdicts[SOFTIRQ])
        and _right(ends[WAKER]) >= _right(ends[SOFTIRQ])
        and c["verdicts"] < _right(verdicts[SOFTIRQ])
        and c["ends"] < _right(ends[SOFTIRQ])
    )


def training_ratios(profile: Any) -> list[dict[str, Any]]:
    """A calibration profile's training rows: server mode, QD, size and the model's operation
    time over the kernel's (median, or mean for a row fitted by its rate)."""
    out = []
    for r in profile.records["fit"]["training_rows"]:
        kind = "p50" if "measured_p50_us" in r else "mean"
        ratio = float(r[f"model_{kind}_us"]) / float(r[f"measured_{kind}_us"])
        out.append({"sock_mode": r["sock_mode"], "qd": int(r["qd"]), "ratio": ratio})
    return out


def _traded(ev: Any, sent: Any = None, waker: Any = None) -> bool:
    """Whether the measured-waker refit gives up the QD-1 rates for its busiest training row:
    each QD-1 training row at least :data:`QD1_OVER` slower than the kernel's where the
    pipe-waker refit's are within it, its largest-QD row nearer the kernel's, the thread's CPU
    per wake-up at least five times the pipe-waker refit's, and on the test rows a lower share
    within the tolerance and a lower median ratio at QD 1 than :data:`SOFTIRQ`."""
    a, b = _profiles(sent, waker)
    ra, rb = training_ratios(a), training_ratios(b)
    top = max(r["qd"] for r in ra)
    s = ev.summary

    def off(rows: list, qd: int) -> list[float]:
        return [abs(math.log(r["ratio"])) for r in rows if r["qd"] == qd]

    return bool(
        all(r["ratio"] >= 1 + QD1_OVER for r in rb if r["qd"] == 1)
        and all(abs(r["ratio"] - 1) < QD1_OVER for r in ra if r["qd"] == 1)
        and max(off(rb, top)) < min(off(ra, top))
        and b.host["wake_cpu_s"] >= 5 * a.host["wake_cpu_s"]
        and s.loc[WAKER].within_pct < s.loc[SOFTIRQ].within_pct
        and s.loc[WAKER].median_q1 < s.loc[SOFTIRQ].median_q1
    )


def findings(ev: Any) -> dict[str, bool]:
    """Chapter 9b's claims of :data:`~models.validation.field5.WAKER` (part of
    :func:`models.validation.field5.findings`)."""
    flory = ev.goals.loc["Flory's thresholds"]
    return {
        "the ping-pong sets the waker's cost, and no fitted cost ends at a bound": _measured(),
        "measured, it gives soft interrupts first their verdicts without late wake-ups": (
            _verdicts(ev)
        ),
        "and one more of Flory's steps": _right(flory[WAKER]) > _right(flory[SOFTIRQ]),
        "but its refit buys the busiest training row with the QD-1 rates": _traded(ev),
    }


def numbers(ev: Any) -> dict[str, Any]:
    """What chapter 9b says of :data:`~models.validation.field5.WAKER`, by glue name
    (microseconds, counts, ratios)."""
    sent, waker = _profiles()
    lv = waker_levels(sent, waker)
    c = _contrast()
    ra, rb = training_ratios(sent), training_ratios(waker)
    top = max(r["qd"] for r in ra)
    return {
        "f5_waker_pp_us": lv["pp_waker"],
        "f5_waker_pp_idle_us": lv["pp_idle"],
        "f5_waker_pipe_us": lv["pipe_at_idle"],
        "f5_waker_move_us": lv["move_min"],
        "f5_waker_pipe_verdicts": c["verdicts"],
        "f5_waker_pipe_ends": c["ends"],
        "f5_waker_wcpu_us": waker.host["wake_cpu_s"] * 1e6,  # s -> us
        "f5_sent_wcpu_us": sent.host["wake_cpu_s"] * 1e6,  # s -> us
        "f5_waker_proc_us": waker.host["proc_s"] * 1e6,  # s -> us
        "f5_sent_proc_us": sent.host["proc_s"] * 1e6,  # s -> us
        "f5_waker_loss": float(waker.records["fit"]["loss"]),
        "f5_sent_loss": float(sent.records["fit"]["loss"]),
        "f5_waker_qd1_ratio": min(r["ratio"] for r in rb if r["qd"] == 1),
        "f5_sent_qd1_ratio": max(r["ratio"] for r in ra if r["qd"] == 1),
        "f5_top_qd": top,
        "f5_waker_top_ratio": next(r["ratio"] for r in rb if r["qd"] == top),
        "f5_sent_top_ratio": next(r["ratio"] for r in ra if r["qd"] == top),
    }

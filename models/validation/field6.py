"""The book's recipe on a sixth machine: calibrated there, held to its whole field sweep.

Every host model so far was built where its test sweep ran, and each was changed after its
sweep had been looked at.  This module asks the question a reader's machine asks: on a machine
none of the models has seen, does what the book tells a reader to do give the kernel's verdicts
and rates?  Everything below was fixed before the sixth machine's field sweep ran: the models'
rules, the scenarios, the goals, roles and tolerance (:func:`~models.validation.fidelity.goals`),
and the two profiles, made by ``python -m models.measure calibrate --tries 3``
(:data:`PROFILE`) and by the same refit the fifth machine's best model had
(``tools/refit_profile.py ... --set send_cpu_first=true``, :data:`PROFILE_WAKER`), minutes before
the sweep (``python -m models.measure sweep --plan field --pin apart``, then ``--plan flory``;
:data:`DATASET`, :data:`FLORY`).  Nothing is fitted on the sweep.  Models (:data:`MODELS`):

``calibrated here``
    the calibration as ``calibrate`` wrote it, simulated as the field evaluation simulates
    (:func:`~models.validation.fidelity.field_scenario`): what a reader gets from chapter 9's
    instructions;
``best rules, calibrated here``
    the fifth machine's best model without a fitted share (its ``measured waker, no late
    wake-ups``, :data:`models.validation.field5.WAKER`): the refit with a segment sent after its
    CPU, replies on their CPU, frames freed as the link takes them, bbr's clock read after the
    call's CPU, the receive window with this machine's buffer autotuned, soft interrupts first
    (:func:`softirq_scenario`); the waker's price is the curve this machine's benchmark timed at
    every idle gap (:func:`models.measure.wakeups.tcp_waker_curve`).

One audit stands beside them (:data:`AUDIT`): the fifth machine's own field sweep (the same plan,
pinned apart, a day earlier on another instance) held as a model of this one: how far two
machines of the same kind agree with each other, and so how much of a miss the machine itself can
explain.

>>> CALIBRATED, AUDIT
('calibrated here', "the fifth machine's kernel")
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from models.validation import fidelity as FID
from models.validation import flory as FL

__all__ = [
    "PREFIX",
    "DATASET",
    "FLORY",
    "PROFILE",
    "PROFILE_WAKER",
    "MODELS",
    "CALIBRATED",
    "RECIPE",
    "AUDIT",
    "tuned_kernel",
    "softirq_scenario",
    "Field6Evaluation",
    "evaluate",
    "findings",
    "numbers",
    "late_scenario",
    "at_lateness",
    "LATE_US",
    "lateness_table",
    "lateness_findings",
    "bucket_findings",
    "BUCKET_ROW",
    "bucket_contrast",
    "frame_time_us",
]

#: The sixth machine's field sweep pinned apart (``--prefix``) and its tables, named in full so
#: that :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_machine6_field"
DATASET = "kernel6_machine6_field_iscsi_loop"
FLORY = "kernel6_machine6_field_flory"
#: The sixth machine's calibration, as ``calibrate --tries 3`` wrote it.
PROFILE = "kernel6_machine6"
#: That calibration fitted again with a segment sent after its CPU (``tools/refit_profile.py``).
PROFILE_WAKER = "kernel6_machine6_waker"
#: The models held to the sweep (see the module's docstring), and each by name.
MODELS = (
    "calibrated here",
    "best rules, calibrated here",
)
CALIBRATED, RECIPE = MODELS
#: The audit beside them.
AUDIT = "the fifth machine's kernel"


@dataclass(frozen=True)
class Field6Evaluation:
    """:func:`evaluate`'s result: ``tables``, the evaluated iSCSI-loop tables by model and audit;
    ``goals``, one row per goal (the field evaluation's, Flory's steps last), one column each;
    ``summary``, :func:`models.validation.machine4.summary` of each table (rows by name);
    ``steps``, each model's :func:`~models.validation.flory.flory_steps` table."""

    tables: dict
    goals: Any
    summary: Any
    steps: dict


@functools.lru_cache(maxsize=1)
def _sysctls() -> tuple[tuple[str, str], ...]:
    """The sysctls the sweep's sidecar recorded, read once (every row's scenario asks)."""
    from models import data

    return tuple(sorted(data.describe(DATASET)["measurement"]["host_sysctls"].items()))


def tuned_kernel() -> str:
    """The receive window's kernel profile with this machine's receive buffer, autotuned
    (:func:`models.validation.rcvbuf.machine_kernel` of the sysctls the sweep recorded)."""
    from models.validation import rcvbuf as RB

    return RB.machine_kernel(dict(_sysctls()))


def softirq_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`models.validation.field5.softirq_scenario` with this machine's buffer in the fifth
    machine's place (a module-level function: it pickles)."""
    from models.validation import field5 as F5

    on = {"softirq_first": True}
    sc = F5.window_scenario(table, row, host, hz).replace(kernel={"profile": tuned_kernel()})
    return sc.replace(client=on, server=on)


def _profiles() -> list[tuple[Any, Any]]:
    from models.sim import hostprofile

    return [
        (hostprofile.shipped(PROFILE), FID.field_scenario),
        (hostprofile.shipped(PROFILE_WAKER), softirq_scenario),
    ]


def evaluate(processes: int | None = None) -> Field6Evaluation:
    """Every model of :data:`MODELS` held to every run of :data:`DATASET` (and its Flory runs),
    and the audit beside them."""
    import pandas as pd

    from models.kernel import load_kernel_run
    from models.validation import field5 as F5
    from models.validation import machine4 as M4
    from models.validation import machines

    run = load_kernel_run(prefix=PREFIX)
    n = FID.workers() if processes is None else processes
    tables, flory, lists = FL.models_on_sweep(run, dict(zip(MODELS, _profiles())), n)
    fifth = load_kernel_run(prefix=F5.PREFIX)
    tables[AUDIT] = machines.kernel_beside(run.table("iscsi_loop"), fifth.table("iscsi_loop"))
    flory[AUDIT] = _kernel_steps(run, fifth)
    lists[AUDIT] = FID.goals(tables[AUDIT]) + [FL.flory_goal(flory[AUDIT])]
    goals = {name: {g.name: g.value for g in gs} for name, gs in lists.items()}
    names = [*MODELS, AUDIT]
    table = pd.DataFrame(goals)[names]
    summary = pd.DataFrame({k: M4.summary(t) for k, t in tables.items()}).T.loc[names]
    return Field6Evaluation(tables, table, summary, flory)


def _kernel_steps(run: Any, other: Any) -> Any:
    """Flory's steps with ``other``'s kernel rows where the simulator's stand (the audit)."""
    here = FL.step_rows(run.table("flory"))
    there = other.table("flory").set_index(["link", "sock_mode", "payload_bytes"])["iops"]
    t = here.copy()
    t["sim_iops"] = [there.loc[k] for k in zip(t.link, t.sock_mode, t.payload_bytes)]
    return FL.flory_steps(t)


def on_time_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`softirq_scenario` with the rate limit's watchdog on time (``Link.watchdog_wake``
    off): the contrast for the link-limited rows (a module-level function: it pickles)."""
    return softirq_scenario(table, row, host, hz).replace(link={"watchdog_wake": False})


@functools.lru_cache(maxsize=1)
def on_time() -> Any:
    """The sweep's link-limited rows as :data:`RECIPE` simulates them but with the watchdog on
    time (:func:`on_time_scenario`; simulated once per process)."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile

    run = load_kernel_run(prefix=PREFIX)
    profile = hostprofile.shipped(PROFILE_WAKER)
    return FID.simulate_loop(run, profile, scenario=on_time_scenario, rows=FID.link_limited)


def late_scenario(late_s: float, table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`softirq_scenario` with the watchdog late by ``late_s`` seconds on both ends
    (``Host.tbf_late_s``, what ``calibrate`` now measures) in place of the wake-up that stands in
    for it (a module-level function: bound with :func:`functools.partial`, it pickles)."""
    late = {"tbf_late_s": late_s}
    return softirq_scenario(table, row, host, hz).replace(client=late, server=late)


@functools.lru_cache(maxsize=4)
def at_lateness(late_s: float) -> Any:
    """The sweep's link-limited rows as :data:`RECIPE` simulates them with the watchdog late by
    ``late_s`` seconds (:func:`late_scenario`; simulated once per process and value)."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile

    if not 0 < late_s <= 1e-3:  # 0 would mean "not measured": the stand-in, not a lateness
        raise ValueError(f"late_s must be in (0, 1e-3] seconds, got {late_s!r}")
    run = load_kernel_run(prefix=PREFIX)
    profile = hostprofile.shipped(PROFILE_WAKER)
    make = functools.partial(late_scenario, late_s)
    return FID.simulate_loop(run, profile, scenario=make, rows=FID.link_limited)


#: Watchdog latenesses simulated besides the one measured on the second machine (the bundled
#: ``kernel6_tbf_timer``), the stand-in and none, microseconds: one below, one above.
LATE_US = (10.0, 30.0)


def lateness_table(ev: Field6Evaluation, timed: Any = None, late: Any = None) -> Any:
    """The link-limited rows of :data:`RECIPE` against the watchdog's lateness: per lateness
    (microseconds, ascending; on time first, the stand-in last), the extra stalls behind the
    limit with large responses (test rows, :func:`_watchdog_extra`) and the share of rates within
    the field's tolerance (:func:`_limited_within`, percent).  ``timed`` stands for
    :func:`on_time` and ``late`` for ``{seconds: table}`` of :func:`at_lateness` (defaults: they,
    at :data:`LATE_US` and the second machine's measured lateness)."""
    import pandas as pd

    from models.sim import hostprofile
    from models.validation import tbf_timer as TT

    timed = on_time() if timed is None else timed
    measured = TT.measured_late_s()
    if late is None:
        late = {s: at_lateness(s) for s in sorted([measured, *(u * 1e-6 for u in LATE_US)])}
    stand_in = hostprofile.shipped(PROFILE_WAKER).host["wake_s"]
    tables = [
        (0.0, "on time", timed),
        *((s, "measured, second machine" if s == measured else "", t) for s, t in late.items()),
        (stand_in, "the wake-up standing in", _limited(ev.tables[RECIPE])),
    ]
    return pd.DataFrame(
        [
            {
                "late_us": s * 1e6,  # s -> us
                "which": name,
                "extra_stalls": len(_watchdog_extra(t)),
                "within_pct": _limited_within(t),
            }
            for s, name, t in tables
        ]
    )


def lateness_findings(table: Any) -> dict[str, bool]:
    """What chapter 9d says of :func:`lateness_table`'s ``table``."""
    measured = table[table.which == "measured, second machine"].iloc[0]
    stand_in = table.iloc[-1]
    above = table[(table.late_us > measured.late_us) & (table.late_us < stand_in.late_us)]
    share = FID.IOPS_SHARE * 100
    return {
        "late as measured on the second machine, most limited rates come right": bool(
            measured.within_pct >= share and 2 * measured.extra_stalls < stand_in.extra_stalls
        ),
        "later still, most go wrong again": bool(
            len(above) and (above.within_pct < share / 2).any()
        ),
        "no extra stall below the measured lateness": bool(
            (table[table.late_us < measured.late_us].extra_stalls == 0).all()
        ),
    }


def bucket_findings(contrast: Any) -> dict[str, bool]:
    """What chapter 9d says of :func:`bucket_contrast`'s table (two latenesses, the first below
    one frame's time at 1 Gb/s and the last above it)."""
    early, late = contrast.iloc[0], contrast.iloc[-1]
    frame = frame_time_us()
    return {
        "the latenesses lie either side of one frame's time": bool(
            contrast.index[0] < frame < contrast.index[-1]
        ),
        "with two frames the later watchdog costs over a fifth of the rate": bool(
            late["two frames"] < 0.8 * early["two frames"]
        ),
        "with four it costs under a twentieth": bool(
            abs(late["four frames"] / early["four frames"] - 1) < 0.05
        ),
    }


#: The link-limited row whose rate :func:`bucket_contrast` follows: 2 KiB responses at QD 8,
#: ``TCP_NODELAY`` at both ends, bbr, behind the 1 Gb/s limit at MTU 1500.
BUCKET_ROW = {
    "link": "veth-1500-1g",
    "cc": "bbr",
    "client_sock_mode": "nodelay",
    "sock_mode": "nodelay",
    "iosize_bytes": 2048,
    "qd": 8,
}


def frame_time_us(rate_bits_per_s: float = 1e9, mtu: int = 1500) -> float:
    """How long a full frame's tokens take to arrive at ``rate_bits_per_s``, microseconds (the
    ``tbf`` bucket holds :data:`models.framing.TBF_BURST_FRAMES` of them).

    >>> round(frame_time_us(), 3)
    12.112
    """
    from models import framing

    frame = framing.tbf_burst_bytes(mtu, 1)  # one full frame, bytes
    return frame * 8 / rate_bits_per_s * 1e6  # bytes -> bits, s -> us


def bucket_contrast(late_us: tuple[float, ...] = (10.0, 30.0)) -> Any:
    """:data:`BUCKET_ROW` as :data:`RECIPE` simulates it with the watchdog late by each of
    ``late_us`` (microseconds), with the row's two-frame bucket and with one twice as deep:
    simulated over kernel rate, one row per lateness, a column per bucket."""
    import pandas as pd

    from models.kernel import load_kernel_run, simulate_summary
    from models.sim import hostprofile

    run = load_kernel_run(prefix=PREFIX)
    t = run.table("iscsi_loop")
    pick = t[FID.link_limited(t)]
    for k, v in BUCKET_ROW.items():
        pick = pick[pick[k] == v]
    row = pick.iloc[0].to_dict()
    host = FID.ProfileHost(hostprofile.shipped(PROFILE_WAKER))
    out = []
    for us in late_us:
        sc = late_scenario(us * 1e-6, "iscsi_loop", row, host, run.hz)
        deep = sc.replace(link={"bucket_bytes": 2 * sc.link.bucket_bytes})
        out.append(
            {
                "late_us": us,
                "two frames": simulate_summary(sc).iops / row["iops"],
                "four frames": simulate_summary(deep).iops / row["iops"],
            }
        )
    return pd.DataFrame(out).set_index("late_us")


#: Smallest response (bytes) of the link-limited rows whose extra stalls the watchdog's lateness
#: makes: 16 KiB.
LARGE_LIMITED_BYTES = 16384


def _limited(t: Any) -> Any:
    """The rows of an evaluated table behind the 1 Gb/s rate limit."""
    return t[FID.link_limited(t)]


def _extra(t: Any) -> Any:
    """Test rows the model stalls on and the kernel does not."""
    test = t[t.role == "test"]
    return test[test.sim_stalls & ~test.kernel_stalls]


def _missed(t: Any) -> Any:
    """Test rows the kernel stalls on and the model does not."""
    test = t[t.role == "test"]
    return test[~test.sim_stalls & test.kernel_stalls]


def _limited_within(t: Any) -> float:
    """Share (percent) of the link-limited rows without a kernel stall whose simulated rate is
    within the field's tolerance of the kernel's."""
    rows = t[FID.link_limited(t) & ~t.kernel_stalls]
    return float(((rows.sim_iops / rows.iops - 1).abs() <= FID.IOPS_TOL).mean() * 100)


def _watchdog_extra(t: Any) -> Any:
    """The extra stalls behind the rate limit with responses of :data:`LARGE_LIMITED_BYTES` and
    more."""
    x = _extra(t)
    return x[FID.link_limited(x) & (x.iosize_bytes >= LARGE_LIMITED_BYTES)]


def findings(ev: Field6Evaluation, timed: Any = None) -> dict[str, bool]:
    """What chapter 9's page on the sixth machine says of :func:`evaluate`'s result, each a claim
    that holds or not; ``timed`` stands for :func:`on_time` (default: it)."""
    s = ev.summary
    cal, best, audit = (s.loc[m] for m in (CALIBRATED, RECIPE, AUDIT))
    lo, hi = FID.RATIO_RANGE
    timed = on_time() if timed is None else timed
    late = _limited(ev.tables[RECIPE])
    missed = _missed(ev.tables[RECIPE])
    behind_nodelay = missed.client_sock_mode.eq("nodelay")
    return {
        "the best rules beat the plain calibration on rates and verdicts": bool(
            best.within_pct > cal.within_pct and _right(best.verdicts) >= _right(cal.verdicts)
        ),
        "neither reaches the goal's share, and both run too fast from QD 8": bool(
            max(cal.within_pct, best.within_pct) < FID.IOPS_SHARE * 100
            and min(cal.median_q8, best.median_q8) > hi
        ),
        "both are right at QD 1": all(lo <= m.median_q1 <= hi for m in (cal, best)),
        "the fifth machine's kernel is a worse model of this one than the best rules": bool(
            audit.within_pct < best.within_pct and not lo <= audit.median_q1 <= hi
        ),
        "most extra stalls are the rate limit's, with 16 KiB and more": all(
            2 * len(_watchdog_extra(ev.tables[m])) > len(_extra(ev.tables[m])) for m in MODELS
        ),
        "with the watchdog on time they go, and the limited rates come right": bool(
            len(_watchdog_extra(timed)) == 0
            and _limited_within(timed) >= FID.IOPS_SHARE * 100 > 2 * _limited_within(late)
        ),
        "the stalls missed are at QD 2-8, mostly behind a TCP_NODELAY client": bool(
            len(missed)
            and missed.qd.between(2, 8).all()
            and 4 * int(behind_nodelay.sum()) >= 3 * len(missed)
        ),
    }


def _right(value: str) -> int:
    """The count right of ``"right/rows"`` or ``"right of rows"``."""
    return int(value.replace(" of ", "/").split("/")[0])


def numbers(ev: Field6Evaluation, timed: Any = None) -> dict[str, Any]:
    """The values the page quotes, by glue name (counts, percent, ratios, microseconds)."""
    from models.sim import hostprofile
    from models.validation import field5 as F5
    from models.validation.field5_waker import training_ratios

    s = ev.summary
    timed = on_time() if timed is None else timed
    out: dict[str, Any] = {
        "f6_rows": len(ev.tables[CALIBRATED]),
        "f6_io_rows": len(FID.iops_table(ev.tables[CALIBRATED])),
    }
    for key, name in zip(("cal", "best", "audit"), [*MODELS, AUDIT]):
        out[f"f6_{key}_within"] = float(s.loc[name, "within_pct"])
        out[f"f6_{key}_q1"] = float(s.loc[name, "median_q1"])
        out[f"f6_{key}_q8"] = float(s.loc[name, "median_q8"])
        out[f"f6_{key}_verdicts"] = str(s.loc[name, "verdicts"])
        out[f"f6_{key}_ends"] = str(ev.goals.loc["largest stalling QD", name])
        out[f"f6_{key}_flory"] = str(ev.goals.loc["Flory's thresholds", name])
    best = ev.tables[RECIPE]
    out["f6_best_extra"] = len(_extra(best))
    out["f6_best_watchdog_extra"] = len(_watchdog_extra(best))
    out["f6_best_missed"] = len(_missed(best))
    out["f6_best_missed_nodelay"] = int(_missed(best).client_sock_mode.eq("nodelay").sum())
    limited = _limited(best)
    out["f6_limited_rows"] = int((~limited.kernel_stalls).sum())  # those of the rate shares
    out["f6_late_limited_within"] = _limited_within(_limited(best))
    out["f6_timed_limited_within"] = _limited_within(timed)
    out["f6_timed_extra"] = len(_watchdog_extra(timed))
    own, fifth = hostprofile.shipped(PROFILE), hostprofile.shipped(F5.PROFILE_WAKER)
    out["f6_wake_us"] = own.host["wake_s"] * 1e6  # s -> us
    out["f5_wake_us"] = fifth.host["wake_s"] * 1e6  # s -> us
    for key, p in (("cal", own), ("best", hostprofile.shipped(PROFILE_WAKER))):
        out[f"f6_{key}_loss"] = float(p.records["fit"]["loss"])
        out[f"f6_{key}_proc_us"] = p.host["proc_s"] * 1e6  # s -> us
        out[f"f6_{key}_wcpu_us"] = p.host["wake_cpu_s"] * 1e6  # s -> us
        out[f"f6_{key}_bounds"] = len(p.records["fit"]["at_bound"])
        # its own QD-8 training rows behind a TCP_NODELAY server: model time over kernel time
        q8 = [
            r["ratio"] for r in training_ratios(p) if r["qd"] == 8 and r["sock_mode"] == "nodelay"
        ]
        out[f"f6_{key}_train_q8_lo"], out[f"f6_{key}_train_q8_hi"] = min(q8), max(q8)
    return out

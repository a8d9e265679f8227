"""The whole field sweep on the fifth machine, pinned apart, against that machine's own profiles.

The fifth machine's sample (:mod:`models.validation.machine5`) is 143 runs of the repeat plan.
Here the whole field plan ran on the same instance, a few hours after the machine's calibration,
with the server pinned to one CPU and the client to the other (``python -m models.measure sweep
--plan field --pin apart``, :data:`DATASET`): every client and server mode, 512 B to 64 KiB, QD 1
to 64, loopback and veth at MTU 1500 and 9000, the 1 Gb/s limit, reno and cubic beside bbr.  It
is the first field sweep on a machine whose profile measured the pacing timer's costs, so nothing
in the first two models below is borrowed or fitted to these runs.  Models (:data:`MODELS`):

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
``the same, late wake-ups``
    that model with a share of late wake-ups (:data:`PROFILE_LATE`: each wake-up late with
    probability 0.02 takes the latency of the measured wake-up curve's last point, a CPU
    descheduled or halted deep): the one parameter fitted on this sweep, on its training rows
    only (``tools/fit_wake_late.py``, as the first machine's share was fitted on its sweep);
``first machine's profile``
    the book's shipped profile, made on another machine (no pacing-timer costs): what a reader gets
    who does not calibrate;
``late wake-ups, receive window``
    the third model on the kernel profile ``linux-6-rwnd`` (:func:`window_scenario`): the
    client ACKs two full segments at once only if its window does not shrink
    (:mod:`models.sim.rules.rwnd`), so a response's ACK waits for the read where unread data
    shrink it.  Nothing is fitted again (the late share stays the one fitted on ``linux-6``).
    Its window scale is the profile's (7, Linux's for the default ``tcp_rmem`` before 6.18) and
    its buffer keeps ``tcp_rmem[1]`` (128 KiB);
``the same, the machine's buffer``
    that model with this machine's receive buffer (:func:`tuned_scenario`): its window scale
    (10, from the 32 MiB ``tcp_rmem[2]`` the sweep recorded) and the buffer autotuned as Linux
    6.18 does it, from ``tcp_rmem[1]`` (:func:`tuned_kernel`; the rule is held to ``ss``
    readings of this machine by :mod:`models.validation.rcvbuf`).  A run stalled on the
    delayed ACK never reads more than ten segments in a receive RTT and keeps 128 KiB, as the
    kernel's does; a fast one grows to megabytes within its first milliseconds.  Nothing is
    fitted again;
``the same, soft interrupts first``
    that model with ``Host.softirq_first`` on both ends (:func:`softirq_scenario`,
    :mod:`models.sim.softirq_first`): the work a soft interrupt queues on a thread's CPU (the
    peer's ACK, a request that ACK released) runs before the thread's next write, as Linux runs
    it inside the ``send()`` that raised it.  Without it a ``MSG_MORE`` and ``TCP_NODELAY``
    server's header waits in the send queue while such a request arrives and pushes it out
    alone.  Nothing is fitted again; its own comparison is :mod:`models.validation.field5_soft`;
``measured waker, no late wake-ups``
    that model on another profile, without the late share: the calibration fitted again as
    :data:`models.validation.machine5.PROFILE_SENT` was, with what waking a thread costs the
    waker's ``send()`` measured by the ping-pong (:data:`PROFILE_WAKER`,
    :func:`models.measure.wakeups.socket_waker_curve`); its own comparison is
    :mod:`models.validation.field5_waker`.

One audit stands beside them (:data:`AUDIT`): the machine's pinned sample, measured about three
hours earlier, held as a model of the same scenarios here (how far the kernel repeats itself on
this machine over those hours).  The roles, tolerance and goals are the field evaluation's
(:func:`~models.validation.fidelity.goals`), fixed before any of these runs; the audit, a sample,
cannot tell the largest stalling QD of a group (``-``).  Flory's rows leave out as many
operations as the harness's warm-up did (:func:`~models.validation.flory.flory_evaluation`;
with only the quick-ACK start left out, :func:`short_start_steps`, the machine's-buffer model
gets none of the steps: its window still grows).

>>> RULES, AUDIT
("freed, paced by the call's clock", 'the sample, hours earlier')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from models.validation import fidelity as FID
from models.validation import flory as FL
from models.validation import machines

__all__ = [
    "PREFIX",
    "DATASET",
    "FLORY",
    "MODELS",
    "CALIBRATED",
    "RULES",
    "LATE",
    "FIRST",
    "WINDOW",
    "WINDOW_KERNEL",
    "TUNED",
    "SOFTIRQ",
    "WAKER",
    "PROFILE_LATE",
    "PROFILE_WAKER",
    "window_scenario",
    "tuned_kernel",
    "tuned_scenario",
    "softirq_scenario",
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
#: The models held to it (see the module's docstring), and each by name.
MODELS = (
    "calibrated here",
    "freed, paced by the call's clock",
    "the same, late wake-ups",
    "first machine's profile",
    "late wake-ups, receive window",
    "the same, the machine's buffer",
    "the same, soft interrupts first",
    "measured waker, no late wake-ups",
)
CALIBRATED, RULES, LATE, FIRST, WINDOW, TUNED, SOFTIRQ, WAKER = MODELS
#: The kernel profile of :data:`WINDOW`.
WINDOW_KERNEL = "linux-6-rwnd"
#: The rules' profile with the share of late wake-ups fitted on this sweep's training rows.
PROFILE_LATE = "kernel6_machine5_sent_late"
#: The calibration fitted again with the waker's cost the ping-pong measured (no late share).
PROFILE_WAKER = "kernel6_machine5_waker"
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
    all of :func:`~models.validation.fidelity.goals`, of which it tells :data:`SAMPLE_GOALS`);
    ``steps``, each model's :func:`~models.validation.flory.flory_steps` table."""

    tables: dict
    goals: Any
    summary: Any
    goal_lists: dict
    steps: dict


def _profiles() -> list[tuple[Any, Any]]:
    from models.sim import hostprofile
    from models.validation import machine4 as M4
    from models.validation import machine5 as M5

    return [
        (hostprofile.shipped(M5.PROFILE), FID.field_scenario),
        (hostprofile.shipped(M5.PROFILE_SENT), M4.freed_clock_scenario),
        (hostprofile.shipped(PROFILE_LATE), M4.freed_clock_scenario),
        (hostprofile.shipped(), FID.field_scenario),
        (hostprofile.shipped(PROFILE_LATE), window_scenario),
        (hostprofile.shipped(PROFILE_LATE), tuned_scenario),
        (hostprofile.shipped(PROFILE_LATE), softirq_scenario),
        (hostprofile.shipped(PROFILE_WAKER), softirq_scenario),
    ]


@functools.lru_cache(maxsize=1)
def _sysctls() -> tuple[tuple[str, str], ...]:
    """The sysctls the sweep's sidecar recorded, read once (every row's scenario asks)."""
    from models import data

    return tuple(sorted(data.describe(DATASET)["measurement"]["host_sysctls"].items()))


def tuned_kernel() -> str:
    """:data:`WINDOW_KERNEL` with this machine's receive buffer, its autotuning on
    (:func:`models.validation.rcvbuf.machine_kernel` of the sysctls the sweep recorded: its
    ``tcp_rmem``, 6.18's defaults, give ``linux-6.18-rwnd``; the sweep did not record
    ``net.core.rmem_max``, which could only raise the window scale)."""
    from models.validation import rcvbuf as RB

    return RB.machine_kernel(dict(_sysctls()))


def tuned_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`window_scenario` on :func:`tuned_kernel` (a module-level function: it pickles)."""
    return window_scenario(table, row, host, hz).replace(kernel={"profile": tuned_kernel()})


def softirq_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`tuned_scenario` with ``Host.softirq_first`` on both ends (a module-level function:
    it pickles)."""
    on = {"softirq_first": True}
    return tuned_scenario(table, row, host, hz).replace(client=on, server=on)


def window_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`models.validation.machine4.freed_clock_scenario` on the kernel profile
    :data:`WINDOW_KERNEL` (a module-level function: it pickles)."""
    from models.validation import machine4 as M4

    return M4.freed_clock_scenario(table, row, host, hz).replace(kernel={"profile": WINDOW_KERNEL})


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
    tables, flory, lists = FL.models_on_sweep(run, dict(zip(MODELS, _profiles())), n)
    sample = data.load(M5.DATASET)
    here = run.table("iscsi_loop")
    tables[AUDIT] = machines.kernel_beside(sample, here)
    lists[AUDIT] = FID.goals(tables[AUDIT])
    goals = {name: {g.name: g.value for g in gs} for name, gs in lists.items()}
    goals[AUDIT] = {k: (v if k in SAMPLE_GOALS else "-") for k, v in goals[AUDIT].items()}
    names = [*MODELS, AUDIT]
    table = pd.DataFrame(goals)[names].fillna("-")  # the audit has no Flory runs
    summary = pd.DataFrame({k: M4.summary(t) for k, t in tables.items()}).T.loc[names]
    return Field5Evaluation(tables, table, summary, lists, flory)


def findings(ev: Field5Evaluation) -> dict[str, bool]:
    """What chapter 9b says of :func:`evaluate`'s result, each a claim that holds or not."""
    s = ev.summary
    cal, rules, late, ship, win = (s.loc[m] for m in (CALIBRATED, RULES, LATE, FIRST, WINDOW))
    audit = s.loc[AUDIT]
    lo, hi = FID.RATIO_RANGE
    ends, flory = ev.goals.loc["largest stalling QD"], ev.goals.loc["Flory's thresholds"]
    return {
        "the rules beat the calibration within a quarter": bool(rules.within_pct > cal.within_pct),
        "the machine's own profiles beat the first machine's": bool(
            min(cal.within_pct, rules.within_pct, late.within_pct) > ship.within_pct
        ),
        "the rules' medians lie inside the goal's range, with late wake-ups too": all(
            lo <= m.median_q1 <= hi and lo <= m.median_q8 <= hi for m in (rules, late)
        ),
        "no model reaches the goal's share": bool(
            max(s.loc[m].within_pct for m in MODELS) < FID.IOPS_SHARE * 100
        ),
        "the kernel's own repeat stays above every model": bool(
            audit.within_pct > max(s.loc[m].within_pct for m in MODELS)
        ),
        # without late wake-ups the verdicts go the other way round
        "the stall verdicts go the other way: the first machine's most, the rules' fewest": bool(
            _right(ship.verdicts) >= _right(cal.verdicts) > _right(rules.verdicts)
        ),
        "so do the largest stalling QD and Flory's steps": all(
            _right(g[FIRST]) >= _right(g[CALIBRATED]) > _right(g[RULES]) for g in (ends, flory)
        ),
        # the late wake-ups, fitted on the training rows alone, mend the verdicts
        "late wake-ups give the rules the first machine's verdicts": bool(
            _right(late.verdicts) >= _right(ship.verdicts) > _right(rules.verdicts)
        ),
        "and the calibration's stall ends, short of the first machine's": bool(
            _right(ends[FIRST]) > _right(ends[LATE]) >= _right(ends[CALIBRATED])
        ),
        "the rules miss the kernel's stalls at QD 2 and 8 that late wake-ups enter": _entries(ev),
        "while the rates stay the rules'": bool(late.within_pct >= rules.within_pct),
        "the stalls left are few, the model's extra ones under bbr at QD 4 and 12": _left(ev),
        "Flory's held-tail steps stay missed": not _held_right(ev, LATE).any(),
        # the receive window's test: more verdicts, stall ends and steps, slightly lower rates
        "the window gives the late model more verdicts, stall ends and Flory's steps": all(
            _right(g[WINDOW]) > _right(g[LATE])
            for g in (ev.goals.loc["stall verdicts"], ends, flory)
        ),
        "at a small cost in rates": bool(
            late.within_pct - 5 <= win.within_pct < late.within_pct
            and lo <= win.median_q1 <= hi
            and lo <= win.median_q8 <= hi
        ),
        "its steps are the held tails at MTU 1500": _window_steps(ev),
        "with the machine's buffer, autotuned, the steps need the harness's warm-up": _tuned(ev),
        **_soft_findings(ev),
        "the first machine's copies cost more per byte, its wake-ups less": _first_vs_fifth(),
    }


#: The groups whose stalls the rules miss and late wake-ups enter: (client mode, QD), each a
#: Nagle server's.
ENTRY_GROUPS = (("nagle", 2), ("nodelay", 8))


def _entry_rows(ev: Field5Evaluation) -> Any:
    """The rules' rows of :data:`ENTRY_GROUPS` (every link, size and control)."""
    t = ev.tables[RULES]
    pick = [g in ENTRY_GROUPS for g in zip(t.client_sock_mode, t.qd.astype(int))]
    return t[t.sock_mode.eq("nagle") & t.kernel_stalls & t.index.isin(t.index[pick])]


def _entries(ev: Field5Evaluation) -> bool:
    """Whether the rules miss the kernel's stall in :data:`ENTRY_GROUPS` (on at least a link of
    each, under all three controls), where the kernel stalls on half its operations or more; the
    rules with late wake-ups and the first machine's profile stall there, and the first machine's
    profile without its late wake-ups does not."""
    rows = _entry_rows(ev)
    missed = rows[~rows.sim_stalls]
    groups = {(c, int(q)) for c, q in zip(missed.client_sock_mode, missed.qd)}
    if groups != set(ENTRY_GROUPS) or set(missed.cc) != {"bbr", "reno", "cubic"}:
        return False
    if not (missed.stalled_pct >= 45).all():
        return False
    late, first = ev.tables[LATE].loc[missed.index], ev.tables[FIRST].loc[missed.index]
    if not (late.sim_stalls.all() and first.sim_stalls.all()):
        return False
    from models.kernel import load_kernel_run
    from models.sim import hostprofile

    none = hostprofile.shipped().with_host(wake_late_share=0.0)
    again = FID.resimulate(missed, none, load_kernel_run(prefix=PREFIX).hz)
    return not again.sim_stalls.any()


def _left(ev: Field5Evaluation) -> bool:
    """Whether the rules with late wake-ups get all but a few verdicts right: every stall the
    kernel did not have is under bbr at QD 4 or 12, and it misses at most three."""
    t = ev.tables[LATE]
    extra = t[t.sim_stalls & ~t.kernel_stalls]
    missed = t[~t.sim_stalls & t.kernel_stalls]
    return bool(
        len(extra) and set(extra.cc) == {"bbr"} and set(extra.qd) <= {4, 12} and len(missed) <= 3
    )


def _soft_findings(ev: Field5Evaluation) -> dict[str, bool]:
    """:data:`SOFTIRQ`'s claims (:mod:`models.validation.field5_soft`)."""
    from models.validation import field5_soft as F5S
    from models.validation import field5_waker as F5W

    return {**F5S.findings(ev), **F5W.findings(ev)}


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


def _held_pairs() -> list[str]:
    """Flory's steps of a tail Nagle holds: one byte past a whole number of MSS at MTU 1500."""
    from models.framing import mss

    unit = mss(1500)  # bytes
    return [f"{a}/{b}" for link, a, b in FL.FLORY_PAIRS if link == "veth-1500" and a % unit == 0]


def _held_right(ev: Field5Evaluation, name: str) -> Any:
    """Whether model ``name`` gets each of :func:`_held_pairs` (a boolean Series)."""
    return ev.steps[name].set_index("payloads").loc[_held_pairs(), "right"]


def _window_steps(ev: Field5Evaluation) -> bool:
    """Whether the window's model gets Flory's two steps of a tail Nagle holds at MTU 1500
    (1448/1449 and 4344/4345) and misses the other two, and the late model misses those two."""
    win = ev.steps[WINDOW].set_index("payloads")
    held = _held_pairs()
    return bool(
        set(win.index[win.right]) == set(held)
        and not _held_right(ev, LATE).any()
        and (win.loc[held, "sim_change"] < 1).all()
    )


@functools.lru_cache(maxsize=1)
def short_start_steps() -> Any:
    """Flory's steps of :data:`TUNED` with only the scenario's quick-ACK start left out
    (:func:`models.validation.flory.flory_evaluation` with ``harness_warmup=False``): the
    first few hundred exchanges, while the client's window still grows."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile

    run = load_kernel_run(prefix=PREFIX)
    profile = hostprofile.shipped(PROFILE_LATE)
    return FL.flory_evaluation(profile, run, scenario=tuned_scenario, harness_warmup=False)


def _tuned(ev: Field5Evaluation) -> bool:
    """Whether the window's model on the machine's own buffer (its window scale, the buffer
    autotuned) differs from the profile's scale, gets the window's held-tail steps when the
    harness's warm-up is left out and none of Flory's steps when only the quick-ACK start is, and
    keeps the window's stall verdicts and stall ends, more than the late model's."""
    from models.sim.kernels import PROFILES

    g = ev.goals
    verdicts, ends = g.loc["stall verdicts"], g.loc["largest stalling QD"]
    return bool(
        PROFILES[tuned_kernel()].rcv_wscale != PROFILES[WINDOW_KERNEL].rcv_wscale
        and PROFILES[tuned_kernel()].rcv_buf_max_bytes is not None
        and _held_right(ev, TUNED).all()
        and not short_start_steps().right.any()
        and all(_right(x[TUNED]) >= _right(x[WINDOW]) > _right(x[LATE]) for x in (verdicts, ends))
    )


def _warmup_numbers() -> dict[str, Any]:
    """The harness's warm-up (seconds) and the operations it left out of the kernel's Flory rows
    of :func:`_held_pairs` (the fewest and the most)."""
    from models.kernel import load_kernel_run
    from models.measure.plan import WARMUP_S

    t = load_kernel_run(prefix=PREFIX).table("flory")
    sizes = {int(x) for p in _held_pairs() for x in p.split("/")}
    rows = t[t.sock_mode.eq("nagle") & t.link.eq("veth-1500") & t.payload_bytes.isin(sizes)]
    ops = [FL.harness_warmup_ops(float(x)) for x in rows.iops]
    return {"f5_warmup_s": WARMUP_S, "f5_warm_ops_min": min(ops), "f5_warm_ops_max": max(ops)}


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
    keys = ("cal", "rules", "late", "ship", "win", "tuned", "soft", "waker")
    for key, name in zip((*keys, "audit"), [*MODELS, AUDIT]):
        out[f"f5_{key}_within"] = float(s.loc[name, "within_pct"])
        out[f"f5_{key}_held"] = float(s.loc[name, "held_within_pct"])
        out[f"f5_{key}_q1"] = float(s.loc[name, "median_q1"])
        out[f"f5_{key}_q8"] = float(s.loc[name, "median_q8"])
        out[f"f5_{key}_verdicts"] = str(s.loc[name, "verdicts"])
    for key, name in zip(keys, MODELS):
        out[f"f5_{key}_ends"] = str(ev.goals.loc["largest stalling QD", name])
        out[f"f5_{key}_flory"] = str(ev.goals.loc["Flory's thresholds", name])
    short = short_start_steps()
    out["f5_tuned_flory_short"] = f"{int(short.right.sum())} of {len(short)}"
    out.update(_warmup_numbers())
    out.update(_late_fit(ev))
    from models.validation import field5_soft as F5S

    out.update(F5S.numbers(ev))
    from models.validation import field5_waker as F5W

    out.update(F5W.numbers(ev))
    from models.sim.kernels import PROFILES

    out["f5_profile_wscale"] = PROFILES[WINDOW_KERNEL].rcv_wscale
    tuned = PROFILES[tuned_kernel()]
    assert tuned.rcv_buf_bytes is not None and tuned.rcv_buf_max_bytes is not None
    out["f5_own_wscale"] = tuned.rcv_wscale
    out["f5_own_rmem_mib"] = tuned.rcv_buf_max_bytes / 2**20  # bytes -> MiB
    out["f5_own_rmem_kib"] = tuned.rcv_buf_bytes / 2**10  # bytes -> KiB
    return out


def _late_fit(ev: Field5Evaluation) -> dict[str, Any]:
    """The late wake-ups' share, the latency a late one takes (us) and how the share was chosen:
    the training rows' verdicts with it and without (from the profile's record of the fit)."""
    from models.sim import hostprofile

    profile = hostprofile.shipped(PROFILE_LATE)
    scores = profile.records["fit"]["wake_late_share"]["scores"]
    share = profile.host["wake_late_share"]
    best = next(x for x in scores if x["share"] == share)
    none = next(x for x in scores if x["share"] == 0)
    train = int((ev.tables[LATE].role == "train").sum())
    return {
        "f5_late_share": share,
        "f5_late_wake_us": profile.host["wake_curve_s"][-1][1] * 1e6,  # s -> us
        "f5_late_first_wake_us": profile.host["wake_curve_s"][0][1] * 1e6,  # s -> us
        "f5_late_train_rows": train,
        "f5_late_train_verdicts": best["verdicts"],
        "f5_late_train_verdicts_none": none["verdicts"],
    }

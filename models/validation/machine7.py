"""The copies as the loop pays them, held to a seventh machine's sample of the field runs.

Every profile before this one charged the copies of a response what ``python -m models.measure
costs`` measured one transfer at a time: a 64 KiB ``send()`` in one thread, then with its reader
spinning on the other CPU (``large_cross``), and a 64 KiB read from a cache that holds it
(``recv_large``).  In the request/response loop eight responses are in flight and the reader
runs on the other CPU from the writer.  The loop benchmark (``loop_bytes``,
:func:`models.measure.costs.loop_bytes`) times the loop itself on two CPUs, QD 8, responses of 4,
16 and 32 KiB, and ``calibrate`` now takes its costs per byte
(:func:`models.measure.hostfields.handoff_byte`, :func:`~models.measure.hostfields.recv_byte_ns`).

On the seventh machine (:data:`PROFILE`, calibrated at 00:02 UTC on 2026-12-04) the loop read a
byte at 0.063 ns, where ``recv_large`` gave 0.019, and its writer paid 0.056 ns a byte more than
one thread, where ``large_cross`` gave 0.102.  This module holds the calibration against the
machine's seeded sample of the field runs (``sweep --plan repeat --pin apart``, :data:`DATASET`,
23:51-23:57 UTC, before the calibration, nothing fitted on it) twice: as written, and with the
two one-transfer costs from its own record in place of the loop's (:func:`one_transfer`),
everything else equal.  Each as the field evaluation simulates a reader's profile
(:func:`~models.validation.fidelity.field_scenario`) and with the best rules of the sixth
machine's evaluation (:func:`models.validation.field6.softirq_scenario`, the profile's segments
sent after their CPU).  The roles, goals and tolerance are the field evaluation's
(:mod:`models.validation.fidelity`).

>>> MODELS[0], len(MODELS)
('calibrated here', 4)
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Any

from models.validation import fidelity as FID

__all__ = [
    "PREFIX",
    "DATASET",
    "PROFILE",
    "MODELS",
    "PAIRS",
    "one_transfer",
    "Machine7Evaluation",
    "evaluate",
    "band_medians",
    "measured_segment_us",
    "segment_contrast",
    "findings",
    "numbers",
    "LARGE_BYTES",
]

#: The seventh machine's sample of the field runs (``--prefix``) and its table, named in full so
#: that :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_machine7_repeat"
DATASET = "kernel6_machine7_repeat_iscsi_loop"
#: The seventh machine's calibration, its copies' costs from the loop benchmark.
PROFILE = "kernel6_machine7"
#: The models, each a profile (loop or one-transfer copies) and a scenario (the reader's or the
#: best rules').
MODELS = (
    "calibrated here",
    "calibrated here, one-transfer copies",
    "best rules",
    "best rules, one-transfer copies",
)
#: Each scenario's model with the loop's copies, then with the one-transfer copies.
PAIRS = ((MODELS[0], MODELS[1]), (MODELS[2], MODELS[3]))
#: Responses from this size up are the large ones (bytes): the copies weigh most there.
LARGE_BYTES = 16384


def one_transfer(profile: Any) -> Any:
    """``profile`` with the copies' costs per byte of the one-transfer benchmarks in its own
    record in place of the loop's: ``handoff_byte_cpu_s`` from ``large_cross``,
    ``recv_byte_cpu_s`` from ``recv_large`` (what ``calibrate`` held before the loop benchmark)."""
    m = profile.records["measured"]
    return profile.with_host(
        handoff_byte_cpu_s=m["large_cross"]["send_extra_per_byte_ns"] * 1e-9,  # ns -> s
        recv_byte_cpu_s=m["recv"]["large"]["per_byte_ns"] * 1e-9,  # ns -> s
    )


def _best(profile: Any) -> Any:
    """The best rules' profile: segments sent after their ``send()``'s CPU (the flag the sixth
    machine's refit set; :func:`models.validation.field6.softirq_scenario` needs it)."""
    return profile.with_host(send_cpu_first=True)


@dataclass(frozen=True)
class Machine7Evaluation:
    """:func:`evaluate`'s result: ``tables``, the evaluated iSCSI-loop table by model;
    ``goals``, one row per goal of the field evaluation, one column per model; ``bands``,
    :func:`band_medians` of each table; ``copies``, the two profiles' costs per byte (ns)."""

    tables: dict
    goals: Any
    bands: Any
    copies: dict


def _models() -> dict[str, tuple[Any, Any]]:
    from models.sim import hostprofile
    from models.validation import field6 as F6

    loop = hostprofile.shipped(PROFILE)
    one = one_transfer(loop)
    return {
        MODELS[0]: (loop, FID.field_scenario),
        MODELS[1]: (one, FID.field_scenario),
        MODELS[2]: (_best(loop), F6.softirq_scenario),
        MODELS[3]: (_best(one), F6.softirq_scenario),
    }


def band_medians(table: Any) -> dict[str, float]:
    """The median ratio (simulated over kernel IOPS) of the IOPS goal's rows
    (:func:`~models.validation.fidelity.iops_table`) in four bands: QD 1, QD 2-7, and QD 8 and
    more with responses under and from :data:`LARGE_BYTES`."""
    io = FID.iops_table(table)

    def med(mask: Any) -> float:
        r = list(io.loc[mask, "ratio"])
        return float(statistics.median(r)) if r else math.nan

    big = io["iosize_bytes"] >= LARGE_BYTES
    return {
        "QD 1": med(io["qd"] == 1),
        "QD 2-7": med((io["qd"] >= 2) & (io["qd"] < 8)),
        "QD >= 8, under 16 KiB": med((io["qd"] >= 8) & ~big),
        "QD >= 8, 16 KiB and more": med((io["qd"] >= 8) & big),
    }


def measured_segment_us(profile: Any) -> float:
    """The measured part of the profile's cost per segment, microseconds: what ``send()`` costs
    per loopback segment in the benchmarks (``send_model``), before the fit adds its part."""
    return float(profile.records["measured"]["send_model"]["per_segment_us"])


@functools.lru_cache(maxsize=1)
def segment_contrast(processes: int | None = None) -> dict[str, float]:
    """:func:`band_medians` of the best rules with the loop's copies (:data:`MODELS` [2]) but
    the cost per segment cut to its measured part (:func:`measured_segment_us`): how much of the
    small responses' miss the fitted part of that cost makes (simulated once per process)."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import field6 as F6

    run = load_kernel_run(prefix=PREFIX)
    loop = hostprofile.shipped(PROFILE)
    cut = _best(loop.with_host(gso_cpu_s=measured_segment_us(loop) * 1e-6))  # us -> s
    summarise = functools.partial(
        FID.row_summary, F6.softirq_scenario, "iscsi_loop", FID.ProfileHost(cut), run.hz
    )
    n = FID.workers() if processes is None else processes
    return band_medians(FID.simulated(run.table("iscsi_loop"), summarise, processes=n))


def _copies(profile: Any) -> dict[str, float]:
    h = profile.host
    return {
        "send, one thread": h["send_byte_cpu_s"] * 1e9,  # s -> ns
        "send, more on two CPUs": h["handoff_byte_cpu_s"] * 1e9,
        "read": h["recv_byte_cpu_s"] * 1e9,
    }


@functools.lru_cache(maxsize=1)
def evaluate(processes: int | None = None) -> Machine7Evaluation:
    """Every model of :data:`MODELS` held to every run of :data:`DATASET` (simulated once per
    process)."""
    import pandas as pd

    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=PREFIX)
    table = run.table("iscsi_loop")
    n = FID.workers() if processes is None else processes
    tables, goals, copies = {}, {}, {}
    for name, (profile, make) in _models().items():
        summarise = functools.partial(
            FID.row_summary, make, "iscsi_loop", FID.ProfileHost(profile), run.hz
        )
        tables[name] = FID.simulated(table, summarise, processes=n)
        goals[name] = {g.name: g.value for g in FID.goals(tables[name])}
        copies[name] = _copies(profile)
    bands = pd.DataFrame({k: band_medians(t) for k, t in tables.items()})[list(MODELS)]
    return Machine7Evaluation(tables, pd.DataFrame(goals)[list(MODELS)], bands, copies)


def _off(x: float) -> float:
    """How far a median ratio is from 1, as a factor's logarithm."""
    return abs(math.log(x))


def _within(table: Any) -> float:
    return float(FID.iops_table(table)["within"].mean())


def _verdicts(table: Any) -> int:
    test = table[table["role"] == "test"]
    return int((test["kernel_stalls"] == test["sim_stalls"]).sum())


def findings(ev: Machine7Evaluation, cut: dict[str, float] | None = None) -> dict[str, bool]:
    """The claims the chapter makes, each checked on ``ev`` (each fails on a wrong world: the
    copies' costs swapped between the profiles, or the large responses' rows left as they were).

    * ``loop reads dearer``: the loop's read costs more per byte than the one-transfer read;
    * ``large rows closer``: for each scenario, the large responses' median ratio at QD 8 and
      more is nearer 1 with the loop's copies than with the one-transfer copies;
    * ``small rows unmoved``: for each scenario, the small responses' median ratio at QD 8 and
      more moves by under 0.05 (the copies do not account for them);
    * ``verdicts kept``: for each scenario, the loop's copies get at least as many stall
      verdicts right;
    * ``segments slow the small rows`` (with ``cut``, :func:`segment_contrast`): the best rules'
      small responses at QD 8 and more are under 0.8 of the kernel's rate as fitted and inside
      the goal's 0.8-1.25 with the cost per segment cut to its measured part.
    """
    large, small = "QD >= 8, 16 KiB and more", "QD >= 8, under 16 KiB"
    b = ev.bands
    pairs = [(ev.tables[a], ev.tables[o], a, o) for a, o in PAIRS]
    lo, hi = FID.RATIO_RANGE
    out = {
        "loop reads dearer": ev.copies[MODELS[0]]["read"] > ev.copies[MODELS[1]]["read"],
        "large rows closer": all(_off(b[a][large]) < _off(b[o][large]) for _, _, a, o in pairs),
        "small rows unmoved": all(abs(b[a][small] - b[o][small]) < 0.05 for _, _, a, o in pairs),
        "verdicts kept": all(_verdicts(ta) >= _verdicts(to) for ta, to, _, _ in pairs),
    }
    if cut is not None:
        out["segments slow the small rows"] = b[MODELS[2]][small] < lo <= cut[small] <= hi
    return out


def numbers(ev: Machine7Evaluation, cut: dict[str, float] | None = None) -> dict[str, Any]:
    """The numbers the chapter quotes, by name (with ``cut``, :func:`segment_contrast`'s too)."""
    large, small = "QD >= 8, 16 KiB and more", "QD >= 8, under 16 KiB"
    b = ev.bands
    from models.sim import hostprofile
    from models.validation import field6 as F6

    here, sixth = hostprofile.shipped(PROFILE), hostprofile.shipped(F6.PROFILE)
    out: dict[str, Any] = {
        "m7_gso_us": here.host["gso_cpu_s"] * 1e6,  # s -> us
        "m7_loss": here.records["fit"]["loss"],
        "m7_loss_ratio": here.records["fit"]["loss"] / sixth.records["fit"]["loss"],
        "m7_rows": len(ev.tables[MODELS[0]]),
        "m7_iops_rows": len(FID.iops_table(ev.tables[MODELS[0]])),
        "m7_read_loop": ev.copies[MODELS[0]]["read"],
        "m7_read_one": ev.copies[MODELS[1]]["read"],
        "m7_read_ratio": ev.copies[MODELS[0]]["read"] / ev.copies[MODELS[1]]["read"],
        "m7_send_loop": ev.copies[MODELS[0]]["send, more on two CPUs"],
        "m7_send_one": ev.copies[MODELS[1]]["send, more on two CPUs"],
    }
    for key, (a, o) in zip(("reader", "best"), PAIRS):
        out[f"m7_{key}_large_loop"] = b[a][large]
        out[f"m7_{key}_large_one"] = b[o][large]
        out[f"m7_{key}_small_loop"] = b[a][small]
        out[f"m7_{key}_small_one"] = b[o][small]
        out[f"m7_{key}_within_loop"] = 100 * _within(ev.tables[a])
        out[f"m7_{key}_within_one"] = 100 * _within(ev.tables[o])
    out["m7_segment_measured_us"] = measured_segment_us(here)
    if cut is not None:
        out["m7_cut_small"] = cut[small]
        out["m7_cut_large"] = cut[large]
    return out

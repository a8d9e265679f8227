"""The copies as the loop pays them, held to a seventh machine's sample of the field runs.

Every profile before this one charged the copies of a response what ``python -m models.measure
costs`` measured one transfer at a time: a 64 KiB ``send()`` in one thread, then with its reader
spinning on the other CPU (``large_cross``), and a 64 KiB read from a cache that holds it
(``recv_large``).  In the request/response loop eight responses are in flight and the reader
runs on the other CPU from the writer.  The loop benchmark (``loop_bytes``,
:func:`models.measure.costs.loop_bytes`) times the loop itself on two CPUs, QD 8, responses of 4,
16 and 32 KiB, and ``calibrate`` now takes its costs per byte
(:func:`models.measure.hostfields.handoff_byte`, :func:`~models.measure.hostfields.recv_byte_ns`).

On the seventh machine (:data:`PROFILE`, ``calibrate --tries 3``, the kept try started at 00:37 UTC
on 2026-12-04) the loop read a byte at 0.065 ns, where ``recv_large`` gave 0.018, and its writer
paid 0.042 ns a byte more than one thread, where ``large_cross`` gave 0.107: dearer to read,
cheaper to write.  This module holds the calibration against the machine's seeded sample of the
field runs (``sweep --plan repeat --pin apart``, :data:`DATASET`, 23:51-23:57 UTC, before the
calibration, nothing fitted on it) twice: as written, and with the two one-transfer costs from
its own record in place of the loop's (:func:`one_transfer`), everything else equal.  Each as the
field evaluation simulates a reader's profile
(:func:`~models.validation.fidelity.field_scenario`) and with the best rules of the sixth
machine's evaluation (:func:`models.validation.field6.softirq_scenario`, the profile's segments
sent after their CPU).  The roles, goals and tolerance are the field evaluation's
(:mod:`models.validation.fidelity`).

>>> MODELS[0], len(MODELS)
('calibrated here', 4)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from models.validation import fidelity as FID
from models.validation.bands import (
    HELD,
    LARGE_BAND,
    LARGE_BYTES,
    SMALL_BAND,
    UNHELD,
    band_medians,
    held_medians,
    off,
    qd8,
    verdicts,
    within,
)

__all__ = [
    "PREFIX",
    "DATASET",
    "PROFILE",
    "ONE_TRY",
    "MODELS",
    "PAIRS",
    "one_transfer",
    "sample_row",
    "Machine7Evaluation",
    "evaluate",
    "band_medians",
    "HELD",
    "UNHELD",
    "held_medians",
    "findings",
    "numbers",
    "LARGE_BYTES",
    "SMALL_BAND",
    "LARGE_BAND",
    "REPEAT_DATASET",
    "REPEAT",
    "WAIT",
    "waits",
    "waits_once",
    "ONCE_FLAGS",
    "traced_row_arms",
    "loopback_row",
    "sixth_goals",
    "sixth_with_wait",
    "sixth_findings",
    "sixth_numbers",
    "REPEAT_BAND_TOL",
    "repeat_table",
    "best_misses",
]

#: The seventh machine's sample of the field runs (``--prefix``) and its table, named in full so
#: that :mod:`models.validation.coverage` finds the reader.
PREFIX = "kernel6_machine7_repeat"
DATASET = "kernel6_machine7_repeat_iscsi_loop"
#: The same sample measured again on the same machine three hours after the calibration (``sweep
#: --plan repeat --pin apart --prefix kernel6_machine7_repeat2``, 2026-12-04 03:47-03:53 UTC,
#: nothing else running): the kernel held to itself.
REPEAT_DATASET = "kernel6_machine7_repeat2_iscsi_loop"
#: The column of :attr:`Machine7Evaluation.bands` and ``goals`` that holds that second draw.
REPEAT = "the kernel again"
#: How near 1 the second draw's median ratio must be in every band for the chapter's "within a
#: few percent" (set after the draw was seen: its farthest band is 0.97).
REPEAT_BAND_TOL = 0.05
#: The seventh machine's calibration, its copies' costs from the loop benchmark.
PROFILE = "kernel6_machine7"
#: A single try of the same calibration, made before it (a draw, kept to show the spread).
ONE_TRY = "kernel6_machine7_one_try"
#: The models, each a profile (loop or one-transfer copies) and a scenario (the reader's or the
#: best rules').
MODELS = (
    "calibrated here",
    "calibrated here, one-transfer copies",
    "best rules",
    "best rules, one-transfer copies",
)
#: The best rules with a ``send()`` that arms bbr's pacing timer held in the call until the timer
#: fires (``Host.pacing_arm_waits``, as traced on this machine: :mod:`models.validation.pacing_wait`).
WAIT = "best rules, the call waits"
#: Each scenario's model with the loop's copies, then with the one-transfer copies.
PAIRS = ((MODELS[0], MODELS[1]), (MODELS[2], MODELS[3]))


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


def waits(profile: Any) -> Any:
    """The best rules' profile with a ``send()`` that arms bbr's pacing timer held until it fires
    (``Host.pacing_arm_waits``): the profile of :data:`WAIT`, on any machine's calibration."""
    return _best(profile).with_host(pacing_arm_waits=True)


#: The two flags the eighth machine's traced calls gave (:mod:`models.validation.heldcall`).
ONCE_FLAGS = {"pacing_interrupt_once": True, "soft_waker": True}


def waits_once(profile: Any) -> Any:
    """:func:`waits` with the held call's interrupt after its arming and counted once
    (``Host.pacing_interrupt_once``), and a segment released outside a ``send()`` paying for the
    peer's wake-up too (``Host.soft_waker``): the rules the eighth machine's traced calls gave
    (:mod:`models.validation.heldcall`), on any machine's calibration."""
    return waits(profile).with_host(**ONCE_FLAGS)


@dataclass(frozen=True)
class Machine7Evaluation:
    """:func:`evaluate`'s result: ``tables``, the evaluated iSCSI-loop table by model;
    ``goals``, one row per goal of the field evaluation, one column per model and one for the
    kernel's second draw (:data:`REPEAT`); ``bands``, :func:`band_medians` of each table and of
    that draw; ``copies``, the two profiles' costs per byte (ns);
    ``repeat``, the kernel's second draw held to its first (:func:`repeat_table`)."""

    tables: dict
    goals: Any
    bands: Any
    copies: dict
    repeat: Any


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
        WAIT: (waits(loop), F6.softirq_scenario),
    }


def repeat_table() -> Any:
    """The kernel held to itself: the second draw (:data:`REPEAT_DATASET`) where a model stands,
    beside the first (:data:`DATASET`), with the first draw's roles
    (:func:`models.validation.draws.repeat_table`; an audit, no model in it)."""
    from models import data
    from models.kernel import load_kernel_run
    from models.validation import draws as DR

    first = load_kernel_run(prefix=PREFIX).table("iscsi_loop")
    return DR.repeat_table(first, data.load(REPEAT_DATASET))


def best_misses(ev: Machine7Evaluation) -> tuple[int, int]:
    """How many of the IOPS goal's rows the best rules miss (outside the tolerance), and how many
    of those the kernel's second draw puts within the tolerance of its first: misses that are
    the model's, not the kernel's spread."""
    from models.validation import draws as DR

    key = DR.ROW_KEY
    best = FID.iops_table(ev.tables[PAIRS[1][0]])[key + ["within"]]
    again = FID.iops_table(ev.repeat)[key + ["within"]]
    both = best.merge(again, on=key, how="inner", validate="one_to_one", suffixes=("", "_again"))
    missed = both[~both["within"]]
    return len(missed), int(missed["within_again"].sum())


def sample_row(
    link: str, mode: str, client: str, qd: int, size: int, prefix: str = PREFIX
) -> tuple[dict, int]:
    """The bbr run of that scenario in the kernel sweep ``prefix`` (this machine's sample unless
    given), and the sweep's timer rate (ticks per second)."""
    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=prefix)
    t = run.table("iscsi_loop")
    pick = (t["link"] == link) & (t["cc"] == "bbr") & (t["qd"] == qd)
    pick &= (t["sock_mode"] == mode) & (t["client_sock_mode"] == client)
    rows = t[pick & (t["iosize_bytes"] == size)]
    if rows.empty:
        raise ValueError(
            f"{prefix} has no bbr run of {link}, server {mode}, client {client}, QD {qd}, "
            f"{size} bytes"
        )
    return rows.iloc[0].to_dict(), run.hz


def _simulated(name: str, row: dict, hz: int, ops: int) -> tuple[Any, Any]:
    """``row`` simulated with the model ``name`` of :func:`_models`: (the result, its server's
    congestion rule)."""
    from models.sim.engine import Simulation

    profile, make = _models()[name]
    sc = make("iscsi_loop", row, FID.ProfileHost(profile), hz).replace(run={"ops": ops})
    sim = Simulation(sc)
    return sim.run(), sim.server_ep.sender.cc


def traced_row_arms(ops: int = 3000) -> dict[str, float]:
    """bbr's pacing timers armed per operation on the server, in the run of the sample that
    :mod:`models.validation.pacing_wait` traced (veth-1500, bbr, a Nagle server and client, 16
    KiB, QD 8), for the best rules and for :data:`WAIT` (``ops`` operations each)."""
    row, hz = sample_row("veth-1500", "nagle", "nagle", 8, LARGE_BYTES)
    out = {}
    for name in (PAIRS[1][0], WAIT):
        r, cc = _simulated(name, row, hz, ops)
        out[name] = cc.timer_arms / r.completed_total
    return out


def sixth_goals(processes: int | None = None, once: bool = False) -> tuple:
    """The sixth machine's whole field sweep (:data:`models.validation.field6.DATASET`, its Flory
    steps too) held to that machine's best rules with ``Host.pacing_arm_waits`` on, everything
    else as :func:`models.validation.field6.evaluate` simulates them: the field evaluation's
    goals, Flory's last (a test: nothing of the rule was found or fitted there); with ``once``,
    the held call's interrupt counted once and the released segments paying for the wake-up
    (:func:`waits_once`'s flags).

    Cached once per process: ``processes`` says how many simulate it, not what, so every
    caller shares one run."""
    return _sixth_goals(FID.workers() if processes is None else processes, once)


@functools.lru_cache(maxsize=2)
def _sixth_goals(processes: int, once: bool) -> tuple:
    """The cached run behind :func:`sixth_goals`."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import field6 as F6
    from models.validation import flory as FL

    run = load_kernel_run(prefix=F6.PREFIX)
    flags = ONCE_FLAGS if once else {}
    profile = hostprofile.shipped(F6.PROFILE_WAKER).with_host(pacing_arm_waits=True, **flags)
    _, _, lists = FL.models_on_sweep(run, {WAIT: (profile, F6.softirq_scenario)}, processes)
    return tuple(lists[WAIT])


def sixth_with_wait(processes: int | None = None) -> Any:
    """:func:`sixth_goals` as one value per goal (a pandas Series named :data:`WAIT`: the same
    rules on the sixth machine; its sweep ran days before the rule was found)."""
    import pandas as pd

    return pd.Series({g.name: g.value for g in sixth_goals(processes)}, name=WAIT)


def _share(text: str) -> float:
    """A goal's share as the goals print it ("55%"), in percent."""
    return float(text.rstrip("%"))


def _count(text: str) -> int:
    """A goal's count as the goals print it ("3 of 4"): the first number."""
    return int(text.split()[0])


def sixth_findings(best: Any, wait: Any) -> dict[str, bool]:
    """What the chapter says of the wait on the sixth machine, ``best`` and ``wait`` the goal
    values of its best rules without and with it (each fails on a wrong world in
    ``tests/test_machine7.py``):

    * ``more rates right``: the share within the tolerance is higher with the wait;
    * ``QD 8 nearer``: the median ratio at QD 8 and more is nearer 1;
    * ``no Flory step lost``: at least as many of Flory's steps come right.
    """
    share = f"IOPS within {FID.IOPS_TOL:.0%}"
    q8, flory = "median ratio, QD >= 8", "Flory's thresholds"
    return {
        "more rates right": _share(wait[share]) > _share(best[share]),
        "QD 8 nearer": off(float(wait[q8])) < off(float(best[q8])),
        "no Flory step lost": _count(wait[flory]) >= _count(best[flory]),
    }


def sixth_numbers(best: Any, wait: Any) -> dict[str, float]:
    """The numbers the chapter quotes of the sixth machine, without and with the wait."""
    share = f"IOPS within {FID.IOPS_TOL:.0%}"
    out = {}
    for key, goals in (("best", best), ("wait", wait)):
        out[f"m6_{key}_within"] = _share(goals[share])
        out[f"m6_{key}_qd8"] = float(goals["median ratio, QD >= 8"])
        out[f"m6_{key}_flory"] = _count(goals["Flory's thresholds"])
        out[f"m6_{key}_verdicts"] = _count(goals["stall verdicts"])
    out["m6_verdict_rows"] = int(str(best["stall verdicts"]).split()[-1])
    return out


def loopback_row(ops: int = 3000) -> dict[str, Any]:
    """The sample's run of the loopback scenario :mod:`models.validation.pacing_wait` traced
    (bbr, ``TCP_NODELAY`` on both ends, 64 KiB, QD 32) with :data:`WAIT`: the kernel's and the
    simulated rate, bbr's state at the end and the timers armed per operation."""
    row, hz = sample_row("loopback", "nodelay", "nodelay", 32, 65536)
    r, cc = _simulated(WAIT, row, hz, ops)
    return {
        "kernel_iops": float(row["iops"]),
        "sim_iops": r.iops,
        "mode": cc.model.mode,
        "arms_per_op": cc.timer_arms / r.completed_total,
    }


def _copies(profile: Any) -> dict[str, float]:
    h = profile.host
    return {
        "send, one thread": h["send_byte_cpu_s"] * 1e9,  # s -> ns
        "send, more on two CPUs": h["handoff_byte_cpu_s"] * 1e9,
        "read": h["recv_byte_cpu_s"] * 1e9,
    }


def evaluate(processes: int | None = None) -> Machine7Evaluation:
    """Every model of :data:`MODELS` held to every run of :data:`DATASET` (simulated once per
    process).

    Cached once per process: ``processes`` says how many simulate it, not what, so every
    caller shares one run."""
    return _evaluate(FID.workers() if processes is None else processes)


@functools.lru_cache(maxsize=1)
def _evaluate(processes: int) -> Machine7Evaluation:
    """The cached run behind :func:`evaluate`."""
    import pandas as pd

    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=PREFIX)
    table = run.table("iscsi_loop")
    tables, goals, copies = {}, {}, {}
    for name, (profile, make) in _models().items():
        summarise = functools.partial(
            FID.row_summary, make, "iscsi_loop", FID.ProfileHost(profile), run.hz
        )
        tables[name] = FID.simulated(table, summarise, processes=processes)
        goals[name] = {g.name: g.value for g in FID.goals(tables[name])}
        copies[name] = _copies(profile)
    again = repeat_table()
    tables_and_again = {**tables, REPEAT: again}
    goals[REPEAT] = {g.name: g.value for g in FID.goals(again)}
    columns = [*MODELS, WAIT, REPEAT]
    bands = pd.DataFrame({k: band_medians(t) for k, t in tables_and_again.items()})[columns]
    return Machine7Evaluation(tables, pd.DataFrame(goals)[columns], bands, copies, again)


def findings(ev: Machine7Evaluation) -> dict[str, bool]:
    """The claims the chapter makes, each checked on ``ev`` (each fails on a wrong world: the
    copies' costs swapped between the profiles, a large-response band brought to the kernel's
    rate, a verdict lost).

    * ``loop reads dearer`` (an audit: the kernel measured against itself, no model): the
      loop's read costs more per byte than the one-transfer read;
    * ``loop writes cheaper`` (an audit): the loop's writer pays less per byte over one thread
      than ``large_cross`` found;
    * ``best rules nearer``: with the best rules, the large responses' median ratio at QD 8 and
      more is nearer 1 with the loop's copies than with the one-transfer copies;
    * ``reader's farther``: with the reader's profile it is farther (its writer binds, and the
      loop made the writer cheaper);
    * ``large rows still fast``: every model of :data:`MODELS` runs the large responses at QD 8
      and more above the goal's range (the copies do not close that miss);
    * ``verdicts kept``: for each scenario, the loop's copies get at least as many stall
      verdicts right;
    * ``held tails carry it``: with the best rules and the loop's copies, the 16 KiB rows at QD
      8 and more of the servers that may hold a tail back run above the goal's range and those
      of the servers that do not run inside it (:func:`held_medians`);
    * ``kernel repeats itself`` (an audit): the kernel's second draw (:func:`repeat_table`) is
      within the tolerance of its first in at least the goal's share of the rows, gives every
      test row's stall verdict, and its median ratio in each band is within
      :data:`REPEAT_BAND_TOL` of 1, so the goals are within the kernel's own reach here;
    * ``misses are the model's``: more than half of the best rules' misses are rows the kernel
      repeats within the tolerance (:func:`best_misses`);
    * ``the wait closes the large rows``: with the call waiting for the pacing timer
      (:data:`WAIT`) the large responses' median ratio at QD 8 and more, and the median of all
      rows at QD 8 and more, are inside the goal's range;
    * ``held tails come nearer``: with the wait, the 16 KiB rows at QD 8 and more of the servers
      that may hold a tail back come nearer the kernel, and those of the two that do not stay
      where they were (within a percent);
    * ``the wait keeps the rest``: with the wait no stall verdict is lost and the share within
      the tolerance is not lower than the best rules'.
    """
    large = LARGE_BAND
    b = ev.bands
    (reader, reader_one), (best, best_one) = PAIRS
    loop, one = ev.copies[MODELS[0]], ev.copies[MODELS[1]]
    lo, hi = FID.RATIO_RANGE
    held = held_medians(ev.tables[best])
    waited = held_medians(ev.tables[WAIT])
    return {
        "loop reads dearer": loop["read"] > one["read"],
        "loop writes cheaper": loop["send, more on two CPUs"] < one["send, more on two CPUs"],
        "best rules nearer": off(b[best][large]) < off(b[best_one][large]),
        "reader's farther": off(b[reader][large]) > off(b[reader_one][large]),
        "large rows still fast": all(b[m][large] > hi for m in MODELS),
        "verdicts kept": all(verdicts(ev.tables[a]) >= verdicts(ev.tables[o]) for a, o in PAIRS),
        "held tails carry it": held["held"] > hi and lo <= held["unheld"] <= hi,
        "kernel repeats itself": within(ev.repeat) >= FID.IOPS_SHARE
        and verdicts(ev.repeat) == int((ev.repeat["role"] == "test").sum())
        and all(abs(m - 1) <= REPEAT_BAND_TOL for m in b[REPEAT]),
        "misses are the model's": 2 * best_misses(ev)[1] > best_misses(ev)[0],
        "the wait closes the large rows": lo <= b[WAIT][large] <= hi
        and lo <= qd8(ev.tables[WAIT]) <= hi,
        "held tails come nearer": off(waited["held"]) < off(held["held"])
        and abs(waited["unheld"] / held["unheld"] - 1) <= 0.01,
        "the wait keeps the rest": verdicts(ev.tables[WAIT]) >= verdicts(ev.tables[best])
        and within(ev.tables[WAIT]) >= within(ev.tables[best]),
    }


def numbers(ev: Machine7Evaluation) -> dict[str, Any]:
    """The numbers the chapter quotes, by name."""
    from models.sim import hostprofile
    from models.validation import field6 as F6

    b = ev.bands
    here, sixth = hostprofile.shipped(PROFILE), hostprofile.shipped(F6.PROFILE)
    single = hostprofile.shipped(ONE_TRY)
    out: dict[str, Any] = {
        "m7_loss": here.records["fit"]["loss"],
        "m7_loss_sixth": sixth.records["fit"]["loss"],
        "m7_one_try_loss": single.records["fit"]["loss"],
        "m7_one_try_gso_us": single.host["gso_cpu_s"] * 1e6,  # s -> us
        "m7_gso_measured_us": single.records["measured"]["send_model"]["per_segment_us"],
        "m7_rows": len(ev.tables[MODELS[0]]),
        "m7_iops_rows": len(FID.iops_table(ev.tables[MODELS[0]])),
        "m7_read_loop": ev.copies[MODELS[0]]["read"],
        "m7_read_one": ev.copies[MODELS[1]]["read"],
        "m7_read_ratio": ev.copies[MODELS[0]]["read"] / ev.copies[MODELS[1]]["read"],
        "m7_send_loop": ev.copies[MODELS[0]]["send, more on two CPUs"],
        "m7_send_one": ev.copies[MODELS[1]]["send, more on two CPUs"],
    }
    for key, (a, o) in zip(("reader", "best"), PAIRS):
        out[f"m7_{key}_large_loop"] = b[a][LARGE_BAND]
        out[f"m7_{key}_large_one"] = b[o][LARGE_BAND]
        out[f"m7_{key}_within_loop"] = 100 * within(ev.tables[a])
        out[f"m7_{key}_within_one"] = 100 * within(ev.tables[o])
    held = held_medians(ev.tables[PAIRS[1][0]])
    out["m7_best_held16"], out["m7_best_unheld16"] = held["held"], held["unheld"]
    again = ev.repeat
    out["m7_repeat_rows"] = len(FID.iops_table(again))
    out["m7_repeat_within"] = 100 * within(again)
    out["m7_repeat_band_tol_pct"] = 100 * REPEAT_BAND_TOL
    out["m7_repeat_verdicts"] = verdicts(again)
    out["m7_repeat_verdict_rows"] = int((again["role"] == "test").sum())
    out["m7_best_missed"], out["m7_best_missed_repeated"] = best_misses(ev)
    wait = ev.tables[WAIT]
    out["m7_wait_large"] = b[WAIT][LARGE_BAND]
    out["m7_wait_small"] = b[WAIT][SMALL_BAND]
    out["m7_wait_qd8"] = qd8(wait)
    out["m7_best_qd8"] = qd8(ev.tables[PAIRS[1][0]])
    out["m7_wait_within"] = 100 * within(wait)
    out["m7_wait_verdicts"] = verdicts(wait)
    waited = held_medians(wait)
    out["m7_wait_held16"], out["m7_wait_unheld16"] = waited["held"], waited["unheld"]
    return out

"""The seventh machine's models held to an eighth machine: does a host model transfer?

The eighth machine is a fresh instance of the same kind as the seventh (2 vCPUs under KVM,
``haltpoll``, HZ 250, bbr; kernel build ``6.18.44-fc-v1147`` against ``v1045``), booted three
minutes before its sample of the field runs was measured (``sweep --plan repeat --pin apart``,
:data:`DATASET`, the same 240 seeded runs as the seventh machine's).  Nothing was fitted on it.
Four models stand against it:

* the seventh machine's calibration (:data:`models.validation.machine7.PROFILE`) with the
  reader's scenario, and the seventh machine's best rules with the call waiting for bbr's pacing
  timer (:data:`models.validation.machine7.WAIT`), each exactly as chapter 9d left them: the
  transfer test;
* the same two with this machine's own calibration (:data:`PROFILE`, ``calibrate --tries 3``
  after the sample): what calibrating here buys.

Beside them, as audits, the seventh machine's kernel where a model stands
(:data:`KERNEL7`: its first draw of the same runs, :func:`models.validation.draws.repeat_table`):
how far two machines of one kind differ, the transfer's floor; and this machine's kernel again
(:data:`REPEAT`: the same runs measured a second time two hours later, when nothing else ran).
The roles, goals and tolerance are the field evaluation's (:mod:`models.validation.fidelity`).

>>> MODELS[1], len(MODELS)
("the seventh's best rules, the call waits", 4)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from models.validation import bands as B
from models.validation import fidelity as FID

__all__ = [
    "PREFIX",
    "DATASET",
    "PROFILE",
    "WAIT_DATASET",
    "PROBE",
    "MODELS",
    "TRANSFER",
    "HERE",
    "KERNEL7",
    "REPEAT_DATASET",
    "REPEAT",
    "AUDITS",
    "Machine8Evaluation",
    "evaluate",
    "kernel7_table",
    "bbr_split",
    "findings",
    "probe_simulation",
    "probe_run",
    "startup_probe",
    "wait_trace",
    "wait_findings",
    "numbers",
]

#: The eighth machine's sample of the field runs (``--prefix``) and its table.
PREFIX = "kernel6_machine8_repeat"
DATASET = "kernel6_machine8_repeat_iscsi_loop"
#: The eighth machine's calibration (``calibrate --tries 3``, made after the sample).
PROFILE = "kernel6_machine8"
#: The seventh machine's pacing-wait trace run again here (``tools/pacing_wait_trace.py``).
WAIT_DATASET = "kernel6_machine8_pacing_wait"
#: The models: the seventh machine's two (the transfer), then the same two calibrated here.
MODELS = (
    "the seventh's calibration",
    "the seventh's best rules, the call waits",
    "calibrated here",
    "best rules here, the call waits",
)
#: The models that carry nothing of this machine, and those calibrated on it.
TRANSFER, HERE = MODELS[:2], MODELS[2:]
#: The column that holds the seventh machine's kernel in a model's place (an audit).
KERNEL7 = "the seventh's kernel"
#: The same 240 runs measured again on this machine (``sweep --plan repeat --pin apart --prefix
#: kernel6_machine8_repeat2``, 2026-12-04 08:50-08:56 UTC, nothing else running) and the column
#: that holds it (an audit: the kernel held to itself).
REPEAT_DATASET = "kernel6_machine8_repeat2_iscsi_loop"
REPEAT = "the kernel again"
#: The audits' columns, after the models'.
AUDITS = (KERNEL7, REPEAT)


@dataclass(frozen=True)
class Machine8Evaluation:
    """:func:`evaluate`'s result: ``tables``, the evaluated iSCSI-loop table by model and for
    :data:`KERNEL7`; ``goals``, one row per goal of the field evaluation, one column for each;
    ``bands``, :func:`models.validation.bands.band_medians` of each (the models', then the
    audits' :data:`AUDITS`)."""

    tables: dict
    goals: Any
    bands: Any


def _models() -> dict[str, tuple[Any, Any]]:
    from models.sim import hostprofile
    from models.validation import field6 as F6
    from models.validation import machine7 as M7

    seventh, here = hostprofile.shipped(M7.PROFILE), hostprofile.shipped(PROFILE)
    return {
        MODELS[0]: (seventh, FID.field_scenario),
        MODELS[1]: (M7.waits(seventh), F6.softirq_scenario),
        MODELS[2]: (here, FID.field_scenario),
        MODELS[3]: (M7.waits(here), F6.softirq_scenario),
    }


def kernel7_table(dataset: str | None = None) -> Any:
    """The seventh machine's first draw of the same runs where a model stands, beside this
    machine's (an audit: no model in it); with ``dataset``, that draw instead
    (:data:`REPEAT_DATASET`: this machine's kernel again)."""
    from models import data
    from models.kernel import load_kernel_run
    from models.validation import draws as DR
    from models.validation import machine7 as M7

    here = load_kernel_run(prefix=PREFIX).table("iscsi_loop")
    return DR.repeat_table(here, data.load(dataset or M7.DATASET))


def evaluate(processes: int | None = None) -> Machine8Evaluation:
    """Every model of :data:`MODELS` held to every run of :data:`DATASET` (simulated once per
    process), and the two kernel draws of :data:`AUDITS` beside them.

    Cached once per process: ``processes`` says how many simulate it, not what, so every
    caller shares one run."""
    return _evaluate(FID.workers() if processes is None else processes)


@functools.lru_cache(maxsize=1)
def _evaluate(processes: int) -> Machine8Evaluation:
    """The cached run behind :func:`evaluate`."""
    import pandas as pd

    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=PREFIX)
    table = run.table("iscsi_loop")
    tables = {}
    for name, (profile, make) in _models().items():
        summarise = functools.partial(
            FID.row_summary, make, "iscsi_loop", FID.ProfileHost(profile), run.hz
        )
        tables[name] = FID.simulated(table, summarise, processes=processes)
    tables[KERNEL7] = kernel7_table()
    tables[REPEAT] = kernel7_table(REPEAT_DATASET)
    goals = {k: {g.name: g.value for g in FID.goals(t)} for k, t in tables.items()}
    columns = [*MODELS, *AUDITS]
    bands = pd.DataFrame({k: B.band_medians(t) for k, t in tables.items()})[columns]
    return Machine8Evaluation(tables, pd.DataFrame(goals)[columns], bands)


def bbr_split(table: Any) -> tuple[float, float]:
    """The share of the IOPS goal's rows within the tolerance under bbr, and under the others."""
    io = FID.iops_table(table)
    bbr = io["cc"] == "bbr"
    return float(io.loc[bbr, "within"].mean()), float(io.loc[~bbr, "within"].mean())


def _repeats(table: Any) -> bool:
    """Whether a kernel draw in a model's place meets the goal's share within the tolerance and
    gives every test row's stall verdict."""
    test = int((table["role"] == "test").sum())
    return B.within(table) >= FID.IOPS_SHARE and B.verdicts(table) == test


def findings(ev: Machine8Evaluation) -> dict[str, bool]:
    """What the chapter says of the transfer, each checked on ``ev`` (each fails on a wrong
    world in ``tests/test_machine8.py``):

    * ``one kind of machine`` (an audit: kernel runs against kernel runs): the seventh machine's
      kernel, standing for a model of this one, is within the tolerance in at least the goal's
      share of the rows and gives every test row's stall verdict;
    * ``the kernel repeats itself`` (an audit): so does this machine's second draw;
    * ``the wait carries over``: the seventh machine's best rules with the wait, unchanged, put
      the median ratio at QD 1 and at QD 8 and more inside the goal's range here too;
    * ``rules beat the recipe``: with either machine's profile, the best rules with the wait put
      a larger share within the tolerance than the reader's recipe;
    * ``short of the goal``: no model reaches the goal's share, so (by the first claim) the
      misses are the models', not the machines' spread;
    * ``bbr holds the misses``: the seventh's best rules with the wait meet the goal's share on
      the rows not under bbr and miss it on those under bbr.
    """
    lo, hi = FID.RATIO_RANGE
    t = ev.tables
    kernel7, again = t[KERNEL7], t[REPEAT]
    moved = t[TRANSFER[1]]
    io = FID.iops_table(moved)
    q1 = B.median_ratio(io, io["qd"] == 1)
    under_bbr, others = bbr_split(moved)
    return {
        "one kind of machine": _repeats(kernel7),
        "the kernel repeats itself": _repeats(again),
        "the wait carries over": lo <= q1 <= hi and lo <= B.qd8(moved) <= hi,
        "rules beat the recipe": all(
            B.within(t[best]) > B.within(t[recipe]) for recipe, best in (TRANSFER, HERE)
        ),
        "short of the goal": all(B.within(t[m]) < FID.IOPS_SHARE for m in MODELS),
        "bbr holds the misses": others >= FID.IOPS_SHARE > under_bbr,
    }


#: The run :func:`startup_probe` simulates: veth at MTU 1500, bbr, a ``TCP_NODELAY`` server and
#: a Nagle client, QD 32, 16 KiB responses (link, server, client, QD, bytes).
PROBE = ("veth-1500", "nodelay", "nagle", 32, 16384)


def probe_simulation(ops: int = 40_000, qd: int | None = None) -> tuple[Any, dict]:
    """The sample's run :data:`PROBE` (at queue depth ``qd`` instead of its own when given) as a
    simulation with the seventh's best rules and the wait, ``ops`` operations from the
    connection's start (no warm-up: the evaluation's span is a few milliseconds, this one can be
    hundreds), not yet run; and the sample's row (the kernel's run at the probe's own depth)."""
    from models.sim.engine import Simulation
    from models.validation import machine7 as M7

    if not 1 <= ops <= 1_000_000:
        raise ValueError(f"ops must be 1..1000000, got {ops!r}")
    if qd is not None and not 1 <= qd <= 64:
        raise ValueError(f"qd must be 1..64, got {qd!r}")
    link, server, client, depth, size = PROBE
    row, hz = M7.sample_row(link, server, client, depth, size, prefix=PREFIX)
    profile, make = _models()[TRANSFER[1]]
    sc = make("iscsi_loop", {**row, "qd": qd or depth}, FID.ProfileHost(profile), hz)
    return Simulation(sc.replace(run={"ops": ops, "warmup_ops": 0})), row


def probe_run(ops: int = 40_000, qd: int | None = None) -> dict[str, Any]:
    """:func:`probe_simulation` run (once per process for each length and depth): the kernel's
    rate at the probe's own depth and the simulated one (operations/s), the simulated span (s),
    the server's bbr mode at the end, its pacing timers per operation, its bandwidth estimate
    (GB/s), its window and the most packets it had in flight (packets); ``client_acks``, the
    client's pure ACKs by the rule that sent each
    (:func:`models.validation.ackcontext.count_pure_acks`)."""
    return _probe_run(ops, PROBE[3] if qd is None else qd)


@functools.lru_cache(maxsize=4)
def _probe_run(ops: int, qd: int) -> dict[str, Any]:
    from models.sim.rules.bbr_model import BW_SCALE
    from models.validation import ackcontext as AC

    sim, row = probe_simulation(ops, qd)
    acks = AC.count_pure_acks(sim)
    r = sim.run()
    cc = sim.server_ep.sender.cc
    # packets/us << BW_SCALE -> bytes/us -> GB/s
    gbs = cc.model.max_bw() / (1 << BW_SCALE) * cc.mss * 1e6 / 1e9
    return {
        "kernel_iops": float(row["iops"]),
        "sim_iops": r.iops,
        "sim_s": r.completed_total / r.iops,
        "mode": cc.model.mode,
        "arms_per_op": cc.timer_arms / r.completed_total,
        "gbs": gbs,
        "cwnd": cc.cwnd,
        "flight_max": cc.flight_max,
        "client_acks": acks,
    }


def startup_probe(ops: int = 40_000) -> dict[str, Any]:
    """:func:`probe_run` at the probe's own depth: the kernel's and the simulated rate, the
    simulated span (s), the server's bbr state at the end and its pacing timers per operation."""
    keys = ("kernel_iops", "sim_iops", "sim_s", "mode", "arms_per_op")
    p = probe_run(ops)
    return {k: p[k] for k in keys}


def wait_trace() -> Any:
    """The seventh machine's pacing-wait trace run again here (:data:`WAIT_DATASET`), summarised
    as :func:`models.validation.pacing_wait.summary` summarises the seventh's (audits)."""
    from models import data
    from models.validation import pacing_wait as PW

    return PW.summary(data.load(WAIT_DATASET))


def wait_findings(t: Any) -> dict[str, bool]:
    """:func:`models.validation.pacing_wait.findings` on this machine's trace ``t``, and one
    claim of its own (audits; tests in ``tests/test_machine8.py``):

    * ``most calls arm``: in every paced run more than half of the calls arm the timer, and in
      no contrast does any (the seventh machine's claim with "most" as a majority, not the
      share :data:`models.validation.pacing_wait.ARMED_SHARE` that was set after its trace).
    """
    from models.validation import pacing_wait as PW

    paced, free = t.loc[list(PW.PACED)], t.loc[list(PW.UNPACED)]
    most = bool((paced["armed_pct"] > 50).all()) and bool((free["armed_pct"] == 0).all())
    return {**PW.findings(t), "most calls arm": most}


def numbers(ev: Machine8Evaluation) -> dict[str, Any]:
    """The numbers the chapter quotes, by name (shares in percent)."""
    out: dict[str, Any] = {"m8_rows": len(ev.tables[MODELS[0]])}
    out["m8_iops_rows"] = len(FID.iops_table(ev.tables[MODELS[0]]))
    out["m8_verdict_rows"] = int((ev.tables[MODELS[0]]["role"] == "test").sum())
    for i, name in enumerate((*MODELS, *AUDITS)):
        t = ev.tables[name]
        out[f"m8_{i}_within"] = 100 * B.within(t)
        out[f"m8_{i}_qd8"] = B.qd8(t)
        out[f"m8_{i}_verdicts"] = B.verdicts(t)
        for j, v in enumerate(ev.bands[name]):
            out[f"m8_{i}_band{j}"] = float(v)
        out[f"m8_{i}_bbr"], out[f"m8_{i}_other"] = (100 * x for x in bbr_split(t))
    io = FID.iops_table(ev.tables[MODELS[0]])
    out["m8_bbr_rows"] = int((io["cc"] == "bbr").sum())
    out["m8_other_rows"] = len(io) - out["m8_bbr_rows"]
    return out

"""The "your numbers" predictor: a reader's settings, a bounded simulator run, and the verdict.

:func:`predict` builds the scenario of :func:`~models.sim.explain.reader_scenario` from the
numbers an engineer has, chooses how many operations to simulate so that the run stays within a
budget of data segments (:func:`run_plan`), runs the simulator once (and the usual fixes when a
timer binds, on a smaller budget), and returns :func:`~models.sim.explain.explain`'s verdict with
what a reader asks next: the data rate in MB/s (10**6 bytes per second of I/O data), the queue
depth that saturates the link, chapter 3's bound at every queue depth, and whether and why the
connection stalls.  Standard library only: the book's live figure runs it in the browser.

>>> p = predict(io_bytes=512)  # a 512-byte read at QD 1, Nagle on the target: a stall
>>> p["stalls"], p["binds"], round(p["iops"]), p["plan"]["kind"]
(True, 'delayed-ack', 25, 'steady')
>>> p = predict(server_mode="nodelay", qd=64, io_bytes=512)
>>> p["stalls"], p["binds"]
(False, 'server-cpu')
"""

from __future__ import annotations

import math
from typing import Any

from models import framing
from models.analytic import numbers as A

from .engine import simulate
from .explain import explain, fix_options, reader_scenario
from .scenario import Scenario

__all__ = ["SEGMENT_BUDGET", "PLAN_KINDS", "run_plan", "predict"]

#: Data segments (both directions) one prediction may simulate in its main run; the fixes share
#: half of it more (at most three fixes, a sixth each).  ``tests/test_predictor.py`` times the
#: worst case of every control.
SEGMENT_BUDGET = 8000
#: What a run covered: ``steady`` (a warm-up of one round of the queue, then at least two rounds
#: or 40 operations, fast-forwarded when the run repeats), ``round`` (a warm-up round, then one
#: round of the queue), ``reduced`` (a round at a smaller queue depth, when the reader's queue
#: holds more data than the budget: the operations in flight are simulated too).
PLAN_KINDS = ("steady", "round", "reduced")
#: A reduced run whose rate reaches this share of chapter 3's ceiling ``1/TPTmin`` (or whose
#: verdict is a busy resource) has saturated its bottleneck: a deeper queue adds only latency.
SATURATED_SHARE = 0.98


def segments_per_op(sc: Scenario) -> int:
    """Data segments of one operation, both directions (each message's frames at the MTU)."""
    return sum(framing.frames(sum(leg), sc.link.mtu) for leg in sc.workload.exchange)


def run_plan(qd: int, per_op: int, budget: int = SEGMENT_BUDGET) -> dict[str, Any]:
    """The queue depth, warm-up and measured operations to simulate for a queue depth ``qd``
    whose operations cost ``per_op`` data segments each, within ``budget`` data segments.

    A run costs about ``warm-up + measured + queue depth`` operations (those still in flight at
    the end are partly simulated).  Returns ``{"qd": ..., "warmup": ..., "ops": ..., "kind": one
    of PLAN_KINDS}``; ``qd`` is below the reader's only for ``reduced``, and never below 1 (one
    operation of the largest size, 1 MiB at MTU 576, costs about 2,000 segments).

    >>> run_plan(1, 4)
    {'qd': 1, 'warmup': 1, 'ops': 40, 'kind': 'steady'}
    >>> run_plan(60, 35)
    {'qd': 60, 'warmup': 60, 'ops': 60, 'kind': 'round'}
    >>> run_plan(256, 2004)
    {'qd': 1, 'warmup': 1, 'ops': 1, 'kind': 'reduced'}
    """
    for name, value, low in (("qd", qd, 1), ("per_op", per_op, 1), ("budget", budget, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be a whole number of at least {low}, got {value!r}")
    affordable = budget // per_op  # operations the budget pays for
    steady = max(2 * qd, 40)
    if 2 * qd + steady <= affordable:
        return {"qd": qd, "warmup": qd, "ops": steady, "kind": "steady"}
    if 3 * qd <= affordable:
        return {"qd": qd, "warmup": qd, "ops": qd, "kind": "round"}
    q = max(1, affordable // 3)
    return {"qd": q, "warmup": q, "ops": q, "kind": "reduced"}


def _planned(sc: Scenario, budget: int) -> tuple[Scenario, dict[str, Any]]:
    plan = run_plan(sc.workload.qd, segments_per_op(sc), budget)
    run = {"ops": plan["ops"], "warmup_ops": plan["warmup"]}
    return sc.replace(workload={"qd": plan["qd"]}, run=run), plan


def predict(budget: int = SEGMENT_BUDGET, **settings: Any) -> dict[str, Any]:
    """Simulate a reader's settings within ``budget`` data segments and say what limits them.

    ``settings`` are :func:`~models.sim.explain.reader_scenario`'s keywords (link rate in bits per
    second, MTU in bytes, one-way latency in seconds, I/O size in bytes, ``op``, each host's time
    per operation in seconds, queue depth, each side's socket mode) except ``ops``, which
    :func:`run_plan` chooses.  Returns :func:`~models.sim.explain.explain`'s dict for the run
    (``iops``, ``binds``, ``why``, ``move``, ``fixes``, ``utilisation``, ...; ``qd`` the
    reader's) with ``mb_per_s`` the I/O data rate (``io_bytes`` times IOPS, in 10**6 bytes per
    second) and these added:

    ``plan``
        :func:`run_plan`'s choice (``qd``, ``warmup``, ``ops``, ``kind``) and
        ``segments_per_op``.
    ``iops_high``
        ``None``, or, for a ``reduced`` run that did not saturate its bottleneck, chapter 3's
        bound at the reader's queue depth: the rate lies from ``iops`` (simulated at the smaller
        depth; a deeper queue is no slower) to ``iops_high``.  A ``reduced`` run that saturated
        keeps its rate (a deeper queue adds only latency) and says so in ``why``.
    ``stalls``, ``stall``
        Whether a timer (a delayed ACK meeting Nagle, or the probe timer) sets the rate, and why
        in words (``None`` when none does).
    ``link_stage``, ``qd_link``, ``qd_link_rule``, ``link_saturates``, ``slowest``
        The data's direction on the ring (``"W2"`` for a read, ``"W1"`` for a write), the queue
        depth that keeps it busy (inequality [1] for a read's response link; the ring's knee
        ``RTTmin / W1`` for a write's request link, chapter 1), which of the two it is, whether
        the link is the slowest stage (if not, no queue depth saturates it), and that stage.
    ``stages``, ``limits``, ``bound``
        The ring's stage times (seconds), each stage's rate limit (operations per second; a
        stage of zero time has none) and chapter 3's bound at the reader's queue depth.
    """
    if "ops" in settings:
        raise ValueError("ops: predict chooses the operations itself (see run_plan)")
    base = reader_scenario(**settings, ops=1)
    sc, plan = _planned(base, budget)
    plan["segments_per_op"] = segments_per_op(sc)
    e = explain(sc, simulate(sc), fixes=False)
    qd = base.workload.qd
    stages = base.stage_times()
    rtt = e["rtt_min_s"]  # s: the ring, the hosts' path latencies, the link's latency both ways
    bound = bound_iops(qd, stages, rtt)
    e.update(qd=qd, iops_high=None, bound=bound)
    if e["binds"] in ("delayed-ack", "probe"):
        fixes = fix_options(sc, e["held"])
        share = max(1, budget // (2 * len(fixes)))  # data segments for each fix's run
        e["fixes"] = {
            option: float(simulate(_planned(sc.replace(**{e["held"]: change}), share)[0]).iops)
            for option, change in fixes.items()
        }
    if plan["kind"] == "reduced":
        busy = e["binds"] in ("link", "server-cpu", "client-cpu")
        ceiling = bound_iops(math.inf, stages, rtt)
        if busy or e["iops"] >= SATURATED_SHARE * ceiling:
            e["why"] += (
                f" (simulated at QD {plan['qd']}, where the bottleneck is already saturated: a "
                f"deeper queue adds only latency)"
            )
        else:
            e["iops_high"] = max(bound, e["iops"])
            e["binds"] = "unknown"
            e["why"] = (
                f"QD {qd} holds more data than one live run simulates: {e['iops']:,.1f} "
                f"per second at QD {plan['qd']}, chapter 3's bound {e['iops_high']:,.1f} at QD {qd}"
            )
            e["move"] = "run python -m models.sim --explain with these settings for the full run"
    op = settings.get("op", "read")
    size = sc.workload.request_writes[-1] if op == "write" else sc.workload.response_writes[-1]
    link_stage = "W1" if op == "write" else "W2"
    slowest = max(stages, key=lambda k: stages[k])
    sym = base.symbol_values()
    if link_stage == "W2":
        qd_link = A.qd_min_network(sym["CL"], rtt, sym["SL"], stages["W2"])
        rule = "[1]"
    else:
        qd_link = rtt / stages["W1"]
        rule = "knee"
    stalls = e["binds"] in ("delayed-ack", "probe")
    e.update(
        mb_per_s=e["iops"] * size / 1e6,  # bytes/s -> MB/s (10**6 bytes)
        io_bytes=size,
        plan=plan,
        stalls=stalls,
        stall=e["why"] if stalls else None,
        stages=stages,
        limits={k: 1 / t for k, t in stages.items() if t > 0},  # 1/s
        link_stage=link_stage,
        qd_link=qd_link,
        qd_link_rule=rule,
        link_saturates=slowest == link_stage,
        slowest=slowest,
    )
    return e


def bound_iops(qd: float, stages: dict[str, float], rtt_s: float) -> float:
    """Chapter 3's operational bound ``min(QD / RTT, 1 / TPTmin)`` in operations per second, for
    stage times in seconds (zero allowed) and a round trip ``rtt_s`` in seconds.

    >>> bound_iops(4, {"W1": 1e-6, "SP": 10e-6, "W2": 5e-6, "CP": 0.0}, 100e-6)
    40000.0
    """
    slowest = max(stages.values())
    ceiling = 1 / slowest if slowest > 0 else math.inf
    return min(qd / rtt_s, ceiling) if rtt_s > 0 else ceiling

"""Issue 22's fidelity goals for every bundled kernel sweep and host model, side by side.

Twelve suites, each the evaluation chapter 9 shows (the goals, roles and tolerance of
:mod:`models.validation.fidelity`, stated there before any result):

``field``
    the first machine's field sweep, client and server where the scheduler put them, against
    the shipped host profile (:func:`models.validation.fidelity.evaluate`, Flory's steps
    included);
``apart``
    the second machine's field sweep with the two ends pinned a CPU apart, against the shipped
    profile and that machine's lowest-loss ``calibrate`` profile, beside two audits
    (:func:`models.validation.apart.evaluate`);
``machine2``
    the second machine's seeded sample of the field runs, against the shipped profile, that
    profile carried over, and the machine's first ``calibrate`` profile, beside two audits
    (:func:`models.validation.machines.evaluate`);
``machine4``
    the fourth machine's pinned sample, against its own ``calibrate`` profile, that profile with
    replies on their CPU, the calibration refitted with a segment sent after its CPU, two wrong
    models and the third machine's profile, beside two audits
    (:func:`models.validation.machine4.evaluate`);
``field5``
    the fifth machine's whole field sweep pinned apart, against its own ``calibrate`` profile, that
    profile refitted with the rules of the fourth and fifth machines' samples, the refit with late
    wake-ups (their share fitted on the sweep's training rows) and the shipped profile, beside the
    machine's sample as an audit (:func:`models.validation.field5.evaluate`, Flory's steps
    included);
``field6``
    the sixth machine's whole field sweep pinned apart, against its own ``calibrate`` profile and
    the fifth machine's best rules on that calibration's refit, nothing fitted on the sweep, beside
    the fifth machine's field sweep as an audit (:func:`models.validation.field6.evaluate`, Flory's
    steps included), and the best rules with a ``send()`` held until bbr's pacing timer fires
    (``Host.pacing_arm_waits``, found on the seventh machine:
    :func:`models.validation.machine7.sixth_goals`);
``machine7``
    the seventh machine's seeded sample of the field runs against its calibration with the
    copies as the loop pays them and as one transfer, each as a reader's profile and with the best
    rules, and the best rules with the pacing wait, beside the kernel's second draw of the same
    runs as an audit (:func:`models.validation.machine7.evaluate`);
``machine8``
    the eighth machine's sample of the same runs against the seventh machine's calibration and
    best rules with the pacing wait, unchanged (the transfer), and the same two with the eighth
    machine's own calibration, beside the seventh machine's kernel on those runs and the eighth
    machine's second draw as audits (:func:`models.validation.machine8.evaluate`);
``heldcall``
    the best rules with the pacing wait, and with its interrupt counted once and the released
    segments paying for the peer's wake-up, on the seventh machine's sample (a test), the eighth's
    (where the two rules were found from a trace: a fit) and the sixth machine's whole sweep (a
    test) (:func:`models.validation.heldcall.goal_lists`);
``peerwindow``
    the best rules with the held call counted once, with the sender's fixed window and with the
    window its peer advertises (``Kernel.peer_window``), on the seventh machine's sample (a test),
    the eighth's (where the held call's flags were found and the rule's row was looked at) and the
    sixth machine's whole sweep (a test) (:func:`models.validation.peerwindow.goal_lists`);
``wakespread``
    the best rules with the held call counted once, with one wake-up latency per idle gap and
    with each wake-up drawn from the benchmark's measured spread (``Host.wake_spread_s``, seed
    0), on the seventh machine's sample (a test), the eighth's (where hand-picked spreads were
    tried first: a fit) and the sixth machine's whole sweep (a test)
    (:func:`models.validation.wakespread.goal_lists`);
``burst``
    the second machine's runs over the rate limit's bucket depth, against the ``tbf`` watchdog
    late by its measured lateness, late by the host's wake-up (the proxy), and on time, beside
    the second draw (:func:`models.validation.burst.evaluate`;
    its own goals, :data:`models.validation.burst.GOALS`);
``onecpu``
    the stall placement sweep's runs pinned to one CPU, against the simulator's machine of one
    CPU with a thread holding it until it blocks and with EEVDF's wake-up preemption
    (``Link.wake_preempt``), and the same sweep on the fourth machine against that machine's
    profile with the preemption, and the scheduler trace's wake-up decisions against EEVDF's rules
    replayed over it (:mod:`models.validation.stall_placement`,
    :mod:`models.validation.wakeup_preemption`; its goals :data:`ONECPU_GOALS`).

A column is a model (a test) or an audit (kernel runs held to kernel runs); an audit never counts
as a model's pass.  For each goal a column reports its value and whether the goal is met; a
sample cannot tell the largest stalling QD of a group (``-``).

    .venv/bin/python benchmarks/bench_fidelity.py
        [--only field,apart,machine2,machine4,field5,field6,machine7,machine8,heldcall,
        peerwindow,wakespread,burst,onecpu] [--json]

Not a timed test: it prints the goals (and exits 0) whatever they are.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

SUITES = (
    "field",
    "apart",
    "machine2",
    "machine4",
    "field5",
    "field6",
    "machine7",
    "machine8",
    "heldcall",
    "peerwindow",
    "wakespread",
    "burst",
    "onecpu",
)


#: One column of a suite: its goals, its role (``test`` or ``audit``), and the names of the
#: goals its rows can tell (a sample cannot tell the largest stalling QD of a group).
Column = tuple[list, str, tuple[str, ...]]


def _field() -> dict[str, Column]:
    from models.validation import fidelity as FID

    ev = FID.evaluate()
    return {"shipped profile": (ev.goals, "test", tuple(g.name for g in ev.goals))}


def _apart() -> dict[str, Column]:
    from models.validation import apart as AP
    from models.validation import fidelity as FID

    ev = AP.evaluate()
    return {
        name: (FID.goals(t), "audit", AP.SAMPLE_GOALS)
        if name in AP.AUDITS
        else (FID.goals(t), "test", AP.GOALS)
        for name, t in ev.tables.items()
    }


def _machine2() -> dict[str, Column]:
    from models.validation import fidelity as FID
    from models.validation import machines as MA

    ev = MA.evaluate()
    return {
        name: (FID.goals(t), "audit" if name in MA.AUDITS else "test", MA.GOALS)
        for name, t in ev.tables.items()
    }


def _machine4() -> dict[str, Column]:
    from models.validation import fidelity as FID
    from models.validation import machine4 as M4
    from models.validation import machines as MA

    ev = M4.evaluate()
    audits = M4.MODELS[4:]  # kernel runs in the model's place
    return {
        name: (FID.goals(ev.tables[name]), "audit" if name in audits else "test", MA.GOALS)
        for name in M4.ROWS
    }


def _field5() -> dict[str, Column]:
    from models.validation import field5 as F5

    ev = F5.evaluate()
    return {
        name: (goals, "audit" if name == F5.AUDIT else "test",
               F5.SAMPLE_GOALS if name == F5.AUDIT else tuple(ev.goals.index))
        for name, goals in ev.goal_lists.items()
    }  # fmt: skip


def _field6() -> dict[str, Column]:
    from models.validation import fidelity as FID
    from models.validation import field6 as F6
    from models.validation import flory as FL
    from models.validation import machine7 as M7

    ev = F6.evaluate()
    out = {
        name: (FID.goals(t) + [FL.flory_goal(ev.steps[name])],
               "audit" if name == F6.AUDIT else "test", tuple(ev.goals.index))
        for name, t in ev.tables.items()
    }  # fmt: skip
    # the best rules with a send() held until bbr's pacing timer fires (found on the seventh)
    out[M7.WAIT] = (list(M7.sixth_goals()), "test", tuple(ev.goals.index))
    return out


def _machine7() -> dict[str, Column]:
    from models.validation import fidelity as FID
    from models.validation import machine7 as M7
    from models.validation import machines as MA

    ev = M7.evaluate()
    out: dict[str, Column] = {
        name: (FID.goals(t), "test", MA.GOALS) for name, t in ev.tables.items()
    }
    out[M7.REPEAT] = (FID.goals(ev.repeat), "audit", MA.GOALS)
    return out


def _machine8() -> dict[str, Column]:
    from models.validation import fidelity as FID
    from models.validation import machine8 as M8
    from models.validation import machines as MA

    ev = M8.evaluate()
    out: dict[str, Column] = {
        name: (FID.goals(ev.tables[name]), "test", MA.GOALS) for name in M8.MODELS
    }
    for name in M8.AUDITS:
        out[name] = (FID.goals(ev.tables[name]), "audit", MA.GOALS)
    return out


def _three_sites(module: Any) -> dict[str, Column]:
    """A comparison of two rules on three sites (``module.SITES``, the last a whole sweep, the
    others samples): one column per site and rule, its role as ``module.role`` says."""
    from models.validation import machines as MA

    return {
        f"{site}, {rule}": (goals, module.role(site, rule), MA.GOALS
                            if site != module.SITES[2] else tuple(g.name for g in goals))
        for (site, rule), goals in module.goal_lists().items()
    }  # fmt: skip


def _heldcall() -> dict[str, Column]:
    from models.validation import heldcall as HC

    return _three_sites(HC)


def _peerwindow() -> dict[str, Column]:
    from models.validation import peerwindow as PW

    return _three_sites(PW)


def _wakespread() -> dict[str, Column]:
    from models.validation import wakespread as WS

    return _three_sites(WS)


def _burst() -> dict[str, Column]:
    from models.validation import burst as BU

    ev = BU.evaluate()
    return {
        name: (BU.goals(t), "audit" if name == BU.AUDIT else "test", BU.GOALS)
        for name, t in ev.tables.items()
    }


#: The one-CPU suite's goals.
ONECPU_GOALS = ("stall verdicts", "largest stalling QD", "wake-up decisions")


def _onecpu() -> dict[str, Column]:
    """Both ends pinned to one CPU (``kernel6_stall_placement``, ``same``): the simulator's
    machine of one CPU with a thread holding it until it blocks and with EEVDF's wake-up
    preemption; the same sweep on the fourth machine against that machine's profile with the
    preemption; and the scheduler trace replayed through EEVDF's run queue."""
    from models import data
    from models.sim import hostprofile
    from models.validation import machine4 as M4
    from models.validation import stall_placement as SPL
    from models.validation import wakeup_preemption as WP
    from models.validation.fidelity import Goal

    second = SPL.kernel_verdicts(data.load(SPL.DATASET))
    fourth = SPL.kernel_verdicts(data.load(SPL.MACHINE4_DATASET))
    runs = {  # column: (the kernel's verdicts, the simulator's machine of one CPU, host profile)
        "a thread holds it until it blocks": (second, SPL.ONE_CPU_LINK, None),
        "EEVDF's wake-up preemption": (second, SPL.PREEMPT_LINK, None),
        "EEVDF's, fourth machine and profile": (
            fourth,
            SPL.PREEMPT_LINK,
            hostprofile.shipped(M4.PROFILE),
        ),
    }
    decided = WP.agreement(data.load(WP.DATASET))
    right = decided["right"].min()
    replay = Goal(
        "wake-up decisions",
        f">= {WP.SHARE:.0%} each",
        f"{right:.0%} at least",
        bool(right >= WP.SHARE),
        int(decided["n"].sum()),
    )
    out: dict[str, Column] = {}
    for name, (kernel, link, profile) in runs.items():
        sim = SPL.simulated_verdicts(kernel.index, profile, one_cpu=link)
        by_client, groups = SPL.one_cpu_right(kernel, sim)
        n, n_groups = len(kernel), len(SPL.deepest(kernel, "same"))
        ok = sum(by_client.values())
        goals = [
            Goal("stall verdicts", "every row", f"{ok} of {n}", ok == n, n),
            Goal(
                "largest stalling QD",
                "every group",
                f"{groups} of {n_groups}",
                groups == n_groups,
                n_groups,
            ),
            replay,
        ]
        out[name] = (goals, "test", ONECPU_GOALS[:2])
    out["the kernel's decisions, replayed"] = ([replay], "test", ONECPU_GOALS[2:])
    return out


RUNNERS: dict[str, Callable[[], dict[str, Column]]] = {
    "field": _field,
    "apart": _apart,
    "machine2": _machine2,
    "machine4": _machine4,
    "field5": _field5,
    "field6": _field6,
    "machine7": _machine7,
    "machine8": _machine8,
    "heldcall": _heldcall,
    "peerwindow": _peerwindow,
    "wakespread": _wakespread,
    "burst": _burst,
    "onecpu": _onecpu,
}


def _suites(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",")]
    bad = [s for s in names if s not in SUITES]
    if bad or not names or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"a comma-separated subset of {','.join(SUITES)} without repeats, got {text!r}"
        )
    return names


def run_suite(name: str) -> dict[str, Any]:
    """One suite's goals: ``{"seconds", "columns": {column: {"role", "goals": {goal: {"value",
    "met"}}}}}``."""
    t0 = time.perf_counter()
    columns = {}
    for column, (goals, role, told) in RUNNERS[name]().items():
        columns[column] = {
            "role": role,
            "goals": {
                g.name: {
                    "value": g.value if g.name in told else "-",
                    "met": bool(g.met) if g.name in told else None,
                }
                for g in goals
            },
        }
    return {"seconds": time.perf_counter() - t0, "columns": columns}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--only",
        type=_suites,
        default=list(SUITES),
        help=f"comma-separated subset of {','.join(SUITES)} (default all)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object")
    ns = p.parse_args(argv)
    out = {name: run_suite(name) for name in ns.only}
    if ns.json:
        print(json.dumps(out))
        return out
    for name, suite in out.items():
        print(f"{name} ({suite['seconds']:.0f} s)")
        width = max(len(g) for col in suite["columns"].values() for g in col["goals"])
        for column, col in suite["columns"].items():
            print(f"  {column} [{col['role']}]")
            for goal, g in col["goals"].items():
                mark = {True: "met", False: "NOT met", None: ""}[g["met"]]
                print(f"    {goal:<{width}} {g['value']:<14} {mark}")
    return out


if __name__ == "__main__":
    main()

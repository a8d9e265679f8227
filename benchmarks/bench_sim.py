"""Speed of the packet simulator beside a bare SimPy ring, same machine,
same run.

Two workloads:

``book sweeps``
    The curves of the main figures of chapters 4-6 (IOPS against queue
    depth with Nagle and TCP_NODELAY, the two-call response with each
    fix, one-segment responses under the bound), each run at the
    scenario's default length of 2000 operations.
``standard``
    One long run: QD 8, 48-byte requests, 48 + 512-byte responses in two
    ``send()`` calls, TCP_NODELAY on both sockets, 20 us of server and
    8 us of client processing per operation, 200,000 operations.  Its
    operations soon settle into an exact repeat, which the fast-forward
    skips almost whole; with the fast-forward off it shows the
    simulator's raw speed: the target there is 2.

Each is run with the fast-forward over exact repeats on (the default)
and off.  After the standard run, a short profile of the raw engine
(cProfile, the functions that take the most time of their own) shows
where the time goes; ``benchmarks/sim_opcodes.py`` counts the same run's
Python instructions per function exactly, the same on every run.  The
baseline is a minimal SimPy model of the four-stage ring of each
scenario (W1, SP, W2, CP as FIFO servers, no TCP) with the same queue
depth, stage times and number of operations.  The ratio is
operations per second of wall time, simulator over ring; the target is 5
for the book sweeps with the fast-forward on.  Events per operation
counts the events the simulator ran per operation it did not skip.

    .venv/bin/python benchmarks/bench_sim.py [--repeat 3] [--ops 200000] [--json]

Not a timed test: it prints the numbers (and exits 0) whatever they are.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

import simpy

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's models (a git worktree), not an installed copy
    sys.path.insert(0, str(ROOT))

from models import presets  # noqa: E402
from models.sim import Scenario, simulate  # noqa: E402

TARGET = 5.0  # book sweeps, fast-forward on
RAW_TARGET = 2.0  # standard run, fast-forward off


def book_sweeps() -> list:
    """The scenarios behind the main figures of chapters 4-6, each at the
    scenario's default length (2000 measured operations)."""
    out = []
    for mode in presets.BUSY_MODES:  # chapter 4
        for q in (1, 2, 4, 6, 8, 12, 16, 24, 32, 40, 48, 64):
            out.append(
                presets.busy_count(mode, q, ops=2000).replace(
                    server={"proc_s": 11.9e-6, "tx_cpu_s": 4e-6}, kernel={"autocork": False}
                )
            )
    fixes = ({}, {"nodelay": True}, {"msg_more": True})  # chapter 5
    for fix in fixes:
        for q in (1, 2, 3, 4, 6, 8, 12, 16):
            out.append(Scenario(workload={"qd": q}, server=fix))
    for q in (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 32):  # chapter 6
        out.append(presets.one_segment(workload={"qd": q}))
    return out


def standard(ops: int = 200_000) -> list:
    return [
        Scenario(
            workload={"qd": 8},
            client={"nodelay": True, "proc_s": 8e-6},
            server={"nodelay": True, "proc_s": 20e-6},
            run={"ops": ops},
        )
    ]


class SummedProfile(cProfile.Profile):
    """cProfile whose statistics sum the code objects that share a ``(file, line, name)`` key
    (the client's and the server's own compiled copies of a thread's methods,
    ``models.sim.own_code``), where cProfile's snapshot keeps only the last of them."""

    def snapshot_stats(self) -> None:
        entries = self.getstats()
        self.stats: dict = {}
        callers_of: dict = {}  # id(code) -> the callers dict of its key
        for e in entries:
            func = cProfile.label(e.code)
            nc, tt, ct = e.callcount, e.inlinetime, e.totaltime
            cc = nc - e.reccallcount
            if func in self.stats:
                pcc, pnc, ptt, pct, callers = self.stats[func]
                cc, nc, tt, ct = cc + pcc, nc + pnc, tt + ptt, ct + pct
            else:
                callers = {}
            callers_of[id(e.code)] = callers
            self.stats[func] = cc, nc, tt, ct, callers
        for e in entries:
            func = cProfile.label(e.code)
            for sub in e.calls or ():
                callers = callers_of.get(id(sub.code))
                if callers is None:
                    continue
                nc, tt, ct = sub.callcount, sub.inlinetime, sub.totaltime
                row = (nc, nc - sub.reccallcount, tt, ct)
                prev = callers.get(func)
                callers[func] = row if prev is None else tuple(a + b for a, b in zip(prev, row))


def profile(sc: Scenario, ops: int = 20_000, top: int = 12) -> str:
    """The raw engine's profile on ``sc`` (fast-forward off, ``ops``
    operations): the functions with the most time of their own."""
    sc = sc.replace(run={"ops": ops, "fast_forward": False})
    prof = SummedProfile()
    prof.enable()
    r = simulate(sc)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).sort_stats("tottime")
    stats.print_stats(top)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls"))
    head = (
        f"profile of the raw engine, {r.completed_total:,} operations, "
        f"{r.events / r.completed_total:.2f} events per operation "
        f"(cProfile's own overhead inflates small functions):"
    )
    return "\n".join([head, *("  " + ln.replace(str(ROOT) + "/", "") for ln in lines[start:])])


def simpy_ring(qd: int, stage_times: list, ops: int) -> tuple:
    """The bare ring in SimPy: one process per stage taking operations
    from a Store in FIFO order.  (operations, SimPy events, wall s)."""
    env = simpy.Environment()
    stores = [simpy.Store(env) for _ in stage_times]
    done = {"n": 0}
    finished = env.event()

    def stage(i: int, service: float):
        inbox, outbox = stores[i], stores[(i + 1) % len(stores)]
        while True:
            op = yield inbox.get()
            yield env.timeout(service)
            if i == len(stores) - 1:
                done["n"] += 1
                if done["n"] == ops and not finished.triggered:
                    finished.succeed()
            yield outbox.put(op)

    for i, t in enumerate(stage_times):
        env.process(stage(i, t))
    for k in range(qd):
        stores[0].put(k)
    steps = 0
    t0 = time.perf_counter()
    while not finished.triggered:
        env.step()
        steps += 1
    return done["n"], steps, time.perf_counter() - t0


def measure(scenarios: list, fast_forward: bool) -> dict:
    ops = events = skipped = 0
    wall = 0.0
    for sc in scenarios:
        r = simulate(sc.replace(run={"fast_forward": fast_forward}))
        ops += r.completed_total
        skipped += r.skipped_ops
        events += r.events
        wall += r.wall_time_s
    return {
        "ops": ops,
        "skipped_ops": skipped,
        "events": events,
        "wall_s": wall,
        "ops_per_s": ops / wall,
        "events_per_op": events / max(ops - skipped, 1),
    }


def ring(scenarios: list) -> dict:
    ops = events = 0
    wall = 0.0
    for sc in scenarios:
        n = simulate(sc.replace(run={"fast_forward": True})).completed_total
        got, steps, w = simpy_ring(sc.workload.qd, list(sc.stage_times().values()), n)
        ops += got
        events += steps
        wall += w
    return {
        "ops": ops,
        "events": events,
        "wall_s": wall,
        "ops_per_s": ops / wall,
        "events_per_op": events / ops,
    }


def best(fn, repeat: int) -> dict:
    runs = [fn() for _ in range(repeat)]
    return min(runs, key=lambda d: d["wall_s"])


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="runs of each; the fastest is reported")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument(
        "--quick", action="store_true", help="the book sweeps only, once (for the chapter)"
    )
    p.add_argument("--ops", type=int, default=200_000, help="operations of the standard run")
    p.add_argument("--no-profile", action="store_true", help="skip the profile summary")
    ns = p.parse_args(argv)
    suites = {"book sweeps": book_sweeps()}
    if not ns.quick:
        suites["standard"] = standard(ns.ops)
    repeat = 1 if ns.quick else ns.repeat
    out = {}
    for name, scs in suites.items():
        on = best(lambda scs=scs: measure(scs, True), repeat)
        off = best(lambda scs=scs: measure(scs, False), repeat)
        base = best(lambda scs=scs: ring(scs), repeat)
        out[name] = {
            "scenarios": len(scs),
            "fast_forward": on,
            "no_fast_forward": off,
            "simpy_ring": base,
            "ratio": on["ops_per_s"] / base["ops_per_s"],
            "ratio_no_fast_forward": off["ops_per_s"] / base["ops_per_s"],
        }
    out["target"] = TARGET
    out["target_met"] = out["book sweeps"]["ratio"] >= TARGET
    if "standard" in out:
        out["raw_target"] = RAW_TARGET
        out["raw_target_met"] = out["standard"]["ratio_no_fast_forward"] >= RAW_TARGET
    if ns.json:
        print(json.dumps(out))
        return out
    for name, s in out.items():
        if not isinstance(s, dict):
            continue
        on, off, base = s["fast_forward"], s["no_fast_forward"], s["simpy_ring"]
        print(f"{name}: {s['scenarios']} scenarios, {on['ops']:,} operations")
        print(
            f"  simulator, fast-forward : {on['ops_per_s']:>10,.0f} ops/s "
            f"({on['skipped_ops'] / on['ops']:.0%} of operations skipped, "
            f"{on['events_per_op']:.2f} events per simulated op)"
        )
        print(
            f"  simulator, every event  : {off['ops_per_s']:>10,.0f} ops/s "
            f"({off['events_per_op']:.2f} events per op)"
        )
        print(
            f"  bare SimPy ring         : {base['ops_per_s']:>10,.0f} ops/s "
            f"({base['events_per_op']:.2f} events per op)"
        )
        print(
            f"  ratio to the ring: {s['ratio']:.2f} with the fast-forward,"
            f" {s['ratio_no_fast_forward']:.2f} without"
        )
    print(
        f"target: ratio >= {TARGET:g} on the book sweeps with the "
        f"fast-forward -> {'met' if out['target_met'] else 'NOT met'}"
    )
    if "standard" in out:
        print(
            f"target: ratio >= {RAW_TARGET:g} on the standard run without the "
            f"fast-forward -> {'met' if out['raw_target_met'] else 'NOT met'}"
        )
        if not ns.no_profile:
            print(profile(suites["standard"][0]))
    return out


if __name__ == "__main__":
    main()

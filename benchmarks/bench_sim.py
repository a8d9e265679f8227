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
    ``send()`` calls, TCP_NODELAY on both sockets.  Its operations never
    settle into an exact repeat (the round trips follow a quasi-periodic
    pattern of three values), so it shows the simulator's raw speed.

Each is run with the fast-forward over exact repeats on (the default)
and off.  The baseline is a minimal SimPy model of the four-stage ring of
each scenario (W1, SP, W2, CP as FIFO servers, no TCP) with the same
queue depth, stage times and number of operations.  The ratio is
operations per second of wall time, simulator over ring; the target is 5
for the book sweeps with the fast-forward on.  Events per operation
counts the events the simulator ran per operation it did not skip.

    .venv/bin/python benchmarks/bench_sim.py [--repeat 3] [--json]

Not a timed test: it prints the numbers (and exits 0) whatever they are.
"""

from __future__ import annotations

import argparse
import json
import time

import simpy

from models import presets
from models.sim import Scenario, simulate

TARGET = 5.0


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


def standard() -> list:
    return [
        Scenario(
            workload={"qd": 8},
            client={"nodelay": True},
            server={"nodelay": True},
            run={"ops": 20000},
        )
    ]


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
    ns = p.parse_args(argv)
    suites = {"book sweeps": book_sweeps()}
    if not ns.quick:
        suites["standard"] = standard()
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
    return out


if __name__ == "__main__":
    main()

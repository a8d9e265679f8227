"""Speed of the packet simulator beside a bare SimPy ring, on the same machine in the same run.

Standard scenario: QD 8, 48-byte requests, 48 + 512-byte responses (two send() calls), TCP_NODELAY on
both sides, the default (Butterfield 2017) stage times.  The baseline is a minimal SimPy model of the
four-stage ring (W1, SP, W2, CP as FIFO servers, no TCP) with the same queue depth and stage times.
The target: the full TCP simulation simulates at least as many operations per second (of wall time) as
the bare SimPy ring.

    .venv/bin/python benchmarks/bench_sim.py [--ops 20000] [--repeat 3]

Not a timed test: it prints numbers (and exits 0) whatever they are.
"""

from __future__ import annotations

import argparse
import json
import time

import simpy

from models.analytic import wire_time
from models.sim import Scenario, simulate

STANDARD = Scenario(qd=8, request_writes=(48,), response_writes=(48, 512), nodelay="both")


def simpy_ring(qd: int, stage_times: list[float], ops: int) -> tuple[int, int, float]:
    """The bare ring in SimPy: one process per stage taking operations from a Store in FIFO order.

    Returns (operations completed, SimPy events processed, wall seconds).
    """
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
    # count events by wrapping step()
    steps = 0
    t0 = time.perf_counter()
    while not finished.triggered:
        env.step()
        steps += 1
    return done["n"], steps, time.perf_counter() - t0


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=20000, help="operations per run")
    p.add_argument("--repeat", type=int, default=3, help="runs of each; the best is reported")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    ns = p.parse_args(argv)
    sc = STANDARD.replace(ops=ns.ops)
    best_sim = None
    for _ in range(ns.repeat):
        r = simulate(sc)
        if best_sim is None or r.wall_time_s < best_sim.wall_time_s:
            best_sim = r
    total_ops = best_sim.completed_total
    stages = [wire_time(48, sc.bandwidth_bps, sc.mtu), sc.sp_s, wire_time(560, sc.bandwidth_bps, sc.mtu), sc.cp_s]
    best_ring = None
    for _ in range(ns.repeat):
        res = simpy_ring(sc.qd, stages, total_ops)
        if best_ring is None or res[2] < best_ring[2]:
            best_ring = res
    out = {
        "scenario": "QD 8, request 48, response 48+512 (two sends), TCP_NODELAY both, linux-6",
        "tcp_sim": {"ops": total_ops, "events": best_sim.events, "wall_s": best_sim.wall_time_s,
                    "ops_per_s": total_ops / best_sim.wall_time_s, "events_per_s": best_sim.events / best_sim.wall_time_s,
                    "simulated_iops": best_sim.iops},
        "simpy_ring": {"ops": best_ring[0], "events": best_ring[1], "wall_s": best_ring[2],
                       "ops_per_s": best_ring[0] / best_ring[2], "events_per_s": best_ring[1] / best_ring[2]},
    }
    out["ratio_ops_per_s"] = out["tcp_sim"]["ops_per_s"] / out["simpy_ring"]["ops_per_s"]
    out["target_met"] = out["ratio_ops_per_s"] >= 1.0
    if ns.json:
        print(json.dumps(out))
    else:
        t, s = out["tcp_sim"], out["simpy_ring"]
        print(out["scenario"])
        print(f"TCP simulator : {t['ops']:>7} ops, {t['events']:>8} events in {t['wall_s']:.3f} s -> "
              f"{t['ops_per_s']:,.0f} ops/s, {t['events_per_s']:,.0f} events/s (simulated {t['simulated_iops']:,.0f} IOPS)")
        print(f"bare SimPy ring: {s['ops']:>7} ops, {s['events']:>8} events in {s['wall_s']:.3f} s -> "
              f"{s['ops_per_s']:,.0f} ops/s, {s['events_per_s']:,.0f} events/s")
        print(f"ratio (TCP simulator / SimPy ring, operations per second): {out['ratio_ops_per_s']:.2f} "
              f"-> target {'met' if out['target_met'] else 'NOT met'}")
    return out


if __name__ == "__main__":
    main()

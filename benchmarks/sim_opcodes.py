"""Where the raw engine's work goes, counted instead of timed: the Python
instructions (bytecodes) and calls each function runs per operation on the
standard run of ``benchmarks/bench_sim.py`` with the fast-forward off.

The count is the same on every run and every machine (a function of the
code and the scenario only), so a change to the engine can be compared
with the one before it exactly, on a loaded machine too, where the wall
times of ``bench_sim.py`` move by 10 % from one run to the next.  In
CPython 3.11 an instruction takes about 5 ns on average here, so the
total per operation times 5 ns is close to the measured time per
operation; it does not see the time spent inside C functions (``heappush``,
``deque.popleft``) beyond their call.

    .venv/bin/python benchmarks/sim_opcodes.py [--ops 3000] [--top 30]

Not a test: it prints the counts (tracing makes the run about 50 times
slower, so a few thousand operations are enough; the per-operation
figures settle within a few hundred).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # (run as a script from anywhere)
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_sim import standard  # noqa: E402
from models.sim.engine import Simulation  # noqa: E402


def count(ops: int = 3000) -> tuple:
    """(operations, instructions per function, calls per function) of the
    standard run without the fast-forward; functions are keyed by their
    qualified name and file."""
    sc = standard(ops)[0].replace(run={"fast_forward": False})
    sim = Simulation(sc)
    instructions: Counter = Counter()
    calls: Counter = Counter()

    def tracer(frame, event, arg):
        code = frame.f_code
        if event == "call":
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            calls[code] += 1
        elif event == "opcode":
            instructions[code] += 1
        return tracer

    sys.settrace(tracer)
    try:
        r = sim.run()
    finally:
        sys.settrace(None)
    n = r.completed_total
    by_name: Counter = Counter()
    calls_by_name: Counter = Counter()
    for code, k in instructions.items():
        key = f"{code.co_qualname} ({Path(code.co_filename).name}:{code.co_firstlineno})"
        by_name[key] += k
        calls_by_name[key] += calls[code]
    return n, by_name, calls_by_name, r.events


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=3000, help="operations of the standard run")
    p.add_argument("--top", type=int, default=30, help="functions to list")
    ns = p.parse_args(argv)
    if not 1 <= ns.ops <= 200_000:
        p.error(f"--ops must be in [1, 200000], got {ns.ops}")
    if not 1 <= ns.top <= 1000:
        p.error(f"--top must be in [1, 1000], got {ns.top}")
    n, instructions, calls, events = count(ns.ops)
    total = sum(instructions.values())
    print(
        f"standard run, fast-forward off, {n:,} operations: {total / n:,.0f} instructions and "
        f"{sum(calls.values()) / n:.1f} Python calls per operation, "
        f"{events / n:.2f} events per operation"
    )
    print("  instr/op  calls/op  function")
    for key, k in instructions.most_common(ns.top):
        print(f"  {k / n:8.1f}  {calls[key] / n:8.2f}  {key}")


if __name__ == "__main__":
    main()

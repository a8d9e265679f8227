"""The simulator's golden table: ``tests/data/sim_golden.csv``.

Each row is one scenario of the book (chapters 4-6 and 9, their figures
and comparisons) with the numbers the simulator gives for it.  The test
``tests/test_sim_core.py::test_golden_table`` recomputes every row and
requires the same numbers exactly, so a change to the simulator that
moves a result shows up as a failing row; when the change is intended,
rerun this script to write the new numbers and explain the difference in
the commit.  The ``v1_*`` columns keep the numbers of the first
simulator (before the rule-policy rewrite), with a ``note`` on each row
where they differ by more than one part in a million.

    .venv/bin/python tools/sim_golden.py            # rewrite the v2 columns
    .venv/bin/python tools/sim_golden.py --check    # compare only
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

from models.sim import Scenario, simulate

PATH = Path(__file__).resolve().parents[1] / "tests" / "data" / "sim_golden.csv"
V2 = ("iops", "rtt_mean_s", "rtt_p99_s", "delayed_acks_c2s", "data_segments_s2c", "busy_counts")


def measure(scenario: Scenario) -> dict:
    """The golden numbers of one scenario."""
    r = simulate(scenario)
    return {
        "iops": repr(r.iops),
        "rtt_mean_s": repr(r.rtt_mean_s),
        "rtt_p99_s": repr(r.rtt_percentile_s(99)),
        "delayed_acks_c2s": str(r.delayed_acks["C>S"]),
        "data_segments_s2c": str(r.data_segments["S>C"]),
        "busy_counts": json.dumps({str(k): v for k, v in r.busy_counts.items()}),
    }


def read() -> list:
    with open(PATH, newline="") as f:
        return list(csv.DictReader(f))


def scenario_of(row: dict) -> Scenario:
    d = json.loads(row["scenario"])
    for part in d.values():
        for k, v in part.items():
            if isinstance(v, list):
                part[k] = tuple(tuple(x) if isinstance(x, list) else x for x in v)
    return Scenario.from_dict(d)


def relative_change(a: str, b: str) -> float:
    x, y = float(a), float(b)
    if x == y or (math.isnan(x) and math.isnan(y)):
        return 0.0
    return abs(x - y) / max(abs(y), 1e-300)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    ns = p.parse_args(argv)
    rows = read()
    changed = 0
    for row in rows:
        new = measure(scenario_of(row))
        diff = {k for k in V2 if new[k] != row[k]}
        if diff:
            changed += 1
            print(f"{row['name']}: {sorted(diff)} changed")
        row.update(new)
    if not ns.check:
        with open(PATH, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    print(f"{len(rows)} rows, {changed} changed")
    return 1 if ns.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())

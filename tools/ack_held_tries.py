"""Calibrate with a pure ACK's cost held at its measured value and, from the same measurements,
with it fitted as the bundled profiles were: how much the measurement settles.

Each try runs the host-cost microbenchmarks and the loopback runs of ``calibrate`` once
(:func:`models.measure.costs.run_costs`, :func:`models.measure.profile.calibration_sweep`: the
eight runs and the busy run's repeats) and builds two profiles from them as ``calibrate`` does
(:func:`models.measure.profile.build_profile`, a thread's CPU per wake-up fitted): ``held`` (the ACK
benchmark's ``ack_cpu_s`` held, what ``calibrate`` now does) and ``fitted`` (the same
measurements less the ACK benchmark, so the fit searches ``ack_cpu_s`` as before).  Both of a try
share every measurement, so they differ only in that one cost.

    .venv/bin/python tools/ack_held_tries.py --tries 3 --out data/hosts --prefix kernel6_machine3

writes ``<prefix>_try<k>_held.json`` and ``<prefix>_try<k>_fitted.json`` (k = 1..tries) and prints
each try's ACK cost and fit loss.  It measures this machine (loopback only, no privileges), so it
is not run by the tests; ``models.validation.ackheld`` reads what it wrote.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.measure.costs import format_costs, run_costs  # noqa: E402
from models.measure.profile import build_profile, calibration_sweep  # noqa: E402

#: The two ways of each try, in the order written.
WAYS = ("held", "fitted")


def one_try() -> dict[str, dict]:
    """One try's two profiles, keyed by :data:`WAYS`."""
    costs = run_costs()
    print(format_costs(costs), file=sys.stderr)
    if "ack" not in costs["costs"]:
        raise SystemExit("the microbenchmarks gave no pure-ACK cost on this kernel")
    rows, repeats = calibration_sweep()
    without = copy.deepcopy(costs)
    del without["costs"]["ack"]  # the fit then searches ack_cpu_s, as before the benchmark
    return {
        way: build_profile(c, rows, fit_wake_cpu=True, busy_repeats=repeats)
        for way, c in (("held", costs), ("fitted", without))
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tries", type=int, default=3, help="tries, 1..10 (default 3)")
    p.add_argument("--out", type=Path, required=True, help="an existing folder")
    p.add_argument("--prefix", required=True, help="file name prefix, e.g. kernel6_machine3")
    ns = p.parse_args(argv)
    if not 1 <= ns.tries <= 10:
        p.error(f"--tries must be 1..10, got {ns.tries}")
    if not ns.out.is_dir():
        p.error(f"--out: {ns.out} is not a folder")
    for k in range(1, ns.tries + 1):
        pair = one_try()
        for way in WAYS:
            d = pair[way]
            d["notes"] = (
                f"tools/ack_held_tries.py try {k} of {ns.tries}, {way}: the pure ACK's cost "
                + (
                    "held at the microbenchmark's value"
                    if way == "held"
                    else "fitted (the ACK benchmark left out of the same measurements)"
                )
            )
            path = ns.out / f"{ns.prefix}_try{k}_{way}.json"
            path.write_text(json.dumps(d, indent=2) + "\n", encoding="utf-8")
        held, fitted = pair["held"], pair["fitted"]
        print(
            f"try {k}: ack_cpu_s held {held['host']['ack_cpu_s'] * 1e6:.2f} us "
            f"(loss {held['fit']['loss']:.4f}), fitted {fitted['host']['ack_cpu_s'] * 1e6:.2f} us "
            f"(loss {fitted['fit']['loss']:.4f})"  # s -> us
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

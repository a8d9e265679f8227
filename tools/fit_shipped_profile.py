"""Fit the shipped host profile's unmeasured costs to the field sweep's training rows.

``python -m models.measure calibrate`` fits what its microbenchmarks cannot measure to eight
short loopback runs of its own: enough for a reader's machine, but eight runs of a 2-CPU virtual
machine carry its run-to-run spread (at QD 1 the same run takes 21 or 33 us per operation,
by where the scheduler put the two threads).  The book's profile keeps the measured costs of a
``calibrate`` run and fits the rest again, the same way, to the training rows of the field sweep
(``models.validation.fidelity.TRAIN``: the loopback at 512 B and 4 KiB under bbr), held to each
row's mean operation time (QD / IOPS), which is what the tested IOPS compare:

    .venv/bin/python tools/fit_shipped_profile.py --costs my-calibration.json \\
        --out data/hosts/kernel6.json

The rows fitted are those servers whose responses leave unheld (``TCP_NODELAY``, ``MSG_MORE``
on the header, both) at QD 1, 2, 8 and 32, both client modes, without a stall; a Nagle server's
rows test the stall verdicts and are never fitted.  Takes about two minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from models.kernel.runs import load_kernel_run, simulate_uncached
from models.measure.profile import build_profile
from models.sim import hostprofile
from models.validation import fidelity as FID

#: Server socket modes and queue depths of the fitted rows.
FIT_MODES = ("nodelay", "more", "more_nodelay")
FIT_QDS = (1, 2, 8, 32)


def training_rows(run) -> list[dict]:
    """The field sweep's training rows that the fit uses (see the module docstring)."""
    df = run.table("iscsi_loop")
    keep = (FID.roles(df) == "train") & df["sock_mode"].isin(FIT_MODES) & df["qd"].isin(FIT_QDS)
    return df[keep].to_dict("records")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--costs",
        required=True,
        help="a host profile (from calibrate) whose measured costs and settings are kept",
    )
    ap.add_argument("--out", required=True, help="where to write the new profile (JSON)")
    ap.add_argument("--evaluations", type=int, default=300, help="bound on the fit's rounds")
    ap.add_argument(
        "--set",
        type=hostprofile.flag_setting,
        action="append",
        default=[],
        help="a Host flag set in the fit's simulations and the profile, NAME=true",
    )
    args = ap.parse_args(argv)
    base = json.loads(Path(args.costs).read_text())
    hostprofile.validate(base)
    run = load_kernel_run(prefix=FID.FIELD_PREFIX)
    rows = training_rows(run)

    cpus = base["machine"].get("cpus")  # both ends on that machine: they share its CPUs

    def mean_us(row, costs) -> float:
        sc = FID.field_scenario("iscsi_loop", row, costs, run.hz, cpus=cpus)
        return 1e6 * row["qd"] / simulate_uncached(sc).iops  # Little's law, s -> us

    d = build_profile(
        {"settings": base["settings"], "costs": base["measured"]},
        rows,
        mean_us,
        max_evaluations=args.evaluations,
        target="mean",
        flags=dict(args.set),
        training=(
            f"{FID.FIELD_TABLES[0]}: training rows (loopback, 512 B and 4 KiB, bbr), servers "
            f"{', '.join(FIT_MODES)}, QD {', '.join(map(str, FIT_QDS))}, both client modes, "
            "without a stall (tools/fit_shipped_profile.py)"
        ),
    )
    Path(args.out).write_text(json.dumps(d, indent=1) + "\n")
    fit = d["fit"]
    print(f"{len(fit['training_rows'])} rows, loss {fit['loss']:.4f}, at bound {fit['at_bound']}")
    for k, v in d["host"].items():
        shown = f"{v}" if isinstance(v, bool) else f"{v * 1e6:.3f} us"
        print(f"{k} = {shown}  ({d['provenance'][k]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

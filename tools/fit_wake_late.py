"""Choose the shipped host profile's ``wake_late_share`` on the field sweep's training rows.

The share of brief-idle wake-ups that still take the slow wake-up (``wake_s``) cannot be read
off the microbenchmark (its wake-ups after short gaps are nearly all fast), so it is fitted:
each share of a small grid is tried on the training rows of the field sweep
(``models.validation.fidelity.TRAIN``, every server mode), everything else in the profile
unchanged, and the share that gets the most rows right wins: stall verdicts that match the
kernel's, plus unlimited-link rows without a stall whose IOPS are within the tolerance.
Test rows are never looked at.  About half a minute on two CPUs:

    .venv/bin/python tools/fit_wake_late.py [--grid 0 0.01 0.02 0.05] [--write]

``--write`` puts the winner, with its provenance, into ``data/hosts/kernel6.json`` (run it after
``tools/fit_shipped_profile.py``, which does not keep the share).
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import pandas as pd

from models.kernel.runs import STALL_SHARE_PCT, load_kernel_run
from models.sim import hostprofile
from models.validation import fidelity as FID

GRID = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)


def training_rows(run) -> pd.DataFrame:
    """The field sweep's training rows (``run``: the field sweep), with the kernel's verdict."""
    df = run.table("iscsi_loop")
    rows = df[FID.roles(df) == "train"]
    return rows.assign(kernel_stalls=rows["stalled_pct"] >= STALL_SHARE_PCT)


def score(share: float, run, rows: pd.DataFrame) -> dict:
    """Training ``rows`` right with ``share`` on both ends of the shipped profile."""
    base = hostprofile.shipped()
    profile = dataclasses.replace(base, host={**base.host, "wake_late_share": share})
    out = FID.resimulate(rows, profile, run.hz)
    verdicts = int((out["kernel_stalls"] == out["sim_stalls"]).sum())
    io = FID.iops_table(out.assign(role="test"))  # (the training rows, scored the same way)
    within = int(io["within"].sum())
    return {
        "share": share,
        "verdicts": verdicts,
        "iops_within": within,
        "right": verdicts + within,
    }


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grid", type=float, nargs="+", default=list(GRID))
    p.add_argument(
        "--write", action="store_true", help="write the winner into the shipped profile"
    )
    ns = p.parse_args(argv)
    run = load_kernel_run(prefix=FID.FIELD_PREFIX)
    rows = training_rows(run)
    scores = [score(s, run, rows) for s in ns.grid]
    for s in scores:
        print(
            f"share {s['share']:.3f}: {s['verdicts']} verdicts + {s['iops_within']} IOPS rows = {s['right']}"
        )
    best = max(scores, key=lambda s: (s["right"], -s["share"]))
    print(f"best: {best['share']} ({len(rows)} training rows)")
    if ns.write:
        write(best, scores)
    return scores


def write(best: dict, scores: list[dict]) -> None:
    """Put ``best``'s share and how it was found into the shipped profile's file."""
    from models._paths import bundled_data_dir

    path = bundled_data_dir() / "hosts" / f"{hostprofile.SHIPPED}.json"
    d = json.loads(path.read_text())
    none = next((s for s in scores if s["share"] == 0), None)
    without = (
        f", against {none['verdicts']} and {none['iops_within']} without late wake-ups"
        if none
        else ""
    )
    grid = ", ".join(f"{s['share']:g}" for s in scores)
    d["host"]["wake_late_share"] = best["share"]
    d["provenance"]["wake_late_share"] = (
        f"fitted: the share of a grid ({grid}) that gets the "
        f"most training rows of the field sweep right, the smallest if several tie "
        f"(tools/fit_wake_late.py): with "
        f"{best['share']:g}, {best['verdicts']} stall verdicts and {best['iops_within']} IOPS rows "
        f"within 25 % of the training rows{without}; not measurable by the microbenchmark, whose "
        "wake-ups after short gaps are nearly all fast"
    )
    hostprofile.validate(d)
    path.write_text(json.dumps(d, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Choose the shipped host profile's ``wake_late_share`` on the field sweep's training rows.

The share of brief-idle wake-ups that still take the slow wake-up (``wake_s``) could not be read
off the microbenchmarks of the profiles it was fitted for (they kept each gap's median and a few
percentiles, not the slow samples); those that keep each gap's slowest tenth (``tail_us``) count
it instead (``python -m models.measure calibrate``, and ``tools/measure_wake_late.py`` for a
bundled profile).  For the older profiles it is fitted:
each share of a small grid is tried on the training rows of the field sweep
(``models.validation.fidelity.TRAIN``, every server mode), everything else in the profile
unchanged, and the share that gets the most rows right wins: stall verdicts that match the
kernel's, plus unlimited-link rows without a stall whose IOPS are within the tolerance.
Test rows are never looked at.  About half a minute on two CPUs:

    .venv/bin/python tools/fit_wake_late.py [--grid 0 0.01 0.02 0.05] [--write]

``--write`` puts the winner, with its provenance, into ``data/hosts/kernel6.json`` (run it after
``tools/fit_shipped_profile.py``, which does not keep the share).

Another machine's profile and field sweep: ``--profile`` names a bundled profile (default the
shipped one), ``--prefix`` a field sweep (default the first machine's), ``--scenario`` a
module-level ``module:function`` that makes each row's scenario (default the field evaluation's,
``models.validation.fidelity:field_scenario``), and ``--write-as NAME`` writes the profile with the
winner as ``data/hosts/NAME.json``.  With a measured wake-up curve (``wake_curve_s``) a late
wake-up takes the curve's last point; the fifth machine's share was found so::

    .venv/bin/python tools/fit_wake_late.py --profile kernel6_machine5_sent_after_cpu \
        --prefix kernel6_machine5_field \
        --scenario models.validation.machine4:freed_clock_scenario \
        --write-as kernel6_machine5_sent_late
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable
from typing import Any

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


def score(
    share: float,
    run,
    rows: pd.DataFrame,
    profile: Any = None,
    scenario: Callable[..., Any] | None = None,
) -> dict:
    """Training ``rows`` right with ``share`` on both ends of ``profile`` (default the shipped
    one), each row made by ``scenario`` (default the field evaluation's)."""
    base = profile or hostprofile.shipped()
    trial = base.with_host(wake_late_share=share)
    out = FID.resimulate(rows, trial, run.hz, scenario=scenario)
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
    p.add_argument("--profile", default=None, help="a bundled host profile's name")
    p.add_argument("--prefix", default=FID.FIELD_PREFIX, help="the field sweep's prefix")
    p.add_argument("--scenario", default=None, help="module:function making a row's scenario")
    p.add_argument(
        "--write-as", default=None, metavar="NAME", help="write data/hosts/NAME.json instead"
    )
    ns = p.parse_args(argv)
    run = load_kernel_run(prefix=ns.prefix)
    rows = training_rows(run)
    profile = hostprofile.shipped(ns.profile) if ns.profile else None
    make = scenario_function(ns.scenario) if ns.scenario else None
    scores = [score(s, run, rows, profile, make) for s in ns.grid]
    for s in scores:
        print(
            f"share {s['share']:.3f}: {s['verdicts']} verdicts + {s['iops_within']} IOPS rows = {s['right']}"
        )
    best = max(scores, key=lambda s: (s["right"], -s["share"]))
    print(f"best: {best['share']} ({len(rows)} training rows)")
    if ns.write or ns.write_as:
        write(best, scores, ns.profile or hostprofile.SHIPPED, ns.write_as, ns)
    return scores


def scenario_function(spec: str) -> Callable[..., Any]:
    """The module-level function ``module:function`` names (``--scenario``)."""
    module, _, name = spec.partition(":")
    if not name:
        raise SystemExit(f"--scenario must be module:function, got {spec!r}")
    return getattr(importlib.import_module(module), name)


def write(
    best: dict, scores: list[dict], source: str, name: str | None = None, ns: Any = None
) -> None:
    """Put ``best``'s share and how it was found into the profile ``source``'s file, or into a
    copy named ``name``."""
    from models._paths import bundled_data_dir

    hosts = bundled_data_dir() / "hosts"
    path = hosts / f"{name or source}.json"
    d = json.loads((hosts / f"{source}.json").read_text())
    none = next((s for s in scores if s["share"] == 0), None)
    without = (
        f", against {none['verdicts']} and {none['iops_within']} without late wake-ups"
        if none
        else ""
    )
    grid = ", ".join(f"{s['share']:g}" for s in scores)
    d["host"]["wake_late_share"] = best["share"]
    curve = "wake_curve_s" in d["host"]
    how = "a late wake-up takes the wake-up curve's last point; " if curve else ""
    where = "the field sweep"
    args = ""
    if ns is not None and (ns.profile or ns.prefix != FID.FIELD_PREFIX or ns.scenario):
        where = f"the field sweep {ns.prefix}"
        args = "".join(
            f" --{k} {v}"
            for k, v in (("profile", ns.profile), ("prefix", ns.prefix), ("scenario", ns.scenario))
            if v
        )
    d["provenance"]["wake_late_share"] = (
        f"fitted: {how}the share of a grid ({grid}) that gets the "
        f"most training rows of {where} right, the smallest if several tie "
        f"(tools/fit_wake_late.py{args}): with "
        f"{best['share']:g}, {best['verdicts']} stall verdicts and {best['iops_within']} IOPS rows "
        f"within 25 % of the training rows{without}; not measurable by the microbenchmark, whose "
        "wake-ups after short gaps are nearly all fast"
    )
    if name:  # a copy: the record says which profile and which scores
        d.setdefault("fit", {})["wake_late_share"] = {"profile": source, "scores": scores}
    hostprofile.validate(d)
    path.write_text(json.dumps(d, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

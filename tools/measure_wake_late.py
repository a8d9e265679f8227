"""Give a bundled host profile a *measured* late wake-up share and latency (``Host.wake_late_share``
and ``Host.wake_late_s``).

The profiles made before the wake-up benchmarks kept each idle gap's slowest tenth have no way
to tell how many brief-idle wake-ups were as slow as a long idle's, so the share was fitted
(``tools/fit_wake_late.py``) or left at 0.  This tool runs the microbenchmarks again on the same
machine (or reads a ``python -m models.measure costs --json`` output), counts the share
(:func:`models.measure.wakeups.late_share`: the loopback TCP wake-ups after 2 us to 1.28 ms of
idle at least as slow as the wake-up curve's last point, both from that run) and the late ones'
mean latency (:func:`models.measure.wakeups.late_mean_s`) and writes the profile with them, the
run's wake-up lists and settings kept beside them (``measured.late_wake``).
Nothing is fitted; run it with nothing else on the machine (about 25 s)::

    .venv/bin/python tools/measure_wake_late.py --profile kernel6_machine8 \
        --write-as kernel6_machine8_late
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from models._paths import bundled_data_dir
from models.measure.wakeups import late_wake_fields, socket_wake_curve
from models.sim import hostprofile

#: The wake-up lists of the run the share was counted on, kept in the profile.
KEPT = ("tcp_by_gap", "cross_by_long_gap", "pingpong")


def with_late_share(profile: dict[str, Any], costs_result: dict[str, Any]) -> dict[str, Any]:
    """``profile`` (a host profile's JSON) with the late share counted on ``costs_result`` (a
    ``costs --json`` output of the same machine) as its ``wake_late_share`` and the late ones'
    mean latency as its ``wake_late_s``, measured.

    Raises
    ------
    ValueError
        The run cannot tell the share (no tails or no socket curve), or it was measured on
        another kernel than the profile's.
    """
    st, wake = costs_result["settings"], costs_result["costs"]["wake"]
    fields, how = late_wake_fields(wake)
    if not fields:
        raise ValueError(
            "costs_result: its wake-ups cannot tell the late share (a benchmark without each "
            "gap's tail_us, or without the ping-pong and the long gaps)"
        )
    kernel = st["kernel"]["release"]
    if kernel != profile["machine"]["kernel"]:
        raise ValueError(
            f"costs_result: measured on kernel {kernel}, the profile's is "
            f"{profile['machine']['kernel']}"
        )
    late_us = socket_wake_curve(wake)[-1][1] * 1e6  # s -> us
    run = (
        f"; a run of the microbenchmarks at {st['date']} on the same machine, after the "
        f"profile's calibration (tools/measure_wake_late.py; measured.late_wake)"
    )
    out = json.loads(json.dumps(profile))  # a deep copy
    out["host"].update(fields)
    out["provenance"].update({k: v + run for k, v in how.items()})
    out["measured"]["late_wake"] = {
        "share": fields["wake_late_share"],
        "late_us": late_us,
        "date": st["date"],
        "load": st["load"],
        "kernel": kernel,
        **{k: wake[k] for k in KEPT},
    }
    hostprofile.validate(out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", required=True, help="a bundled profile's name")
    ap.add_argument("--costs", type=Path, help="a costs --json output (default: run it now)")
    ap.add_argument("--write-as", required=True, help="the new profile's name (data/hosts)")
    args = ap.parse_args(argv)
    profile = json.loads((bundled_data_dir() / "hosts" / f"{args.profile}.json").read_text())
    if args.costs:
        costs_result = json.loads(args.costs.read_text())
    else:
        from models.measure.costs import run_costs

        costs_result = run_costs(quick=False)
    out = with_late_share(profile, costs_result)
    path = bundled_data_dir() / "hosts" / f"{args.write_as}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    h = out["host"]
    print(
        f"{path}: wake_late_share {h['wake_late_share']:.4f}, "
        f"wake_late_s {h.get('wake_late_s', 0.0) * 1e6:.1f} us"  # s -> us
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Split the shipped profile's fitted per-message and per-ACK CPU into what one CPU pays and what
passing the work between two CPUs adds.

``proc_s`` and ``ack_cpu_s`` of the shipped profile were fitted (``tools/fit_shipped_profile.py``)
on field rows where client and server ran on one machine with a CPU each.  The placement sweep
(``data/kernel6_placement``) also ran one of those rows (on the loopback, among other links) with
both ends pinned to one CPU, where no
message and no ACK passes between CPUs.  This tool finds the share ``k`` of both costs that the
one-CPU runs pay as well: the simulator with one shared CPU, ``proc_s = k P`` and
``ack_cpu_s = k A`` (``P``, ``A``: the two-CPU totals), against the median IOPS of the one-CPU
runs at each size, least squares over the log ratios, ``k`` on a grid.  The rest,
``(1 - k) P`` and ``(1 - k) A``, become ``handoff_cpu_s`` and ``handoff_ack_cpu_s``, which the
simulator charges only where both ends have a CPU each; every two-CPU result stays as it was.

    .venv/bin/python tools/fit_handoff.py            # print the fit
    .venv/bin/python tools/fit_handoff.py --write    # and write data/hosts/kernel6.json

The grid starts at the share that keeps ``proc_s`` at the measured ``recv()`` cost of a segment
(a message is at least one read); a share at either end of the grid is reported as at a bound.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models import data  # noqa: E402
from models.kernel import load_kernel_run  # noqa: E402
from models.sim import hostprofile  # noqa: E402
from models.validation import fidelity as FID  # noqa: E402
from models.validation import placement as PL  # noqa: E402

#: Step of the share's grid.
STEP = 0.01


def one_cpu_ratios(profile, run, kernel) -> dict[int, float]:
    """Per size: the simulator's one-CPU IOPS over the kernel's one-CPU median on
    :data:`~models.validation.placement.FIT_LINK` (``kernel``: :func:`PL.kernel_table`'s rows)."""
    rows = kernel.loc[[PL.FIT_LINK]]
    sim = PL.simulated_table(rows.index, profile, run, placements=("same",))
    return {int(size): float(r) for (_, size), r in (sim["sim_same"] / rows["same"]).items()}


def fit(profile=None) -> dict:
    """The share's grid search: ``k``, its ratios, the loss, the grid and whether at a bound."""
    profile = profile or hostprofile.shipped()
    run = load_kernel_run(prefix=FID.FIELD_PREFIX)
    kernel = PL.kernel_table(data.load(PL.DATASET))
    floor = profile.to_dict()["measured"]["recv"]["cpu_us_per_segment"] * 1e-6  # us -> s
    lo = math.ceil(floor / hostprofile.handoff_totals(profile)[0] / STEP) * STEP
    grid = [round(lo + i * STEP, 4) for i in range(int(round((1 - lo) / STEP)) + 1)]
    scores = []
    for k in grid:
        ratios = one_cpu_ratios(hostprofile.handoff_split(profile, k), run, kernel)
        loss = sum(math.log(r) ** 2 for r in ratios.values())
        scores.append({"k": k, "loss": loss, "ratios": ratios})
    best = min(scores, key=lambda s: s["loss"])
    return {
        **best,
        "grid": (grid[0], grid[-1], STEP),
        "at_bound": best["k"] in (grid[0], grid[-1]),
        "floor_s": floor,
    }


def write(result: dict) -> Path:
    """Put the split and its provenance into the shipped profile's file."""
    from models._paths import bundled_data_dir

    path = bundled_data_dir() / "hosts" / f"{hostprofile.SHIPPED}.json"
    d = json.loads(path.read_text())
    new = hostprofile.handoff_split(hostprofile.validate(d), result["k"])
    k = result["k"]
    ratios = ", ".join(f"{s} B {r:.2f}" for s, r in result["ratios"].items())
    how = (
        f"tools/fit_handoff.py: share {k:g} of the two-CPU fit (tools/fit_shipped_profile.py) "
        f"matches the one-CPU runs of {PL.DATASET} on the {PL.FIT_LINK} (simulated/kernel "
        f"IOPS: {ratios}; grid "
        f"{result['grid'][0]:g}-{result['grid'][1]:g} by {result['grid'][2]:g}"
        + (", at a bound" if result["at_bound"] else "")
        + ")"
    )
    for key in ("proc_s", "ack_cpu_s", "handoff_cpu_s", "handoff_ack_cpu_s"):
        d["host"][key] = new.host[key]
    d["provenance"]["proc_s"] = f"fitted, one CPU's share: {how}"
    d["provenance"]["ack_cpu_s"] = f"fitted, one CPU's share: {how}"
    d["provenance"]["handoff_cpu_s"] = (
        f"fitted, the rest of the two-CPU proc_s: what the field rows (a CPU each) need beyond "
        f"what one CPU pays; {how}"
    )
    d["provenance"]["handoff_ack_cpu_s"] = f"fitted, the rest of the two-CPU ack_cpu_s; {how}"
    hostprofile.validate(d)
    path.write_text(json.dumps(d, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the split into the profile")
    ns = ap.parse_args(argv)
    result = fit()
    ratios = ", ".join(f"{s} B: {r:.3f}" for s, r in result["ratios"].items())
    print(
        f"share {result['k']:g} (grid {result['grid'][0]:g}-{result['grid'][1]:g}"
        f"{', AT A BOUND' if result['at_bound'] else ''}), loss {result['loss']:.4f}; "
        f"one CPU, simulated / kernel: {ratios}"
    )
    if ns.write:
        print(f"wrote {write(result)}")
    return result


if __name__ == "__main__":
    main()

"""The command line: run packetdrill scripts against the simulator.

``python -m models.sim.packetdrill FILE_OR_FOLDER... [--profile NAME]
[--tolerance_usecs N] [--tolerance_percent P] [--tick_phase_usecs US]
[--trace]``

Each ``.pkt`` file (a folder: its ``.pkt`` files, sorted) is run and
reported on one line: ``PASS``, ``FAIL`` with the first mismatch (the
expected segment, the simulated one and their times), ``KNOWN`` for a
failing script listed in :data:`~models.sim.packetdrill.known.KNOWN_DISAGREEMENTS`
(on the profile the scripts describe), ``XPASS`` for a listed script that
now passes, and ``ERROR`` for a script the runner cannot run (the file
and line, and why).  The exit code is 0 when every script passed or is a
known disagreement, 1 otherwise, 2 for bad arguments.

>>> from models.sim.packetdrill import SCRIPTS_DIR
>>> main([str(SCRIPTS_DIR / "nagle_holds_small_segment.pkt")])
PASS   nagle_holds_small_segment.pkt
1 passed, 0 failed (profile linux-6)
0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from models.sim.kernels import PROFILES
from models.sim.packetdrill.known import KNOWN_DISAGREEMENTS, REFERENCE_PROFILE
from models.sim.packetdrill.parser import ScriptError
from models.sim.packetdrill.runner import DEFAULT_TOLERANCE_USECS, run_file

__all__ = ["main", "script_paths"]


def script_paths(targets: Sequence[str]) -> list[Path]:
    """The scripts named by ``targets``: files as given, folders as their
    ``.pkt`` files in name order; ``ValueError`` for a missing path or a
    folder without scripts."""
    paths: list[Path] = []
    for target in targets:
        p = Path(target)
        if p.is_dir():
            found = sorted(p.glob("*.pkt"))
            if not found:
                raise ValueError(f"folder {target!r} holds no .pkt scripts")
            paths.extend(found)
        elif p.is_file():
            paths.append(p)
        else:
            raise ValueError(f"no such file or folder: {target!r}")
    return paths


def _indent(text: str, prefix: str = "       ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``);
    returns the exit code."""
    ap = argparse.ArgumentParser(
        prog="python -m models.sim.packetdrill",
        description="Run packetdrill scripts against the simulator's TCP rules.",
    )
    ap.add_argument("targets", nargs="+", metavar="FILE_OR_FOLDER")
    ap.add_argument(
        "--profile",
        default=REFERENCE_PROFILE,
        choices=sorted(PROFILES),
        help=f"kernel profile (default {REFERENCE_PROFILE})",
    )
    ap.add_argument(
        "--tolerance_usecs",
        type=int,
        default=None,
        help=f"timing tolerance in microseconds (default: the script's, else "
        f"{DEFAULT_TOLERANCE_USECS})",
    )
    ap.add_argument(
        "--tolerance_percent",
        type=float,
        default=None,
        help="dynamic tolerance, percent of the time since the previous event (default: the "
        "script's, else 12.5)",
    )
    ap.add_argument(
        "--tick_phase_usecs",
        type=float,
        default=None,
        help="where time 0 falls in the first timer tick, microseconds (default: half a tick)",
    )
    ap.add_argument("--trace", action="store_true", help="print every script's segments")
    args = ap.parse_args(argv)
    if args.tolerance_usecs is not None and args.tolerance_usecs < 0:
        ap.error(f"--tolerance_usecs must be >= 0 (us), got {args.tolerance_usecs}")
    try:
        paths = script_paths(args.targets)
    except ValueError as e:
        ap.error(str(e))
    excused = args.profile == REFERENCE_PROFILE
    counts = {"PASS": 0, "FAIL": 0, "KNOWN": 0, "XPASS": 0, "ERROR": 0}
    for path in paths:
        known = KNOWN_DISAGREEMENTS.get(path.name) if excused else None
        try:
            out = run_file(
                path,
                args.profile,
                args.tolerance_usecs,
                args.tick_phase_usecs,
                args.tolerance_percent,
            )
        except ScriptError as e:
            counts["ERROR"] += 1
            print(f"ERROR  {e}")
            continue
        if out.passed:
            status = "XPASS" if known else "PASS"
        else:
            status = "KNOWN" if known else "FAIL"
        counts[status] += 1
        note = ""
        if status == "KNOWN":
            note = f"  (known disagreement: {known})"
        elif status == "XPASS":
            note = "  (listed in KNOWN_DISAGREEMENTS but passes: remove it from the list)"
        print(f"{status:<6} {path.name}{note}")
        if out.mismatch is not None:
            print(_indent(str(out.mismatch)))
        if args.trace:
            print(_indent(out.trace_text()))
    failed = counts["FAIL"] + counts["ERROR"] + counts["XPASS"]
    extra = "".join(f", {counts[k]} {k.lower()}" for k in ("KNOWN", "XPASS", "ERROR") if counts[k])
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed{extra} (profile {args.profile})")
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

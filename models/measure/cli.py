"""The parser of ``python -m models.measure``: commands, flags with their bounds, and flag checks.

Every flag that takes a value is typed with a :mod:`models.measure.cli_args` helper, so a value out of
its documented bounds is a one-line error naming the flag and the allowed range (exit status 2).  After
parsing, :func:`check` refuses combinations a link or the host would ignore: ``--mtu``, ``--rate`` and
``--offloads`` on the loopback, ``--isolate`` on a veth, and ``--pcap``, ``--capture`` or ``--pcap-dir``
where tcpdump cannot capture.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .. import framing
from ..kernel import stall_end
from . import capture
from .cli_args import (
    MTU_RANGE,
    RATE_RANGE,
    OneLineParser,
    bounded_float,
    bounded_int,
    cc_name,
    folder,
    link_list,
    new_file,
    rate,
    table_prefix,
)
from .netns import MTU_MAX, MTU_MIN
from .plan import LINK_LABELS, PLANS
from .runner import (
    CC_LOG_EVERY_MAX,
    CLIENT_SOCK_MODES,
    COUNT_MAX,
    DURATION_MAX_S,
    PAYLOAD_MAX_BYTES,
    PIN_MODES,
    PROTOCOLS,
    QD_MAX,
    SOCK_MODES,
    WARMUP_MAX_S,
    pin_cpus,
)

__all__ = ["parser", "subparser", "check", "USAGE", "DEFAULT_MTU", "SMOKE_MAX_S"]

#: Longest smoke window per run, seconds (the smoke check takes a few seconds).
SMOKE_MAX_S = 60.0
#: Default veth MTU, bytes.
DEFAULT_MTU = 1500

USAGE = """Command line of the kernel measurement harness.

::

    python -m models.measure info                 # kernel, HZ, sysctls, loopback MTU/MSS, tools (JSON)
    python -m models.measure smoke                # a few seconds on loopback; exit status 0 if it behaves
    python -m models.measure run  --proto iscsi --sock nagle --qd 1 --iosize 512 [--link veth --mtu 1500]
    python -m models.measure sweep [--out DIR] [--prefix kernel6] [--quick] [--links ...]
    python -m models.measure analyze FILE.pcap [--server-port P] [--json]   # verdict, cause, fix
    python -m models.measure cleanup              # remove namespaces left by a killed harness (root)
    python -m models.measure costs [--json] [--quick]      # wake-up, send() and recv() costs
    python -m models.measure calibrate [--out FILE] [--tries N] [--quick]  # this machine's profile

Normal users get the host loopback; root also gets veth pairs between namespaces the harness creates and
always deletes.  See ``python -m models.measure COMMAND --help``.
"""


def _capture_problem() -> str | None:
    """Why tcpdump cannot capture here, or ``None`` if it can."""
    if capture.tcpdump_path() is None:
        return "tcpdump is not installed (apt-get install tcpdump)"
    if os.geteuid() != 0:
        return "capturing needs root (CAP_NET_RAW)"
    return None


def _check_run(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse flags the chosen link would ignore, and a capture that cannot be taken."""
    if args.link == "loopback":
        why = {
            "mtu": "the kernel fixes the loopback's MTU at 65536 bytes",
            "rate": "a tbf rate limit on the host's lo would slow every program on the host",
            "offloads": "the host's lo is not the harness's to change",
            "burst": "it sizes the veth's tbf rate limit",
        }
        for flag, reason in why.items():
            if getattr(args, flag) is not None:
                p.error(f"argument --{flag}: applies to --link veth only ({reason})")
    elif args.isolate:
        p.error(
            "argument --isolate: applies to --link loopback only (a veth link always runs "
            "between namespaces of its own)"
        )
    elif args.burst is not None and args.rate is None:
        p.error("argument --burst: needs --rate (it is the depth of the rate limit's bucket)")
    try:
        pin_cpus(args.pin)
    except ValueError as exc:
        p.error(f"argument --pin: {exc}")
    if args.pcap is not None and args.capture is False:
        p.error("argument --pcap: keeping a capture needs one; drop --no-capture")
    if args.pcap is not None or args.capture:
        problem = _capture_problem()
        if problem:
            flag = "--pcap" if args.pcap is not None else "--capture"
            p.error(f"argument {flag}: {problem}")


def _check_sweep(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    try:
        pin_cpus(args.pin)
    except ValueError as exc:
        p.error(f"argument --pin: {exc}")
    if args.pcap_dir is not None and not args.dry_run:
        problem = _capture_problem()
        if problem:
            p.error(f"argument --pcap-dir: {problem}")


#: Bounds of ``calibrate --tries`` (each try takes about 15 s).
TRIES_RANGE = (1, 10)


def _check_calibrate(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not args.out.parent.is_dir():
        p.error(f"argument --out: folder {args.out.parent} does not exist")
    lo, hi = TRIES_RANGE
    if not lo <= args.tries <= hi:
        p.error(f"argument --tries: must be {lo}..{hi}, got {args.tries}")


def _run_parser(sub: Any) -> argparse.ArgumentParser:
    run = sub.add_parser("run", help="one bounded run, printed as text or JSON")
    run.add_argument(
        "--proto",
        choices=sorted(PROTOCOLS),
        default="iscsi",
        help="flory: 8-byte request, 8-byte descriptor + payload; iscsi: 48 + 48 + payload",
    )
    run.add_argument(
        "--sock", choices=SOCK_MODES, default="nagle", help="server socket mode (default nagle)"
    )
    run.add_argument(
        "--client-sock", choices=CLIENT_SOCK_MODES, default="nagle", help="client socket mode"
    )
    run.add_argument(
        "--pin",
        choices=PIN_MODES,
        default="none",
        help="where the server and client processes run: none (the scheduler decides), same "
        "(both on one CPU), apart (each on a CPU of its own; needs two)",
    )
    run.add_argument(
        "--qd",
        type=bounded_int(1, QD_MAX),
        default=1,
        help=f"requests kept outstanding, 1..{QD_MAX} (default 1)",
    )
    _add_iosize(run)
    run.add_argument(
        "--cc-log-every",
        type=bounded_int(0, CC_LOG_EVERY_MAX),
        default=0,
        help="read the server socket's congestion state (TCP_INFO, TCP_CC_INFO, SO_MEMINFO) "
        f"before every N-th response, 0..{CC_LOG_EVERY_MAX} (default 0: never); the JSON "
        "report's server gains cc_log",
    )
    run.add_argument(
        "--duration",
        type=bounded_float(0, DURATION_MAX_S, lo_open=True),
        default=2.0,
        help=f"measurement window, seconds, (0, {DURATION_MAX_S:g}] (default 2)",
    )
    run.add_argument(
        "--warmup",
        type=bounded_float(0, WARMUP_MAX_S),
        default=0.3,
        help=f"warm-up excluded from statistics, seconds, [0, {WARMUP_MAX_S:g}] (default 0.3)",
    )
    run.add_argument(
        "--count",
        type=bounded_int(1, COUNT_MAX),
        default=10_000_000,
        help=f"stop after this many operations, 1..{COUNT_MAX} (default 10000000)",
    )
    run.add_argument(
        "--cc",
        type=cc_name,
        default=None,
        help="congestion control per socket, 1..15 letters, digits or _, e.g. cubic "
        "(default: the system's)",
    )
    run.add_argument(
        "--link", choices=("loopback", "veth"), default="loopback", help="veth needs root"
    )
    run.add_argument(
        "--isolate",
        action="store_true",
        help="loopback inside a private namespace (root; --link loopback only)",
    )
    run.add_argument(
        "--mtu",
        type=bounded_int(MTU_MIN, MTU_MAX, "bytes"),
        default=None,
        help=f"veth MTU, bytes, {MTU_RANGE} (default {DEFAULT_MTU}; --link veth only)",
    )
    run.add_argument(
        "--rate",
        type=rate,
        default=None,
        help=f"veth tbf rate limit, {RATE_RANGE}, e.g. 1g (default none; --link veth only)",
    )
    run.add_argument(
        "--burst",
        type=bounded_int(*framing.TBF_BURST_RANGE),
        default=None,
        help="depth of the tbf rate limit's bucket in full frames, "
        f"{framing.TBF_BURST_RANGE[0]}..{framing.TBF_BURST_RANGE[1]} (default "
        f"{framing.TBF_BURST_FRAMES}; with --rate)",
    )
    run.add_argument(
        "--offloads",
        choices=("default", "off"),
        default=None,
        help="veth TSO/GSO/GRO (default: the driver's; --link veth only)",
    )
    cap = run.add_mutually_exclusive_group()
    cap.add_argument(
        "--capture",
        dest="capture",
        action="store_true",
        default=None,
        help="require a tcpdump capture (needs tcpdump and root; default: capture if possible)",
    )
    cap.add_argument("--no-capture", dest="capture", action="store_false")
    run.add_argument(
        "--pcap",
        type=new_file,
        default=None,
        help="keep the capture in this file (in an existing folder; needs tcpdump and root)",
    )
    run.add_argument(
        "--describe", action="store_true", help="print the link's sysctls/MTU/offloads to stderr"
    )
    run.add_argument("--json", action="store_true", help="print both sides' full reports as JSON")
    run.set_defaults(check=_check_run)
    return run


def _sweep_parser(sub: Any) -> argparse.ArgumentParser:
    sw = sub.add_parser(
        "sweep",
        help="the standard sweep: writes <prefix>_{flory,iscsi_loop,busy_counts}.csv/.json",
    )
    sw.add_argument(
        "--out",
        type=folder,
        default=Path("_build/measure/sweep"),
        help="output folder, created if missing (default _build/measure/sweep; the bundled "
        "dataset used --out data)",
    )
    sw.add_argument(
        "--prefix",
        type=table_prefix,
        default="kernel6",
        help="table name prefix, 1..40 lower-case letters, digits or _ (default kernel6)",
    )
    sw.add_argument(
        "--plan",
        choices=PLANS,
        default="standard",
        help="standard: the book's first sweep (Nagle client); field: both client modes, "
        "512 B-64 KiB, reno/cubic variants; flory: only the Flory runs; repeat: a seeded "
        "sample of the field runs, measured again; pacing: bbr, reno and cubic on the veth "
        "links; burst: the 1 Gb/s veth with tbf buckets of 2-40 frames; stallend: a Nagle "
        "server at every QD where its stall may end (see --dry-run)",
    )
    sw.add_argument("--quick", action="store_true", help="0.5 s windows instead of 1.5 s")
    sw.add_argument(
        "--links",
        type=link_list(LINK_LABELS),
        default=None,
        help=f"comma-separated subset of {','.join(LINK_LABELS)} (veth links need root)",
    )
    sw.add_argument(
        "--no-cubic", action="store_true", help="skip the cubic congestion-control variant"
    )
    sw.add_argument(
        "--raw",
        action="store_true",
        help="also write every run's full report to <prefix>_raw.jsonl",
    )
    sw.add_argument(
        "--pcap-dir",
        type=folder,
        default=None,
        help="keep the Flory captures in this folder, created if missing (needs tcpdump and root)",
    )
    sw.add_argument(
        "--pin",
        choices=PIN_MODES,
        default="none",
        help="where every run's server and client run (as run --pin; default none: the "
        "scheduler decides)",
    )
    sw.add_argument("--dry-run", action="store_true", help="list the runs and exit")
    sw.set_defaults(check=_check_sweep)
    return sw


def _add_iosize(p: argparse.ArgumentParser) -> None:
    """The ``--iosize`` flag of ``run`` and ``stall-end``."""
    p.add_argument(
        "--iosize",
        type=bounded_int(0, PAYLOAD_MAX_BYTES, "bytes"),
        default=512,
        help=f"payload bytes per response (Flory's N), 0..{PAYLOAD_MAX_BYTES} (default 512)",
    )


#: The host profile that ``stall-end`` reads without ``--host`` (the machine chapter 4 measured).
STALL_END_PROFILE = stall_end.PROFILE


def parser() -> argparse.ArgumentParser:
    """The command line's parser (commands ``info``, ``smoke``, ``run``, ``sweep``, ``analyze``, ``cleanup``)."""
    p = OneLineParser(
        prog="python -m models.measure",
        description=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)

    info = sub.add_parser(
        "info", help="print kernel version, HZ, sysctls, loopback interface, tools (JSON)"
    )
    info.add_argument(
        "--mss", action="store_true", help="also open a loopback connection and report its MSS"
    )

    sm = sub.add_parser(
        "smoke", help="few-second loopback check: Nagle + two sends stalls, MSG_MORE does not"
    )
    sm.add_argument(
        "--duration",
        type=bounded_float(0, SMOKE_MAX_S, lo_open=True),
        default=0.6,
        help=f"window per run, seconds, (0, {SMOKE_MAX_S:g}] (default 0.6)",
    )
    _run_parser(sub)
    _sweep_parser(sub)
    sub.add_parser(
        "analyze",
        add_help=False,
        help="diagnose a pcap/pcapng capture: operations, latency, gaps, verdict, cause and fix "
        "(python -m models.measure analyze --help)",
    )
    sub.add_parser(
        "cleanup", help="remove namespaces left behind by a harness that was killed (root)"
    )
    costs = sub.add_parser(
        "costs",
        help="microbenchmarks on the loopback: thread wake-up (pipe, futex, a TCP socket in "
        "poll(), a ping-pong), send() CPU for 48 B-64 KiB, recv() CPU per segment, a pure ACK, "
        "bbr's pacing timer, with the machine's settings (about 13 s)",
    )
    costs.add_argument("--json", action="store_true", help="print everything as one JSON object")
    costs.add_argument(
        "--quick", action="store_true", help="fewer samples: about two seconds, noisier (tests)"
    )
    cal = sub.add_parser(
        "calibrate",
        help="costs + a tbf watchdog's lateness on a veth pair + a short loopback sweep (8 "
        "runs) + a fit of what cannot be measured: "
        "writes this machine's host profile for python -m models.sim --host FILE",
    )
    cal.add_argument(
        "--out",
        type=Path,
        default=Path("_build/measure/host-profile.json"),
        help="profile file to write, in an existing folder (default "
        "_build/measure/host-profile.json)",
    )
    cal.add_argument(
        "--quick", action="store_true", help="quick costs and 0.15 s windows (tests; noisier)"
    )
    cal.add_argument(
        "--tries",
        type=int,
        default=1,
        help=f"calibrate this many times ({TRIES_RANGE[0]}..{TRIES_RANGE[1]}) and keep the "
        "profile whose fit matched its own runs best (the lowest fit.loss); chapter 9 shows why "
        "(default 1)",
    )
    cal.set_defaults(check=_check_calibrate)
    se = sub.add_parser(
        "stall-end",
        help="from a host profile: the deepest queue at which a Nagle server keeps stalling on "
        "the delayed ACK of a TCP_NODELAY client (the Linux initiator), chapter 4",
    )
    se.add_argument(
        "--host",
        type=Path,
        default=None,
        help=f"host profile (JSON, e.g. from calibrate; default the book's {STALL_END_PROFILE})",
    )
    _add_iosize(se)
    se.add_argument(
        "--mtu",
        type=bounded_int(MTU_MIN, framing.MAX_MTU, "bytes"),
        default=framing.MAX_MTU,
        help=f"path MTU, bytes, {MTU_MIN}..{framing.MAX_MTU} (default {framing.MAX_MTU}, the "
        "loopback's)",
    )
    se.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return p


def subparser(p: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of one command (its errors carry the command's name)."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise KeyError(command)  # pragma: no cover - every command has a parser


def check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse flag combinations of the parsed command (``p.error``: one line, exit status 2)."""
    if getattr(args, "check", None) is not None:
        args.check(subparser(p, args.command), args)

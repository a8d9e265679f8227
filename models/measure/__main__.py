"""``python -m models.measure``: the kernel measurement harness's commands (``--help`` lists them).

The commands are here (``info``, ``smoke``, ``run``, ``sweep``, ``cleanup``, ``costs``,
``calibrate``: :mod:`models.measure.costs` and :mod:`models.measure.profile`; ``stall-end``:
:mod:`models.kernel.stall_end`; ``analyze`` is
:func:`models.measure.diagnose.main`); the parser, each flag's bounds and the checks of flag
combinations are in :mod:`models.measure.cli`.  Exit status 0 on success, 1 when ``smoke`` finds the
kernel misbehaving, 2 for a refused flag or a failed run (one ``error:`` line), 130 on Ctrl-C or
SIGTERM, 141 when the reader of standard output went away.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from typing import Any

from models.data.cli import SIGPIPE_STATUS, silence_stdout

from .. import framing
from . import build, cli, netns, sysinfo
from .capture import summarise_spreads
from .cli import DEFAULT_MTU
from .netns import Link, LinkSpec, is_root
from .runner import RunSpec, run_one

__all__ = ["main", "smoke"]


def _link_spec(args: argparse.Namespace) -> LinkSpec:
    if args.link == "loopback":
        return LinkSpec("loopback", isolate=args.isolate)
    return LinkSpec(
        "veth",
        mtu=DEFAULT_MTU if args.mtu is None else args.mtu,
        rate_bits_per_s=args.rate,
        offloads=args.offloads or "default",
        burst_frames=framing.TBF_BURST_FRAMES if args.burst is None else args.burst,
    )


def smoke(duration_s: float = 0.6) -> dict[str, Any]:
    """A few-second check on the host loopback (no privileges needed).

    Two runs of the iSCSI-like loop at QD 1 with 512-byte reads: with Nagle and two sends the response's
    data waits for the client's delayed ACK (an exchange of about 40 ms plus timer rounding), with MSG_MORE
    on the header it does not (well under a millisecond).  Returns the numbers and ``ok``.
    """
    out: dict[str, Any] = {}
    with Link(LinkSpec("loopback")) as link:
        for mode in ("nagle", "more"):
            r = run_one(
                RunSpec("iscsi", mode, 1, 512, duration_s=duration_s, warmup_s=0.2, capture=False),
                link,
            )
            out[mode] = {
                "iops": r.client["iops"],
                "lat_p50_us": r.client["lat_p50_us"],
                "stalled_ops": r.client["stalled_ops"],
                "window_ops": r.client["window_ops"],
                "mss_bytes": r.server["tcp_maxseg_bytes"],
                "cc": r.server.get("cc"),
                "server_data_segments_per_op": r.server["tcp_info"]["data_segs_out"]
                / max(r.server["ops"], 1),
            }
    # Delayed-ACK minimum is 40 ms (HZ/25 jiffies); the timer fires on a jiffy tick, so allow up to 60 ms.
    n, m = out["nagle"], out["more"]
    out["checks"] = {
        "nagle_stalls_36_to_60_ms": 36_000 <= n["lat_p50_us"] <= 60_000,
        "more_does_not_stall": m["lat_p50_us"] < 20_000 and m["stalled_ops"] == 0,
        "more_one_segment_per_response": 0.9 <= m["server_data_segments_per_op"] <= 1.1,
    }
    out["ok"] = all(out["checks"].values())
    return out


def _cmd_info(args: argparse.Namespace) -> int:
    info = {
        "kernel": sysinfo.kernel_info(),
        "load": sysinfo.load_average(),
        "tools": sysinfo.tool_versions(),
        "root": is_root(),
        "qdperf_source_sha256": build.source_sha256(),
        "namespace": sysinfo.namespace_info(("lo",)),
    }
    if args.mss:
        with Link(LinkSpec("loopback")) as link:
            r = run_one(
                RunSpec("flory", "nodelay", 1, 70000, duration_s=0.3, warmup_s=0.1, capture=False),
                link,
            )
            info["loopback_mss_bytes"] = r.server["tcp_maxseg_bytes"]
            info["loopback_advmss_bytes"] = r.server["tcp_info"]["advmss"]
    print(json.dumps(info, indent=2))
    return 0


def _cmd_smoke(args: argparse.Namespace) -> int:
    res = smoke(args.duration)
    print(json.dumps(res, indent=2))
    return 0 if res["ok"] else 1


def _cmd_run(args: argparse.Namespace) -> int:
    spec = RunSpec(
        args.proto,
        args.sock,
        args.qd,
        args.iosize,
        duration_s=args.duration,
        warmup_s=args.warmup,
        count=args.count,
        cc=args.cc,
        client_sock=args.client_sock,
        capture=True if args.pcap is not None else args.capture,
        pin=args.pin,
        cc_log_every=args.cc_log_every,
    )
    with Link(_link_spec(args)) as link:
        res = run_one(spec, link, keep_pcap=args.pcap)
        if args.describe:
            print(json.dumps(link.describe(), indent=2), file=sys.stderr)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
        return 0
    c, s = res.client, res.server
    print(
        f"link {res.link_label}  proto {spec.proto}  sock {spec.sock}  client {spec.client_sock}  cc {s.get('cc')}  "
        f"qd {spec.qd}  payload {spec.payload_bytes} bytes  mss {s['tcp_maxseg_bytes']} bytes"
        + (f"  pin {spec.pin}" if spec.pin != "none" else "")
    )
    print(
        f"  ops {c['window_ops']} in {c['window_s']:.3f} s = {c['iops']:.1f} IOPS; "
        f"latency p10/p50/p90/p99/max {c['lat_p10_us']:.1f}/{c['lat_p50_us']:.1f}/"
        f"{c['lat_p90_us']:.1f}/{c['lat_p99_us']:.1f}/{c['lat_max_us']:.1f} us"
    )
    print(
        f"  stalled (> 20 ms) {c['stalled_ops']} ops, mean {c['stall_mean_us'] / 1e3:.1f} ms"
        if c["stalled_ops"]
        else "  no stalled operations"
    )
    ops = max(s["ops"], 1)
    print(
        f"  server data segments/op {s['tcp_info']['data_segs_out'] / ops:.3f}; busy counts {s['busy_hist']}"
    )
    delack = c.get("netstat_delta", {}).get("TcpExtDelayedACKs")
    print(
        f"  delayed ACKs (namespace counter{'' if res.link_label != 'loopback' or args.isolate else ', host-wide'}):"
        f" {delack}"
    )
    if res.capture_summary:
        cs = res.capture_summary
        sp = summarise_spreads(cs["response_spread_us"])
        print(
            f"  capture: {cs['packets']} packets, server data segments {cs['server_data_segments']}, client pure ACKs "
            f"{cs['client_pure_acks']}, response spread median {sp['median_us']:.1f} us max {sp['max_us']:.1f} us, "
            f"gaps > 20 ms: {len(cs['gaps_ms'])}"
        )
    else:
        print(f"  capture: none ({res.capture_note or 'not requested'})")
    print(
        f"  load average {res.load_before} -> {res.load_after}; other processes used "
        f"{res.other_cpu_pct:g} % of the CPUs' time during the run"
    )
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .plan import (  # noqa: PLC0415 - keep `--help` fast
        burst_plan,
        field_plan,
        flory_plan,
        pacing_plan,
        pinned,
        repeat_plan,
        stall_end_plan,
    )
    from .sweep import run_sweep, standard_plan  # noqa: PLC0415 - keep `--help` fast

    make_plan = {
        "field": field_plan,
        "flory": flory_plan,
        "repeat": repeat_plan,
        "pacing": pacing_plan,
        "burst": burst_plan,
        "stallend": stall_end_plan,
    }.get(args.plan, standard_plan)
    plan = make_plan(quick=args.quick, links=args.links, cubic=not args.no_cubic)
    if args.pin != "none":
        plan = pinned(plan, args.pin)
    if args.dry_run:
        for pr in plan:
            print(pr.link.label, pr.table, pr.spec)
        print(f"{len(plan)} runs", file=sys.stderr)
        return 0
    if not plan:
        where = "these links" if args.links else "the links this user may create"
        raise ValueError(
            f"the {args.plan} plan has no runs on {where} (veth links need root; see --dry-run)"
        )
    if not is_root():
        print(
            "not root: measuring on the host loopback only (veth links need root)", file=sys.stderr
        )
    cmd = " ".join(shlex.quote(a) for a in ["python", "-m", "models.measure", *(args.argv or [])])
    if args.pcap_dir is not None:
        args.pcap_dir.mkdir(parents=True, exist_ok=True)
    written = run_sweep(
        plan, args.out, prefix=args.prefix, raw=args.raw, command_line=cmd, pcap_dir=args.pcap_dir
    )
    for table, path in written.items():
        print(f"{table}: {path} (+ {path.with_suffix('.json').name})")
    return 0


def _cmd_cleanup(args: argparse.Namespace) -> int:
    removed = netns.cleanup_stale() if is_root() else []
    print(
        json.dumps({"removed": removed, "remaining": netns.live_namespaces() if is_root() else []})
    )
    return 0


def _cmd_costs(args: argparse.Namespace) -> int:
    from .costs import format_costs, run_costs  # noqa: PLC0415 - keep `--help` fast

    res = run_costs(quick=args.quick)
    print(json.dumps(res, indent=2) if args.json else format_costs(res))
    return 0


def _tbf_watchdog(quick: bool) -> dict | None:
    """The tbf watchdog's lateness for the profile (:func:`models.measure.tbftimer.calibration`),
    or ``None`` with a warning when it cannot be measured here (no ``tbf``, one CPU): the
    profile then leaves ``tbf_late_s`` out and the simulator's wake-up proxy stands in."""
    from .tbftimer import calibration  # noqa: PLC0415

    try:
        got = calibration(quick=quick)
    except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as e:
        print(f"warning: tbf watchdog not measured ({e}); tbf_late_s left out", file=sys.stderr)
        return None
    late, lo, hi = (got[k] for k in ("late_us", "late_p10_us", "late_p90_us"))
    print(
        f"tbf watchdog: {got['frames']} frames waited, late {late:.1f} us median "
        f"(10th-90th percentile {lo:.1f}-{hi:.1f} us), {got['bursts_out']} of "
        f"{got['bursts']} bursts left out ({got['rounds']} rounds)",
        file=sys.stderr,
    )
    return got


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from .costs import format_costs, run_costs  # noqa: PLC0415 - keep `--help` fast
    from .hostfields import TBF_RECORD  # noqa: PLC0415
    from .profile import (  # noqa: PLC0415
        FIT_EVALUATIONS,
        at_bound_lines,
        build_profile,
        calibration_sweep,
    )

    watchdog = _tbf_watchdog(args.quick)
    tries = []
    for k in range(args.tries):
        costs = run_costs(quick=args.quick)
        if watchdog:  # measured once: the fit's loopback runs have no rate limit
            costs["costs"][TBF_RECORD] = watchdog
        print(format_costs(costs), file=sys.stderr)
        rows, repeats = calibration_sweep(quick=args.quick)
        # with the busy run among the rows the fit tells a thread's CPU per wake-up from the
        # work per message, so it searches that too
        tries.append(
            build_profile(
                costs,
                rows,
                max_evaluations=120 if args.quick else FIT_EVALUATIONS,
                fit_wake_cpu=True,
                busy_repeats=repeats,
            )
        )
        if args.tries > 1:
            print(f"try {k + 1} of {args.tries}: fit loss {tries[-1]['fit']['loss']:.4f}")
    profile = min(tries, key=lambda d: d["fit"]["loss"])  # the first of equal losses
    if args.tries > 1:
        # each try's start and loss, so the kept profile says what it was chosen from
        profile["fit"]["tries"] = [
            {"date": d["machine"]["date"], "loss": d["fit"]["loss"]} for d in tries
        ]
        print(f"kept the try started {profile['machine']['date']} (lowest fit loss)")
    args.out.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
    for name, value in profile["host"].items():
        if isinstance(value, list):  # a curve: (idle, latency) points
            shown = ", ".join(f"{i * 1e6:g}: {w * 1e6:.1f}" for i, w in value)  # s -> us
            print(f"{name} = idle us: latency us {shown}  ({profile['provenance'][name]})")
            continue
        print(f"{name} = {value * 1e6:.3f} us  ({profile['provenance'][name]})")  # s -> us
    for line in at_bound_lines(profile):
        print(f"warning: {line}", file=sys.stderr)
    print(f"host profile: {args.out} (python -m models.sim --host {args.out})")
    return 0


def _cmd_stall_end(args: argparse.Namespace) -> int:
    from models.kernel.stall_end import format_stall_end, stall_end  # noqa: PLC0415
    from models.sim import hostprofile  # noqa: PLC0415

    source = args.host if args.host is not None else hostprofile.shipped(cli.STALL_END_PROFILE)
    res = stall_end(source, payload=args.iosize, mtu=args.mtu)
    name = str(args.host) if args.host is not None else f"{cli.STALL_END_PROFILE} (the book's)"
    print(json.dumps({"host": name, **res}) if args.json else format_stall_end(res, name))
    return 0


COMMANDS = {
    "stall-end": _cmd_stall_end,
    "costs": _cmd_costs,
    "calibrate": _cmd_calibrate,
    "info": _cmd_info,
    "smoke": _cmd_smoke,
    "run": _cmd_run,
    "sweep": _cmd_sweep,
    "cleanup": _cmd_cleanup,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "analyze":  # reads a file: no namespaces, its own options
        from .diagnose import main as analyze

        return analyze(argv[1:])
    p = cli.parser()
    args = p.parse_args(argv)
    cli.check(p, args)
    args.argv = argv
    netns.install_signal_handlers()
    try:
        code = int(COMMANDS[args.command](args))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:
        silence_stdout()
        return SIGPIPE_STATUS
    except KeyboardInterrupt:
        print("interrupted; namespaces removed", file=sys.stderr)
        return 130
    except (RuntimeError, PermissionError, ValueError) as exc:
        # BuildError, HarnessError, SchemaError and the namespace commands' errors are
        # RuntimeErrors
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

"""Command line of the kernel measurement harness.

::

    python -m models.measure info                 # kernel, HZ, sysctls, loopback MTU/MSS, tools (JSON)
    python -m models.measure smoke                # a few seconds on loopback; exit status 0 if it behaves
    python -m models.measure run  --proto iscsi --sock nagle --qd 1 --iosize 512 [--link veth --mtu 1500]
    python -m models.measure sweep [--out DIR] [--prefix kernel6] [--quick] [--links ...]
    python -m models.measure analyze FILE.pcap [--server-port P] [--json]   # verdict, cause, fix
    python -m models.measure cleanup              # remove namespaces left by a killed harness (root)

Normal users get the host loopback; root also gets veth pairs between namespaces the harness creates and
always deletes.  See ``python -m models.measure COMMAND --help``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from . import build, netns, sysinfo
from .capture import summarise_spreads
from .netns import Link, LinkSpec, is_root
from .runner import CLIENT_SOCK_MODES, PROTOCOLS, SOCK_MODES, HarnessError, RunSpec, run_one

__all__ = ["main", "smoke"]


def _rate(text: str) -> int:
    """Parse a rate such as ``1g``, ``100m`` or ``1000000000`` into bits per second."""
    t = text.strip().lower().removesuffix("bit").removesuffix("bps").removesuffix("b")
    mult = {"k": 10**3, "m": 10**6, "g": 10**9}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if mult != 1 else t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"rate must look like 1g, 100m or 1000000000, got {text!r}"
        ) from None
    return int(value)


def _link_spec(args: argparse.Namespace) -> LinkSpec:
    if args.link == "loopback":
        return LinkSpec("loopback", isolate=args.isolate)
    return LinkSpec("veth", mtu=args.mtu, rate_bits_per_s=args.rate, offloads=args.offloads)


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
        capture=args.capture,
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
    print(f"  load average {res.load_before} -> {res.load_after}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import run_sweep, standard_plan  # noqa: PLC0415 - keep `--help` fast

    plan = standard_plan(
        quick=args.quick,
        links=args.links.split(",") if args.links else None,
        cubic=not args.no_cubic,
    )
    if args.dry_run:
        for pr in plan:
            print(pr.link.label, pr.table, pr.spec)
        print(f"{len(plan)} runs", file=sys.stderr)
        return 0
    if not is_root():
        print(
            "not root: measuring on the host loopback only (veth links need root)", file=sys.stderr
        )
    cmd = " ".join(shlex.quote(a) for a in ["python", "-m", "models.measure", *(args.argv or [])])
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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m models.measure",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)

    info = sub.add_parser(
        "info", help="print kernel version, HZ, sysctls, loopback interface, tools (JSON)"
    )
    info.add_argument(
        "--mss", action="store_true", help="also open a loopback connection and report its MSS"
    )
    info.set_defaults(func=_cmd_info)

    sm = sub.add_parser(
        "smoke", help="few-second loopback check: Nagle + two sends stalls, MSG_MORE does not"
    )
    sm.add_argument(
        "--duration", type=float, default=0.6, help="window per run, seconds (default 0.6)"
    )
    sm.set_defaults(func=_cmd_smoke)

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
    run.add_argument("--qd", type=int, default=1, help="requests kept outstanding (default 1)")
    run.add_argument(
        "--iosize",
        type=int,
        default=512,
        help="payload bytes per response (Flory's N; default 512)",
    )
    run.add_argument(
        "--duration", type=float, default=2.0, help="measurement window, seconds (default 2)"
    )
    run.add_argument(
        "--warmup", type=float, default=0.3, help="warm-up excluded from statistics, seconds"
    )
    run.add_argument(
        "--count", type=int, default=10_000_000, help="stop after this many operations"
    )
    run.add_argument(
        "--cc",
        default=None,
        help="congestion control per socket, e.g. cubic (default: the system's)",
    )
    run.add_argument(
        "--link", choices=("loopback", "veth"), default="loopback", help="veth needs root"
    )
    run.add_argument(
        "--isolate", action="store_true", help="loopback inside a private namespace (root)"
    )
    run.add_argument("--mtu", type=int, default=1500, help="veth MTU, bytes (default 1500)")
    run.add_argument(
        "--rate", type=_rate, default=None, help="veth tbf rate limit, e.g. 1g (default none)"
    )
    run.add_argument(
        "--offloads", choices=("default", "off"), default="default", help="veth TSO/GSO/GRO"
    )
    cap = run.add_mutually_exclusive_group()
    cap.add_argument(
        "--capture",
        dest="capture",
        action="store_true",
        default=None,
        help="require a tcpdump capture (default: capture if possible)",
    )
    cap.add_argument("--no-capture", dest="capture", action="store_false")
    run.add_argument("--pcap", type=Path, default=None, help="keep the capture in this file")
    run.add_argument(
        "--describe", action="store_true", help="print the link's sysctls/MTU/offloads to stderr"
    )
    run.add_argument("--json", action="store_true", help="print both sides' full reports as JSON")
    run.set_defaults(func=_cmd_run)

    sw = sub.add_parser(
        "sweep",
        help="the standard sweep: writes <prefix>_{flory,iscsi_loop,busy_counts}.csv/.json",
    )
    sw.add_argument(
        "--out",
        type=Path,
        default=Path("_build/measure/sweep"),
        help="output folder (default _build/measure/sweep; the bundled dataset used --out data)",
    )
    sw.add_argument("--prefix", default="kernel6", help="table name prefix (default kernel6)")
    sw.add_argument("--quick", action="store_true", help="0.5 s windows instead of 1.5 s")
    sw.add_argument(
        "--links",
        default=None,
        help="comma-separated subset of loopback,veth-1500,veth-9000,veth-1500-1g",
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
        "--pcap-dir", type=Path, default=None, help="keep the Flory captures in this folder"
    )
    sw.add_argument("--dry-run", action="store_true", help="list the runs and exit")
    sw.set_defaults(func=_cmd_sweep)

    sub.add_parser(
        "analyze",
        add_help=False,
        help="diagnose a pcap/pcapng capture: operations, latency, gaps, verdict, cause and fix "
        "(python -m models.measure analyze --help)",
    )
    cl = sub.add_parser(
        "cleanup", help="remove namespaces left behind by a harness that was killed (root)"
    )
    cl.set_defaults(func=_cmd_cleanup)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "analyze":  # reads a file: no namespaces, its own options
        from .diagnose import main as analyze

        return analyze(argv[1:])
    args = _parser().parse_args(argv)
    args.argv = argv
    netns.install_signal_handlers()
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted; namespaces removed", file=sys.stderr)
        return 130
    except (build.BuildError, HarnessError, PermissionError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

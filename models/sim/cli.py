"""Command line: ``python -m models.sim [options]``.

Prints a short summary, the packet trace with ``--trace``, or one JSON object with ``--json``.  Bad
parameters exit with status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from models.sim.engine import simulate
from models.sim.kernels import PROFILES
from models.sim.scenario import SIDES, Scenario

__all__ = ["main", "build_parser"]

_D = Scenario()


def _sizes(text: str) -> tuple:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip() != "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated byte counts such as 48,512, got {text!r}") from None
    if not sizes:
        raise argparse.ArgumentTypeError("expected at least one send() size in bytes")
    return sizes


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:g} us"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m models.sim",
        description="Simulate one TCP connection carrying a closed loop of request/response operations "
                    "(counting level: every send(), segment and ACK). Defaults: an iSCSI 512-byte read over "
                    "1 Gb/s Ethernet, MTU 1500, Nagle on, linux-6, stage times from Butterfield (2017).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    a = p.add_argument
    a("--qd", type=int, default=_D.qd, help="queue depth: operations kept outstanding (operations)")
    a("--request-writes", type=_sizes, default=_D.request_writes, metavar="BYTES[,BYTES...]",
      help="send() call sizes of one request, bytes, comma-separated")
    a("--response-writes", type=_sizes, default=_D.response_writes, metavar="BYTES[,BYTES...]",
      help="send() call sizes of one response, bytes, comma-separated (48,512: header then data)")
    a("--setup-writes", type=_sizes, default=None, metavar="REQ,RESP",
      help="one setup exchange before the loop: request bytes, response bytes (Flory 2001: 8,8)")
    a("--setup-sp", type=float, default=_D.setup_sp_s, help="server time for the setup exchange (seconds)")
    a("--mtu", type=int, default=_D.mtu, help="IP MTU (bytes); MSS = MTU - 52")
    a("--bandwidth", type=float, default=_D.bandwidth_bps, help="link rate (bits per second)")
    a("--latency", type=float, default=_D.latency_s, help="one-way propagation delay outside the hosts (seconds)")
    a("--nodelay", choices=SIDES, default=_D.nodelay, help="which sockets set TCP_NODELAY")
    a("--msg-more", nargs="?", choices=SIDES, const="both", default=_D.msg_more,
      help="which side passes MSG_MORE on all but the last send() of a message (bare flag: both)")
    a("--msg-more-last", action="store_true",
      help="misuse: MSG_MORE also on the last send() of each message (held up to 200 ms)")
    a("--flush-on-idle", choices=SIDES, default=_D.flush_on_idle,
      help="which threads push held data out before sleeping (SCST usermode does on the server)")
    a("--no-autocork", action="store_true", help="turn tcp_autocorking off (linux-2.4 has none)")
    a("--kernel", choices=sorted(PROFILES), default=_D.kernel, help="kernel profile")
    a("--hz", type=int, default=None, help="timer ticks per second (default: the profile's, 100 or 250)")
    a("--sp", type=float, default=_D.sp_s, help="server processing time per operation (seconds)")
    a("--cp", type=float, default=_D.cp_s, help="client processing time per operation (seconds)")
    a("--sl", type=float, default=_D.sl_s, help="server thread wake-up latency (seconds)")
    a("--cl", type=float, default=_D.cl_s, help="client thread wake-up latency (seconds)")
    for name, what in (("ct", "client transmit"), ("sr", "server receive"), ("st", "server transmit"),
                       ("cr", "client receive")):
        a(f"--{name}", type=float, default=getattr(_D, f"{name}_s"), help=f"{what} start latency (seconds)")
    for name, what in (("si", "server receive soft-interrupt CPU per segment"),
                       ("ci", "client receive soft-interrupt CPU per segment"),
                       ("sk", "server transmit CPU per data segment"), ("ck", "client transmit CPU per data segment")):
        a(f"--{name}", type=float, default=0.0, help=f"{what} (seconds)")
    a("--ops", type=int, default=_D.ops, help="operations to measure after the warm-up (operations)")
    a("--warmup", type=int, default=None, help="completions excluded first (default: the queue depth)")
    a("--seed", type=int, default=_D.seed, help="seed of every random draw (tick phase, jitter)")
    a("--jitter", type=float, default=_D.jitter, help="relative spread of processing times, in [0, 1)")
    a("--trace", action="store_true", help="print the packet trace (tcpdump-like) before the summary")
    a("--trace-at", choices=("client", "server"), default=_D.trace_at, help="host whose capture point the trace shows")
    a("--trace-lines", type=int, default=40, help="trace lines to print (0: all)")
    a("--json", action="store_true", help="print one JSON object instead of the text summary")
    return p


def _scenario(ns: argparse.Namespace) -> Scenario:
    setup_req, setup_resp = (), ()
    if ns.setup_writes is not None:
        if len(ns.setup_writes) != 2:
            raise ValueError(f"setup-writes must be two sizes REQ,RESP, got {ns.setup_writes!r}")
        setup_req, setup_resp = (ns.setup_writes[0],), (ns.setup_writes[1],)
    return Scenario(
        qd=ns.qd, request_writes=ns.request_writes, response_writes=ns.response_writes,
        setup_request_writes=setup_req, setup_response_writes=setup_resp, setup_sp_s=ns.setup_sp,
        mtu=ns.mtu, bandwidth_bps=ns.bandwidth, latency_s=ns.latency, sp_s=ns.sp, cp_s=ns.cp, sl_s=ns.sl,
        cl_s=ns.cl, ct_s=ns.ct, sr_s=ns.sr, st_s=ns.st, cr_s=ns.cr, si_s=ns.si, ci_s=ns.ci, sk_s=ns.sk,
        ck_s=ns.ck, nodelay=ns.nodelay, msg_more=ns.msg_more, msg_more_last=ns.msg_more_last,
        flush_on_idle=ns.flush_on_idle, autocork=False if ns.no_autocork else None, kernel=ns.kernel,
        hz=ns.hz, ops=ns.ops, warmup_ops=ns.warmup, seed=ns.seed, jitter=ns.jitter,
        trace=ns.trace, trace_at=ns.trace_at)


def _finite(x: float):
    return x if math.isfinite(x) else None


def main(argv=None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # output piped into head(1) and closed early
        return 0


def _main(argv=None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        sc = _scenario(ns)
        r = simulate(sc)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if ns.json:
        d = r.to_dict()
        d = {k: (_finite(v) if isinstance(v, float) else v) for k, v in d.items()}
        if ns.trace:
            d["trace"] = [str(t) for t in r.trace]
        print(json.dumps(d))
        return 0
    if ns.trace:
        lines = r.trace if ns.trace_lines == 0 else r.trace[:ns.trace_lines]
        for t in lines:
            print(t)
        if len(lines) < len(r.trace):
            print(f"... ({len(r.trace) - len(lines)} more packets)")
        print()
    print(f"kernel {sc.kernel}, QD {sc.qd}, request writes {list(sc.request_writes)}, "
          f"response writes {list(sc.response_writes)}, MTU {sc.mtu}, {sc.bandwidth_bps:g} b/s, "
          f"nodelay {sc.nodelay}, msg_more {sc.msg_more}{' (also last)' if sc.msg_more_last else ''}, "
          f"autocork {'on' if sc.autocork_on else 'off'}")
    print(f"IOPS {r.iops:.1f}   RTT mean {_us(r.rtt_mean_s)}, p50 {_us(r.rtt_percentile_s(50))}, "
          f"p99 {_us(r.rtt_percentile_s(99))}   ({r.ops} ops measured)")
    print(f"packets {r.packets} (C>S {r.packets_by_direction['C>S']}, S>C {r.packets_by_direction['S>C']}); "
          f"pure ACKs {r.pure_acks}; delayed-ACK timer {r.delayed_acks}; probes {r.probes}")
    print("link utilization " + ", ".join(f"{k} {v:.1%}" for k, v in r.link_utilization.items()))
    print("CPU utilization " + ", ".join(f"{k} {v:.1%}" for k, v in r.cpu_utilization.items()))
    print(f"server busy counts {r.busy_counts}")
    print(f"{r.events} events in {r.wall_time_s:.3f} s")
    return 0

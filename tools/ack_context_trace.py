"""Where the client's pure ACKs leave on the probe run's shape: on arrival or at its read, traced.

    sudo .venv/bin/python tools/ack_context_trace.py --out data --prefix kernel6_machine8_ack_context

Linux's receiver sends a pure ACK either in the receive soft interrupt, as the data arrives
(``__tcp_ack_snd_check``: more than a segment unacknowledged and a window that would not shrink,
or quick-ACK mode), or later, in process context: at the application's read
(``tcp_cleanup_rbuf``), from the socket's backlog when a call releases it, or on the
delayed-ACK timer.  This tool runs :data:`models.validation.machine8.PROBE`'s shape (veth at MTU
1500, bbr, a ``TCP_NODELAY`` server and a Nagle client, 16 KiB responses) at the QDs of
:data:`models.validation.ackcontext.QDS`, :data:`REPEATS` times each, interleaved, and reads the
kernel's tracepoints through tracefs for a window in the middle of each run
(``net:net_dev_queue``, ``tcp:tcp_probe`` and the client's ``recvfrom``, ``sendto`` and ``poll``
entries and exits).  Each pure ACK the client's veth end queues (a frame of
:data:`PURE_ACK_BYTES`) is counted by its context: the trace line's soft-interrupt mark (on
arrival); else, in process context, right after the client's socket processed a data segment
there (``tcp_probe`` outside a soft interrupt: from its backlog, as a call that owned the socket
released it, so still in answer to an arrival); else the client's system call under way (in
``recvfrom``: at its read).  One row per run.  Needs root and tracefs (the ownership trace's
:func:`~ownership_trace.tracing_problem`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from ownership_trace import events, trace_args, traced, write_dataset  # noqa: E402
from pacing_wait_trace import run_command  # noqa: E402

from models.measure.netns import CLIENT_ADDR, veth_side  # noqa: E402
from models.validation import ackcontext as AC  # noqa: E402
from models.validation import machine8 as M8  # noqa: E402

#: Each QD this many times, the runs interleaved.
REPEATS = 3
#: A pure ACK's frame on the veth pair: Ethernet 14, IPv4 20, TCP 20 and its timestamp option 12.
PURE_ACK_BYTES = 66
EVENTS = (
    "net/net_dev_queue",
    "tcp/tcp_probe",
    *(f"syscalls/sys_{edge}_{call}" for call in ("recvfrom", "sendto", "poll")
      for edge in ("enter", "exit")),
)  # fmt: skip
FIELDS = [
    ("qd", "integer", "requests", "requests the client keeps outstanding"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("acks", "integer", "frames", "pure ACKs the client's veth end queued in the window"),
    ("softirq", "integer", "frames", "of those, queued in a soft interrupt (on arrival)"),
    (
        "backlog",
        "integer",
        "frames",
        "queued in process context right after the client's socket processed a data segment "
        "from its backlog (still in answer to an arrival)",
    ),
    ("recvfrom", "integer", "frames", "queued otherwise in the client's recvfrom() (its read)"),
    ("sendto", "integer", "frames", "queued otherwise in the client's sendto()"),
    ("other", "integer", "frames", "queued elsewhere (another call, a hard interrupt, none)"),
    ("run_iops", "number", "1/s", "the traced run's operations per second"),
    ("other_cpu_pct", "number", "%", "CPU other processes used during the run"),
]
KEY = ["qd", "repeat"]


def contexts(lines: list[str]) -> dict[str, int]:
    """The client's pure ACKs in one traced window, counted by where each was queued.

    >>> probe = (" qdperf-8  [001] ..... 1.000004: tcp_probe: family=AF_INET src=10.213.0.2:5 "
    ...          "dest=10.213.0.1:6 mark=0 data_len=16432 snd_nxt=0x1")
    >>> t = [
    ...     " qdperf-8  [001] ..... 1.000000: sys_recvfrom(fd: 3, ubuf: 0, size: 0x4000)",
    ...     " qdperf-8  [001] ..... 1.000001: net_dev_queue: dev=qd12c0 skbaddr=0 len=66",
    ...     probe,
    ...     " qdperf-8  [001] ..... 1.000005: net_dev_queue: dev=qd12c0 skbaddr=0 len=66",
    ...     " qdperf-8  [001] ..... 1.000006: sys_recvfrom -> 0x4000",
    ...     " <idle>-0  [001] ..s1. 1.000007: net_dev_queue: dev=qd12c0 skbaddr=0 len=66",
    ...     " <idle>-0  [000] ..s1. 1.000008: net_dev_queue: dev=qd12s0 skbaddr=0 len=66",
    ... ]
    >>> contexts(t)
    {'acks': 3, 'softirq': 1, 'backlog': 1, 'recvfrom': 1, 'sendto': 0, 'other': 0}
    """
    out = {"acks": 0, "softirq": 0, "backlog": 0, "recvfrom": 0, "sendto": 0, "other": 0}
    in_call: dict[int, str] = {}  # pid -> the system call under way
    after_backlog: set[int] = set()  # pids whose last event was their socket's backlog
    for _ts, event, rest, pid, _cpu, soft in events(lines):
        backlog = pid in after_backlog
        after_backlog.discard(pid)
        if event == "tcp_probe":
            # the client's socket (its own address first) processed data outside a soft
            # interrupt: from its backlog
            data = int(rest.split("data_len=")[1].split()[0])
            if not soft and data and f"src={CLIENT_ADDR}:" in rest:
                after_backlog.add(pid)
        elif event.startswith("sys_"):
            if rest.startswith("("):
                in_call[pid] = event[4:]
            else:
                in_call.pop(pid, None)
        elif event == "net_dev_queue":
            dev = rest.split("dev=")[1].split()[0]
            if veth_side(dev) != "client" or int(rest.split("len=")[1]) != PURE_ACK_BYTES:
                continue
            out["acks"] += 1
            if soft:
                out["softirq"] += 1
            elif backlog:
                out["backlog"] += 1
            else:
                call = in_call.get(pid)
                out[call if call in ("recvfrom", "sendto") else "other"] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    ns, start = trace_args(__doc__, "ack_context_trace.py", argv, "kernel6_ack_context", 2.0, 20.0)
    link, server, client, _qd, size = M8.PROBE
    rows, runs = [], {}
    for rep in range(REPEATS):
        for qd in AC.QDS:
            sc = {"link": link, "client_sock_mode": client, "qd": qd, "iosize_bytes": size}
            cmd = run_command(sc, server, "bbr", ns.duration)
            lines, out = traced(cmd, EVENTS, ns.duration, ns.window_ms / 1e3)  # ms -> s
            run = json.loads(out)
            iops, other = run["client"]["iops"], run.get("other_cpu_pct")
            got = contexts(lines)
            if not got["acks"]:
                raise RuntimeError(f"QD {qd}: the window traced no pure ACK of the client")
            rows.append({"qd": qd, "repeat": rep, **got, "run_iops": iops, "other_cpu_pct": other})
            runs[f"{qd}/{rep}"] = {"iops": iops, "other_cpu_pct": other}
            share = got["softirq"] / got["acks"]
            print(f"QD {qd} repeat {rep}: {iops:,.0f}/s, {got['acks']} pure ACKs, {share:.0%} "
                  "on arrival")  # fmt: skip
    write_dataset(
        ns,
        start,
        ("Queue Depth ACK context trace", "tools/ack_context_trace.py"),
        rows,
        FIELDS,
        KEY,
        title="Where a client's pure ACKs leave: on arrival or at its read, traced",
        description=(
            "Harness runs of the iSCSI-like loop in the shape of "
            "models.validation.machine8.PROBE (veth at MTU 1500, bbr on both sockets, a "
            "TCP_NODELAY server and a Nagle client, 16 KiB responses, the ends a CPU apart) at "
            f"QD {' and '.join(str(q) for q in AC.QDS)}, {REPEATS} runs each, interleaved. A "
            "window in the middle of each run was traced through tracefs (net_dev_queue, "
            "tcp_probe and the client's recvfrom, sendto and poll entries and exits); one row "
            f"per run, the pure ACKs ({PURE_ACK_BYTES}-byte frames) the client's veth end "
            "queued, counted by context: a soft interrupt (on arrival), right after the socket's "
            "backlog gave it a data segment, else the client's call under way. Tracing "
            f"slows the runs a little: IOPS and other CPU of the traced runs {json.dumps(runs)}."
        ),
        runs=runs,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Count bbr's pacing timer and each CPU's time behind Nagle and MSG_MORE servers on veth-1500.

    sudo .venv/bin/python tools/pacing_cpu_sweep.py --out data --repeats 2

The configurations are :data:`models.validation.servercpu.CONFIGS` (rows of the fifth machine's
field sweep: a Nagle server behind a ``TCP_NODELAY`` client, a ``TCP_NODELAY`` server for
contrast, and a ``MSG_MORE`` server behind either client; veth-1500, bbr on both sockets, each
end pinned to a CPU of its own), in the kernel.  Each run is
counted as ``tools/pacing_timer_sweep.py`` counts (``perf stat`` on the pacing timer's
``tcp_pace_kick`` armed and fired, system-wide) and, from ``/proc/stat`` read before and after
it, the time each of the two CPUs spent in user code, in the kernel, in soft interrupts and idle,
per operation the run completed (the whole run, its start-up and warm-up included).  Written to
``PREFIX.csv`` and its sidecar ``PREFIX.json`` with the machine's settings.  Needs root, ``perf``
and two CPUs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from ack_delay_sweep import HOST_FIELDS  # noqa: E402
from pacing_timer_sweep import apart_bbr_spec, function_address, pacing_timers  # noqa: E402
from placement_sweep import each_config, run_tool  # noqa: E402

from models.measure.netns import Link  # noqa: E402
from models.measure.runner import run_one  # noqa: E402
from models.validation import servercpu as SC  # noqa: E402

#: /proc/stat's columns kept, in its order from the first (``user nice system idle iowait irq
#: softirq``), by the name of the CSV column they add to.
STAT_COLUMNS = {"user": (0, 1), "system": (2,), "idle": (3, 4), "softirq": (5, 6)}
#: Microseconds per tick of /proc/stat (USER_HZ = 100).
US_PER_TICK = 10_000

#: (name, type, unit, description) of each column.
FIELDS = [
    ("sweep", "integer", "sweeps", "the sweep the run belongs to, from 0 (see the sidecar)"),
    ("link", "string", None, "the link, as the field sweep labels it"),
    ("sock_mode", "string", None, "the server's socket mode (the harness's --sock)"),
    ("client_sock_mode", "string", None, "the client's socket mode (the harness's --client-sock)"),
    ("qd", "integer", "requests", "requests the client keeps outstanding"),
    ("iosize_bytes", "integer", "bytes", "payload bytes per response"),
    ("cc", "string", None, "congestion control of both sockets, as the server reported it"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("iops", "number", "1/s", "operations completed per second of the measured window"),
    ("ops", "integer", "operations", "operations the client completed, warm-up included"),
    ("arms_per_op", "number", "timers", "tcp_pace_kick timers armed, per operation"),
    ("fires_per_op", "number", "timers", "tcp_pace_kick timers that fired, per operation"),
    *[
        (f"{side}_{kind}_us_per_op", "number", "us", f"the {side}'s CPU: {what}, per operation")
        for side in ("server", "client")
        for kind, what in (
            ("user", "user code (user and nice)"),
            ("system", "the kernel outside interrupts"),
            ("softirq", "soft and hard interrupts"),
            ("idle", "idle (and iowait)"),
        )
    ],
    *HOST_FIELDS,
]
KEY = ["sweep", *SC.CONFIG_KEY, "repeat"]


def cpu_times() -> dict[int, list[int]]:
    """Each CPU's /proc/stat ticks (its first seven columns), by CPU number."""
    out = {}
    with open("/proc/stat", encoding="ascii") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                name, *ticks = line.split()
                out[int(name[3:])] = [int(t) for t in ticks[:7]]
    return out


def _run(number: int, cfg: dict, link: Link, rep: int, duration_s: float, address: str) -> dict:
    cpus = sorted(os.sched_getaffinity(0))[:2]  # the harness pins the server first (pin apart)
    with pacing_timers(address) as counts:
        before = cpu_times()
        res = run_one(apart_bbr_spec(cfg, duration_s), link)
        after = cpu_times()
    ops = int(res.client["completed"])
    row: dict = {
        "sweep": number,
        **{k: cfg[k] for k in SC.CONFIG_KEY},
        "cc": res.server.get("cc") or "",
        "repeat": rep,
        "iops": round(res.client["iops"], 1),
        "ops": ops,
        "arms_per_op": round(counts["arms"] / ops, 4),
        "fires_per_op": round(counts["fires"] / ops, 4),
    }
    for side, cpu in zip(("server", "client"), cpus):
        d = [b - a for a, b in zip(before[cpu], after[cpu])]
        for kind, cols in STAT_COLUMNS.items():
            ticks = sum(d[c] for c in cols)
            row[f"{side}_{kind}_us_per_op"] = round(ticks * US_PER_TICK / ops, 3)  # ticks -> us
    row["other_cpu_pct"] = round(res.other_cpu_pct, 1)
    row["load_1min"] = res.load_before[0]
    print(
        f"{cfg['sock_mode']:7s} QD {cfg['qd']:>2} {cfg['iosize_bytes']:>5} B: "
        f"{row['iops']:>9,.0f} IOPS, {row['arms_per_op']} arms per op, server CPU "
        f"{row['server_system_us_per_op'] + row['server_softirq_us_per_op']:.1f} us per op"
    )
    return row


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number``: every configuration of :data:`SC.CONFIGS`, ``repeats``
    times, interleaved; a clear exit before any run without perf or root."""
    if shutil.which("perf") is None or os.geteuid() != 0:
        raise SystemExit("pacing_cpu_sweep.py: needs perf and root (the tracepoints)")
    address = function_address()
    return each_config(
        links,
        repeats,
        SC.CONFIGS,
        lambda cfg, link, rep: [_run(number, cfg, link, rep, duration_s, address)],
    )


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    return (
        "Harness runs of the iSCSI-like loop in configurations of the fifth machine's field sweep "
        "(models.validation.servercpu.CONFIGS: Nagle servers behind a TCP_NODELAY client at QD "
        "2-16 with 2 and 16 KiB responses, TCP_NODELAY servers at QD 8 for contrast, and MSG_MORE "
        "servers at QD 8 behind either client; veth "
        "pair at MTU 1500, bbr on both sockets, each end pinned to a CPU of its own), counted with "
        "perf stat (the pacing timer, tcp_pace_kick, armed and fired, system-wide) and /proc/stat "
        "(each of the two CPUs' user, system, interrupt and idle time), per operation of the "
        f"whole run; {ns.repeats} repeat(s) per sweep, interleaved; {sweeps} sweep(s), each with "
        "its start time and the machine's settings under measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="pacing_cpu_sweep.py",
        defaults=(SC.DATASET, 2, 1.0),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="bbr's pacing timer and each CPU's time per operation behind Nagle and MSG_MORE servers",
        describe=_describe,
        source="Queue Depth pacing and CPU sweep",
        links=("veth-1500",),
    )


if __name__ == "__main__":
    raise SystemExit(main())

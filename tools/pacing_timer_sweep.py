"""Count how often bbr's pacing timer is armed and fires per operation, in the kernel.

    sudo .venv/bin/python tools/pacing_timer_sweep.py --out data --prefix kernel6_machine3_pacing_timer

Under bbr, ``tcp_write_xmit`` asks first whether the socket's next departure time
(``tcp_wstamp_ns``) is still ahead (``tcp_pacing_check``, before the windows and Nagle); if so it
arms the pacing hrtimer (``tcp_pace_kick``) and stops.  On a virtual machine arming a timer that
becomes the CPU's next event and taking its interrupt both go through the hypervisor
(``python -m models.measure costs``: ``timer_arm``, ``timer_fire``), so how often that happens
per operation sets what pacing costs.  This sweep runs the configurations of chapter 9's pinned
sample where bbr and a server that lets Nagle hold data meet
(:func:`models.validation.pacingtimer.configs`), bbr on both sockets, each end on a CPU of its
own, and counts system-wide, with ``perf stat``, the ``timer:hrtimer_start`` and
``timer:hrtimer_expire_entry`` events whose function is ``tcp_pace_kick`` (a tracepoint filter on
its address from ``/proc/kallsyms``) over the whole run, warm-up included; per operation is per
operation the client completed in the run.  ``perf`` slows the loop, so each row's rate is kept
beside the counts.  Writes ``PREFIX.csv`` (one row per run) and its sidecar ``PREFIX.json`` with
the machine's settings (``--append`` adds a further sweep).  Needs root (the namespace, the veth
pairs, the tracepoints), ``perf`` and two CPUs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from ack_delay_sweep import HOST_FIELDS  # noqa: E402
from placement_sweep import LINKS, run_tool  # noqa: E402

from models.measure.netns import Link  # noqa: E402
from models.measure.runner import RunSpec, run_one  # noqa: E402
from models.validation import pacingtimer as PT  # noqa: E402

#: The kernel function the pacing timer runs (``net/ipv4/tcp_output.c``).
FUNCTION = "tcp_pace_kick"
#: The two tracepoints counted: the timer armed, and its expiry handled.
EVENTS = {"arms": "timer:hrtimer_start", "fires": "timer:hrtimer_expire_entry"}

#: (name, type, unit, description) of each column.
FIELDS = [
    ("sweep", "integer", "sweeps", "the sweep the run belongs to, from 0 (see the sidecar)"),
    *[(k, t, u, d) for k, t, u, d in PT.CONFIG_FIELDS],
    ("cc", "string", None, "congestion control of both sockets, as the server reported it"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("iops", "number", "1/s", "operations completed per second, under perf"),
    (
        "ops",
        "integer",
        "operations",
        "operations the client completed in the run, warm-up included",
    ),
    ("pace_arms", "integer", "timers", "tcp_pace_kick timers armed during the run"),
    ("pace_fires", "integer", "timers", "tcp_pace_kick timers that fired during the run"),
    ("arms_per_op", "number", "timers", "pace_arms over ops"),
    ("fires_per_op", "number", "timers", "pace_fires over ops"),
    *HOST_FIELDS,
]
KEY = ["sweep", *PT.CONFIG_KEY, "repeat"]


def function_address(name: str = FUNCTION) -> str:
    """``name``'s address in ``/proc/kallsyms`` (hexadecimal); a clear exit if it is hidden."""
    with open("/proc/kallsyms", encoding="ascii") as f:
        for line in f:
            addr, _kind, sym = line.split()[:3]
            if sym == name and int(addr, 16):
                return "0x" + addr
    raise SystemExit(f"pacing_timer_sweep.py: {name} has no address in /proc/kallsyms (root?)")


def perf_command(address: str) -> list[str]:
    """``perf stat`` counting both events, each filtered to the pacing timer, on every CPU."""
    cmd = ["perf", "stat", "-x", ",", "-a"]
    for event in EVENTS.values():
        cmd += ["-e", event, "--filter", f"function == {address}"]
    return cmd


def parse_counts(text: str) -> dict[str, int]:
    """The counts of ``perf stat -x ,``'s output, by :data:`EVENTS` key.

    >>> parse_counts("123,,timer:hrtimer_start,1000,100.00,,\\n45,,timer:hrtimer_expire_entry,1,1,,")
    {'arms': 123, 'fires': 45}
    """
    found = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) > 2:
            for key, event in EVENTS.items():
                if parts[2] == event:
                    found[key] = int(parts[0])
    if set(found) != set(EVENTS):
        raise RuntimeError(f"perf stat printed no count for {sorted(set(EVENTS) - set(found))}")
    return found


@contextmanager
def pacing_timers(address: str) -> Iterator[dict[str, int]]:
    """Count the pacing timer (``perf stat``, :func:`perf_command`) while the ``with`` block
    runs; the dict it gives is filled with the counts (:func:`parse_counts`) when it ends."""
    counts: dict[str, int] = {}
    perf = subprocess.Popen(
        perf_command(address), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        yield counts
    finally:
        perf.send_signal(signal.SIGINT)  # perf stat prints its counts and exits
        _, err = perf.communicate(timeout=30)
    counts.update(parse_counts(err))


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number``: every configuration of :func:`PT.configs` on ``links``, one
    row each (see :data:`FIELDS`); a clear exit before any run without perf or root."""
    if shutil.which("perf") is None or os.geteuid() != 0:
        raise SystemExit("pacing_timer_sweep.py: needs perf and root (the tracepoints)")
    address = function_address()
    rows = []
    by_link: dict[str, list[dict]] = {}
    for cfg in PT.configs():
        by_link.setdefault(cfg["link"], []).append(cfg)
    for label in links:
        with Link(LINKS[label]) as link:
            for rep in range(repeats):
                for cfg in by_link.get(label, []):
                    rows.append(_run(number, cfg, link, rep, duration_s, address))
    return rows


def apart_bbr_spec(cfg: dict, duration_s: float) -> RunSpec:
    """The harness run of configuration ``cfg`` (server and client socket modes, QD, payload
    bytes): the iSCSI loop, bbr on both sockets, each end on a CPU of its own, not captured."""
    return RunSpec(
        "iscsi",
        cfg["sock_mode"],
        int(cfg["qd"]),
        int(cfg["iosize_bytes"]),
        duration_s=duration_s,
        cc="bbr",
        client_sock=cfg["client_sock_mode"],
        capture=False,
        pin="apart",
    )


def _run(number: int, cfg: dict, link: Link, rep: int, duration_s: float, address: str) -> dict:
    with pacing_timers(address) as counts:
        res = run_one(apart_bbr_spec(cfg, duration_s), link)
    ops = int(res.client["completed"])
    row: dict = {
        "sweep": number,
        **{k: cfg[k] for k in PT.CONFIG_KEY},
        "cc": res.server.get("cc") or "",
        "repeat": rep,
        "iops": round(res.client["iops"], 1),
        "ops": ops,
        "pace_arms": counts["arms"],
        "pace_fires": counts["fires"],
        "arms_per_op": round(counts["arms"] / ops, 4) if ops else "",
        "fires_per_op": round(counts["fires"] / ops, 4) if ops else "",
        "other_cpu_pct": round(res.other_cpu_pct, 1),
        "load_1min": res.load_before[0],
    }
    print(
        f"{cfg['link']:9s} {cfg['sock_mode']:7s} QD {cfg['qd']:>2} {cfg['iosize_bytes']:>5} B: "
        f"{row['iops']:>9,.0f} IOPS, {row['arms_per_op']} arms and {row['fires_per_op']} "
        "fires per operation"
    )
    return row


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    return (
        "Harness runs of the iSCSI-like loop in every configuration of the pinned sample "
        "(kernel6_machine3_apart) where bbr meets a server that lets Nagle hold data (a Nagle "
        "or MSG_MORE server; the client with TCP_NODELAY; QD 1-64; 512 B-64 KiB; the loopback "
        "in a namespace of its own and veth pairs at MTU 1500 and 9000), bbr on both sockets, "
        "each end pinned to a CPU of its own, counted with perf stat: the pacing timer "
        "(tcp_pace_kick) armed and fired, system-wide, over each whole run; "
        f"{ns.repeats} repeat(s) per sweep; {sweeps} sweep(s), each with its start time and the "
        "machine's settings under measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="pacing_timer_sweep.py",
        defaults=("kernel6_machine3_pacing_timer", 1, 1.0),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="How often bbr's pacing timer is armed and fires per operation",
        describe=_describe,
        source="Queue Depth pacing timer sweep",
    )


if __name__ == "__main__":
    raise SystemExit(main())

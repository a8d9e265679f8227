"""Where a Nagle server's operation goes on bbr's pacing plateau: its send() calls, traced.

    sudo .venv/bin/python tools/plateau_calls_trace.py --out data --prefix kernel6_machine8_plateau_calls

On a veth pair under bbr a Nagle server's responses of 2 KiB and more run at about 30 thousand
operations a second whatever the queue depth, the response's size or the client's socket mode
(the eighth machine's sample, chapter 9e).  This tool runs the scenarios of
:data:`models.validation.plateau.SCENARIOS` (rows of that sample: the two ends pinned a CPU
apart, bbr on both sockets), each :data:`REPEATS` times, interleaved, and reads the kernel's
tracepoints through tracefs for a window in the middle of each run
(``syscalls:sys_enter_sendto`` / ``sys_exit_sendto``, ``timer:hrtimer_start`` /
``hrtimer_expire_entry``, ``sched:sched_switch``).  One row per ``send()`` the server made in
the window, of either kind the loop makes per operation: the 48-byte header and the response's
data; how long the call lasted, whether bbr's pacing timer (``tcp_pace_kick``) was armed on the
server's CPU during it and, if it fired before the call returned, how long after the arming, how
long the call went on after it, and whether the client's CPU was idle at that moment.

Tracing costs each event a few hundred nanoseconds, so the traced runs are somewhat slower than
untraced ones; each row carries its run's IOPS.  Needs root and tracefs (the ownership trace's
:func:`~ownership_trace.tracing_problem`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import pacing_wait_trace as PW  # noqa: E402
from ownership_trace import events, trace_args, write_dataset  # noqa: E402
from pacing_wait_trace import mark_pacing, run_command, traced_mono  # noqa: E402

from models.framing import ISCSI_HEADER_BYTES  # noqa: E402
from models.validation import plateau as PL  # noqa: E402

#: Each scenario this many times, the runs interleaved.
REPEATS = 2
EVENTS = (*PW.EVENTS, "sched/sched_switch")  # sendto, the pacing timer, the CPUs' tasks
#: The pacing trace's columns where they mean the same here.
_SAME = {f[0]: f for f in PW.FIELDS}
FIELDS = [
    ("link", "string", "", "the link, as the field sweep labels it: veth-1500 or veth-9000"),
    _SAME["client_sock_mode"],
    ("qd", "integer", "requests", "requests the client keeps outstanding"),
    _SAME["iosize_bytes"],
    ("server_sock_mode", "string", "", "server socket mode of the run (nagle)"),
    *(_SAME[k] for k in ("cc", "repeat")),
    ("call", "integer", "calls", "the server's send() in order within the window"),
    ("kind", "string", "", "header (the 48-byte response header) or data (the payload)"),
    *(_SAME[k] for k in ("call_us", "armed")),
    (
        "fire_after_arm_us",
        "number",
        "us",
        "an armed call's timer: when its soft interrupt ran (hrtimer_expire_entry), from when "
        "the call armed it; empty if it did not run before the call returned",
    ),
    _SAME["returned_after_fire_us"],
    (
        "peer_idle_at_fire",
        "boolean",
        "",
        "whether the client's CPU was idle when the timer's soft interrupt ran (its last "
        "sched_switch was to the idle task); empty where the timer did not fire in the call",
    ),
    *(_SAME[k] for k in ("run_iops", "other_cpu_pct")),
]
OPTIONAL = ("fire_after_arm_us", "returned_after_fire_us", "peer_idle_at_fire")
KEY = ["link", "client_sock_mode", "qd", "iosize_bytes", "repeat", "call"]


def calls(lines: list[str], iosize: int) -> list[dict]:
    """The rows of one traced window (without the run's columns): every ``send()`` of the
    response's header or of its ``iosize`` bytes of data whose entry and exit are both in the
    window, with whether bbr's pacing timer was armed on its CPU during it; the server's only
    (the process that sends the data: the client's requests are 48 bytes too).  For an armed
    call, when its timer's soft interrupt ran after the arming, when the call returned after
    that, and whether the client's CPU was idle then (its last switch was to the idle task).

    >>> t = [
    ...     " qdperf-8  [001] d..2. 9.999990: sched_switch: prev_comm=qdperf prev_pid=8"
    ...     " prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
    ...     " qdperf-7  [000] ..... 10.000000: sys_sendto(fd: 4, len: 0x30, flags: 0x4000)",
    ...     " qdperf-7  [000] ..... 10.000001: sys_sendto -> 0x30",
    ...     " qdperf-7  [000] ..... 10.000002: sys_sendto(fd: 4, len: 0x4000, flags: 0x4000)",
    ...     " qdperf-7  [000] d..1. 10.000004: hrtimer_start: hrtimer=00a function=tcp_pace_kick"
    ...     " expires=10000003000 softexpires=10000003000 mode=ABS|PINNED|SOFT was_armed=0",
    ...     " qdperf-7  [000] ..s1. 10.000026: hrtimer_expire_entry: hrtimer=00a"
    ...     " function=tcp_pace_kick now=10000026000",
    ...     " qdperf-7  [000] ..... 10.000042: sys_sendto -> 0x4000",
    ...     " qdperf-8  [001] ..... 10.000043: sys_sendto(fd: 3, len: 0x30, flags: 0x4000)",
    ...     " qdperf-8  [001] ..... 10.000044: sys_sendto -> 0x30",
    ... ]
    >>> [(r["kind"], r["call_us"], r["armed"]) for r in calls(t, 16384)]
    [('header', 1.0, False), ('data', 40.0, True)]
    >>> r = calls(t, 16384)[1]
    >>> r["fire_after_arm_us"], r["returned_after_fire_us"], r["peer_idle_at_fire"]
    (22.0, 16.0, True)
    """
    kinds = {f"len: {ISCSI_HEADER_BYTES:#x},": "header", f"len: {iosize:#x},": "data"}
    done: list[tuple] = []  # (pid, kind, us, armed, fired, returned, CPUs' tasks at the fire)
    open_call: dict[int, dict] = {}  # pid -> the call under way
    cpu_of: dict[int, int] = {}  # pid -> its CPU
    running: dict[int, int] = {}  # CPU -> the pid it switched to last (0: idle)
    for ts, event, rest, pid, cpu, _soft in events(lines):
        if event == "sched_switch":
            running[cpu] = int(rest.split("next_pid=")[1].split()[0])
        elif event == "sys_sendto" and rest.startswith("("):
            kind = next((k for size, k in kinds.items() if size in rest), None)
            if kind is not None:
                open_call[pid] = {"t0": ts, "kind": kind, "arm": None, "expiry": None,
                                  "fire": None, "cpus": {}}  # fmt: skip
            cpu_of[pid] = cpu
        elif event == "sys_sendto" and rest.startswith(" ->") and pid in open_call:
            c = open_call.pop(pid)
            fired = c["fire"] is not None
            done.append(
                (pid, c["kind"], round(ts - c["t0"], 3), c["arm"] is not None,
                 round(c["fire"] - c["arm"], 3) if fired else None,
                 round(ts - c["fire"], 3) if fired else None, c["cpus"])
            )  # fmt: skip
        else:
            fired = mark_pacing(open_call, cpu_of, ts, event, rest, cpu)
            if fired is not None:
                fired["cpus"] = dict(running)
    server = {c[0] for c in done if c[1] == "data"}
    peer_cpus = {cpu_of[p] for p in cpu_of if p not in server}
    rows = []
    for i, (_, kind, us, armed, fire, back, cpus) in enumerate(c for c in done if c[0] in server):
        seen = [cpus[k] for k in peer_cpus if k in cpus]
        rows.append(
            {"call": i, "kind": kind, "call_us": us, "armed": armed, "fire_after_arm_us": fire,
             "returned_after_fire_us": back,
             "peer_idle_at_fire": (seen[0] == 0) if fire is not None and len(seen) == 1 else None}
        )  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    ns, start = trace_args(
        __doc__, "plateau_calls_trace.py", argv, "kernel6_plateau_calls", 2.0, 10.0
    )
    rows, runs = [], {}
    for rep in range(REPEATS):
        for sc in PL.SCENARIOS:
            cmd = run_command(sc, "nagle", "bbr", ns.duration)
            lines, out = traced_mono(cmd, ns.duration, ns.window_ms / 1e3, EVENTS)  # ms -> s
            run = json.loads(out)
            iops, other = run["client"]["iops"], run.get("other_cpu_pct")
            these = calls(lines, int(sc["iosize_bytes"]))
            name = PL.label(sc)
            if not any(r["kind"] == "data" for r in these):
                raise RuntimeError(f"{name}: the window traced no send() of a response")
            for r in these:
                rows.append(
                    {**sc, "server_sock_mode": "nagle", "cc": "bbr", "repeat": rep, **r,
                     "run_iops": iops, "other_cpu_pct": other}
                )  # fmt: skip
            runs[f"{name}/{rep}"] = {"iops": iops, "other_cpu_pct": other}
            armed = sum(r["armed"] for r in these if r["kind"] == "data")
            print(f"{name} repeat {rep}: {iops:,.0f}/s, {len(these)} calls, {armed} data armed")
    write_dataset(
        ns,
        start,
        ("Queue Depth plateau calls trace", "tools/plateau_calls_trace.py"),
        rows,
        FIELDS,
        KEY,
        title="A Nagle server's send() calls on bbr's pacing plateau, traced",
        description=(
            "Harness runs of the iSCSI-like loop on a veth pair, a Nagle server, bbr on both "
            "sockets, the two ends pinned a CPU apart, in the scenarios of "
            "models.validation.plateau.SCENARIOS (rows of the eighth machine's sample of the "
            f"field runs), {REPEATS} runs each, interleaved. A window in the middle of each run "
            "was traced through tracefs (sendto entry and exit, hrtimer_start and "
            "hrtimer_expire_entry, sched_switch); one row per send() of a response's header or "
            "data by the server, with whether bbr's pacing timer (tcp_pace_kick) was armed on "
            "its CPU during it, when it fired after the arming, when the call returned after "
            "that, and whether the client's CPU was idle then. Tracing slows the runs a "
            f"little: IOPS and other CPU of the traced runs {json.dumps(runs)}."
        ),
        runs=runs,
        optional=OPTIONAL,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

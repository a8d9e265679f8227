"""Whether a send() that arms bbr's pacing timer returns before the timer fires, traced call by call.

    sudo .venv/bin/python tools/pacing_wait_trace.py --out data --prefix kernel6_machine7_pacing_wait

Under bbr a response may leave as its full segments and a short remainder: the tail a Nagle or
``MSG_MORE`` server holds back, or the second segment of a response a byte longer than the MSS.
That remainder meets bbr's pacing check (``tcp_pacing_check``), which arms the pacing hrtimer
(``tcp_pace_kick``) for the socket's next departure, usually a microsecond or two ahead.  This tool
runs the book's iSCSI-like loop, the two ends pinned a CPU apart, in two scenarios
(:data:`SCENARIOS`): on a veth pair at MTU 1500 with 16 KiB responses at QD 8 and a Nagle client,
behind a Nagle and a ``MSG_MORE`` server under bbr and, as contrasts, the Nagle server under cubic
(no pacing) and a ``TCP_NODELAY`` server under bbr (no held tail); and on the loopback with 64 KiB
responses (an MSS and 53 bytes) at QD 32, ``TCP_NODELAY`` on both ends, under bbr and cubic.  Each
run :data:`REPEATS` times, interleaved.  For a window in the middle of each run it reads the
kernel's tracepoints through tracefs (``syscalls:sys_enter_sendto`` / ``sys_exit_sendto``,
``timer:hrtimer_start``, ``timer:hrtimer_expire_entry``) and writes one row per ``send()`` of a
response's data by the server: how long the call lasted, whether the pacing timer was armed on the
server's CPU during it, when (from the call's start), for how far ahead, when its soft interrupt ran
(from the expiry) and when the call returned (from that).

Tracing costs each event a few hundred nanoseconds, so the traced runs are somewhat slower than
untraced ones; each row carries its run's IOPS.  Needs root and tracefs (the ownership trace's
:func:`~ownership_trace.tracing_problem`).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ownership_trace import TRACEFS, events, trace_args, traced, write_dataset  # noqa: E402

#: Each scenario (the harness's link and MTU, the client's socket mode, QD, response bytes) and
#: its runs, (server socket mode, congestion control), in the order each repeat runs them.
SCENARIOS = (
    (
        {"link": "veth-1500", "client_sock_mode": "nagle", "qd": 8, "iosize_bytes": 16384},
        (("nagle", "bbr"), ("more", "bbr"), ("nagle", "cubic"), ("nodelay", "bbr")),
    ),
    (
        {"link": "loopback", "client_sock_mode": "nodelay", "qd": 32, "iosize_bytes": 65536},
        (("nodelay", "bbr"), ("nodelay", "cubic")),
    ),
)
#: Each run this many times, the runs interleaved.
REPEATS = 2
EVENTS = (
    "syscalls/sys_enter_sendto",
    "syscalls/sys_exit_sendto",
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
)
FIELDS = [
    ("link", "string", "", "the link, as the field sweep labels it: veth-1500 or loopback"),
    ("client_sock_mode", "string", "", "client socket mode of the run: nagle or nodelay"),
    ("qd", "integer", "operations", "requests the client keeps outstanding"),
    ("iosize_bytes", "integer", "bytes", "payload bytes per response"),
    ("server_sock_mode", "string", "", "server socket mode of the run: nagle, more or nodelay"),
    ("cc", "string", "", "congestion control of both sockets"),
    ("repeat", "integer", "runs", "the run's repeat, from 0"),
    ("call", "integer", "calls", "the send() of a response's data, in order within the window"),
    ("call_us", "number", "us", "the call's length: sendto entry to exit"),
    ("armed", "boolean", "", "whether bbr's pacing timer was armed on the server's CPU in it"),
    ("arm_at_us", "number", "us", "when the timer was armed, from the call's start"),
    ("expiry_ahead_us", "number", "us", "the timer's expiry, from when it was armed"),
    (
        "fired_after_expiry_us",
        "number",
        "us",
        "when the timer's soft interrupt ran (hrtimer_expire_entry), from its expiry; empty if "
        "it did not run before the call returned",
    ),
    (
        "returned_after_fire_us",
        "number",
        "us",
        "when the call returned, from the timer's soft interrupt",
    ),
    ("run_iops", "number", "1/s", "the traced run's operations per second"),
    ("other_cpu_pct", "number", "%", "CPU other processes used during the run"),
]
KEY = ["link", "server_sock_mode", "cc", "repeat", "call"]
OPTIONAL = ("arm_at_us", "expiry_ahead_us", "fired_after_expiry_us", "returned_after_fire_us")


def calls(lines: list[str], iosize: int) -> list[dict]:
    """The rows of one traced window (without the run's columns): every ``send()`` of
    ``iosize`` bytes whose entry and exit are both in the window, with the pacing timer armed on
    its CPU during it (the first arming) and that timer's first expiry after it was armed.

    >>> t = [
    ...     " qdperf-7  [000] ..... 10.000000: sys_sendto(fd: 4, len: 0x4000, flags: 0x4000)",
    ...     " qdperf-7  [000] d..1. 10.000002: hrtimer_start: hrtimer=00a function=tcp_pace_kick"
    ...     " expires=10000003000 softexpires=10000003000 mode=ABS|PINNED|SOFT was_armed=0",
    ...     " qdperf-7  [000] ..s1. 10.000022: hrtimer_expire_entry: hrtimer=00a"
    ...     " function=tcp_pace_kick now=10000022000",
    ...     " qdperf-7  [000] ..... 10.000036: sys_sendto -> 0x4000",
    ... ]
    >>> row = calls(t, 16384)[0]
    >>> row["call_us"], row["arm_at_us"], row["expiry_ahead_us"], row["fired_after_expiry_us"]
    (36.0, 2.0, 1.0, 19.0)
    >>> row["returned_after_fire_us"]
    14.0
    """
    size = f"len: {iosize:#x},"
    out: list[dict] = []
    open_call: dict[int, dict] = {}  # pid -> the call under way
    cpu_of: dict[int, int] = {}  # pid -> its CPU
    for ts, event, rest, pid, cpu, _soft in events(lines):
        if event == "sys_sendto" and rest.startswith("(") and size in rest:
            open_call[pid] = {"t0": ts, "arm": None, "expiry": None, "fire": None}
            cpu_of[pid] = cpu
        elif event == "sys_sendto" and rest.startswith(" ->") and pid in open_call:
            c = open_call.pop(pid)
            out.append(_row(len(out), c, ts))
        else:
            mark_pacing(open_call, cpu_of, ts, event, rest, cpu)
    return out


def mark_pacing(
    open_call: dict[int, dict], cpu_of: dict[int, int], ts: float, event: str, rest: str, cpu: int
) -> dict | None:
    """Mark bbr's pacing timer (``tcp_pace_kick``) on the calls under way (pid -> a dict with
    ``arm``, ``expiry`` and ``fire``, each ``None`` until seen) whose CPU (``cpu_of``) the event
    ran on: its first arming, with its expiry (us), and its first soft interrupt after that.
    Returns the call whose fire this event was, if any."""
    if event not in ("hrtimer_start", "hrtimer_expire_entry") or "=tcp_pace_kick" not in rest:
        return None
    for p, c in open_call.items():
        if cpu_of[p] != cpu:
            continue
        if event == "hrtimer_start" and c["arm"] is None:
            c["arm"] = ts
            c["expiry"] = int(rest.split("expires=")[1].split()[0]) / 1e3  # ns -> us
        elif event == "hrtimer_expire_entry" and c["arm"] is not None and not c["fire"]:
            c["fire"] = ts
            return c
    return None


def _row(index: int, c: dict, t1: float) -> dict:
    armed = c["arm"] is not None
    fired = armed and c["fire"] is not None
    r2 = round  # (microseconds to 0.1 ns: the trace's own resolution is 1 us)
    return {
        "call": index,
        "call_us": r2(t1 - c["t0"], 4),
        "armed": armed,
        "arm_at_us": r2(c["arm"] - c["t0"], 4) if armed else None,
        "expiry_ahead_us": r2(c["expiry"] - c["arm"], 4) if armed else None,
        "fired_after_expiry_us": r2(c["fire"] - c["expiry"], 4) if fired else None,
        "returned_after_fire_us": r2(t1 - c["fire"], 4) if fired else None,
    }


def run_command(sc: dict, mode: str, cc: str, duration_s: float) -> list[str]:
    """The harness's command line of one run of the scenario ``sc`` (of :data:`SCENARIOS`).

    >>> " ".join(run_command(SCENARIOS[1][0], "nodelay", "bbr", 2.0)[3:9])
    'run --proto iscsi --sock nodelay --cc'
    >>> run_command(SCENARIOS[0][0], "nagle", "bbr", 2.0)[16:19]
    ['--link', 'veth', '--mtu']
    """
    link = ["--link", "loopback"] if sc["link"] == "loopback" else ["--link", "veth", "--mtu"]
    if sc["link"] != "loopback":
        link.append(sc["link"].removeprefix("veth-"))
    return [
        sys.executable, "-m", "models.measure", "run", "--proto", "iscsi",
        "--sock", mode, "--cc", cc, "--client-sock", str(sc["client_sock_mode"]),
        "--qd", str(sc["qd"]), "--iosize", str(sc["iosize_bytes"]),
        *link, "--pin", "apart", "--no-capture", "--json",
        "--duration", str(duration_s), "--warmup", "0.3",
    ]  # fmt: skip


def traced_mono(
    cmd: list[str], duration_s: float, window_s: float, events: tuple[str, ...] = EVENTS
) -> tuple[list[str], str]:
    """:func:`~ownership_trace.traced` with the trace's timestamps on ``CLOCK_MONOTONIC``, the
    clock of the timers' expiries (the trace's clock is put back afterwards); ``events``: this
    tool's unless given."""
    clock = TRACEFS / "trace_clock"
    before = clock.read_text().split("[")[1].split("]")[0]  # the one in brackets is in use
    clock.write_text("mono")
    try:
        return traced(cmd, events, duration_s, window_s)
    finally:
        clock.write_text(before)


def main(argv: list[str] | None = None) -> int:
    import json

    ns, start = trace_args(__doc__, "pacing_wait_trace.py", argv, "kernel6_pacing_wait", 2.0, 10.0)
    rows, runs = [], {}
    every = [(sc, mode, cc) for sc, runs in SCENARIOS for mode, cc in runs]
    for rep in range(REPEATS):
        for sc, mode, cc in every:
            cmd = run_command(sc, mode, cc, ns.duration)
            lines, out = traced_mono(cmd, ns.duration, ns.window_ms / 1e3)  # ms -> s
            run = json.loads(out)
            iops, other = run["client"]["iops"], run.get("other_cpu_pct")
            these = calls(lines, int(sc["iosize_bytes"]))
            name = f"{sc['link']}/{mode}/{cc}"
            if not these:
                raise RuntimeError(f"{name}: the window traced no send() of a response")
            for r in these:
                rows.append(
                    {**sc, "server_sock_mode": mode, "cc": cc, "repeat": rep, **r,
                     "run_iops": iops, "other_cpu_pct": other}
                )  # fmt: skip
            armed = sum(r["armed"] for r in these)
            runs[f"{name}/{rep}"] = {"iops": iops, "other_cpu_pct": other}
            print(f"{name} repeat {rep}: {iops:,.0f}/s, {len(these)} calls, {armed} armed")
    write_dataset(
        ns,
        start,
        ("Queue Depth pacing wait trace", "tools/pacing_wait_trace.py"),
        rows,
        FIELDS,
        KEY,
        title="A server's send() and bbr's pacing timer, call by call, traced",
        description=(
            "Harness runs of the iSCSI-like loop with the two ends pinned a CPU apart: on veth at "
            "MTU 1500 (Nagle client, 16 KiB responses, QD 8) a Nagle and a MSG_MORE server under "
            "bbr, the Nagle server under cubic and a TCP_NODELAY server under bbr; on the "
            "loopback (TCP_NODELAY on both ends, 64 KiB responses, QD 32) under bbr and cubic; "
            f"{REPEATS} runs each, interleaved. A window in the middle of each run was traced "
            "through tracefs (sendto entry and exit, hrtimer_start, hrtimer_expire_entry); one "
            "row per send() of a response's data by the server, with bbr's pacing timer "
            "(tcp_pace_kick) armed on its CPU during it. Tracing slows the runs a little: IOPS "
            f"and other CPU of the traced runs {json.dumps(runs)}."
        ),
        runs=runs,
        optional=OPTIONAL,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Who preempts whom when the two ends share one CPU: the scheduler's switches, traced.

    sudo .venv/bin/python tools/preempt_trace.py --out data --prefix kernel6_machine4_preempt

With client and server pinned to one CPU, a ``send()`` of one end delivers its segment to the
other end's socket inside the call (the loopback's receive soft interrupt runs on the sending
CPU) and wakes the other end's thread.  Whether that thread runs at once, preempting the sender
when its call returns, or waits until the sender blocks, decides whether a Nagle server's lone
header finds a request still to come that carries its ACK (chapter 9, "Where the two ends run,
for the stalls").  This tool runs the book's loop on the loopback pinned to one CPU (a Nagle
server, 512-byte responses, QD 8; a Nagle and a NODELAY client) and reads the kernel's
tracepoints through tracefs for a window in the middle of each run: ``sched:sched_switch``,
``sched:sched_wakeup`` and ``syscalls:sys_enter_sendto`` / ``sys_exit_sendto``.

For every ``send()`` that woke the other end it records whether the next thing on the CPU after
the call returned was a switch to that end with the caller still runnable (``prev_state=R``:
preempted) or the caller going on.  One row per run, caller and kind of call (the server's
header, the server's data, the client's request).

It also writes ``PREFIX_cpu.csv``: for each run and end, how long that end's thread was on the
CPU in the window (from one ``sched_switch`` that puts it on to the next that takes it off; on
one CPU this includes the soft-interrupt work run in its context, which this kernel, built
without ``CONFIG_IRQ_TIME_ACCOUNTING``, charges to the task), how many times it was put on, and
the operations the window holds (the server's data calls); and ``PREFIX_events.csv``, the
scheduler's events on the pinned CPU in order (each end's added runtime, wake-ups and whether
they left the running task to be rescheduled, switches), which
``models.validation.wakeup_preemption`` replays through :class:`models.sim.eevdf.RunQueue`.
Needs root and tracefs
(:func:`ownership_trace.tracing_problem`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ownership_trace import (  # noqa: E402
    LINE,
    trace_args,
    traced,
    write_dataset,
)

from models.measure import sysinfo  # noqa: E402

EVENTS = (
    "sched/sched_switch",
    "sched/sched_wakeup",
    "sched/sched_stat_runtime",
    "syscalls/sys_enter_sendto",
    "syscalls/sys_exit_sendto",
)
#: The runs: the client's socket mode; every other setting is in RUN_ARGS.
CLIENTS = ("nagle", "nodelay")
IOSIZE = 512  # bytes of a response's data
HEADER = 48  # bytes of the iSCSI-like header and request (models.kernel.runs.HEADER_BYTES)
RUN_ARGS = [
    "--proto", "iscsi", "--sock", "nagle", "--qd", "8", "--iosize", str(IOSIZE),
    "--link", "loopback", "--pin", "same", "--no-capture", "--json",
]  # fmt: skip

FIELDS = [
    ("client_sock_mode", "string", "", "client socket mode of the run: nagle or nodelay"),
    ("caller", "string", "", "the end whose send() woke the other: server or client"),
    ("call", "string", "", "what the send() carried: header, data (the server's) or request"),
    ("wakeups", "integer", "calls", "send() calls in the window that woke the other end's thread"),
    (
        "preempted",
        "integer",
        "calls",
        "of those, calls after which the CPU switched to the woken end with the caller still "
        "runnable (sched_switch prev_state=R): the woken end preempted the caller",
    ),
]
KEY = ["client_sock_mode", "caller", "call"]

CPU_FIELDS = [
    ("client_sock_mode", "string", "", "client socket mode of the run: nagle or nodelay"),
    ("end", "string", "", "the thread: server or client"),
    (
        "on_cpu_s",
        "number",
        "s",
        "time the thread was on the CPU in the window, from the sched_switch that put it on to "
        "the one that took it off (soft-interrupt work in its context included)",
    ),
    ("switched_in", "integer", "times", "sched_switch events that put the thread on the CPU"),
    ("operations", "integer", "operations", "the server's data send() calls in the window"),
    ("window_s", "number", "s", "from the window's first traced event to its last"),
]
CPU_KEY = ["client_sock_mode", "end"]

EVENT_FIELDS = [
    ("client_sock_mode", "string", "", "client socket mode of the run: nagle or nodelay"),
    ("seq", "integer", "events", "the event's place in the traced window's order"),
    ("t_us", "number", "us", "when, from the window's first event on the pinned CPU"),
    (
        "event",
        "string",
        "",
        "run (sched_stat_runtime: the task ran runtime_ns more), wake (sched_wakeup onto the "
        "pinned CPU) or switch (sched_switch on it)",
    ),
    (
        "task",
        "string",
        "",
        "the task: client, server, other-PID (any other task on the CPU); for switch the one "
        "leaving the CPU (idle: the idle task)",
    ),
    (
        "other",
        "string",
        "",
        "switch: the task put on the CPU; wake: the task on the CPU that woke it, if the wake-up "
        "came from the pinned CPU's running task, else -; run: -",
    ),
    ("state", "string", "", "switch: the leaving task's state (R: still runnable), else -"),
    (
        "runtime_ns",
        "integer",
        "ns",
        "run: the CPU time added (soft-interrupt work included); 0 for the other events",
    ),
    (
        "resched",
        "boolean",
        "",
        "wake with a waker (other is not -): whether it left the running task to be "
        "rescheduled (the trace's need-resched flag); False for the other events",
    ),
]
EVENT_KEY = ["client_sock_mode", "seq"]


def _pid_field(rest: str, name: str) -> str:
    return rest.split(f"{name}=")[1].split()[0]


def _ends(parsed: list[dict], iosize: int) -> tuple[str, str]:
    """(server pid, client pid): the server is the process that sends ``iosize``-byte calls."""
    lengths: dict[str, set] = {}
    for e in parsed:
        if e["event"] == "sys_sendto" and "len: 0x" in e["rest"]:
            n = int(e["rest"].split("len: 0x")[1].split(",")[0], 16)
            lengths.setdefault(e["pid"], set()).add(n)
    server = {pid for pid, ns in lengths.items() if iosize in ns}
    others = set(lengths) - server
    if len(server) != 1 or len(others) != 1:
        raise ValueError(f"expected one server and one client sending, got {sorted(lengths)}")
    return server.pop(), others.pop()


def cpu_time(lines: list[str], iosize: int) -> list[dict]:
    """Rows (end, on_cpu_s, switched_in, operations, window_s) from trace ``lines``: each end's
    time on the CPU, from a switch that puts it on to the next that takes it off.

    >>> t = [
    ...     " q-3 [000] ..... 1.000000: sys_sendto(fd: 3, buff: 0x1, len: 0x200, flags: 0)",
    ...     " q-3 [000] ..... 1.000001: sched_switch: prev_comm=q prev_pid=3 prev_prio=120 "
    ...     "prev_state=S ==> next_comm=q next_pid=2 next_prio=120",
    ...     " q-2 [000] ..... 1.000004: sys_sendto(fd: 4, buff: 0x1, len: 0x30, flags: 0x4000)",
    ...     " q-2 [000] ..... 1.000005: sched_switch: prev_comm=q prev_pid=2 prev_prio=120 "
    ...     "prev_state=R ==> next_comm=q next_pid=3 next_prio=120",
    ...     " q-3 [000] ..... 1.000007: sched_switch: prev_comm=q prev_pid=3 prev_prio=120 "
    ...     "prev_state=S ==> next_comm=swapper next_pid=0 next_prio=120",
    ... ]
    >>> [(r["end"], round(r["on_cpu_s"] * 1e6), r["switched_in"]) for r in cpu_time(t, 512)]
    [('client', 4, 1), ('server', 2, 1)]
    """
    parsed = [m.groupdict() for m in map(LINE.match, lines) if m]
    server, client = _ends(parsed, iosize)
    on: dict[str, float] = {}  # pid -> when it was put on the CPU, s
    spent = {server: 0.0, client: 0.0}
    count = {server: 0, client: 0}
    ops = 0
    for e in parsed:
        t = float(e["ts"])
        if e["event"] == "sched_switch":
            prev, nxt = _pid_field(e["rest"], "prev_pid"), _pid_field(e["rest"], "next_pid")
            if prev in on:
                spent[prev] += t - on.pop(prev)
            if nxt in spent:
                on[nxt] = t
                count[nxt] += 1
        elif (
            e["event"] == "sys_sendto" and e["pid"] == server and f"len: {iosize:#x}," in e["rest"]
        ):
            ops += 1
    window = float(parsed[-1]["ts"]) - float(parsed[0]["ts"]) if parsed else 0.0
    return [
        {
            "end": end,
            "on_cpu_s": round(spent[pid], 9),
            "switched_in": count[pid],
            "operations": ops,
            "window_s": round(window, 6),
        }
        for end, pid in (("client", client), ("server", server))
    ]


def sched_events(lines: list[str], iosize: int) -> list[dict]:
    """The scheduler's events of the pinned CPU (the one the ends ran on) from trace ``lines``,
    the two ends named: rows of :data:`EVENT_FIELDS` without the run's socket mode.

    >>> t = [
    ...     " q-3 [000] ..... 1.000000: sys_sendto(fd: 3, buff: 0x1, len: 0x200, flags: 0)",
    ...     " q-2 [000] ..... 1.000001: sys_sendto(fd: 4, buff: 0x1, len: 0x30, flags: 0x4000)",
    ...     " q-2 [000] d.s6. 1.000002: sched_stat_runtime: comm=q pid=2 runtime=1500 [ns]",
    ...     " q-2 [000] dNs6. 1.000003: sched_wakeup: comm=q pid=3 prio=120 target_cpu=000",
    ...     " q-2 [000] d..2. 1.000004: sched_switch: prev_comm=q prev_pid=2 prev_prio=120 "
    ...     "prev_state=R ==> next_comm=q next_pid=3 next_prio=120",
    ... ]
    >>> [(r["event"], r["task"], r["other"], r["resched"]) for r in sched_events(t, 512)]
    [('run', 'client', '-', False), ('wake', 'server', 'client', True), ('switch', 'client', 'server', False)]
    """
    parsed = [m.groupdict() for m in map(LINE.match, lines) if m]
    server, client = _ends(parsed, iosize)
    names = {server: "server", client: "client", "0": "idle"}
    cpus = [e["cpu"] for e in parsed if e["pid"] in (server, client)]
    cpu = max(set(cpus), key=cpus.count)
    rows: list[dict] = []
    t0: float | None = None

    def name(pid: str) -> str:
        return names.get(pid, f"other-{pid}")

    for e in parsed:
        event, rest = e["event"], e["rest"]
        here = e["cpu"] == cpu
        if event == "sched_wakeup":
            if _pid_field(rest, "target_cpu") != cpu:
                continue
        elif event not in ("sched_switch", "sched_stat_runtime") or not here:
            continue
        t = float(e["ts"])
        t0 = t if t0 is None else t0
        row = {"seq": len(rows), "t_us": round((t - t0) * 1e6, 3)}  # s -> us
        row.update(other="-", state="-", runtime_ns=0, resched=False)
        if event == "sched_stat_runtime":
            row.update(event="run", task=name(_pid_field(rest, "pid")))
            row["runtime_ns"] = int(_pid_field(rest, "runtime"))
        elif event == "sched_wakeup":
            woken = _pid_field(rest, "pid")
            row.update(event="wake", task=name(woken))
            if here and e["pid"] not in ("0", woken):  # (the line's task is the CPU's)
                row["other"] = name(e["pid"])
                row["resched"] = e["flags"][1] in "Nn"
        else:
            prev, nxt = _pid_field(rest, "prev_pid"), _pid_field(rest, "next_pid")
            row.update(event="switch", task=name(prev), other=name(nxt))
            row["state"] = _pid_field(rest, "prev_state")[:1]
        rows.append(row)
    return rows


def summarise(lines: list[str], iosize: int) -> list[dict]:
    """Rows (caller, call, wakeups, preempted) from trace ``lines``: the server is the process
    that sends ``iosize``-byte calls.

    >>> t = [
    ...     " q-2 [000] ..... 1.000001: sys_sendto(fd: 4, buff: 0x1, len: 0x30, flags: 0x4000)",
    ...     " q-2 [000] ..... 1.000002: sched_wakeup: comm=q pid=3 prio=120 target_cpu=000",
    ...     " q-2 [000] ..... 1.000003: sys_sendto -> 0x30",
    ...     " q-2 [000] ..... 1.000004: sched_switch: prev_comm=q prev_pid=2 prev_prio=120 "
    ...     "prev_state=R ==> next_comm=q next_pid=3 next_prio=120",
    ...     " q-3 [000] ..... 1.000005: sys_sendto(fd: 3, buff: 0x1, len: 0x30, flags: 0x4000)",
    ...     " q-3 [000] ..... 1.000006: sched_wakeup: comm=q pid=2 prio=120 target_cpu=000",
    ...     " q-3 [000] ..... 1.000007: sys_sendto -> 0x30",
    ...     " q-3 [000] ..... 1.000008: sys_sendto(fd: 3, buff: 0x1, len: 0x200, flags: 0)",
    ...     " q-3 [000] ..... 1.000009: sys_sendto -> 0x200",
    ... ]
    >>> [(r["caller"], r["call"], r["wakeups"], r["preempted"]) for r in summarise(t, 512)]
    [('client', 'request', 1, 1), ('server', 'header', 1, 0)]
    """
    parsed = [m.groupdict() for m in map(LINE.match, lines) if m]
    server = {_ends(parsed, iosize)[0]}
    counts: dict[tuple[str, str], list[int]] = {}

    def tally(role_kind: tuple[str, str], preempted: bool) -> None:
        c = counts.setdefault(role_kind, [0, 0])
        c[0] += 1
        c[1] += int(preempted)

    call: tuple[str, str, str] | None = None  # (caller pid, role, kind) of the open send()
    woke = False
    after: tuple[str, str, str] | None = None  # a call that woke the peer has just returned
    for e in parsed:
        pid, event, rest = e["pid"], e["event"], e["rest"]
        enter = event == "sys_sendto" and "len: 0x" in rest
        if after is not None and pid == after[0]:  # what the caller's CPU did next
            preempted = event == "sched_switch" and "prev_state=R " in rest
            tally((after[1], after[2]), preempted)
            after = None
        if enter:
            n = int(rest.split("len: 0x")[1].split(",")[0], 16)
            role = "server" if pid in server else "client"
            kind = "request" if role == "client" else ("data" if n == iosize else "header")
            call, woke = (pid, role, kind), False
        elif call is not None and pid == call[0] and event == "sched_wakeup":
            woke = woke or _pid_field(rest, "pid") != pid
        elif call is not None and pid == call[0] and event == "sys_sendto":  # its exit
            if woke:
                after = call
            call = None
    return [
        {"caller": role, "call": kind, "wakeups": n, "preempted": p}
        for (role, kind), (n, p) in sorted(counts.items())
    ]


def trace_run(
    client: str, duration_s: float, window_s: float
) -> tuple[list[dict], list[dict], list[dict], dict]:
    """One harness run traced for ``window_s`` in its middle: (rows, CPU rows, scheduler event
    rows, the run's JSON)."""
    cmd = [sys.executable, "-m", "models.measure", "run", "--client-sock", client, *RUN_ARGS]
    cmd += ["--duration", str(duration_s), "--warmup", "0.3"]
    lines, out = traced(cmd, EVENTS, duration_s, window_s)
    rows = summarise(lines, IOSIZE), cpu_time(lines, IOSIZE), sched_events(lines, IOSIZE)
    return (*rows, json.loads(out))


def main(argv: list[str] | None = None) -> int:
    ns, start = trace_args(
        __doc__, "preempt_trace.py", argv, "kernel6_machine4_preempt", 3.0, 1000.0
    )
    rows, cpu_rows, event_rows, runs = [], [], [], {}
    for client in CLIENTS:
        got, cpu, events, run = trace_run(client, ns.duration, ns.window_ms / 1e3)  # ms -> s
        c = run["client"]
        runs[client] = {
            "iops": c["iops"],
            # share of the window's operations over the harness's stall mark (%)
            "stalled_pct": round(100.0 * c["stalled_ops"] / max(c["window_ops"], 1), 2),
            "other_cpu_pct": run.get("other_cpu_pct"),
        }
        rows += [{"client_sock_mode": client, **r} for r in got]
        cpu_rows += [{"client_sock_mode": client, **r} for r in cpu]
        event_rows += [{"client_sock_mode": client, **r} for r in events]
        print(client, runs[client], got, cpu, flush=True)
    write_dataset(
        ns,
        start,
        ("Queue Depth preemption trace", "tools/preempt_trace.py"),
        rows,
        FIELDS,
        KEY,
        title="Which end preempts the other on one CPU, traced",
        description=(
            "Two harness runs of the iSCSI-like loop on the loopback with client and server "
            "pinned to one CPU (Nagle server, 512-byte responses, QD 8; a Nagle and a NODELAY "
            "client). A window in the middle of each run was traced through tracefs "
            "(sched_switch, sched_wakeup, sendto entry and exit): for every send() that woke "
            "the other end, whether the CPU then switched to it with the caller still runnable. "
            f"The traced runs' own rates and stalled shares: {json.dumps(runs)}."
        ),
        runs=runs,
    )
    irq_time = sysinfo.config_option("CONFIG_IRQ_TIME_ACCOUNTING")
    write_dataset(
        ns,
        start,
        ("Queue Depth preemption trace", "tools/preempt_trace.py"),
        cpu_rows,
        CPU_FIELDS,
        CPU_KEY,
        title="Each end's time on one shared CPU, traced",
        description=(
            "The same two traced windows as the preemption dataset of the same prefix (loopback, "
            "client and server pinned to one CPU, Nagle server, 512-byte responses, QD 8; a "
            "Nagle and a NODELAY client): for each end, the time its thread was on the CPU, "
            "from each sched_switch that put it on to the next that took it off (soft-interrupt "
            "work run in its context included, unless the kernel accounts interrupt time apart: "
            f"CONFIG_IRQ_TIME_ACCOUNTING={irq_time}), how often it was put on, and the "
            f"operations in the window. The traced runs' own rates and stalled shares: "
            f"{json.dumps(runs)}."
        ),
        runs=runs,
        name=f"{ns.prefix}_cpu",
    )
    write_dataset(
        ns,
        start,
        ("Queue Depth preemption trace", "tools/preempt_trace.py"),
        event_rows,
        EVENT_FIELDS,
        EVENT_KEY,
        title="The scheduler's events on one shared CPU, traced",
        description=(
            "The same two traced windows as the preemption dataset of the same prefix (loopback, "
            "client and server pinned to one CPU, Nagle server, 512-byte responses, QD 8; a "
            "Nagle and a NODELAY client): every sched_stat_runtime and sched_switch on the "
            "pinned CPU and every sched_wakeup onto it, in order, the two ends named and other "
            "tasks by pid; for a wake-up issued by the CPU's running task, whether it left that "
            "task to be rescheduled (the trace's need-resched flag). Kernel build option "
            f"CONFIG_IRQ_TIME_ACCOUNTING={irq_time}. The traced runs' own rates and stalled "
            f"shares: {json.dumps(runs)}."
        ),
        runs=runs,
        name=f"{ns.prefix}_events",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

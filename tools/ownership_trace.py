"""Where a segment waits on one machine: the socket's owner and its backlog, traced.

    sudo .venv/bin/python tools/ownership_trace.py --out data [--set paced|small]

Linux lets one context at a time work on a socket.  While a thread is inside ``send()`` or
``recv()`` on it, the socket is *owned* (``lock_sock``); a segment that arrives then is not
processed by the receive soft interrupt but queued to the socket's backlog (``tcp_add_backlog``)
and processed when the thread releases the socket at the end of its call (``release_sock`` ->
``__release_sock``), in the thread's own context and on its CPU.  This tool measures how often
that happens in the book's iSCSI-like loop with the two ends on one machine, pinned a CPU apart,
in one of the sets of runs of :data:`models.validation.ownership.SETS` (``--set``; each names its
dataset, link, scenario and runs, which the comparison simulates): ``paced``, 16 KiB responses at
QD 8 from a MSG_MORE server and a Nagle server, each under bbr and under reno; ``small``, 2 KiB
responses at QD 64 from a server with MSG_MORE and TCP_NODELAY, under bbr and under reno.

For each run it reads the kernel's own tracepoints through tracefs (no bpftrace needed) for a
window in the middle of the run: ``syscalls:sys_enter_sendto`` / ``sys_exit_sendto``,
``net:net_dev_queue``, ``tcp:tcp_probe`` (a segment about to be processed by its socket; the
trace line says whether that happens in a soft interrupt or in process context, which for an
established socket is the backlog) and ``timer:hrtimer_expire_entry`` (bbr's pacing timer,
``tcp_pace_kick``).  One row per run: the server's ``send()`` of a response's data (its median
length), the share of the segments each socket processed from its backlog, and the pacing timers
per operation.

Tracing costs each event a few hundred nanoseconds, so the traced runs are somewhat slower than
untraced ones; the sidecar records each run's own IOPS.  Needs root and a kernel with tracefs
(:func:`tracing_problem`).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.data import tool_sidecar  # noqa: E402
from models.measure import sysinfo  # noqa: E402
from models.measure.netns import CLIENT_ADDR, SERVER_ADDR  # noqa: E402
from models.validation.ownership import SETS, TraceSet  # noqa: E402

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = (
    "syscalls/sys_enter_sendto",
    "syscalls/sys_exit_sendto",
    "net/net_dev_queue",
    "tcp/tcp_probe",
    "timer/hrtimer_expire_entry",
)


def run_args(trace: TraceSet) -> list[str]:
    """The harness's options of every run of ``trace`` besides the server's socket mode and the
    congestion control: its scenario, the two ends a CPU apart."""
    sc, link = trace.scenario, trace.link
    return [
        "--proto", "iscsi", "--client-sock", str(sc["client_sock_mode"]),
        "--qd", str(sc["qd"]), "--iosize", str(sc["iosize_bytes"]),
        "--link", link.kind, "--mtu", str(link.mtu),
        *(["--rate", str(link.rate_bits_per_s)] if link.rate_bits_per_s else []),
        "--pin", "apart", "--no-capture", "--json",
    ]  # fmt: skip


# "  comm-pid  [cpu] flags  seconds: event: fields" (the default trace format, Linux 6)
LINE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<flags>\S{5})\s+"
    r"(?P<ts>\d+\.\d+):\s+(?P<event>\w+)(?P<rest>.*)$"
)


def events(lines: list[str]):
    """Each line of a trace that :data:`LINE` reads, as ``(time in us, event, the rest of the
    line, pid, CPU, whether it ran in a soft interrupt)`` (the third of the line's flags).

    >>> list(events([" qdperf-7  [001] ..s1. 10.000002: sys_sendto -> 0x30", "# tracer: nop"]))
    [(10000002.0, 'sys_sendto', ' -> 0x30', 7, 1, True)]
    """
    for line in lines:
        m = LINE.match(line)
        if m is not None:
            ts = float(m["ts"]) * 1e6  # s -> us
            soft = m["flags"][2] in "sS"
            yield ts, m["event"], m["rest"], int(m["pid"]), int(m["cpu"]), soft


FIELDS = [
    (
        "server_sock_mode",
        "string",
        "",
        "server socket mode of the run: more (MSG_MORE), more_nodelay (MSG_MORE and "
        "TCP_NODELAY) or nagle",
    ),
    ("cc", "string", "", "congestion control of both sockets"),
    ("iops", "number", "1/s", "the run's operations per second (traced)"),
    ("window_ms", "number", "ms", "length of the traced window in the middle of the run"),
    ("ops", "integer", "operations", "responses whose data the server sent in the window"),
    (
        "send_us_p50",
        "number",
        "us",
        "median time the server spent in one send() of a response's data (sendto of the "
        "response's payload, entry to exit)",
    ),
    (
        "send_busy_pct",
        "number",
        "%",
        "share of the window the server's thread spent in those send() calls",
    ),
    (
        "send_all_busy_pct",
        "number",
        "%",
        "share of the window the server's thread spent in any send() call (sendto entry to "
        "exit: a response's header and its data)",
    ),
    (
        "server_backlog_pct",
        "number",
        "%",
        "share of the segments the server's socket processed (tcp_probe) in process context: "
        "queued to its backlog while its thread owned it, processed at release_sock",
    ),
    (
        "client_backlog_pct",
        "number",
        "%",
        "the same for the data segments the client's socket processed",
    ),
    (
        "pace_kicks_per_op",
        "number",
        "1/operation",
        "bbr's pacing timer (tcp_pace_kick) expiries per operation",
    ),
]
KEY = ["server_sock_mode", "cc"]


def _softirq(flags: str) -> bool:
    """The trace line's context column: ``s`` (soft interrupt) or ``H`` (hard within soft)."""
    return flags[2] in "sH"


def summarise(lines: list[str], iosize: int) -> dict:
    """One traced window's row (without the run's IOPS): see :data:`FIELDS`."""
    sends: dict[int, float] = {}  # pid -> entry time of an open sendto of the payload
    durations: list[float] = []
    others: dict[int, float] = {}  # pid -> entry time of an open sendto of anything else
    other_durations: dict[int, list[float]] = {}  # pid -> its other sendto calls' lengths
    server_pids: set[int] = set()  # the threads that sent a response's data
    first = last = None
    server_rx = [0, 0]  # [soft interrupt, backlog]
    client_rx = [0, 0]
    kicks = 0
    size = f"len: {iosize:#x},"
    for line in lines:
        m = LINE.match(line)
        if m is None:
            continue
        ts = float(m["ts"])
        first = ts if first is None else first
        last = ts
        event, rest, pid = m["event"], m["rest"], int(m["pid"])
        if event == "sys_sendto":
            if rest.startswith("(") and size in rest:
                sends[pid] = ts
                server_pids.add(pid)
            elif rest.startswith("("):
                others[pid] = ts
            elif rest.startswith(" ->") and pid in sends:
                durations.append(ts - sends.pop(pid))
            elif rest.startswith(" ->") and pid in others:
                other_durations.setdefault(pid, []).append(ts - others.pop(pid))
        elif event == "tcp_probe":
            backlog = not _softirq(m["flags"])
            if f"src={SERVER_ADDR}:" in rest:
                server_rx[backlog] += 1
            elif f"src={CLIENT_ADDR}:" in rest and "data_len=0 " not in rest:
                client_rx[backlog] += 1
        elif event == "hrtimer_expire_entry" and "function=tcp_pace_kick" in rest:
            kicks += 1
    if not durations or first is None or last is None:
        raise RuntimeError("the window traced no send() of a response: did the run stop early?")
    window = last - first  # seconds
    ops = len(durations)
    # the server's other calls: those of the threads that sent a response's data
    server_other = sum(sum(other_durations.get(pid, ())) for pid in server_pids)
    return {
        "window_ms": round(window * 1e3, 3),  # s -> ms
        "ops": ops,
        "send_us_p50": round(statistics.median(durations) * 1e6, 3),  # s -> us
        "send_busy_pct": round(100 * sum(durations) / window, 2),
        "send_all_busy_pct": round(100 * (sum(durations) + server_other) / window, 2),
        "server_backlog_pct": round(100 * server_rx[1] / max(1, sum(server_rx)), 2),
        "client_backlog_pct": round(100 * client_rx[1] / max(1, sum(client_rx)), 2),
        "pace_kicks_per_op": round(kicks / ops, 4),
    }


def description(runs: dict, trace: TraceSet = SETS["paced"]) -> str:
    """The sidecar's description of the traced runs of ``trace``, ``runs`` their IOPS and other
    CPU (the sidecar's ``measurement.runs``)."""
    sc, link = trace.scenario, trace.link
    count = {2: "Two", 4: "Four"}.get(len(trace.runs), str(len(trace.runs)))
    return (
        f"{count} harness runs of the iSCSI-like loop on {link.kind} at MTU {link.mtu} with the "
        f"two ends pinned a CPU apart ({str(sc['client_sock_mode']).upper()} client, "
        f"{int(sc['iosize_bytes']) // 1024} KiB responses, QD {sc['qd']}): {trace.runs_text}. "
        "A window in the middle of each run was "
        "traced through tracefs (sendto entry and exit, net_dev_queue, tcp_probe, "
        "hrtimer_expire_entry); one row per run. Tracing slows the runs a little: IOPS and "
        f"other CPU of the traced runs {json.dumps(runs)}."
    )


def tracing_problem(tracefs: Path | None = None, euid: int | None = None) -> str | None:
    """What this machine lacks for the trace, in one line, or ``None``: root (the tool writes
    tracefs, the harness makes network namespaces) and tracefs mounted at ``tracefs`` (default
    :data:`TRACEFS`); ``euid`` is this process's effective user id unless given.

    >>> tracing_problem(Path("/no/such/tracefs"), euid=1000)
    'needs root and tracefs at /no/such/tracefs (running as uid 1000: run it with sudo)'
    """
    tracefs = TRACEFS if tracefs is None else tracefs
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        return f"needs root and tracefs at {tracefs} (running as uid {euid}: run it with sudo)"
    try:
        mounted = (tracefs / "trace").is_file()
    except OSError:  # (a folder this user may not read)
        mounted = False
    if not mounted:
        return (
            f"needs tracefs mounted at {tracefs}, found none "
            f"(as root: mount -t tracefs nodev {tracefs})"
        )
    return None


def _buffer_kb(text: str) -> str:
    """The per-CPU trace buffer's size in KiB from tracefs's ``buffer_size_kb``, which reads
    ``7 (expanded: 1408)`` before the buffer was first used.

    >>> _buffer_kb("16387"), _buffer_kb("7 (expanded: 1408)")
    ('16387', '1408')
    """
    if "expanded:" in text:
        return text.split("expanded:")[1].strip(" )\n")
    return text.split()[0]


def _tracefs(path: str, value: str) -> None:
    (TRACEFS / path).write_text(value)


def traced(
    cmd: list[str], events: tuple[str, ...], duration_s: float, window_s: float
) -> tuple[list[str], str]:
    """Run the harness command ``cmd`` (a run of ``duration_s`` measured seconds) with the tracefs
    ``events`` recorded for ``window_s`` in its middle: (the trace's lines, the run's output).
    The trace buffer's size is put back afterwards."""
    _tracefs("tracing_on", "0")
    _tracefs("trace", "")
    buffer_kb = _buffer_kb((TRACEFS / "buffer_size_kb").read_text())  # put back after the run
    _tracefs("buffer_size_kb", "16384")
    for e in events:
        _tracefs(f"events/{e}/enable", "1")
    try:
        run = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        # namespaces, warm-up, then half the measured window (seconds)
        time.sleep(1.0 + duration_s / 2)
        _tracefs("tracing_on", "1")
        time.sleep(window_s)
        _tracefs("tracing_on", "0")
        out, _ = run.communicate(timeout=4 * duration_s + 120)
    finally:
        _tracefs("tracing_on", "0")
        for e in events:
            _tracefs(f"events/{e}/enable", "0")
    lines = (TRACEFS / "trace").read_text().splitlines()
    _tracefs("buffer_size_kb", buffer_kb)  # (resizing empties the buffer: read it first)
    if run.returncode:
        raise RuntimeError(f"harness run failed ({run.returncode}): {' '.join(cmd)}")
    return lines, out


def write_dataset(
    ns: argparse.Namespace,
    start: str,
    tool: tuple[str, str],
    rows: list[dict],
    fields: list,
    key: list[str],
    *,
    title: str,
    description: str,
    runs: dict,
    name: str | None = None,
    command: str | None = None,
    optional: tuple[str, ...] = (),
) -> Path:
    """``rows`` as ``ns.out/NAME.csv`` with its sidecar (:func:`models.data.tool_sidecar`):
    ``tool`` is the tool's (title, file), ``ns`` its options (:func:`trace_args`), ``start``
    when it started, ``runs`` the runs' own records, ``name`` the dataset's (default
    ``ns.prefix``), ``command`` the tool's command line (default: a tracing tool's, from
    ``ns``), ``optional`` the columns that may be empty; the CSV's path."""
    dataset = name or ns.prefix
    chosen = getattr(ns, "set", None)  # (only this tool has sets of runs)
    command = command or (
        f"{tool[1]} --out {ns.out} --prefix {ns.prefix} "
        f"--duration {ns.duration:g} --window-ms {ns.window_ms:g}"
        + (f" --set {chosen}" if chosen else "")
    )
    ns.out.mkdir(parents=True, exist_ok=True)
    csv_path = ns.out / f"{dataset}.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[col for col, *_ in fields], lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    meta = tool_sidecar(
        csv_path,
        fields,
        key,
        title=title,
        description=description,
        source=(tool[0], tool[1], f"command line: {command}"),
        year=int(start[:4]),
        transcription=measured_on(command, start),
        measurement={"runs": runs},
        optional=optional,
    )
    (ns.out / f"{dataset}.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {csv_path} ({len(rows)} rows)")
    return csv_path


def measured_on(command: str, start: str) -> str:
    """The sidecar's transcription: the command, the kernel and its default congestion
    control, when it started."""
    k = sysinfo.kernel_info()
    kernel = f"{k['release']} (CONFIG_HZ={k['config_hz']}, {k['cpus']} CPUs)"
    return (
        f"Measured by `{command}` on kernel {kernel} (default congestion control "
        f"{sysinfo.tcp_sysctls().get('net.ipv4.tcp_congestion_control', '?')}), started "
        f"{start}, the machine otherwise idle."
    )


def trace_run(
    trace: TraceSet, mode: str, cc: str, duration_s: float, window_s: float
) -> tuple[dict, dict]:
    """One harness run of ``trace`` traced for ``window_s`` in its middle: (row, the run's
    JSON)."""
    cmd = [sys.executable, "-m", "models.measure", "run", "--sock", mode, "--cc", cc]
    cmd += [*run_args(trace), "--duration", str(duration_s), "--warmup", "0.3"]
    lines, out = traced(cmd, EVENTS, duration_s, window_s)
    return summarise(lines, int(trace.scenario["iosize_bytes"])), json.loads(out)


def trace_args(
    doc: str,
    tool: str,
    argv: list[str] | None,
    prefix: str | None,
    duration_s: float,
    window_ms: float,
    sets: tuple[str, ...] = (),
) -> tuple[argparse.Namespace, str]:
    """A tracing tool's command line (``--out``, ``--prefix``, ``--duration``, ``--window-ms``,
    the window at most half the run, in its middle; ``--set`` one of ``sets``, the first by
    default, when given), refused before any run without root or tracefs: (the options, the
    start time in UTC).  ``prefix`` is the default prefix; with ``None`` the tool chooses it
    from the set when ``--prefix`` is not given."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default=prefix)
    if sets:
        p.add_argument("--set", choices=sets, default=sets[0], help="the runs to trace")
    p.add_argument("--duration", type=float, default=duration_s, help="measured s of each run")
    p.add_argument("--window-ms", type=float, default=window_ms, help="traced ms of each run")
    ns = p.parse_args(argv)
    if not 0 < ns.window_ms <= 500 * ns.duration:  # s -> ms, halved
        p.error(f"--window-ms must be in (0, {500 * ns.duration:g}], got {ns.window_ms}")
    problem = tracing_problem()
    if problem:
        p.exit(2, f"{tool}: error: {problem}\n")
    return ns, dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def main(argv: list[str] | None = None) -> int:
    ns, start = trace_args(__doc__, "ownership_trace.py", argv, None, 2.0, 20.0, sets=tuple(SETS))
    trace = SETS[ns.set]
    ns.prefix = ns.prefix or trace.dataset
    rows, runs = [], {}
    for mode, cc in trace.runs:
        row, run = trace_run(trace, mode, cc, ns.duration, ns.window_ms / 1e3)  # ms -> s
        iops = run["client"]["iops"]
        rows.append({"server_sock_mode": mode, "cc": cc, "iops": iops, **row})
        runs[f"{mode}/{cc}"] = {"iops": iops, "other_cpu_pct": run.get("other_cpu_pct")}
        print(rows[-1], flush=True)
    write_dataset(
        ns,
        start,
        ("Queue Depth ownership trace", "tools/ownership_trace.py"),
        rows,
        FIELDS,
        KEY,
        title="Segments processed from a socket's backlog, and the server's send(), traced",
        description=description(runs, trace),
        runs=runs,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

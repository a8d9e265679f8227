"""Host-cost microbenchmarks: ``python -m models.measure costs [--json] [--quick]``.

The C program ``csrc/qdcosts.c`` (compiled by :mod:`models.measure.build`) measures, on the host
loopback and without privileges:

* the **wake-up latency** of a thread blocked in ``read()`` on a pipe and in ``FUTEX_WAIT``,
  placed by the scheduler, and over a pipe to a thread pinned to another CPU
  (``pipe_cross``: that CPU went idle meanwhile, as a QD-1 loop's CPUs do): the waker stamps
  the time and wakes it, the woken thread reads the clock (lmbench's pipe method, McVoy and
  Staelin 1996, timed one way); median and 90th percentile, microseconds;
* the same cross-CPU wake-up after the sleeper's CPU has idled for a set gap (2 to 320 us; the
  waker spins through it), ``cross_by_gap``: a virtual CPU that halted only briefly may still be
  polling and wake faster than one that slept; and after long gaps (2.5 to 40 ms, the idle a
  delayed-ACK stall leaves), ``cross_by_long_gap``: a virtual CPU idle for milliseconds may have
  been descheduled by its host and wake slower still; each with what the waker's ``write()``
  cost, and each long gap again with the waker asleep through it too (``asleep_*``), as the two
  threads of a stalled loop both are;
* the cross-CPU wake-up after the same short gaps over a **loopback TCP socket** instead of the
  pipe (``tcp_by_gap``): the sleeper waits in ``poll()`` as the harness's threads do, and the
  latency runs from the waker's ``send()`` to ``poll()``'s return, the segment's trip through
  both stacks included; and a **ping-pong** of 48-byte messages between two threads on two CPUs
  over such a socket (``pingpong``), each waiting in ``poll()`` and, for comparison, each
  spinning: half the difference of the round trips is what a wake-up adds in a request/response
  loop, where the waker goes idle right after its ``send()``; and the requester's ``send()`` in
  its thread's CPU clock in both, which wakes the responder in the first and not in the second
  (``waker_us``, the waker's share of a wake-up);
* what a TCP wake-up costs **the waker** after each idle gap, short (``tcp_by_gap``, the waker
  spinning through the gap) and long (``tcp_by_long_gap``, 2.5 to 40 ms, the waker asleep through
  it as in a stalled loop): the waker's ``send()`` (wall clock) with the peer asleep in ``poll()``
  and again with the peer spinning on a non-blocking peek, which wakes nobody
  (``waker_median_us`` and ``spin_peer_waker_median_us``; their difference is the wake-up's price
  to the waker, :func:`models.measure.wakeups.tcp_waker_curve`);
* the **CPU time of** ``send()`` for 48 B, 512 B, 4 KiB and 64 KiB on a connected loopback TCP
  socket with ``TCP_NODELAY`` (and 48 B with ``MSG_MORE``, a call that sends no segment), per
  call: the thread's CPU clock over batches of calls, the receiver drained between batches; with
  the receiver's data segments per call (``tcpi_data_segs_in``);
* the **receive cost per segment**: CPU of ``recv()`` of 512-byte segments already queued; and
  of one 64 KiB ``send()`` read back whole, whose cost beyond as many small segments is the
  copy's cost per byte;
* the same 64 KiB transfer between two threads pinned to different CPUs (``large_cross``), as a
  client and server usually run: each side's thread CPU, and what writing for a reader on the
  other CPU adds per byte to the one-thread ``send()`` (recorded beside the profile's costs).
* the **harness's loop itself** (``loop_bytes``): a server and a client thread pinned to two CPUs
  over a loopback TCP socket, 8 requests outstanding, responses of 4, 16 and 32 KiB; the CPU of
  the server's payload ``send()`` and of the client's ``recv()`` calls per operation, and from
  them (:func:`loop_bytes`) the copies' cost per byte as the loop pays it, with many responses
  in flight, where the benchmarks above move one transfer at a time, from caches that hold it;
* the **cost of a timer's interrupt** on the CPU it fires on (``timer_fire``: the longest pause
  of a thread spinning on the clock while its timer fires, less the longest without a timer):
  what bbr's pacing timer costs when it fires (``Host.timer_fire_cpu_s``);
* the **cost of arming a timer** that becomes the CPU's next event (``timer_arm``: reprogramming
  the clock event, a trap to the hypervisor on a virtual machine), against one that does not;
  what bbr's pacing timer costs the CPU that arms it (``Host.timer_arm_cpu_s``);
* the **CPU of one pure ACK** (``ack``), sent by the receiver and processed by the sender, which
  on loopback both run in the calling thread: a 64-byte ``send()``, its ``recv()``, then
  ``setsockopt(TCP_QUICKACK)`` on a receiver in pingpong mode, 2 (the due ACK leaves now) in one
  batch and 0 (it stays delayed) in the next; the batches alternate, and the receiver's
  segments out (``tcpi_segs_out``, pure ACKs only) count the ACKs.  :func:`ack_cost` divides the
  CPU difference by the ACK difference (about one ACK per iteration against one per two).

Each number is a median over repeated batches (robust to the preemptions of a loaded machine).
The send costs are then split (:func:`send_model`) by least squares into a cost per call, per
segment and per byte::

    cpu(call) = per_call + per_segment * segments_per_call + per_byte * bytes

On loopback a segment is one buffer (``skb``) and the receiver's protocol processing runs in the
sender's soft interrupt, so ``per_segment`` is a segment's cost end to end.
:mod:`models.sim.hostprofile` maps these onto the simulator's ``Host`` fields.  The run also
records the machine's settings (:func:`settings`): kernel, ``CONFIG_HZ``, CPUs, congestion control,
autocorking, whether interrupt time is accounted apart from tasks, and the load.

A full run takes a few seconds; ``quick=True`` well under one (for tests; its numbers are noisier).

>>> round(percentile([1.0, 2.0, 3.0, 4.0], 50), 2)
2.5
>>> m = send_model([(0.7, 0.0, 48), (3.0, 1.0, 512), (3.4, 1.0, 4096), (12.0, 2.0, 65536)])
>>> m["per_call_us"] > 0 and m["per_segment_us"] > 0
True
"""

from __future__ import annotations

import datetime
import gzip
import json
import math
import platform
import subprocess
from pathlib import Path
from typing import Any

from . import build, sysinfo
from .costs_text import format_costs
from .stats import median as _median
from .stats import percentile
from .wakestats import summarise_wake

__all__ = [
    "QUICK",
    "FULL",
    "percentile",
    "send_model",
    "settings",
    "run_costs",
    "ack_cost",
    "MIN_ACK_STEP",
    "summarise",
    "format_costs",
    "timer_seen_share",
    "loop_bytes",
]

#: Options of a full run: wake-up samples per method, repeats per send size, the waker's mean
#: gap (microseconds) and the hard time limit (seconds).
FULL = {"samples": 2000, "repeats": 40, "gap_us": 100.0, "time_limit_s": 60.0}
#: Options of a quick run (tests): about three seconds on an idle machine (the long gaps, four
#: times).
QUICK = {"samples": 150, "repeats": 8, "gap_us": 40.0, "time_limit_s": 20.0}


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting for a small square system."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12:
            raise ValueError(
                "send sizes: the per-call, per-segment and per-byte costs cannot be told apart"
            )
        m[c], m[p] = m[p], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            for k in range(c, n + 1):
                m[r][k] -= f * m[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def send_model(points: list[tuple[float, float, int]]) -> dict[str, float]:
    """Least-squares split of ``send()`` costs into per call, per segment and per byte.

    Parameters
    ----------
    points
        ``(cpu_us_per_call, segments_per_call, bytes_per_call)`` per measured size (at least 3,
        with segments and bytes not proportional).

    Returns
    -------
    dict
        ``per_call_us``, ``per_segment_us`` (microseconds), ``per_byte_ns`` (nanoseconds) and
        ``max_residual_us`` (the largest misfit of a point, microseconds).
    """
    if len(points) < 3:
        raise ValueError(f"points: need at least 3 sizes, got {len(points)}")
    rows = [[1.0, float(s), float(n)] for _, s, n in points]
    y = [float(c) for c, _, _ in points]
    ata = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    aty = [sum(r[i] * v for r, v in zip(rows, y)) for i in range(3)]
    a, b, beta = _solve(ata, aty)
    resid = [abs(a + b * r[1] + beta * r[2] - v) for r, v in zip(rows, y)]
    return {
        "per_call_us": a,
        "per_segment_us": b,
        "per_byte_ns": beta * 1e3,  # us per byte -> ns per byte
        "max_residual_us": max(resid),
    }


def _kernel_config(option: str) -> str | None:
    """The value of ``CONFIG_<option>`` in the running kernel's config, or ``None``."""
    texts: list[str] = []
    cfg = Path("/proc/config.gz")
    try:
        texts.append(gzip.decompress(cfg.read_bytes()).decode("utf-8", "replace"))
    except OSError:
        pass
    try:
        texts.append(Path(f"/boot/config-{platform.release()}").read_text(errors="replace"))
    except OSError:
        pass
    for text in texts:
        for line in text.splitlines():
            if line.startswith(f"CONFIG_{option}="):
                return line.split("=", 1)[1]
            if line == f"# CONFIG_{option} is not set":
                return "n"
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def idle_settings(sys_dir: Path = Path("/sys")) -> dict[str, Any]:
    """How an idle CPU waits, which sets how fast it wakes: the cpuidle driver and governor, and
    the guest halt-polling parameters when the ``haltpoll`` module is loaded (``None`` where a
    file is missing)."""
    cpuidle = sys_dir / "devices/system/cpu/cpuidle"
    params = sys_dir / "module/haltpoll/parameters"
    return {
        "cpuidle_driver": _read(cpuidle / "current_driver"),
        "cpuidle_governor": _read(cpuidle / "current_governor_ro")
        or _read(cpuidle / "current_governor"),
        "guest_halt_poll": {p.name: _read(p) for p in sorted(params.glob("*"))}
        if params.is_dir()
        else None,
    }


def settings() -> dict[str, Any]:
    """The machine's settings recorded with the costs: kernel (release, HZ, CPUs), congestion
    control, autocorking, interrupt-time accounting, how idle CPUs wait, load averages and the
    date (UTC)."""
    sysctls = sysinfo.tcp_sysctls()
    irq = _kernel_config("IRQ_TIME_ACCOUNTING")
    return {
        "kernel": sysinfo.kernel_info(),
        "congestion_control": sysctls.get("net.ipv4.tcp_congestion_control"),
        "autocorking": sysctls.get("net.ipv4.tcp_autocorking"),
        "default_qdisc": sysctls.get("net.core.default_qdisc"),
        # with IRQ time accounting, soft-interrupt time is not charged to the thread's CPU clock
        "irq_time_accounting": None if irq is None else irq == "y",
        "idle": idle_settings(),
        "load": sysinfo.load_average(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def timer_seen_share(gaps_us: list[float], base_us: list[float]) -> float:
    """The share (0-1) of ``gaps_us`` (each timed window's longest pause) longer than the 90th
    percentile of ``base_us`` (the untimed windows').

    >>> timer_seen_share([12.0, 13.0, 0.03, 11.0], [0.03, 0.03, 0.04, 0.03])
    0.75
    """
    top = percentile(list(base_us), 90) if base_us else 0.0
    return sum(g > top for g in gaps_us) / len(gaps_us) if gaps_us else 0.0


#: A repeat of the ACK benchmark counts only if its two batches differ by at least this many
#: pure ACKs per iteration (about 0.5 on Linux; a kernel that ignores ``TCP_QUICKACK`` 2 gives 0).
MIN_ACK_STEP = 0.25


def ack_cost(raw: dict[str, Any]) -> dict[str, Any]:
    """The pure-ACK benchmark's summary (the C program's ``ack`` object): per repeat, the CPU
    difference of its two batches over their difference in pure ACKs, microseconds per ACK; the
    median over the repeats whose ACK counts differ by :data:`MIN_ACK_STEP` or more (NaN if none).

    >>> raw = {"iterations": 256, "bytes": 64,
    ...        "ack_cpu_us_per_iter": [6.3, 6.4, 6.2], "ack_acks_per_iter": [1.0, 1.0, 1.0],
    ...        "ack_segs_in_per_iter": [1.0, 1.0, 1.0],
    ...        "held_cpu_us_per_iter": [5.3, 5.3, 5.3], "held_acks_per_iter": [0.5, 0.5, 0.5],
    ...        "held_segs_in_per_iter": [1.0, 1.0, 1.0]}
    >>> a = ack_cost(raw)
    >>> round(a["cpu_us_per_ack"], 2), a["repeats_used"]
    (2.0, 3)
    >>> raw["ack_acks_per_iter"] = [0.5, 0.5, 0.5]  # TCP_QUICKACK 2 sent nothing more
    >>> math.isnan(ack_cost(raw)["cpu_us_per_ack"])
    True
    """
    pairs = list(
        zip(
            raw["ack_cpu_us_per_iter"],
            raw["held_cpu_us_per_iter"],
            raw["ack_acks_per_iter"],
            raw["held_acks_per_iter"],
        )
    )
    per_ack = [(ca - ch) / (aa - ah) for ca, ch, aa, ah in pairs if aa - ah >= MIN_ACK_STEP]
    return {
        "cpu_us_per_ack": _median(per_ack),
        "p10_us": percentile(per_ack, 10) if per_ack else math.nan,
        "p90_us": percentile(per_ack, 90) if per_ack else math.nan,
        "repeats": len(pairs),
        "repeats_used": len(per_ack),
        "acks_per_iter": {
            "ack": _median(raw["ack_acks_per_iter"]),
            "held": _median(raw["held_acks_per_iter"]),
        },
        "cpu_us_per_iter": {
            "ack": _median(raw["ack_cpu_us_per_iter"]),
            "held": _median(raw["held_cpu_us_per_iter"]),
        },
        "data_segments_per_iter": _median(
            raw["ack_segs_in_per_iter"] + raw["held_segs_in_per_iter"]
        ),
        "iterations": raw["iterations"],
        "bytes": raw["bytes"],
    }


def _slope(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least-squares line through ``(x, y)``: ``(intercept, slope, largest misfit)``."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        raise ValueError("loop_bytes: its payload sizes must differ")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    return a, b, max(abs(a + b * x - y) for x, y in zip(xs, ys))


def loop_bytes(raw: dict[str, Any], per_byte_ns: float, read_us: float) -> dict[str, Any] | None:
    """The loop benchmark's summary (the C program's ``loop_bytes`` object), or ``None`` when it
    did not run (one CPU, or a program built before it): per payload size, the medians over its
    chunks of the server's payload ``send()`` CPU, the client's ``recv()`` CPU and calls, each
    thread's whole CPU and the server's data segments, per operation (microseconds); then the
    costs per byte as the loop pays them, least squares over the sizes: ``send_per_byte_ns`` (the
    payload ``send()``: each is one segment, so the slope is the bytes'), ``recv_per_byte_ns``
    (the client's ``recv()`` CPU less its calls at ``read_us``, a small read's CPU), and
    ``send_extra_per_byte_ns``, the first less ``per_byte_ns`` (the one-thread ``send()``'s): what
    a byte costs the writer more in the loop, with its reader on the other CPU.

    >>> sizes = [{"bytes": b, "wall_us_per_op": 9.0,
    ...           "send_cpu_us": [50 * (0.5 + 1e-4 * b)] * 3, "send_calls": [50.0] * 3,
    ...           "server_thread_us": [300.0] * 3, "server_segments": [100.0] * 3,
    ...           "recv_cpu_us": [50 * (0.3 + 0.5e-4 * b) + 10 * 0.3] * 3,
    ...           "recv_calls": [10.0] * 3, "client_thread_us": [250.0] * 3}
    ...          for b in (4096, 16384, 32768)]
    >>> s = loop_bytes({"qd": 8, "chunk_ops": 50, "sizes": sizes}, 0.02, 0.3)
    >>> round(s["send_per_byte_ns"], 3), round(s["recv_per_byte_ns"], 3)
    (0.1, 0.05)
    >>> round(s["send_extra_per_byte_ns"], 3), s["sizes"][0]["segments_per_op"]
    (0.08, 2.0)
    >>> loop_bytes({"qd": 8, "chunk_ops": 50, "sizes": []}, 0.02, 0.3) is None
    True
    """
    if not raw or not raw.get("sizes"):
        return None
    n = float(raw["chunk_ops"])
    rows = []
    for z in raw["sizes"]:
        rows.append(
            {
                "bytes": z["bytes"],
                "wall_us_per_op": z["wall_us_per_op"],
                "send_cpu_us": _median(z["send_cpu_us"]) / n,
                "recv_cpu_us": _median(z["recv_cpu_us"]) / n,
                "recv_calls": _median(z["recv_calls"]) / n,
                "server_thread_us": _median(z["server_thread_us"]) / n,
                "client_thread_us": _median(z["client_thread_us"]) / n,
                "segments_per_op": _median(z["server_segments"]) / n,
                "chunks": len(z["send_cpu_us"]),
            }
        )
    xs = [float(r["bytes"]) for r in rows]
    _, send, send_miss = _slope(xs, [r["send_cpu_us"] for r in rows])
    recv_ys = [r["recv_cpu_us"] - r["recv_calls"] * read_us for r in rows]
    _, recv, recv_miss = _slope(xs, recv_ys)
    return {
        "qd": raw["qd"],
        "chunk_ops": raw["chunk_ops"],
        "sizes": rows,
        "send_per_byte_ns": send * 1e3,  # us per byte -> ns per byte
        "recv_per_byte_ns": recv * 1e3,
        "send_extra_per_byte_ns": send * 1e3 - per_byte_ns,
        "max_residual_us": max(send_miss, recv_miss),
    }


def summarise(raw: dict[str, Any]) -> dict[str, Any]:
    """Robust statistics of the C program's raw samples (see the module docstring)."""
    wake = summarise_wake(raw["wake"])
    send = [
        {
            "bytes": s["bytes"],
            "msg_more": s["msg_more"],
            "cpu_us": _median(s["cpu_us_per_call"]),
            "wall_us": _median(s["wall_us_per_call"]),
            "segments_per_call": _median(s["segments_per_call"]),
            "repeats": len(s["cpu_us_per_call"]),
            "discarded": s["discarded"],
        }
        for s in raw["send"]
    ]
    model = send_model([(s["cpu_us"], s["segments_per_call"], s["bytes"]) for s in send])
    r = raw["recv"]
    recv = {
        "bytes_per_segment": r["bytes_per_segment"],
        "cpu_us_per_segment": _median(r["cpu_us_per_segment"]),
        "wall_us_per_call": _median(r["wall_us_per_call"]),
        "segments_per_batch": _median(r["segments"]),
    }
    big = raw.get("recv_large")
    if big:
        cpu_us, segs = _median(big["cpu_us"]), _median(big["segments"])
        small = recv["cpu_us_per_segment"]  # a small segment's read: call + copy of its bytes
        extra_bytes = big["bytes"] - segs * recv["bytes_per_segment"]
        recv["large"] = {
            "bytes": big["bytes"],
            "cpu_us": cpu_us,
            "segments": segs,
            # what the large read costs beyond as many small segments' reads, per extra byte
            "per_byte_ns": max(cpu_us - segs * small, 0.0) / extra_bytes * 1e3  # us -> ns
            if extra_bytes > 0
            else math.nan,
        }
    out: dict[str, Any] = {
        "wake": wake,
        "send": send,
        "send_model": model,
        "recv": recv,
        "mss_bytes": raw["mss_bytes"],
        "options": {k: raw[k] for k in ("samples", "repeats", "gap_us")},
        "elapsed_s": raw["elapsed_s"],
    }
    if raw.get("ack"):  # (programs built before the ACK benchmark have none)
        out["ack"] = ack_cost(raw["ack"])
    arm = raw.get("timer_arm")
    if arm and arm["near_us"]:  # (programs built before the timer benchmark have none)
        near, far = _median(arm["near_us"]), _median(arm["far_us"])
        out["timer_arm"] = {
            "near_us": near,
            "far_us": far,
            # reprogramming the CPU's next timer event: what bbr's pacing timer costs to arm
            "arm_us": max(near - far, 0.0),
            "samples": len(arm["near_us"]),
        }
    fire = raw.get("timer_fire")
    if fire and fire["fire_gap_us"]:  # (programs built before this benchmark have none)
        gap, base = _median(fire["fire_gap_us"]), _median(fire["base_gap_us"])
        out["timer_fire"] = {
            "gap_us": gap,
            "base_us": base,
            # the timer's interrupt, taken from the thread it interrupted: what bbr's pacing
            # timer costs the CPU it fires on
            "fire_us": max(gap - base, 0.0),
            "at_us": _median(fire["fire_at_us"]),
            "samples": len(fire["fire_gap_us"]),
            # how often a window saw the interrupt at all (one that opened too late saw none)
            "seen_share": timer_seen_share(fire["fire_gap_us"], fire["base_gap_us"]),
        }
    cross = raw.get("large_cross")
    if cross and cross["send_cpu_us"]:  # (none on one CPU)
        alone = {s["bytes"]: s["cpu_us"] for s in send if not s["msg_more"]}.get(cross["bytes"])
        send_us = _median(cross["send_cpu_us"])
        out["large_cross"] = {
            "bytes": cross["bytes"],
            "send_cpu_us": send_us,
            "recv_cpu_us": _median(cross["recv_cpu_us"]),
            "segments": _median(cross["segments"]),
            # what writing for a reader on another CPU adds to the same send() in one thread
            "send_extra_per_byte_ns": (send_us - alone) / cross["bytes"] * 1e3  # us -> ns
            if alone is not None
            else math.nan,
        }
    loop = loop_bytes(
        raw.get("loop_bytes") or {}, model["per_byte_ns"], recv["cpu_us_per_segment"]
    )
    if loop is not None:  # (none on one CPU)
        out["loop_bytes"] = loop
    return out


def _failure(stdout: str, stderr: str) -> str:
    """Why qdcosts stopped, from its output: the error it printed last (it stops part-way, after
    printing what went well), else its stderr, else the start of what it printed.

    >>> out = '{"tool": "qdcosts", "wake": {"pipe_us": [3.1, ' + '{"tool": "qdcosts", "error": "x: y"}'
    >>> _failure(out, ""), _failure("", "cc: not found")
    ('x: y', 'cc: not found')
    """
    start = stdout.rfind('{"tool": "qdcosts", "error"')
    if start >= 0:
        try:
            return str(json.loads(stdout[start:].splitlines()[0])["error"])
        except (json.JSONDecodeError, KeyError):
            pass
    return stderr.strip() or stdout[:200]


def run_costs(quick: bool = False) -> dict[str, Any]:
    """Run the microbenchmarks and return ``{"settings": ..., "costs": ...}`` (see above).

    Raises
    ------
    models.measure.build.BuildError
        No C compiler, or the program failed (its message is included).
    """
    opts = QUICK if quick else FULL
    binary = build.qdcosts_binary()
    before = settings()
    res = subprocess.run(
        [
            str(binary),
            f"--samples={opts['samples']}",
            f"--repeats={opts['repeats']}",
            f"--gap-us={opts['gap_us']}",
            f"--time-limit={opts['time_limit_s']}",
        ],
        capture_output=True,
        text=True,
        timeout=float(opts["time_limit_s"]) + 10,
    )
    try:
        raw = json.loads(res.stdout)
    except json.JSONDecodeError:
        raise build.BuildError(
            f"qdcosts exited with status {res.returncode}: {_failure(res.stdout, res.stderr)}"
        ) from None
    if "error" in raw:
        raise build.BuildError(f"qdcosts: {raw['error']}")
    before["load_after"] = sysinfo.load_average()
    before["quick"] = quick
    return {"settings": before, "costs": summarise(raw)}

"""bbr's pacing rate on the server's socket, read with ``ss`` while the ownership trace's runs go.

    sudo .venv/bin/python tools/pacing_rate_sample.py --out data [--duration 4] [--draws 2]

The ownership traces (``tools/ownership_trace.py``) count bbr's pacing timers but cannot say how
fast bbr paces: tracefs's ``tcp:tcp_probe`` line carries the window and the round trip, not the
rate.  ``ss -tin`` prints both from the socket itself (``tcp_get_info``): ``pacing_rate``
(``sk_pacing_rate``), ``delivery_rate`` (the last rate sample), ``app_limited``, and bbr's own
``bbr:(bw:...,mrtt:...,pacing_gain:...,cwnd_gain:...)`` (``bbr_get_info``).  This tool runs every
bbr run of :data:`models.validation.ownership.SETS` untraced (the harness's options of
``tools/ownership_trace.py``), reads the server's socket in its network namespace ``--samples``
times, evenly over the measured part of the run, repeats the whole pass ``--draws`` times, and
writes one row per run: the run's IOPS and the median, lowest and highest of what ``ss``
showed.  bbr's pacing gain names its state: 2.89 is
start-up (``bbr_high_gain``), 1.25, 1 and 0.75 the phases of probing for bandwidth, 0.35 draining.

Needs root (the harness makes network namespaces) and ``ss`` (iproute2).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ownership_trace import run_args, write_dataset  # noqa: E402

from models.measure.netns import PREFIX, SERVER_ADDR  # noqa: E402
from models.validation.ownership import SETS  # noqa: E402
from models.validation.pacing_rate import STARTUP_GAIN  # noqa: E402

#: bits per second of each unit ``ss`` may print a rate in
UNITS = {"bps": 1.0, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12}
RATE = r"([\d.]+)([KMGT]?bps)"
BBR = re.compile(rf"bbr:\(bw:{RATE},mrtt:([\d.]+),pacing_gain:([\d.]+),cwnd_gain:([\d.]+)\)")
PACING = re.compile(rf"\bpacing_rate {RATE}")
DELIVERY = re.compile(rf"\bdelivery_rate {RATE}")

FIELDS = [
    ("draw", "integer", "passes", "which pass over the runs (1, 2, ...): the kernel's repeat"),
    ("set", "string", "", "the set of runs (tools/ownership_trace.py --set): paced or small"),
    ("server_sock_mode", "string", "", "server socket mode of the run"),
    ("cc", "string", "", "congestion control of both sockets"),
    ("iops", "number", "1/s", "the run's operations per second (untraced; ss read meanwhile)"),
    ("samples", "integer", "readings", "times ss read the server's socket"),
    ("pacing_gain", "number", "ratio", "bbr's pacing gain, median of the samples"),
    ("startup_share", "number", "ratio", "share of the samples in start-up (pacing gain above 2)"),
    ("bw_gbps", "number", "Gb/s", "bbr's bandwidth estimate (ss bbr:(bw:...)), median"),
    ("bw_lo_gbps", "number", "Gb/s", "the same, lowest sample"),
    ("bw_hi_gbps", "number", "Gb/s", "the same, highest sample"),
    ("pacing_gbps", "number", "Gb/s", "the socket's pacing rate (ss pacing_rate), median"),
    ("pacing_lo_gbps", "number", "Gb/s", "the same, lowest sample"),
    ("pacing_hi_gbps", "number", "Gb/s", "the same, highest sample"),
    ("delivery_gbps", "number", "Gb/s", "the last rate sample (ss delivery_rate), median"),
    ("app_limited_share", "number", "ratio", "share of the samples that showed app_limited"),
]
KEY = ["draw", "set", "server_sock_mode", "cc"]


def rate_bits(value: str, unit: str) -> float:
    """A rate as ``ss`` prints it, in bits per second.

    >>> rate_bits("4.8", "Gbps"), rate_bits("4848670080", "bps")
    (4800000000.0, 4848670080.0)
    """
    return float(value) * UNITS[unit]


def parse_socket(text: str, local: str = SERVER_ADDR) -> dict | None:
    r"""The ``ss -tin`` record of the socket whose local address is ``local`` (the server's, by
    default) in ``text``: its pacing and delivery rates (bits/s), whether it showed
    ``app_limited``, and bbr's estimate (bits/s) and pacing gain when bbr runs it; ``None``
    when no such socket is there.

    >>> info = ("bbr:(bw:3475199440bps,mrtt:0.005,pacing_gain:1.25,cwnd_gain:2) "
    ...         "pacing_rate 4848670080bps delivery_rate 3475200000bps app_limited")
    >>> out = "Recv-Q Send-Q Local:Port Peer:Port\n0 0 10.201.0.1:5001 10.201.0.2:41236\n " + info
    >>> r = parse_socket(out, "10.201.0.1")
    >>> r["pacing_bps"], r["bw_bps"], r["pacing_gain"], r["app_limited"]
    (4848670080.0, 3475199440.0, 1.25, True)
    >>> parse_socket(out, "10.9.9.9") is None
    True
    """
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        # (the first address of a socket's line is its local one; with a state filter ss
        # leaves the State column out)
        addresses = [f for f in line.split() if ":" in f]
        if addresses and addresses[0].rsplit(":", 1)[0] == local:
            info = lines[i + 1]
            pacing, delivery, bbr = PACING.search(info), DELIVERY.search(info), BBR.search(info)
            if pacing is None:
                return None
            return {
                "pacing_bps": rate_bits(*pacing.groups()),
                "delivery_bps": rate_bits(*delivery.groups()) if delivery else None,
                "app_limited": " app_limited" in info,
                "bw_bps": rate_bits(bbr.group(1), bbr.group(2)) if bbr else None,
                "pacing_gain": float(bbr.group(4)) if bbr else None,
            }
    return None


def summarise(samples: list[dict]) -> dict:
    """One run's row (without its set, modes and IOPS) from its ``ss`` readings."""
    if not samples:
        raise RuntimeError("ss never showed the server's socket: did the run stop early?")

    def gbps(key: str, pick=statistics.median) -> float | None:
        values = [s[key] for s in samples if s[key] is not None]
        return round(pick(values) / 1e9, 4) if values else None  # bits/s -> Gb/s

    gains = [s["pacing_gain"] for s in samples if s["pacing_gain"] is not None]
    return {
        "samples": len(samples),
        "pacing_gain": statistics.median(gains) if gains else None,
        "startup_share": (
            round(sum(g > STARTUP_GAIN for g in gains) / len(gains), 3) if gains else None
        ),
        "bw_gbps": gbps("bw_bps"),
        "bw_lo_gbps": gbps("bw_bps", min),
        "bw_hi_gbps": gbps("bw_bps", max),
        "pacing_gbps": gbps("pacing_bps"),
        "pacing_lo_gbps": gbps("pacing_bps", min),
        "pacing_hi_gbps": gbps("pacing_bps", max),
        "delivery_gbps": gbps("delivery_bps"),
        "app_limited_share": round(sum(s["app_limited"] for s in samples) / len(samples), 3),
    }


def _server_ns(pid: int) -> str | None:
    """The server's network namespace of the harness run ``pid`` (``PREFIX<pid>-...s``)."""
    res = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=20)
    for line in res.stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(f"{PREFIX}{pid}-") and name.endswith("s"):
            return name
    return None


def sample_run(cmd: list[str], duration_s: float, count: int) -> tuple[list[dict], dict]:
    """Run the harness command ``cmd`` (``duration_s`` measured seconds after a 0.3 s warm-up)
    and read the server's socket ``count`` times over its measured part: (readings, the run's
    JSON)."""
    run = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    readings: list[dict] = []
    try:
        time.sleep(1.0)  # namespaces and the warm-up (seconds)
        ns = _server_ns(run.pid)
        step = 0.9 * duration_s / count  # seconds between readings, inside the measured part
        for _ in range(count):
            time.sleep(step)
            if ns is None:
                ns = _server_ns(run.pid)
                continue
            res = subprocess.run(
                ["ip", "netns", "exec", ns, "ss", "-tin", "state", "established"],
                capture_output=True,
                text=True,
                timeout=20,
            )
            got = parse_socket(res.stdout)
            if got is not None:
                readings.append(got)
        out, _ = run.communicate(timeout=4 * duration_s + 120)
    finally:
        if run.poll() is None:
            run.kill()
    if run.returncode:
        raise RuntimeError(f"harness run failed ({run.returncode}): {' '.join(cmd)}")
    return readings, json.loads(out)


def problem(euid: int | None = None) -> str | None:
    """What this machine lacks, in one line, or ``None``: root and ``ss``.

    >>> problem(euid=1000)
    'needs root (the harness makes network namespaces): run it with sudo'
    """
    if (os.geteuid() if euid is None else euid) != 0:
        return "needs root (the harness makes network namespaces): run it with sudo"
    if shutil.which("ss") is None:
        return "needs ss (iproute2): apt-get install iproute2"
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default="kernel6_machine4_pacing_rate")
    p.add_argument("--duration", type=float, default=2.0, help="measured s of each run")
    p.add_argument("--samples", type=int, default=30, help="ss readings per run")
    p.add_argument("--draws", type=int, default=2, help="passes over the runs")
    ns = p.parse_args(argv)
    if not 0.5 <= ns.duration <= 60:
        p.error(f"--duration must be in [0.5, 60] seconds, got {ns.duration}")
    if not 1 <= ns.samples <= 100:
        p.error(f"--samples must be in [1, 100], got {ns.samples}")
    if not 1 <= ns.draws <= 10:
        p.error(f"--draws must be in [1, 10], got {ns.draws}")
    trouble = problem()
    if trouble:
        p.exit(2, f"pacing_rate_sample.py: error: {trouble}\n")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows, runs = [], {}
    for draw in range(1, ns.draws + 1):
        for name, trace in SETS.items():
            for mode, cc in trace.runs:
                if cc != "bbr":
                    continue
                cmd = [sys.executable, "-m", "models.measure", "run", "--sock", mode, "--cc", cc]
                cmd += [*run_args(trace), "--duration", str(ns.duration), "--warmup", "0.3"]
                readings, run = sample_run(cmd, ns.duration, ns.samples)
                iops = run["client"]["iops"]
                key = {"draw": draw, "set": name, "server_sock_mode": mode, "cc": cc}
                rows.append(key | {"iops": iops} | summarise(readings))
                runs[f"{draw}/{name}/{mode}/{cc}"] = {
                    "iops": iops,
                    "other_cpu_pct": run.get("other_cpu_pct"),
                }
                print(rows[-1], flush=True)
    write_dataset(
        ns,
        start,
        ("Queue Depth pacing-rate sample", "tools/pacing_rate_sample.py"),
        rows,
        FIELDS,
        KEY,
        title="bbr's pacing rate and estimate on the server's socket, read with ss",
        description=description(runs, ns.samples, ns.draws),
        runs=runs,
        command=(
            f"tools/pacing_rate_sample.py --out {ns.out} --prefix {ns.prefix} "
            f"--duration {ns.duration:g} --samples {ns.samples} --draws {ns.draws}"
        ),
    )
    return 0


def description(runs: dict, samples: int, draws: int) -> str:
    """The sidecar's description, ``runs`` the runs' IOPS and other CPU."""
    sets = "; ".join(
        f"{name}, {int(t.scenario['iosize_bytes']) // 1024} KiB responses at QD "
        f"{t.scenario['qd']} ({t.runs_text})"
        for name, t in SETS.items()
    )
    return (
        "The bbr runs of the ownership traces' sets of runs (tools/ownership_trace.py: the "
        f"two ends pinned a CPU apart, a NODELAY client, veth at MTU 1500): {sets}; each run "
        f"untraced while ss -tin read the server's socket {samples} times, the runs repeated "
        f"{draws} times in turn (column draw). IOPS and other CPU of the runs "
        f"{json.dumps(runs)}."
    )


if __name__ == "__main__":
    raise SystemExit(main())

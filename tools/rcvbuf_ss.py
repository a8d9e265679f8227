"""Read both sockets' receive buffers with ss through iSCSI-loop runs, in the kernel.

    sudo .venv/bin/python tools/rcvbuf_ss.py --out data --repeats 3

The configurations are :data:`models.validation.rcvbuf.CONFIGS` (rows of the fifth machine's
field sweep: veth-1500, bbr on both sockets, each end pinned to a CPU of its own).  While each run
goes, ``ss -tmi`` reads the established sockets in both namespaces every 20 ms; a row per run and
side keeps the first and the last reading of the receive buffer (``skmem``'s ``rb``),
``rcv_space``, and the last ``rcv_rtt``, ``rcv_ssthresh`` and window scale, with how many bytes
the socket had received at its first reading.  Written to ``PREFIX.csv`` and its sidecar
``PREFIX.json`` with the machine's settings, its receive-buffer sysctls included.  ``ss`` takes
CPU: the runs' rates are lower than unread runs' (they are kept to show how much).  Needs root.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from ack_delay_sweep import HOST_FIELDS  # noqa: E402
from pacing_timer_sweep import apart_bbr_spec  # noqa: E402
from placement_sweep import each_config, run_tool  # noqa: E402

from models.measure.netns import Link  # noqa: E402
from models.measure.runner import run_one  # noqa: E402
from models.validation import rcvbuf as RB  # noqa: E402

#: Seconds between two readings of a namespace's sockets.
EVERY_S = 0.02

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
    ("side", "string", None, "whose socket: client or server"),
    ("iops", "number", "1/s", "operations completed per second of the measured window, under ss"),
    ("ops", "integer", "operations", "operations the client completed, warm-up included"),
    ("samples", "integer", "readings", "readings of the socket during the run"),
    ("bytes_first", "integer", "bytes", "bytes the socket had received at its first reading"),
    ("rb_first", "integer", "bytes", "receive buffer (skmem rb) at the first reading"),
    ("rb_last", "integer", "bytes", "receive buffer (skmem rb) at the last reading"),
    ("rcv_space_first", "integer", "bytes", "rcv_space (rcvq_space.space) at the first reading"),
    ("rcv_space_last", "integer", "bytes", "rcv_space (rcvq_space.space) at the last reading"),
    ("rcv_rtt_ms_last", "number", "ms", "rcv_rtt at the last reading (0: no estimate yet)"),
    ("rcv_ssthresh_last", "integer", "bytes", "rcv_ssthresh at the last reading"),
    ("rcv_wscale", "integer", "bits", "the socket's own receive window scale (a shift)"),
    *HOST_FIELDS,
]
KEY = ["sweep", *RB.CONFIG_KEY, "repeat", "side"]

_NUMBERS = {
    "rb": re.compile(r"\brb(\d+)"),
    "rcv_space": re.compile(r"\brcv_space:(\d+)"),
    "rcv_rtt": re.compile(r"\brcv_rtt:([\d.]+)"),
    "rcv_ssthresh": re.compile(r"\brcv_ssthresh:(\d+)"),
    "bytes_received": re.compile(r"\bbytes_received:(\d+)"),
    "wscale": re.compile(r"\bwscale:(\d+),(\d+)"),
}


def parse(text: str) -> list[dict]:
    """Each socket of ``ss -tmiH``'s output with the numbers read here.

    >>> parse("ESTAB 0 0 10.0.0.1:5 10.0.0.2:6\\n skmem:(r0,rb131072,t0) wscale:10,10 "
    ...       "bytes_received:96 rcv_space:14480 rcv_ssthresh:64088")
    [{'rb': 131072, 'rcv_space': 14480, 'rcv_ssthresh': 64088, 'bytes_received': 96, \
'wscale': 10}]
    """
    out = []
    for line in text.splitlines():
        if "skmem:" not in line:
            continue
        got: dict = {}
        for name, rx in _NUMBERS.items():
            m = rx.search(line)
            if m is None:
                continue
            if name == "wscale":
                got[name] = int(m.group(2))  # the receive side's (snd_wscale, rcv_wscale)
            elif name == "rcv_rtt":
                got[name] = float(m.group(1))
            else:
                got[name] = int(m.group(1))
        out.append(got)
    return out


class Reader(threading.Thread):
    """Reads the sockets of a namespace every :data:`EVERY_S` until stopped; keeps, per reading,
    the socket that has received the most (the run's connection)."""

    def __init__(self, namespace: str) -> None:
        super().__init__(daemon=True)
        self.namespace = namespace
        self.readings: list[dict] = []
        self.stop = threading.Event()

    def run(self) -> None:
        cmd = ["ip", "netns", "exec", self.namespace, "ss", "-tmiH", "state", "established"]
        while not self.stop.is_set():
            text = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
            socks = [s for s in parse(text) if "rb" in s and "bytes_received" in s]
            if socks:
                self.readings.append(max(socks, key=lambda s: s["bytes_received"]))
            time.sleep(EVERY_S)


def _run(number: int, cfg: dict, link: Link, rep: int, duration_s: float) -> list[dict]:
    spec = apart_bbr_spec(cfg, duration_s)
    readers = {"client": Reader(link.client_ns), "server": Reader(link.server_ns)}
    for r in readers.values():
        r.start()
    try:
        res = run_one(spec, link)
    finally:
        for r in readers.values():
            r.stop.set()
            r.join(timeout=10)
    rows = []
    for side, r in readers.items():
        got = r.readings
        if not got:
            raise SystemExit(f"rcvbuf_ss.py: no reading of the {side}'s socket ({cfg})")
        first, last = got[0], got[-1]
        rows.append(
            {
                "sweep": number,
                **{k: cfg[k] for k in RB.CONFIG_KEY},
                "cc": res.server.get("cc") or "",
                "repeat": rep,
                "side": side,
                "iops": round(res.client["iops"], 1),
                "ops": int(res.client["completed"]),
                "samples": len(got),
                "bytes_first": first["bytes_received"],
                "rb_first": first["rb"],
                "rb_last": last["rb"],
                "rcv_space_first": first.get("rcv_space", ""),
                "rcv_space_last": last.get("rcv_space", ""),
                "rcv_rtt_ms_last": last.get("rcv_rtt", 0.0),  # ss leaves out a zero
                "rcv_ssthresh_last": last.get("rcv_ssthresh", ""),
                "rcv_wscale": last.get("wscale", ""),
                "other_cpu_pct": round(res.other_cpu_pct, 1),
                "load_1min": res.load_before[0],
            }
        )
        print(
            f"{cfg['sock_mode']:7s}/{cfg['client_sock_mode']:7s} QD {cfg['qd']:>2} "
            f"{cfg['iosize_bytes']:>5} B {side:6s}: rb {first['rb']} -> {last['rb']}, "
            f"{rows[-1]['iops']:,.0f} IOPS, {len(got)} readings"
        )
    return rows


def sweep(number: int, links: list[str], repeats: int, duration_s: float) -> list[dict]:
    """The runs of sweep ``number``: every configuration of :data:`RB.CONFIGS`, ``repeats``
    times, interleaved; a clear exit before any run without root or ``ss``."""
    if os.geteuid() != 0:
        raise SystemExit("rcvbuf_ss.py: needs root (network namespaces)")
    return each_config(
        links, repeats, RB.CONFIGS, lambda cfg, link, rep: _run(number, cfg, link, rep, duration_s)
    )


def _describe(ns: argparse.Namespace, sweeps: int) -> str:
    return (
        "Harness runs of the iSCSI-like loop in five configurations of the fifth machine's "
        "field sweep (veth pair at MTU 1500, bbr on both sockets, each end pinned to a CPU of its "
        "own; models.validation.rcvbuf.CONFIGS), both sockets read with ss -tmi every 20 ms "
        "while the run went: per run and side the first and last receive buffer and rcv_space, "
        f"the last rcv_rtt, rcv_ssthresh and window scale; {ns.repeats} repeat(s) per sweep, "
        f"interleaved; {sweeps} sweep(s), each with its start time and the machine's settings "
        "(its receive-buffer sysctls included) under measurement.sweeps."
    )


def main(argv: list[str] | None = None) -> int:
    return run_tool(
        argv,
        doc=__doc__,
        tool="rcvbuf_ss.py",
        defaults=(RB.DATASET, 3, 1.5),
        sweep_runs=sweep,
        fields=FIELDS,
        key=KEY,
        title="Receive buffers read with ss through iSCSI-loop runs",
        describe=_describe,
        source="Queue Depth receive-buffer readings",
        links=("veth-1500",),
    )


if __name__ == "__main__":
    raise SystemExit(main())

"""Trace bbr's state on the server socket of kernel runs, ACK by ACK.

    sudo .venv/bin/python tools/bbr_trace.py --out data --prefix kernel6_bbr_trace

For each server mode (Nagle, TCP_NODELAY) it runs one harness run
(``python -m models.measure run``: the iSCSI-like loop on veth at MTU 1500,
NODELAY client, 16 KiB responses, QD 8, bbr; ``--client-sock``, ``--qd`` and
``--iosize`` change these) while ``bpftrace`` reads, at
every segment the server socket receives (the ``tcp:tcp_probe`` tracepoint,
which fires before the segment is processed), the socket's delivery
counters (``struct tcp_sock``), its pacing rate (``sk_pacing_rate``) and
bbr's private state (``struct bbr`` in ``icsk_ca_priv``, read as 64-bit
words and unpacked here by the layout of ``net/ipv4/tcp_bbr.c`` in Linux
6).  It keeps the rows of a window in the middle of the run (``--window-ms``)
and writes ``PREFIX.csv`` and its sidecar ``PREFIX.json``.

Tracing costs the kernel time on every segment, so the traced runs are
slower than untraced ones; the sidecar records each run's own IOPS.
Needs root and bpftrace (Debian package ``bpftrace``); kprobes are not
needed.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.data import tool_sidecar  # noqa: E402
from models.measure import sysinfo  # noqa: E402
from models.sim.rules.bbr_model import BBR_UNIT, BW_SCALE, DRAIN, PROBE_BW, STARTUP  # noqa: E402

# struct bbr (net/ipv4/tcp_bbr.c) as 64-bit words of icsk_ca_priv:
# [1] high: bw.s[0].t; [2] low: bw.s[0].v (the estimate, packets/us << 24);
# [4] high: rtt_cnt; [7] low: mode:3 ...; [9] high: pacing_gain:10,
# cwnd_gain:10, full_bw_reached:1, full_bw_cnt:2, cycle_idx:3
PROGRAM = r"""
tracepoint:tcp:tcp_probe
{
  $sk = (struct sock *)args->skaddr;
  $tp = (struct tcp_sock *)args->skaddr;
  $ic = (struct inet_connection_sock *)args->skaddr;
  printf("%llu %llx %u %u %u %u %llu %u %u %u %u ", nsecs, args->skaddr,
         $tp->delivered, $tp->app_limited, $tp->rate_delivered,
         $tp->rate_interval_us, $sk->sk_pacing_rate, $tp->packets_out,
         $tp->write_seq - $tp->snd_nxt, args->data_len, args->snd_cwnd);
  printf("%llx %llx %llx %llx\n", $ic->icsk_ca_priv[2], $ic->icsk_ca_priv[4],
         $ic->icsk_ca_priv[7], $ic->icsk_ca_priv[9]);
}
"""
#: enum bbr_mode (net/ipv4/tcp_bbr.c), as the simulator names the modes
MODES = {0: STARTUP, 1: DRAIN, 2: PROBE_BW, 3: "probe_rtt"}
BW_UNIT = 1 << BW_SCALE  # bbr's bandwidth unit: packets per microsecond << 24

FIELDS = [
    ("server_sock_mode", "string", "", "server socket mode of the run: nagle or nodelay"),
    ("row", "integer", "rows", "the row's place in its run's window, from 0"),
    ("time_us", "number", "us", "time of the segment's arrival since the first row of the run"),
    ("delivered_packets", "integer", "packets", "tp->delivered: packets delivered so far"),
    (
        "app_limited_mark",
        "integer",
        "packets",
        "tp->app_limited: 0, or the delivered count that ends the application-limited period",
    ),
    (
        "sample_delivered_packets",
        "integer",
        "packets",
        "tp->rate_delivered: packets of the last rate sample that was not "
        "application-limited, or of the highest application-limited one",
    ),
    ("sample_interval_us", "integer", "us", "tp->rate_interval_us: that sample's interval"),
    ("pacing_rate_bytes_per_s", "integer", "bytes/s", "sk->sk_pacing_rate"),
    ("packets_out", "integer", "packets", "tp->packets_out: packets in flight"),
    ("unsent_bytes", "integer", "bytes", "write_seq - snd_nxt: bytes written but not sent"),
    ("segment_payload_bytes", "integer", "bytes", "payload of the arriving segment"),
    ("cwnd_packets", "integer", "packets", "snd_cwnd: the congestion window bbr set"),
    (
        "bw_estimate_packets_per_us",
        "number",
        "packets/us",
        "bbr's bandwidth estimate (the max filter's best sample, bw.s[0].v / 2^24)",
    ),
    ("rounds", "integer", "rounds", "bbr's round count (rtt_cnt)"),
    ("bbr_mode", "string", "", "bbr's mode: startup, drain, probe_bw, probe_rtt"),
    ("pacing_gain", "number", "ratio", "bbr's pacing gain (pacing_gain / 256)"),
    ("full_bw_reached", "boolean", "", "whether start-up's full-bandwidth check has fired"),
    ("cycle_idx", "integer", "phase", "the phase of PROBE_BW's gain cycle"),
]


def _words(parts: list[str]) -> dict:
    w2, w4, w7, w9 = (int(x, 16) for x in parts)
    gain_word = w9 >> 32
    return {
        "bw_estimate_packets_per_us": (w2 & 0xFFFFFFFF) / BW_UNIT,
        "rounds": w4 >> 32,
        "bbr_mode": MODES.get(w7 & 7, "?"),
        "pacing_gain": (gain_word & 0x3FF) / BBR_UNIT,
        "full_bw_reached": bool((gain_word >> 20) & 1),
        "cycle_idx": (gain_word >> 23) & 7,
    }


def parse(lines: list[str]) -> list[dict]:
    """The rows of the socket that delivered the most packets (the server's)."""
    by_sock: dict[str, list[dict]] = {}
    for line in lines:
        p = line.split()
        if len(p) != 15 or not p[0].isdigit():
            continue
        vals = list(map(int, p[2:11]))
        row = {
            "t_ns": int(p[0]),
            "delivered_packets": vals[0],
            "app_limited_mark": vals[1],
            "sample_delivered_packets": vals[2],
            "sample_interval_us": vals[3],
            "pacing_rate_bytes_per_s": vals[4],
            "packets_out": vals[5],
            "unsent_bytes": vals[6],
            "segment_payload_bytes": vals[7],
            "cwnd_packets": vals[8],
            **_words(p[11:15]),
        }
        by_sock.setdefault(p[1], []).append(row)
    if not by_sock:
        raise RuntimeError("bpftrace printed no rows: did the run start after it attached?")
    return max(by_sock.values(), key=lambda rows: rows[-1]["delivered_packets"])


def trace_run(
    mode: str,
    duration_s: float,
    program: Path,
    pin: str | None = None,
    client: str = "nodelay",
    qd: int = 8,
    iosize: int = 16384,
) -> tuple[list[dict], dict]:
    """One harness run with bpftrace attached (the two ends pinned by the harness's ``--pin
    pin`` when given; ``client`` the client's socket mode, ``qd`` operations in flight,
    ``iosize`` bytes per response): (server rows, the run's JSON)."""
    with tempfile.NamedTemporaryFile("w+", suffix=".txt") as out:
        bt = subprocess.Popen(["bpftrace", str(program)], stdout=out, stderr=subprocess.STDOUT)
        for _ in range(100):  # wait until it has attached
            time.sleep(0.1)
            out.flush()
            if "Attaching" in Path(out.name).read_text():
                break
        else:
            bt.kill()
            raise RuntimeError("bpftrace did not attach: " + Path(out.name).read_text()[-400:])
        time.sleep(0.5)
        cmd = [sys.executable, "-m", "models.measure", "run", "--proto", "iscsi"]
        cmd += ["--sock", mode, "--client-sock", client, "--qd", str(qd), "--iosize", str(iosize)]
        cmd += ["--link", "veth", "--mtu", "1500", "--duration", str(duration_s)]
        cmd += ["--cc", "bbr", "--no-capture", "--json", *(["--pin", pin] if pin else [])]
        limit_s = 4 * duration_s + 120  # warm-up, setup and teardown included
        try:
            run = subprocess.run(
                cmd, cwd=ROOT, capture_output=True, text=True, check=True, timeout=limit_s
            )
        finally:
            if bt.poll() is None:
                bt.send_signal(2)  # SIGINT: flush and exit
        bt.wait(timeout=30)
        return parse(Path(out.name).read_text().splitlines()), json.loads(run.stdout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default="kernel6_bbr_trace")
    p.add_argument("--duration", type=float, default=1.0, help="measured seconds of each run")
    p.add_argument("--window-ms", type=float, default=100.0, help="ms of rows kept per run")
    p.add_argument(
        "--keep",
        choices=("middle", "start"),
        default="middle",
        help="where the kept window lies: the run's middle, or its start (the connection's first "
        "segment on)",
    )
    p.add_argument("--pin", choices=("apart",), help="pin the two ends a CPU apart")
    p.add_argument(
        "--modes",
        default="nagle,nodelay",
        help="server socket modes, one run each (comma-separated; default nagle,nodelay)",
    )
    p.add_argument("--client-sock", default="nodelay", choices=("nagle", "nodelay"))
    p.add_argument("--qd", type=int, default=8, help="operations in flight (1-64)")
    p.add_argument("--iosize", type=int, default=16384, help="bytes per response (512-65536)")
    ns = p.parse_args(argv)
    if not 1 <= ns.qd <= 64:
        p.error(f"--qd must be 1..64, got {ns.qd}")
    if not 512 <= ns.iosize <= 65536:
        p.error(f"--iosize must be 512..65536, got {ns.iosize}")
    modes = ns.modes.split(",")
    bad = [m for m in modes if m not in ("nagle", "nodelay", "more", "more_nodelay")]
    if bad or not modes:
        p.error(f"--modes takes nagle, nodelay, more, more_nodelay; got {ns.modes!r}")
    if shutil.which("bpftrace") is None:
        p.error("bpftrace is not installed (Debian: apt-get install bpftrace)")
    if not 0 < ns.window_ms <= 1000 * ns.duration:
        p.error(f"--window-ms must be in (0, {1000 * ns.duration:g}], got {ns.window_ms}")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows, runs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "bbr.bt"
        prog.write_text(PROGRAM)
        for mode in modes:
            got, run = trace_run(mode, ns.duration, prog, ns.pin, ns.client_sock, ns.qd, ns.iosize)
            t0 = got[0]["t_ns"]
            if ns.keep == "start":
                kept = [r for r in got if r["t_ns"] - t0 <= ns.window_ms * 1e6]  # ms -> ns
            else:
                mid = (got[-1]["t_ns"] - t0) / 2  # ns
                half = ns.window_ms * 1e6 / 2  # ms -> ns
                kept = [r for r in got if abs(r["t_ns"] - t0 - mid) <= half]
            for i, r in enumerate(kept):
                t_us = (r.pop("t_ns") - t0) / 1e3  # ns -> us
                rows.append({"server_sock_mode": mode, "row": i, "time_us": round(t_us, 3), **r})
            runs[mode] = {
                "iops": run["client"]["iops"],
                "rows_traced": len(got),
                "other_cpu_pct": run["other_cpu_pct"],
            }
    ns.out.mkdir(parents=True, exist_ok=True)
    csv_path = ns.out / f"{ns.prefix}.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[name for name, *_ in FIELDS], lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if k.endswith("per_us") else v) for k, v in r.items()})
    k = sysinfo.kernel_info()
    kernel = f"{k['release']} (CONFIG_HZ={k['config_hz']}, {k['cpus']} CPUs)"
    command = f"tools/bbr_trace.py --out {ns.out} --prefix {ns.prefix} --duration {ns.duration}"
    if (ns.keep, ns.pin, ns.modes) != ("middle", None, "nagle,nodelay"):
        command += f" --window-ms {ns.window_ms:g} --keep {ns.keep} --modes {ns.modes}"
        command += f" --pin {ns.pin}" if ns.pin else ""
    run_shape = (ns.client_sock, ns.qd, ns.iosize)
    if run_shape != ("nodelay", 8, 16384):
        command += f" --client-sock {ns.client_sock} --qd {ns.qd} --iosize {ns.iosize}"
    client_text = "NODELAY" if ns.client_sock == "nodelay" else "Nagle"
    shape = f"{client_text} client, {ns.iosize} B responses, QD {ns.qd}"
    if ns.iosize % 1024 == 0:
        shape = f"{client_text} client, {ns.iosize // 1024} KiB responses, QD {ns.qd}"
    servers = {
        "nagle": "a Nagle server",
        "nodelay": "a TCP_NODELAY server",
        "more": "a MSG_MORE server",
        "more_nodelay": "a server with MSG_MORE and TCP_NODELAY",
    }
    runs_text = {2: "Two", 1: "One"}.get(len(modes), str(len(modes)))
    where = "in the middle of each run" if ns.keep == "middle" else "from the start of each run"
    meta = tool_sidecar(
        csv_path,
        FIELDS,
        ["server_sock_mode", "row"],
        title=f"bbr's state on the server socket, segment by segment ({ns.modes} servers)",
        description=(
            f"{runs_text} harness runs of the iSCSI-like loop on veth at MTU 1500 (bbr, {shape}"
            + (", the two ends pinned a CPU apart" if ns.pin else "")
            + "), "
            + ", ".join(f"one with {servers[m]}" for m in modes)
            + ", traced with bpftrace at every segment the server socket received (tracepoint "
            "tcp:tcp_probe, before the segment is processed): the socket's delivery counters, "
            f"its pacing rate and bbr's state. Rows of a window {where}. "
            f"Tracing slows the runs: IOPS of the traced runs {json.dumps(runs)}."
        ),
        source=("Queue Depth bbr trace", "tools/bbr_trace.py", f"command line: {command}"),
        year=int(start[:4]),
        transcription=(
            f"Measured by `{command}` on kernel {kernel} (default congestion control "
            f"{sysinfo.tcp_sysctls().get('net.ipv4.tcp_congestion_control', '?')}), started {start}; "
            f"{ns.window_ms:g} ms of rows kept {where}. The machine was "
            "otherwise idle; bpftrace's own CPU time shows in each run's other_cpu_pct "
            "(under 'measurement')."
        ),
        measurement={"runs": runs},
    )
    (ns.out / f"{ns.prefix}.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {csv_path} ({len(rows)} rows): {runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

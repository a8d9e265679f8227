"""The handshake's round trip as each end's kernel measured it: srtt and pacing rate before any data.

    sudo .venv/bin/python tools/handshake_rtt.py --out data [--connections 200]

A TCP connection's first RTT sample is its handshake: the client's from its SYN to the SYN-ACK
(``tcp_ack`` in ``tcp_rcv_synsent_state_process``), the server's from its SYN-ACK to the ACK that
completes the handshake, taken after the child socket is made (``tcp_synack_rtt_meas`` in
``tcp_check_req``).  bbr's first pacing rate is the initial window over that sample at its
start-up gain (``bbr_init_pacing_rate_from_rtt``).  This tool opens ``--connections``
connections one after the other over each link and pinning of :data:`CASES` (the harness's
loopback and veth pair, :mod:`models.measure.netns`), and right after ``connect()`` and
``accept()`` reads ``TCP_INFO`` on both sockets: ``tcpi_rtt`` (srtt, us), ``tcpi_min_rtt`` (us)
and ``tcpi_pacing_rate`` (bytes/s).  No data is sent, so these are the handshake's numbers.

Needs root for the veth pair (the harness makes network namespaces); loopback runs without.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ownership_trace import write_dataset  # noqa: E402

from models.measure.netns import SERVER_ADDR, Link, LinkSpec  # noqa: E402
from models.measure.runner import pin_cpus  # noqa: E402

#: (link label, pinning) of each case: the loopback the calibration ran on, and the veth pair
#: (MTU 1500) of the ownership traces, the two ends a CPU apart and on one CPU
CASES = (("loopback", "apart"), ("veth-1500", "apart"), ("veth-1500", "same"))

#: ``struct tcp_info`` (include/uapi/linux/tcp.h): byte offsets of the fields read
TCPI_RTT, TCPI_PACING_RATE, TCPI_MIN_RTT = 68, 104, 148
TCPI_BYTES = 152

#: The child that runs on each side: ``server ADDR N`` prints its port, accepts N connections
#: and prints their TCP_INFO; ``client ADDR PORT N`` connects N times and prints its own.
CHILD = f"""
import json, socket, struct, sys
def info(s):
    b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, {TCPI_BYTES})
    rtt, = struct.unpack_from("I", b, {TCPI_RTT})
    rate, = struct.unpack_from("Q", b, {TCPI_PACING_RATE})
    mrtt, = struct.unpack_from("I", b, {TCPI_MIN_RTT})
    return [rtt, mrtt, rate]
out = []
if sys.argv[1] == "server":
    ls = socket.socket(); ls.bind((sys.argv[2], 0)); ls.listen(16)
    print(ls.getsockname()[1], flush=True)
    for _ in range(int(sys.argv[3])):
        a, _ = ls.accept(); out.append(info(a)); a.close()
else:
    for _ in range(int(sys.argv[4])):
        c = socket.create_connection((sys.argv[2], int(sys.argv[3]))); out.append(info(c)); c.close()
print(json.dumps(out), flush=True)
"""

FIELDS = [
    ("link", "string", "", "the path: loopback, or the veth pair at MTU 1500"),
    ("pin", "string", "", "apart: server and client each on a CPU of its own; same: one CPU"),
    ("side", "string", "", "whose socket: server (after accept) or client (after connect)"),
    ("conn", "integer", "connections", "the connection's number in its case (1, 2, ...)"),
    ("srtt_us", "integer", "us", "tcpi_rtt: srtt after the handshake, the handshake's sample"),
    ("min_rtt_us", "integer", "us", "tcpi_min_rtt after the handshake"),
    ("pacing_rate_bytes_per_s", "integer", "bytes/s", "tcpi_pacing_rate before any data"),
]
KEY = ["link", "pin", "side", "conn"]


def measure(link: str, pin: str, connections: int) -> dict[str, list]:
    """TCP_INFO of each side's sockets over ``connections`` handshakes on ``link`` pinned
    ``pin``: ``{"server": [[srtt, min_rtt, pacing], ...], "client": [...]}``."""
    spec = LinkSpec() if link == "loopback" else LinkSpec("veth", mtu=int(link.split("-")[1]))
    cpus = pin_cpus(pin)
    assert cpus is not None
    with Link(spec) as ln:
        addr = "127.0.0.1" if link == "loopback" else SERVER_ADDR

        def start(side: str, *args: str) -> subprocess.Popen:
            cmd = [*ln.prefix(side), sys.executable, "-c", CHILD, side, addr, *args]
            mask = cpus[side]
            return subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                text=True,
                preexec_fn=lambda: os.sched_setaffinity(0, mask),
            )

        server = start("server", str(connections))
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        client = start("client", port, str(connections))
        out_c, _ = client.communicate(timeout=60)
        out_s, _ = server.communicate(timeout=60)
    return {"server": json.loads(out_s.splitlines()[-1]), "client": json.loads(out_c)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for PREFIX.csv and .json")
    p.add_argument("--prefix", default="kernel6_machine4_handshake")
    p.add_argument("--connections", type=int, default=200, help="handshakes per case")
    ns = p.parse_args(argv)
    if not 10 <= ns.connections <= 5000:
        p.error(f"--connections must be in [10, 5000], got {ns.connections}")
    if os.geteuid() != 0:
        p.exit(2, "handshake_rtt.py: error: needs root (the veth pair's namespaces)\n")
    start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rows = []
    for link, pin in CASES:
        got = measure(link, pin, ns.connections)
        for side, infos in got.items():
            for i, (srtt, mrtt, rate) in enumerate(infos, 1):
                rows.append(
                    {
                        "link": link,
                        "pin": pin,
                        "side": side,
                        "conn": i,
                        "srtt_us": srtt,
                        "min_rtt_us": mrtt,
                        "pacing_rate_bytes_per_s": rate,
                    }
                )
            srtts = sorted(r[0] for r in infos)
            print(f"{link} {pin} {side}: srtt median {srtts[len(srtts) // 2]} us", flush=True)
    load = os.getloadavg()[0]
    write_dataset(
        ns,
        start,
        ("Queue Depth handshake round trip", "tools/handshake_rtt.py"),
        rows,
        FIELDS,
        KEY,
        title="The handshake's round trip and bbr's first pacing rate, from TCP_INFO",
        description=(
            f"{ns.connections} connections one after the other per case ({', '.join(f'{a} {b}' for a, b in CASES)}), "
            "no data sent: TCP_INFO read on the client's socket right after connect() and on "
            "the server's right after accept(). The load average (1 min) when the last case "
            f"ended: {load:.2f}."
        ),
        runs={"load_average_1min": load},
        command=f"tools/handshake_rtt.py --out {ns.out} --prefix {ns.prefix} "
        f"--connections {ns.connections}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

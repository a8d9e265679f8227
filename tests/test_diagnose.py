"""``python -m models.measure analyze``: from a capture to a verdict.

Back-tests on captures the harness made (``data/captures/README.md``), the same traffic
re-encoded as IPv6, Linux cooked and pcapng, made-up window and zero-window traffic, bad files, and
(as root with tcpdump) fresh harness runs whose own latencies give the expected verdict.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import dpkt
import pytest

from models.kernel.runs import STALL_MS, STALL_SHARE_PCT
from models.measure import diagnose as D
from models.measure.pcap import CaptureError, read_capture

DATA = Path(__file__).parent / "data"
CAPS = Path(__file__).resolve().parents[1] / "data" / "captures"

#: file -> (verdict, split, request bytes, response bytes, side held, least operations)
EXPECTED = {
    "lo_nagle_qd1_512": ("delayed-ack-stall", "alternating", 48, 560, "server", 25),
    "lo_nodelay_qd1_512": ("no-stall", "alternating", 48, 560, None, 25),
    "lo_more_qd4_4096": ("no-stall", "pipelined", 48, 4144, None, 25),
    "lo_moreall_qd1_512": ("cork-timeout", "alternating", 48, 560, "server", 6),
    "veth1500_nagle_qd2_512": ("delayed-ack-stall", "pipelined", 48, 560, "server", 25),
    "veth9000_nagle_qd8_4096": ("no-stall", "pipelined", 48, 4144, None, 25),
    "veth1500_nodelay_qd16_16384": ("no-stall", "pipelined", 48, 16432, None, 25),
    "lo_nagle_nagleclient_qd2_512": ("delayed-ack-stall", "pipelined", 48, 560, "server", 100),
    # Flory's request and response, the last packets of 1000-operation runs (tools/trim_pcap.py)
    "veth1500_flory_nagle_1448": ("no-stall", "pipelined", 8, 8 + 1448, None, 100),
    "veth1500_flory_nagle_1449": ("no-stall", "pipelined", 8, 8 + 1449, None, 100),
}


def _only(path: Path | str, **kw) -> dict:
    report = D.analyze_capture(path, **kw)
    assert len(report["connections"]) == 1
    return report["connections"][0]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_harness_captures(name: str) -> None:
    verdict, split, req, resp, held, least_ops = EXPECTED[name]
    d = _only(CAPS / f"{name}.pcap")
    assert d["verdict"] == verdict
    assert d["split"] == split
    assert (d["request_bytes"], d["response_bytes"]) == (req, resp)
    assert d["operations"] >= least_ops
    if held:
        assert d["held_side"] == held
        assert d["cause"] and d["fix"] and d["see"].endswith(f"#diag-{verdict}")
    stalled = d["stalled_share_pct"] >= STALL_SHARE_PCT
    assert stalled == (verdict in ("delayed-ack-stall", "cork-timeout"))


def test_stall_periods_are_the_timers() -> None:
    """The delayed ACK at HZ=250 (40 ms plus ticks) and the 200 ms probe."""
    assert 40 <= _only(CAPS / "lo_nagle_qd1_512.pcap")["stall_period_ms"] <= 48
    assert 200 <= _only(CAPS / "lo_moreall_qd1_512.pcap")["stall_period_ms"] <= 216


def test_flory_captures() -> None:
    """Flory's (2001) 1447/1448 pair on a veth link at MTU 1500."""
    slow = _only(DATA / "measure_flory_veth1500_n1447.pcap")
    fast = _only(DATA / "measure_flory_veth1500_n1448.pcap")
    assert slow["verdict"] == "delayed-ack-stall" and slow["held_side"] == "server"
    assert (slow["request_bytes"], slow["response_bytes"]) == (8, 8 + 1447)
    assert fast["verdict"] == "no-stall"
    assert fast["latency_ms"]["max"] < STALL_MS


def _rewrite(src: Path, dst: Path, *, ipv6: bool, link: str, ng: bool) -> None:
    """The same TCP segments, re-encoded over IPv6 and/or another link type or file format."""
    with src.open("rb") as f:
        records = list(dpkt.pcap.Reader(f))
    linktype = {"sll": dpkt.pcap.DLT_LINUX_SLL, "loop": dpkt.pcap.DLT_NULL}[link]
    with dst.open("wb") as f:
        w = (dpkt.pcapng.Writer if ng else dpkt.pcap.Writer)(f, linktype=linktype)
        for ts, buf in records:
            ip = dpkt.ethernet.Ethernet(buf).data  # tcpdump writes Ethernet frames on lo and veth
            tcp = ip.data
            if ipv6:
                addr = {
                    ip.src: b"\x20\x01\x0d\xb8" + b"\0" * 11 + b"\x01",
                    ip.dst: b"\x20\x01\x0d\xb8" + b"\0" * 11 + b"\x02",
                }
                if ip.src == ip.dst:  # loopback: tell the two ends apart by port only
                    addr = {ip.src: b"\0" * 15 + b"\x01"}
                out = dpkt.ip6.IP6(
                    src=addr[ip.src],
                    dst=addr[ip.dst],
                    nxt=6,
                    hlim=64,
                    data=tcp,
                    plen=ip.len - 4 * ip.hl,  # full length: the capture cut the payload
                )
                proto = 0x86DD
            else:
                out, proto = ip, 0x0800
            if link == "sll":
                frame = bytes(dpkt.sll.SLL(type=0, hrd=1, hlen=6, ethtype=proto, data=out))
            else:
                family = 30 if ipv6 else 2  # AF_INET6 as written by some BSDs, AF_INET
                frame = struct.pack("<I", family) + bytes(out)
            w.writepkt(frame, ts)


@pytest.mark.parametrize(
    "ipv6,link,ng", [(True, "sll", False), (False, "sll", True), (True, "loop", True)]
)
def test_same_verdict_in_other_encodings(tmp_path: Path, ipv6: bool, link: str, ng: bool) -> None:
    src = CAPS / "lo_nagle_qd1_512.pcap"
    dst = tmp_path / "re.pcap"
    _rewrite(src, dst, ipv6=ipv6, link=link, ng=ng)
    a, b = _only(src), _only(dst)
    for key in ("verdict", "operations", "request_bytes", "response_bytes", "stalled_ops"):
        assert a[key] == b[key], key
    assert a["latency_ms"]["p50"] == pytest.approx(b["latency_ms"]["p50"], rel=1e-6)


ETH = dict(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800)


def _put(w, t, frm, to, seq, ack, flags, payload=b"", win=65535, opts=b"") -> None:
    """Write one made-up TCP/IPv4/Ethernet segment from ``frm`` to ``to`` at ``t`` seconds."""
    tcp = dpkt.tcp.TCP(
        sport=frm[1], dport=to[1], seq=seq, ack=ack, flags=flags, win=win, opts=opts, data=payload
    )
    tcp.off = 5 + len(opts) // 4
    ip = dpkt.ip.IP(src=frm[0], dst=to[0], p=6, data=tcp, ttl=64)
    ip.len = 20 + len(bytes(tcp))
    w.writepkt(bytes(dpkt.ethernet.Ethernet(data=ip, **ETH)), t)


def _synthetic(path: Path, *, zero_window: bool) -> None:
    """A client asks for 64 KiB at a time; the server may have at most ``window`` bytes unacked.

    Made-up traffic (not measured): every response goes out as a series of 1448-byte segments, each
    window's worth followed by an ACK one round trip (10 ms) later; with ``zero_window`` the client
    advertises a zero window for 60 ms once, in the middle of the run.
    """
    c, s = (b"\x0a\0\0\x02", 40000), (b"\x0a\0\0\x01", 3260)
    window, mss, rtt = 16384, 1448, 0.010
    t = 0.0
    cseq, sseq = 1000, 5000
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f)

        def put(frm, to, seq, ack, flags, payload=b"", win=65535, opts=b""):
            _put(w, t, frm, to, seq, ack, flags, payload, win, opts)

        syn_opts = b"\x02\x04" + struct.pack("!H", mss) + b"\x01\x03\x03\x00"  # MSS, NOP, wscale 0
        put(c, s, cseq, 0, dpkt.tcp.TH_SYN, opts=syn_opts)
        t += rtt / 2
        put(s, c, sseq, cseq + 1, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, opts=syn_opts)
        t += rtt / 2
        cseq, sseq = cseq + 1, sseq + 1
        put(c, s, cseq, sseq, dpkt.tcp.TH_ACK, win=window)
        for op in range(12):
            put(c, s, cseq, sseq, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, b"q" * 48, win=window)
            cseq += 48
            t += rtt / 2
            left = 65536
            while left > 0:
                burst = min(window, left)
                while burst > 0:
                    n = min(mss, burst)
                    put(
                        s,
                        c,
                        sseq,
                        cseq,
                        dpkt.tcp.TH_ACK | (dpkt.tcp.TH_PUSH if n < mss else 0),
                        b"r" * n,
                    )
                    sseq, burst, left = sseq + n, burst - n, left - n
                    t += 12e-6
                t += rtt
                if zero_window and op == 6 and left > 0:
                    put(c, s, cseq, sseq, dpkt.tcp.TH_ACK, win=0)
                    t += 0.060
                put(c, s, cseq, sseq, dpkt.tcp.TH_ACK, win=window)
            t += 1e-4


@pytest.mark.parametrize("zero", [False, True])
def test_window_verdicts(tmp_path: Path, zero: bool) -> None:
    path = tmp_path / "w.pcap"
    _synthetic(path, zero_window=zero)
    d = _only(path)
    assert d["operations"] == 12
    assert d["verdict"] == ("zero-window" if zero else "window-limited")
    if not zero:
        assert d["receive_window_bytes"] == 16384


def _double_ack(path: Path, *, client_first: bool) -> None:
    """A Nagle server stalls on every operation; both delayed-ACK timers fire in one tick.

    Made-up traffic (not measured), the pattern of a Nagle server behind a TCP_NODELAY client on
    Linux loopback: a 48-byte request; the server sends its 48-byte header at once and Nagle holds
    the 512-byte data behind it; 40 ms later the server's delayed ACK of the request and the
    client's delayed ACK of the header leave together (the client's first when ``client_first``)
    and the data follows the client's ACK.
    """
    c, s = (b"\x0a\0\0\x02", 40000), (b"\x0a\0\0\x01", 3260)
    ack, push = dpkt.tcp.TH_ACK, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH
    cseq, sseq, t = 1001, 5001, 0.0
    with path.open("wb") as f:
        w = dpkt.pcap.Writer(f)
        _put(w, t, c, s, cseq - 1, 0, dpkt.tcp.TH_SYN)
        _put(w, t + 1e-5, s, c, sseq - 1, cseq, dpkt.tcp.TH_SYN | ack)
        _put(w, t + 2e-5, c, s, cseq, sseq, ack)
        for _ in range(20):
            t += 1e-4
            _put(w, t, c, s, cseq, sseq, push, b"q" * 48)
            cseq += 48
            _put(w, t + 2e-5, s, c, sseq, cseq - 48, push, b"h" * 48)
            sseq += 48
            t += 0.040  # s: both delayed-ACK timers
            server_ack = (s, c, sseq - 48, cseq, ack)
            client_ack = (c, s, cseq, sseq, ack)
            for k, seg in enumerate(
                (client_ack, server_ack) if client_first else (server_ack, client_ack)
            ):
                _put(w, t + k * 1e-5, *seg)
            _put(w, t + 3e-5, s, c, sseq, cseq, push, b"d" * 512)
            sseq += 512
            _put(w, t + 5e-5, c, s, cseq, sseq, ack)


@pytest.mark.parametrize("client_first", [True, False])
def test_both_delayed_acks_in_one_tick(tmp_path: Path, client_first: bool) -> None:
    """Each stall is a delayed-ACK stall whichever of the two ACKs the capture shows first
    (seen on loopback: with the server's first, an earlier rule left the gap unexplained)."""
    path = tmp_path / "two.pcap"
    _double_ack(path, client_first=client_first)
    d = _only(path)
    assert d["operations"] == 20 and d["response_bytes"] == 48 + 512
    assert d["gaps_by_kind"] == {"delayed-ack": 20}
    assert d["verdict"] == "delayed-ack-stall" and d["held_side"] == "server"


def test_bad_files(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a capture\n")
    with pytest.raises(CaptureError, match="not a pcap or pcapng"):
        read_capture(text)
    cut = tmp_path / "cut.pcap"
    whole = (CAPS / "lo_nodelay_qd1_512.pcap").read_bytes()
    cut.write_bytes(whole[: len(whole) - 37])
    with pytest.raises(CaptureError, match="truncated"):
        read_capture(cut)
    udp = tmp_path / "udp.pcap"
    with udp.open("wb") as f:
        w = dpkt.pcap.Writer(f)
        u = dpkt.udp.UDP(sport=1, dport=2, data=b"x")
        ip = dpkt.ip.IP(src=b"\x7f\0\0\x01", dst=b"\x7f\0\0\x01", p=17, data=u)
        w.writepkt(bytes(dpkt.ethernet.Ethernet(data=ip, type=0x0800)), 0.0)
    with pytest.raises(CaptureError, match="no TCP segment"):
        read_capture(udp)
    with pytest.raises(CaptureError, match="no such file"):
        read_capture(tmp_path / "missing.pcap")
    with pytest.raises(ValueError, match="no connection .* port 9"):
        D.analyze_capture(CAPS / "lo_nodelay_qd1_512.pcap", server_port=9)
    with pytest.raises(ValueError, match="1..65535"):
        D.analyze_capture(CAPS / "lo_nodelay_qd1_512.pcap", server_port=70000)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "models.measure", "analyze", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_json_and_errors(tmp_path: Path) -> None:
    out = _cli(str(CAPS / "lo_nagle_qd1_512.pcap"), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (conn,) = report["connections"]
    for key in (
        "operations",
        "rate_ops_per_s",
        "latency_ms",
        "gaps",
        "nagle_holds",
        "segments_per_response",
        "verdict",
        "stall_period_ms",
        "cause",
        "fix",
    ):
        assert key in conn
    assert conn["verdict"] == "delayed-ack-stall"
    port = int(conn["server"].rsplit(":", 1)[1])
    assert _cli(str(CAPS / "lo_nagle_qd1_512.pcap"), "--server-port", str(port)).returncode == 0
    text = _cli(str(CAPS / "lo_nagle_qd1_512.pcap"))
    assert "delayed-ack-stall" in text.stdout and "TCP_NODELAY" in text.stdout
    bad = tmp_path / "x.pcap"
    bad.write_bytes(b"\0" * 10)
    for args in ([str(bad)], [str(CAPS / "lo_nagle_qd1_512.pcap"), "--server-port", "0"]):
        err = _cli(*args)
        assert err.returncode == 2
        assert len(err.stderr.strip().splitlines()) == 1 or "usage" in err.stderr


needs_capture = pytest.mark.skipif(
    shutil.which("tcpdump") is None, reason="tcpdump is not installed"
)


@needs_capture
@pytest.mark.parametrize("sock,qd", [("nagle", 1), ("nodelay", 1), ("nagle", 4), ("more", 8)])
def test_fresh_harness_runs(tmp_path: Path, sock: str, qd: int) -> None:
    """The verdict agrees with the harness's own latencies on a new loopback run."""
    from models.measure.netns import Link, LinkSpec
    from models.measure.runner import RunSpec, run_one

    spec = RunSpec(
        proto="iscsi",
        sock=sock,
        client_sock="nodelay",
        qd=qd,
        payload_bytes=512,
        duration_s=1.0,
        warmup_s=0.0,
        # enough operations that the QD - 1 the harness drains after its last counted one (in the
        # capture, not in its window; a Nagle loop draining to QD 1 stalls) stay under the
        # stall share: with 40 they alone could make 7 % of a QD-4 capture
        count=200,
        capture=True,
    )
    pcap = tmp_path / "run.pcap"
    try:
        with Link(LinkSpec("loopback")) as link:
            result = run_one(spec, link, keep_pcap=pcap)
    except Exception as exc:  # no permission to capture on this machine
        pytest.skip(f"capture not possible here: {exc}")
    c = result.client
    d = _only(pcap)
    seen = (
        f"harness {c['stalled_ops']} of {c['window_ops']} stalled; capture: {d['verdict']}, "
        f"{d['stalled_ops']} of {d['operations']} over {STALL_MS:g} ms, "
        f"{d['stall_held_ops']} held, gaps {d['gaps_by_kind']}"
    )
    # The capture holds the harness's counted operations and the QD - 1 it drains after them
    # (warm-up 0): the same slow operations, plus at most every extra one.
    extra = d["operations"] - c["window_ops"]
    assert 0 <= extra <= qd - 1, seen
    assert c["stalled_ops"] <= d["stalled_ops"] <= c["stalled_ops"] + extra, seen
    # The verdict follows the harness's latencies wherever the extra operations cannot move
    # the share across the threshold (a run at the threshold is decided by its drain).
    low = 100.0 * c["stalled_ops"] >= STALL_SHARE_PCT * max(1, c["window_ops"])
    high = 100.0 * (c["stalled_ops"] + extra) >= STALL_SHARE_PCT * d["operations"]
    if low == high:
        assert (d["verdict"] == "delayed-ack-stall") == low, seen
    assert d["request_bytes"] == 48 and d["response_bytes"] == 48 + 512

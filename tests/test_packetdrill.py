"""packetdrill scripts against the simulator's TCP rules
(:mod:`models.sim.packetdrill`).

Every script of ``models/sim/packetdrill/scripts`` states one Linux
behaviour (each passed packetdrill on a Linux 6.18 kernel at HZ=250) and
runs here against the ``linux-6`` profile; a script the simulator is known
to get wrong is listed in ``KNOWN_DISAGREEMENTS`` with the cause and must
still fail (strict xfail), so a fix shows up.  The other tests hold the
runner itself: it must refuse what it cannot run, naming the line, and it
must be able to fail.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from models.sim.kernels import get_profile
from models.sim.packetdrill import (
    KNOWN_DISAGREEMENTS,
    SCRIPTS_DIR,
    ScriptError,
    parse_file,
    parse_script,
    run_file,
    run_script,
)
from models.sim.packetdrill.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(SCRIPTS_DIR.glob("*.pkt"))


def _param(path: Path):
    cause = KNOWN_DISAGREEMENTS.get(path.name)
    marks = [pytest.mark.xfail(strict=True, reason=cause)] if cause else []
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [_param(p) for p in SCRIPTS])
def test_script_against_linux_6(path):
    out = run_file(path)
    assert out.passed, f"{path.name}: {out.mismatch}\n{out.trace_text()}"


def test_scripts_cover_the_behaviours_and_name_the_kernel_function():
    assert len(SCRIPTS) >= 15
    for path in SCRIPTS:
        header = parse_file(path).header
        assert "Kernel:" in header, path.name
        assert "net/ipv4/" in header or "include/net/" in header, path.name


def test_known_disagreements_are_scripts_with_a_cause():
    names = {p.name for p in SCRIPTS}
    assert set(KNOWN_DISAGREEMENTS) <= names
    for name, cause in KNOWN_DISAGREEMENTS.items():
        assert "models/sim/" in cause, name  # where the simulator differs


HANDSHAKE = """\
0     socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0    setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
+0    bind(3, ..., ...) = 0
+0    listen(3, 1) = 0
+0    < S 0:0(0) win 65535 <mss 1000,nop,wscale 7>
+0    > S. 0:0(0) ack 1 <...>
+0    < . 1:1(0) ack 1 win 500
+0    accept(3, ..., ...) = 4
"""
N = HANDSHAKE.count("\n")  # the handshake's lines

NAGLE = (
    HANDSHAKE
    + """\
+0    write(4, ..., 100) = 100
+0    > P. 1:101(100) ack 1
+.010 write(4, ..., 100) = 100
+.040 < . 1:1(0) ack 101 win 500
+0    > P. 101:201(100) ack 1
"""
)


def test_the_inline_nagle_script_passes():
    out = run_script(parse_script(NAGLE, "nagle.pkt"))
    assert out.passed, out.mismatch
    assert [t.text for t in out.trace if t.direction == ">"][1:] == [
        "P. 1:101(100) ack 1",
        "P. 101:201(100) ack 1",
    ]


@pytest.mark.parametrize(
    "lines, offset, message",
    [
        ("+0 getsockopt(4, SOL_SOCKET, SO_ERROR, [0], [4]) = 0", 1, "unsupported system call"),
        ("+0~+0.1 write(4, ..., 10) = 10", 1, "time ranges"),
        ("0.1...0.2 read(4, ..., 10) = 10", 1, "blocking"),
        ("+0 < . 1:1(0) ack 1 win 500 <sack 1:2>", 1, "SACK"),
        ("+0 < R 1:1(0) win 0", 1, "unsupported TCP flags"),
        ("+0 < . 1:1(0) ack 1 urg 5", 1, "unsupported segment field 'urg'"),
        (
            "+0 setsockopt(4, SOL_SOCKET, SO_SNDBUF, [4096], 4) = 0",
            1,
            "SO_SNDBUF is not supported",
        ),
        ("+0 setsockopt(4, IPPROTO_TCP, TCP_QUICKACK, [0], 4) = 0", 1, "pingpong"),
        ("+0 setsockopt(4, IPPROTO_TCP, 10, [20000], 4) = 0", 1, "only before the connection"),
        ("+0 send(4, ..., 10, MSG_DONTWAIT) = 10", 1, "send flags"),
        ("+0 `ip link set tun0 mtu 1280`", 1, "unsupported shell command"),
        ("+0 write(4, ..., 10) = 10\n+0 > P. 1:11(10) ack 1 win 500", 2, "outbound 'win'"),
        ("+0 write(4, ..., 10) = 10\n+0 > P. 1:11(10) ack 1 <nop>", 2, "outbound TCP options"),
        ("+0 close(4) = 0\n+0 > F. 1:1(0) ack 1", 2, "after close"),
        ("+0 < F. 1:1(0) ack 1 win 500\n+0 > . 1:1(0) ack 2", 2, "after the peer's FIN"),
        ("+0 < P. 101:111(10) ack 1 win 500", 1, "not the next in order"),
        ("+0 < P. 1:1201(1200) ack 1 win 500", 1, "exceeds the MSS"),
        ("+0 read(4, ..., 10) = 10", 1, "would block"),
        ("+0 < P. 1:21(20) ack 1 win 500\n+0 read(4, ..., 5) = 5", 2, "partial reads"),
        ("+0 read(4, ..., 10) = -1 EAGAIN", 1, "an errno needs its text"),
        (
            "0 write(4, ..., 10) = 10\n+1 write(4, ..., 10) = 10\n0.5 write(4, ..., 1) = 1",
            3,
            "before",
        ),
    ],
)
def test_unsupported_syntax_is_an_error_naming_the_line(lines, offset, message):
    text = HANDSHAKE + lines + "\n"
    with pytest.raises(ScriptError, match=rf"^bad\.pkt:{N + offset}: .*{message}") as err:
        run_script(parse_script(text, "bad.pkt"))
    assert err.value.line == N + offset


def test_a_script_expecting_the_wrong_segment_fails():
    # Expecting the held segment at once, as if Nagle were off.
    wrong = NAGLE.replace(
        "+.010 write(4, ..., 100) = 100\n",
        "+.010 write(4, ..., 100) = 100\n+0    > P. 101:201(100) ack 1\n",
    )
    out = run_script(parse_script(wrong, "wrong.pkt"))
    assert not out.passed
    m = out.mismatch
    assert m.line == N + 4 and m.simulated is None
    assert m.reason == "the simulator sent nothing by 0.014000 s"
    assert "P. 101:201(100) ack 1" in str(m)


@pytest.mark.parametrize(
    "old, new, reason",
    [
        ("+0    > P. 1:101(100) ack 1", "+0    > . 1:101(100) ack 1", "flags differ"),
        ("+0    > P. 1:101(100) ack 1", "+0    > P. 1:51(50) ack 1", "sequence range differs"),
        ("+0    > P. 1:101(100) ack 1", "+0    > P. 1:101(100) ack 7", "ack differs"),
        ("+0    > P. 101:201(100) ack 1", "+.030 > P. 101:201(100) ack 1", "timing: 30.000 ms"),
        ("+0    > P. 1:101(100) ack 1\n", "", "sequence range differs"),
        ("+0    > P. 101:201(100) ack 1\n", "", "does not expect"),
        ("+0    write(4, ..., 100) = 100", "+0    write(4, ..., 100) = 99", "write returned 100"),
        ("ack 101 win 500", "ack 301 win 500", "acknowledges byte 301"),
    ],
)
def test_each_kind_of_mismatch_is_reported(old, new, reason):
    assert old in NAGLE
    out = run_script(parse_script(NAGLE.replace(old, new, 1), "wrong.pkt"))
    assert not out.passed and reason in out.mismatch.reason, out.mismatch


ACTIVE = """\
0     socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0    fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0
+0    connect(3, ..., ...) = -1 EINPROGRESS (Operation now in progress)
+0    > S 0:0(0) <...>
+.010 < S. 0:0(0) ack 1 win 65535 <mss 1000,nop,wscale 7>
+0    > . 1:1(0) ack 1
+0    write(3, ..., 100) = 100
+0    > P. 1:101(100) ack 1
+0    write(3, ..., 100) = 100
+.010 < . 1:1(0) ack 101 win 500
*     > P. 101:201(100) ack 1
+.010 < P. 1:51(50) ack 201 win 500
+0    > . 201:201(0) ack 51
+0    read(3, ..., 100) = 50
+0    read(3, ..., 100) = -1 EAGAIN (Resource temporarily unavailable)
"""


def test_active_open_any_time_and_a_nonblocking_read():
    # (this script also passes packetdrill on Linux 6.18)
    out = run_script(parse_script(ACTIVE, "active.pkt"))
    assert out.passed, out.mismatch
    assert out.trace[0].text == "S 0:0(0)" and out.trace[-1].time_s == pytest.approx(0.03)


def test_mss_follows_the_syn_options():
    # mss 1460 with timestamps on both SYNs: 1448-byte segments (tcp_sync_mss)
    text = HANDSHAKE.replace(
        "<mss 1000,nop,wscale 7>", "<mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 7>"
    ) + (
        "+0 write(4, ..., 2000) = 2000\n+0 > . 1:1449(1448) ack 1\n+0 > P. 1449:2001(552) ack 1\n"
    )
    # (one MSS per buffer: no GSO, so the write leaves as two segments)
    no_gso = get_profile("linux-6").configured(size_goal_bytes=1)
    out = run_script(parse_script(text, "mss.pkt"), profile=no_gso)
    assert out.passed, out.mismatch


def test_more_than_the_initial_cwnd_in_flight_is_reported():
    # a profile without a congestion window (nor GSO): the runner's guard reports it
    no_window = get_profile("linux-6").configured(congestion_control="none", size_goal_bytes=1)
    text = HANDSHAKE + "+0 write(4, ..., 11000) = 11000\n"
    out = run_script(parse_script(text, "cwnd.pkt"), profile=no_window)
    assert not out.passed and "congestion window" in out.mismatch.reason


def test_the_initial_cwnd_holds_the_eleventh_segment():
    # linux-6: 10 segments leave as one GSO packet, the 11th waits for an ACK
    text = HANDSHAKE + (
        "+0 write(4, ..., 11000) = 11000\n"
        "+0 > . 1:10001(10000) ack 1\n"
        "+.010 < . 1:1(0) ack 10001 win 500\n"
        "+0 > P. 10001:11001(1000) ack 1\n"
    )
    out = run_script(parse_script(text, "cwnd.pkt"))
    assert out.passed, out.mismatch
    early = text.replace("+.010 < . 1:1(0) ack 10001", "+.010 < . 1:1(0) ack 5001")
    assert not run_script(parse_script(early, "cwnd.pkt")).passed


def test_the_profile_matters_linux_24_has_no_autocorking():
    path = SCRIPTS_DIR / "autocork_coalesces.pkt"
    with pytest.raises(ScriptError, match=r"autocork_coalesces\.pkt:\d+: .*no autocorking"):
        run_file(path, profile="linux-2.4")
    text = path.read_text().replace(
        "`sysctl -q net.ipv4.tcp_autocorking=1`", "`sysctl -q net.ipv4.tcp_autocorking=0`"
    )
    assert not run_script(parse_script(text, "a.pkt"), profile="linux-6").passed
    # (2.4's initial window of 2 segments would hold the small writes too)
    wide = get_profile("linux-2.4").configured(init_cwnd=10)
    out = run_script(parse_script(text, "a.pkt"), profile=wide)
    assert not out.passed
    assert out.mismatch.simulated.startswith("P. 1801:1901(100)")  # not coalesced


def test_tolerance_options():
    late = NAGLE.replace("+0    > P. 101:201(100) ack 1", "+.006 > P. 101:201(100) ack 1")
    assert not run_script(parse_script(late, "t.pkt")).passed
    assert run_script(parse_script(late, "t.pkt"), tolerance_usecs=7000).passed
    assert run_script(parse_script("--tolerance_usecs=7000\n" + late, "t.pkt")).passed
    with pytest.raises(ValueError, match="tolerance_usecs"):
        run_script(parse_script(NAGLE, "t.pkt"), tolerance_usecs=-1)


def test_cli_excuses_only_known_disagreements(capsys, tmp_path):
    assert main([str(SCRIPTS_DIR)]) == 0
    out = capsys.readouterr().out
    assert out.count("KNOWN  ") == len(KNOWN_DISAGREEMENTS)
    assert out.splitlines()[-1].endswith(
        f"0 failed, {len(KNOWN_DISAGREEMENTS)} known (profile linux-6)"
    )
    wrong = tmp_path / "wrong.pkt"
    wrong.write_text(NAGLE.replace("> P. 101:201", "> . 101:201"))
    bad = tmp_path / "bad.pkt"
    bad.write_text(HANDSHAKE + "+0 getsockopt(4, SOL_SOCKET, SO_ERROR, [0], [4]) = 0\n")
    assert main([str(wrong), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL   wrong.pkt" in out and f"line {N + 5}: flags differ" in out
    assert f"ERROR  {bad}:{N + 1}: unsupported system call" in out
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path / "missing.pkt")])
    assert exit_.value.code == 2


def test_python_dash_m_runs_the_command_line():
    r = subprocess.run(
        [sys.executable, "-m", "models.sim.packetdrill", str(SCRIPTS_DIR / "cork_on_off.pkt")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("PASS   cork_on_off.pkt")

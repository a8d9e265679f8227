"""Root-only tests of the harness across a veth pair between two network namespaces it creates.

Skipped for normal users and where namespaces cannot be created (e.g. an unprivileged container).
Each test checks that nothing is left behind: no namespace or interface with the harness prefix.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from models.measure import Link, LinkSpec, RunSpec, run_one
from models.measure.netns import PREFIX, live_namespaces

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)


def _mine(pid: int) -> list[str]:
    return [n for n in live_namespaces() if n.startswith(f"{PREFIX}{pid}-")]


def _links(pid: int) -> list[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"qd{pid % 10_000_000}" in line]


@pytest.fixture(scope="module")
def can_netns() -> None:
    if os.geteuid() != 0:
        pytest.skip("veth tests need root (network namespaces); run as root to include them")
    probe = f"{PREFIX}{os.getpid()}-probe"
    res = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot create network namespaces here: {res.stderr.strip()}")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


def test_flory_mss_boundary_on_veth(can_netns: None) -> None:
    with Link(LinkSpec("veth", mtu=1500)) as link:
        assert len(_mine(os.getpid())) == 2
        short = run_one(
            RunSpec("flory", "nagle", 1, 1447, duration_s=5, warmup_s=0, count=6), link
        )
        full = run_one(RunSpec("flory", "nagle", 1, 1448, duration_s=5, warmup_s=0, count=6), link)
    assert short.server["tcp_maxseg_bytes"] == 1448
    # 1447: all but the first exchange (quick-ACK mode) wait for the delayed ACK; 1448: none does
    assert short.client["stalled_ops"] >= 4
    assert 36_000 <= short.client["lat_p50_us"] <= 60_000
    assert full.client["stalled_ops"] == 0
    if short.capture_summary is not None:
        assert short.capture_summary["responses_split"] == short.capture_summary["responses"]
    assert _mine(os.getpid()) == [] and _links(os.getpid()) == []


def test_tbf_rate_limit_bounds_throughput(can_netns: None) -> None:
    rate = 100_000_000  # bits per second
    with Link(LinkSpec("veth", mtu=1500, rate_bits_per_s=rate)) as link:
        r = run_one(
            RunSpec("iscsi", "nodelay", 16, 4096, duration_s=0.5, warmup_s=0.2, capture=False),
            link,
        )
        qdisc = subprocess.run(
            link.prefix("server") + ["tc", "qdisc", "show", "dev", link.server_iface],
            capture_output=True,
            text=True,
        ).stdout
    assert "tbf" in qdisc
    # payload bits per second cannot exceed the wire rate
    payload_bps = r.client["iops"] * (48 + 4096) * 8  # bytes -> bits
    assert payload_bps < rate
    assert payload_bps > 0.5 * rate  # and QD 16 of 4 KiB keeps a 100 Mb/s wire busy
    assert _mine(os.getpid()) == []


def test_cleanup_after_exception(can_netns: None) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with Link(LinkSpec("veth", mtu=9000)) as link:
            assert link.mtu == 9000
            raise RuntimeError("boom")
    assert _mine(os.getpid()) == [] and _links(os.getpid()) == []


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_cleanup_on_signal(can_netns: None, sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "models.measure",
            "run",
            "--link",
            "veth",
            "--mtu",
            "1500",
            "--duration",
            "20",
            "--no-capture",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal delivers it: a test run started in the background by a
        # non-interactive shell ignores SIGINT, its children inherit that, and Python then
        # leaves SIGINT ignored (the harness would finish its run and exit 0)
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(_mine(proc.pid)) < 2:
        time.sleep(0.05)
    assert len(_mine(proc.pid)) == 2, "the harness should have created its namespaces"
    time.sleep(0.5)  # let the run start
    children = _descendants(proc.pid)
    assert children, "the harness should be running its server and client"
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert _mine(proc.pid) == [] and _links(proc.pid) == []
    # no child survives: the runner kills them, and the C programs die with their parent (PR_SET_PDEATHSIG)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(Path(f"/proc/{c}").exists() for c in children):
        time.sleep(0.05)
    assert [c for c in children if Path(f"/proc/{c}").exists()] == []


def _descendants(pid: int) -> list[int]:
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def test_calibrate_s_tbf_watchdog_measurement_runs_and_leaves_nothing(can_netns: None) -> None:
    """calibrate's watchdog measurement end to end (a veth pair with tbf, both programs, the
    replay): a lateness in the plausible range, or, with the CPUs busy (the test suite's other
    worker), the refusal that names the bursts out of step; never a traceback or a leftover."""
    from models.measure import tbftimer
    from models.sim.hostranges import COST_RANGES

    lo, hi = COST_RANGES["tbf_late_s"].lo_s, COST_RANGES["tbf_late_s"].hi_s
    try:
        got = tbftimer.calibration(quick=True)
    except ValueError as e:
        assert "stayed in step" in str(e), e
    else:
        assert lo < got["late_us"] * 1e-6 < hi  # us -> s
        assert got["bursts"] == 2 * got["rounds"] * tbftimer.CAL_QUICK_BURSTS
        assert got["frames"] > 0 and 1 <= got["rounds"] <= tbftimer.CAL_ROUNDS
        assert got["late_p10_us"] <= got["late_us"] <= got["late_p90_us"]
    assert _mine(os.getpid()) == [] and _links(os.getpid()) == []

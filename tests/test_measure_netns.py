"""Namespaces are named per run and a killed run's leftovers go at the next start.

A namespace's name carries its creator's pid and start time (``qdm<pid>-<start>-<n>s``).  A run killed
with SIGKILL cannot delete its namespaces; the next link that creates namespaces removes every one
whose creator is gone, including one whose pid now belongs to another process.  The naming rules are
checked without privileges; creating namespaces needs root (skipped otherwise, saying why).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from models.measure import Link, LinkSpec, netns
from models.measure.netns import PREFIX, live_namespaces, owner_alive

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_link_names_carry_pid_and_start_time():
    link = Link(LinkSpec("loopback"))
    pid = os.getpid()
    start = netns._start_ticks(pid)
    assert start is not None and link.key.startswith(f"{PREFIX}{pid}-{start}-")
    assert owner_alive(link.key + "s")
    assert Link(LinkSpec("loopback")).key != link.key  # per link, not only per process


def test_owner_alive_tells_a_live_creator_from_a_dead_or_reused_pid():
    me, start = os.getpid(), netns._start_ticks(os.getpid())
    assert owner_alive(f"{PREFIX}{me}-{start}-0s")
    assert owner_alive(f"{PREFIX}{me}-0c")  # the older form without a start time
    dead = _dead_pid()
    assert not owner_alive(f"{PREFIX}{dead}-{start}-0s")
    assert not owner_alive(f"{PREFIX}{dead}-3l")
    assert not owner_alive(f"{PREFIX}{me}-{start + 1}-0s")  # this pid, another process
    assert owner_alive("someone-elses-namespace") and owner_alive(f"{PREFIX}-x")


@pytest.fixture(scope="module")
def can_netns() -> None:
    if os.geteuid() != 0:
        pytest.skip("creating network namespaces needs root; run as root to include these tests")
    probe = f"{PREFIX}{os.getpid()}-{netns._start_ticks(os.getpid())}-probe"
    res = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot create network namespaces here: {res.stderr.strip()}")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


def _add(name: str) -> None:
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)


def _of(pid: int) -> list[str]:
    return [n for n in live_namespaces() if n.startswith(f"{PREFIX}{pid}-")]


def test_a_killed_runs_namespaces_go_at_the_next_start(can_netns, capsys):
    proc = subprocess.Popen(
        [sys.executable, "-m", "models.measure", "run", "--link", "veth", "--duration", "20"]
        + ["--no-capture"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_of(proc.pid)) < 2:
        time.sleep(0.05)
    assert len(_of(proc.pid)) == 2, "the harness should have created its namespaces"
    proc.send_signal(signal.SIGKILL)  # no handler runs: the namespaces stay behind
    proc.wait(timeout=10)
    stale = _of(proc.pid)
    assert len(stale) == 2
    with Link(LinkSpec("loopback", isolate=True)) as link:
        assert _of(proc.pid) == []  # removed when this link started
        assert link.server_ns in live_namespaces()
    err = capsys.readouterr().err
    assert all(name in err for name in stale), err


def test_a_namespace_whose_pid_was_reused_is_stale(can_netns):
    me, start = os.getpid(), netns._start_ticks(os.getpid())
    ours = f"{PREFIX}{me}-{start}-999s"  # a live creator: kept
    reused = f"{PREFIX}{me}-{start - 1}-999s"  # this pid, but an earlier process
    dead = f"{PREFIX}{_dead_pid()}-{start}-999c"
    for name in (ours, reused, dead):
        _add(name)
    try:
        removed = netns.cleanup_stale()
        assert reused in removed and dead in removed and ours not in removed
        assert ours in live_namespaces()
        assert reused not in live_namespaces() and dead not in live_namespaces()
    finally:
        for name in (ours, reused, dead):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_the_cleanup_command_reports_what_it_removed(can_netns):
    name = f"{PREFIX}{_dead_pid()}-1-0s"
    _add(name)
    res = subprocess.run(
        [sys.executable, "-m", "models.measure", "cleanup"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0 and name in res.stdout
    assert name not in live_namespaces()

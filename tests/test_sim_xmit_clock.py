"""``Host.xmit_clock_in_call``: inside a ``send()`` whose CPU comes first (``send_cpu_first``),
``tcp_write_xmit`` reads the clock after the call's CPU so far (``tcp_mstamp_refresh`` after the
copy), so bbr's pacing check and the departure time it stamps are that late; off, the call's
start."""

from __future__ import annotations

import pytest

from models.sim import Scenario, simulate
from models.sim.engine import Simulation
from models.sim.rules.bbr import NS_FS, Bbr
from models.sim.sender import NODELAY, _Skb

US = 1e-6  # seconds per microsecond
FS_PER_US = 10**9  # femtoseconds per microsecond


def paced(clock: bool, **run) -> dict:
    """Both ends under bbr, each send() paying CPU first, a pacing timer that costs CPU."""
    host = {
        "send_cpu_s": 2 * US,
        "gso_cpu_s": 6 * US,
        "proc_s": 4 * US,
        "wake_s": 5 * US,
        "send_cpu_first": True,
        "xmit_clock_in_call": clock,
        "nodelay": True,
        "timer_fire_cpu_s": 10 * US,
    }
    return dict(
        workload={"qd": 8, "response_writes": (48, 2048)},
        link={"latency_s": 1 * US, "mtu": 1500, "softirq_on_sender": True},
        kernel={"congestion_control": "bbr"},
        client=host,
        server=host,
        run={"ops": 2000, **run},
    )


def check_in_a_call(clock: bool) -> tuple[int, int]:
    """A buffer queued inside a send() that has spent 1 us of CPU, bbr's next departure 9 ns
    after the call's start: (pacing timers armed, segments sent) by one push."""
    sim = Simulation(Scenario().replace(**paced(clock)))
    snd = sim.server_ep.sender
    now = 0
    snd.cc.wstamp = now + 9 * NS_FS  # the header's departure, less than a copy ago
    snd.in_send, snd.thread_cpu = True, 1 * FS_PER_US  # the call's copy so far
    snd.queue.append(_Skb(snd.write_seq, snd.write_seq + 2048, now))
    snd.write_seq += 2048
    snd.push(now, NODELAY)
    return snd.cc.timer_arms, snd.data_segments


def test_the_pacing_check_reads_the_clock_after_the_copy():
    assert check_in_a_call(False) == (1, 0)  # 9 ns ahead of the call's start: paced
    assert check_in_a_call(True) == (0, 2)  # behind the clock after the copy: both leave


def test_the_flag_needs_send_cpu_first():
    with pytest.raises(ValueError, match="xmit_clock_in_call .* needs server.send_cpu_first"):
        Scenario(server={"xmit_clock_in_call": True})


def test_the_fast_forward_stays_exact(monkeypatch):
    # (the rate samples' times exact, so that the loop can repeat on any phase of the microsecond)
    monkeypatch.setattr(Bbr, "stamp_fs", 1)
    on = simulate(**paced(True, ops=6000))
    off = simulate(**paced(True, ops=6000, fast_forward=False))
    assert on.skipped_ops > 0
    assert on.rtts_s == off.rtts_s and on.hosts == off.hosts
    simulate(**paced(True, ops=500, check=True))

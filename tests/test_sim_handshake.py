"""``Host.handshake_rtt``: the connection's handshake gives each end's congestion control its
first RTT sample before any data (``tcp_synack_rtt_meas`` in ``tcp_check_req`` on the server, the
SYN-ACK's ACK on the client), so bbr paces its first segments at the initial window over that
round trip (``bbr_init_pacing_rate_from_rtt``), not over the 1 ms it assumes without a sample.
The round trip is the path's: a bare header each way over the idle channels
(:mod:`models.sim.handshake`), which these tests hold to a pure ACK's real delivery."""

from __future__ import annotations

import pytest
import test_sim_xmit_clock as xmit_clock
from sim_strategies import assert_same_numbers

from models.sim import Scenario, simulate
from models.sim.cpu import CpuPool
from models.sim.engine import Simulation
from models.sim.events import EventLoop
from models.sim.handshake import idle_trip_fs, round_trip_fs
from models.sim.link import Channel
from models.sim.rules.bbr import Bbr
from models.sim.rules.bbr_model import BW_SCALE, HIGH_GAIN
from models.sim.rules.rx import InterruptModeration
from models.sim.segment import Segment

US = 1e-6  # seconds per microsecond
FS_PER_US = 10**9  # femtoseconds per microsecond


def delivered_at(ch: Channel, loop: EventLoop, now: int) -> int:
    """When a pure ACK handed to ``ch`` at ``now`` reaches its receiver, fs."""
    seen: list[int] = []
    ch.out = lambda t, seg: seen.append(t)
    loop.schedule(now, lambda t, _a: ch.send(t, Segment(0, 1, 1, 1, False)))
    loop.run()
    return seen[0]


CHANNELS = {
    "wire": dict(softirq=3 * FS_PER_US, ack_softirq=FS_PER_US),
    "token bucket": dict(softirq=2 * FS_PER_US, bucket_bytes=64_000),
    "interrupt moderation": dict(softirq=FS_PER_US, rx="moderated"),
    "one machine": dict(softirq=0, ack_softirq=4 * FS_PER_US, cpu=True),
    "one machine, slow wire": dict(
        softirq=0, ack_softirq=FS_PER_US // 2, cpu=True, rate_bps=10**6
    ),
}


@pytest.mark.parametrize("kind", sorted(CHANNELS))
def test_the_idle_trip_is_a_pure_acks_delivery(kind):
    opts = dict(CHANNELS[kind])
    loop = EventLoop()
    rx = opts.pop("rx", None)
    cpu = opts.pop("cpu", False)
    ch = Channel(
        loop,
        opts.pop("rate_bps", 10**10),
        tx_latency=2 * FS_PER_US,
        rx_latency=5 * FS_PER_US,
        propagation=7 * FS_PER_US,
        rx=InterruptModeration(5 * FS_PER_US, 50 * FS_PER_US) if rx else None,
        cpu=CpuPool(2) if cpu else None,
        **opts,
    )
    trip = idle_trip_fs(ch)
    assert trip > 0
    assert delivered_at(ch, loop, 10 * FS_PER_US) == 10 * FS_PER_US + trip


def test_a_receive_rule_without_an_idle_wake_up_is_refused_by_name():
    class Bare:  # a reader's receive rule that does not say its wake-up from idle
        def seen(self, arrive: int, poll_end: int) -> int:
            return arrive

    ch = Channel(EventLoop(), 10**9, 0, 0, 0, 0, rx=Bare())
    with pytest.raises(ValueError, match="Bare has no idle_fs"):
        idle_trip_fs(ch)


def paced(flag: bool, cc: str = "bbr", size: int = 16384, **run) -> dict:
    host = {
        "nodelay": True,
        "proc_s": 4 * US,
        "wake_s": 5 * US,
        "send_cpu_s": 1 * US,
        "handshake_rtt": flag,
    }
    return dict(
        workload={"qd": 8, "response_writes": (48, size)},
        link={"latency_s": 3 * US, "mtu": 1500},
        kernel={"congestion_control": cc},
        client=host,
        server=host,
        run={"ops": 2000, **run},
    )


def test_the_handshake_seeds_srtt_the_minimum_rtt_and_bbrs_first_rate():
    sim = Simulation(Scenario().replace(**paced(True)))
    rtt = round_trip_fs(sim.c2s, sim.s2c)
    for ep in (sim.client_ep, sim.server_ep):
        cc = ep.sender.cc
        srtt_us = cc.srtt_us >> 3
        assert srtt_us == rtt // FS_PER_US > 0
        assert cc.model.min_rtt_fs == cc.rs.rtt_min_fs == rtt
        bw = (cc.cwnd << BW_SCALE) // srtt_us  # bbr_init_pacing_rate_from_rtt
        assert cc.model.rate == cc.model.pacing_rate(bw, HIGH_GAIN, cc.mss)
        assert cc.model.has_seen_rtt
    off = Simulation(Scenario().replace(**paced(False))).server_ep.sender.cc
    assert off.srtt_us == 0 and off.model.min_rtt_fs is None and not off.model.has_seen_rtt
    # (the default hosts' latencies make the round trip about 212 us: near 1 ms / 4.7)
    assert sim.server_ep.sender.cc.model.rate > 4 * off.model.rate


def test_a_measured_round_trip_replaces_the_idle_paths():
    """Host.handshake_rtt_s: the round trip a process's first connection measured, each end its
    own, in place of the path's idle one."""
    kw = paced(True)
    kw["server"] = {**kw["server"], "handshake_rtt_s": 17 * US}
    sim = Simulation(Scenario().replace(**kw))
    server, client = sim.server_ep.sender.cc, sim.client_ep.sender.cc
    assert server.srtt_us >> 3 == 17 and server.model.min_rtt_fs == 17 * FS_PER_US
    assert client.srtt_us >> 3 == round_trip_fs(sim.c2s, sim.s2c) // FS_PER_US  # (its own: 0)
    bw = (server.cwnd << BW_SCALE) // 17
    assert server.model.rate == server.model.pacing_rate(bw, HIGH_GAIN, server.mss)


def test_a_measured_round_trip_without_the_flag_is_refused():
    kw = paced(False)
    kw["server"] = {**kw["server"], "handshake_rtt_s": 17 * US}
    with pytest.raises(ValueError, match="handshake_rtt_s .* needs server.handshake_rtt true"):
        Scenario().replace(**kw)


def test_reno_takes_srtt_from_the_handshake_too():
    sim = Simulation(Scenario().replace(**paced(True, cc="reno")))
    rtt = round_trip_fs(sim.c2s, sim.s2c)
    assert sim.server_ep.sender.cc.srtt_us >> 3 == rtt // FS_PER_US
    # no window rule: nothing to seed
    Simulation(Scenario().replace(**paced(True, cc="none")))


def test_the_first_sample_only_once_and_not_negative():
    cc = Simulation(Scenario().replace(**paced(True))).server_ep.sender.cc
    with pytest.raises(RuntimeError, match="before any other"):
        cc.handshake(FS_PER_US)
    fresh = Simulation(Scenario().replace(**paced(False))).server_ep.sender.cc
    with pytest.raises(ValueError, match="must be >= 0"):
        fresh.handshake(-1)
    fresh.handshake(0)  # a path with no latency: a sample under a microsecond
    assert fresh.srtt_us == 1 << 3


def test_a_path_with_no_latency_takes_the_handshake_s_sample():
    """The property search's case (a zero-latency link, handshake_rtt on): the round trip is
    0 fs, and the run goes on with a sample of a microsecond, not a ValueError."""
    zero = {"tx_latency_s": 0.0, "rx_latency_s": 0.0, "softirq_s": 0.0, "handshake_rtt": True}
    sc = Scenario().replace(
        link={"latency_s": 0.0, "bucket_bytes": 590, "mtu": 576},  # a full bucket: no wire time
        kernel={"congestion_control": "reno"},
        client=zero,
        server=zero,
        run={"ops": 50},
    )
    sim = Simulation(sc)
    assert round_trip_fs(sim.c2s, sim.s2c) == 0
    assert sim.run().completed_total > 0


def test_the_fast_forward_stays_exact(monkeypatch):
    """A paced loop that repeats (xmit_clock's scenario, its rate samples' times exact so that
    it can repeat on any phase of the microsecond) with the handshake's sample: the fast-forward
    skips and gives every event's result; the sample changes the run."""
    monkeypatch.setattr(Bbr, "stamp_fs", 1)
    kw = xmit_clock.paced(True, ops=6000)
    for host in ("client", "server"):
        kw[host] = {**kw[host], "handshake_rtt": True}
    on = simulate(**kw)
    off = simulate(**{**kw, "run": {**kw["run"], "fast_forward": False}})
    assert on.skipped_ops > 0
    assert_same_numbers(on, off)
    assert on.rtts_s != simulate(**xmit_clock.paced(True, ops=6000)).rtts_s
    simulate(**paced(True, ops=500, check=True))
    simulate(**paced(True, size=2048, ops=3000, check=True))

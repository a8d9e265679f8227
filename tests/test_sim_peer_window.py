"""The window the peer advertises (``KernelProfile.peer_window``, ``Kernel.peer_window``): every
segment carries its sender's receive window, the other end's sender keeps to it, a read that
doubles the window sends it at once, and the handshake's window (at most 65535 bytes) comes first.
The rule's checks each have a wrong model beside them that fails them."""

from __future__ import annotations

import dataclasses

import pytest

from models.sim import Scenario, simulate
from models.sim.endpoint import Endpoint
from models.sim.engine import Simulation
from models.sim.events import EventLoop
from models.sim.rules.ack import LinuxAck
from models.sim.wiring import SYN_WINDOW_MAX_BYTES

US = 1e-6  # seconds per microsecond
MIB = 1 << 20  # bytes

#: One MiB responses on the loopback (MSS 65483: the initial window of 10 segments is 640 KiB, ten
#: times the handshake's window), reno, the 6.18 receive buffer (autotuned from 128 KiB).
BIG = dict(
    workload={"qd": 1, "response_writes": (MIB,)},
    link={"latency_s": 20 * US, "mtu": 65536},
    kernel={"profile": "linux-6.18-rwnd", "congestion_control": "reno", "peer_window": True},
    client={"nodelay": True, "proc_s": 5 * US},
    server={"nodelay": True},
    run={"ops": 40, "trace": True, "trace_at": "server"},
)


def _first_flight(r) -> int:
    """Data bytes the server sent before the client's first segment after the request reached it
    (the server's capture point)."""
    sent = 0
    seen_request = False
    for g in r.trace:
        if g.direction == "C > S":
            if seen_request:
                break
            seen_request = g.length > 0
        elif g.length:
            sent += g.length
    return sent


def test_the_first_flight_stays_within_the_handshakes_window():
    on = simulate(**BIG)
    off = simulate(**{**BIG, "kernel": {**BIG["kernel"], "peer_window": False}})
    assert 0 < _first_flight(on) <= SYN_WINDOW_MAX_BYTES
    # wrong model (the fixed window of rcv_wnd_max_bytes): the congestion window alone decides
    assert _first_flight(off) > SYN_WINDOW_MAX_BYTES


def _edges(monkeypatch) -> list:
    """Record, for every data segment an end sends, its last byte and the right edge of the
    window its peer last offered (both in its own stream), as the segments that arrived carried
    it (not as the sender keeps it)."""
    seen: list = []
    offered: dict = {}
    receive, transmit, transmit_gso = Endpoint.receive, Endpoint.transmit, Endpoint.transmit_gso

    def rx(self, now, seg):
        if seg.wnd >= 0 and not self.owned:  # (a backlogged one counts when processed)
            offered[self.side] = max(offered.get(self.side, 0), seg.ack + seg.wnd)
        return receive(self, now, seg)

    def check(ep, end):
        s = ep.sender
        seen.append((end, offered.get(ep.side, s.snd_una + SYN_WINDOW_MAX_BYTES)))

    def tx(self, now, seq, end, psh):
        check(self, end)
        return transmit(self, now, seq, end, psh)

    def tx_gso(self, now, seq, end, psh, mss):
        check(self, end)
        return transmit_gso(self, now, seq, end, psh, mss)

    monkeypatch.setattr(Endpoint, "receive", rx)
    monkeypatch.setattr(Endpoint, "transmit", tx)
    monkeypatch.setattr(Endpoint, "transmit_gso", tx_gso)
    return seen


def test_no_byte_leaves_beyond_the_window_the_peer_offered(monkeypatch):
    seen = _edges(monkeypatch)
    r = simulate(**{**BIG, "run": {"ops": 40}})
    assert r.ops == 40 and seen
    assert all(end <= edge for end, edge in seen)


def test_a_sender_that_ignores_the_window_is_caught(monkeypatch):
    """Wrong model: the ACK's window is read but the sender's is set a MiB wider; the same check
    fails."""
    seen = _edges(monkeypatch)
    receive = Endpoint.receive

    def careless(self, now, seg):
        receive(self, now, seg)
        if seg.wnd >= 0 and not self.owned:
            self.sender.snd_wnd += MIB

    monkeypatch.setattr(Endpoint, "receive", careless)
    simulate(**{**BIG, "run": {"ops": 40}})
    assert not all(end <= edge for end, edge in seen)


def test_a_read_that_frees_the_buffer_sends_the_window_at_once(monkeypatch):
    """Eight 64 KiB responses at once fill the handshake's window; each read that frees the
    buffer sends the larger window at once.  Without that rule (a wrong model) the server waits,
    nothing in flight, until its probe timer: the run stalls for a fifth of a second."""
    sc = dict(
        workload={"qd": 8, "response_writes": (48, 65536)},
        link={"latency_s": 1 * US, "mtu": 65536, "bandwidth_bps": 1e12},
        kernel={"profile": "linux-6.18-rwnd", "congestion_control": "reno", "peer_window": True},
        client={"nodelay": True, "proc_s": 1 * US, "wake_s": 45 * US},
        server={"nodelay": True, "send_cpu_s": 1 * US, "send_byte_cpu_s": 3e-11},
        run={"ops": 300, "warmup_ops": 0},
    )
    assert simulate(**sc).sim_time_s < 0.05  # 300 operations in about 11 ms
    monkeypatch.setattr(LinuxAck, "_cleanup_rbuf", _without_update)
    assert simulate(**sc).sim_time_s > 0.15


def _without_update(self, now):
    """``LinuxAck._cleanup_rbuf`` without the window's update."""
    if self.owed and (
        self.rcv.rcv_nxt - self.rcv_wup > self.rcv_mss
        or self.pushed & 2
        or (self.pushed & 1 and not self.in_pingpong())
    ):
        self.rcv.send_ack(now)


@pytest.mark.parametrize(
    "scenario",
    [
        dict(  # each response is more than the window holds: the window paces the run
            workload={"qd": 2, "response_writes": (48, 65536)},
            link={"latency_s": 5 * US, "mtu": 65536, "bandwidth_bps": 1e12},
            kernel={"profile": "linux-6-rwnd", "congestion_control": "reno", "peer_window": True},
            client={"nodelay": True, "proc_s": 4 * US, "wake_s": 5 * US},
            server={"proc_s": 2 * US, "gso_cpu_s": 1 * US},
        ),
        dict(
            workload={"qd": 4, "response_writes": (48, 16384)},
            link={"latency_s": 5 * US, "mtu": 1500},
            kernel={"profile": "linux-6-rwnd", "congestion_control": "reno", "peer_window": True},
            client={"nodelay": True, "proc_s": 4 * US, "wake_s": 5 * US},
            server={"proc_s": 2 * US, "gso_cpu_s": 1 * US},
        ),
    ],
)
def test_the_fast_forward_gives_the_same_run(scenario):
    runs = [
        Simulation(Scenario(**scenario, run={"ops": 4000, "fast_forward": ff})).run()
        for ff in (False, True)
    ]
    a, b = runs
    assert b.skipped_ops > a.ops // 2  # (the fast-forward did jump)
    assert (a.ops, a.completed_total, a.packets) == (b.ops, b.completed_total, b.packets)
    assert a.sim_time_s == pytest.approx(b.sim_time_s, rel=1e-12)
    assert a.iops == pytest.approx(b.iops, rel=1e-12)


def test_the_setting_is_checked():
    with pytest.raises(ValueError, match="peer_window needs a profile with a receive buffer"):
        Scenario(kernel={"profile": "linux-6", "congestion_control": "reno", "peer_window": True})
    with pytest.raises(ValueError, match="peer_window needs a congestion control"):
        Scenario(kernel={"profile": "linux-6-rwnd", "peer_window": True})


def test_off_by_default_and_nothing_carried():
    sim = Simulation(Scenario(kernel={"profile": "linux-6-rwnd", "congestion_control": "reno"}))
    assert not sim.server_ep.peer_window and not sim.client_ep.peer_window
    sim.run()
    assert sim.server_ep.sender.snd_wnd == sim.scenario.kernel.resolve().rcv_wnd_max_bytes


def test_a_profile_with_the_window_but_no_buffer_or_no_congestion_control_is_refused():
    """The checks hold for a profile that sets it too, not only for the scenario's setting."""
    from models.sim import PROFILES

    base = PROFILES["linux-6"]
    no_buffer = dataclasses.replace(base, name="x", peer_window=True)
    with pytest.raises(ValueError, match="peer_window needs a receive buffer"):
        Endpoint(1, EventLoop(), None, no_buffer, 1448, True, None)
    buffered = dataclasses.replace(PROFILES["linux-6-rwnd"], name="y", peer_window=True)
    with pytest.raises(ValueError, match="peer_window needs a congestion control"):
        Endpoint(1, EventLoop(), None, buffered, 1448, True, None)

"""``Link.freed_on_handover``: a sent data frame leaves the socket's transmit memory as soon as the
link takes it (loopback_xmit's ``skb_orphan``; on a veth pair ``ip_rcv_core``'s, in the peer's
receive path that the sending CPU runs before the send returns), so autocorking, which waits for
an earlier frame of the socket still in the host, never holds data; a frame waiting in a tbf
qdisc is still held until it leaves."""

from __future__ import annotations

from sim_strategies import assert_same_numbers

from models.sim import Scenario, simulate
from models.sim.engine import Simulation
from models.sim.rules import cork

US = 1e-6  # seconds per microsecond


def nodelay(freed: bool, **link) -> dict:
    """A NODELAY server writing a header and 4 KiB in two calls at QD 8 over a 10 Gb/s link:
    the header finds the previous response's data still on the wire, so it is autocorked."""
    host = {"nodelay": True, "proc_s": 4 * US, "wake_s": 5 * US}
    return dict(
        workload={"qd": 8, "response_writes": (48, 4096)},
        link={"bandwidth_bps": 1e10, "latency_s": 2 * US, "freed_on_handover": freed, **link},
        kernel={"autocork": True},
        client=host,
        server=host,
        run={"ops": 3000},
    )


def defers(kw: dict, monkeypatch) -> tuple[int, int]:
    """(autocork holds, completed operations) of the scenario ``kw``."""
    held = []
    stock = cork.Autocork.defer

    def counting(self, sender, now, tail_bytes):
        out = stock(self, sender, now, tail_bytes)
        held.append(out)
        return out

    monkeypatch.setattr(cork.Autocork, "defer", counting)
    sim = Simulation(Scenario(**{**kw, "run": {**kw["run"], "fast_forward": False}}))
    r = sim.run()
    return sum(held), r.completed_total


def test_autocorking_holds_nothing_once_frames_are_freed_on_handover(monkeypatch):
    held_off, _ = defers(nodelay(False), monkeypatch)
    held_on, done = defers(nodelay(True), monkeypatch)
    assert held_off > 100 and held_on == 0 and done > 3000


def test_nothing_stays_in_the_transmit_path_but_what_a_qdisc_holds(monkeypatch):
    sim = Simulation(Scenario(**nodelay(True)))
    sim.run()
    assert not sim.s2c.in_nic and sim.s2c.nic_bytes == 0
    # behind a token bucket that holds frames (its watchdog), they count until they leave,
    # and autocorking holds data behind them
    kw = nodelay(True, bandwidth_bps=1e9, bucket_bytes=2 * 1514, watchdog_wake=True)
    held, _ = defers(kw, monkeypatch)
    assert held > 100


def test_the_fast_forward_stays_exact_and_the_flag_changes_the_run():
    on = simulate(**nodelay(True))
    off = simulate(**{**nodelay(True), "run": {"ops": 3000, "fast_forward": False}})
    assert on.skipped_ops > 0
    assert_same_numbers(on, off)
    assert on.packets > 1.2 * simulate(**nodelay(False)).packets  # headers not coalesced
    simulate(**{**nodelay(True), "run": {"ops": 500, "check": True}})

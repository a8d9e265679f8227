"""``Host.own_socket``: a segment that reaches a host while its thread is inside a ``send()`` that
costs CPU waits in the socket's backlog and is processed, in order, when the call ends
(``tcp_add_backlog``, ``release_sock``)."""

from __future__ import annotations

import pytest

from models.sim import Scenario, simulate
from models.sim.engine import Simulation
from models.sim.segment import Segment

US = 1e-6  # seconds per microsecond
#: Costs that make each send() last 10 us (one call, one segment) on a link a few us long, so
#: segments arrive during calls.
HOST = {
    "send_cpu_s": 2 * US,
    "gso_cpu_s": 8 * US,
    "proc_s": 3 * US,
    "tx_latency_s": 1 * US,
    "rx_latency_s": 1 * US,
    "wake_s": 5 * US,
}


def loop(own: bool, qd: int = 8, server_nodelay: bool = True, **run) -> dict:
    host = {**HOST, "own_socket": own}
    return dict(
        workload={"qd": qd, "response_writes": (48, 4096)},
        client={**host, "nodelay": True},
        server={**host, "nodelay": server_nodelay},
        link={"latency_s": 1 * US},
        run={"ops": 3000, **run},
    )


def test_a_segment_waits_for_the_call_then_goes_in_order():
    sim = Simulation(Scenario().replace(**loop(True)))
    ep = sim.server_ep
    first, second = Segment(0, 1, 49, 1, False), Segment(0, 49, 97, 1, True)
    ep.owned = True  # the server's thread is inside a send()
    ep.receive(0, first)
    ep.receive(0, second)
    assert ep.receiver.rcv_nxt == 1 and not sim.server.waking  # nothing processed yet
    ep.release(5)
    assert ep.receiver.rcv_nxt == 97  # both, in the order they came (else out of order)
    assert ep.backlogged == 2 and not ep.owned and not ep.backlog
    assert sim.server.waking  # the data woke the idle thread when it was processed


def test_off_every_segment_goes_at_once():
    sim = Simulation(Scenario().replace(**loop(False)))
    ep = sim.server_ep
    ep.receive(0, Segment(0, 1, 49, 1, True))
    assert ep.receiver.rcv_nxt == 49 and ep.backlogged == 0


@pytest.mark.parametrize("server_nodelay", [True, False])
@pytest.mark.parametrize("qd", [1, 4, 8])
def test_the_fast_forward_stays_exact(qd, server_nodelay):
    on = simulate(**loop(True, qd, server_nodelay))
    off = simulate(**loop(True, qd, server_nodelay, fast_forward=False))
    assert on.skipped_ops > 0  # (it did jump)
    assert on.rtts_s == off.rtts_s and on.iops == off.iops
    assert on.hosts == off.hosts  # the backlog counts too
    simulate(**loop(True, qd, server_nodelay, ops=600, check=True))


def test_segments_wait_only_with_the_flag_and_a_call_that_costs_cpu():
    on = simulate(**loop(True, 8)).hosts
    off = simulate(**loop(False, 8)).hosts
    # at QD 8 the peer's segments keep arriving while each end is inside its send() calls
    assert on["server"].backlogged > on["server"].received / 4
    assert on["client"].backlogged > on["client"].received / 4
    assert off["server"].backlogged == off["client"].backlogged == 0
    # the calls own the socket for their CPU (a CPU each: nothing extends them), a part of the
    # thread's CPU time (its processing is the rest)
    r = simulate(**loop(True, 8))
    for side in ("client", "server"):
        h = r.hosts[side]
        assert 0 < h.owned_s < h.cpu_utilization * r.sim_time_s
    assert off["server"].owned_s == 0.0
    free = {"own_socket": True, "tx_latency_s": 1 * US, "rx_latency_s": 1 * US}
    costless = simulate(workload={"qd": 8}, client=free, server=free, run={"ops": 500})
    assert costless.hosts["server"].backlogged == 0  # no call lasts: nothing waits


#: Both ends one machine, a CPU each, under bbr with a pacing timer whose interrupt costs CPU: the
#: timer fires on the CPU of the thread whose send() armed it, often while that call still runs.
PACED = dict(
    workload={"qd": 8, "response_writes": (48, 16384)},
    link={"latency_s": 1 * US, "mtu": 1500, "softirq_on_sender": True},
    kernel={"congestion_control": "bbr"},
)


def paced(own: bool, **run) -> dict:
    host = {**HOST, "own_socket": own, "timer_fire_cpu_s": 10 * US, "timer_arm_cpu_s": 2 * US}
    return dict(
        PACED,
        client={**host, "nodelay": True},
        server={**host, "nodelay": True},
        run={"ops": 2000, **run},
    )


def test_a_pacing_timer_inside_a_call_leaves_its_write_to_the_release():
    sim = Simulation(Scenario().replace(**paced(True, fast_forward=False)))
    sim.run()
    ep = sim.server_ep
    assert ep.tsq_writes > 0  # the timer fired while the server's call owned the socket
    assert not ep.tsq_deferred or ep.owned  # none left behind by a release
    off = Simulation(Scenario().replace(**paced(False, fast_forward=False)))
    off.run()
    assert off.server_ep.tsq_writes == 0


def test_a_call_lasts_while_its_cpu_runs_an_interrupt():
    sim = Simulation(Scenario().replace(**paced(True)))
    th, ep = sim.server, sim.server_ep
    ep.owned = True
    ep.own_cpu.free_at[0] = 100  # an interrupt landed on the thread's CPU during the call
    th._call_end(50, None)
    assert ep.owned  # the call goes on until the CPU is done with it
    assert any(e[0] == 100 and e[2] == th.call_end for e in sim.loop.heap)
    th._call_end(100, None)
    assert not ep.owned


def test_the_paced_loop_stays_exact_with_the_fast_forward():
    on = simulate(**paced(True))
    off = simulate(**paced(True, fast_forward=False))
    assert on.skipped_ops > 0
    assert on.rtts_s == off.rtts_s and on.hosts == off.hosts
    simulate(**paced(True, ops=500, check=True))

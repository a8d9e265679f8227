"""``Host.softirq_first``: on one machine with a CPU each, a thread's next step waits for the
soft-interrupt work queued on its CPU meanwhile (Linux runs it inside the ``send()`` that raised
it), so a ``MSG_MORE`` header is not pushed out alone by a request that work released."""

from __future__ import annotations

import pytest

from models.sim import Scenario, simulate
from models.sim.engine import Simulation

US = 1e-6  # seconds per microsecond
#: One machine, a CPU each, a frame's receive soft interrupt on its sender's CPU and what it
#: sends leaving from there (veth pinned apart, as the fifth machine's field sweep ran).
LINK = {
    "mtu": 1500,
    "bandwidth_bps": 1e12,
    "softirq_on_sender": True,
    "freed_on_handover": True,
    "replies_on_rx_cpu": True,
}
#: Costs of the fifth machine's order (rounded): a buffer's trip through the stack costs more
#: than the calls, so the peer's released requests keep the server's CPU busy for a while.
HOST = {
    "proc_s": 1.7 * US,
    "wake_s": 20 * US,
    "tx_latency_s": 0.75 * US,
    "rx_latency_s": 0.75 * US,
    "send_cpu_s": 0.5 * US,
    "gso_cpu_s": 2.7 * US,
    "ack_cpu_s": 2.0 * US,
    "send_cpu_first": True,
}


def loop(first: bool, qd: int = 8, server: str = "more_nodelay", **run) -> dict:
    """A MSG_MORE + TCP_NODELAY server (``server``: or a plain NODELAY one) behind a Nagle
    client, 512-byte reads."""
    more = server == "more_nodelay"
    host = {**HOST, "softirq_first": first}
    return dict(
        workload={"qd": qd, "response_writes": (48, 512)},
        client={**host, "nodelay": False},
        server={**host, "nodelay": True, "msg_more": more},
        link=LINK,
        kernel={"congestion_control": "bbr"},
        run={"ops": 3000, **run},
    )


def segments_per_op(r) -> float:
    return r.data_segments["S>C"] / r.completed_total


def test_the_header_stays_with_its_data():
    off, on = simulate(**loop(False)), simulate(**loop(True))
    # off: a request released by the client's ACK arrives while the header waits for the
    # data's call and pushes it out alone (tcp_data_snd_check with TCP_NODELAY)
    assert segments_per_op(off) > 1.2
    # on: the soft interrupt that released it ran first, so header and data leave together
    assert segments_per_op(on) == pytest.approx(1.0, abs=0.02)
    assert on.iops > off.iops * 1.05  # and the server's CPU sends fewer buffers


def test_the_thread_waits_for_the_work_queued_on_its_cpu():
    sim = Simulation(Scenario().replace(**loop(True)))
    app, cpu = sim.server, sim.server_ep.own_cpu
    assert app.done == app._done_s and app.next_call == app._next_call_s
    cpu.free_at[0] = 50  # soft-interrupt work runs until 50 fs
    calls = []
    app._done = lambda now, item: calls.append((now, item))  # type: ignore[method-assign]
    app._done_s(10, ("item",))
    assert not calls  # behind the work: scheduled for its end
    event = max(sim.loop.heap, key=lambda e: e[0] == 50)
    assert event[0] == 50 and event[2] == app.done and event[3] == ("item",)
    app._done_s(50, ("item",))
    assert calls == [(50, ("item",))]  # the CPU is free: at once


def test_off_or_without_a_cpu_each_it_changes_nothing():
    sim = Simulation(Scenario().replace(**loop(False)))
    assert sim.server.done == sim.server._done
    shared = {**loop(True), "link": {**LINK, "shared_cpus": 2}}
    unflagged = {**loop(False), "link": {**LINK, "shared_cpus": 2}}
    a, b = simulate(**shared), simulate(**unflagged)
    assert a.rtts_s == b.rtts_s and a.hosts == b.hosts
    # a server without MSG_MORE has no header to keep: the same segments either way
    assert segments_per_op(simulate(**loop(True, server="nodelay"))) == pytest.approx(
        segments_per_op(simulate(**loop(False, server="nodelay"))), abs=0.05
    )


@pytest.mark.parametrize("cc", ["reno", "bbr"])
@pytest.mark.parametrize("qd", [2, 8])
def test_the_fast_forward_stays_exact(qd, cc):
    def run(**kw):
        return simulate(**{**loop(True, qd, **kw), "kernel": {"congestion_control": cc}})

    on, off = run(ops=6000), run(ops=6000, fast_forward=False)
    if cc == "reno":  # (under bbr these runs do not repeat within their length)
        assert on.skipped_ops > 0
    assert on.rtts_s == off.rtts_s and on.iops == off.iops and on.hosts == off.hosts
    run(ops=600, check=True)

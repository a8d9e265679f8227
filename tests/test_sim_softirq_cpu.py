"""Where a soft interrupt's sends run when both ends share one machine with a CPU each
(``Link.softirq_on_sender`` with ``Link.replies_on_rx_cpu``): a segment's receive soft
interrupt runs on the CPU that sent it, and what that soft interrupt sends in turn (an ACK, data
an ACK lets go) leaves from the same CPU, so its own receipt runs there too (``Segment.cpu``,
``Endpoint.ctx_cpu``).  On a veth pair the server's
response is received by the client's stack on the server's CPU, and the ACK that stack sends at once
is received and processed there as well; only what the client's thread sends is received on the
client's CPU."""

from __future__ import annotations

import pytest

from models.sim import Scenario
from models.sim.engine import Simulation
from models.sim.link import Channel
from models.sim.segment import Segment

FS_PER_US = 10**9  # femtoseconds per microsecond
MSS = 1448  # bytes, MTU 1500


#: Each host's receive soft interrupt: 2 us per data segment and per pure ACK.
HOST = {"softirq_s": 2e-6, "ack_cpu_s": 2e-6}


@pytest.fixture
def handed(monkeypatch):
    """``handed(channel)``: the segments handed to ``channel`` so far, the objects themselves
    (``Channel.send`` recorded; the trace keeps copies, without ``Segment.cpu``)."""
    seen: dict[int, list] = {}
    send = Channel.send

    def recording(self, now, seg):
        seen.setdefault(id(self), []).append(seg)
        return send(self, now, seg)

    monkeypatch.setattr(Channel, "send", recording)
    return lambda ch: seen.get(id(ch), [])


def _sim(apart: bool, replies: bool = True):
    link = {"mtu": 1500, "softirq_on_sender": apart, "replies_on_rx_cpu": replies}
    return Simulation(Scenario(link=link, client=HOST, server=HOST))


def test_an_ack_sent_from_the_receive_soft_interrupt_leaves_from_its_cpu(handed):
    sim = _sim(True)
    c = sim.client_ep
    assert c.own_cpu is sim.client.cpu and c.inbound is sim.s2c
    now = 1000 * FS_PER_US
    before = list(sim.server.cpu.free_at), list(sim.client.cpu.free_at)
    # two full segments from the server: "more than one full segment" is ACKed at once
    c.receive(now, Segment(1, 1, 1 + 2 * MSS, 1, True))
    acks = [g for g in handed(c.channel) if g.src == 0 and g.end == g.seq]
    assert len(acks) == 1
    ack = acks[0]
    assert ack.cpu is sim.server.cpu  # the CPU that ran the client's receive
    assert c.ctx_cpu is None  # only while the soft interrupt runs
    # its receipt is charged to the server's CPU, not the client's
    assert sim.server.cpu.free_at != before[0] and sim.client.cpu.free_at == before[1]


def test_what_the_thread_sends_is_received_on_its_own_cpu(handed):
    sim = _sim(True)
    c = sim.client_ep
    c.send_ack(1000 * FS_PER_US)  # outside a soft interrupt: the thread's (a read's ACK)
    (ack,) = handed(c.channel)
    assert ack.cpu is None  # the channel's: the client's CPU


@pytest.mark.parametrize("apart, replies", [(False, True), (True, False)])
def test_on_two_machines_or_without_the_rule_nothing_moves(apart, replies, handed):
    sim = _sim(apart, replies)
    c = sim.client_ep
    c.receive(1000 * FS_PER_US, Segment(1, 1, 1 + 2 * MSS, 1, True))
    sent = handed(c.channel)
    assert not c.rx_ctx and sent and all(g.cpu is None for g in sent)


@pytest.mark.parametrize("fast_forward", [True, False])
def test_a_whole_run_keeps_its_acks_on_the_data_senders_cpu(fast_forward, handed):
    # a veth-like run, QD 8, 16 KiB responses, a NODELAY client (its requests leave from its
    # thread's send()): the client's immediate ACKs of responses leave from the server's CPU,
    # the requests from the client's
    sc = Scenario(
        link={"mtu": 1500, "softirq_on_sender": True, "replies_on_rx_cpu": True},
        client={**HOST, "nodelay": True},
        server=HOST,
        workload={"qd": 8, "response_writes": (48, 16384)},
        run={"ops": 400, "fast_forward": fast_forward},
    )
    sim = Simulation(sc)
    sim.run()
    sent = handed(sim.c2s)
    assert any(g.cpu is sim.server.cpu for g in sent if g.end == g.seq)
    assert all(g.cpu is None for g in sent if g.end != g.seq)


def test_the_fast_forward_stays_exact_with_the_rule():
    # the segments in flight say whether they are received on the other CPU (the cycle's
    # state): a run that repeats is skipped and gives what running it gives
    sc = Scenario(
        link={"mtu": 1500, "softirq_on_sender": True, "replies_on_rx_cpu": True},
        client={**HOST, "nodelay": True},
        server=HOST,
        workload={"qd": 8, "response_writes": (48, 16384)},
        run={"ops": 3000},
    )
    fast = Simulation(sc).run()
    slow = Simulation(sc.replace(run={"ops": 3000, "fast_forward": False})).run()
    assert fast.skipped_ops > 1000
    assert fast.rtts_s == slow.rtts_s and fast.directions == slow.directions

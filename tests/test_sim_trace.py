"""The packet trace (``run.trace``) shows every byte each end sends exactly once, as the capture
point saw it: a GSO super-packet as its MSS-sized segments even when the receiver's GRO merges
them afterwards, and what a socket's release sends while it works through the backlog."""

from __future__ import annotations

import pytest

from models.sim import simulate

US = 1e-6  # seconds per microsecond


@pytest.mark.parametrize("at", ["server", "client"])
def test_every_byte_sent_is_traced_once(at):
    host = {"send_cpu_s": 2 * US, "gso_cpu_s": 4 * US, "proc_s": 3 * US, "wake_s": 5 * US,
            "send_cpu_first": True, "own_socket": True, "gro": True}  # fmt: skip
    r = simulate(
        workload={"qd": 8, "response_writes": (48, 16384)},
        link={"latency_s": 1 * US, "mtu": 1500},
        kernel={"congestion_control": "bbr"},
        client={**host, "nodelay": True},
        server=host,
        run={"ops": 300, "trace": True, "trace_at": at},
    )
    mine = "S > C" if at == "server" else "C > S"
    sent = sorted((g.seq, g.end) for g in r.trace if g.direction == mine and g.length)
    # contiguous, no byte twice, none missing, none longer than an MSS
    assert all(a[1] == b[0] for a, b in zip(sent, sent[1:]))
    assert all(end - seq <= 1448 for seq, end in sent)
    side = r.directions["S>C" if at == "server" else "C>S"]
    assert sent[0][0] == 1 and sent[-1][1] - 1 == side.bytes_sent

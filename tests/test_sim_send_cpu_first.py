"""``Host.send_cpu_first``: a segment a thread's own ``send()`` sends leaves after the CPU the call
has spent up to it (on loopback and veth the device transmit and the receiving stack run inside
the call), not at the call's start with the call's CPU after it."""

from __future__ import annotations

import pytest

from models.sim import simulate

US = 1e-6  # seconds per microsecond
SEND, GSO = 0.5 * US, 3.0 * US  # per call and per segment, seconds
COSTS = {"send_cpu_s": SEND, "gso_cpu_s": GSO}


def qd1(first: bool, **run) -> object:
    """A QD-1 loop, NODELAY on both ends, both paying COSTS, traced at the server."""
    host = {"nodelay": True, **COSTS, "send_cpu_first": first}
    return simulate(
        workload={"qd": 1},
        client=host,
        server=host,
        run={"ops": 50, "trace": True, "trace_at": "server", **run},
    )


def data_after_request(r) -> list[float]:
    """Seconds from each request's arrival at the server to the server's first data segment
    after it (its header)."""
    out, arrived = [], None
    for t in r.trace:
        if t.direction == "C > S" and t.length:
            arrived = t.time
        elif t.direction == "S > C" and t.length and arrived is not None:
            out.append(t.time - arrived)
            arrived = None
    return out


def test_the_header_leaves_after_its_call_s_cpu():
    off, on = data_after_request(qd1(False)), data_after_request(qd1(True))
    assert len(off) == len(on) >= 40
    # the header's send(): one call and one segment before it leaves, and nothing else moves
    for a, b in zip(off[5:], on[5:]):
        assert b - a == pytest.approx(SEND + GSO, abs=1e-9)


def test_the_client_s_request_leaves_after_its_call_s_cpu():
    gaps = []
    for first in (False, True):
        r = qd1(first, trace_at="client")
        out, got = [], None
        for t in r.trace:  # from each response's data to the client's next request
            if t.direction == "S > C" and t.length > 48:
                got = t.time
            elif t.direction == "C > S" and t.length and got is not None:
                out.append(t.time - got)
                got = None
        gaps.append(out)
    off, on = gaps
    assert len(off) == len(on) >= 40
    for a, b in zip(off[5:], on[5:]):
        assert b - a == pytest.approx(SEND + GSO, abs=1e-9)


def test_without_costs_the_flag_changes_nothing():
    plain = {"nodelay": True}
    a = simulate(workload={"qd": 4}, client=plain, server=plain, run={"ops": 500})
    first = {"nodelay": True, "send_cpu_first": True}
    b = simulate(workload={"qd": 4}, client=first, server=first, run={"ops": 500})
    assert a.rtts_s == b.rtts_s


@pytest.mark.parametrize("qd", [1, 4])
def test_the_fast_forward_stays_exact(qd):
    host = {**COSTS, "send_cpu_first": True}
    loop = dict(workload={"qd": qd}, client=host, server=host)
    on = simulate(**loop, run={"ops": 3000})
    off = simulate(**loop, run={"ops": 3000, "fast_forward": False})
    assert on.rtts_s == off.rtts_s and on.iops == off.iops
    checked = simulate(**loop, run={"ops": 800, "check": True})
    assert checked.iops > 0


def test_on_a_cpu_of_its_own_the_receiving_stack_runs_inside_the_call_once():
    """Both ends one machine, a CPU each (Link.softirq_on_sender): the receiving stack of the
    segment a call sends runs on the caller's CPU inside the call, after the CPU spent up to the
    segment. The call lasts its own CPU plus that soft interrupt's, whichever comes first (it
    once queued the call's whole CPU after the soft interrupt, which began after the CPU so far:
    counted twice)."""
    call_us, softirq_us = 10.0, 1.0
    for first in (False, True):
        host = {
            "nodelay": True,
            "send_cpu_s": 2 * US,
            "gso_cpu_s": 8 * US,
            "softirq_s": softirq_us * US,
            "own_socket": True,  # (to time the calls: HostStats.owned_s)
            "send_cpu_first": first,
        }
        r = simulate(
            workload={"qd": 1, "response_writes": (560,)},
            client=host,
            server=host,
            link={"softirq_on_sender": True},
            run={"ops": 200},
        )
        per_call_us = 1e6 * r.hosts["server"].owned_s / r.completed_total  # s -> us
        assert per_call_us == pytest.approx(call_us + softirq_us, abs=1e-6)

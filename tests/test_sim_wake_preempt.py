"""Wake-up preemption on one shared CPU (``Link.wake_preempt``, models.sim.eevdf): a woken thread
the run queue lets preempt runs at the holder's next event and the holder goes on where it
stopped; runs are exact with the fast-forward on and off; a machine of two CPUs is refused."""

from __future__ import annotations

import itertools

import pytest

from models.sim import Scenario, simulate
from models.sim.cpu import CpuPool


class _Thread:
    """Just what the pool touches of a thread."""

    def __init__(self, side: int, heap: list, ticket) -> None:
        self.side, self.heap, self.ticket = side, heap, ticket
        self.wake_up = object()
        self.parked = None
        self._step = object()


def test_a_woken_thread_owed_the_cpu_runs_at_the_holders_next_event():
    heap: list = []
    ticket = itertools.count()
    pool = CpuPool(1, preempt=True)
    a, b = _Thread(0, heap, ticket), _Thread(1, heap, ticket)
    assert pool.acquire(a) and pool.acquire(b) is False  # b waits, placed at a's runtime
    assert pool.resched is None  # a is eligible and in its slice
    pool.run(0, 10)  # a runs
    pool.release(a, 10)  # and blocks having had more: it stays queued, delayed
    assert heap.pop() == [10, 0, b.wake_up, None] and pool.holders == [b]
    pool.run(10, 30)  # b runs until it is ahead of the average
    assert pool.acquire(a) is False and pool.resched is b  # a preempts at b's next event
    pool.yield_cpu(b, 40, "_step", None)
    assert heap.pop() == [40, 1, a.wake_up, None] and pool.holders == [a]
    assert b.parked == ("_step", None) and list(pool.waiting) == [b]
    pool.release(a, 45)  # b goes on where it stopped
    assert heap.pop() == [45, 2, b._step, None] and b.parked is None


def test_one_cpu_is_required():
    with pytest.raises(ValueError, match="link.wake_preempt .*shared_cpus 1, got 2"):
        Scenario(link={"shared_cpus": 2, "wake_preempt": True})
    with pytest.raises(ValueError, match="n must be 1, got 2"):
        CpuPool(2, preempt=True)


#: Host costs like the shipped profile's (seconds), on a loopback: with them the woken end
#: preempts at some queue depths (``test_the_fast_forward_jumps_over_cycles_that_preempt``).
_HOST = {
    "proc_s": 1.4e-6,
    "send_cpu_s": 0.5e-6,
    "gso_cpu_s": 2.9e-6,
    "ack_cpu_s": 1.5e-6,
    "wake_s": 43e-6,
    "wake_fast_s": 5e-6,
    "wake_fast_idle_s": 226e-6,
    "tx_latency_s": 2.1e-6,
    "rx_latency_s": 2.1e-6,
}


def _one_cpu(qd: int, nodelay: bool, **run) -> Scenario:
    return Scenario(
        workload={"qd": qd},
        link={"mtu": 65536, "bandwidth_bps": 1e12, "shared_cpus": 1, "wake_preempt": True},
        client={**_HOST, "nodelay": nodelay},
        server={**_HOST, "nodelay": False},
        run={"ops": 3000, **run},
    )


@pytest.mark.parametrize(("qd", "nodelay"), [(2, True), (4, False), (8, True), (16, True)])
def test_exact_with_the_fast_forward_and_checked(qd, nodelay):
    on = simulate(_one_cpu(qd, nodelay))
    off = simulate(_one_cpu(qd, nodelay, fast_forward=False, check=True))
    assert on.fast_forward_off_reason is None
    a, b = on.to_dict(), off.to_dict()
    for k in ("skipped_ops", "events", "wall_time_s", "cycle_ops", "fast_forward_off_reason"):
        a.pop(k), b.pop(k)
    assert a == b


def test_the_fast_forward_jumps_over_cycles_that_preempt(monkeypatch):
    yields = []
    yield_cpu = CpuPool.yield_cpu
    monkeypatch.setattr(
        CpuPool, "yield_cpu", lambda pool, *a: (yields.append(a[1]), yield_cpu(pool, *a))
    )
    r = simulate(_one_cpu(8, True, fast_forward=False))
    assert len(yields) > 1000  # it preempts, again and again
    assert sum(h.preempted for h in r.hosts.values()) == len(yields)
    assert (
        simulate(_one_cpu(8, True).replace(link={"wake_preempt": False})).hosts["client"].preempted
        is None
    )
    del yields[:]
    r = simulate(_one_cpu(8, True))
    assert r.skipped_ops > 1000 and 0 < len(yields) < 200  # and the fast-forward jumps

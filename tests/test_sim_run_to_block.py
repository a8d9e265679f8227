"""Two threads on one CPU that each keep it until they block (``Link.run_to_block``): the server
woken by the client's first request runs only when the client has written the rest, the runs are
exact with the fast-forward on and off, and the invariants hold throughout."""

from __future__ import annotations

import pytest

from models.sim import Scenario, simulate
from models.sim.cpu import CpuPool


class _Thread:
    """Just what the pool touches of a thread."""

    def __init__(self, side: str, heap: list, ticket) -> None:
        self.side, self.heap, self.ticket = side, heap, ticket
        self.wake_up = object()


def test_a_thread_woken_while_the_cpu_is_held_waits_for_its_holder_to_block():
    import itertools

    heap: list = []
    ticket = itertools.count()
    pool = CpuPool(1, hold=True)
    a, b = _Thread("client", heap, ticket), _Thread("server", heap, ticket)
    assert pool.acquire(a) and pool.acquire(a)  # held, and held again by its holder
    assert not pool.acquire(b) and not heap  # b waits; nothing runs for it yet
    pool.release(a, 70)
    assert heap == [[70, 0, b.wake_up, None]]  # b's wake-up, at the moment a blocked
    assert pool.holders == [b] and not pool.waiting


def _one_cpu(qd: int, hold: bool, **run) -> Scenario:
    return Scenario(
        workload={"qd": qd},
        link={"shared_cpus": 1, "run_to_block": hold},
        client={"nodelay": True, "tx_cpu_s": 2e-6},
        server={"tx_cpu_s": 3e-6},
        run={"ops": 400, **run},
    )


def _first_answer_after_requests(r, qd: int) -> bool:
    """Whether every request byte (``qd`` requests of 48 bytes) left before the server's first
    data segment."""
    last_request_end = f":{1 + 48 * qd},"
    for line in r.format_trace().splitlines():
        if "S > C" in line and "length 0" not in line:
            return False  # an answer first
        if "C > S" in line and last_request_end in line:
            return True
    raise AssertionError("the trace ended before the queue was written")


def test_the_server_answers_only_after_the_client_has_written_its_queue():
    for qd in (2, 6, 12):
        held = simulate(_one_cpu(qd, True, trace=True, fast_forward=False))
        assert _first_answer_after_requests(held, qd), qd


@pytest.mark.parametrize("qd", [1, 4, 16])
@pytest.mark.parametrize("nodelay", [False, True])
def test_exact_with_the_fast_forward_and_checked(qd, nodelay):
    sc = _one_cpu(qd, True).replace(client={"nodelay": nodelay}, run={"ops": 3000})
    on = simulate(sc)
    off = simulate(sc.replace(run={"fast_forward": False, "check": True}))
    assert on.skipped_ops > 0  # (the fast-forward did skip)
    a, b = on.to_dict(), off.to_dict()
    for k in _RUN_KEYS:  # how each run was made, not what it found
        a.pop(k), b.pop(k)
    assert a == b


#: ``Result.to_dict`` keys that say how a run was made, not what it found.
_RUN_KEYS = ("skipped_ops", "events", "wall_time_s", "cycle_ops", "fast_forward_off_reason")


def _field_one_cpu(qd: int, hold: bool) -> Scenario:
    """A field-sweep configuration on the simulator's one CPU: the shipped profile, a Nagle
    server, a NODELAY client, 512-byte responses on the loopback."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import fidelity
    from models.validation import stall_placement as SP

    hz = load_kernel_run(prefix=fidelity.FIELD_PREFIX).hz
    host = fidelity.ProfileHost(hostprofile.shipped())
    row = SP.field_row("loopback", "nodelay", 512, qd)
    sc = fidelity.field_scenario("iscsi_loop", row, host, hz, cpus=1)
    return sc.replace(link={**SP.ONE_CPU_LINK, "run_to_block": hold})


def test_in_turns_the_server_answers_between_the_client_writes_and_the_stall_ends():
    """The wrong model fails the order above: where the threads' stretches of work take turns,
    the woken server's header goes out while the client still writes, and its next requests
    carry the ACK that lets the held data go."""
    held = simulate(_field_one_cpu(16, True).replace(run={"trace": True}))
    turns = simulate(_field_one_cpu(16, False).replace(run={"trace": True}))
    assert _first_answer_after_requests(held, 16)
    assert not _first_answer_after_requests(turns, 16)
    assert held.iops < 1000 < 50_000 < turns.iops


def test_the_cpu_each_end_held_covers_its_own_work_and_no_more_than_the_run():
    """``HostStats.held_cpu_s``: the work run while each end held the one CPU includes that end's
    own work, together it is no more than the run's time, and it is None where no CPU is held."""
    r = simulate(_one_cpu(4, True))
    span = r.sim_time_s
    held = {side: h.held_cpu_s for side, h in r.hosts.items()}
    for side, h in r.hosts.items():
        own = h.cpu_utilization * span  # share of the run -> s
        assert own * (1 - 1e-9) <= held[side], side
    assert sum(held.values()) <= span
    for sc in (_one_cpu(4, False), _one_cpu(4, True).replace(link={"shared_cpus": None})):
        assert all(h.held_cpu_s is None for h in simulate(sc).hosts.values())

"""The simulator's exchange of messages (models.sim.exchange): an operation whose messages release
one another, such as an iSCSI write whose window of MaxOutstandingR2T R2Ts slides.

Checked here: the rules a message graph must follow (each broken one a ValueError naming it); a
chain written as messages runs exactly as the same chain written as legs; every message of every
operation is written once and read once, each after the message that releases it, the messages one
read releases in one go, with exactly QD operations in flight; and the fast-forward gives the numbers
of running every event.
"""

from __future__ import annotations

import pytest
from sim_strategies import assert_same_numbers

from models import iscsi, presets
from models.sim import Scenario, Workload, simulate
from models.sim.app import AppThread
from models.sim.exchange import Exchange, parse_messages

KiB = 1024

#: A write of 100 KiB with 16 KiB bursts, two R2Ts outstanding, immediate and unsolicited data
#: (8 KiB in the command, 8 KiB more unsolicited) and a last burst shorter than the others.
WINDOW = iscsi.Session(
    initial_r2t=False,
    immediate_data=True,
    first_burst_length=16 * KiB,
    max_burst_length=16 * KiB,
    max_outstanding_r2t=2,
)
WRITE = presets.iscsi_messages("write", 100 * KiB, WINDOW)


def window_scenario(**parts) -> Scenario:
    """The write above at QD 3 on Butterfield's hosts, Nagle off on both sockets."""
    return Scenario(
        workload={"messages": WRITE, "qd": 3},
        client={"nodelay": True},
        server={"nodelay": True},
        run={"ops": 40},
    ).replace(**parts)


def test_the_write_slides_and_has_every_kind_of_message():
    ex = Exchange(WRITE)
    kinds = [m.kind for m in iscsi.messages("write", 100 * KiB, WINDOW)]
    assert ex.roots == (0, 1) and "unsolicited" in kinds[1]  # command and unsolicited data
    assert len(ex.releases[2]) == 2  # the first two R2Ts release two bursts at once
    assert not iscsi.is_chain("write", 100 * KiB, WINDOW)
    sizes = [n for _, n in iscsi.bursts(100 * KiB, WINDOW)]
    assert len(sizes) > WINDOW.max_outstanding_r2t and sizes[-1] < sizes[0]


# -- the rules of a message graph ---------------------------------------------------------------


@pytest.mark.parametrize(
    "messages,words",
    [
        ((("S>C", (48,), None),), "only the client's messages may wait for nothing"),
        ((("C>S", (48,), None), ("S>C", (48,), 1)), "earlier message (0 to 0), got 1"),
        ((("C>S", (48,), None), ("C>S", (48,), 0)), "message of the other side"),
        ((("C>S", (48,), None),), "at least one S>C message"),
        ((("C<S", (48,), None),), "direction must be 'C>S' or 'S>C'"),
        ((("C>S", (0,), None), ("S>C", (48,), 0)), "send() sizes from 1"),
        ((("C>S", (48,)),), "must be (direction, writes, after)"),
        ((("C>S", (48,), None), ("S>C", (48,), True)), "got True"),
    ],
)
def test_a_broken_rule_is_refused_naming_it(messages, words):
    with pytest.raises(ValueError, match="workload.messages") as err:
        Workload(messages=messages)
    assert words in str(err.value)


def test_messages_replace_legs_and_the_request_and_response():
    with pytest.raises(ValueError, match="messages replaces legs"):
        Workload(messages=WRITE, legs=((48,), (48,)))
    with pytest.raises(ValueError, match="messages replaces request_writes"):
        Workload(messages=WRITE, response_writes=(48,))


def test_the_text_form_reads_back():
    text = "c:48/c:100/s:48@0/c:4096,4096@2/s:48@3"
    assert Workload(messages=text).messages == parse_messages(text)
    assert parse_messages(text)[3] == ("C>S", (4096, 4096), 2)
    with pytest.raises(ValueError, match="such as c:48"):
        parse_messages("c:48/x:1@0")


# -- a chain is the special case -----------------------------------------------------------------


@pytest.mark.parametrize(
    "sc",
    [
        presets.butterfield(run={"ops": 60}),  # Nagle on: the 40 ms stall
        presets.one_segment(workload={"qd": 8}, run={"ops": 400}),
        presets.busy_count("nagle", 6, ops=400, flush_on_idle=True),
        presets.iscsi_command("write", 300 * KiB, iscsi.negotiate(), run={"ops": 40}),
        presets.iscsi_command(
            "write", 64 * KiB, iscsi.negotiate(), server={"tx_cpu_s": 2e-6, "cork": True}
        ).replace(workload={"qd": 3}, run={"ops": 60}),
        presets.flory(1447),  # a setup exchange first
    ],
    ids=["nagle", "one-segment", "busy-flush", "iscsi-chain", "tx-cpu-cork", "setup"],
)
def test_a_chain_as_messages_runs_exactly_as_legs(sc):
    wl = sc.workload
    legs = wl.exchange
    as_messages = tuple(
        (("C>S", "S>C")[k % 2], leg, None if k == 0 else k - 1) for k, leg in enumerate(legs)
    )
    other = sc.replace(
        workload={
            "legs": (),
            "request_writes": (48,),
            "response_writes": (48, 512),
            "messages": as_messages,
        }
    )
    a, b = simulate(sc), simulate(other)
    assert_same_numbers(a, b)
    assert a.ops > 0


# -- every message written once, read once, in dependency order ---------------------------------


@pytest.fixture
def record(monkeypatch):
    """Log every message a thread reads (``finish``) and writes (``send_messages``) as
    ``(kind, side, op, message, call)``: ``call`` numbers the write calls, so the messages one
    read releases can be seen going out in one call."""
    log: list = []
    calls = [0]
    send, finish = AppThread.send_messages, AppThread.finish

    def send_messages(self, now, items, at_once=False):
        calls[0] += 1
        for op, msg, _proc in items:
            log.append(("write", self.ep.side, op, msg, calls[0]))
        return send(self, now, items, at_once)

    def finish_logged(self, now, op, msg):
        log.append(("read", self.ep.side, op, msg, None))
        return finish(self, now, op, msg)

    monkeypatch.setattr(AppThread, "send_messages", send_messages)
    monkeypatch.setattr(AppThread, "finish", finish_logged)
    return log


@pytest.mark.parametrize(
    "host",
    [
        {},
        {"tx_cpu_s": 3e-6},  # send() calls one after another, each waiting for its CPU
        {"cork": True, "tx_cpu_s": 1e-6},
        {"wake_s": 0.0, "proc_s": 0.0},  # everything at once
    ],
    ids=["butterfield", "tx-cpu", "cork", "free"],
)
def test_every_message_once_in_dependency_order(record, host):
    qd = 3
    sc = window_scenario(client=host, server=host, run={"check": True, "fast_forward": False})
    r = simulate(sc)  # run.check: exactly qd in flight after every event
    assert r.in_flight == qd and r.completed_total == sc.warmup + sc.run.ops
    ex = Exchange(WRITE)
    writes: dict = {}
    reads: dict = {}
    for i, (kind, side, op, msg, call) in enumerate(record):
        if op < 0:
            continue
        key = (op, msg)
        book = writes if kind == "write" else reads
        assert key not in book, f"message {msg} of op {op}: {kind} twice"
        book[key] = (i, side, call)
        if kind == "write":
            assert side == ex.sides[msg], "written by the wrong side"
            a = ex.after[msg]
            if a is not None:  # released by the other side's reading of message a
                assert (op, a) in reads and reads[op, a][1] == side, (op, msg, a)
        else:
            assert side != ex.sides[msg] and key in writes, "read before it was written"
    issued = 1 + max(op for op, _ in writes)
    assert issued == r.completed_total + qd
    # Every message of every completed operation went out and came in once; the client
    # completed each only after reading all the server's messages.
    done = {op for op in range(issued) if all((op, m) in reads for m in range(len(ex)))}
    assert done == set(range(r.completed_total))
    for op in range(r.completed_total):
        assert all((op, m) in writes for m in range(len(ex)))
    assert {m for op, m in writes if op >= r.completed_total} >= set(ex.roots)
    # The messages one read releases leave in one call, the R2Ts' bursts among them.
    for op in done:
        for released in ex.releases:
            if len(released) > 1:
                assert len({writes[op, j][2] for j in released}) == 1
    # Exactly qd operations were issued before the first completion.
    first_done = min(reads[op, len(ex) - 1][0] for op in done)
    assert len({op for op, m in writes if writes[op, m][0] < first_done}) == qd


def test_the_messages_a_completion_waits_for():
    # Six bursts, two R2Ts outstanding: the client reads six messages (the first two R2Ts in
    # one, four more R2Ts, the response) and the server eight.  A completion needs the command and
    # the bursts whose Data-Out releases an R2T or the response: not the unsolicited Data-Out, nor
    # the last burst but one (no R2T is left for it to release).
    ex = Exchange(WRITE)
    assert ex.reads == (6, 8)
    assert ex.awaited() == 6
    r = simulate(window_scenario(run={"ops": 10, "check": True}))  # check_totals counts them
    assert r.completed_total == 13


# -- the fast-forward ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "parts",
    [
        {},
        {"run": {"check": True}},  # the jump itself checked against the state
        {"workload": {"qd": 5}, "server": {"tx_cpu_s": 2e-6}},
        {"link": {"shared_cpus": 1}},
    ],
    ids=["plain", "checked", "qd5-tx-cpu", "shared-cpu"],
)
def test_fast_forward_gives_the_numbers_of_every_event(parts):
    sc = window_scenario(run={"ops": 400}).replace(**parts)
    fast = simulate(sc.replace(run={"fast_forward": True}))
    slow = simulate(sc.replace(run={"fast_forward": False}))
    assert_same_numbers(fast, slow)
    assert fast.fast_forward_off_reason is None
    assert fast.skipped_ops > 0 and fast.events < slow.events  # it did jump


def test_fast_forward_turns_itself_off_for_a_random_run_and_says_why():
    sc = window_scenario(run={"ops": 200, "jitter": 0.2})
    fast = simulate(sc)
    slow = simulate(sc.replace(run={"fast_forward": False}))
    assert_same_numbers(fast, slow)
    assert fast.skipped_ops == 0 and "jitter" in fast.fast_forward_off_reason

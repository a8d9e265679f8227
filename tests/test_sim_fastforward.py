"""The fast-forward over exact repeats (models.sim.fastforward) with rules
of the reader's own: a rule that keeps state of its own, a rule that
schedules events of its own, and the invariant checker across a jump.

In each case the fast-forward gives the numbers of running every event,
field by field, either because the rule offers its state or because the
fast-forward turns itself off and says why.
"""

from __future__ import annotations

import json

import pytest
from sim_strategies import assert_same_numbers

from models import presets
from models.sim import PROFILES, Scenario, get_profile, simulate
from models.sim.cli import main
from models.sim.endpoint import Endpoint
from models.sim.receiver import Receiver
from models.sim.rules import AckPolicy

US = 10**9  # femtoseconds per microsecond


def both(sc: Scenario):
    """(fast-forward on, off), checked to agree on every field."""
    fast = simulate(sc.replace(run={"fast_forward": True}))
    slow = simulate(sc.replace(run={"fast_forward": False}))
    assert_same_numbers(fast, slow)
    return fast, slow


@pytest.fixture
def profile_with(monkeypatch):
    """``profile_with(AckRule)``: the name of a profile, registered for
    the test only, that is linux-6 with that ACK rule."""

    def register(ack: type) -> str:
        p = get_profile("linux-6").variant(f"linux-6-{ack.__name__}", ack=ack)
        monkeypatch.setitem(PROFILES, p.name, p)
        return p.name

    return register


# -- a rule with state of its own ------------------------------------------------------


class AckFirstThenOnRead(AckPolicy):
    """Acknowledge every data segment at once for the first ``LIMIT``
    segments, then only when the application reads."""

    LIMIT = 600

    def __init__(self, receiver, profile) -> None:
        super().__init__(receiver, profile)
        self.segments = 0

    def data_received(self, now: int, length: int, psh: bool) -> None:
        self.owed = True
        self.segments += 1

    def check(self, now: int) -> None:
        if self.owed and self.segments <= self.LIMIT:
            self.rcv.send_ack(now)

    def on_read(self, now: int) -> None:
        if self.owed:
            self.rcv.send_ack(now)

    def ack_sent(self, now: int) -> None:
        self.owed = False


class AckFirstThenOnReadStated(AckFirstThenOnRead):
    """The same rule, offering its state: the count matters only until
    it passes the limit, and it grows every cycle."""

    def cycle_state(self, view):
        return self.owed, min(self.segments, self.LIMIT + 1)

    def cycle_counters(self) -> dict:
        return {**super().cycle_counters(), "segments": self.segments}


def test_a_stateful_rule_without_its_state_turns_the_fast_forward_off(profile_with):
    # Before the state protocol the fast-forward jumped over the change
    # at segment 600: 4,752 IOPS instead of 4,359.
    sc = Scenario(
        kernel={"profile": profile_with(AckFirstThenOnRead)},
        workload={"qd": 2},
        run={"ops": 3000},
    )
    fast, slow = both(sc)
    assert fast.skipped_ops == 0
    assert fast.fast_forward_off_reason.startswith(
        "AckFirstThenOnRead (client_ep.rx.ack) does not offer its own cycle state"
    )
    assert 4300 < slow.iops < 4400  # acknowledged on read: slower


def test_a_stateful_rule_that_offers_its_state_is_fast_forwarded(profile_with):
    sc = Scenario(
        kernel={"profile": profile_with(AckFirstThenOnReadStated)},
        workload={"qd": 2},
        run={"ops": 3000},
    )
    fast, slow = both(sc)
    assert fast.fast_forward_off_reason is None
    assert fast.skipped_ops > 1000  # it jumped, after segment 600
    assert fast.iops == slow.iops and 4300 < fast.iops < 4400


# -- a rule that schedules events of its own -------------------------------------------


class AckAfterPause(AckPolicy):
    """Acknowledge ``DELAY`` after the first unacknowledged data, by an
    event of the rule's own (``loop.schedule``, no Timer)."""

    DELAY = 100 * US

    def __init__(self, receiver, profile) -> None:
        super().__init__(receiver, profile)
        self.pending = None

    def data_received(self, now: int, length: int, psh: bool) -> None:
        self.owed = True

    def check(self, now: int) -> None:
        if self.owed and self.pending is None:
            self.pending = self.rcv.loop.schedule(now + self.DELAY, self._fire)

    def _fire(self, now: int, _arg) -> None:
        self.pending = None
        if self.owed:
            self.delayed_acks += 1
            self.rcv.send_ack(now)

    def ack_sent(self, now: int) -> None:
        self.owed = False


class AckAfterPauseStated(AckAfterPause):
    """Its state: whether an ACK is owed and whether its event is
    pending (the event's time is stated with the pending events)."""

    cycle_transient = ("pending",)

    def cycle_state(self, view):
        return self.owed, self.pending is not None


class AckAfterPauseByLambda(AckAfterPauseStated):
    """The same, but its event's handler is a function of no part."""

    cycle_state = AckAfterPauseStated.cycle_state  # the same state

    def check(self, now: int) -> None:
        if self.owed and self.pending is None:
            self.pending = self.rcv.loop.schedule(
                now + self.DELAY, lambda t, arg: self._fire(t, arg)
            )


@pytest.mark.parametrize("nodelay", [False, True])
def test_a_rule_with_its_own_events_is_fast_forwarded(nodelay, profile_with):
    sc = presets.one_segment(
        kernel={"profile": profile_with(AckAfterPauseStated)},
        workload={"qd": 3},
        server={"nodelay": nodelay},
        run={"ops": 2000},
    )
    fast, _ = both(sc)
    assert fast.fast_forward_off_reason is None and fast.skipped_ops > 1000
    # its events are pending at the looks: a handler of no part stops it
    lam = simulate(sc.replace(kernel={"profile": profile_with(AckAfterPauseByLambda)}))
    assert lam.skipped_ops == 0 and "is not a method of a part" in lam.fast_forward_off_reason


@pytest.mark.parametrize(
    "rule, reason",
    [
        (AckAfterPause, "does not offer its own cycle state"),
        (AckAfterPauseByLambda, "is not a method of a part"),
    ],
)
def test_a_rule_whose_events_cannot_be_moved_turns_the_fast_forward_off(
    rule, reason, profile_with
):
    sc = presets.one_segment(
        kernel={"profile": profile_with(rule)}, workload={"qd": 3}, run={"ops": 2000}
    )
    fast, _ = both(sc)
    assert fast.skipped_ops == 0 and reason in fast.fast_forward_off_reason


# -- the invariant checker across a jump -----------------------------------------------


@pytest.mark.parametrize(
    "sc",
    [
        Scenario(run={"ops": 300}),  # the delayed-ACK stall: a cycle of whole ticks
        presets.one_segment(workload={"qd": 8}, run={"ops": 3000}),
        presets.busy_count("nagle", 3, ops=2000),
        Scenario(
            workload={"qd": 4},
            link={"shared_cpus": 1, "bucket_bytes": 9000},
            server={"rx_usecs": 50e-6, "gro": True, "msg_more": True},
            kernel={"kernel_timers": True},
            run={"ops": 2000},
        ),
    ],
)
def test_check_covers_the_fast_forwarded_part(sc):
    # With run.check the jump is checked: the state after it equals the
    # state before it (relative to now), and the totals agree.
    checked = simulate(sc.replace(run={"check": True}))
    assert checked.skipped_ops > 0
    assert_same_numbers(checked, simulate(sc.replace(run={"fast_forward": False})))


def test_check_catches_a_shift_that_forgets_a_counter(monkeypatch):
    sc = presets.one_segment(workload={"qd": 4}, run={"ops": 2000})
    monkeypatch.setattr(Endpoint, "cycle_counters", lambda self: {})  # pure ACKs stay put
    monkeypatch.setattr(Endpoint, "cycle_shift", lambda self, shift: None)
    wrong = simulate(sc)
    assert wrong.skipped_ops > 0
    assert wrong.pure_acks != simulate(sc.replace(run={"fast_forward": False})).pure_acks
    with pytest.raises(AssertionError, match="frames"):
        simulate(sc.replace(run={"check": True}))


def test_check_catches_a_shift_that_disagrees_with_the_state(monkeypatch):
    sc = presets.one_segment(workload={"qd": 4}, run={"ops": 2000})
    shift = Receiver.cycle_shift

    def forgets_reads(self, s):
        copied = self.copied_seq
        shift(self, s)
        self.copied_seq = copied  # a byte count left behind

    monkeypatch.setattr(Receiver, "cycle_shift", forgets_reads)
    with pytest.raises(AssertionError, match="changed the relative state: client_ep.rx"):
        simulate(sc.replace(run={"check": True}))


def test_the_command_line_says_why_the_fast_forward_is_off(capsys):
    assert main(["--ops", "300", "--check", "true", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["skipped_ops"] > 0 and d["fast_forward_off_reason"] is None
    assert main(["--ops", "300", "--jitter", "0.1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["skipped_ops"] == 0
    assert d["fast_forward_off_reason"] == "run.jitter draws random processing times"

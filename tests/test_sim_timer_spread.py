"""``Host.timer_spread_s``: a delayed-ACK timer that expires while its host's thread sleeps runs
late by a seeded draw, as a timer's expiry on an idle CPU waits for that CPU to wake; the two ends'
timers due on one tick then fire apart."""

from __future__ import annotations

import statistics

import pytest

from models.sim import simulate
from models.sim.events import FS, EventLoop, Timer
from models.sim.wakeups import timer_late

US = FS // 10**6  # femtoseconds per microsecond
STALL = dict(run={"ops": 60}, kernel={"kernel_timers": True})  # a Nagle server's stall per op


class Ticks:
    """A clock of 1 us ticks (the tick-clock rule's interface that ``Timer`` uses)."""

    def timer_time(self, armed: int, ticks: int) -> int:
        return armed + ticks * US


class App:
    def __init__(self, busy: bool) -> None:
        self.busy, self.waking = busy, False


def test_a_late_expiry_runs_the_handler_later_and_counts():
    loop, seen = EventLoop(), []
    t = Timer(loop, lambda now, _: seen.append(now))
    t.late = lambda: 7 * US
    t.arm_ticks(0, 3, Ticks())
    loop.run()
    assert seen == [10 * US] and t.draws == 1 and not t.armed
    # an expiry the draw leaves on time is not counted
    t.late = lambda: 0
    t.arm_ticks(loop.now, 3, Ticks())
    loop.run()
    assert seen == [10 * US, 13 * US] and t.draws == 1


def test_a_timer_cancelled_while_late_never_runs():
    loop, seen = EventLoop(), []
    t = Timer(loop, lambda now, _: seen.append(now))
    t.late = lambda: 7 * US
    t.arm_ticks(0, 3, Ticks())
    loop.schedule(5 * US, lambda now, _: t.cancel())  # an ACK left meanwhile
    loop.run()
    assert seen == [] and t.draws == 1


def test_a_timer_armed_in_femtoseconds_is_never_late():
    loop, seen = EventLoop(), []
    t = Timer(loop, lambda now, _: seen.append(now))
    t.late = lambda: 7 * US
    t.arm(3 * US)
    loop.run()
    assert seen == [3 * US] and t.draws == 0


def test_the_draw_is_made_only_while_the_thread_sleeps():
    class Rng:
        def random(self) -> float:
            return 0.5

    assert timer_late(Rng(), 20 * US, App(busy=False))() == 10 * US
    assert timer_late(Rng(), 20 * US, App(busy=True))() == 0


def test_each_stall_lengthens_by_a_draw_within_the_spread():
    base = simulate(**STALL)
    late = simulate(**STALL, client={"timer_spread_s": 20e-6})
    # the tick grid stays: an operation takes the stall plus its own draw less the one before
    diffs = [b - a for a, b in zip(base.rtts_s, late.rtts_s)]
    assert max(abs(d) for d in diffs) < 20e-6 and any(abs(d) > 1e-6 for d in diffs)
    assert late.delayed_acks == base.delayed_acks
    # the draws follow the seed
    again = simulate(**STALL, client={"timer_spread_s": 20e-6})
    other = simulate(**{**STALL, "run": {"ops": 60, "seed": 1}}, client={"timer_spread_s": 20e-6})
    assert again.rtts_s == late.rtts_s and other.rtts_s != late.rtts_s


def test_a_run_without_timer_expiries_is_unchanged_and_still_fast_forwarded():
    nodelay = dict(server={"nodelay": True}, run={"ops": 3000})
    base = simulate(**nodelay)
    spread = simulate(**{**nodelay, "server": {"nodelay": True, "timer_spread_s": 20e-6}})
    assert spread.rtts_s == base.rtts_s and spread.skipped_ops == base.skipped_ops > 0


@pytest.mark.parametrize("side", ["client", "server"])
def test_the_fast_forward_is_exact_with_late_timers(side):
    sc = dict(STALL, **{side: {"timer_spread_s": 20e-6}})
    on = simulate(**sc)
    off = simulate(**{**sc, "run": {"ops": 60, "fast_forward": False}})
    assert on.rtts_s == off.rtts_s
    assert statistics.mean(on.rtts_s) > 0

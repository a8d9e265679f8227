"""A tbf limit's releases by its watchdog timer (Link.watchdog_wake, rules.qdisc.WatchdogWake): late by
the sending host's wake-up of an idle CPU, the bucket filling meanwhile, unless the next frame
handed to the qdisc runs it first."""

from __future__ import annotations

import pytest

from models import framing
from models.sim import Scenario, simulate
from models.sim.rules.qdisc import WatchdogWake

US = 1e-6  # seconds per microsecond
BUCKET = 2 * framing.bucket_bytes(framing.mss(1500))  # two full frames, as the harness's tbf


def _limited(watchdog: bool, **server) -> float:
    """IOPS of 16 KiB responses at QD 8 behind a 1 Gb/s token bucket."""
    return simulate(
        Scenario(
            link={"bandwidth_bps": 1e9, "bucket_bytes": BUCKET, "watchdog_wake": watchdog},
            workload={"qd": 8, "response_writes": (48, 16384)},
            server={"nodelay": True, **server},
            client={"nodelay": True},
            run={"ops": 1000},
        )
    ).iops


def test_a_slow_wake_up_lowers_the_limited_rate_and_a_fast_one_does_not():
    slow = {"wake_s": 25 * US, "wake_fast_s": 5 * US, "wake_fast_idle_s": 3 * US}
    fast = {**slow, "wake_fast_idle_s": 200 * US}
    ideal = _limited(False, **slow)
    # a frame waits about one frame's time (12 us at 1 Gb/s) for tokens: the slow wake-up
    assert _limited(True, **slow) < 0.9 * ideal
    # within the fast window the two frames of credit cover the late timer
    assert _limited(True, **fast) == pytest.approx(ideal, rel=0.01)
    # the flag is off: the same as without it
    assert _limited(False, **slow) == ideal


def test_a_measured_lateness_replaces_the_wake_ups_whatever_the_wait():
    slow = {"wake_s": 25 * US, "wake_fast_s": 5 * US, "wake_fast_idle_s": 200 * US}
    # the measured timer (Host.tbf_late_s) is late after every wait, fast window or not: the
    # same as wake-ups of that lateness with no fast window
    measured = _limited(True, **slow, tbf_late_s=17 * US)
    assert measured < 0.95 * _limited(True, **slow)  # the fast window had hidden the late timer
    # with no fast window and a wake-up of the same length, it charges what the proxy charged
    assert _limited(True, wake_s=17 * US, tbf_late_s=17 * US) == _limited(True, wake_s=17 * US)
    # a later timer passes less; without the flag the measurement is not used
    assert _limited(True, tbf_late_s=40 * US) < measured
    assert _limited(False, tbf_late_s=40 * US) == _limited(False)


def test_without_a_bucket_the_flag_changes_nothing():
    sc = Scenario(link={"watchdog_wake": True}, server={"wake_s": 50 * US}, run={"ops": 100})
    assert simulate(sc).iops == simulate(sc.replace(link={"watchdog_wake": False})).iops


def test_a_negative_wake_up_is_refused_by_name():
    with pytest.raises(ValueError, match="slow must be at least 0"):
        WatchdogWake(fast=0, fast_idle=0, slow=-1)


def _bucket_channel():
    """A 1 Gb/s tbf of two full frames whose watchdog is 25 us late after any wait."""
    from models.sim.events import FS, EventLoop
    from models.sim.link import Channel

    us = FS // 10**6  # femtoseconds per microsecond
    loop = EventLoop()
    late = WatchdogWake(fast=25 * us, fast_idle=0, slow=25 * us)
    ch = Channel(loop, 10**9, 0, 0, 0, 0, BUCKET, watchdog=late)
    seen: list = []
    ch.out = lambda now, seg: seen.append((now, seg.seq))
    return loop, ch, seen, us


def _full(seq: int):
    from models.sim.segment import Segment

    mss = framing.mss(1500)
    return Segment(1, seq, seq + mss, 1, False)


def _ack():
    from models.sim.segment import Segment

    return Segment(1, 1, 1, 1, False)  # no payload: a pure ACK


def test_the_next_enqueue_runs_the_qdisc_before_the_late_watchdog():
    loop, ch, seen, us = _bucket_channel()
    mss = framing.mss(1500)
    for i in range(3):  # the bucket holds two: the third waits for tokens
        ch.send(0, _full(1 + i * mss))
    assert len(ch.qdisc.held) == 1 and ch.frames == 3  # counted when handed over
    frame_fs = ch.wire_fs(framing.bucket_bytes(mss))  # its tokens take one frame's time
    assert ch.qdisc.fire_at == frame_fs + 25 * us  # the timer, late by the wake-up
    # a pure ACK enqueued 20 us in: the qdisc runs and both leave then
    loop.schedule(20 * us, lambda now, _: ch.send(now, _ack()))
    loop.run()
    times = dict((seq, t) for t, seq in seen)
    assert times[1 + 2 * mss] == 20 * us < frame_fs + 25 * us
    assert not ch.qdisc.held and ch.qdisc.event is None


def test_with_nothing_enqueued_the_waiting_frame_leaves_when_the_late_watchdog_fires():
    loop, ch, seen, us = _bucket_channel()
    mss = framing.mss(1500)
    for i in range(3):
        ch.send(0, _full(1 + i * mss))
    loop.run()
    frame_fs = ch.wire_fs(framing.bucket_bytes(mss))
    assert dict((seq, t) for t, seq in seen)[1 + 2 * mss] == frame_fs + 25 * us
    # and it is counted once: frames handed over, data frames, bytes
    assert (ch.frames, ch.data_frames, ch.payload_bytes) == (3, 3, 3 * mss)


def test_a_waiting_frame_that_leaves_early_brings_the_autocork_release_with_it():
    from types import SimpleNamespace

    from models.sim.rules.cork import Autocork

    loop, ch, seen, us = _bucket_channel()
    mss = framing.mss(1500)
    for i in range(3):
        ch.send(0, _full(1 + i * mss))
    cork = Autocork()
    pushed: list = []
    snd = SimpleNamespace(cork=cork, loop=loop, queue=True, soft_cpu=0)
    snd.push_pending = pushed.append  # the deferred tail's push, at its time
    ch.sender = snd
    # the autocork deferred a tail until the first TX completion, which
    # tx_backlog puts at the watchdog's (late) time
    cork.throttled = True
    first = ch.tx_backlog(0)[2]
    assert first == ch.qdisc.fire_at
    cork.event = loop.schedule(first, cork._tx_completion, snd)
    loop.schedule(20 * us, lambda now, _: ch.send(now, _ack()))
    loop.run()
    # the frame left at the ACK's enqueue, so the push came then, not at the timer
    assert pushed == [20 * us]

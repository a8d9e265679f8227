"""A tbf limit's releases by its watchdog timer (Link.watchdog_wake, rules.qdisc.WatchdogWake): late by
the sending host's wake-up of an idle CPU, the bucket filling meanwhile."""

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


def test_without_a_bucket_the_flag_changes_nothing():
    sc = Scenario(link={"watchdog_wake": True}, server={"wake_s": 50 * US}, run={"ops": 100})
    assert simulate(sc).iops == simulate(sc.replace(link={"watchdog_wake": False})).iops


def test_a_negative_wake_up_is_refused_by_name():
    with pytest.raises(ValueError, match="slow must be at least 0"):
        WatchdogWake(fast=0, fast_idle=0, slow=-1)

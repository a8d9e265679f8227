"""The kernel's timer details (``kernel={"kernel_timers": True}``) and
the token-bucket link.

Kernel sources (torvalds/linux):

* ``kernel/time/timer.c``, ``calc_index``: a timer's expiry is rounded up
  by one tick of its wheel level, so a level-0 timer runs one tick after
  it is due (:class:`~models.sim.rules.WheelClock`).
* ``include/net/tcp.h``, ``tcp_probe0_base``: ``max(icsk_rto,
  TCP_RTO_MIN)``; ``__tcp_set_rto``: ``icsk_rto = usecs_to_jiffies(srtt +
  rttvar)``; ``tcp_rtt_estimator``: ``rttvar`` never below
  ``tcp_rto_min_us`` (:class:`~models.sim.rules.SrttProbe`).
* ``net/sched/sch_tbf.c``: a frame leaves when the bucket holds its
  length; tokens accrue at the rate up to the burst.

Measured on kernel 6.18, HZ=250 (``data/kernel6_iscsi_loop``):
delayed-ACK stalls of 44.0 ms median, the ``MSG_MORE`` misuse 208 ms.
"""

from __future__ import annotations

import statistics

import pytest

from models import framing
from models.sim import Scenario, simulate
from models.sim.events import FS, EventLoop
from models.sim.link import Channel
from models.sim.segment import Segment
from models.validation.simulator import stated

STALL = dict(run={"ops": 40})  # two send() calls, Nagle
MISUSE = dict(
    server={"msg_more": True, "msg_more_last": True}, run={"ops": 12}
)  # MSG_MORE on both calls


def timers(**kernel):
    return {"kernel": {"kernel_timers": True, **kernel}}


def median_ms(r):
    return statistics.median(r.rtts_s) * 1e3  # s -> ms


def test_kernel_timers_are_off_by_default():
    assert Scenario().kernel.kernel_timers is False
    assert median_ms(simulate(**STALL)) == pytest.approx(40.0, abs=0.1)
    misuse_iops = stated("butterfield2017_stated", "msg_more_misuse_iops")
    assert simulate(**MISUSE).iops == pytest.approx(misuse_iops, rel=0.01)


@pytest.mark.parametrize("hz, expected_ms", [(250, 44.0), (1000, 41.0), (100, 50.0)])
def test_delayed_ack_runs_one_tick_late(hz, expected_ms):
    r = simulate(run={"ops": 40, "check": True}, **timers(hz=hz))
    # Each exchange starts on the tick the previous ACK left on: 10 + 1.
    assert median_ms(r) == pytest.approx(expected_ms, abs=0.05)
    assert r.delayed_acks["C>S"] >= 39


@pytest.mark.parametrize("phase", [0.0, 0.0005, 0.002, 0.0039])
def test_delayed_ack_never_fires_before_40_ms(phase):
    r = simulate(
        run={"ops": 4, "trace": True, "trace_at": "client", "warmup_ops": 0},
        **timers(tick_phase_s=phase),
    )
    trace = r.trace
    gaps = []
    for i, t in enumerate(trace):
        prev = trace[i - 1] if i else None
        if (
            t.direction == "C > S"
            and t.length == 0
            and prev is not None
            and prev.direction == "S > C"
            and prev.length == 48
            and t.time - prev.time > 0.02
        ):
            gaps.append(t.time - prev.time)
            ticks = (t.time + phase) / 0.004  # the ACK leaves on a tick
            assert ticks == pytest.approx(round(ticks), abs=1e-6)
    assert gaps, "no delayed ACK in the trace"
    assert all(0.040 - 1e-9 <= g <= 0.044 + 1e-9 for g in gaps), gaps


def test_probe_waits_for_srtt_plus_rto_min_rounded_up():
    r = simulate(**{**MISUSE, "run": {"ops": 12, "check": True}}, **timers())
    assert median_ms(r) == pytest.approx(208.0, abs=0.05)  # 51 + 1 ticks
    r = simulate(**MISUSE, **timers(hz=1000))
    assert median_ms(r) == pytest.approx(202.0, abs=0.05)  # 201 + 1


def test_probe_grows_with_the_round_trip():
    # 50 ms each way: SRTT about 100 ms, so the probe waits 300 ms and more.
    near = simulate(**MISUSE, **timers())
    far = simulate(link={"latency_s": 0.050}, **MISUSE, **timers())
    assert median_ms(far) - 100 > 300
    assert median_ms(far) - median_ms(near) > 190


def test_linux_24_timers_are_unchanged():
    # The 2.4 wheel fired on the tick a timer was due.
    a = simulate(
        **STALL, kernel={"profile": "linux-2.4", "kernel_timers": True, "tick_phase_s": 0.003}
    )
    b = simulate(**STALL, kernel={"profile": "linux-2.4", "tick_phase_s": 0.003})
    assert a.rtts_s == b.rtts_s


def test_kernel_timers_must_be_a_bool():
    with pytest.raises(ValueError, match="kernel.kernel_timers"):
        Scenario(kernel={"kernel_timers": "yes"})


@pytest.mark.parametrize("qd", [2, 3, 8])
def test_invariants_hold_with_kernel_timers(qd):
    quick = {"wake_s": 1.6e-6, "tx_latency_s": 0.0, "rx_latency_s": 0.0}
    r = simulate(
        workload={"qd": qd},
        run={"ops": 30 * qd, "check": True},
        server={"proc_s": 10e-6, **quick},
        client={"proc_s": 1.6e-6, **quick},
        link={"bandwidth_bps": 1e12},
        **timers(),
    )
    assert r.completed_total >= 30 * qd and r.in_flight == qd


# -- token bucket -------------------------------------------------------------


def _departures(bucket, sizes, rate=10**9, times=None):
    """TX completions (s) of segments of ``sizes`` bytes through a bucket."""
    ch = Channel(EventLoop(), rate, 0, 0, 0, 0, bucket)
    ch.out = lambda now, seg: None
    out, seq = [], 1
    for i, n in enumerate(sizes):
        t = 0 if times is None else round(times[i] * FS)  # s -> fs
        out.append(ch.send(t, Segment(0, seq, seq + n, 1, True)) / FS)
        seq += n
    return out


def test_bucket_passes_a_burst_at_once():
    # Two full frames fit 2 * (1500 + 14) bytes: both leave at once.
    assert _departures(3028, [1448, 1448]) == [0.0, 0.0]


def test_bucket_holds_the_next_frame_until_its_tokens_accrue():
    d = _departures(3028, [1448, 1448, 1448])
    frame = framing.bucket_bytes(1448)
    need = frame - (3028 - 2 * frame)  # bytes short
    assert d[2] == pytest.approx(need * 8 / 1e9, abs=1e-15)  # at 1 Gb/s


def test_bucket_holds_a_stream_to_the_rate():
    n = 2000
    d = _departures(3028, [1448] * n)
    rate = (n - 2) * framing.bucket_bytes(1448) * 8 / (d[-1] - d[1])
    assert rate == pytest.approx(1e9, rel=1e-9)  # bits/s


def test_bucket_refills_while_idle():
    d = _departures(3028, [1448, 1448, 1448], times=[0.0, 0.0, 1.0])
    assert d[2] == 1.0


def test_bucket_scenario_checks():
    with pytest.raises(ValueError, match="link.bucket_bytes"):
        Scenario(link={"bucket_bytes": 1000})  # under one 1514-byte frame
    with pytest.raises(ValueError, match="link.bucket_bytes"):
        Scenario(link={"bucket_bytes": True})


def test_bucket_link_limits_a_streaming_loop():
    # 4096-byte responses with TCP_NODELAY at QD 16 through 1 Gb/s: the
    # bucket, not the hosts, sets the rate.
    quick = {"tx_latency_s": 0.0, "rx_latency_s": 0.0, "wake_s": 2e-6}
    sc = Scenario(
        workload={"qd": 16, "response_writes": (48, 4096)},
        link={"bandwidth_bps": 1e9, "bucket_bytes": 3028},
        server={"proc_s": 5e-6, "nodelay": True, **quick},
        client={"proc_s": 2e-6, "nodelay": True, **quick},
        run={"ops": 3000, "check": True},
    )
    r = simulate(sc)
    per_op = 4144 + 4 * framing.BUCKET_OVERHEAD_BYTES  # header + 3 segments
    assert r.iops == pytest.approx(1e9 / 8 / per_op, rel=0.02)
    free = sc.replace(link={"bucket_bytes": None, "bandwidth_bps": 1e12}, run={"check": False})
    assert r.iops < simulate(free).iops


# -- a tick timer armed and cancelled again and again (Timer.arm_ticks) -------------


def test_a_rearmed_tick_timer_runs_at_its_time_in_the_order_it_was_armed():
    # The re-armed timer reuses its cancelled entry as a stand-in (nothing is pushed): its
    # expiry still runs at its own time, after an event at that time scheduled before the
    # re-arm and before one scheduled after, and the stand-in is not counted as an event.
    from models.sim.events import Timer
    from models.sim.rules.clock import TickClock

    ms = 10**12  # femtoseconds per millisecond
    loop, clock, seen = EventLoop(), TickClock(hz=250, phase=0), []
    timer = Timer(loop, lambda now, _a: seen.append(("timer", now)))
    timer.arm_ticks(0, 10, clock)  # 40 ms
    timer.cancel()
    loop.schedule(44 * ms, lambda now, _a: seen.append(("before", now)))
    heap_size = len(loop.heap)
    timer.arm_ticks(0, 11, clock)  # 44 ms: the 40 ms entry stands in
    assert len(loop.heap) == heap_size and timer.expires == 44 * ms
    loop.schedule(44 * ms, lambda now, _a: seen.append(("after", now)))
    loop.run()
    assert seen == [("before", 44 * ms), ("timer", 44 * ms), ("after", 44 * ms)]
    assert loop.events == 3 and not loop.pending_any()


def test_a_cancelled_stand_in_never_fires():
    from models.sim.events import Timer
    from models.sim.rules.clock import TickClock

    loop, clock, seen = EventLoop(), TickClock(hz=250, phase=0), []
    timer = Timer(loop, lambda now, _a: seen.append(now))
    timer.arm_ticks(0, 10, clock)
    timer.cancel()
    timer.arm_ticks(0, 11, clock)  # stands in
    assert loop.pending_any() and loop.live_count() == 1
    timer.cancel()
    assert not loop.pending_any()
    loop.run()
    assert seen == [] and loop.events == 0


def test_the_fast_forward_sees_the_timer_entry_not_its_stand_in():
    from models.sim.events import Timer
    from models.sim.rules.clock import TickClock

    ms = 10**12  # femtoseconds per millisecond
    loop, clock = EventLoop(), TickClock(hz=250, phase=0)
    timer = Timer(loop, lambda now, _a: None)
    timer.arm_ticks(0, 10, clock)
    timer.cancel()
    timer.arm_ticks(0, 11, clock)  # the 40 ms entry stands in
    assert loop.next_time() == 44 * ms  # (the stand-in left, the timer's entry went in)
    assert [(e[0], e[2]) for e in loop.pending()] == [(44 * ms, timer.fire)]

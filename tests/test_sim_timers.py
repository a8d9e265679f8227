"""The kernel's timer details (``Scenario(kernel_timers=True)``) and the token-bucket link.

Kernel sources (torvalds/linux):

* ``kernel/time/timer.c``, ``calc_index``: a timer's expiry is rounded up by one tick of its wheel level
  (``expires = (expires >> LVL_SHIFT(lvl)) + 1``), so a level-0 timer runs one tick after it is due.
* ``include/net/tcp.h``, ``tcp_probe0_base``: ``max(icsk_rto, TCP_RTO_MIN)``; ``__tcp_set_rto``:
  ``icsk_rto = usecs_to_jiffies(srtt + rttvar)``; ``net/ipv4/tcp_input.c``, ``tcp_rtt_estimator``:
  ``rttvar`` never below ``tcp_rto_min_us``.
* ``net/sched/sch_tbf.c``: a frame leaves when the bucket holds its length; tokens accrue at the rate up
  to the burst.

Measured on kernel 6.18, HZ=250 (``data/kernel6_iscsi_loop``): delayed-ACK stalls of 44.0 ms median, the
``MSG_MORE`` misuse 208 ms per operation.
"""

from __future__ import annotations

import numpy as np
import pytest

from models.sim import Scenario, simulate
from models.sim.events import EventLoop
from models.sim.link import BUCKET_OVERHEAD_BYTES, Link, Segment

STALL = dict(qd=1, response_writes=(48, 512), ops=40)                  # two send() calls, Nagle on
MISUSE = dict(qd=1, msg_more="server", msg_more_last=True, ops=12)      # MSG_MORE on both calls


def test_kernel_timers_are_off_by_default():
    assert Scenario().kernel_timers is False
    r = simulate(**STALL)
    assert np.median(r.rtts_s) == pytest.approx(0.040, abs=1e-4)        # 10 ticks of 4 ms
    assert simulate(**MISUSE).iops == pytest.approx(5.0, rel=0.01)       # TCP_RTO_MIN


@pytest.mark.parametrize("hz, expected_ms", [(250, 44.0), (1000, 41.0), (100, 50.0)])
def test_delayed_ack_runs_one_tick_late(hz, expected_ms):
    r = simulate(kernel_timers=True, hz=hz, check=True, **STALL)
    # In steady state each exchange starts on the tick the previous ACK left on: 10 + 1 ticks.
    assert np.median(r.rtts_s) * 1e3 == pytest.approx(expected_ms, abs=0.05)
    assert r.delayed_acks["C>S"] >= 39


@pytest.mark.parametrize("phase", [0.0, 0.0005, 0.002, 0.0039])
def test_delayed_ack_never_fires_before_40_ms(phase):
    r = simulate(kernel_timers=True, tick_phase_s=phase, trace=True, trace_at="client", ops=4,
                 response_writes=(48, 512), warmup_ops=0)
    # Pair each delayed ACK the client sends with the header that made it owed.
    trace = r.trace
    gaps = []
    for i, t in enumerate(trace):
        if t.direction == "C > S" and t.length == 0 and i and trace[i - 1].direction == "S > C" \
                and trace[i - 1].length == 48 and t.time - trace[i - 1].time > 0.02:
            gaps.append(t.time - trace[i - 1].time)
            ticks = (t.time + phase) / 0.004                            # the ACK leaves on a tick boundary
            assert ticks == pytest.approx(round(ticks), abs=1e-6)
    assert gaps, "no delayed ACK in the trace"
    assert all(0.040 - 1e-9 <= g <= 0.044 + 1e-9 for g in gaps), gaps


def test_probe_waits_for_srtt_plus_rto_min_rounded_up():
    r = simulate(kernel_timers=True, check=True, **MISUSE)
    assert np.median(r.rtts_s) * 1e3 == pytest.approx(208.0, abs=0.05)   # 51 ticks + 1 at HZ=250
    r = simulate(kernel_timers=True, hz=1000, **MISUSE)
    assert np.median(r.rtts_s) * 1e3 == pytest.approx(202.0, abs=0.05)   # 201 ticks + 1 at HZ=1000


def test_probe_grows_with_the_round_trip():
    # 50 ms each way: SRTT about 100 ms, so the probe waits 300 ms and more, not 200.
    near = simulate(kernel_timers=True, **MISUSE)
    far = simulate(kernel_timers=True, latency_s=0.050, **MISUSE)
    assert np.median(far.rtts_s) - 0.100 > 0.300
    assert np.median(far.rtts_s) - np.median(near.rtts_s) > 0.190


def test_linux_24_timers_are_unchanged():
    # The 2.4 wheel fired on the tick a timer was due (Flory's 36.4 ms stall is shorter than 40 ms).
    a = simulate(kernel="linux-2.4", kernel_timers=True, tick_phase_s=0.003, **STALL)
    b = simulate(kernel="linux-2.4", tick_phase_s=0.003, **STALL)
    assert np.array_equal(a.rtts_s, b.rtts_s)


def test_kernel_timers_must_be_a_bool():
    with pytest.raises(ValueError, match="kernel_timers"):
        Scenario(kernel_timers="yes")


@pytest.mark.parametrize("qd", [2, 3, 8])
def test_invariants_hold_with_kernel_timers(qd):
    r = simulate(qd=qd, kernel_timers=True, ops=30 * qd, check=True, sp_s=10e-6, cl_s=1.6e-6, cp_s=1.6e-6,
                 sl_s=1.6e-6, ct_s=0, st_s=0, sr_s=0, cr_s=0, bandwidth_bps=1e12)
    assert r.completed_total >= 30 * qd and r.in_flight == qd


# -- token bucket -----------------------------------------------------------------------------------


def _departures(bucket, sizes, bandwidth=1e9, times=None):
    loop = EventLoop()
    link = Link(loop, bandwidth, 0.0, 0.0, 0.0, 0.0, lambda now, seg: None, bucket)
    out, seq = [], 1
    for i, n in enumerate(sizes):
        t = 0.0 if times is None else times[i]
        out.append(link.send(t, Segment(0, seq, seq + n, 1, True)))
        seq += n
    return out


def test_bucket_passes_a_burst_at_once():
    # Two full frames fit a bucket of 2 * (1500 + 14) bytes: both leave at time 0, no serialization.
    assert _departures(3028, [1448, 1448]) == [0.0, 0.0]


def test_bucket_holds_the_next_frame_until_its_tokens_accrue():
    d = _departures(3028, [1448, 1448, 1448])
    need = 1448 + BUCKET_OVERHEAD_BYTES - (3028 - 2 * (1448 + BUCKET_OVERHEAD_BYTES))   # bytes short
    assert d[2] == pytest.approx(need * 8 / 1e9)                         # bytes -> bits at 1 Gb/s


def test_bucket_holds_a_stream_to_the_rate():
    n = 2000
    d = _departures(3028, [1448] * n)
    rate = (n - 2) * (1448 + BUCKET_OVERHEAD_BYTES) * 8 / (d[-1] - d[1])    # bits per second after the burst
    assert rate == pytest.approx(1e9, rel=1e-6)


def test_bucket_refills_while_idle():
    d = _departures(3028, [1448, 1448, 1448], times=[0.0, 0.0, 1.0])
    assert d[2] == 1.0                                                    # full again after a second


def test_bucket_scenario_checks():
    with pytest.raises(ValueError, match="bucket_bytes"):
        Scenario(bucket_bytes=1000)                                      # smaller than one 1514-byte frame
    with pytest.raises(ValueError, match="bucket_bytes"):
        Scenario(bucket_bytes=True)


def test_bucket_link_limits_a_streaming_loop():
    # 4096-byte responses with TCP_NODELAY at QD 16 through 1 Gb/s: the bucket, not the hosts, sets the rate.
    sc = Scenario(qd=16, response_writes=(48, 4096), nodelay="both", bandwidth_bps=1e9, bucket_bytes=3028,
                  sp_s=5e-6, cp_s=2e-6, sl_s=2e-6, cl_s=2e-6, ct_s=0, st_s=0, sr_s=0, cr_s=0, ops=3000, check=True)
    r = simulate(sc)
    per_op = 4144 + 4 * BUCKET_OVERHEAD_BYTES            # header and three data segments of the response
    assert r.iops == pytest.approx(1e9 / 8 / per_op, rel=0.02)
    assert r.iops < simulate(sc.replace(bucket_bytes=None, bandwidth_bps=1e12, check=False)).iops

"""bbr as the simulator models it: the delivery-rate samples of
``tcp_rate.c`` (models.sim.rules.rate) and bbr's state machine and pacing
rate (models.sim.rules.bbr), each rule checked on the objects, then the
split that ``ss -ti`` showed in the kernel's veth-1500 runs (chapter 9): a
Nagle server, whose held tails keep bytes unsent, leaves start-up; a
NODELAY server, every sample application-limited, stays in it."""

from __future__ import annotations

import pytest

from models.sim.rules.bbr_model import (
    BBR_UNIT,
    CYCLE_GAINS,
    DRAIN,
    HIGH_GAIN,
    PROBE_BW,
    STARTUP,
    BbrModel,
)
from models.sim.rules.rate import Minmax, RateSample, RateSampler

US = 10**9  # femtoseconds per microsecond
MSS = 1448


def _sample(prior: int, delivered: int, interval_us: int, limited: bool = False) -> RateSample:
    return RateSample(prior, delivered, interval_us * US, limited, 10 * US, 4, delivered)


# -- the delivery-rate samples ------------------------------------------------


def test_a_send_with_less_than_an_mss_unsent_marks_the_samples_app_limited():
    s = RateSampler(jiffy_fs=4000 * US)
    s.sent(0, packets_out=0)
    s.acked(20 * US, skbs=1, packets=1, prior_in_flight=1)  # clears the start mark
    assert s.app_limited == 0
    s.check_app_limited(unsent=MSS, mss=MSS, host_queued=False, in_flight=0, cwnd=10)
    assert s.app_limited == 0  # a full MSS waits: the sender is not short of data
    s.check_app_limited(unsent=100, mss=MSS, host_queued=True, in_flight=0, cwnd=10)
    assert s.app_limited == 0  # a frame still in the host's queue
    s.check_app_limited(unsent=100, mss=MSS, host_queued=False, in_flight=10, cwnd=10)
    assert s.app_limited == 0  # the window is full
    s.check_app_limited(unsent=100, mss=MSS, host_queued=False, in_flight=3, cwnd=10)
    assert s.app_limited == 1 + 3  # delivered + in flight: until those are delivered
    s.sent(30 * US, packets_out=0)
    rs = s.acked(50 * US, skbs=1, packets=1, prior_in_flight=1)
    assert rs.is_app_limited and s.app_limited == 4  # (delivered 2: not yet past 4)


def test_a_sample_spans_the_longer_of_the_send_and_ack_intervals():
    s = RateSampler(jiffy_fs=4000 * US)
    s.sent(0, packets_out=0)
    s.sent(30 * US, packets_out=1)  # sent 30 us after the flight began
    rs = s.acked(40 * US, skbs=2, packets=2, prior_in_flight=2)
    assert (rs.delivered, rs.interval_fs) == (2, 40 * US)  # ACK interval 40 > send 30
    assert rs.rtt_fs == 10 * US and s.rtt_min_fs == 10 * US  # the newest buffer's RTT
    s.sent(41 * US, packets_out=0)
    rs = s.acked(41 * US + 500, skbs=1, packets=1, prior_in_flight=1)
    assert rs.rtt_fs == 0  # under a microsecond: 0 to the kernel,
    assert s.rtt_min_fs == 10 * US  # which its minimum-RTT filter takes as a jiffy
    s2 = RateSampler(jiffy_fs=4000 * US)
    s2.sent(0, packets_out=0)
    s2.acked(500, skbs=1, packets=1, prior_in_flight=1)
    assert s2.rtt_min_fs == 4000 * US


def test_times_are_whole_microseconds_as_the_kernels_tcp_mstamp():
    # a 12-segment buffer sent at 10.9 us and acknowledged 1.8 us later (12.7 us): the kernel
    # reads 10 and 12 us, 12 packets in 2 us; sent 0.2 us later (11.1 -> 12.9 us), 1 us apart
    for sent_fs, interval_us in ((10 * US + 9 * US // 10, 2), (11 * US + US // 10, 1)):
        s = RateSampler(jiffy_fs=4000 * US)
        s.sent(sent_fs, packets_out=0)
        rs = s.acked(sent_fs + 18 * US // 10, skbs=1, packets=12, prior_in_flight=12)
        assert (rs.delivered, rs.interval_fs, rs.rtt_fs) == (
            12,
            interval_us * US,
            interval_us * US,
        )
        assert s.delivered_fs % US == 0 and s.first_tx_fs % US == 0


def test_the_max_filter_forgets_a_sample_after_its_window():
    f = Minmax(0, 0)
    assert f.update(10, 1, 90) == 90
    for t in range(2, 12):
        assert f.update(10, t, 30) == 90
    assert f.update(10, 12, 30) == 30  # 11 rounds on: the 90 has expired


# -- bbr's state machine -------------------------------------------------------


def _rounds(m: BbrModel, bws: list[int], limited: bool = False) -> None:
    """One valid sample per round, ``bw`` packets per 10 us each."""
    delivered = m.next_rtt_delivered
    for bw in bws:
        prior = delivered
        delivered += bw
        m.on_ack(_sample(prior, bw, 10, limited), delivered, 0, 0, 0, MSS, 10, 10)


def test_startup_ends_after_three_rounds_without_25_percent_growth():
    m = BbrModel()
    _rounds(m, [10, 20, 40])
    assert m.mode == STARTUP and m.pacing_gain == HIGH_GAIN
    _rounds(m, [45, 45])
    assert m.mode == STARTUP and m.full_bw_cnt == 2
    _rounds(m, [45])
    assert m.full_bw_reached
    # DRAIN, and straight on to PROBE_BW: nothing is in flight
    assert m.mode == PROBE_BW and m.drained_at == 6
    assert m.cycle_idx != 1  # bbr never starts the cycle in its 3/4 phase
    assert m.pacing_gain == CYCLE_GAINS[m.cycle_idx]


def test_app_limited_rounds_never_end_startup():
    m = BbrModel()
    _rounds(m, [40] * 20, limited=True)
    assert m.mode == STARTUP and not m.full_bw_reached


def test_startup_never_lowers_the_rate_and_probe_bw_follows_the_estimate():
    m = BbrModel()
    _rounds(m, [40])
    fast = m.rate
    assert fast == BbrModel.pacing_rate((40 << 24) // 10, HIGH_GAIN, MSS)
    _rounds(m, [40] * 3)  # full: DRAIN, then PROBE_BW
    assert m.mode == PROBE_BW
    assert m.rate < fast  # gain about 1 now, not 2.89
    m.cycle_idx, m.pacing_gain = 2, BBR_UNIT  # a gain-1 phase
    _rounds(m, [1] * 12)  # the 40 has left the 10-round window
    assert m.max_bw() == (1 << 24) // 10
    assert m.rate <= BbrModel.pacing_rate((1 << 24) // 10, CYCLE_GAINS[0], MSS)


def test_drain_waits_for_the_flight_to_fall_to_one_bdp():
    m = BbrModel()
    delivered = 0
    for bw in [40, 40, 40, 40]:
        prior, delivered = delivered, delivered + bw
        m.on_ack(_sample(prior, bw, 10), delivered, 0, 500, 0, MSS, 10, 10)
    assert m.full_bw_reached and m.mode == DRAIN  # 500 packets out: not drained
    m.on_ack(_sample(delivered, 40, 10), delivered + 40, 0, 2, 0, MSS, 10, 10)
    assert m.mode == PROBE_BW


def test_the_first_probe_bw_phase_comes_from_the_seed():
    seen = set()
    for seed in range(40):
        m = BbrModel(rng_seed=seed)
        _rounds(m, [40] * 4)
        seen.add(m.cycle_idx)
    assert seen == {0, 2, 3, 4, 5, 6, 7}


# -- bbr's window (bbr_set_cwnd) -------------------------------------------------


def test_before_the_pipe_is_full_the_window_grows_by_what_each_ack_delivers():
    m = BbrModel()
    assert m.set_cwnd(10, acked=3, delivered=3, mss=MSS) == 13  # fewer than 10 delivered
    assert m.set_cwnd(13, acked=0, delivered=3, mss=MSS) == 13  # nothing acked: no change
    # before an RTT sample the target is the initial window plus three super-packets
    target = m.inflight(0, HIGH_GAIN, MSS)
    assert m.set_cwnd(target - 1, acked=2, delivered=50, mss=MSS) == target + 1
    assert m.set_cwnd(500, acked=2, delivered=50, mss=MSS) == 500  # start-up never cuts


def test_once_full_the_window_is_twice_the_bdp_plus_three_super_packets():
    m = BbrModel()
    _rounds(m, [40] * 4)  # 4 packets/us over a 10 us minimum RTT: PROBE_BW
    assert m.mode == PROBE_BW and m.cwnd_gain == 2 * BBR_UNIT
    m.extra_acked = [0, 0]  # (no ACK aggregation)
    # 2 x 4 packets/us x 10 us = 80; the rate's super-packets are 64 KiB,
    # 45 segments of 1448 bytes: 3 x 45 = 135; 215 rounded up to even, and 2
    # more in the cycle's first phase
    want = 216 + (2 if m.cycle_idx == 0 else 0)
    assert m.set_cwnd(1000, acked=1, delivered=10_000, mss=MSS) == want  # cut at once
    assert m.set_cwnd(100, acked=5, delivered=10_000, mss=MSS) == 105  # grows below it
    assert m.set_cwnd(1, acked=1, delivered=10_000, mss=MSS) == 4  # never below 4 packets


def test_acks_that_come_in_bursts_add_their_excess_to_the_window():
    m = BbrModel()
    _rounds(m, [40] * 4)
    m.extra_acked, m.ack_epoch_acked, m.ack_epoch_fs = [0, 0], 0, 0
    base = m.set_cwnd(1000, acked=1, delivered=10_000, mss=MSS)
    # the estimate expects 4 packets per microsecond: an epoch that begins
    # with 10 packets at time 0 and takes 30 more 1 us later has received
    # 40 - 4 = 36 more than expected
    d = m.next_rtt_delivered
    m.on_ack(_sample(d - 10, 10, 10), d, 0, 0, 0, MSS, 10, 1000)
    m.on_ack(_sample(d, 30, 10), d + 30, 1 * US, 0, 0, MSS, 10, 1000)
    assert max(m.extra_acked) == 36 and m.aggregation_cwnd() == 36
    assert m.set_cwnd(1000, acked=1, delivered=10_000, mss=MSS) == base + 36
    # the excess is at most the window: 30 in a window of 20 counts as 20
    m.extra_acked, m.ack_epoch_acked, m.ack_epoch_fs = [0, 0], 0, 0
    m.on_ack(_sample(d - 10, 10, 10), d, 0, 0, 0, MSS, 10, 20)
    m.on_ack(_sample(d, 30, 10), d + 30, 1 * US, 0, 0, MSS, 10, 20)
    assert max(m.extra_acked) == 20
    # an ACK stream slower than the estimate begins a new epoch each time
    m.extra_acked, m.ack_epoch_acked, m.ack_epoch_fs = [0, 0], 0, 0
    for k in range(5):
        m.on_ack(_sample(d + k, 1, 10), d + k + 1, k * US, 0, 0, MSS, 10, 1000)
    assert max(m.extra_acked) == 1
    # a restart from idle begins a new epoch
    m.tx_start(5 * US, True, MSS, 10, 10)
    assert (m.ack_epoch_fs, m.ack_epoch_acked) == (5 * US, 0)


# -- the split ss showed in the kernel's runs ----------------------------------


@pytest.mark.parametrize("mode,left_startup", [("nagle", True), ("nodelay", False)])
def test_veth_1500_nagle_server_leaves_startup_and_nodelay_server_stays(mode, left_startup):
    # the pacing sweep's run (veth-1500, 16 KiB, QD 8, NODELAY client) as chapter 9 simulates it
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.sim.engine import Simulation
    from models.validation import fidelity as FID

    run = load_kernel_run(prefix=FID.PACING_PREFIX)
    t = run.table("iscsi_loop")
    pick = (t.link == "veth-1500") & (t.sock_mode == mode) & (t.cc == "bbr")
    row = t[pick & (t.qd == 8) & (t.iosize_bytes == 16384)].iloc[0].to_dict()
    host = FID.ProfileHost(hostprofile.shipped())
    sc = FID.field_scenario("iscsi_loop", row, host, run.hz)
    sim = Simulation(sc.replace(run={"ops": 1500, "fast_forward": False}))
    sim.run()
    m = sim.server_ep.sender.cc.model
    assert (m.mode != STARTUP) == left_startup, (m.mode, m.rtt_cnt)
    assert m.rtt_cnt > 1000


@pytest.mark.parametrize("stamp_us", [False, True])
@pytest.mark.parametrize("mode", ["nagle", "nodelay"])
def test_bbr_runs_are_exact_with_the_fast_forward_on_and_off(mode, stamp_us, monkeypatch):
    # bbr's state repeats once a sample and a phase are older than they can
    # matter (the filter's window, the minimum RTT).  With the rate samples'
    # times exact (stamp_fs 1) the fast-forward skips most of the run; with
    # the kernel's whole microseconds a repeat must fall on the same phase of
    # the microsecond, which these runs' cycles never do, and it skips
    # nothing.  Either way no round trip changes.
    from models.kernel import load_kernel_run
    from models.sim import hostprofile, simulate
    from models.sim.rules.bbr import Bbr
    from models.validation import fidelity as FID

    if not stamp_us:
        monkeypatch.setattr(Bbr, "stamp_fs", 1)
    run = load_kernel_run(prefix=FID.PACING_PREFIX)
    t = run.table("iscsi_loop")
    pick = (t.link == "veth-9000") & (t.sock_mode == mode) & (t.cc == "bbr")
    row = t[pick & (t.qd == 2) & (t.iosize_bytes == 16384)].iloc[0].to_dict()
    host = FID.ProfileHost(hostprofile.shipped())
    # (the profile's late wake-ups are random draws, which rule the fast-forward out: off here)
    no_draws = {"wake_late_share": 0.0}
    sc = FID.field_scenario("iscsi_loop", row, host, run.hz).replace(
        run={"ops": 3000}, server=no_draws, client=no_draws
    )
    fast = simulate(sc)
    slow = simulate(sc.replace(run={"ops": 3000, "fast_forward": False}))
    if stamp_us:
        assert fast.skipped_ops == 0 and fast.fast_forward_off_reason is None
    else:
        assert fast.skipped_ops > 2000
    assert fast.rtts_s == slow.rtts_s and fast.directions == slow.directions

"""bbr's model of the path and the pacing rate it sets
(``net/ipv4/tcp_bbr.c``, version 1 as in Linux 6: ``bbr_main``,
``bbr_update_bw``, ``bbr_update_ack_aggregation``,
``bbr_update_cycle_phase``, ``bbr_check_full_bw_reached``,
``bbr_check_drain``, ``bbr_update_min_rtt``, ``bbr_update_gains``,
``bbr_set_pacing_rate``, ``bbr_set_cwnd``, ``bbr_cwnd_event``)

On every ACK bbr takes the delivery-rate sample (:mod:`models.sim.rules.rate`)
into a max filter over the last 10 rounds (a round ends when a packet sent
after the previous round's end is acknowledged), unless the sample is
application-limited and lower than the estimate.  It starts in STARTUP,
pacing at ``2/ln 2`` times the estimate (never lowering the rate); once
three rounds in a row, each ending on a sample that was not
application-limited, grow the estimate by less than 25 %, it has found the
"full" bandwidth, DRAINs, then cycles PROBE_BW's gains ``5/4, 3/4, 1 x 6``
(one phase per minimum RTT; the 5/4 phase lasts until the flight reaches
5/4 of the estimated BDP) and from then on paces at ``gain x estimate``,
lower or higher.

bbr also sets the congestion window (``bbr_set_cwnd``; bbr replaces the
window growth of Reno and CUBIC): the estimated bandwidth-delay product at
the window gain (2 in PROBE_BW, ``2/ln 2`` before), plus the largest
recent excess of ACKed packets over what the estimate predicts (the ACK
aggregation allowance), plus three super-packets of the pacing rate's
size goal, rounded up to even.  The window grows by the packets each ACK
delivers, and once the full bandwidth is found it is cut to that target
at once.  On a loopback or veth path the minimum RTT is a few
microseconds, so the product is a packet or two and the window is mostly
the allowances; on the loopback, whose segments are 64 KiB, that is a
dozen or two segments, fewer than a deep queue of 64 KiB responses keeps
in flight.

So a request/response connection that keeps bytes unsent (Nagle holding a
tail, pacing itself) produces samples that are not application-limited; a
slow stretch then counts, and since a round on loopback or veth lasts tens
of microseconds, the 10-round window forgets the fast samples quickly.

Fixed point as the kernel's: gains in 1/256 (``BBR_UNIT``), bandwidth in
packets per microsecond times ``2**24`` (``BW_UNIT``).  Not modelled:
PROBE_RTT (every 10 s), the long-term (policer) bandwidth, losses and the
window's recovery rules that go with them.  PROBE_BW's first
phase is drawn from ``rng`` as ``bbr_reset_probe_bw_mode`` does.

>>> m = BbrModel(rng_seed=1)
>>> m.init_rate(cwnd=10, mss=1448, srtt_us=0)   # 1 ms before an RTT sample
>>> m.rate                  # 2.887 x 10 x 1448 B per ms, less 1 %
41381651
"""

from __future__ import annotations

import random

from models.sim.rules.rate import Minmax, RateSample
from models.sim.rules.skb import GSO_GOAL_BYTES

__all__ = [
    "BbrModel",
    "BBR_UNIT",
    "BW_SCALE",
    "HIGH_GAIN",
    "DRAIN_GAIN",
    "CYCLE_GAINS",
    "CWND_GAIN",
    "BW_RTTS",
    "STARTUP",
    "DRAIN",
    "PROBE_BW",
]

_US = 10**9  # femtoseconds per microsecond

BBR_UNIT = 256  # gain 1.0 (BBR_SCALE 8)
BW_SCALE = 24  # bandwidth: packets/us << 24
HIGH_GAIN = BBR_UNIT * 2885 // 1000 + 1  # 2/ln 2 (bbr_high_gain)
DRAIN_GAIN = BBR_UNIT * 1000 // 2885  # its inverse (bbr_drain_gain)
CYCLE_GAINS = (BBR_UNIT * 5 // 4, BBR_UNIT * 3 // 4) + (BBR_UNIT,) * 6
BW_RTTS = len(CYCLE_GAINS) + 2  # the max filter's window, rounds
FULL_BW_THRESH = BBR_UNIT * 5 // 4  # growth that still counts, 25 %
FULL_BW_CNT = 3  # rounds without it: the pipe is full
CYCLE_RAND = 7  # bbr_cycle_rand
PACING_MARGIN_PERCENT = 1  # bbr_pacing_margin_percent
MIN_TSO_RATE = 1_200_000 // 8  # bbr_min_tso_rate, bits/s -> bytes/s
INIT_CWND = 10  # TCP_INIT_CWND, packets
CWND_GAIN = BBR_UNIT * 2  # bbr_cwnd_gain, PROBE_BW's window gain
CWND_MIN_TARGET = 4  # bbr_cwnd_min_target, packets
EXTRA_ACKED_GAIN = BBR_UNIT  # bbr_extra_acked_gain
EXTRA_ACKED_WIN_RTTS = 5  # bbr_extra_acked_win_rtts, rounds
EXTRA_ACKED_MAX_US = 100_000  # bbr_extra_acked_max_us, microseconds
ACK_EPOCH_RESET = 1 << 20  # bbr_ack_epoch_acked_reset_thresh, packets
STARTUP, DRAIN, PROBE_BW = "startup", "drain", "probe_bw"


class BbrModel:
    """bbr's state for one socket; ``rate`` is the pacing rate, bytes/s."""

    __slots__ = (
        "mode",
        "pacing_gain",
        "bw",
        "rtt_cnt",
        "next_rtt_delivered",
        "round_start",
        "full_bw",
        "full_bw_cnt",
        "full_bw_reached",
        "min_rtt_fs",
        "cycle_idx",
        "cycle_fs",
        "rate",
        "has_seen_rtt",
        "rng",
        "drained_at",
        "trace",
        "ack_epoch_fs",
        "ack_epoch_acked",
        "extra_acked",
        "extra_win_rtts",
        "extra_win_idx",
    )

    def __init__(self, rng_seed: int = 0) -> None:
        self.mode = STARTUP  # bbr_reset_startup_mode
        self.pacing_gain = HIGH_GAIN
        self.bw = Minmax(0, 0)
        self.rtt_cnt = 0  # rounds so far
        self.next_rtt_delivered = 0
        self.round_start = False
        self.full_bw = 0
        self.full_bw_cnt = 0
        self.full_bw_reached = False
        self.min_rtt_fs: int | None = None  # ~0U: no sample
        self.cycle_idx = 0
        self.cycle_fs = 0  # when the PROBE_BW phase began, fs
        self.rate = 0  # sk_pacing_rate, bytes/s
        self.has_seen_rtt = False
        self.rng = random.Random(rng_seed)  # prandom_u32_max
        self.drained_at = -1  # a statistic: round that left STARTUP
        # a list to record (estimate, pacing rate, mode, window, the ACK's
        # time in fs) after each ACK the run simulates (a fast-forwarded
        # stretch records nothing)
        self.trace: list | None = None
        # the ACK aggregation allowance (bbr_update_ack_aggregation): when
        # the epoch began (fs), packets ACKed in it, and the largest excess
        # over the estimate in each of two windows of rounds
        self.ack_epoch_fs = 0
        self.ack_epoch_acked = 0
        self.extra_acked = [0, 0]
        self.extra_win_rtts = 0
        self.extra_win_idx = 0

    # -- rates ----------------------------------------------------------------

    @staticmethod
    def pacing_rate(bw: int, gain: int, mss: int) -> int:
        """``bbr_bw_to_pacing_rate``: bytes/s for ``bw`` at ``gain``."""
        rate = bw * mss * gain >> 8  # packets/us << 24, x bytes, x gain
        rate *= 1_000_000 // 100 * (100 - PACING_MARGIN_PERCENT)  # /us -> /s
        return rate >> BW_SCALE

    def init_rate(self, cwnd: int, mss: int, srtt_us: int) -> None:
        """``bbr_init_pacing_rate_from_rtt`` (``srtt_us``: srtt in us, 0
        before a sample, then 1 ms)."""
        if srtt_us:
            self.has_seen_rtt = True
        bw = (cwnd << BW_SCALE) // (srtt_us or 1000)
        self.rate = self.pacing_rate(bw, HIGH_GAIN, mss)

    @property
    def cwnd_gain(self) -> int:
        """``bbr_update_gains``' window gain: ``2/ln 2`` in STARTUP and
        DRAIN (which keeps start-up's window), 2 in PROBE_BW."""
        return CWND_GAIN if self.mode == PROBE_BW else HIGH_GAIN

    def max_bw(self) -> int:
        return self.bw.best()

    def tso_segs_goal(self, mss: int) -> int:
        """``bbr_tso_segs_goal``: segments per super-packet at this rate."""
        # sk_pacing_shift 10: about 1 ms at the rate
        nbytes = min(self.rate >> 10, GSO_GOAL_BYTES)
        least = 1 if self.rate < MIN_TSO_RATE else 2
        return min(max(nbytes // mss, least), 0x7F)

    def bdp(self, bw: int, gain: int) -> int:
        """``bbr_bdp``: the bandwidth-delay product at ``gain``, rounded
        up, packets (the initial window before an RTT sample)."""
        if self.min_rtt_fs is None:
            return INIT_CWND
        w = bw * self.min_rtt_fs // _US  # fs -> us
        return ((w * gain >> 8) + (1 << BW_SCALE) - 1) >> BW_SCALE

    def quantization_budget(self, cwnd: int, mss: int) -> int:
        """``bbr_quantization_budget``: three super-packets more, even,
        and two more in PROBE_BW's first phase."""
        cwnd += 3 * self.tso_segs_goal(mss)
        cwnd = (cwnd + 1) & ~1
        if self.mode == PROBE_BW and self.cycle_idx == 0:
            cwnd += 2
        return cwnd

    def inflight(self, bw: int, gain: int, mss: int) -> int:
        """``bbr_inflight``: the BDP at ``gain`` plus the quantization
        budget, packets."""
        return self.quantization_budget(self.bdp(bw, gain), mss)

    def aggregation_cwnd(self) -> int:
        """``bbr_ack_aggregation_cwnd``: the window for ACKs that come in
        bursts, packets (none before the full bandwidth is found)."""
        if not self.full_bw_reached:
            return 0
        bw = self.max_bw()
        cap = bw * EXTRA_ACKED_MAX_US >> BW_SCALE
        extra = EXTRA_ACKED_GAIN * max(self.extra_acked) >> 8
        return extra if extra < cap else cap

    def set_cwnd(self, cwnd: int, acked: int, delivered: int, mss: int) -> int:
        """``bbr_set_cwnd`` without recovery: the window after an ACK that
        delivered ``acked`` packets (``delivered`` in all), packets."""
        if not acked:
            return cwnd
        target = (
            self.bdp(self.max_bw(), self.cwnd_gain) + self.aggregation_cwnd()
        )
        target = self.quantization_budget(target, mss)
        if self.full_bw_reached:  # only cut once the pipe was filled
            cwnd = min(cwnd + acked, target)
        elif cwnd < target or delivered < INIT_CWND:
            cwnd += acked
        return max(cwnd, CWND_MIN_TARGET)

    def in_net_at_edt(self, in_flight: int, edt_wait: int, mss: int) -> int:
        """``bbr_packets_in_net_at_edt``: packets still in the network
        when the next departure (``edt_wait`` fs from now) leaves."""
        delivered = self.max_bw() * (edt_wait // _US) >> BW_SCALE  # fs -> us
        at_edt = in_flight
        if self.pacing_gain > BBR_UNIT:
            at_edt += self.tso_segs_goal(mss)
        return max(0, at_edt - delivered)

    def set_rate(
        self, bw: int, gain: int, mss: int, srtt_us: int, cwnd: int
    ) -> None:
        """``bbr_set_pacing_rate``: in STARTUP the rate only grows."""
        rate = self.pacing_rate(bw, gain, mss)
        if not self.has_seen_rtt and srtt_us:
            self.init_rate(cwnd, mss, srtt_us)
        if self.full_bw_reached or rate > self.rate:
            self.rate = rate

    # -- events ---------------------------------------------------------------

    def tx_start(
        self, now: int, app_limited: bool, mss: int, srtt_us: int, cwnd: int
    ) -> None:
        """``bbr_cwnd_event(CA_EVENT_TX_START)``: sending into an empty
        flight at ``now`` (fs); restarting from idle begins a new ACK
        aggregation epoch and, in PROBE_BW, paces at the estimate."""
        if not app_limited:
            return
        self.ack_epoch_fs = now
        self.ack_epoch_acked = 0
        if self.mode == PROBE_BW:
            self.set_rate(self.max_bw(), BBR_UNIT, mss, srtt_us, cwnd)

    def on_ack(
        self,
        rs: RateSample,
        delivered: int,
        delivered_fs: int,
        in_flight: int,
        edt_wait: int,
        mss: int,
        srtt_us: int,
        cwnd: int,
    ) -> int:
        """``bbr_main``: update the model from the sample, then the
        pacing rate and the window (times in fs: ``delivered_fs`` of the
        last delivery, ``edt_wait`` until the next departure); returns
        the new window, packets."""
        self._update_bw(rs, delivered)
        self._update_ack_aggregation(rs, delivered_fs, cwnd)
        if self.mode == PROBE_BW and self._next_phase(
            rs, delivered_fs, edt_wait, mss
        ):
            self._advance(delivered_fs)
        self._check_full_bw(rs)
        self._check_drain(in_flight, edt_wait, mss, delivered_fs)
        if rs.rtt_fs >= 0 and (
            self.min_rtt_fs is None or rs.rtt_fs < self.min_rtt_fs
        ):
            self.min_rtt_fs = rs.rtt_fs  # bbr_update_min_rtt (no expiry)
        if self.mode == STARTUP:  # bbr_update_gains
            self.pacing_gain = HIGH_GAIN
        elif self.mode == DRAIN:
            self.pacing_gain = DRAIN_GAIN
        else:
            self.pacing_gain = CYCLE_GAINS[self.cycle_idx]
        self.set_rate(self.max_bw(), self.pacing_gain, mss, srtt_us, cwnd)
        cwnd = self.set_cwnd(cwnd, rs.acked, delivered, mss)
        if self.trace is not None:
            self.trace.append(
                (self.max_bw(), self.rate, self.mode, cwnd, delivered_fs)
            )
        return cwnd

    def _update_bw(self, rs: RateSample, delivered: int) -> None:
        self.round_start = False
        if rs.delivered < 0 or rs.interval_fs <= 0:
            return  # not a valid observation
        if rs.prior_delivered >= self.next_rtt_delivered:  # a round ended
            self.next_rtt_delivered = delivered
            self.rtt_cnt += 1
            self.round_start = True
        bw = (rs.delivered << BW_SCALE) * _US // rs.interval_fs  # per us
        if not rs.is_app_limited or bw >= self.max_bw():
            self.bw.update(BW_RTTS, self.rtt_cnt, bw)

    def _update_ack_aggregation(
        self, rs: RateSample, delivered_fs: int, cwnd: int
    ) -> None:
        """``bbr_update_ack_aggregation``: packets ACKed in this epoch
        beyond what the estimate predicts, the largest per window."""
        if rs.acked <= 0 or rs.delivered < 0 or rs.interval_fs <= 0:
            return
        if self.round_start:
            self.extra_win_rtts = min(0x1F, self.extra_win_rtts + 1)
            if self.extra_win_rtts >= EXTRA_ACKED_WIN_RTTS:
                self.extra_win_rtts = 0
                self.extra_win_idx ^= 1
                self.extra_acked[self.extra_win_idx] = 0
        epoch_us = (delivered_fs - self.ack_epoch_fs) // _US  # fs -> us
        expected = self.max_bw() * epoch_us >> BW_SCALE
        if (
            self.ack_epoch_acked <= expected
            or self.ack_epoch_acked + rs.acked >= ACK_EPOCH_RESET
        ):
            self.ack_epoch_acked = 0
            self.ack_epoch_fs = delivered_fs
            expected = 0
        self.ack_epoch_acked = min(0xFFFFF, self.ack_epoch_acked + rs.acked)
        extra = min(self.ack_epoch_acked - expected, cwnd)
        if extra > self.extra_acked[self.extra_win_idx]:
            self.extra_acked[self.extra_win_idx] = extra

    def _next_phase(
        self, rs: RateSample, delivered_fs: int, edt_wait: int, mss: int
    ) -> bool:
        """``bbr_is_next_cycle_phase``."""
        full = (
            self.min_rtt_fs is not None
            and delivered_fs - self.cycle_fs > self.min_rtt_fs
        )
        gain = self.pacing_gain
        if gain == BBR_UNIT:
            return full
        inflight = self.in_net_at_edt(rs.prior_in_flight, edt_wait, mss)
        bw = self.max_bw()
        if gain > BBR_UNIT:
            return full and inflight >= self.inflight(bw, gain, mss)
        return full or inflight <= self.inflight(bw, BBR_UNIT, mss)

    def _advance(self, delivered_fs: int) -> None:
        self.cycle_idx = (self.cycle_idx + 1) % len(CYCLE_GAINS)
        self.cycle_fs = delivered_fs

    def _check_full_bw(self, rs: RateSample) -> None:
        if self.full_bw_reached or not self.round_start or rs.is_app_limited:
            return
        bw = self.max_bw()
        if bw >= self.full_bw * FULL_BW_THRESH >> 8:
            self.full_bw = bw
            self.full_bw_cnt = 0
            return
        self.full_bw_cnt += 1
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT

    def _check_drain(
        self, in_flight: int, edt_wait: int, mss: int, delivered_fs: int
    ) -> None:
        if self.mode == STARTUP and self.full_bw_reached:
            self.mode = DRAIN
            self.drained_at = self.rtt_cnt
        if self.mode == DRAIN and self.in_net_at_edt(
            in_flight, edt_wait, mss
        ) <= self.inflight(self.max_bw(), BBR_UNIT, mss):
            self.mode = PROBE_BW  # bbr_reset_probe_bw_mode
            self.cycle_idx = (
                len(CYCLE_GAINS) - 1 - self.rng.randrange(CYCLE_RAND)
            )
            self._advance(delivered_fs)

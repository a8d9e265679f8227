"""models.measure.streams.crossings: a small segment and the peer's data in flight at once, the
start of a deadlock when both sockets use Nagle (each end then holds its next small write until
the other's ACK, which only a delayed-ACK timer sends)."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from models import framing
from models.measure.pcap import read_capture
from models.measure.profile import timer_spread
from models.measure.streams import connections, crossings, peer_segments, roles, stream_and_acks
from models.sim import hostprofile, simulate
from models.sim.kernels import get_profile
from models.validation.fidelity import ProfileHost, field_scenario

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
PROFILE = "kernel6_machine3"  # the third machine's calibrate profile
LOOP_MSS = framing.mss(framing.MAX_MTU)  # bytes: the loopback's MSS
TIMER_S = get_profile("linux-6").delack_min_s  # the delayed-ACK timer's floor (TCP_DELACK_MIN)


def segments_after_the_last_stall(
    path_s: float | None = None, timer_spread_s: float = 0.0, ops: int = 400, waker: bool = False
) -> tuple[int, int]:
    """How many data segments the server sent after the last crossing that ended in a
    delayed-ACK timer (all of them if none did), and how many it sent in all, in the simulated
    calibration run of a MSG_MORE
    server (header with MSG_MORE, then the payload: one segment per response, Nagle on), a Nagle
    client, QD 8, 512-byte responses on the loopback, with the third machine's profile (its path
    latency, or ``path_s`` seconds each way; its delayed-ACK timers late by ``timer_spread_s``;
    its waker's cost only with ``waker``)."""
    d = copy.deepcopy(hostprofile.shipped(PROFILE).to_dict())
    if not waker:
        d["host"].pop("waker_curve_s", None)
    if path_s is not None:
        d["host"]["tx_latency_s"] = d["host"]["rx_latency_s"] = path_s
    d["host"]["timer_spread_s"] = timer_spread_s
    row = dict(
        link="loopback", mtu_bytes=framing.MAX_MTU, rate_limit_bits_per_s=None, cc="bbr",
        sock_mode="more", client_sock_mode="nagle", qd=8, iosize_bytes=512,
    )  # fmt: skip
    hz = d["machine"]["config_hz"]  # the profile's machine's timer rate
    sc = field_scenario("iscsi_loop", row, ProfileHost(hostprofile.load(d)), hz)
    r = simulate(sc.replace(run={"trace": True, "trace_at": "server", "ops": ops}))
    sent = [(t.time, t.seq, t.end) for t in r.trace if t.direction == "S > C" and t.length]
    peer = [(t.time, t.ack, t.length > 0) for t in r.trace if t.direction == "C > S"]
    stalls = [t for t, wait in crossings(sent, peer, LOOP_MSS) if wait >= TIMER_S]
    return sum(1 for t, _, _ in sent if not stalls or t > stalls[-1]), len(sent)


def left_for_good(after_and_all: tuple[int, int]) -> bool:
    """Whether the run left its deadlock early and for good: at least nine in ten of its data
    segments came after its last delayed-ACK stall (a stall-free run: all of them)."""
    after, total = after_and_all
    return total > 100 and after >= 0.9 * total


def test_a_strict_alternation_has_no_crossing_and_a_crossing_is_found():
    # server data, each acknowledged by the client's next request: nothing crosses
    sent = [(0.0, 0, 560), (2e-5, 560, 1120)]
    peer = [(1e-5, 560, True), (3e-5, 1120, True)]
    assert crossings(sent, peer, small=1448) == []
    # the client's request leaves before the second response arrives: a crossing, ended by the
    # client's delayed ACK
    peer = [(1e-5, 560, True), (2.1e-5, 560, True), (0.041, 1120, False)]
    [(t, wait)] = crossings(sent, peer, small=1448)
    assert t == 2e-5 and wait == pytest.approx(0.041 - 2e-5)
    # a full segment is never held by Nagle: it is not counted
    assert crossings([(0.0, 0, 1448)], [(1e-6, 0, True)], small=1448) == []
    # never acknowledged: an infinite wait
    assert crossings([(0.0, 0, 10)], [(1e-6, 0, True)], small=1448) == [(0.0, math.inf)]


def test_a_capture_with_a_nodelay_client_crosses_without_a_stall():
    # the bundled loopback capture (MSG_MORE server, NODELAY client, QD 4): the client's
    # requests do cross the server's small tails, and each crossing ends at the client's next
    # segment, microseconds later, since a NODELAY client never holds its requests
    cap = read_capture(CAPTURES / "lo_more_qd4_4096.pcap")
    segs = max(connections(cap.segments).values(), key=len)
    client, server = roles(segs, None)
    sent, _ = stream_and_acks(segs, server, client)
    found = crossings(sent, peer_segments(segs, server, client), LOOP_MSS)
    assert found and all(w < 1e-3 for _, w in found)


def test_the_simulated_calibration_run_leaves_its_start_up_deadlock():
    # with the profile as it is (its path, its timers' spread, its waker's cost) the simulated
    # loop settles into the alternation at once or after its first few timer periods, for good
    p = hostprofile.shipped(PROFILE)
    assert left_for_good(segments_after_the_last_stall(None, p.host["timer_spread_s"], waker=True))


def test_with_the_measured_path_the_timers_spread_ends_the_deadlock():
    # the profile's path (0.75 us each way, half the kernel's smallest round trip of 3 us) lets
    # a request cross a response.  With both ends' delayed-ACK timers on time they fire on the
    # same tick at the same instant, their pure ACKs release both ends' held data at once and the
    # data cross again: the deadlock returns every timer period (the wrong model).  Late by the
    # machine's measured spread of wake-ups after a long idle, one end's ACK arrives first, its
    # peer answers with data that acknowledge, and the two ends alternate from then on.
    p = hostprofile.shipped(PROFILE)
    assert p.host["tx_latency_s"] == p.host["rx_latency_s"] == 0.75e-6
    spread = timer_spread(p.records["measured"]["wake"])
    assert spread > 10 * 2 * 0.75e-6  # much longer than the path's one way
    assert left_for_good(segments_after_the_last_stall(None, spread))
    assert segments_after_the_last_stall(None, 0.0)[0] < 10
    # the profile's measured waker's cost breaks the two ends' symmetry as well (each end's
    # send() pays for its peer's idle, which differ)
    assert left_for_good(segments_after_the_last_stall(None, 0.0, waker=True))

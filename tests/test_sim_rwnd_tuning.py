"""The receive buffer's autotuning (models.sim.rules.rwnd, tcp_rcv_space_adjust as Linux 6.18 does
it) and the kernel profile that has it (linux-6.18-rwnd): the arithmetic, when it runs, and what a
whole run does with it."""

from __future__ import annotations

import pytest

from models.sim import PROFILES, Scenario, simulate
from models.sim.engine import Simulation
from models.sim.rules.rwnd import ReceiveSpace, window_scale

US = 10**9  # fs per microsecond


class _Rcv:
    """A receiver's three numbers (bytes)."""

    def __init__(self, advmss: int = 1448) -> None:
        self.advmss = advmss
        self.rcv_nxt = 1
        self.copied_seq = 1


def _tuned(cap: int = 32 * 2**20) -> tuple[_Rcv, ReceiveSpace]:
    rcv = _Rcv()
    return rcv, ReceiveSpace(rcv, buf_bytes=131072, overhead_bytes=0, buf_max_bytes=cap)


def _arrive(rcv: _Rcv, rs: ReceiveSpace, now: int, length: int) -> None:
    rcv.rcv_nxt += length
    rs.arrived(now)
    rs.received(length)


def test_the_first_space_is_ten_segments_and_the_buffer_waits_for_an_rtt_sample():
    rcv, rs = _tuned()
    assert rs.space == 10 * 1448 and rs.buf == 131072 and rs.rtt == 0
    _arrive(rcv, rs, 5 * US, 40000)  # starts the RTT measurement: no sample yet
    rcv.copied_seq = rcv.rcv_nxt
    rs.read(2000 * US)  # 40000 bytes read, more than space, but no RTT to measure against
    assert rs.buf == 131072 and rs.space == 10 * 1448


def test_a_window_of_data_gives_the_rtt_and_the_first_read_after_it_grows_the_buffer():
    """The numbers worked by hand from tcp_rcvbuf_grow (ratio 128 before any rcv_mss measure):
    rcvwin = 2 * 40000 + 2 * (80000 * (40000 - 14480) // 14480) = 361988 bytes of window,
    twice that in buffer."""
    rcv, rs = _tuned()
    _arrive(rcv, rs, 0, 1000)  # starts the measurement: one advertised window (65160) to go
    _arrive(rcv, rs, 300 * US, 39000)
    assert rs.rtt == 0  # 40000 bytes: not yet a window
    _arrive(rcv, rs, 500 * US, 30000)
    assert rs.rtt == 500 * US
    rcv.copied_seq = 1 + 40000  # the application has read 40000 bytes, 30000 still queued
    rs.read(499 * US)  # within an RTT of the start: nothing
    assert rs.buf == 131072
    rcv.copied_seq = rcv.rcv_nxt  # everything read
    rs.read(600 * US)
    assert rs.space == 70000
    rcvwin = 2 * 70000 + 2 * (140000 * (70000 - 14480) // 14480)
    assert rs.buf == rcvwin * 256 // 128 and rs.clamp == rs.full == rcvwin


def test_bytes_still_queued_do_not_count_as_copied():
    rcv, rs = _tuned()
    rs.rtt = 100 * US
    rcv.rcv_nxt += 30000
    rcv.copied_seq += 20000  # read 20000, 10000 queued: 10000 counted, under space
    rs.read(200 * US)
    assert rs.buf == 131072 and rs.space == 10 * 1448


def test_a_slow_reader_keeps_its_buffer_and_the_growth_stops_at_tcp_rmem_2():
    rcv, rs = _tuned()
    rs.rtt = 1000 * US
    for k in range(1, 50):  # 4096 bytes an RTT: never more than space
        rcv.rcv_nxt += 4096
        rcv.copied_seq = rcv.rcv_nxt
        rs.read(k * 1000 * US)
    assert rs.buf == 131072
    rcv2, capped = _tuned(cap=262144)
    capped.rtt = 1000 * US
    rcv2.rcv_nxt += 200000
    rcv2.copied_seq = rcv2.rcv_nxt
    capped.read(2000 * US)
    assert capped.buf == 262144


def test_a_smaller_rtt_sample_replaces_a_larger_one_not_the_other_way():
    rcv, rs = _tuned()
    _arrive(rcv, rs, 0, 1)
    _arrive(rcv, rs, 800 * US, 65160)
    assert rs.rtt == 800 * US
    _arrive(rcv, rs, 900 * US, 65160 + 10)  # a window on in 100 us
    assert rs.rtt == 100 * US
    _arrive(rcv, rs, 5000 * US, 70000)  # slower: kept at the minimum
    assert rs.rtt == 100 * US


def test_a_fixed_window_clamp_turns_autotuning_off():
    rs = ReceiveSpace(
        _Rcv(), buf_bytes=131072, overhead_bytes=0, clamp_bytes=20000, buf_max_bytes=2**25
    )
    assert rs.cap is None


@pytest.mark.parametrize("cap", [131071, 0])
def test_a_cap_below_the_buffer_names_the_parameter(cap):
    with pytest.raises(ValueError, match="buf_max_bytes"):
        ReceiveSpace(_Rcv(), buf_bytes=131072, overhead_bytes=0, buf_max_bytes=cap)


def test_a_profiles_cap_below_its_buffer_names_the_field():
    import dataclasses

    with pytest.raises(ValueError, match="rcv_buf_max_bytes"):
        dataclasses.replace(PROFILES["linux-6.18-rwnd"], rcv_buf_max_bytes=4096)
    with pytest.raises(ValueError, match="rcv_buf_max_bytes"):
        dataclasses.replace(PROFILES["linux-6"], rcv_buf_max_bytes=2**25)  # no buffer to tune


def test_the_618_profile_is_the_window_profile_with_618s_defaults():
    p, base = PROFILES["linux-6.18-rwnd"], PROFILES["linux-6-rwnd"]
    assert p.rcv_buf_bytes == base.rcv_buf_bytes == 131072
    assert p.rcv_buf_max_bytes == 32 * 2**20 and p.rcv_wscale == window_scale(32 * 2**20) == 10
    assert base.rcv_buf_max_bytes is None


def _fast(ops: int = 1500, kernel: str = "linux-6.18-rwnd") -> Scenario:
    """NODELAY both ends, QD 8, two-segment responses: megabytes read per second."""
    return Scenario(
        workload={"qd": 8, "response_writes": (48, 2048)},
        link={"mtu": 1500, "bandwidth_bps": 1e12, "latency_s": 2e-6},
        client={"nodelay": True, "proc_s": 2e-6},
        server={"nodelay": True, "proc_s": 4e-6},
        kernel={"profile": kernel},
        run={"ops": ops},
    )


def _client_buf(sc: Scenario) -> tuple[int, float]:
    sim = Simulation(sc)
    r = sim.run()
    return sim.client_ep.ack.space.buf, r.iops


def test_a_fast_run_grows_the_clients_buffer_to_megabytes_and_a_stalled_one_does_not():
    """As ss read on the fifth machine (data/kernel6_machine5_rcvbuf_ss.csv): megabytes within
    milliseconds of a fast run's start; a run stalled on the delayed ACK reads a response per
    40 ms and keeps tcp_rmem[1].  Wrong model: linux-6-rwnd keeps tcp_rmem[1] in both."""
    buf, _ = _client_buf(_fast())
    assert buf > 10 * 131072
    stalled, iops = _client_buf(Scenario(kernel={"profile": "linux-6.18-rwnd"}, run={"ops": 30}))
    assert iops < 100 and stalled == 131072  # the delayed-ACK stall of chapter 4
    assert _client_buf(_fast().replace(kernel={"profile": "linux-6-rwnd"}))[0] == 131072


def test_the_fast_forward_is_exact_with_autotuning(monkeypatch):
    """Capped at 256 KiB the buffer stops growing and the run repeats: the fast-forward jumps and
    gives the event-by-event numbers; uncapped (32 MiB) it finds no repeat and both agree too."""
    import dataclasses

    capped = dataclasses.replace(
        PROFILES["linux-6.18-rwnd"], name="linux-6.18-rwnd-256k", rcv_buf_max_bytes=262144
    )
    monkeypatch.setitem(PROFILES, capped.name, capped)  # (gone after the test)
    for sc, jumps in ((_fast(20000, capped.name), True), (_fast(3000), False)):
        fast, slow = simulate(sc), simulate(sc.replace(run={"fast_forward": False}))
        assert (fast.skipped_ops > 0) == jumps, fast.fast_forward_off_reason
        assert fast.iops == slow.iops and fast.pure_acks == slow.pure_acks
        assert fast.directions == slow.directions


def test_every_packetdrill_script_passes_with_autotuning():
    """linux-6.18-rwnd passes every script, as linux-6-rwnd does (their connections carry a few
    segments each, far from a window's worth in a receive RTT)."""
    from models.sim.packetdrill import SCRIPTS_DIR, run_file

    scripts = sorted(SCRIPTS_DIR.glob("*.pkt"))
    assert scripts and not [p.name for p in scripts if not run_file(p, "linux-6.18-rwnd").passed]

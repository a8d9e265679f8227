"""The receive window's test of two full segments (models.sim.rules.rwnd) and the kernel profile
that has it (linux-6-rwnd): unit behaviour, Linux's own scripts, and the field's ACK counts."""

from __future__ import annotations

import functools

import pytest

from models.sim import PROFILES, Scenario, simulate
from models.sim.packetdrill import SCRIPTS_DIR, run_file
from models.sim.rules.rwnd import ReceiveSpace


class _Rcv:
    """A receiver's three numbers (bytes)."""

    def __init__(self, advmss: int = 1448) -> None:
        self.advmss = advmss
        self.rcv_nxt = 1
        self.copied_seq = 1


def test_unread_data_shrink_the_window_and_the_read_restores_it():
    rcv = _Rcv()
    rs = ReceiveSpace(rcv, buf_bytes=131072, overhead_bytes=896)
    rs.measured(4144)  # a 4 KiB response in one packet sets the ratio: room to grow
    grew = []
    for _ in range(20):  # responses that each arrive into an empty queue, then are read
        rcv.rcv_nxt += 4144
        grew.append(rs.received(4144))
        assert rs.grows(1448)  # the window never shrinks: ACK at once
        rs.advertise(rcv_wup=rcv.copied_seq, rcv_mss=1448)
        rcv.copied_seq = rcv.rcv_nxt
    assert grew[0] and not grew[-1]  # ssthresh rose to what one unread response leaves
    rcv.rcv_nxt += 4144
    assert rs.grows(1448)
    rcv.rcv_nxt += 4144  # a second response before the read: the window would shrink
    assert not rs.grows(1448)
    rcv.copied_seq = rcv.rcv_nxt
    assert rs.grows(1448)


def _flory_response(rcv: _Rcv, rs: ReceiveSpace) -> bool:
    """One Flory response arrives, an 8-byte descriptor and a full segment, neither read; returns
    whether the window test lets the ACK of the two leave at once.  The client then reads both and
    its next request advertises the window."""
    for length in (8, 1448):
        rcv.rcv_nxt += length
        rs.received(length)
    at_once = rs.grows(1448)
    rcv.copied_seq = rcv.rcv_nxt
    rs.advertise(rcv_wup=rcv.rcv_nxt, rcv_mss=1448)
    return at_once


def test_a_responses_unread_packets_each_keep_their_overhead():
    """The descriptor and the full segment are two packets, each with its overhead (the receive
    queue does not merge into a packet the sender still shares): 8 + 1448 bytes in two packets
    leave less window than the same bytes in one.  Wrong model: one overhead for all unread data."""
    rcv = _Rcv()
    rs = ReceiveSpace(rcv, buf_bytes=131072, overhead_bytes=896)
    rs.measured(1448)
    for length in (8, 1448):
        rcv.rcv_nxt += length
        rs.received(length)
    assert rs.packets == 2
    two = rs._free()
    rs.packets = 1
    one = rs._free()
    assert one - two == 896 * rs.ratio // 256
    rcv.copied_seq = rcv.rcv_nxt  # read: nothing is unread, the count starts again
    rcv.rcv_nxt += 1448
    rs.received(1448)
    assert rs.packets == 1 and rs._free() == rs.full - (1448 + 896) * rs.ratio // 256


def test_the_threshold_keeps_the_high_water_mark_so_a_flory_acks_waits_for_the_read():
    """Every full segment arrives behind its unread descriptor, yet rcv_ssthresh grows to what the
    segment alone would leave (the mark some arrival of a long run reaches), so two unread
    packets shrink the window and the ACK waits for the read, as the kernel's client does at
    Flory's 1449 bytes on a veth pair.  Wrong model: growth to the free space at each arrival
    stops where the two packets leave it, and the ACK leaves at once."""
    rcv = _Rcv()
    rs = ReceiveSpace(rcv, buf_bytes=131072, overhead_bytes=896)
    rs.measured(1448)
    waits = [not _flory_response(rcv, rs) for _ in range(40)]
    assert rs.ssthresh == min(rs.clamp, rs.full - (1448 + 896) * rs.ratio // 256)
    assert all(waits[-10:])

    class Moment(ReceiveSpace):
        """ssthresh grown to the free space at the moment of each arrival."""

        def received(self, length: int) -> bool:
            before = self.ssthresh
            grew = super().received(length)
            if grew:
                room = min(self.clamp, self._free()) - before
                self.ssthresh = before + max(0, min(room, max(2 * self.advmss, 2 * length)))
            return grew

    rcv2 = _Rcv()
    moment = Moment(rcv2, buf_bytes=131072, overhead_bytes=896)
    moment.measured(1448)
    late = [not _flory_response(rcv2, moment) for _ in range(40)]
    assert not any(late[-10:])


def test_the_windows_sizes_follow_the_kernel():
    rs = ReceiveSpace(_Rcv(), buf_bytes=131072, overhead_bytes=896)
    # tcp_select_initial_window: 45 segments; tcp_init_buffer_space: one segment reserved
    assert (rs.wnd, rs.clamp, rs.ssthresh) == (65160, 65536 - 1448, 65536 - 1448)
    rs.measured(560)  # a small first packet: a low ratio, the clamp and ssthresh follow down
    assert rs.ratio == 98 and rs.clamp == rs.ssthresh == 131072 * 98 // 256
    fixed = ReceiveSpace(_Rcv(), buf_bytes=131072, overhead_bytes=896, clamp_bytes=20000)
    fixed.measured(4144)
    assert fixed.clamp == 20000 and fixed.wnd == 20000 - 20000 % 1448


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"buf_bytes": 0, "overhead_bytes": 0}, "buf_bytes"),
        ({"buf_bytes": 1000, "overhead_bytes": -1}, "overhead_bytes"),
        ({"buf_bytes": 1000, "overhead_bytes": 0, "clamp_bytes": 0}, "clamp_bytes"),
    ],
)
def test_bad_sizes_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ReceiveSpace(_Rcv(), **kwargs)


@pytest.mark.parametrize(
    "field, value",
    [
        ("rcv_buf_bytes", 0),
        ("rcv_overhead_bytes", -1),
        ("rcv_window_clamp_bytes", 1.5),
        ("rcv_wscale", 15),
    ],
)
def test_a_profiles_bad_window_sizes_name_the_field(field, value):
    import dataclasses

    with pytest.raises(ValueError, match=field):
        dataclasses.replace(PROFILES["linux-6-rwnd"], **{field: value})


def test_every_script_passes_with_the_window_and_the_window_script_needs_it():
    """Wrong model: linux-6 (no window test) fails window_edge_ack.pkt; linux-6-rwnd passes every
    script, that one included."""
    scripts = sorted(SCRIPTS_DIR.glob("*.pkt"))
    failing = [p.name for p in scripts if not run_file(p, "linux-6-rwnd").passed]
    assert failing == []
    assert not run_file(SCRIPTS_DIR / "window_edge_ack.pkt", "linux-6").passed


def test_the_window_profile_is_linux_6_with_a_buffer():
    on, off = PROFILES["linux-6-rwnd"], PROFILES["linux-6"]
    assert off.rcv_buf_bytes is None and on.rcv_buf_bytes == 131072
    assert {f: getattr(on, f) for f in ("hz", "ack", "nagle", "cork")} == {
        f: getattr(off, f) for f in ("hz", "ack", "nagle", "cork")
    }


def _deep_veth(kernel: str) -> Scenario:
    """Two-segment responses at QD 8: the client's reads often find more than one."""
    return Scenario(
        workload={"qd": 8, "response_writes": (48, 2048)},
        link={"mtu": 1500, "bandwidth_bps": 1e12, "latency_s": 2e-6},
        client={"nodelay": True, "proc_s": 2e-6},
        server={"nodelay": True, "msg_more": True, "proc_s": 2e-6},
        kernel={"profile": kernel},
        run={"ops": 3000},
    )


def test_with_the_window_acks_wait_for_the_read():
    """Wrong model: without the window test (linux-6) the client ACKs every second full segment
    as it arrives, about three in four operations here; with it, far fewer."""

    def acks(kernel: str) -> float:
        r = simulate(_deep_veth(kernel))
        return r.pure_acks["C>S"] / r.completed_total

    assert acks("linux-6") > 0.7
    assert acks("linux-6-rwnd") < 0.5 * acks("linux-6")


def test_the_fast_forward_is_exact_with_the_window():
    sc = _deep_veth("linux-6-rwnd")
    fast, slow = simulate(sc), simulate(sc.replace(run={"fast_forward": False}))
    assert fast.skipped_ops > 0
    assert fast.iops == slow.iops and fast.pure_acks == slow.pure_acks


@functools.cache
def _field_groups():
    """The field sweep's test rows of two groups (veth-1500, NODELAY client, QD 2 and more, no
    stall): MSG_MORE + NODELAY servers and Nagle servers, simulated on both kernel profiles."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import acks as A
    from models.validation import fidelity as F

    run = load_kernel_run(prefix=F.FIELD_PREFIX)
    isc = run.table("iscsi_loop")
    pick = isc[
        (isc["link"] == "veth-1500")
        & (isc["client_sock_mode"] == "nodelay")
        & isc["sock_mode"].isin(["more_nodelay", "nagle"])
        & isc["rate_limit_bits_per_s"].isna()
        & (isc["qd"] >= 2)
    ]
    host = F.ProfileHost(hostprofile.shipped())
    out = {}
    for kernel in A.KERNELS:
        make = functools.partial(
            F.row_summary, functools.partial(F._on_kernel, kernel), "iscsi_loop", host, run.hz
        )
        out[kernel] = A.ack_rows(F.simulated(pick, make, processes=1))
    return out


def test_the_window_test_halves_the_acks_of_deferred_responses_and_of_nagle_servers():
    """The recorded finding (chapter 9, "Which ACKs wait"): with the window test the simulated
    client's count moves toward the kernel's where the kernel's client falls behind (MSG_MORE +
    NODELAY servers), and away from it for Nagle servers, where the simulated client's request
    carries the ACK that the kernel's client sends alone at its read."""
    groups = _field_groups()
    med = {
        (k, mode): t[t["sock_mode"] == mode][
            ["client_pure_acks_per_op", "sim_client_acks"]
        ].median()
        for k, t in groups.items()
        for mode in ("more_nodelay", "nagle")
    }

    def gap(k, mode):
        m = med[(k, mode)]
        return abs(m["sim_client_acks"] - m["client_pure_acks_per_op"])

    assert gap("linux-6-rwnd", "more_nodelay") < gap("linux-6", "more_nodelay")
    assert gap("linux-6-rwnd", "nagle") > gap("linux-6", "nagle")
    assert med[("linux-6", "nagle")]["client_pure_acks_per_op"] > 0.8  # about one per operation
    assert med[("linux-6-rwnd", "nagle")]["sim_client_acks"] < 0.75

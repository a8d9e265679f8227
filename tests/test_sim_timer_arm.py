"""``Host.timer_arm_cpu_s`` and ``Host.timer_fire_cpu_s``: arming bbr's pacing timer costs the CPU
that arms it (the clock event is reprogrammed; on a virtual machine that traps to the hypervisor:
6.0 us against 0.39 us for a timer that does not become the CPU's next event, timerfd on the third
machine), and its interrupt costs the CPU it fires on (12.5 us there); the pacing check comes
before Nagle, as in ``tcp_write_xmit``."""

from __future__ import annotations

import pytest

from models.sim import hostprofile
from models.sim.engine import Simulation
from models.sim.rules.bbr import Bbr
from models.validation.fidelity import ProfileHost, field_scenario

US = 1e-6  # seconds per microsecond
FS_PER_US = 10**9  # femtoseconds per microsecond


class _Timer:
    def __init__(self) -> None:
        self.entry = None
        self.armed = []

    def arm(self, t: int) -> None:
        self.entry = object()
        self.armed.append(t)


class _Sender:
    def __init__(self, in_send: bool) -> None:
        self.in_send = in_send
        self.thread_cpu = 0
        self.soft_cpu = 0


@pytest.mark.parametrize("in_send", [True, False])
def test_arming_the_pacing_timer_charges_the_context_that_arms_it(in_send):
    cc = Bbr(10, 1448, None)
    cc.timer = _Timer()
    cc.timer_arm_fs = 6 * FS_PER_US
    cc.wstamp = 100 * FS_PER_US  # the next departure is ahead: pacing holds the data
    s = _Sender(in_send)
    assert cc.paced(s, 10 * FS_PER_US)
    paid = s.thread_cpu if in_send else s.soft_cpu
    other = s.soft_cpu if in_send else s.thread_cpu
    assert paid == 6 * FS_PER_US and other == 0 and cc.timer_arms == 1
    # the timer is pending: checking again arms nothing and charges nothing
    assert cc.paced(s, 20 * FS_PER_US)
    assert cc.timer_arms == 1 and s.thread_cpu + s.soft_cpu == 6 * FS_PER_US


def test_without_the_cost_nothing_is_charged():
    cc = Bbr(10, 1448, None)
    cc.timer = _Timer()
    cc.wstamp = 100 * FS_PER_US
    s = _Sender(True)
    assert cc.paced(s, 0)
    assert cc.timer_arms == 1 and s.thread_cpu == 0 and s.soft_cpu == 0


def _run(cc: str, arm_s: float, path_s: float = 1e-6, fast_forward: bool = True):
    """The third machine's profile, a Nagle server, NODELAY client, QD 8, 16 KiB on veth-1500,
    with a path long enough that bbr's pacing holds data."""
    p = hostprofile.shipped("kernel6_machine3")
    row = dict(
        link="veth-1500", mtu_bytes=1500, rate_limit_bits_per_s=None, cc=cc,
        sock_mode="nagle", client_sock_mode="nodelay", qd=8, iosize_bytes=16384,
    )  # fmt: skip
    h = {"timer_arm_cpu_s": arm_s, "tx_latency_s": path_s, "rx_latency_s": path_s}
    sc = field_scenario("iscsi_loop", row, ProfileHost(p), 250)
    sim = Simulation(
        sc.replace(server=h, client=h, run={"ops": 3000, "fast_forward": fast_forward})
    )
    return sim, sim.run()


def test_the_server_pays_each_arm_and_reno_never_arms():
    sim0, r0 = _run("bbr", 0.0)
    sim1, r1 = _run("bbr", 5.6 * US)
    arms = sim1.server_ep.sender.cc.timer_arms
    assert sim0.server_ep.sender.cc.timer_arms > 100 and arms > 100  # pacing holds data
    # the server's CPU carries the arms: more busy per operation than without them
    per_op = [r.hosts["server"].cpu_utilization / r.iops for r in (r0, r1)]
    assert per_op[1] > per_op[0]
    # reno has no pacing timer: the cost changes nothing
    _, a = _run("reno", 0.0)
    _, b = _run("reno", 5.6 * US)
    assert a.iops == b.iops and a.rtt_mean_s == b.rtt_mean_s


def test_the_fast_forward_stays_exact_with_the_costs(monkeypatch):
    # the pacing sweep's veth-1500, 64 KiB, QD 8 Nagle-server run on the book's profile with
    # both timer costs: its pacing timer is armed about every other operation and the run
    # repeats exactly (its rate samples' times exact, so that it can repeat on any phase of the
    # microsecond), so the fast-forward skips most of it; the arms it skipped are counted as if
    # run
    monkeypatch.setattr(Bbr, "stamp_fs", 1)
    from models.kernel import load_kernel_run
    from models.validation import fidelity as FID

    run = load_kernel_run(prefix=FID.PACING_PREFIX)
    t = run.table("iscsi_loop")
    pick = (t.link == "veth-1500") & (t.sock_mode == "nagle") & (t.cc == "bbr")
    row = t[pick & (t.qd == 8) & (t.iosize_bytes == 65536)].iloc[0].to_dict()
    # (no late wake-ups: their random draws rule the fast-forward out)
    h = {"wake_late_share": 0.0, "timer_arm_cpu_s": 5.6 * US, "timer_fire_cpu_s": 12.5 * US}
    sc = field_scenario("iscsi_loop", row, ProfileHost(hostprofile.shipped()), run.hz)
    sc = sc.replace(server=h, client=h, run={"ops": 3000})
    fast, slow = Simulation(sc), Simulation(sc.replace(run={"ops": 3000, "fast_forward": False}))
    rf, rs = fast.run(), slow.run()
    assert rf.skipped_ops > 2000
    assert rf.rtts_s == rs.rtts_s and rf.directions == rs.directions
    arms = [s.server_ep.sender.cc.timer_arms for s in (fast, slow)]
    assert arms[0] == arms[1] > 1000
    socs = [r.hosts["server"].softirq_utilization for r in (rf, rs)]
    assert socs[0] == pytest.approx(socs[1], rel=1e-9)


def _bbr_server(fire_us: float = 0.0):
    """A simulation (not run) whose server socket runs bbr with Nagle on, MSS 1448, 64 KiB
    buffers, paced (past its first ten segments), and the pacing timer's fire cost
    ``fire_us``."""
    from models.sim import Scenario

    sc = Scenario(
        kernel={"congestion_control": "bbr", "size_goal": 65536, "autocork": False},
        server={"timer_fire_cpu_s": fire_us * US},
        link={"mtu": 1500},
    )
    sim = Simulation(sc)
    tx = sim.server_ep.sender
    tx.cc.segs_out = 10  # pacing applies from the tenth segment on
    return sim, tx


def test_the_pacing_check_comes_before_nagle():
    # tcp_write_xmit asks tcp_pacing_check before the windows and Nagle: a write that Nagle
    # holds (a small segment is unacknowledged) still arms the pacing timer when the next
    # departure is ahead; checked after Nagle, it would not
    _, tx = _bbr_server()
    now = 1000 * FS_PER_US
    tx.write(now, 3000, False)  # nothing in flight: all of it leaves, its tail a small segment
    assert tx.snd_nxt == 3001 and tx.cc.wstamp > now and tx.cc.timer_arms == 0
    tx.write(now, 100, False)
    assert tx.snd_nxt == 3001 and tx.cc.timer_arms == 1
    # the timer fires: Nagle still holds the 100 bytes, and nothing arms it again
    expires = tx.cc.timer.entry[0]
    tx.cc.timer.entry = None
    tx.cc._on_pace(expires, None)
    assert tx.snd_nxt == 3001 and tx.cc.timer_arms == 1 and tx.cc.timer.entry is None


def test_the_timer_fires_after_its_interrupt_and_charges_it():
    (_, tx0), (_, tx1) = _bbr_server(0.0), _bbr_server(12.5)
    now = 1000 * FS_PER_US
    for tx in (tx0, tx1):
        tx.write(now, 3000, False)
        tx.write(now, 100, False)
    t0, t1 = tx0.cc.timer.entry[0], tx1.cc.timer.entry[0]
    assert t0 == tx0.cc.wstamp
    assert t1 - t0 == 12_500_000_000  # 12.5 us later: the release runs after the interrupt
    for tx, t in ((tx0, t0), (tx1, t1)):
        tx.cc.timer.entry = None
        tx.cc._on_pace(t, None)
    assert tx0.soft_cpu_fs == 0
    assert tx1.soft_cpu_fs == 12_500_000_000  # charged to the soft interrupt, once


def _apart_server(fire_us: float):
    """:func:`_bbr_server`'s socket with both ends on one machine, a CPU each (the harness's
    ``--pin apart``): each frame's receive soft interrupt runs on its sender's CPU."""
    from models.sim import Scenario

    sc = Scenario(
        kernel={"congestion_control": "bbr", "size_goal": 65536, "autocork": False},
        server={"timer_fire_cpu_s": fire_us * US},
        link={"mtu": 1500, "softirq_on_sender": True},
    )
    sim = Simulation(sc)
    tx = sim.server_ep.sender
    tx.cc.segs_out = 10
    return sim, tx


def test_a_timer_the_thread_armed_does_its_work_on_the_threads_cpu():
    # the pacing timer is pinned (HRTIMER_MODE_ABS_PINNED_SOFT) to the CPU that armed it: armed
    # in the server's send(), its interrupt and the push it allows take the server's CPU, which
    # the server's next work waits for, not the CPU of the soft interrupt that receives the
    # client's frames (the client's, on one machine)
    sim, tx = _apart_server(12.5)
    assert tx.ep.own_cpu is sim.server.cpu is sim.s2c.cpu
    assert sim.client.cpu is sim.c2s.cpu is not sim.server.cpu
    now = 1000 * FS_PER_US
    tx.write(now, 3000, False)
    tx.write(now, 100, False)  # held by pacing: the send() arms the timer
    assert tx.cc.timer_arms == 1 and tx.cc.pinned_own
    fire = tx.cc.timer.entry[0]
    client_free = list(sim.client.cpu.free_at)
    tx.cc.timer.entry = None
    tx.cc._on_pace(fire, None)
    assert sim.client.cpu.free_at == client_free  # nothing on the client's CPU
    assert sim.server.cpu.free_at[0] >= fire + 12_500_000_000
    assert sim.c2s.softirq_busy == 12_500_000_000  # still counted as soft-interrupt time
    assert tx.soft_cpu_fs == 12_500_000_000


def test_a_timer_armed_in_a_soft_interrupt_does_its_work_there():
    # armed outside a send() (an ACK's push, received on the client's CPU on one machine), the
    # timer fires on that CPU
    sim, tx = _apart_server(12.5)
    now = 1000 * FS_PER_US
    tx.write(now, 3000, False)
    assert tx.cc.wstamp > now and not tx.in_send
    assert tx.cc.paced(tx, now) and not tx.cc.pinned_own
    fire = tx.cc.timer.entry[0]
    server_free = list(sim.server.cpu.free_at)
    tx.cc.timer.entry = None
    tx.cc._on_pace(fire, None)
    assert sim.server.cpu.free_at == server_free
    assert sim.client.cpu.free_at[0] >= fire + 12_500_000_000


def test_on_two_machines_a_timer_has_no_threads_cpu_to_pin_to():
    sim, tx = _bbr_server(12.5)
    assert tx.ep.own_cpu is None and sim.client_ep.own_cpu is None


def test_the_pacing_clock_counts_whole_nanoseconds():
    """The kernel keeps the next departure and the clock it checks it against in whole nanoseconds
    (``tcp_wstamp_ns``, ``tcp_clock_cache``): a departure less than a nanosecond ahead is not
    ahead, and a buffer moves the departure on by its length over the rate in whole nanoseconds
    (``tcp_update_skb_after_send``'s division)."""
    from models.sim.rules.bbr import NS_FS

    cc = Bbr(10, 1448, None)
    cc.timer = _Timer()
    now = 50 * FS_PER_US
    cc.wstamp = now + NS_FS // 5  # 0.2 ns ahead: the same nanosecond
    assert not cc.paced(_Sender(True), now)
    cc.wstamp = now + NS_FS  # a whole nanosecond ahead: paced
    assert cc.paced(_Sender(True), now) and cc.timer_arms == 1


def test_a_buffer_moves_the_departure_on_by_whole_nanoseconds():
    from models.sim.rules.bbr import NS_FS

    cc = Bbr(10, 1448, None)
    cc.segs_out = 10  # past the first ten segments, which are not paced
    cc.model.rate = 3 * 10**9  # bytes/s
    tx = _Sender(True)
    tx.snd_una = tx.snd_nxt = 1
    now = 7 * FS_PER_US
    cc.wstamp = now  # the last departure was due now: no credit
    cc.sent(tx, now, 1, 1 + 2000, 2)
    # 2000 B at 3 GB/s is 666.67 ns: the kernel's division gives 666 ns
    assert cc.wstamp == now + 666 * NS_FS

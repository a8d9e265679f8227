"""``Host.pacing_arm_waits``: a ``send()`` that arms bbr's pacing timer stays in the call, its CPU
held, until the timer fires.  Traced on the seventh machine (``tools/pacing_wait_trace.py``): a
Nagle server's 16 KiB ``send()`` armed the timer about 2 us into the call for an expiry about
1 us ahead, and returned only after the timer's soft interrupt had run, some 36 us in all,
where the same call without the timer took 1-3 us."""

from __future__ import annotations

import pytest

from models.sim import hostprofile, simulate
from models.sim.engine import Simulation
from models.sim.rules.bbr import Bbr
from models.validation import fidelity as FID
from models.validation import machine7 as M7

FS_PER_US = 10**9  # femtoseconds per microsecond


class _Timer:
    def __init__(self) -> None:
        self.entry = None
        self.expires = -1

    def arm(self, t: int) -> None:
        self.entry = object()
        self.expires = t


class _Loop:
    now = 10 * FS_PER_US  # the call began here


class _Sender:
    def __init__(self, in_send: bool, cpu_so_far_us: int) -> None:
        self.in_send = in_send
        self.thread_cpu = cpu_so_far_us * FS_PER_US
        self.soft_cpu = 0
        self.loop = _Loop()


def _bbr(waits: bool) -> Bbr:
    cc = Bbr(10, 1448, None)
    cc.timer = _Timer()
    cc.timer_arm_fs = 6 * FS_PER_US
    cc.timer_fire_fs = 15 * FS_PER_US  # the release comes after the interrupt
    cc.arm_waits = waits
    cc.wstamp = 13 * FS_PER_US  # the next departure, 1 us after the call's 2 us
    return cc


def test_the_arming_call_runs_on_to_the_timer_s_fire():
    cc, s = _bbr(True), _Sender(True, 2)
    assert cc.paced(s, s.loop.now + s.thread_cpu)
    fire = cc.timer.expires  # wstamp + timer_fire_fs
    assert fire == 28 * FS_PER_US
    assert s.loop.now + s.thread_cpu == fire  # the call ends as the timer fires
    assert s.soft_cpu == 0 and cc.timer_arms == 1


def test_without_the_flag_the_call_pays_the_arm_only():
    cc, s = _bbr(False), _Sender(True, 2)
    assert cc.paced(s, s.loop.now + s.thread_cpu)
    assert s.thread_cpu == (2 + 6) * FS_PER_US


def test_a_soft_interrupt_that_arms_waits_for_nothing():
    cc, s = _bbr(True), _Sender(False, 0)
    assert cc.paced(s, s.loop.now)
    assert s.thread_cpu == 0 and s.soft_cpu == 6 * FS_PER_US


def test_a_call_already_past_the_fire_waits_no_longer():
    # 40 us of CPU before the check, its clock the call's start (no xmit_clock_in_call)
    cc, s = _bbr(True), _Sender(True, 40)
    assert cc.paced(s, s.loop.now)
    assert s.thread_cpu == (40 + 6) * FS_PER_US


def _scenario(sock_mode: str, waits: bool, ops: int = 3000, client: str = "nagle"):
    """The seventh machine's run of that trace (veth-1500, bbr, 16 KiB, QD 8, Nagle client)
    with the best rules of its evaluation, the flag on or off."""
    from models.kernel import load_kernel_run
    from models.validation import field6 as F6

    run = load_kernel_run(prefix=M7.PREFIX)
    t = run.table("iscsi_loop")
    pick = (t.link == "veth-1500") & (t.cc == "bbr") & (t.client_sock_mode == client)
    row = t[pick & (t.sock_mode == sock_mode) & (t.qd == 8) & (t.iosize_bytes == 16384)]
    prof = hostprofile.shipped(M7.PROFILE).with_host(send_cpu_first=True)
    sc = F6.softirq_scenario("iscsi_loop", row.iloc[0].to_dict(), FID.ProfileHost(prof), run.hz)
    flag = {"pacing_arm_waits": waits}
    return sc.replace(server=flag, client=flag, run={"ops": ops})


def test_a_nagle_server_under_bbr_arms_once_per_operation_and_slows():
    runs = {}
    for waits in (False, True):
        sim = Simulation(_scenario("nagle", waits).replace(run={"fast_forward": False}))
        r = sim.run()
        runs[waits] = (r.iops, sim.server_ep.sender.cc.timer_arms / r.completed_total)
    (iops_off, arms_off), (iops_on, arms_on) = runs[False], runs[True]
    assert arms_off < 0.5 and arms_on > 0.6  # the held calls leave no burst to share a timer
    assert iops_on < iops_off / 2


def test_a_nodelay_server_seldom_arms_and_barely_moves():
    off = simulate(_scenario("nodelay", False))
    sim = Simulation(_scenario("nodelay", True))
    on = sim.run()
    assert sim.server_ep.sender.cc.timer_arms / on.completed_total < 0.05
    assert on.iops == pytest.approx(off.iops, rel=0.01)


@pytest.mark.parametrize("sock_mode,client", [("nagle", "nagle"), ("more", "nodelay")])
def test_the_fast_forward_stays_exact_with_the_flag(sock_mode, client):
    sc = _scenario(sock_mode, True, client=client)
    fast = simulate(sc)
    slow = simulate(sc.replace(run={"fast_forward": False}))
    assert fast.rtts_s == slow.rtts_s and fast.directions == slow.directions
    assert fast.iops == slow.iops


def _once(waits: bool = True) -> Bbr:
    cc = _bbr(waits)
    cc.fire_once = True  # Host.pacing_interrupt_once
    return cc


def test_counted_once_the_interrupt_comes_after_the_arming():
    cc, s = _once(), _Sender(True, 2)
    assert cc.paced(s, s.loop.now + s.thread_cpu)
    # the departure (13 us) is due before the call has reprogrammed the timer (its 2 us and the
    # arming's 6, from 10 us): the interrupt comes after that, at 18 us, and takes 15
    assert cc.timer.expires == (10 + 2 + 6 + 15) * FS_PER_US == s.loop.now + s.thread_cpu
    assert s.soft_cpu == 0 and cc.held


def test_counted_once_a_later_departure_is_waited_for():
    cc, s = _once(), _Sender(True, 2)
    cc.wstamp = 30 * FS_PER_US  # beyond the arming's end at 18 us
    assert cc.paced(s, s.loop.now + s.thread_cpu)
    assert cc.timer.expires == (30 + 15) * FS_PER_US == s.loop.now + s.thread_cpu


def test_counted_once_a_call_past_the_departure_still_takes_the_interrupt():
    cc, s = _once(), _Sender(True, 40)
    assert cc.paced(s, s.loop.now)
    assert s.thread_cpu == (40 + 6 + 15) * FS_PER_US


def test_counted_once_needs_the_wait():
    cc, s = _once(waits=False), _Sender(True, 2)
    assert cc.paced(s, s.loop.now + s.thread_cpu)
    assert not cc.held and s.thread_cpu == (2 + 6) * FS_PER_US


class _Ep:
    owned = True  # the held call still owns the socket: its release writes


class _Owner(_Sender):
    def __init__(self) -> None:
        super().__init__(True, 2)
        self.ep = _Ep()
        self.charged: list[tuple[int, bool]] = []

    def charge_soft(self, now: int, own: bool = False) -> None:
        self.charged.append((self.soft_cpu, own))


@pytest.mark.parametrize("once", [True, False])
def test_the_firing_charges_the_interrupt_again_unless_counted_once(once):
    cc, s = (_once() if once else _bbr(True)), _Owner()
    cc.sender = s
    assert cc.paced(s, s.loop.now + s.thread_cpu)
    assert cc.held is once
    cc._on_pace(cc.timer.expires, None)
    assert s.charged == [(0 if once else 15 * FS_PER_US, True)]
    assert not cc.held and s.ep.tsq_deferred


def test_counted_once_the_fast_forward_stays_exact():
    sc = _scenario("nagle", True).replace(server={"pacing_interrupt_once": True})
    fast = simulate(sc)
    slow = simulate(sc.replace(run={"fast_forward": False}))
    assert fast.rtts_s == slow.rtts_s and fast.directions == slow.directions

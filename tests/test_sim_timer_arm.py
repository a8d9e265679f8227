"""``Host.timer_arm_cpu_s``: arming bbr's pacing timer costs the CPU that arms it (the clock event
is reprogrammed; on a virtual machine that traps to the hypervisor: 6.0 us against 0.39 us for a
timer that does not become the CPU's next event, timerfd on the third machine)."""

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
    assert cc.limit(s, 10 * FS_PER_US, 0, 1448) == 0
    paid = s.thread_cpu if in_send else s.soft_cpu
    other = s.soft_cpu if in_send else s.thread_cpu
    assert paid == 6 * FS_PER_US and other == 0 and cc.timer_arms == 1
    # the timer is pending: checking again arms nothing and charges nothing
    assert cc.limit(s, 20 * FS_PER_US, 0, 1448) == 0
    assert cc.timer_arms == 1 and s.thread_cpu + s.soft_cpu == 6 * FS_PER_US


def test_without_the_cost_nothing_is_charged():
    cc = Bbr(10, 1448, None)
    cc.timer = _Timer()
    cc.wstamp = 100 * FS_PER_US
    s = _Sender(True)
    cc.limit(s, 0, 0, 1448)
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


def test_the_fast_forward_stays_exact_with_the_cost():
    # the pacing sweep's veth-9000, 16 KiB, QD 2 Nagle-server run on the book's profile: its
    # pacing timer is armed about every other operation and the run repeats exactly, so the
    # fast-forward skips most of it; the arms it skipped are counted as if run
    from models.kernel import load_kernel_run
    from models.validation import fidelity as FID

    run = load_kernel_run(prefix=FID.PACING_PREFIX)
    t = run.table("iscsi_loop")
    pick = (t.link == "veth-9000") & (t.sock_mode == "nagle") & (t.cc == "bbr")
    row = t[pick & (t.qd == 2) & (t.iosize_bytes == 16384)].iloc[0].to_dict()
    # (no late wake-ups: their random draws rule the fast-forward out)
    h = {"wake_late_share": 0.0, "timer_arm_cpu_s": 5.6 * US}
    sc = field_scenario("iscsi_loop", row, ProfileHost(hostprofile.shipped()), run.hz)
    sc = sc.replace(server=h, client=h, run={"ops": 3000})
    fast, slow = Simulation(sc), Simulation(sc.replace(run={"ops": 3000, "fast_forward": False}))
    rf, rs = fast.run(), slow.run()
    assert rf.skipped_ops > 2000
    assert rf.rtts_s == rs.rtts_s and rf.directions == rs.directions
    arms = [s.server_ep.sender.cc.timer_arms for s in (fast, slow)]
    assert arms[0] == arms[1] > 1000

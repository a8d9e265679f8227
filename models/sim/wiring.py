"""How :class:`~models.sim.engine.Simulation` builds a scenario's parts: each host's TCP endpoint
(its socket options, the kernel profile's rules, its transmit costs) and each direction's channel
(the sender's transmit path, the receiver's receive path and soft interrupt).  Times are seconds in
the scenario and whole femtoseconds here.
"""

from __future__ import annotations

from models.sim.endpoint import Endpoint
from models.sim.events import seconds_to_fs
from models.sim.link import Channel
from models.sim.rules.qdisc import WatchdogWake
from models.sim.rules.rx import InterruptModeration
from models.sim.sender import TxCosts

__all__ = ["tx_cost", "endpoint", "channel", "handshake_windows"]


def tx_cost(host) -> int:
    """Whether ``host`` pays transmit CPU: nonzero fs if any of its
    costs is (the thread then makes its ``send()`` calls one after
    another, each after the CPU of the one before).  Waking the peer's
    thread (``waker_curve_s``) is such a cost: the call that wakes it
    pays, and the calls after it wait."""
    fs = seconds_to_fs
    return (
        fs(host.tx_cpu_s)
        + fs(host.send_cpu_s)
        + fs(host.gso_cpu_s)
        + fs(host.send_byte_cpu_s)  # s/byte -> fs/byte, as TxCosts charges it
        + fs(host.handoff_byte_cpu_s)
        + max((fs(cost) for _, cost in host.waker_curve_s), default=0)
    )


def endpoint(
    side: int, loop, clock, profile, mss: int, host, channel, apart: bool = False
) -> Endpoint:
    """One host's TCP endpoint: its socket options, the profile's
    congestion rule, window and size goal, the host's transmit costs
    (with ``apart``, both ends on one machine with a CPU each, a byte's
    copy also pays ``handoff_byte_cpu_s``)."""
    fs = seconds_to_fs
    byte_s = host.send_byte_cpu_s + (host.handoff_byte_cpu_s if apart else 0.0)  # s/byte
    costs = TxCosts(fs(host.send_cpu_s), fs(host.gso_cpu_s), fs(host.tx_cpu_s), fs(byte_s))
    ep = Endpoint(
        side,
        loop,
        clock,
        profile,
        mss,
        host.nodelay,
        channel,
        cc=profile.congestion(mss),
        size_goal=profile.size_goal_bytes,
        costs=costs,
    )
    ep.sender.snd_wnd = profile.rcv_wnd_max_bytes  # what the peer advertises
    cc = ep.sender.cc
    if host.timer_arm_cpu_s and hasattr(cc, "timer_arm_fs"):  # bbr's pacing timer
        cc.timer_arm_fs = fs(host.timer_arm_cpu_s)
    if host.timer_fire_cpu_s and hasattr(cc, "timer_fire_fs"):
        cc.timer_fire_fs = fs(host.timer_fire_cpu_s)
    if host.pacing_arm_waits and hasattr(cc, "arm_waits"):
        cc.arm_waits = True
        cc.fire_once = host.pacing_interrupt_once
    return ep


def channel(loop, rate: int, sender, receiver, link) -> Channel:
    """The direction from host ``sender`` to host ``receiver``: the
    sender's transmit path, the receiver's receive path and soft
    interrupt (its receive rule from ``rx_usecs``)."""
    fs = seconds_to_fs
    rx_lat = fs(receiver.rx_latency_s)
    rx = None
    if receiver.rx_usecs is not None:
        rx = InterruptModeration(rx_lat, fs(receiver.rx_usecs))
    ack = receiver.ack_cpu_s
    if ack is not None and link.softirq_on_sender and not link.shared_cpus:
        ack += receiver.handoff_ack_cpu_s  # the ACK's CPU is not its socket owner's
    watchdog = None
    if link.watchdog_wake and link.bucket_bytes is not None:
        if sender.tbf_late_s is not None:  # measured, seconds -> fs, whatever the wait
            late = fs(sender.tbf_late_s)
            watchdog = WatchdogWake(late, 0, late)
        else:  # the sender's wake-ups stand in, seconds -> fs
            watchdog = WatchdogWake(
                fs(sender.wake_fast_s), fs(sender.wake_fast_idle_s), fs(sender.wake_s)
            )
    ch = Channel(
        loop,
        rate,
        fs(sender.tx_latency_s),
        rx_lat,
        fs(link.latency_s),
        fs(receiver.softirq_s),
        link.bucket_bytes,
        ack_softirq=None if ack is None else fs(ack),
        rx=rx,
        gro=receiver.gro,
        watchdog=watchdog,
    )
    ch.freed_on_handover = link.freed_on_handover
    return ch


#: The largest window a SYN or SYN-ACK can carry, bytes: the handshake's window field is not
#: scaled (``tcp_select_initial_window``; ``tcp_transmit_skb`` sends ``min(rcv_wnd, 65535)``).
SYN_WINDOW_MAX_BYTES = 65535


def handshake_windows(a: Endpoint, b: Endpoint) -> None:
    """With ``KernelProfile.peer_window``: each sender's first window, what its peer's receive
    buffer offered in the handshake (at most ``SYN_WINDOW_MAX_BYTES``, the largest unscaled
    window); each segment after it brings the peer's window anew (``Endpoint.receive``)."""
    if not a.peer_window:
        return
    for ep, peer in ((a, b), (b, a)):
        ep.sender.snd_wnd = min(SYN_WINDOW_MAX_BYTES, peer.ack.space.wnd)

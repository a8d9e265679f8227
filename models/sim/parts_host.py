"""The :class:`Host` part of a scenario: one side's stage times, host
costs and socket options, and Butterfield (2017)'s two hosts
(:data:`BUTTERFIELD_SERVER`, :data:`BUTTERFIELD_CLIENT`).

Re-exported by :mod:`models.sim.parts` and :mod:`models.sim.scenario`.

>>> Host().send_cpu_s, Host().gso_cpu_s
(0.0, 0.0)
"""

from __future__ import annotations

import dataclasses

from models.sim.params import Between, OneOf, Part, param

__all__ = ["Host", "BUTTERFIELD_SERVER", "BUTTERFIELD_CLIENT"]

_kw = dict(frozen=True, kw_only=True)


@dataclasses.dataclass(**_kw)
class Host(Part):
    """One host: its stage times (seconds) and socket options.

    The letters are Butterfield (2017)'s, server / client:

    ``proc_s``       SP / CP  processing time per message
    ``wake_s``       SL / CL  thread wake-up latency when it was idle
    ``tx_latency_s`` ST / CT  transmit-path start latency (idle NIC)
    ``rx_latency_s`` SR / CR  receive-path start latency (idle)
    ``softirq_s``    SI / CI  receive soft-interrupt CPU per segment
    ``tx_cpu_s``     SK / CK  transmit CPU per data segment sent

    Transmit CPU has three terms, each paid by whoever transmits (the
    thread inside its ``send()``, or the soft interrupt or timer that
    releases held data): ``send_cpu_s`` per ``send()`` call (the system
    call and the copy loop, ``tcp_sendmsg_locked``), ``gso_cpu_s`` per
    GSO/TSO super-packet (an skb of up to the kernel's ``size_goal``
    bytes, ``tcp_write_xmit`` down to the driver) and ``tx_cpu_s`` per
    MSS-sized segment on the wire (the segmentation).  The first two are
    0 by default, as are the per-byte costs of the copies: ``send_byte_cpu_s``
    (in ``send()``) and ``recv_byte_cpu_s`` (in the read, thread CPU);
    ``handoff_byte_cpu_s`` adds to the first where the two ends have a CPU
    each of one machine, as ``handoff_cpu_s`` adds to ``proc_s``.

    The host cost model adds, each off by default: ``ack_cpu_s`` (soft
    interrupt per pure ACK received), ``wake_fast_s`` and
    ``wake_fast_idle_s`` (a thread idle for less than the second wakes
    in the first instead of ``wake_s``: a virtual CPU that halted only
    briefly is still polling), or instead of these steps ``wake_curve_s``
    (the measured latency at each idle time: a virtual CPU idle for
    milliseconds was descheduled by its host and wakes slower still),
    ``wake_late_share`` (the share of those
    brief-idle wake-ups that still take ``wake_s``: the CPU had gone
    into a deeper sleep, or the other thread had it; with a curve, the
    share of wake-ups that take its last point's latency), ``wake_late_s`` (what a late
    wake-up takes instead, where measured), ``wake_cpu_s`` (thread CPU per
    wake-up), ``wake_spread_s`` (a random extra wake-up latency),
    ``timer_spread_s`` (a random lateness of a delayed-ACK timer that
    expires while the thread sleeps), ``waker_curve_s`` (what waking
    the peer's sleeping thread adds to the ``send()`` that wakes it),
    ``tbf_late_s`` (a rate limit's watchdog timer, measured, in place of
    the wake-ups that stand in for it), ``rx_usecs`` (interrupt moderation with NAPI polling),
    ``send_cpu_first`` (a segment leaves after its ``send()``'s CPU so far),
    ``xmit_clock_in_call`` (its pacing clock there too), ``pacing_arm_waits`` (a ``send()``
    that arms bbr's pacing timer waits in the call until it fires), ``pacing_interrupt_once``
    (its interrupt after the arming, counted once), ``soft_waker`` (a segment
    released outside a ``send()`` pays for waking the peer too), ``own_socket``
    (a segment arriving during a ``send()`` waits for the call's end), ``softirq_first``
    (a thread's next step waits for the soft-interrupt work queued on its CPU), ``handshake_rtt``
    (the handshake's round trip as the first RTT sample) and ``gro``;
    and the socket option ``quickack`` (``TCP_QUICKACK`` after every
    read).
    """

    part_name = "host"
    proc_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "processing time per message (SP, CP)",
        sample=Between(1e-6, 100e-6),
    )
    wake_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "thread wake-up latency after idling (SL, CL)",
        sample=Between(0, 100e-6),
    )
    tx_latency_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "transmit-path start latency (ST, CT)",
        sample=Between(0, 100e-6),
    )
    rx_latency_s: float = param(
        0.0, "seconds", "seconds", "receive-path start latency (SR, CR)", sample=Between(0, 100e-6)
    )
    softirq_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "receive soft-interrupt CPU per segment (SI, CI)",
        sample=Between(0, 5e-6),
    )
    tx_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "transmit CPU per data segment (SK, CK)",
        sample=Between(0, 5e-6),
    )
    send_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "transmit CPU per send() call, whether or not it transmits",
        sample=OneOf(0.0, 1e-6),
    )
    gso_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "transmit CPU per GSO/TSO super-packet (an skb of up to the kernel's size_goal bytes)",
        sample=OneOf(0.0, 2e-6),
    )
    send_byte_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds per byte",
        "transmit CPU per byte a send() call writes (the copy into the socket buffer)",
        high=1e-6,
        sample=OneOf(0.0, 0.1e-9),
    )
    recv_byte_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds per byte",
        "thread CPU per byte a read copies to the application (before it processes)",
        high=1e-6,
        sample=OneOf(0.0, 0.2e-9),
    )
    ack_cpu_s: float | None = param(
        None,
        "seconds",
        "seconds",
        "receive soft-interrupt CPU per pure ACK (default: softirq_s)",
        optional=True,
        sample=OneOf(None, 0.0, 1e-6),
    )
    handoff_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "extra thread CPU per message (added to proc_s) when both ends run on one machine "
        "with a CPU each (Link.softirq_on_sender): a message made on the other CPU",
        sample=OneOf(0.0, 2e-6),
    )
    handoff_byte_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds per byte",
        "extra transmit CPU per byte a send() call writes (added to send_byte_cpu_s) when both "
        "ends run on one machine with a CPU each (Link.softirq_on_sender): the copy fills "
        "buffers the other CPU freed and its reader takes from another CPU's cache",
        high=1e-6,
        sample=OneOf(0.0, 0.1e-9),
    )
    handoff_ack_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "extra CPU per pure ACK (added to ack_cpu_s) when both ends run on one machine with a "
        "CPU each (Link.softirq_on_sender)",
        sample=OneOf(0.0, 1e-6),
    )
    wake_fast_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "wake-up latency instead of wake_s when the thread idled less than wake_fast_idle_s "
        "(a CPU that halted only briefly is still polling)",
        sample=OneOf(0.0, 5e-6),
    )
    wake_fast_idle_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "idle time under which a wake-up takes wake_fast_s (0: never)",
        sample=OneOf(0.0, 60e-6),
    )
    wake_curve_s: tuple = param(
        (),
        "curve",
        "seconds",
        "the wake-up latency as a curve of the thread's idle time, as measured: (idle, latency) "
        "points, linear between them, the end points' beyond; when given it decides every "
        "wake-up of the thread, in place of wake_s and its fast step",
        high=1.0,
        # (random scenarios draw the steps; a curve replaces them: tests/test_sim_rules.py)
        sample=OneOf(()),
    )
    waker_curve_s: tuple = param(
        (),
        "curve",
        "seconds",
        "what waking the peer's thread adds to this thread's send(), as a curve of how long the "
        "peer has slept, as measured: (idle, seconds) points, linear between them, the end "
        "points' beyond (an interrupt to a CPU that halted; on a virtual machine a trip through "
        "the hypervisor); the send() that wakes the peer pays it once",
        high=1.0,
        sample=OneOf((), ((1e-3, 0.0), (40e-3, 13e-6))),
    )
    timer_arm_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "CPU of arming a high-resolution timer that becomes the CPU's next event (bbr's pacing "
        "timer): the clock event is reprogrammed, on a virtual machine through the hypervisor; "
        "paid by the send() or the soft interrupt that arms it (python -m models.measure costs "
        "measures it: timer_arm)",
        sample=Between(0, 8e-6),
    )
    timer_fire_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "CPU of a high-resolution timer's interrupt when it fires (bbr's pacing timer), taken "
        "from the soft interrupt's CPU before the push the timer allows, which leaves that much "
        "later: on a virtual machine the interrupt comes through the hypervisor and the clock "
        "event is reprogrammed (python -m models.measure costs measures it: timer_fire)",
        sample=Between(0, 15e-6),
    )
    wake_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "thread CPU per wake-up, before it reads (context switch, recv() return)",
        sample=Between(0, 5e-6),
    )
    wake_late_share: float = param(
        0.0,
        "fraction",
        "share",
        "share of the wake-ups after a brief idle (under wake_fast_idle_s) that still take "
        "wake_s, or with wake_curve_s of all wake-ups that take the latency of the curve's "
        "last point (its longest idle) if slower; drawn per wake-up (seeded; turns the "
        "fast-forward off)",
        sample=OneOf(0.0, 0.05),
    )
    wake_late_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "the latency of a late wake-up (wake_late_share), or the curve's at the idle if "
        "slower; 0 takes wake_s, or with wake_curve_s its last point's",
        sample=OneOf(0.0, 150e-6),
    )
    wake_spread_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "random extra wake-up latency, uniform in [0, spread) per "
        "wake-up (seeded; turns the fast-forward off)",
        sample=OneOf(0.0, 20e-6),
    )
    timer_spread_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "random lateness of a delayed-ACK timer that expires while this host's thread sleeps "
        "(its CPU idle): uniform in [0, spread) per expiry (seeded): the two ends' timers due "
        "on one tick then fire apart, as on a machine whose CPUs wake from idle at different "
        "speeds",
        sample=OneOf(0.0, 20e-6),
    )
    tbf_late_s: float | None = param(
        None,
        "seconds",
        "seconds",
        "with Link.watchdog_wake: how late the tbf watchdog timer releases a frame that waited "
        "for tokens, as measured (tools/tbf_timer_sweep.py); default: the host's wake-up "
        "stands in (wake_fast_s after a wait of at most wake_fast_idle_s, else wake_s)",
        optional=True,
        sample=OneOf(None, 17e-6),
    )
    rx_usecs: float | None = param(
        None,
        "seconds",
        "seconds",
        "receive interrupt moderation: at most one interrupt per "
        "holdoff, NAPI polls while frames arrive (default: off, one start "
        "latency per idle period)",
        optional=True,
        sample=OneOf(None, 0.0, 50e-6),
    )
    send_cpu_first: bool = param(
        False,
        "flag",
        "",
        "a segment a thread's own send() sends leaves after the CPU the call has spent up to "
        "it (on loopback and veth the transmit and the receiving stack run inside the call); "
        "off: it leaves at the call's start and the call's CPU follows",
        sample=OneOf(False, True),
    )
    xmit_clock_in_call: bool = param(
        False,
        "flag",
        "",
        "with send_cpu_first: inside a send(), tcp_write_xmit reads the clock after the call's "
        "CPU so far (tcp_mstamp_refresh after the copy), for bbr's pacing check and the "
        "departure time it stamps; off: the call's start",
        sample=OneOf(False, True),
    )
    pacing_arm_waits: bool = param(
        False,
        "flag",
        "",
        "a send() that arms bbr's pacing timer stays in the call until the timer fires, its "
        "CPU held: on a virtual machine, reprogramming the CPU's timer for an expiry that near "
        "traps to the hypervisor, and the CPU comes back with the timer's interrupt (traced on "
        "the seventh machine, tools/pacing_wait_trace.py); the interrupt's CPU is still "
        "charged after the wait (the wait covers it: a double count that stands in for the "
        "kernel's work in the call after the interrupt) unless pacing_interrupt_once; off: "
        "the call returns after its own CPU",
        sample=OneOf(False, True),
    )
    pacing_interrupt_once: bool = param(
        False,
        "flag",
        "",
        "with pacing_arm_waits: the held call's interrupt comes no earlier than the call has "
        "armed the timer (its CPU so far, the arming's included: on a virtual machine the "
        "reprogramming traps to the hypervisor before the interrupt can come), and its CPU is "
        "counted once, in the wait (the eighth machine's calls, tools/plateau_calls_trace.py); "
        "off: the interrupt is due at the departure and charged again after the wait",
        sample=OneOf(False, True),
    )
    soft_waker: bool = param(
        False,
        "flag",
        "",
        "with waker_curve_s: a segment sent outside the thread's send() (released by a timer "
        "or an ACK) that wakes the sleeping peer pays the waker's cost too, on the CPU that "
        "sends it: on loopback and veth the receiving stack runs there, the interrupt to the "
        "peer's idle CPU included (the eighth machine's held calls went on about that much "
        "longer after the timer with the client's CPU idle: tools/plateau_calls_trace.py); "
        "off: only a send() pays it",
        sample=OneOf(False, True),
    )
    own_socket: bool = param(
        False,
        "flag",
        "",
        "socket ownership: a segment that reaches this host while its thread is inside a "
        "send() call that costs CPU waits in the socket's backlog and is processed when the "
        "call ends (tcp_add_backlog, release_sock); off: it is processed on arrival",
        sample=OneOf(False, True),
    )
    softirq_first: bool = param(
        False,
        "flag",
        "",
        "with both ends on one machine, a CPU each: the thread's next step (its writes after "
        "processing a message, its next send() call) waits for the soft-interrupt work queued "
        "on its CPU meanwhile, which Linux runs inside the call that raised it (do_softirq "
        "at local_bh_enable); off: the step takes effect first and the work runs after it",
        sample=OneOf(False, True),
    )
    handshake_rtt: bool = param(
        False,
        "flag",
        "",
        "the connection's handshake gives this end's congestion control its first RTT sample "
        "before any data: srtt, the minimum RTT and bbr's first pacing rate "
        "(bbr_init_pacing_rate_from_rtt), the path's idle round trip of a bare header; off: "
        "no sample until the first data is acknowledged (bbr assumes 1 ms)",
        sample=OneOf(False, True),
    )
    handshake_rtt_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "with handshake_rtt: the handshake's round trip as this end measured it, its first RTT "
        "sample; a process's first connection pays cold paths that later ones do not "
        "(tools/handshake_rtt.py's first connection, python -m models.measure run "
        "--cc-log-every's first reading); 0: the path's idle round trip of a bare header each way",
        sample=OneOf(0.0, 17e-6),
    )
    gro: bool = param(
        False,
        "flag",
        "",
        "GRO: merge back-to-back data segments one poll takes",
        sample=OneOf(False, True),
    )
    nodelay: bool = param(False, "flag", "", "TCP_NODELAY: Nagle off", sample=OneOf(False, True))
    msg_more: bool = param(
        False,
        "flag",
        "",
        "MSG_MORE on every send() of a message but its last",
        sample=OneOf(False, True),
    )
    msg_more_last: bool = param(
        False,
        "flag",
        "",
        "MSG_MORE on the last send() too (misuse: held until the probe timer)",
        sample=OneOf(False, True),
    )
    cork: bool = param(
        False,
        "flag",
        "",
        "TCP_CORK set before each message, cleared after",
        sample=OneOf(False, True),
    )
    flush_on_idle: bool = param(
        False,
        "flag",
        "",
        "push held data out before the thread sleeps (SCST usermode)",
        sample=OneOf(False, True),
    )
    quickack: bool = param(
        False,
        "flag",
        "",
        "TCP_QUICKACK set after every read (it does not persist: the kernel may delay ACKs again)",
        sample=OneOf(False, True),
    )

    def _check_together(self, where: str) -> None:
        if self.xmit_clock_in_call and not self.send_cpu_first:
            raise ValueError(
                f"{where}.xmit_clock_in_call reads the clock after the call's CPU so far: "
                f"it needs {where}.send_cpu_first true"
            )
        if self.handshake_rtt_s and not self.handshake_rtt:
            raise ValueError(
                f"{where}.handshake_rtt_s is the handshake's round trip as a first RTT sample: "
                f"it needs {where}.handshake_rtt true"
            )
        if self.wake_curve_s and self.wake_fast_idle_s:
            raise ValueError(
                f"{where}.wake_curve_s replaces the wake-up's fast step: leave "
                f"{where}.wake_fast_idle_s at 0"
            )
        if self.wake_late_share and not (self.wake_fast_idle_s or self.wake_curve_s):
            # (without a fast step or a curve every wake-up takes wake_s already: the draw
            # would change nothing)
            raise ValueError(
                f"{where}.wake_late_share is a share of the wake-ups that are late: it needs "
                f"a fast wake-up to be late against, {where}.wake_fast_idle_s above 0 or "
                f"{where}.wake_curve_s (else leave the share at 0)"
            )
        if self.wake_late_s and not self.wake_late_share:
            raise ValueError(
                f"{where}.wake_late_s is what a late wake-up takes: it needs "
                f"{where}.wake_late_share above 0 (else leave it at 0)"
            )


#: The server of Butterfield (2017) for a 512-byte read at QD 1 on 1 Gb/s, in seconds: the CPU per
#: operation ``SI + SP + SK`` (as ``proc_s``) and the wake-up ``SL``, with the four path latencies
#: sharing ``(C2 - C1) - (S2 - S1) - (W1 + W2)`` evenly (the hosts' clocks were not synchronized).
#: ``tests/test_presets.py`` derives each value from ``data/butterfield2017_rtt_breakdown.csv``.
BUTTERFIELD_SERVER = Host(
    proc_s=15.9e-6, wake_s=16.7e-6, tx_latency_s=51.125e-6, rx_latency_s=51.125e-6
)
#: The initiator of Butterfield (2017), seconds: ``CI + CP + CK`` and ``CL``; with both hosts, a
#: response in one segment and TCP_NODELAY, the QD-1 round trip is the source's RTT (tested).
BUTTERFIELD_CLIENT = Host(
    proc_s=8.6e-6, wake_s=23.7e-6, tx_latency_s=51.125e-6, rx_latency_s=51.125e-6
)

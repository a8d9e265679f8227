"""The plausible range of each cost a host profile may set (:mod:`models.sim.hostprofile`).

Each :class:`Range` gives its bounds in seconds (a share has no unit) and where they come from.
The ranges are deliberately wide: they reject a unit mistake (microseconds typed as seconds) or a
fit gone to a corner, not an unusual machine; a value outside is an error naming the field, its
range and the value.

>>> COST_RANGES["wake_s"].check("host.wake_s", 20e-6)
2e-05
>>> sorted(CURVE_RANGES)
['wake_curve_s', 'waker_curve_s']
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["Range", "COST_RANGES", "CURVE_RANGES"]


@dataclasses.dataclass(frozen=True)
class Range:
    """A plausible range of one cost and where it comes from; seconds unless ``unit`` says
    otherwise (a share is a number without unit)."""

    lo_s: float
    hi_s: float
    source: str
    unit: str = "seconds"

    def check(self, where: str, value: Any) -> float:
        """``value`` as a float if it is a finite number in ``[lo_s, hi_s]``; else ValueError."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            what = "of seconds" if self.unit == "seconds" else f"({self.unit})"
            raise ValueError(f"host profile: {where} must be a number {what}, got {value!r}")
        v = float(value)
        if not (math.isfinite(v) and self.lo_s <= v <= self.hi_s):
            raise ValueError(
                f"host profile: {where} must be in [{self.lo_s:g}, {self.hi_s:g}] {self.unit} "
                f"({self.source}), got {value!r}"
            )
        return v


_SYSCALL = (
    "a system call's entry and exit alone take a fraction of a microsecond "
    "(Soares and Stumm 2010); tens of microseconds on old or virtualised hosts"
)
#: The costs a profile may set (``Host`` fields), with their plausible ranges in seconds.
COST_RANGES: dict[str, Range] = {
    "wake_s": Range(
        0.5e-6,
        200e-6,
        "a context switch costs a few microseconds (McVoy and Staelin 1996; Li, Ding and "
        "Shen 2007); waking an idle virtual CPU adds tens of microseconds (Butterfield 2017's "
        "wake-ups; this machine's p90)",
    ),
    "wake_fast_s": Range(
        0.5e-6,
        200e-6,
        "a wake-up that finds the CPU still polling skips the trip through the host's "
        "scheduler: a few microseconds (Linux documentation, 'The KVM halt polling system')",
    ),
    "wake_fast_idle_s": Range(
        0.0,
        1e-3,
        "how long an idle CPU keeps polling: KVM's and the guest's haltpoll default at most "
        "200 us, adapted to recent wake-ups (Linux documentation, 'The KVM halt polling system')",
    ),
    "wake_late_share": Range(
        0.0,
        0.5,
        "a minority of wake-ups: this machine's pipe wake-ups after idle gaps of 2-160 us have "
        "a 90th percentile within 40 % of the median, so fewer than one in ten is late there; in "
        "a loop the two threads and both soft interrupts share two CPUs, so a thread also finds "
        "its CPU taken or halted deeper; counted where the benchmark kept each gap's slowest "
        "samples (models.measure.wakeups.late_share)",
        unit="share of wake-ups",
    ),
    "wake_late_s": Range(
        0.0,
        1e-3,
        "a late wake-up waits for a CPU the hypervisor or another thread holds: tens to "
        "hundreds of microseconds on average, single ones a few milliseconds; measured as "
        "the mean of the late ones (models.measure.wakeups.late_mean_s)",
    ),
    "wake_spread_s": Range(
        0.0,
        100e-6,
        "wake-ups scatter about their median: this machine's socket wake-ups at one idle gap "
        "have a 90th percentile a few microseconds above the median, tens where they split into "
        "a polling and a halted group; the width of the uniform draw with each gap's median and "
        "90th percentile, the median over the gaps (models.measure.wakeups.wake_spread)",
    ),
    "wake_cpu_s": Range(0.0, 50e-6, "a context switch's CPU (Li, Ding and Shen 2007)"),
    "timer_spread_s": Range(
        0.0, 1e-3, "none on a CPU still polling, tens of us on a descheduled virtual CPU"
    ),
    "timer_arm_cpu_s": Range(
        0.0,
        50e-6,
        "reprogramming a CPU's timer: well under a microsecond on hardware, a trap to the "
        "hypervisor on a virtual machine (microseconds: data/hosts, the third machine)",
    ),
    "timer_fire_cpu_s": Range(
        0.0,
        50e-6,
        "a timer's interrupt: a microsecond or two on hardware, an exit to the hypervisor and "
        "back on a virtual machine (over ten microseconds: data/hosts, the third machine)",
    ),
    "handshake_rtt_s": Range(
        0.0,
        1e-3,
        "a handshake's round trip between two processes of one machine: a few microseconds, "
        "tens for a process's first connection (cold paths: data/kernel6_machine4_handshake)",
    ),
    "tbf_late_s": Range(
        0.0,
        1e-3,
        "an hrtimer's interrupt and the transmit soft interrupt after it: microseconds on "
        "hardware, tens of microseconds when the timer's interrupt comes through a hypervisor "
        "(python -m models.measure calibrate measures it; tools/tbf_timer_sweep.py sweeps it)",
    ),
    "handoff_cpu_s": Range(
        0.0,
        50e-6,
        "a message passed between two CPUs: its cache lines move and the other CPU is woken "
        "by an interrupt between processors, a virtual machine's exit when virtual; at most a "
        "context switch's range",
    ),
    "handoff_byte_cpu_s": Range(
        0.0,
        10e-9,
        "a copy into buffers the other CPU freed, for a reader on that CPU: cache lines that "
        "move between CPUs, still well under a nanosecond per byte; 10 ns per byte is a unit "
        "mistake",
    ),
    "handoff_ack_cpu_s": Range(
        0.0, 20e-6, "a pure ACK processed away from its socket's CPU, at most a segment's"
    ),
    "send_byte_cpu_s": Range(
        0.0,
        10e-9,
        "copying a byte costs well under a nanosecond on a host of this century (memory "
        "bandwidth of several GB/s); 10 ns per byte is a unit mistake",
    ),
    "recv_byte_cpu_s": Range(
        0.0,
        10e-9,
        "copying a byte costs well under a nanosecond on a host of this century (memory "
        "bandwidth of several GB/s); 10 ns per byte is a unit mistake",
    ),
    "send_cpu_s": Range(0.05e-6, 50e-6, _SYSCALL),
    "gso_cpu_s": Range(0.0, 50e-6, "one buffer through the TCP/IP stack: " + _SYSCALL),
    "tx_cpu_s": Range(0.0, 20e-6, "per-segment work below TCP (Butterfield 2017's SK)"),
    "softirq_s": Range(0.0, 20e-6, "receive processing per segment (Butterfield 2017's SI)"),
    "ack_cpu_s": Range(0.0, 20e-6, "receive processing of a pure ACK, at most a segment's"),
    "proc_s": Range(
        0.0, 1e-3, "an application's work per message, from none to a millisecond (a disk I/O)"
    ),
    "tx_latency_s": Range(
        0.0, 500e-6, "transmit start: zero on loopback, interrupt moderation on a NIC (Intel 2007)"
    ),
    "rx_latency_s": Range(
        0.0, 500e-6, "receive start: zero on loopback, interrupt moderation on a NIC (Intel 2007)"
    ),
}


#: The curves a profile may set (``Host`` fields of (idle, latency) points): the ranges of each
#: point's idle and of its latency.
CURVE_RANGES: dict[str, tuple[Range, Range]] = {
    "wake_curve_s": (
        Range(
            0.0,
            1.0,
            "an idle time: from microseconds (a CPU still polling) past the 40 ms of a "
            "delayed-ACK stall",
        ),
        Range(
            0.5e-6,
            1e-3,
            "a wake-up: a few microseconds on a CPU still polling (COST_RANGES' wake_fast_s), "
            "tens to hundreds of microseconds for a virtual CPU idle for milliseconds, which "
            "its host descheduled (this machine's long-gap medians)",
        ),
    ),
    "waker_curve_s": (
        Range(0.0, 1.0, "an idle time of the peer's CPU, as wake_curve_s's"),
        Range(
            0.0,
            1e-3,
            "what waking a thread adds to the call that wakes it: a few microseconds to queue "
            "it on a CPU still polling (the fifth machine's TCP ping-pong, 7.5 us after 44 us of "
            "idle), tens of microseconds for an interrupt through a hypervisor to a CPU halted "
            "for milliseconds (the pipe writes that wake a thread after long idles; both ends "
            "timed on a TCP socket in data/kernel6_machine6_tcp_waker)",
        ),
    ),
}

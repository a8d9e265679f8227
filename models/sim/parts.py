"""The parts of a scenario: :class:`Workload`, :class:`Link`,
:class:`Host`, :class:`Kernel` and :class:`Run`.

Each part is a small frozen record whose fields are declared once
(:mod:`models.sim.params`: kind, unit, help, bounds, a range for the
property tests); the composed scenario is :mod:`models.sim.scenario`.

:class:`Workload`
    Queue depth and the ``send()`` calls of each message.
:class:`Link`
    MTU, rate, propagation delay, optional token bucket; both directions.
:class:`Host`
    One side's stage times (Butterfield 2017's letters: ``SP``/``CP``
    and friends) and socket options.
:class:`Kernel`
    The kernel profile (:mod:`models.sim.kernels`) and timer details.
:class:`Run`
    How long, which seed, what to record.

Defaults: Butterfield (2017)'s case, a 512-byte iSCSI read over 1 Gb/s
Ethernet at MTU 1500 with his measured stage times
(:data:`BUTTERFIELD_SERVER`, :data:`BUTTERFIELD_CLIENT`).

>>> Workload(qd=4).qd, Host().nodelay, Link().mss
(4, False, 1448)
"""

from __future__ import annotations

import dataclasses

from models import framing
from models.sim.kernels import PROFILES, KernelProfile, get_profile
from models.sim.params import (
    MAX_BUCKET_BYTES,
    MAX_EVENTS,
    MAX_OPS,
    MAX_QD,
    Between,
    OneOf,
    Part,
    param,
)

__all__ = [
    "Workload",
    "Link",
    "Host",
    "Kernel",
    "Run",
    "BUTTERFIELD_SERVER",
    "BUTTERFIELD_CLIENT",
    "MAX_QD",
    "MAX_OPS",
    "MAX_EVENTS",
]

_kw = dict(frozen=True, kw_only=True)


@dataclasses.dataclass(**_kw)
class Workload(Part):
    """The closed loop: ``qd`` operations, each a request and a response.

    A message is written as one or more ``send()`` calls (their sizes).
    ``legs`` generalises the request/response pair to an exchange of
    several messages (an iSCSI write: command, R2T, data, response).
    """

    part_name = "workload"
    qd: int = param(
        1,
        "count",
        "operations",
        "queue depth: operations kept outstanding",
        low=1,
        high=MAX_QD,
        sample=Between(1, 12),
    )
    request_writes: tuple = param(
        (48,),
        "sizes",
        "bytes",
        "send() sizes of one request (an iSCSI read command: 48)",
        low=1,
        sample="sizes",
    )
    response_writes: tuple = param(
        (48, 512),
        "sizes",
        "bytes",
        "send() sizes of one response (header, then data: 48,512)",
        low=1,
        sample="sizes",
    )
    legs: tuple = param(
        (),
        "legs",
        "bytes",
        "an exchange of several messages instead: send() sizes per leg, "
        "legs alternate client->server and server->client, "
        "e.g. 48/48/8192/48",
        sample="legs",
    )
    setup_request_writes: tuple = param(
        (),
        "sizes",
        "bytes",
        "a request sent once before the loop (Flory 2001: 8)",
        low=0,
        sample="setup",
    )
    setup_response_writes: tuple = param(
        (), "sizes", "bytes", "its response (Flory 2001: 8)", low=0, sample="setup"
    )
    setup_proc_s: float = param(
        0.0, "seconds", "seconds", "server time for the setup request", sample=Between(0, 100e-6)
    )

    def _check_together(self, where: str) -> None:
        if bool(self.setup_request_writes) != bool(self.setup_response_writes):
            raise ValueError(
                f"{where}.setup_request_writes and "
                f"{where}.setup_response_writes must be given together"
            )
        if self.legs and (self.request_writes, self.response_writes) != ((48,), (48, 512)):
            raise ValueError(
                f"{where}.legs replaces request_writes and "
                f"response_writes; leave those at their defaults"
            )

    @property
    def exchange(self) -> tuple:
        """The legs of one operation (``legs``, or request and response)."""
        return self.legs or (self.request_writes, self.response_writes)


@dataclasses.dataclass(**_kw)
class Link(Part):
    """Both directions of the path between the hosts.

    Each frame pays ``payload + 90`` bytes of wire time at
    ``bandwidth_bps`` (:mod:`models.framing`), or, with ``bucket_bytes``,
    passes a token bucket like Linux's ``tbf`` qdisc.
    """

    part_name = "link"
    mtu: int = param(
        1500,
        "bytes",
        "bytes",
        "IP MTU; MSS = min(MTU, 65535) - 52",
        low=framing.TCPIP_BYTES + 1,
        high=framing.MAX_MTU,
        sample=OneOf(576, 1500, 9000, 16436, 65536),
    )
    bandwidth_bps: float = param(
        1e9, "rate", "bits per second", "link rate, both directions", sample=OneOf(1e8, 1e9, 1e10)
    )
    latency_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "one-way propagation delay outside the hosts",
        sample=Between(0, 100e-6),
    )
    bucket_bytes: int | None = param(
        None,
        "bytes",
        "bytes",
        "token-bucket depth (a tbf rate limiter) instead of a wire; at least one frame, MTU + 14",
        optional=True,
        low=1,
        high=MAX_BUCKET_BYTES,
        sample="bucket",
    )
    shared_cpus: int | None = param(
        None,
        "count",
        "CPUs",
        "both hosts are one machine (loopback, veth) whose threads share "
        "this many CPUs (default: a CPU for each host's thread)",
        optional=True,
        low=1,
        high=1024,
        sample=OneOf(None, 1, 2),
    )

    def _check_together(self, where: str) -> None:
        frame = framing.bucket_bytes(self.mss)
        if self.bucket_bytes is not None and self.bucket_bytes < frame:
            raise ValueError(
                f"{where}.bucket_bytes must hold one full frame "
                f"(>= {frame} bytes at MTU {self.mtu}), "
                f"got {self.bucket_bytes}"
            )

    @property
    def mss(self) -> int:
        """Payload bytes per full segment (:func:`models.framing.mss`)."""
        return framing.mss(self.mtu)


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

    The host cost model adds, each off by default: ``ack_cpu_s`` (soft
    interrupt per pure ACK received), ``wake_cpu_s`` (thread CPU per
    wake-up), ``wake_spread_s`` (a random extra wake-up latency),
    ``rx_usecs`` (interrupt moderation with NAPI polling) and ``gro``;
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
    ack_cpu_s: float | None = param(
        None,
        "seconds",
        "seconds",
        "receive soft-interrupt CPU per pure ACK (default: softirq_s)",
        optional=True,
        sample=OneOf(None, 0.0, 1e-6),
    )
    wake_cpu_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "thread CPU per wake-up, before it reads (context switch, recv() return)",
        sample=Between(0, 5e-6),
    )
    wake_spread_s: float = param(
        0.0,
        "seconds",
        "seconds",
        "random extra wake-up latency, uniform in [0, spread) per "
        "wake-up (seeded; turns the fast-forward off)",
        sample=OneOf(0.0, 20e-6),
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


@dataclasses.dataclass(**_kw)
class Kernel(Part):
    """Which kernel's TCP rules, and its timer details."""

    part_name = "kernel"
    profile: str = param(
        "linux-6",
        "choice",
        "",
        "kernel profile (models.sim.kernels)",
        choices=PROFILES,  # the live registry
        sample=OneOf(*PROFILES),
    )
    hz: int | None = param(
        None,
        "count",
        "ticks per second",
        "timer ticks per second (default: the profile's CONFIG_HZ)",
        optional=True,
        low=1,
        high=10_000,
        sample=OneOf(100, 250, 300, 1000),
    )
    kernel_timers: bool = param(
        False,
        "flag",
        "",
        "the profile's measured timer details (wheel round-up, "
        "srtt-based probe); off: the textbook 40 ms and 200 ms",
        sample=OneOf(False, True),
    )
    autocork: bool | None = param(
        None,
        "flag",
        "",
        "tcp_autocorking (default: the profile's)",
        optional=True,
        sample=OneOf(None, False, True),
    )
    tick_phase_s: float | None = param(
        None,
        "seconds",
        "seconds",
        "where in its tick the run starts, in [0, 1/hz) (default: drawn from the seed)",
        optional=True,
        sample="tick_phase",
    )

    def _check_together(self, where: str) -> None:
        tick = 1.0 / self.hz_value
        if self.tick_phase_s is not None and not self.tick_phase_s < tick:
            raise ValueError(
                f"{where}.tick_phase_s must be in [0, {tick:g}) seconds, got {self.tick_phase_s!r}"
            )

    @property
    def hz_value(self) -> int:
        """``hz``, or the profile's."""
        return self.hz or get_profile(self.profile).hz

    def resolve(self) -> KernelProfile:
        """The profile with ``hz``, ``autocork`` and the timers applied."""
        return get_profile(self.profile).configured(
            hz=self.hz, autocork=self.autocork, kernel_timers=self.kernel_timers
        )


@dataclasses.dataclass(**_kw)
class Run(Part):
    """Run control: length, seed, randomness, recording, checks."""

    part_name = "run"
    ops: int = param(
        2000,
        "count",
        "operations",
        "operations to measure after the warm-up",
        low=1,
        high=MAX_OPS,
        sample=Between(5, 40),
    )
    warmup_ops: int | None = param(
        None,
        "count",
        "operations",
        "completions excluded first (default: the queue depth)",
        optional=True,
        low=0,
        high=MAX_OPS,
        sample=OneOf(None, 0, 3),
    )
    seed: int = param(
        0,
        "count",
        "",
        "seed of every random draw (tick phase, jitter)",
        low=0,
        high=2**64 - 1,
        sample=Between(0, 2**16),
    )
    jitter: float = param(
        0.0,
        "fraction",
        "",
        "relative spread of processing times, uniform in [1 - jitter, 1 + jitter]",
        sample=OneOf(0.0, 0.2),
    )
    trace: bool = param(
        False, "flag", "", "record a tcpdump-like packet trace", sample=OneOf(False, True)
    )
    trace_at: str = param(
        "server",
        "choice",
        "",
        "the host whose capture point the trace shows",
        choices=("client", "server"),
        sample=OneOf("client", "server"),
    )
    check: bool = param(
        False,
        "flag",
        "",
        "check the invariants after every event, the totals at the end, and a "
        "fast-forward's jump (slow)",
        sample=OneOf(False, True),
    )
    max_events: int = param(
        MAX_EVENTS,
        "count",
        "events",
        "event budget: a run that would need more events stops with an error "
        "naming this limit (about a minute of CPU per 10,000,000 events)",
        low=1000,
        high=10**10,
        sample=OneOf(MAX_EVENTS),
    )
    fast_forward: bool = param(
        True,
        "flag",
        "",
        "jump over exact repeats of a deterministic run's state "
        "(same numbers as running them, models.sim.fastforward)",
        sample=OneOf(False, True),
    )

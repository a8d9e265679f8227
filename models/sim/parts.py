"""The parts of a scenario: :class:`Workload`, :class:`Link`,
:class:`Host`, :class:`Kernel` and :class:`Run`.

Each part is a small frozen record whose fields are declared once
(:mod:`models.sim.params`: kind, unit, help, bounds, a range for the
property tests); the composed scenario is :mod:`models.sim.scenario`.
:class:`Host` lives in :mod:`models.sim.parts_host` and :class:`Kernel`
in :mod:`models.sim.parts_kernel` (both importable from here).

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
from models.sim.exchange import Exchange
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
from models.sim.parts_host import BUTTERFIELD_CLIENT, BUTTERFIELD_SERVER, Host
from models.sim.parts_kernel import Kernel

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
    ``legs`` generalises the request/response pair to a chain of several
    messages (an iSCSI write: command, R2T, data, response), and
    ``messages`` to any exchange in which each message is released by one
    of the other side (:mod:`models.sim.exchange`: a sliding window of
    R2Ts).
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
    messages: tuple = param(
        (),
        "messages",
        "bytes",
        "an exchange of messages instead: per message its side, send() sizes and the message "
        "of the other side whose reading releases it, e.g. c:48/s:48@0/c:8192@1/s:48@2 "
        "(models.sim.exchange)",
        sample="messages",
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
        for name in ("legs", "messages"):
            if getattr(self, name) and (self.request_writes, self.response_writes) != (
                (48,),
                (48, 512),
            ):
                raise ValueError(
                    f"{where}.{name} replaces request_writes and "
                    f"response_writes; leave those at their defaults"
                )
        if self.legs and self.messages:
            raise ValueError(f"{where}.messages replaces legs; give one of them")

    @property
    def exchange(self) -> tuple:
        """The legs of one operation (``legs``, or request and response);
        with ``messages``, two legs: all that the client writes in one
        operation, then all that the server writes."""
        if self.messages:
            return self.graph.bytes_by_direction()
        return self.legs or (self.request_writes, self.response_writes)

    @property
    def graph(self) -> Exchange:
        """One operation as messages that release one another
        (:class:`models.sim.exchange.Exchange`; a chain for ``legs``)."""
        if self.messages:
            return Exchange(self.messages)
        return Exchange.chain(self.legs or (self.request_writes, self.response_writes))


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
        "both hosts are one machine (loopback, veth) whose threads and receive "
        "soft interrupts share this many CPUs (default: a CPU for each host's "
        "thread and one for each soft interrupt)",
        optional=True,
        low=1,
        high=1024,
        sample=OneOf(None, 1, 2),
    )
    run_to_block: bool = param(
        False,
        "flag",
        "",
        "with shared_cpus: a thread keeps its CPU from its wake-up until it blocks, and a "
        "thread woken meanwhile waits for it (Linux's fair scheduler, its wake-up preemption "
        "left out); off: "
        "the threads' stretches of work take turns first come, first served",
        sample=OneOf(False, True),
    )
    wake_preempt: bool = param(
        False,
        "flag",
        "",
        "with shared_cpus 1: as run_to_block, and a thread woken while the other holds the CPU "
        "preempts it at the holder's next event when Linux's fair scheduler would (EEVDF's "
        "eligibility, lag and delayed dequeue, models.sim.eevdf); its wake-up waits for no "
        "latency behind a held CPU",
        sample=OneOf(False, True),
    )
    watchdog_wake: bool = param(
        False,
        "flag",
        "",
        "with bucket_bytes: a frame that finds too few tokens waits in the tbf until the next "
        "frame handed to it runs the qdisc, or until the tbf's watchdog timer fires, late by the "
        "sending host's tbf_late_s if measured, else by its wake-up (wake_fast_s after a wait of "
        "at most wake_fast_idle_s, else wake_s); default: it leaves as soon as the tokens are there",
        sample=OneOf(False, True),
    )
    softirq_on_sender: bool = param(
        False,
        "flag",
        "",
        "both hosts are one machine, each thread on a CPU of its own (loopback, veth; RPS off): "
        "a frame's receive soft interrupt runs on the CPU of the host that sent it, in turn "
        "with that host's thread (with shared_cpus: on the shared CPUs)",
        sample=OneOf(False, True),
    )
    freed_on_handover: bool = param(
        False,
        "flag",
        "",
        "a sent data frame leaves the socket's transmit memory as soon as the link takes it, not "
        "when its wire time ends: loopback_xmit orphans it, and on a veth pair the peer's "
        "receive path, run by the sending CPU's soft interrupt before the send returns, orphans "
        "it in ip_rcv_core; so autocorking and bbr's application-limited check never find it "
        "in the host (a frame waiting in a tbf qdisc is held until it leaves)",
        sample=OneOf(False, True),
    )
    replies_on_rx_cpu: bool = param(
        False,
        "flag",
        "",
        "with softirq_on_sender and no shared_cpus: what a receive soft interrupt sends (an "
        "immediate ACK, data an ACK lets go) leaves from the CPU that runs it, the peer's, and is "
        "received there, as on a veth pair or the loopback; off: every frame a host sends is "
        "received on that host's own CPU",
        sample=OneOf(False, True),
    )

    def _check_together(self, where: str) -> None:
        if self.wake_preempt and self.shared_cpus != 1:
            raise ValueError(
                f"{where}.wake_preempt models one shared CPU: it needs shared_cpus 1, "
                f"got {self.shared_cpus}"
            )
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
    start: str = param(
        "connect",
        "choice",
        "",
        "the state the run begins in: connect (a new connection: quick ACKs first, both "
        "threads idle since time 0) or established (long past its start-up: both ends "
        "interactive, no quick ACKs, both threads asleep for long; what a loop restarts from "
        "after a delayed-ACK stall)",
        choices=("connect", "established"),
        sample=OneOf("connect", "established"),
    )
    fast_forward: bool = param(
        True,
        "flag",
        "",
        "jump over exact repeats of a deterministic run's state "
        "(same numbers as running them, models.sim.fastforward)",
        sample=OneOf(False, True),
    )

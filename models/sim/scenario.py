"""The scenario: every parameter of one simulated connection, with defaults from Butterfield (2017).

Defaults describe the source's case: an iSCSI 512-byte read over 1 Gb/s Ethernet at MTU 1500, with the
stage times and latencies Butterfield measured for that size (remote initiator, TCP_NODELAY, QD=1 and a
CPU-bound QD).  How each default follows from the source's numbers (all in microseconds):

* ``sp_s = 15.9e-6``.  Server time at QD=1 is ``S2 - S1 = 32.6``, of which ``SL + SN = 16.7`` is wake-up
  latency (``SN = 0`` at QD=1), so the server's per-operation CPU time ``SI + SP + SK`` is
  ``32.6 - 16.7 = 15.9``; the CPU-bound run's 63,000 IOPS says the same (``1/63000 s = 15.87``).  The
  soft-interrupt and kworker shares are folded into ``sp_s`` (``si_s = sk_s = 0``).
* ``sl_s = 16.7e-6``: ``SL + SN`` at QD=1 with ``SN = 0``.
* ``cl_s = 23.7e-6``: ``CL + CN = RTT - (C2 - C1) - (CI + CP + CK)`` with ``CN = 0``.
* ``cp_s = 8.6e-6``.  Initiator time at QD=1 is ``RTT - (C2 - C1) = 275.7 - 243.4 = 32.3``; minus
  ``CL = 23.7`` leaves ``CI + CP + CK = 8.6``.
* ``ct_s = sr_s = st_s = cr_s = 51.125e-6``.  The source gives only their sum,
  ``CT + SR + ST + CR = (C2 - C1) - (S2 - S1) - (W1 + W2) = 243.4 - 32.6 - 6.3 = 204.5``; clocks on the two
  hosts were not synchronized, so no split is known and we split it evenly.
* ``latency_s = 0``: one cable, whose propagation (nanoseconds) is already inside the measured latencies.

With these values and a 560-byte single-segment response (``msg_more="server"``) and ``nodelay="both"``,
the QD=1 round trip is ``204.5 + 6.3 + 16.7 + 15.9 + 23.7 + 8.6 = 275.7`` us, the source's RTT.

Host latencies are *start* latencies in the source's sense: a transmit latency (CT, ST) is paid only by a
frame handed to an idle transmit path, a receive latency (CR, SR) only by a frame that reaches an idle
receive path; frames arriving behind one are batched with it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Optional

from models.analytic import TCPIP_BYTES
from models.sim.kernels import PROFILES, KernelProfile, get_profile

__all__ = ["Scenario", "SIDES"]

#: Values of the per-side options ``nodelay``, ``msg_more`` and ``flush_on_idle``.
SIDES = ("none", "client", "server", "both")


def _side_has(value: str, side: str) -> bool:
    return value == "both" or value == side


@dataclass(frozen=True)
class Scenario:
    """One connection between an initiator (client) and a server, and how long to simulate it.

    Parameters
    ----------
    qd : int
        Queue depth: operations the client keeps outstanding (>= 1).
    request_writes, response_writes : tuple of int
        Sizes in bytes of the ``send()`` calls that write one request (client) and one response
        (server).  Default ``(48,)`` and ``(48, 512)``: an iSCSI read request, and a read response written
        as a 48-byte header then 512 data bytes (Butterfield 2017).
    setup_request_writes, setup_response_writes : tuple of int
        An optional exchange done once before the loop starts (empty: none).  Flory (2001)'s program
        first asks the server for its maximum length: an 8-byte request and an 8-byte reply.
    setup_sp_s : float
        Server processing time of the setup exchange, seconds.
    mtu : int
        IP MTU in bytes; MSS = MTU - 52 (IPv4 + TCP + timestamps) [r1].
    bandwidth_bps : float
        Link rate, bits per second, both directions.
    latency_s : float
        One-way propagation delay, seconds, outside the hosts' stages.
    bucket_bytes : int or None
        Make each direction a token-bucket rate limiter (Linux ``tbf``) instead of a serializing wire:
        tokens accrue at ``bandwidth_bps`` up to this many bytes and a frame leaves at once when the bucket
        holds it (:mod:`models.sim.link`).  ``None`` (default): a wire.  It must hold a full frame
        (``mtu + 14`` bytes).  The harness's rate-limited veth uses ``2 * (mtu + 14)``.
    sp_s, cp_s : float
        Per-operation processing time of the server and client application threads, seconds.
    sl_s, cl_s : float
        Wake-up latency of the server and client threads, paid only when the thread had gone idle.
    ct_s, sr_s, st_s, cr_s : float
        Start latencies of the client transmit path, server receive path, server transmit path and client
        receive path, seconds.
    si_s, ci_s : float
        Receive soft-interrupt CPU time per segment received by the server / client, seconds (a FIFO
        stage between the receive latency and the socket).
    sk_s, ck_s : float
        Transmit CPU time per data segment the server / client sends, seconds; charged to the
        application thread when its own ``send()`` transmits the segment, else to its soft interrupt.
    nodelay : {"none", "client", "server", "both"}
        Which sockets set TCP_NODELAY (Nagle off).  Default ``"none"``: Nagle on everywhere.
    msg_more : {"none", "client", "server", "both"}
        Which side passes MSG_MORE on every ``send()`` of a message but its last.
    msg_more_last : bool
        Misuse: those sides also pass MSG_MORE on the last call of each message (held up to 200 ms).
    flush_on_idle : {"none", "client", "server", "both"}
        Which threads push any held data out (ignoring Nagle) before going idle, as SCST usermode does.
    autocork : bool or None
        ``tcp_autocorking``; ``None`` takes the kernel profile's default.
    kernel : {"linux-2.4", "linux-6"}
        Kernel profile (:mod:`models.sim.kernels`).
    hz : int or None
        Override the profile's timer ticks per second.
    kernel_timers : bool
        Apply the profile's timer details (:mod:`models.sim.kernels`): the timer wheel's one-tick round-up
        and the probe timer's ``srtt + TCP_RTO_MIN`` base.  Default ``False``: a timer armed ``n`` ticks
        ahead fires on the ``n``-th tick boundary and the probe waits ``TCP_RTO_MIN``, the textbook 40 ms
        and 200 ms.  ``True`` with ``linux-6`` reproduces a measured 6.x kernel at HZ=250: delayed ACKs
        40-44 ms after they are armed, the MSG_MORE probe 52 ticks (208 ms) (chapter 9).
    tick_phase_s : float or None
        Where in its tick the simulation starts, seconds in ``[0, 1/hz)``; ``None`` draws it from the
        seed (a connection starts at an arbitrary point of the kernel's tick).
    ops : int
        Operations to measure (after the warm-up).
    warmup_ops : int or None
        Completions excluded from the statistics first; ``None`` means ``qd``.
    seed : int
        Seed of the ``numpy.random.Generator`` behind every random draw.
    jitter : float
        Relative spread of processing times: each is multiplied by a uniform factor in
        ``[1 - jitter, 1 + jitter]`` (0 <= jitter < 1).  Default 0: deterministic times.
    trace : bool
        Record a tcpdump-like packet trace.
    trace_at : {"client", "server"}
        The host whose capture point the trace shows (outgoing frames when TCP sends them, incoming
        ones when they reach the host after its receive latency).
    check : bool
        Check the invariants after every event (slower; for tests).
    """

    qd: int = 1
    request_writes: tuple = (48,)
    response_writes: tuple = (48, 512)
    setup_request_writes: tuple = ()
    setup_response_writes: tuple = ()
    setup_sp_s: float = 0.0
    mtu: int = 1500
    bandwidth_bps: float = 1e9
    latency_s: float = 0.0
    bucket_bytes: Optional[int] = None
    sp_s: float = 15.9e-6
    cp_s: float = 8.6e-6
    sl_s: float = 16.7e-6
    cl_s: float = 23.7e-6
    ct_s: float = 51.125e-6
    sr_s: float = 51.125e-6
    st_s: float = 51.125e-6
    cr_s: float = 51.125e-6
    si_s: float = 0.0
    ci_s: float = 0.0
    sk_s: float = 0.0
    ck_s: float = 0.0
    nodelay: str = "none"
    msg_more: str = "none"
    msg_more_last: bool = False
    flush_on_idle: str = "none"
    autocork: Optional[bool] = None
    kernel: str = "linux-6"
    hz: Optional[int] = None
    kernel_timers: bool = False
    tick_phase_s: Optional[float] = None
    ops: int = 2000
    warmup_ops: Optional[int] = None
    seed: int = 0
    jitter: float = 0.0
    trace: bool = False
    trace_at: str = "server"
    check: bool = False

    def __post_init__(self) -> None:
        _whole("qd", self.qd, 1)
        object.__setattr__(self, "qd", int(self.qd))
        for name in ("request_writes", "response_writes", "setup_request_writes", "setup_response_writes"):
            value = self.__dict__[name]
            if isinstance(value, (int, float)):
                value = (value,)
            value = tuple(value)
            for v in value:
                _whole(name, v, 1)
            object.__setattr__(self, name, tuple(int(v) for v in value))
            if not value and name in ("request_writes", "response_writes"):
                raise ValueError(f"{name} must list at least one send() size in bytes, got ()")
        if bool(self.setup_request_writes) != bool(self.setup_response_writes):
            raise ValueError("setup_request_writes and setup_response_writes must be given together")
        if isinstance(self.mtu, bool) or not isinstance(self.mtu, int) or self.mtu <= TCPIP_BYTES:
            raise ValueError(f"mtu must be a whole number of bytes above the {TCPIP_BYTES} bytes of TCP/IP "
                             f"headers, got {self.mtu!r}")
        if self.bandwidth_bps is None or not (math.isfinite(float(self.bandwidth_bps)) and self.bandwidth_bps > 0):
            raise ValueError(f"bandwidth_bps must be a positive number of bits per second, got {self.bandwidth_bps!r}")
        if self.bucket_bytes is not None:
            if isinstance(self.bucket_bytes, bool) or not isinstance(self.bucket_bytes, int) \
                    or self.bucket_bytes < self.mtu + 14:
                raise ValueError(f"bucket_bytes must be a whole number of bytes holding one full frame "
                                 f"(>= mtu + 14 = {self.mtu + 14}), got {self.bucket_bytes!r}")
        for name in ("setup_sp_s", "latency_s", "sp_s", "cp_s", "sl_s", "cl_s", "ct_s", "sr_s", "st_s", "cr_s",
                     "si_s", "ci_s", "sk_s", "ck_s"):
            v = self.__dict__[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a non-negative number of seconds, got {v!r}")
        for name in ("nodelay", "msg_more", "flush_on_idle"):
            if self.__dict__[name] not in SIDES:
                raise ValueError(f"{name} must be one of {SIDES}, got {self.__dict__[name]!r}")
        if self.kernel not in PROFILES:
            raise ValueError(f"kernel must be one of {sorted(PROFILES)}, got {self.kernel!r}")
        if self.hz is not None:
            _whole("hz", self.hz, 1)
        if self.tick_phase_s is not None:
            tick = 1.0 / self.profile.hz
            if not (isinstance(self.tick_phase_s, (int, float)) and 0 <= self.tick_phase_s < tick):
                raise ValueError(f"tick_phase_s must be in [0, {tick:g}) seconds, got {self.tick_phase_s!r}")
        _whole("ops", self.ops, 1)
        if self.warmup_ops is not None:
            _whole("warmup_ops", self.warmup_ops, 0)
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if not (isinstance(self.jitter, (int, float)) and 0 <= self.jitter < 1):
            raise ValueError(f"jitter must be in [0, 1), got {self.jitter!r}")
        if self.trace_at not in ("client", "server"):
            raise ValueError(f"trace_at must be 'client' or 'server', got {self.trace_at!r}")
        if not isinstance(self.kernel_timers, bool):
            raise ValueError(f"kernel_timers must be True or False, got {self.kernel_timers!r}")
        if self.autocork is not None and not isinstance(self.autocork, bool):
            raise ValueError(f"autocork must be True, False or None, got {self.autocork!r}")

    # -- derived values ------------------------------------------------------------------------------

    @property
    def profile(self) -> KernelProfile:
        """The kernel profile, with ``hz`` applied if given."""
        p = get_profile(self.kernel)
        return p.with_hz(self.hz) if self.hz is not None else p

    @property
    def mss(self) -> int:
        """Bytes of payload per full segment: ``mtu - 52``."""
        return self.mtu - TCPIP_BYTES

    @property
    def autocork_on(self) -> bool:
        """Whether autocorking is on (the explicit setting, else the profile's default)."""
        return self.profile.autocork if self.autocork is None else self.autocork

    @property
    def warmup(self) -> int:
        """Completions excluded from the statistics."""
        return self.qd if self.warmup_ops is None else self.warmup_ops

    def nodelay_on(self, side: str) -> bool:
        """Whether ``side`` (``"client"`` or ``"server"``) sets TCP_NODELAY."""
        return _side_has(self.nodelay, side)

    def msg_more_on(self, side: str) -> bool:
        """Whether ``side`` passes MSG_MORE on all but the last ``send()`` of a message."""
        return _side_has(self.msg_more, side)

    def flush_on_idle_on(self, side: str) -> bool:
        """Whether ``side``'s thread flushes held data before sleeping."""
        return _side_has(self.flush_on_idle, side)

    def replace(self, **changes) -> "Scenario":
        """A copy with some parameters changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """Every parameter as a plain dict (JSON-friendly)."""
        return asdict(self)


def _whole(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")

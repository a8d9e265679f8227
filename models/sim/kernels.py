"""Kernel profiles: the constants and the rule classes of each kernel.

A profile is one frozen record: the TCP constants of a kernel, each with
where it lives in the kernel source (torvalds/linux), and for each rule
family of :mod:`models.sim.rules` the class that kernel follows.  Adding
a kernel behaviour is one class in ``rules`` and one line here.

``linux-2.4``
    The kernel of Flory (2001): HZ=100, so every TCP timer is a whole
    number of 10 ms ticks; loopback MTU 16436 (``drivers/net/
    loopback.c``), giving MSS 16384; no autocorking (added in 3.14); a
    timer fires on the tick it is due (Flory's 36.4 ms stall is shorter
    than 40 ms); an initial receive window of 5840 bytes, as Flory's
    trace advertises; ``ato`` fixed at 40 ms
    (:class:`~models.sim.rules.ack.LinuxAck`); Reno from 2 segments; no GSO.
``linux-6``
    Today's defaults: ``tcp_autocorking=1``; loopback MTU 65536; HZ=250
    (Debian's and this machine's ``CONFIG_HZ``; pass ``hz=1000`` to
    compare); the 4.8+ timer wheel (:class:`~models.sim.rules.clock.WheelClock`)
    and the srtt-based probe (:class:`~models.sim.rules.probe.SrttProbe`);
    the adaptive ``ato`` (:class:`~models.sim.rules.ack_adaptive.AdaptiveAck`);
    CUBIC's window from 10 segments (grown as Reno without loss); a
    3 MiB receive window; no GSO unless ``size_goal`` is given.

Timer details.  By default a scenario uses the *textbook* timers
(:meth:`KernelProfile.configured` with ``kernel_timers=False``): a timer
armed ``n`` ticks ahead fires on the ``n``-th tick boundary and the probe
waits ``TCP_RTO_MIN``, the 40 ms and 200 ms of Butterfield (2017)'s
``25 x QD`` and ``5 IOPS``.  ``kernel_timers=True`` applies the profile's
own clock and probe classes: on ``linux-6`` at HZ=250 delayed ACKs fire
40-44 ms after they are armed and the ``MSG_MORE`` probe after 52 ticks
(208 ms), as this machine measures (chapter 9).

>>> p = get_profile("linux-6")
>>> p.delack_ticks, p.rto_min_ticks, p.clock.__name__
(10, 50, 'WheelClock')
>>> p.configured(kernel_timers=False).clock.__name__
'TickClock'
"""

from __future__ import annotations

import dataclasses
from typing import Any

from models.sim.events import FS
from models.sim.rules import (
    CONGESTION_CONTROLS,
    FAMILIES,
    AckPolicy,
    AdaptiveAck,
    Autocork,
    Cork,
    LinuxAck,
    MinshallNagle,
    NaglePolicy,
    RtoMinProbe,
    SrttProbe,
    TickClock,
    WheelClock,
)
from models.sim.rules.cc import NoWindow
from models.sim.rules.rwnd import window_scale
from models.sim.rules.skb import SENDMSG_OVERHEAD_BYTES

__all__ = ["KernelProfile", "PROFILES", "get_profile", "register_profile"]


@dataclasses.dataclass(frozen=True)
class KernelProfile:
    """TCP constants and rule classes of one kernel.

    Attributes
    ----------
    name : str
    hz : int
        Timer ticks per second (``CONFIG_HZ``).
    delack_min_s : float
        ``TCP_DELACK_MIN`` = ``TCP_ATO_MIN`` = ``HZ/25`` = 40 ms
        (``include/net/tcp.h``).  The timeout actually armed is
        ``min(ato, max(srtt, 40 ms))`` (``net/ipv4/tcp_output.c``,
        ``tcp_send_delayed_ack``); with
        RTTs far below 40 ms and ``ato`` at ``TCP_ATO_MIN`` it is 40 ms.
    rto_min_s : float
        ``TCP_RTO_MIN`` = ``HZ/5`` = 200 ms (``include/net/tcp.h``): the
        floor of the probe timer (``include/net/tcp.h``,
        ``tcp_probe0_base``).
    max_quickacks : int
        ``TCP_MAX_QUICKACKS`` = 16 (``include/net/tcp.h``).
    rcv_wnd_bytes : int
        Initial receive window sizing the quick-ACK budget
        (``net/ipv4/tcp_input.c``, ``tcp_incr_quickack``): 5840 in
        Flory's 2.4 trace, 65160
        (45 segments of 1448) today.
    initial_rcv_mss : int
        ``TCP_MSS_DEFAULT`` = 536: the receiver's first guess of the
        peer's segment size (``net/ipv4/tcp_input.c``,
        ``tcp_initialize_rcv_mss``).
    loopback_mtu : int
        MTU of ``lo`` in bytes: 16436 in 2.4, 65536 today
        (``drivers/net/loopback.c``: ``loopback_init`` in 2.4,
        ``loopback_setup`` today); the MSS follows from it
        (``net/ipv4/tcp_output.c``, ``tcp_sync_mss``).
    pingpong_threshold : int
        Replies within ``ato`` before the socket counts as interactive
        (``inet_csk_in_pingpong_mode``): 1 in 2.4 and today.
    nagle, ack, cork, probe, clock : type
        The class of each rule family (``models.sim.rules.FAMILIES``).
    congestion_control : str
        The congestion rule by name (a key of
        ``models.sim.rules.CONGESTION_CONTROLS``): ``"cubic"`` today
        (grown as Reno without loss), ``"reno"`` in 2.4 (BIC and CUBIC came
        with 2.6).
    init_cwnd : int
        Initial congestion window, segments: ``TCP_INIT_CWND`` = 10
        (``include/net/tcp.h``); 2 in late 2.4 (``tcp_init_cwnd`` before an
        RTT sample).
    rcv_wnd_max_bytes : int
        The window the receiver advertises once autotuned, bytes: half of
        ``tcp_rmem[2]`` (6 MiB today, 174760 bytes in 2.4), as
        ``tcp_win_from_space`` gives.
    size_goal_bytes : int or None
        ``tcp_xmit_size_goal``: bytes per send buffer (``None``: one MSS,
        no GSO/TSO; 65536 bytes with TSO or on loopback).
    slow_start_after_idle : bool
        ``net.ipv4.tcp_slow_start_after_idle`` (1 by default).
    delack_cap_s : float
        ``TCP_DELACK_MAX`` = ``HZ/5`` = 200 ms (``include/net/tcp.h``):
        the most a delayed ACK waits in pingpong mode or after a pushed
        segment; otherwise ``HZ/2`` (``tcp_send_delayed_ack``).
    rcv_buf_bytes : int or None
        A new socket's receive buffer, bytes (``tcp_rmem[1]`` = 131072
        today).  With it the ACK rule keeps the advertised window
        (:class:`~models.sim.rules.rwnd.ReceiveSpace`) and ACKs two full
        segments at once only if the window does not shrink; ``None``
        leaves the window test out (as the linux-2.4 profile does).
    rcv_overhead_bytes : int
        Memory a received packet takes beyond its payload (``truesize``
        less length), bytes, which sets the buffer's window per byte
        (``scaling_ratio``): a packet ``tcp_sendmsg`` built, as the
        loopback or a veth pair hands it over
        (:data:`~models.sim.rules.skb.SENDMSG_OVERHEAD_BYTES`).
    rcv_window_clamp_bytes : int or None
        ``TCP_WINDOW_CLAMP`` set by the application, bytes (``None``:
        the window follows the buffer).
    rcv_wscale : int
        The receiver's window scale (``tcp_select_initial_window`` for
        ``tcp_rmem[2]`` = 6 MiB: 7): windows are multiples of
        ``2**rcv_wscale`` bytes.
    rcv_buf_max_bytes : int or None
        ``tcp_rmem[2]``, bytes: with ``rcv_buf_bytes`` the receive buffer
        autotunes up to it (``tcp_moderate_rcvbuf``,
        :class:`~models.sim.rules.rwnd.ReceiveSpace`); ``None``: the
        buffer keeps ``rcv_buf_bytes``.  At least ``rcv_buf_bytes``.
    peer_window : bool
        Whether a sender keeps to the window its peer advertises: every
        segment carries its sender's window (``tcp_select_window``, the
        :class:`~models.sim.rules.rwnd.ReceiveSpace`; so it needs
        ``rcv_buf_bytes``), each one that arrives sets the window from its
        ACK on (``tcp_ack_update_window``) and a window that opens lets held
        data go (``tcp_data_snd_check``); before any, the window of the
        handshake, unscaled and so at most 65535 bytes.  ``False``: the
        sender's window is ``rcv_wnd_max_bytes`` throughout.  Only a
        congestion control tests the window (``tcp_snd_wnd_test``).
    """

    name: str
    hz: int
    delack_min_s: float
    rto_min_s: float
    max_quickacks: int
    rcv_wnd_bytes: int
    initial_rcv_mss: int
    loopback_mtu: int
    pingpong_threshold: int
    nagle: type[NaglePolicy]
    ack: type[AckPolicy]
    cork: type[Cork]
    probe: type[RtoMinProbe]
    clock: type[TickClock]
    congestion_control: str = "cubic"
    init_cwnd: int = 10
    rcv_wnd_max_bytes: int = 3 * 1024 * 1024
    size_goal_bytes: int | None = None
    slow_start_after_idle: bool = True
    delack_cap_s: float = 0.200
    rcv_buf_bytes: int | None = None
    rcv_overhead_bytes: int = SENDMSG_OVERHEAD_BYTES
    rcv_window_clamp_bytes: int | None = None
    rcv_wscale: int = 7
    rcv_buf_max_bytes: int | None = None
    peer_window: bool = False

    def __post_init__(self) -> None:
        for family, base in FAMILIES.items():
            cls = getattr(self, family)
            if not (isinstance(cls, type) and issubclass(cls, base)):
                raise ValueError(
                    f"profile {self.name!r}: policy {family!r} must be a "
                    f"{base.__name__} class, got {cls!r}"
                )
        if self.congestion_control not in CONGESTION_CONTROLS:
            raise ValueError(
                f"profile {self.name!r}: congestion_control must be one of "
                f"{sorted(CONGESTION_CONTROLS)}, got {self.congestion_control!r}"
            )
        for name, low in (("rcv_buf_bytes", 1), ("rcv_window_clamp_bytes", 1)):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, int) and v >= low):
                raise ValueError(
                    f"profile {self.name!r}: {name} must be None or a whole number of "
                    f"bytes >= {low}, got {v!r}"
                )
        cap = self.rcv_buf_max_bytes
        if cap is not None and not (
            isinstance(cap, int) and self.rcv_buf_bytes is not None and cap >= self.rcv_buf_bytes
        ):
            raise ValueError(
                f"profile {self.name!r}: rcv_buf_max_bytes must be None or a whole number of "
                f"bytes >= rcv_buf_bytes ({self.rcv_buf_bytes!r}), got {cap!r}"
            )
        if not (isinstance(self.rcv_overhead_bytes, int) and self.rcv_overhead_bytes >= 0):
            raise ValueError(
                f"profile {self.name!r}: rcv_overhead_bytes must be a whole number of bytes "
                f">= 0, got {self.rcv_overhead_bytes!r}"
            )
        if not (isinstance(self.rcv_wscale, int) and 0 <= self.rcv_wscale <= 14):
            raise ValueError(
                f"profile {self.name!r}: rcv_wscale must be 0..14 (TCP_MAX_WSCALE), "
                f"got {self.rcv_wscale!r}"
            )
        if not isinstance(self.hz, int) or self.hz < 1:
            raise ValueError(
                f"profile {self.name!r}: hz must be a positive whole "
                f"number of ticks per second, got {self.hz!r}"
            )

    @property
    def tick_s(self) -> float:
        """Seconds per tick (one jiffy)."""
        return 1.0 / self.hz

    @property
    def delack_ticks(self) -> int:
        """The delayed-ACK timeout in ticks, ``HZ/25``."""
        return max(1, round(self.delack_min_s * self.hz))  # s -> ticks

    @property
    def rto_min_ticks(self) -> int:
        """The probe floor in ticks, ``HZ/5``."""
        return max(1, round(self.rto_min_s * self.hz))  # s -> ticks

    @property
    def delack_max_s(self) -> float:
        """The longest a delayed ACK waits in seconds, ``delack_ticks``
        plus the clock's round-up (a timer armed just after a tick
        starts)."""
        return (self.delack_ticks + self.clock.roundup) / self.hz

    @property
    def autocork(self) -> bool:
        """Whether this profile's cork rule autocorks."""
        return self.cork.autocork

    def congestion(self, mss: int) -> NoWindow:
        """A new congestion rule object for a sender of ``mss`` bytes."""
        cls = CONGESTION_CONTROLS[self.congestion_control]
        if not cls.windowed:
            return cls()
        rto_min = round(self.rto_min_s * FS)  # s -> fs
        return cls(  # type: ignore[call-arg]
            self.init_cwnd, mss, None, self.slow_start_after_idle, rto_min
        )

    def with_policies(self, **classes: Any) -> KernelProfile:
        """The same kernel with some rule classes swapped."""
        for family in classes:
            if family not in FAMILIES:
                raise ValueError(f"unknown rule family {family!r}; known: {sorted(FAMILIES)}")
        return dataclasses.replace(self, **classes)

    def variant(self, name: str, **classes: type) -> KernelProfile:
        """A profile called ``name``: this kernel with some rules swapped
        (register it with :func:`register_profile` to use it by name)."""
        return dataclasses.replace(self.with_policies(**classes), name=name)

    def configured(
        self,
        hz: int | None = None,
        autocork: bool | None = None,
        kernel_timers: bool = True,
        **settings: Any,
    ) -> KernelProfile:
        """The profile with a scenario's kernel settings applied.

        ``kernel_timers=False`` swaps in the textbook clock and probe
        (:class:`~models.sim.rules.clock.TickClock`, :class:`~models.sim.rules.probe.RtoMinProbe`).
        ``settings`` replace constants (``size_goal_bytes``,
        ``congestion_control``, ``rcv_wnd_max_bytes``,
        ``slow_start_after_idle``, ``peer_window``); ``None`` keeps the
        profile's.
        """
        p = self
        given = {k: v for k, v in settings.items() if v is not None}
        if given:
            p = dataclasses.replace(p, **given)
        if hz is not None:
            p = dataclasses.replace(p, hz=hz)
        if autocork is not None and autocork != p.autocork:
            p = p.with_policies(cork=Autocork if autocork else Cork)
        if not kernel_timers:
            p = p.with_policies(clock=TickClock, probe=RtoMinProbe)
        return p


PROFILES: dict[str, KernelProfile] = {
    "linux-2.4": KernelProfile(
        name="linux-2.4",
        hz=100,
        delack_min_s=0.040,
        rto_min_s=0.200,
        max_quickacks=16,
        rcv_wnd_bytes=5840,
        initial_rcv_mss=536,
        loopback_mtu=16436,
        pingpong_threshold=1,
        nagle=MinshallNagle,
        ack=LinuxAck,
        cork=Cork,
        probe=RtoMinProbe,
        clock=TickClock,
        congestion_control="reno",
        init_cwnd=2,
        rcv_wnd_max_bytes=174760 // 2,
    ),
    "linux-6": KernelProfile(
        name="linux-6",
        hz=250,
        delack_min_s=0.040,
        rto_min_s=0.200,
        max_quickacks=16,
        rcv_wnd_bytes=65160,
        initial_rcv_mss=536,
        loopback_mtu=65536,
        pingpong_threshold=1,
        nagle=MinshallNagle,
        ack=AdaptiveAck,
        cork=Autocork,
        probe=SrttProbe,
        clock=WheelClock,
    ),
}
#: linux-6 with the receive window's test of two full segments
#: (:mod:`models.sim.rules.rwnd`, ``tcp_rmem[1]`` = 131072 bytes).  It is
#: Linux's rule, and the packetdrill scripts pass with it; the book's
#: profile leaves it out because, with it, the simulated hosts fit the
#: field sweep worse (chapter 9, "Which ACKs wait").
PROFILES["linux-6-rwnd"] = dataclasses.replace(
    PROFILES["linux-6"], name="linux-6-rwnd", rcv_buf_bytes=131072
)
#: linux-6-rwnd with the receive buffer's autotuning as Linux 6.18 does it
#: (:class:`~models.sim.rules.rwnd.ReceiveSpace`) and 6.18's defaults:
#: ``tcp_rmem`` = 4096 131072 33554432 (``tcp_rmem[2]`` raised to 32 MiB in
#: 6.18), so a window scale of 10 (``tcp_select_initial_window``,
#: :func:`~models.sim.rules.rwnd.window_scale`).
PROFILES["linux-6.18-rwnd"] = dataclasses.replace(
    PROFILES["linux-6-rwnd"],
    name="linux-6.18-rwnd",
    rcv_buf_max_bytes=32 * 1024 * 1024,
    rcv_wscale=window_scale(32 * 1024 * 1024),
)


def register_profile(profile: KernelProfile) -> KernelProfile:
    """Make ``profile`` usable as ``Scenario(kernel={"profile": name})``.

    >>> from models.sim.rules import ClassicNagle
    >>> p = register_profile(get_profile("linux-6").variant(
    ...     "linux-6-rfc896", nagle=ClassicNagle))
    >>> get_profile("linux-6-rfc896").nagle.__name__
    'ClassicNagle'
    """
    if not isinstance(profile, KernelProfile):
        raise ValueError(f"profile must be a KernelProfile, got {profile!r}")
    old = PROFILES.get(profile.name)
    if old is not None and old != profile:
        raise ValueError(f"a different profile is already called {profile.name!r}")
    PROFILES[profile.name] = profile
    return profile


def get_profile(name: str) -> KernelProfile:
    """The profile called ``name``; ``ValueError`` naming the known ones."""
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"kernel.profile must be one of {sorted(PROFILES)}, got {name!r}"
        ) from None

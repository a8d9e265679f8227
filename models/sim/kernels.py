"""Kernel profiles: the Linux TCP constants the simulator follows, one frozen record per kernel.

Every constant names where it lives in the kernel source (torvalds/linux) and is summarized with its
source in ``/work/shared/reference/linux-tcp-rules.md`` (rule numbers are given as ``[rN]``).

Two profiles exist:

``linux-2.4``
    The kernel of Flory (2001): HZ=100, so every TCP timer is a whole number of 10 ms ticks; loopback
    MTU 16436 (``drivers/net/loopback.c``), giving MSS 16384 with timestamps; no autocorking (added in
    3.14); an initial receive window of 5840 bytes as Flory's trace advertises (``Win=5840``).
``linux-6``
    Today's defaults: ``net.ipv4.tcp_autocorking=1``; loopback MTU 65536; HZ=250 (Debian's and this
    machine's ``CONFIG_HZ``; several distributions use 1000, pass ``hz=1000`` to compare).

Timer details.  By default the simulator fires a timer armed ``n`` ticks ahead on the ``n``-th tick
boundary and arms the probe timer ``TCP_RTO_MIN`` ahead: the 40 ms and 200 ms of the textbook model
(Butterfield 2017's ``25 x QD`` and ``5 IOPS``).  A measured 6.x kernel differs in two documented ways,
recorded here and applied when a scenario sets ``kernel_timers=True``:

* ``timer_roundup_ticks``: since Linux 4.8 the timer wheel never fires early; ``calc_index`` in
  ``kernel/time/timer.c`` rounds every expiry up by one tick of its level (``expires = (expires >>
  LVL_SHIFT(lvl)) + 1``), so a level-0 timer (under 64 ticks ahead: every TCP timer here) fires one tick
  after it is due.  At HZ=250 the 10-tick delayed ACK fires 40-44 ms after it is armed.  The 2.4 wheel
  ran a timer on the tick it was due (Flory's 36.4 ms stall is shorter than 40 ms), hence 0 there.
* ``probe_rto_srtt``: the probe timer's base is ``max(icsk_rto, TCP_RTO_MIN)`` (``tcp_probe0_base`` in
  ``include/net/tcp.h``), and ``icsk_rto = usecs_to_jiffies(srtt + rttvar)`` (``__tcp_set_rto``) with
  ``rttvar`` never below ``TCP_RTO_MIN`` (``tcp_rtt_estimator`` in ``net/ipv4/tcp_input.c`` floors
  ``mdev_max_us`` at ``tcp_rto_min_us``).  Any positive smoothed RTT therefore adds a tick after rounding
  up: 51 ticks at HZ=250, and 52 with the wheel's round-up, the 208 ms this machine measures.

Times are in seconds; ``hz`` is in ticks per second.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["KernelProfile", "PROFILES", "get_profile"]


@dataclass(frozen=True)
class KernelProfile:
    """TCP constants of one kernel version.

    Attributes
    ----------
    name : str
        ``"linux-2.4"`` or ``"linux-6"``.
    hz : int
        Timer ticks per second (``CONFIG_HZ``). Delayed-ACK and probe timers fire on tick boundaries
        (``include/linux/jiffies.h``; ``kernel/time/timer.c``).
    delack_min_s : float
        ``TCP_DELACK_MIN`` = ``TCP_ATO_MIN`` = ``HZ/25`` ticks = 40 ms (``include/net/tcp.h``) [r11].
        The delayed-ACK timeout actually armed is ``min(ato, max(srtt, 40 ms))`` in
        ``tcp_send_delayed_ack`` (``net/ipv4/tcp_output.c``); with the simulated RTTs far below 40 ms and
        ``ato`` held at ``TCP_ATO_MIN`` by ``tcp_event_data_recv`` for gaps under 20 ms, it is 40 ms.
    rto_min_s : float
        ``TCP_RTO_MIN`` = ``HZ/5`` = 200 ms (``include/net/tcp.h``): the floor of the zero-window probe
        timer that finally sends data held by a cork or MSG_MORE nobody followed up
        (``tcp_check_probe_timer``, ``tcp_probe0_base``) [r6].
    max_quickacks : int
        ``TCP_MAX_QUICKACKS`` = 16 (``include/net/tcp.h``) [r9].
    rcv_wnd_bytes : int
        Initial receive window used to size the quick-ACK budget in ``tcp_incr_quickack``:
        ``quick = min(max(rcv_wnd / (2 * rcv_mss), 2), max_quickacks)`` [r9]. 5840 in Flory's 2.4 trace;
        65160 (45 segments of 1448) on a current kernel.
    initial_rcv_mss : int
        ``TCP_MSS_DEFAULT`` = 536 bytes: the receiver's first estimate of the peer's segment size
        (``tcp_initialize_rcv_mss``, ``net/ipv4/tcp_input.c``) [r15].
    autocork : bool
        Whether ``tcp_autocorking`` exists and is on by default (Linux >= 3.14; ``tcp_should_autocork``
        in ``net/ipv4/tcp.c``) [r7].
    loopback_mtu : int
        MTU of ``lo`` in bytes (``drivers/net/loopback.c``): 16436 in 2.4, 65536 today [r1].
    pingpong_threshold : int
        Data replies sent within ``ato`` of a receive before the socket counts as interactive
        (``inet_csk_in_pingpong_mode``). 1 in 2.4 and in 6.x (``tcp_pingpong_thresh`` defaults to 1;
        4.19-5.16 used 3) [r14].
    timer_roundup_ticks : int
        Ticks after its expiry that a timer runs (``calc_index`` in ``kernel/time/timer.c``): 0 in 2.4,
        1 since 4.8.  Applied only with ``Scenario(kernel_timers=True)``.
    probe_rto_srtt : bool
        Whether the probe timer's base is ``srtt + TCP_RTO_MIN`` rounded up to a tick (``tcp_probe0_base``,
        ``__tcp_set_rto``) rather than ``TCP_RTO_MIN``.  Applied only with ``kernel_timers=True``.
    """

    name: str
    hz: int
    delack_min_s: float
    rto_min_s: float
    max_quickacks: int
    rcv_wnd_bytes: int
    initial_rcv_mss: int
    autocork: bool
    loopback_mtu: int
    pingpong_threshold: int
    timer_roundup_ticks: int = 0
    probe_rto_srtt: bool = False

    @property
    def tick_s(self) -> float:
        """Seconds per timer tick (one jiffy): ``1 / hz``."""
        return 1.0 / self.hz

    @property
    def delack_ticks(self) -> int:
        """The delayed-ACK timeout in ticks: ``HZ/25`` (4 at HZ=100, 10 at HZ=250)."""
        return max(1, round(self.delack_min_s * self.hz))

    @property
    def rto_min_ticks(self) -> int:
        """The probe timer floor in ticks: ``HZ/5``."""
        return max(1, round(self.rto_min_s * self.hz))

    def with_hz(self, hz: int) -> "KernelProfile":
        """The same profile with another tick rate (``CONFIG_HZ``)."""
        if not isinstance(hz, int) or hz <= 0:
            raise ValueError(f"hz must be a positive whole number of ticks per second, got {hz!r}")
        return replace(self, hz=hz)


PROFILES: dict[str, KernelProfile] = {
    "linux-2.4": KernelProfile(
        name="linux-2.4", hz=100, delack_min_s=0.040, rto_min_s=0.200, max_quickacks=16,
        rcv_wnd_bytes=5840, initial_rcv_mss=536, autocork=False, loopback_mtu=16436, pingpong_threshold=1,
    ),
    "linux-6": KernelProfile(
        name="linux-6", hz=250, delack_min_s=0.040, rto_min_s=0.200, max_quickacks=16,
        rcv_wnd_bytes=65160, initial_rcv_mss=536, autocork=True, loopback_mtu=65536, pingpong_threshold=1,
        timer_roundup_ticks=1, probe_rto_srtt=True,
    ),
}


def get_profile(name: str) -> KernelProfile:
    """The profile called ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise ValueError(f"kernel must be one of {sorted(PROFILES)}, got {name!r}") from None

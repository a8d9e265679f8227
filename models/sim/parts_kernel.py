"""The :class:`Kernel` part of a scenario: the kernel profile
(:mod:`models.sim.kernels`), its timer details and the sender's
mechanisms (size goal, congestion control, receive window).

Re-exported by :mod:`models.sim.parts` and :mod:`models.sim.scenario`.
"""

from __future__ import annotations

import dataclasses

from models.sim.kernels import PROFILES, KernelProfile, get_profile
from models.sim.params import OneOf, Part, param
from models.sim.rules import CONGESTION_CONTROLS

__all__ = ["Kernel"]

_kw = dict(frozen=True, kw_only=True)


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

    size_goal: int | None = param(
        None,
        "bytes",
        "bytes",
        "tcp_xmit_size_goal: bytes per send buffer and GSO/TSO super-packet, "
        "a whole number of MSS (default: the profile's; one MSS, no GSO; 65536 "
        "with TSO or on loopback)",
        optional=True,
        low=1,
        high=1 << 20,
        sample=OneOf(None, 65536),
    )
    congestion_control: str = param(
        "none",
        "choice",
        "",
        "congestion control: none (no window, no pacing: the book's results), "
        "profile (the profile's own: cubic on linux-6, reno on linux-2.4), reno, "
        "cubic (reno's growth without loss), bbr (its own window and pacing)",
        choices=("profile", *CONGESTION_CONTROLS),
        sample=OneOf("none", "profile", "reno", "bbr"),
    )
    rcv_wnd: int | None = param(
        None,
        "bytes",
        "bytes",
        "the receive window each host advertises (default: the profile's, autotuned)",
        optional=True,
        low=1,
        high=1 << 30,
        sample=OneOf(None, 65535),
    )
    slow_start_after_idle: bool = param(
        True,
        "flag",
        "",
        "net.ipv4.tcp_slow_start_after_idle: restart cwnd after an idle RTO",
        sample=OneOf(True, False),
    )
    peer_window: bool | None = param(
        None,
        "flag",
        "",
        "the sender keeps to the window its peer advertises on each segment (needs a "
        "profile with a receive buffer, such as linux-6-rwnd, and a congestion control; "
        "default: the profile's)",
        optional=True,
        sample=OneOf(None, False),
    )

    def _check_together(self, where: str) -> None:
        tick = 1.0 / self.hz_value
        if self.tick_phase_s is not None and not self.tick_phase_s < tick:
            raise ValueError(
                f"{where}.tick_phase_s must be in [0, {tick:g}) seconds, got {self.tick_phase_s!r}"
            )
        if self.peer_window:
            if get_profile(self.profile).rcv_buf_bytes is None:
                raise ValueError(
                    f"{where}.peer_window needs a profile with a receive buffer "
                    f"(rcv_buf_bytes, e.g. linux-6-rwnd); {self.profile!r} has none"
                )
            if self.congestion_control == "none":
                raise ValueError(
                    f"{where}.peer_window needs a congestion control (profile, reno, cubic or "
                    "bbr): with 'none' no window is tested"
                )

    @property
    def hz_value(self) -> int:
        """``hz``, or the profile's."""
        return self.hz or get_profile(self.profile).hz

    def resolve(self) -> KernelProfile:
        """The profile with ``hz``, ``autocork``, the timers and the
        sender's mechanisms applied."""
        return get_profile(self.profile).configured(
            hz=self.hz,
            autocork=self.autocork,
            kernel_timers=self.kernel_timers,
            size_goal_bytes=self.size_goal,
            congestion_control=(
                None if self.congestion_control == "profile" else self.congestion_control
            ),
            rcv_wnd_max_bytes=self.rcv_wnd,
            slow_start_after_idle=self.slow_start_after_idle,
            peer_window=self.peer_window,
        )

"""The state of a packetdrill run, shared by its parts (``runner``, ``segments``, ``syscalls``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from models.sim.events import EventLoop
from models.sim.kernels import KernelProfile
from models.sim.packetdrill.outcome import _MSS_DEFAULT, _Out
from models.sim.packetdrill.parser import Event, Script


@dataclass
class _State:
    """Everything a run keeps; the steps that its parts call on one another are declared here and
    defined by the run (``models.sim.packetdrill.runner``)."""

    script: Script
    profile: KernelProfile
    tolerance: int  # fs
    phase: int  # fs into the first tick
    loop: EventLoop = field(default_factory=EventLoop)
    out: list[_Out] = field(default_factory=list)
    matched: int = 0
    trace: list[tuple[int, str, str]] = field(default_factory=list)
    fds: dict[int, str] = field(default_factory=dict)
    conn_fd: int | None = None
    state: str = "closed"
    nodelay: bool = False
    cork: bool = False
    nonblocking: bool = False
    autocork: bool | None = None
    tbf: tuple[int, int] | None = None  # (bits/s, bytes)
    window_clamp: int | None = None  # bytes
    peer_mss: int = _MSS_DEFAULT
    peer_ts: bool = False
    peer_wscale: int | None = None
    snd_wnd: int = 0  # bytes the peer allows beyond snd_una
    syn_time: int = 0  # fs: the SYN-ACK (passive) or SYN (active) left
    ep: Any = None
    fin: bool = False
    clock: Any = None
    tolerance_percent: float = 12.5
    prev_script: int = 0  # fs: the previous event's scripted time
    prev_actual: int = 0  # fs: when the previous event completed
    line: int = 0  # the event being run

    def synthetic(self, t: int, flags: str, start: int, end: int, ack: int) -> None:
        raise NotImplementedError

    def establish(self, now: int, line: int) -> None:
        raise NotImplementedError

    def check_established(self, ev: Event, what: str) -> None:
        raise NotImplementedError

    def wait_segment(self, deadline: int) -> None:
        raise NotImplementedError

"""What a packetdrill run reports (mismatches, trace lines, outcomes) and the constants of the
runner (:mod:`models.sim.packetdrill.runner`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from models.sim.events import FS
from models.sim.link import Channel
from models.sim.rules.skb import SKB_SHINFO_BYTES, skb_truesize
from models.sim.segment import Segment

#: packetdrill's default timing tolerance, microseconds.
DEFAULT_TOLERANCE_USECS = 4000
#: packetdrill's default dynamic tolerance, percent of the time since the
#: previous event (``--tolerance_percent``).
DEFAULT_TOLERANCE_PERCENT = 12.5
_FS_PER_US = 10**9  # femtoseconds per microsecond
#: The timestamps option, bytes, when both SYNs carry it (``tcp_sync_mss``).
_TS_OPTION_BYTES = 12
#: ``TCP_MSS_DEFAULT``: the MSS assumed when the SYN has no mss option, bytes.
_MSS_DEFAULT = 536
#: ``TCP_INIT_CWND``: Linux's initial congestion window, segments.
_INIT_CWND = 10
#: ``NET_SKB_PAD`` + ``NET_IP_ALIGN``, bytes.
_SKB_PAD_BYTES = 64 + 2


def tun_truesize(payload: int, headers: int = 52) -> int:
    """Memory (``truesize``, bytes) of a segment of ``payload`` bytes that
    tun delivers: one linear buffer from ``kmalloc`` (a power of two)
    holding the pad, ``headers`` (IP + TCP with timestamps) and the
    payload, with its shared info, plus the ``sk_buff`` (``tun_get_user``,
    ``tun_alloc_skb``; ``SKB_TRUESIZE``).

    >>> tun_truesize(1000)
    2304
    """
    head = -(-(_SKB_PAD_BYTES + headers + payload) // 64) * 64 + SKB_SHINFO_BYTES
    return skb_truesize((1 << (head - 1).bit_length()) - SKB_SHINFO_BYTES)


#: A transmit path that completes at once (tun): a rate so high that any
#: frame's wire time rounds to 0 fs, bits per second.
_INSTANT_BPS = 10**24
#: Bytes per unit of a tbf burst suffix (k, m), and bits per second per
#: unit of a rate suffix (k, m, g): tc's units are powers of 1000 for
#: rates and 1024 for sizes.
_BYTE_UNITS = {"": 1, "k": 1024, "m": 1024 * 1024}
_RATE_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
#: ``TCP_WINDOW_CLAMP``'s option number (``include/uapi/linux/tcp.h``),
#: which packetdrill scripts must spell as a number.
_TCP_WINDOW_CLAMP = "10"
#: How long a ``*`` expectation waits for a segment at most, fs (60 s).
_ANY_TIME_CAP = 60 * FS


@dataclass(frozen=True)
class Mismatch:
    """Where the simulator and the script first disagree.

    Attributes
    ----------
    line : int
        The script line.
    time_s : float
        The scripted time of that line, seconds (for ``*``: when the
        simulated segment left).
    expected : str
        What the script expects (a segment, or a call's result).
    simulated : str or None
        What the simulator did instead (``None``: nothing).
    simulated_time_s : float or None
        When, seconds.
    reason : str
        Which part differs.
    """

    line: int
    time_s: float
    expected: str
    simulated: str | None
    simulated_time_s: float | None
    reason: str

    def __str__(self) -> str:
        sim = "nothing"
        if self.simulated is not None:
            sim = self.simulated
            if self.simulated_time_s is not None:
                sim = f"{sim} at {self.simulated_time_s:.6f} s"
        return (
            f"line {self.line}: {self.reason}\n"
            f"    script    at {self.time_s:.6f} s: {self.expected}\n"
            f"    simulator: {sim}"
        )


@dataclass(frozen=True)
class TraceLine:
    """One segment of the run: ``time_s`` seconds, ``direction`` ``"<"``
    (the script's peer) or ``">"`` (the simulated socket), ``text`` as
    packetdrill prints it."""

    time_s: float
    direction: str
    text: str

    def __str__(self) -> str:
        return f"{self.time_s:10.6f} {self.direction} {self.text}"


@dataclass(frozen=True)
class Outcome:
    """The result of one script: ``passed``, the first ``mismatch`` (or
    ``None``), the ``profile`` name and the segments of the run."""

    name: str
    profile: str
    passed: bool
    mismatch: Mismatch | None
    trace: tuple[TraceLine, ...] = ()

    def trace_text(self) -> str:
        """The run's segments, one a line."""
        return "\n".join(str(t) for t in self.trace)


class _Failed(Exception):
    """The first mismatch: ends the run."""

    def __init__(self, mismatch: Mismatch) -> None:
        super().__init__(str(mismatch))
        self.mismatch = mismatch


@dataclass
class _Out:
    """A segment the local socket sent: at ``t`` fs (when it left the
    transmit path), ``handshake`` if made up by the runner."""

    t: int
    flags: str
    start: int
    end: int
    ack: int
    handshake: bool = False

    def describe(self) -> str:
        text = f"{self.flags} {self.start}:{self.end}({self.end - self.start})"
        return text if self.flags == "S" else f"{text} ack {self.ack}"


class _App:
    """The endpoint's application: the script's calls do the reading."""

    busy = waking = False  # (the endpoint tells it of every arrival)

    def on_data(self, now: int) -> None:
        """Data arrived (the script reads it with ``read``)."""


class _Tap(Channel):
    """The local transmit path: a :class:`~models.sim.link.Channel` that
    also reports each segment when it leaves (``on_send(done, seg)``)."""

    __slots__ = ("on_send",)
    on_send: Callable[[int, Segment], None]

    def send(self, now: int, seg: Segment) -> int:
        done = super().send(now, seg)
        self.on_send(done, seg)
        return done

    def send_gso(self, now: int, seg: Segment, mss: int, trace: list | None = None) -> None:
        """tun takes a GSO packet whole; a ``tbf`` qdisc cuts one larger
        than its burst into segments (``tbf_segment``)."""
        if self.qdisc is None:
            if trace is not None:
                trace.append(seg.seen(now))
            self.send(now, seg)
            return
        self._send_gso(now, seg, mss, trace)  # (each segment through our send)


def _seconds(fs: int) -> float:
    return fs / FS  # fs -> s

"""Bytes on the wire: header sizes and the MSS rule, defined once.

Every other module (the analytic results, the packet simulator, the
kernel comparisons, the figures) takes these facts from here.  Standard
library only, so the same values are used in the reader's browser.

>>> mss(1500), mss(9000), mss(65536)
(1448, 8948, 65483)
>>> frame_bytes(1448), bucket_bytes(1448)
(1538, 1514)
>>> frames(560), wire_time(560, 1e9)
(1, 5.2e-06)
"""

from __future__ import annotations

import math
import re

__all__ = [
    "TCPIP_BYTES",
    "MAC_BYTES",
    "ETH_HEADER_BYTES",
    "FRAME_OVERHEAD_BYTES",
    "BUCKET_OVERHEAD_BYTES",
    "ISCSI_HEADER_BYTES",
    "IPV4_MAX_PACKET",
    "MAX_MTU",
    "check_mtu",
    "mss",
    "frame_bytes",
    "bucket_bytes",
    "TBF_BURST_FRAMES",
    "TBF_BURST_RANGE",
    "tbf_burst_bytes",
    "burst_suffix",
    "burst_frames",
    "frames",
    "wire_time",
]

#: IPv4 (20) + TCP (20) headers plus the 12-byte timestamps option, bytes
#: per segment (``net/ipv4/tcp_output.c``, ``tcp_sync_mss``).
TCPIP_BYTES = 52
#: Ethernet preamble + start-of-frame (8) + MAC header (14) + CRC (4) +
#: inter-frame gap (12): bytes a frame occupies on the wire beyond its IP
#: packet.
MAC_BYTES = 38
#: The Ethernet (MAC) header alone in bytes, which the ``tbf`` qdisc counts
#: beyond the IP packet (``qdisc_pkt_len``).
ETH_HEADER_BYTES = 14
#: Everything a segment pays on a serializing wire besides its payload.
FRAME_OVERHEAD_BYTES = TCPIP_BYTES + MAC_BYTES
#: What a token bucket (``tbf``) charges a segment beyond its payload.
BUCKET_OVERHEAD_BYTES = TCPIP_BYTES + ETH_HEADER_BYTES
#: An iSCSI basic header segment (a read request or a read response
#: header), bytes (RFC 7143, section 11.2).
ISCSI_HEADER_BYTES = 48
#: The largest IPv4 packet in bytes, set by the 16-bit total-length field.
#: Linux loopback has MTU 65536, but its MSS is computed from this cap.
IPV4_MAX_PACKET = 65535
#: The largest MTU the models accept in bytes, Linux loopback's (``lo``).
MAX_MTU = 65536
#: Depth of the harness's ``tbf`` bucket in full frames, unless a run
#: says otherwise (``models.measure.netns``): two, so that per-frame
#: serialization is emulated closely.
TBF_BURST_FRAMES = 2
#: Bounds of a ``tbf`` bucket's depth in full frames: one frame must fit;
#: a thousand 1500-byte frames (1.5 MB) hold far more than any window here.
TBF_BURST_RANGE = (1, 1000)


def check_mtu(mtu: object) -> int:
    """``mtu`` as an int, or ``ValueError`` naming it unless it is a whole
    number of bytes from 53 (one byte of payload after the headers) to
    :data:`MAX_MTU`.

    >>> check_mtu(1500.0), check_mtu(65536)
    (1500, 65536)
    """
    if isinstance(mtu, (bool, str, bytes)):
        raise ValueError(f"mtu must be a whole number of bytes, got {mtu!r}")
    try:
        m = float(mtu)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"mtu must be a whole number of bytes, got {mtu!r}") from None
    if not math.isfinite(m) or m != int(m):
        raise ValueError(f"mtu must be a whole number of bytes, got {mtu!r}")
    if m <= TCPIP_BYTES:
        raise ValueError(f"mtu must exceed the {TCPIP_BYTES} bytes of TCP/IP headers, got {mtu!r}")
    if m > MAX_MTU:
        raise ValueError(
            f"mtu must be at most {MAX_MTU} bytes (Linux loopback's MTU; an IPv4 packet holds at "
            f"most {IPV4_MAX_PACKET}), got {mtu!r}"
        )
    return int(m)


def mss(mtu: int = 1500) -> int:
    """TCP payload bytes per full segment at this IP MTU, bytes.

    ``min(MTU, 65535) - 52``: IPv4 + TCP + timestamps come off the MTU,
    and an IPv4 packet never exceeds 65,535 bytes, so loopback's MTU of
    65,536 gives 65,483 (measured on Linux 6.18, chapter 9).
    """
    return min(check_mtu(mtu), IPV4_MAX_PACKET) - TCPIP_BYTES


def frame_bytes(payload_bytes: int) -> int:
    """Bytes one segment occupies on a serializing Ethernet wire."""
    return payload_bytes + FRAME_OVERHEAD_BYTES


def bucket_bytes(payload_bytes: int) -> int:
    """Bytes a ``tbf`` token bucket charges for one segment."""
    return payload_bytes + BUCKET_OVERHEAD_BYTES


def tbf_burst_bytes(mtu: int, burst_frames: int = TBF_BURST_FRAMES) -> int:
    """Depth in bytes of a ``tbf`` bucket that holds ``burst_frames`` full
    frames at this MTU (each an IP packet plus its Ethernet header).

    >>> tbf_burst_bytes(1500), tbf_burst_bytes(1500, 10)
    (3028, 15140)
    """
    lo, hi = TBF_BURST_RANGE
    if (
        isinstance(burst_frames, bool)
        or not isinstance(burst_frames, int)
        or not lo <= burst_frames <= hi
    ):
        raise ValueError(f"burst_frames must be an integer {lo}..{hi}, got {burst_frames!r}")
    return burst_frames * bucket_bytes(mss(mtu))


def burst_suffix(burst_frames: int) -> str:
    """What a link's label adds for a ``tbf`` bucket of ``burst_frames``
    full frames: nothing for the harness's default depth, else ``-b<N>``.

    >>> burst_suffix(TBF_BURST_FRAMES), burst_suffix(10)
    ('', '-b10')
    """
    return "" if burst_frames == TBF_BURST_FRAMES else f"-b{burst_frames}"


def burst_frames(label: str) -> int:
    """The ``tbf`` bucket depth, in full frames, that a link's label names
    (:func:`burst_suffix`; the default when it names none).

    >>> burst_frames("veth-1500-1g"), burst_frames("veth-1500-1g-b10")
    (2, 10)
    """
    found = re.search(r"-b([0-9]+)(?:-|$)", str(label))
    return TBF_BURST_FRAMES if found is None else int(found.group(1))


def frames(payload_bytes: int, mtu: int = 1500) -> int:
    """Segments a message of ``payload_bytes`` needs at this MTU (at
    least one: an empty message is one bare ACK)."""
    if (
        isinstance(payload_bytes, bool)
        or not isinstance(payload_bytes, (int, float))
        or payload_bytes != payload_bytes
        or payload_bytes < 0
        or payload_bytes != int(payload_bytes)
    ):
        raise ValueError(
            f"payload_bytes must be a whole, non-negative number of bytes, got {payload_bytes!r}"
        )
    return max(1, -(-int(payload_bytes) // mss(mtu)))


def wire_time(payload_bytes: int, bandwidth_bps: float, mtu: int = 1500) -> float:
    """Seconds a message of ``payload_bytes`` occupies a wire.

    The message is cut into segments of at most :func:`mss` bytes, each
    paying :data:`FRAME_OVERHEAD_BYTES` of headers and framing.
    """
    if (
        isinstance(bandwidth_bps, bool)
        or not isinstance(bandwidth_bps, (int, float))
        or not bandwidth_bps > 0
        or bandwidth_bps == float("inf")
    ):
        raise ValueError(
            f"bandwidth_bps must be a positive number of bits per second, got {bandwidth_bps!r}"
        )
    n = frames(payload_bytes, mtu)
    total = int(payload_bytes) + n * FRAME_OVERHEAD_BYTES
    return total * 8 / bandwidth_bps  # bytes -> bits, bits / (bits/s) = s

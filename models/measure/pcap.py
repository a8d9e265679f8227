"""Reading TCP segments from a capture file: pcap or pcapng, IPv4 or IPv6.

Link types: Ethernet, Linux cooked capture (SLL and SLL2, what ``tcpdump -i any`` writes), BSD/Linux
loopback (``DLT_NULL``/``DLT_LOOP``) and raw IP.  Parsing uses the maintained ``dpkt`` library,
imported when a file is read.

:func:`read_capture` returns every TCP segment in capture order, and the options of each SYN it saw
(the MSS and the window scale a side announced), which :mod:`models.measure.diagnose` needs to know a
full segment from a partial one and the receive window in bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Segment", "SynOptions", "CaptureFile", "read_capture", "CaptureError"]

#: pcap and pcapng magic numbers (first four bytes of the file).
_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1",  # microseconds, little-endian
    b"\xa1\xb2\xc3\xd4",  # microseconds, big-endian
    b"\x4d\x3c\xb2\xa1",  # nanoseconds, little-endian
    b"\xa1\xb2\x3c\x4d",  # nanoseconds, big-endian
}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"  # section header block type
#: Link-layer types (www.tcpdump.org/linktypes.html).
_NULL, _EN10MB, _RAW, _RAW_ALT, _RAW_ALT2, _LOOP, _SLL, _SLL2 = 0, 1, 101, 12, 14, 108, 113, 276
#: TCP option kinds (RFC 9293, RFC 7323).
_OPT_MSS, _OPT_WSCALE, _OPT_TIMESTAMP = 2, 3, 8
#: Bytes the timestamps option takes in every segment once both sides agreed on it (10 + 2 padding).
TIMESTAMP_OPTION_BYTES = 12


# TCP header flag bits (RFC 9293)
_TH_FIN, _TH_SYN, _TH_PUSH = 0x01, 0x02, 0x08


@dataclass(frozen=True)
class Segment:
    """One captured TCP segment.

    ``time_s`` is the capture timestamp (seconds); ``payload_bytes`` the TCP payload length; ``seq`` and
    ``ack`` the raw 32-bit numbers; ``flags`` the TCP flag byte.
    """

    time_s: float
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int
    payload_bytes: int
    window: int

    @property
    def syn(self) -> bool:
        return bool(self.flags & _TH_SYN)

    @property
    def fin(self) -> bool:
        return bool(self.flags & _TH_FIN)

    @property
    def psh(self) -> bool:
        return bool(self.flags & _TH_PUSH)


class CaptureError(ValueError):
    """A file that cannot be read as a capture of TCP traffic; the message is one line."""


@dataclass(frozen=True)
class SynOptions:
    """What one side announced in its SYN: the MSS (bytes), the window scale shift, and whether it
    offered timestamps (then every segment carries 12 bytes of options and a full segment holds
    ``mss - 12`` payload bytes)."""

    mss: int | None
    wscale: int | None
    timestamps: bool

    @property
    def payload_per_segment(self) -> int | None:
        """Payload bytes of a full segment the *peer* sends to this side, or ``None`` if unknown."""
        if self.mss is None:
            return None
        return self.mss - (TIMESTAMP_OPTION_BYTES if self.timestamps else 0)


@dataclass
class CaptureFile:
    """The TCP segments of one capture and the SYN options of each (address, port) that sent a SYN."""

    path: Path
    segments: list[Segment]
    syn_options: dict[tuple[str, int], SynOptions] = field(default_factory=dict)
    packets: int = 0


def _ip_of(buf: bytes, link: int) -> Any:
    import dpkt  # noqa: PLC0415 - only reading a capture needs dpkt

    if link == _EN10MB:
        frame: Any = dpkt.ethernet.Ethernet(buf)
        data = frame.data
    elif link == _SLL:
        data = dpkt.sll.SLL(buf).data
    elif link == _SLL2:
        data = dpkt.sll2.SLL2(buf).data
    elif link in (_NULL, _LOOP):
        data = dpkt.loopback.Loopback(buf).data
    elif link in (_RAW, _RAW_ALT, _RAW_ALT2):
        version = buf[0] >> 4 if buf else 0
        data = dpkt.ip6.IP6(buf) if version == 6 else dpkt.ip.IP(buf)
    else:
        raise CaptureError(
            f"unsupported link type {link} (Ethernet, Linux cooked, loopback and raw IP are read)"
        )
    if isinstance(data, (dpkt.ip.IP, dpkt.ip6.IP6)):
        return data
    return None


def _payload_bytes(ip: Any, tcp: Any) -> int:
    """TCP payload from the IP header's length (captures may be cut short by a snap length)."""
    import dpkt  # noqa: PLC0415

    if isinstance(ip, dpkt.ip6.IP6):
        # IPv6 payload length counts extension headers too; dpkt strips them into ip.extension_hdrs.
        ext = sum(len(bytes(h)) for h in getattr(ip, "extension_hdrs", {}).values() if h)
        return int(ip.plen) - ext - 4 * int(tcp.off)
    return int(ip.len) - 4 * int(ip.hl) - 4 * int(tcp.off)


def _syn_options(tcp: Any) -> SynOptions:
    import dpkt  # noqa: PLC0415

    mss = wscale = None
    timestamps = False
    try:
        options = dpkt.tcp.parse_opts(tcp.opts)
    except Exception:  # a malformed option list: treat as no options
        options = []
    for kind, value in options:
        if kind == _OPT_MSS and len(value) == 2:
            mss = struct.unpack("!H", value)[0]
        elif kind == _OPT_WSCALE and len(value) == 1:
            wscale = value[0]
        elif kind == _OPT_TIMESTAMP:
            timestamps = True
    return SynOptions(mss, wscale, timestamps)


def _reader(f: Any, path: Path) -> Any:
    import dpkt  # noqa: PLC0415

    magic = f.read(4)
    f.seek(0)
    try:
        if magic in _PCAP_MAGICS:
            return dpkt.pcap.Reader(f)
        if magic == _PCAPNG_MAGIC:
            return dpkt.pcapng.Reader(f)
    except Exception as exc:  # dpkt raises ValueError or struct errors on a bad header
        raise CaptureError(f"{path}: not a readable capture ({exc})") from None
    raise CaptureError(
        f"{path}: not a pcap or pcapng capture (first bytes {magic.hex() or 'none'})"
    )


def _check_complete(p: Path) -> None:
    """Walk the file's record (pcap) or block (pcapng) lengths: a capture cut off in the middle of
    one, which the reader would pass over in silence, is an error."""
    data = p.read_bytes()
    size = len(data)
    magic = data[:4]
    if magic in _PCAP_MAGICS:
        endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        at, n = 24, 0
        while at + 16 <= size:
            caplen = struct.unpack_from(endian + "I", data, at + 8)[0]
            if at + 16 + caplen > size:
                break
            at, n = at + 16 + caplen, n + 1
        if at == size:
            return
        raise CaptureError(f"{p}: truncated capture: record {n + 1} runs past the end of the file")
    if magic == _PCAPNG_MAGIC and size >= 12:
        endian = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        at, n = 0, 0
        while at + 8 <= size:
            length = struct.unpack_from(endian + "I", data, at + 4)[0]
            if length < 12 or at + length > size:
                break
            at, n = at + length, n + 1
        if at == size:
            return
        raise CaptureError(f"{p}: truncated capture: block {n + 1} runs past the end of the file")


def read_capture(path: Path | str, require_tcp: bool = True) -> CaptureFile:
    """Every TCP segment of a pcap or pcapng file, in capture order.

    Raises
    ------
    CaptureError
        The file is missing, is not a capture, is cut off in the middle of a packet record, uses an
        unsupported link type, or (with ``require_tcp``) holds no TCP segment; the message says
        which, in one line.
    """
    import dpkt  # noqa: PLC0415

    p = Path(path)
    if not p.is_file():
        raise CaptureError(f"{p}: no such file")
    out = CaptureFile(p, [])
    _check_complete(p)
    with p.open("rb") as f:
        reader = _reader(f, p)
        link = reader.datalink()
        it = iter(reader)
        while True:
            try:
                ts, buf = next(it)
            except StopIteration:
                break
            except (dpkt.NeedData, dpkt.UnpackError, struct.error, ValueError) as exc:
                raise CaptureError(
                    f"{p}: truncated or damaged capture after {out.packets} packets ({exc})"
                ) from None
            out.packets += 1
            try:
                ip = _ip_of(buf, link)
            except (dpkt.NeedData, dpkt.UnpackError):
                continue  # a frame cut short by the snap length: nothing to read in it
            if ip is None or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            src = dpkt.utils.inet_to_str(ip.src)
            seg = Segment(
                float(ts),
                src,
                int(tcp.sport),
                dpkt.utils.inet_to_str(ip.dst),
                int(tcp.dport),
                int(tcp.seq),
                int(tcp.ack),
                int(tcp.flags),
                _payload_bytes(ip, tcp),
                int(tcp.win),
            )
            out.segments.append(seg)
            if seg.syn:
                out.syn_options[(src, seg.sport)] = _syn_options(tcp)
    if require_tcp and not out.segments:
        raise CaptureError(f"{p}: {out.packets} packets but no TCP segment")
    return out

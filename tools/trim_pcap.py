"""Keep a capture's connection set-up and its last packets, to bundle a long run's steady state.

    python tools/trim_pcap.py IN.pcap OUT.pcap --head 3 --tail 600

writes the first ``--head`` packets (the three-way handshake, which the readers need for each
side's initial sequence number) and the last ``--tail`` packets of a classic pcap file (not
pcapng), with the file's own header; the standard library alone.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

#: Classic pcap magic numbers (microsecond and nanosecond stamps, either byte order).
MAGICS = {0xA1B2C3D4, 0xA1B23C4D, 0xD4C3B2A1, 0x4D3CB2A1}


def records(data: bytes) -> tuple[bytes, list[bytes]]:
    """The 24-byte file header and every packet record (16-byte record header and data)."""
    if len(data) < 24 or struct.unpack("<I", data[:4])[0] not in MAGICS:
        raise ValueError("not a classic pcap file (pcapng is not supported)")
    little = struct.unpack("<I", data[:4])[0] in {0xA1B2C3D4, 0xA1B23C4D}
    fmt = "<IIII" if little else ">IIII"
    out, at = [], 24
    while at < len(data):
        if at + 16 > len(data):
            raise ValueError(f"a record header is cut off at byte {at}")
        caplen = struct.unpack(fmt, data[at : at + 16])[2]
        end = at + 16 + caplen
        if end > len(data):
            raise ValueError(f"a record is cut off at byte {at}")
        out.append(data[at:end])
        at = end
    return data[:24], out


def trim(data: bytes, head: int, tail: int) -> bytes:
    """The file with its first ``head`` and last ``tail`` packets (all if they overlap)."""
    if head < 0 or tail < 0:
        raise ValueError(f"head and tail must be 0 or more, got {head} and {tail}")
    header, recs = records(data)
    keep = recs if head + tail >= len(recs) else recs[:head] + recs[len(recs) - tail :]
    return header + b"".join(keep)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    p.add_argument("--head", type=int, default=3, help="packets kept from the start (default 3)")
    p.add_argument("--tail", type=int, default=600, help="packets kept from the end (default 600)")
    a = p.parse_args(argv)
    try:
        a.dst.write_bytes(trim(a.src.read_bytes(), a.head, a.tail))
    except (OSError, ValueError) as e:
        print(f"trim_pcap: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

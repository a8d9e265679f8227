"""Packet capture (tcpdump, when present and permitted) and pcap parsing (dpkt).

Capturing is optional: when ``tcpdump`` is missing, or the user may not open a raw socket, the runner
falls back to the kernel's own per-socket counters (``TCP_INFO``: data segments out, segments in/out)
and namespace counters (``/proc/net/netstat``), and records ``capture_tool = "none"``.

Parsing uses the maintained ``dpkt`` library: :func:`read_pcap` turns a capture into a list of
:class:`Segment` records, :func:`analyze` summarises one request/response connection (data segments per
direction, pure ACKs, idle gaps, and per response the *spread* between the segment carrying its first
byte and the one carrying its last byte, which is where Nagle holds show up).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Segment", "read_pcap", "analyze", "Capture", "tcpdump_path", "CaptureUnavailable"]


from .pcap import Segment, read_capture


def read_pcap(path: Path | str) -> list[Segment]:
    """Every TCP segment in a pcap or pcapng file, in capture order (an empty list when it holds no
    TCP): :func:`models.measure.pcap.read_capture` without the SYN options.

    Raises
    ------
    ValueError
        The file is not a capture, is cut off, or uses an unsupported link type.
    """
    return read_capture(path, require_tcp=False).segments


def _unwrap(seq: int, isn: int) -> int:
    """Stream offset of ``seq`` after the initial sequence number (32-bit wrap-around handled)."""
    return (seq - isn - 1) % (1 << 32)


def analyze(
    segments: Sequence[Segment],
    server_port: int,
    request_bytes: int,
    response_bytes: int,
    gap_threshold_s: float = 0.020,
) -> dict[str, Any]:
    """Summarise one request/response connection seen in a capture.

    Parameters
    ----------
    segments
        From :func:`read_pcap`; only those with ``server_port`` as source or destination are used.
    server_port
        The server's TCP port.
    request_bytes
        Bytes per request (client to server).
    response_bytes
        Bytes per response (header plus payload, server to client).
    gap_threshold_s
        An idle interval longer than this (seconds) counts as a gap.

    Returns
    -------
    dict
        ``server_data_segments``, ``client_data_segments``, ``client_pure_acks``, ``server_pure_acks``,
        ``responses`` (complete responses seen), ``responses_split`` (carried by more than one segment),
        ``response_spread_us`` (list: time between the segment with a response's first byte and the one
        with its last byte), ``gaps_ms`` (idle intervals on the connection above the threshold),
        ``server_segment_sizes`` (payload bytes of each server data segment).
    """
    if request_bytes <= 0 or response_bytes <= 0:
        raise ValueError(
            f"request_bytes and response_bytes must be positive, got {request_bytes}, {response_bytes}"
        )
    conn = [s for s in segments if server_port in (s.sport, s.dport)]
    s2c = [s for s in conn if s.sport == server_port]
    c2s = [s for s in conn if s.dport == server_port]
    syn_s = next((s for s in s2c if s.syn), None)
    out: dict[str, Any] = {
        "packets": len(conn),
        "server_data_segments": sum(1 for s in s2c if s.payload_bytes > 0),
        "client_data_segments": sum(1 for s in c2s if s.payload_bytes > 0),
        "server_pure_acks": sum(1 for s in s2c if s.payload_bytes == 0 and not (s.syn or s.fin)),
        "client_pure_acks": sum(1 for s in c2s if s.payload_bytes == 0 and not (s.syn or s.fin)),
        "server_segment_sizes": [s.payload_bytes for s in s2c if s.payload_bytes > 0],
    }
    times = [s.time_s for s in conn]
    out["gaps_ms"] = [
        round((b - a) * 1e3, 3) for a, b in zip(times, times[1:]) if b - a > gap_threshold_s
    ]
    spreads: list[float] = []
    split = 0
    if syn_s is not None:
        # For each response k, bytes [k*R, (k+1)*R) of the server's stream: first and last carrying segment.
        first_t: dict[int, float] = {}
        last_t: dict[int, float] = {}
        nseg: dict[int, int] = {}
        for s in s2c:
            if s.payload_bytes <= 0:
                continue
            start = _unwrap(s.seq, syn_s.seq)
            end = start + s.payload_bytes  # exclusive
            for k in range(start // response_bytes, (end - 1) // response_bytes + 1):
                first_t.setdefault(k, s.time_s)  # retransmissions keep the first sighting
                last_t[k] = s.time_s
                nseg[k] = nseg.get(k, 0) + 1
            # a response is complete once its last byte has been seen
        total = max(
            (_unwrap(s.seq, syn_s.seq) + s.payload_bytes for s in s2c if s.payload_bytes > 0),
            default=0,
        )
        complete = total // response_bytes
        for k in range(complete):
            if k in first_t:
                spreads.append(round((last_t[k] - first_t[k]) * 1e6, 3))  # s -> us
                split += nseg[k] > 1
        out["responses"] = complete
    else:
        out["responses"] = None
    out["responses_split"] = split
    out["response_spread_us"] = spreads
    out["requests"] = None
    syn_c = next((s for s in c2s if s.syn), None)
    if syn_c is not None:
        total_c = max(
            (_unwrap(s.seq, syn_c.seq) + s.payload_bytes for s in c2s if s.payload_bytes > 0),
            default=0,
        )
        out["requests"] = total_c // request_bytes
    return out


# -- capturing --------------------------------------------------------------------------------------


class CaptureUnavailable(RuntimeError):
    """tcpdump is missing or may not capture (not root / no CAP_NET_RAW)."""


def tcpdump_path() -> str | None:
    """Path of tcpdump, or ``None``."""
    return shutil.which("tcpdump") or next(
        (p for p in ("/usr/sbin/tcpdump", "/usr/bin/tcpdump") if os.access(p, os.X_OK)), None
    )


class Capture:
    """Run tcpdump on one interface for one TCP port, bounded in packets and time.

    Parameters
    ----------
    prefix
        Command prefix (``ip netns exec NS`` or empty).
    iface
        Interface to capture on.
    port
        TCP port filter.
    path
        Output pcap file.
    max_packets
        tcpdump stops after this many packets (``-c``).
    max_seconds
        The capture is stopped (SIGINT, then SIGKILL) after this many seconds at the latest.
    snaplen
        Bytes kept per packet (headers only).
    """

    def __init__(
        self,
        prefix: Sequence[str],
        iface: str,
        port: int,
        path: Path | str,
        max_packets: int = 200_000,
        max_seconds: float = 60.0,
        snaplen: int = 96,
    ) -> None:
        tool = tcpdump_path()
        if tool is None:
            raise CaptureUnavailable(
                "tcpdump is not installed (apt-get install tcpdump); using kernel counters"
            )
        if os.geteuid() != 0:
            raise CaptureUnavailable("capturing needs root (CAP_NET_RAW); using kernel counters")
        if max_packets < 1 or max_seconds <= 0:
            raise ValueError(
                f"max_packets and max_seconds must be positive, got {max_packets}, {max_seconds}"
            )
        self.path = Path(path)
        self.max_seconds = max_seconds
        # coreutils timeout(1) bounds tcpdump even if this Python process is killed outright
        bound = (
            [timeout, "-s", "INT", "-k", "5", f"{max_seconds:g}"]
            if (timeout := shutil.which("timeout"))
            else []
        )
        self.argv = [
            *prefix,
            *bound,
            tool,
            "-i",
            iface,
            "-w",
            str(self.path),
            "-s",
            str(snaplen),
            "-n",
            "-U",
            "--immediate-mode",
            "-c",
            str(max_packets),
            "-Z",
            "root",
            f"tcp port {int(port)}",
        ]
        self.proc: subprocess.Popen | None = None
        self.stderr = ""

    def __enter__(self) -> Capture:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert self.proc.stderr is not None
        # tcpdump says "listening on ..." once the socket is open; wait for it (bounded).
        deadline = time.monotonic() + 10.0
        os.set_blocking(self.proc.stderr.fileno(), False)
        buf = ""
        while time.monotonic() < deadline:
            chunk = self.proc.stderr.read()  # binary, non-blocking: None when nothing is ready
            buf += chunk.decode("utf-8", "replace") if chunk else ""
            if "listening on" in buf:
                break
            if self.proc.poll() is not None:
                self.stderr = buf
                raise CaptureUnavailable(f"tcpdump exited: {buf.strip()}")
            time.sleep(0.01)
        else:
            self._stop()
            raise CaptureUnavailable("tcpdump did not start listening within 10 s")
        self._started = time.monotonic()
        self.stderr = buf
        return self

    def _stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)  # tcpdump flushes and exits
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def __exit__(self, *exc: object) -> None:
        # Give the last packets (FIN exchange) a moment to be written.
        time.sleep(0.05)
        self._stop()

    def segments(self) -> list[Segment]:
        """Parse the finished capture."""
        return read_pcap(self.path)


def summarise_spreads(values: Iterable[float]) -> dict[str, float]:
    """Median and maximum of response spreads (microseconds), for tables."""
    v = sorted(values)
    if not v:
        return {"median_us": float("nan"), "max_us": float("nan")}
    mid = len(v) // 2
    med = v[mid] if len(v) % 2 else 0.5 * (v[mid - 1] + v[mid])
    return {"median_us": med, "max_us": v[-1]}

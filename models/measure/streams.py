"""A TCP connection's two byte streams, and the operations they carry (for :mod:`models.measure.diagnose`).

Segments of a capture are grouped into connections (:func:`connections`), the client told from the
server (:func:`roles`), each direction's sequence numbers made byte offsets across 32-bit wraps
(:class:`Side`), and the streams cut into operations: bursts of data in alternation
(:func:`bursts`), or, when exchanges overlap, requests delimited by PSH segments
(:func:`split_pipelined`).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from models.kernel.runs import STALL_SHARE_PCT

from .pcap import Segment

__all__ = [
    "released_by_ack",
    "Side",
    "Op",
    "percentile",
    "endpoint",
    "connections",
    "roles",
    "bursts",
    "psh_runs",
    "one_request_per_burst",
    "split_pipelined",
    "held_operations",
    "stalled_share",
    "ack_delays",
    "first_sends",
    "stream_of",
    "stream_and_acks",
    "crossings",
    "peer_segments",
    "stall_bursts",
]

#: TCP sequence numbers wrap at 2**32.
WRAP = 1 << 32


@dataclass
class Side:
    """One direction's byte stream, made relative to its first sequence number."""

    base: int | None = None
    epoch_last: int = 0
    max_end: int = 0
    acked_by_peer: int = 0
    retransmissions: int = 0
    data: list[tuple[float, int, int, bool]] = field(default_factory=list)  # t, start, end, psh
    last_window: int | None = None

    def rel(self, seq: int) -> int:
        """``seq`` as a byte offset from the start of the stream, across 32-bit wraps."""
        assert self.base is not None
        raw = (seq - self.base) % WRAP
        # Choose the offset nearest the last one seen: a stream moves less than 2 GiB between
        # segments, so this unwraps sequence numbers over any length of capture.
        cand = raw + (self.epoch_last // WRAP) * WRAP
        if cand - self.epoch_last > WRAP // 2:
            cand -= WRAP
        elif self.epoch_last - cand > WRAP // 2:
            cand += WRAP
        self.epoch_last = max(self.epoch_last, cand)
        return cand


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) by linear interpolation between order statistics."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def connections(segments: Sequence[Segment]) -> dict[tuple, list[Segment]]:
    conns: dict[tuple, list[Segment]] = {}
    for s in segments:
        key = tuple(sorted([(s.src, s.sport), (s.dst, s.dport)]))
        conns.setdefault(key, []).append(s)
    return conns


def roles(segs: Sequence[Segment], server_port: int | None) -> tuple[tuple, tuple] | None:
    """(client, server) endpoints: by ``server_port``, else the side of the first bare SYN, else
    the side that sent the first data (a request comes first)."""
    a = (segs[0].src, segs[0].sport)
    b = (segs[0].dst, segs[0].dport)
    if server_port is not None:
        if b[1] == server_port:
            return a, b
        if a[1] == server_port:
            return b, a
        return None
    for s in segs:
        if s.syn and not s.flags & 0x10:  # SYN without ACK: the connecting side
            return ((s.src, s.sport), (s.dst, s.dport))
    for s in segs:
        if s.payload_bytes > 0:
            return ((s.src, s.sport), (s.dst, s.dport))
    return a, b


@dataclass
class Op:
    start: float
    end: float
    request_bytes: int
    response_bytes: int
    response_segments: int


def bursts(events: list[tuple[float, str, int, int, bool]]) -> list[dict]:
    """Maximal runs of new data in one direction: start and end time, bytes, segments, and how
    many segments of the run carried PSH (the end of a ``send()``)."""
    out: list[dict] = []
    for t, side, start, end, psh in events:
        if out and out[-1]["side"] == side:
            b = out[-1]
            b["end_t"], b["bytes"], b["segments"] = t, b["bytes"] + end - start, b["segments"] + 1
            b["pushes"] += psh
        else:
            out.append(
                dict(side=side, start_t=t, end_t=t, bytes=end - start, segments=1, pushes=int(psh))
            )
    return out


def psh_runs(side: Side) -> list[tuple[int, int]]:
    """(end offset, bytes) of each run of a side's stream that ends in a PSH segment."""
    runs: list[tuple[int, int]] = []
    run_start = 0
    for _, _, end, psh in side.data:
        if psh and end > run_start:
            runs.append((end, end - run_start))
            run_start = end
    return runs


def one_request_per_burst(c: Side, bursts: list[dict]) -> bool:
    """True when no client burst holds more than one request: each burst ends one ``send()``
    (one PSH segment) and no PSH-delimited run is a whole multiple (two or more) of the smallest."""
    runs = psh_runs(c)
    if not runs or any(b["pushes"] > 1 for b in bursts if b["side"] == "c"):
        return False
    q = min(r for _, r in runs)
    if any(r >= 2 * q and r % q == 0 for _, r in runs):
        return False
    return True


def split_pipelined(c: Side, s: Side) -> tuple[list[Op], int | None, float | None]:
    """Operations of overlapping exchanges: request size from PSH-delimited client runs."""
    runs = [r for _, r in psh_runs(c)]
    if not runs or c.max_end <= 0 or s.max_end <= 0:
        return [], None, None
    q = min(runs)
    n = c.max_end // q
    if n <= 0:
        return [], None, None
    r = s.max_end / n
    c_starts = [d[1] for d in c.data]
    s_starts = [d[1] for d in s.data]
    ops: list[Op] = []
    for i in range(n):
        ci = bisect.bisect_right(c_starts, i * q) - 1
        last_byte = round((i + 1) * r) - 1
        si = bisect.bisect_right(s_starts, last_byte) - 1
        first_byte = round(i * r)
        s0 = bisect.bisect_right(s_starts, first_byte) - 1
        if ci < 0 or si < 0 or s.data[si][2] <= last_byte:
            continue
        ops.append(Op(c.data[ci][0], s.data[si][0], q, round(r), si - s0 + 1))
    return ops, q, r


def held_operations(
    stall_spans: Sequence[tuple[float, float]],
    ops: Sequence[Op],
    lat_ms: Sequence[float],
    stall_ms: float,
) -> int:
    """The operations a delayed-ACK stall held: those that took at least ``stall_ms`` (their
    latencies ``lat_ms``, milliseconds) with a stall gap (``stall_spans``, start and end in
    seconds) inside them.  One gap holds every operation in flight across it, up to QD of them,
    so a run is a stalled one (:func:`stalled_share`) by these, not by the gaps.

    Four operations in flight across each of two 40 ms gaps among 100 operations: 8 held, a
    stalled run, which the count of gaps (2 of 100) would have missed.

    >>> from models.kernel.runs import STALL_MS
    >>> gaps = [(1.0, 1.04), (2.0, 2.04)]
    >>> ops = [Op(0.01 * k, 0.01 * k + 1e-4, 48, 560, 1) for k in range(92)]
    >>> ops += [Op(a - 1e-4 * j, b + 1e-4, 48, 560, 1) for a, b in gaps for j in range(4)]
    >>> lat = [(o.end - o.start) * 1e3 for o in ops]  # s -> ms
    >>> held = held_operations(gaps, ops, lat, STALL_MS)
    >>> held, stalled_share(held, len(ops)), stalled_share(len(gaps), len(ops))
    (8, True, False)
    """
    spans = sorted(stall_spans)
    starts = [a for a, _ in spans]
    held = 0
    for o, v in zip(ops, lat_ms):
        if v >= stall_ms:
            k = bisect.bisect_left(starts, o.start)
            held += k < len(spans) and spans[k][1] <= o.end
    return held


def released_by_ack(timeline: list[dict[str, Any]], i: int, within_s: float) -> str | None:
    """The side (``"c"`` or ``"s"``) whose held data a pure ACK ending the gap before
    ``timeline[i]`` released, or ``None`` (``timeline``: :mod:`models.measure.diagnose`'s
    entries, each with ``t``, ``side``, ``pure_ack`` and the bytes ``unacked_c``/``unacked_s``).

    The gap ends with a run of pure ACKs: one, or two when both sides' delayed-ACK timers fired
    in the same tick (each side owed the other an ACK; the one that released the data may come
    second).  The data released is the first data segment after the run, sent within
    ``within_s`` seconds by the side that one of those ACKs acknowledged and that had
    unacknowledged data before the gap.

    >>> ack = lambda t, side: dict(t=t, side=side, data=0, pure_ack=True)
    >>> data = lambda t, side: dict(t=t, side=side, data=512, pure_ack=False)
    >>> before = dict(t=0.0, side="s", data=48, pure_ack=False, unacked_c=48, unacked_s=48)
    >>> one = [before, ack(0.043, "c"), data(0.043, "s")]
    >>> two = [before, ack(0.043, "s"), ack(0.043, "c"), data(0.043, "s")]
    >>> released_by_ack(one, 1, 0.035), released_by_ack(two, 1, 0.035)
    ('s', 's')
    >>> released_by_ack([before, ack(0.043, "c"), data(0.043, "c")], 1, 0.035) is None
    True
    """
    before, first = timeline[i - 1], timeline[i]
    k = i
    while k < len(timeline) and timeline[k]["pure_ack"]:
        k += 1
    if k == len(timeline) or timeline[k]["t"] - first["t"] >= within_s:
        return None
    released = timeline[k]
    acked = {("s" if e["side"] == "c" else "c") for e in timeline[i:k]}
    side = released["side"]
    return side if side in acked and before[f"unacked_{side}"] > 0 else None


def stalled_share(held: int, operations: int) -> bool:
    """Whether ``held`` stalled operations of ``operations`` make a stalled run, as the harness
    counts one (:data:`~models.kernel.runs.STALL_SHARE_PCT` percent or more)."""
    return held * 100.0 >= STALL_SHARE_PCT * operations


def ack_delays(
    data: Sequence[tuple[float, int, int]], acks: Sequence[tuple[float, int]], mss: int
) -> dict[str, list[float]]:
    """How long each data segment of one direction waited for the peer's ACK: for each segment
    (time in seconds, start and end byte offsets) the time until the first later segment of the
    peer (time, cumulative ACK as a byte offset of the same stream) whose ACK covers its end.
    Keyed ``"full"`` (a segment or super-packet of at least ``mss`` bytes) and ``"tail"`` (less);
    a segment no ACK covers is left out.

    >>> data = [(0.0, 0, 2896), (1e-5, 2896, 3000)]        # two full segments, then a tail
    >>> acks = [(5e-6, 1448), (1.2e-5, 2896), (4e-5, 3000)]
    >>> d = ack_delays(data, acks, mss=1448)
    >>> [round(x * 1e6) for x in d["full"]], [round(x * 1e6) for x in d["tail"]]
    ([12], [30])
    """
    out: dict[str, list[float]] = {"full": [], "tail": []}
    times = [t for t, _ in acks]
    for t, start, end in data:
        k = bisect.bisect_left(times, t)
        while k < len(acks) and acks[k][1] < end:
            k += 1
        if k < len(acks):
            out["full" if end - start >= mss else "tail"].append(acks[k][0] - t)
    return out


def stream_of(segs: Sequence[Segment], sender: tuple) -> Side:
    """The byte stream ``sender`` (address, port) sent on one connection, its offsets counted
    from the byte after its SYN (or from its first segment when the capture missed the SYN)."""
    side = Side()
    for x in segs:
        if (x.src, x.sport) == sender:
            if x.syn:
                side.base = (x.seq + 1) % WRAP
            elif side.base is None:
                side.base = x.seq
    return side


def stream_and_acks(
    segs: Sequence[Segment], sender: tuple, receiver: tuple
) -> tuple[list[tuple[float, int, int]], list[tuple[float, int]]]:
    """The byte stream ``sender`` (address, port) sent on one connection, first transmissions only
    (time in seconds, start and end byte offsets), and the ACKs of it that ``receiver`` sent (time,
    byte offset), in capture order: the input of :func:`ack_delays`."""
    side = stream_of(segs, sender)
    sent: list[tuple[float, int, int]] = []
    acks: list[tuple[float, int]] = []
    for x in segs:
        if (x.src, x.sport) == sender and x.payload_bytes > 0 and not x.syn:
            start = side.rel(x.seq)
            sent.append((x.time_s, start, start + x.payload_bytes))
        elif (x.src, x.sport) == receiver and x.flags & 0x10 and side.base is not None:
            acks.append((x.time_s, side.rel(x.ack)))
    return first_sends(sent), acks


def first_sends(sent: Sequence[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
    """Segments of one direction in the order they were seen (time, start and end byte offsets),
    each cut to the bytes not seen before: a retransmission drops out, and so do the segments a
    trace lists after the super-packet that carried them.

    >>> first_sends([(0.0, 0, 2896), (0.0, 1448, 2896), (1.0, 0, 1448), (2.0, 2000, 4000)])
    [(0.0, 0, 2896), (2.0, 2896, 4000)]
    """
    out: list[tuple[float, int, int]] = []
    seen = -1
    for t, start, end in sent:
        if seen < 0 or end > seen:
            out.append((t, start if seen < 0 else max(start, seen), end))
            seen = end
    return out


def crossings(
    sent: Sequence[tuple[float, int, int]],
    peer: Sequence[tuple[float, int, bool]],
    small: int,
) -> list[tuple[float, float]]:
    """Where a small segment of one direction and the peer's data crossed: for each segment of
    ``sent`` (time in seconds, start and end byte offsets) shorter than ``small`` bytes, whose
    first later data segment of the peer (``peer``: every peer segment in order, as time,
    cumulative ACK as a byte offset of the same stream, and whether it carries data) does not
    acknowledge it.  Each crossing is (the small segment's time, seconds until a peer segment
    acknowledged it; ``inf`` if none did).

    With Nagle on both sockets a crossing leaves each end holding its next small write until the
    other's ACK, which only a delayed-ACK timer then sends: a wait of a timer period follows;
    where the two ends alternate strictly (each write released by the other's segment), nothing
    crosses.

    >>> sent = [(0.0, 0, 560), (1e-5, 560, 1120)]
    >>> peer = [(2e-6, 560, True), (1.1e-5, 560, True), (0.04, 1120, False)]
    >>> [(round(t * 1e6), round(w * 1e6)) for t, w in crossings(sent, peer, small=1448)]  # us
    [(10, 39990)]
    """
    out: list[tuple[float, float]] = []
    times = [t for t, _, _ in peer]
    for t, start, end in sent:
        if end - start >= small:
            continue
        k = bisect.bisect_right(times, t)
        later = itertools.islice(peer, k, None)  # (no copy per segment)
        first_data = next((p for p in later if p[2]), None)
        if first_data is None or first_data[1] >= end:
            continue
        later = itertools.islice(peer, k, None)
        acked = next((p[0] for p in later if p[1] >= end), math.inf)
        out.append((t, acked - t))
    return out


def peer_segments(
    segs: Sequence[Segment], sender: tuple, receiver: tuple
) -> list[tuple[float, int, bool]]:
    """Every segment ``receiver`` (address, port) sent on one connection with an ACK of
    ``sender``'s stream (time in seconds, the ACK as a byte offset of that stream, whether it
    carries data), in capture order: the ``peer`` of :func:`crossings`."""
    side = stream_of(segs, sender)
    return [
        (x.time_s, side.rel(x.ack), x.payload_bytes > 0 and not x.syn)
        for x in segs
        if (x.src, x.sport) == receiver and x.flags & 0x10 and side.base is not None
    ]


def stall_bursts(
    client_data: Sequence[float], server_data: Sequence[float], gap_s: float = 0.01
) -> list[dict[str, float]]:
    """How the client issues its queue after each stall: given the times of the client's data
    segments and of the server's (seconds, each in order), after every silence of both ends' data
    of at least ``gap_s`` the client's first data segment begins a burst (the request that wakes
    the sleeping server; the server's data the stall released may come first), which runs until
    the server's next data.  Per burst: the seconds from its first segment to its second
    (``first_gap_s``), the median of its later gaps (``later_gap_s``), and from its first segment
    to that server data (``server_s``).  A burst of fewer than three segments has no later gap and
    is left out.

    >>> c = [0.0, 0.050200, 0.050230, 0.050236, 0.050242]
    >>> s = [0.000010, 0.050020, 0.050290]
    >>> [(round(b["first_gap_s"] * 1e6), round(b["later_gap_s"] * 1e6),
    ...   round(b["server_s"] * 1e6)) for b in stall_bursts(c, s)]  # us
    [(30, 6, 90)]
    """
    out: list[dict[str, float]] = []
    events = sorted([(t, 0) for t in client_data] + [(t, 1) for t in server_data])
    k = 1
    while k < len(events):
        if events[k][0] - events[k - 1][0] < gap_s:
            k += 1
            continue
        while k < len(events) and events[k][1] == 1:  # the data the stall released
            k += 1
        burst = []
        while k < len(events) and events[k][1] == 0:
            burst.append(events[k][0])
            k += 1
        if len(burst) >= 3 and k < len(events):
            gaps = [b - a for a, b in zip(burst, burst[1:])]
            out.append(
                {
                    "first_gap_s": gaps[0],
                    "later_gap_s": percentile(gaps[1:], 0.5),
                    "server_s": events[k][0] - burst[0],
                }
            )
    return out

"""One iSCSI command as legs of PDUs, and the least latency and the throughput bound they give
(RFC 7143); the negotiated keys come from :mod:`models.iscsi.session`.  Standard library only."""

from __future__ import annotations

import math
from dataclasses import dataclass

from models import framing
from models.checks import positive

from .session import BHS_BYTES, DIGEST_BYTES, Session

__all__ = [
    "Pdu",
    "Leg",
    "exchange",
    "round_trips",
    "unsolicited_bytes",
    "leg_wire_bytes",
    "command_latency_s",
    "throughput_bound_Bps",
]


@dataclass(frozen=True)
class Pdu:
    """One PDU of an exchange.

    ``data_bytes`` is the data segment length (unpadded); ``offset`` the
    buffer offset of that data, or for an R2T of the range it solicits;
    ``r2t_bytes`` an R2T's Desired Data Transfer Length (0 otherwise);
    ``final`` the F bit; ``status`` True for the PDU that carries the SCSI
    status (the Response, or a Data-In with the S bit).
    """

    opcode: str
    data_bytes: int = 0
    offset: int = 0
    r2t_bytes: int = 0
    final: bool = True
    status: bool = False

    def wire_bytes(self, session: Session) -> int:
        """Bytes this PDU puts on the socket: header, padded data, digests.

        The data segment is padded to a multiple of 4 bytes (RFC 7143,
        section 11.2); each negotiated CRC32C digest adds 4 bytes.
        """
        padded = 4 * math.ceil(self.data_bytes / 4)
        head = BHS_BYTES + (DIGEST_BYTES if session.header_digest else 0)
        tail = DIGEST_BYTES if (session.data_digest and padded) else 0
        return head + padded + tail

    def writes(self, session: Session, split_header: bool) -> tuple:
        """The send() sizes of this PDU: one call, or header then data."""
        total = self.wire_bytes(session)
        if not split_header or self.data_bytes == 0:
            return (total,)
        head = BHS_BYTES + (DIGEST_BYTES if session.header_digest else 0)
        return (head, total - head)


@dataclass(frozen=True)
class Leg:
    """A run of PDUs in one direction that the other side waits for."""

    direction: str
    pdus: tuple
    writes: tuple
    kind: str

    @property
    def socket_bytes(self) -> int:
        """Bytes written to the socket for this leg."""
        return sum(self.writes)


_OPS = ("read", "write")


def _check(op: str, size_bytes: int, session: Session | None) -> Session:
    if op not in _OPS:
        raise ValueError(f"op must be one of {_OPS}, got {op!r}")
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes < 0:
        raise ValueError(f"size_bytes must be a whole number >= 0, got {size_bytes!r}")
    if session is None:
        return Session()
    if not isinstance(session, Session):
        raise ValueError(f"session must be a Session, got {session!r}")
    return session


def _chunks(total: int, limit: int, start: int) -> list:
    """(offset, length) pieces of at most ``limit`` bytes covering total."""
    out = []
    done = 0
    while done < total:
        n = min(limit, total - done)
        out.append((start + done, n))
        done += n
    return out


def unsolicited_bytes(size_bytes: int, session: Session | None = None) -> tuple:
    """``(immediate, unsolicited Data-Out)`` bytes of a write, no R2T.

    Immediate data ride in the command PDU (ImmediateData=Yes), at most
    ``min(FirstBurstLength, target MaxRecvDataSegmentLength)``; with
    InitialR2T=No further Data-Out PDUs may follow until FirstBurstLength
    bytes have gone unsolicited in all.
    """
    s = _check("write", size_bytes, session)
    first = min(size_bytes, s.first_burst_length)
    immediate = min(first, s.target_mrdsl) if s.immediate_data else 0
    unsolicited = 0 if s.initial_r2t else first - immediate
    return immediate, unsolicited


def round_trips(op: str, size_bytes: int, session: Session | None = None) -> int:
    """Round trips of a command: 1 for a read, 1 + R2T rounds for a write.

    A write's solicited bytes ``S = size - immediate - unsolicited`` need
    ``ceil(S / MaxBurstLength)`` R2Ts, issued ``MaxOutstandingR2T`` at a
    time, each batch costing one round trip before the response's.
    """
    s = _check(op, size_bytes, session)
    if op == "read":
        return 1
    immediate, unsolicited = unsolicited_bytes(size_bytes, s)
    solicited = size_bytes - immediate - unsolicited
    r2ts = math.ceil(solicited / s.max_burst_length)
    return 1 + math.ceil(r2ts / s.max_outstanding_r2t)


def _leg(direction: str, pdus: list, kind: str, session: Session, split_header: bool) -> Leg:
    writes = tuple(w for p in pdus for w in p.writes(session, split_header))
    return Leg(direction, tuple(pdus), writes, kind)


def exchange(
    op: str,
    size_bytes: int,
    session: Session | None = None,
    *,
    status_in_data_in: bool = False,
    split_header: bool = False,
) -> tuple:
    """The legs of one read or write of ``size_bytes`` (see module doc).

    Parameters
    ----------
    op : str
        ``"read"`` or ``"write"``.
    size_bytes : int
        Data the command moves, bytes (>= 0).
    session : Session, optional
        Negotiated keys; RFC 7143 defaults if omitted.
    status_in_data_in : bool
        Reads only: the last Data-In carries the status (S bit) and no
        separate Response PDU is sent.
    split_header : bool
        Write each PDU's header and data segment with separate calls.
    """
    s = _check(op, size_bytes, session)
    sh = bool(split_header)
    if op == "read":
        cmd = _leg("C>S", [Pdu("SCSI Command")], "command", s, sh)
        data = []
        burst_end = s.max_burst_length
        for off, n in _chunks(size_bytes, s.initiator_mrdsl, 0):
            end = off + n
            last = end == size_bytes
            data.append(
                Pdu(
                    "SCSI Data-In",
                    n,
                    off,
                    final=last or end >= burst_end,
                    status=last and status_in_data_in,
                )
            )
            if end >= burst_end:
                burst_end += s.max_burst_length
        pdus = list(data)
        if not (data and status_in_data_in):
            pdus.append(Pdu("SCSI Response", status=True))
        parts = [f"{len(data)} Data-In ({size_bytes} B)"] if data else []
        if not (data and status_in_data_in):
            parts.append("response")
        return (cmd, _leg("S>C", pdus, " + ".join(parts), s, sh))

    immediate, unsolicited = unsolicited_bytes(size_bytes, s)
    first = [Pdu("SCSI Command", immediate, 0, final=unsolicited == 0)]
    out_pieces = _chunks(unsolicited, s.target_mrdsl, immediate)
    first += [
        Pdu("SCSI Data-Out", n, off, final=i == len(out_pieces) - 1)
        for i, (off, n) in enumerate(out_pieces)
    ]
    kind = "command"
    if immediate:
        kind += f" + {immediate} B immediate data"
    if unsolicited:
        kind += f" + {len(out_pieces)} unsolicited Data-Out ({unsolicited} B)"
    legs = [_leg("C>S", first, kind, s, sh)]
    offset = immediate + unsolicited
    bursts = _chunks(size_bytes - offset, s.max_burst_length, offset)
    for i in range(0, len(bursts), s.max_outstanding_r2t):
        batch = bursts[i : i + s.max_outstanding_r2t]
        r2ts = [Pdu("R2T", 0, off, r2t_bytes=n) for off, n in batch]
        lengths = ", ".join(str(n) for _, n in batch)
        legs.append(
            _leg(
                "S>C",
                r2ts,
                f"R2T for {lengths} B"
                if len(batch) == 1
                else f"{len(batch)} R2Ts for {lengths} B",
                s,
                sh,
            )
        )
        outs = []
        for off, n in batch:
            pieces = _chunks(n, s.target_mrdsl, off)
            outs += [
                Pdu("SCSI Data-Out", m, o, final=j == len(pieces) - 1)
                for j, (o, m) in enumerate(pieces)
            ]
        moved = sum(n for _, n in batch)
        legs.append(_leg("C>S", outs, f"{len(outs)} Data-Out ({moved} B)", s, sh))
    legs.append(_leg("S>C", [Pdu("SCSI Response", status=True)], "response", s, sh))
    return tuple(legs)


def leg_wire_bytes(leg: Leg, mtu: int = 1500) -> int:
    """Bytes a leg occupies on an Ethernet wire, in full-sized segments.

    The socket bytes are cut into ``ceil(bytes / MSS)`` segments, each
    paying the TCP/IP/Ethernet overhead of :mod:`models.framing`.  Fewer
    segments are impossible, so this is the least wire time a leg needs.
    """
    segments = math.ceil(leg.socket_bytes / framing.mss(mtu))
    return leg.socket_bytes + segments * framing.FRAME_OVERHEAD_BYTES


def command_latency_s(
    op: str,
    size_bytes: int,
    rtt_s: float,
    link_bps: float,
    session: Session | None = None,
    mtu: int = 1500,
    added_delay_s: float = 0.0,
) -> float:
    """Least time for one command alone on an idle path, seconds.

    Every leg waits for the previous one, so the command takes one RTT per
    round trip plus the wire time of every leg at ``link_bps`` (bits per
    second), plus ``added_delay_s`` for each target-to-initiator leg (a
    delay applied to every packet the target sends, as in the Oslo
    thesis's throttle).
    """
    s = _check(op, size_bytes, session)
    rtt = float(rtt_s)
    if not (math.isfinite(rtt) and rtt >= 0):
        raise ValueError(f"rtt_s must be finite and >= 0, got {rtt_s!r}")
    added = float(added_delay_s)
    if not (math.isfinite(added) and added >= 0):
        raise ValueError(f"added_delay_s must be finite and >= 0, got {added_delay_s!r}")
    rate = positive("link_bps", link_bps) / 8  # bits/s -> bytes/s
    legs = exchange(op, size_bytes, s)
    wire = sum(leg_wire_bytes(leg, mtu) for leg in legs)
    back = sum(1 for leg in legs if leg.direction == "S>C")
    return len(legs) // 2 * rtt + wire / rate + back * added


def throughput_bound_Bps(
    op: str,
    size_bytes: int,
    rtt_s: float,
    link_bps: float,
    qd: int = 1,
    session: Session | None = None,
    mtu: int = 1500,
) -> float:
    """Upper bound on data bytes per second with ``qd`` commands in flight.

    ``min(qd * size / latency, size * C / wire bytes of the busier
    direction)``: the ring identity at the least latency
    (:func:`command_latency_s`), capped by the link carrying one
    command's bytes in the direction the data flow.
    """
    s = _check(op, size_bytes, session)
    if isinstance(qd, bool) or not isinstance(qd, int) or qd < 1:
        raise ValueError(f"qd must be a whole number >= 1, got {qd!r}")
    if size_bytes == 0:
        raise ValueError("size_bytes must be positive for a throughput")
    rate = positive("link_bps", link_bps) / 8  # bits/s -> bytes/s
    legs = exchange(op, size_bytes, s)
    per_dir = {"C>S": 0, "S>C": 0}
    for leg in legs:
        per_dir[leg.direction] += leg_wire_bytes(leg, mtu)
    ring = qd * size_bytes / command_latency_s(op, size_bytes, rtt_s, link_bps, s, mtu)
    link = size_bytes * rate / max(per_dir.values())
    return min(ring, link)

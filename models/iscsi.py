"""One iSCSI command as an exchange of PDUs (RFC 7143), standard library only.

A SCSI command over iSCSI is a short conversation between the initiator
(the client, ``C``) and the target (the server, ``S``).  This module
describes that conversation for a read or a write of ``size_bytes`` bytes
under a set of negotiated login keys, in a form both the book's analytic
chapters and the packet simulator can use.

Interface
---------
:func:`exchange` ``(op, size_bytes, session=None)`` returns a tuple of
:class:`Leg` objects.  Legs alternate direction: the first is ``"C>S"``
(initiator to target), the last ``"S>C"``, and every leg waits for the
whole previous leg to arrive.  Each leg carries

``direction``
    ``"C>S"`` or ``"S>C"``.
``pdus``
    The :class:`Pdu` objects of the leg, in order (opcode, data segment
    length, buffer offset, R2T length, F bit, status).
``writes``
    The ``send()`` calls that put the leg on the socket, bytes each: one
    call per PDU by default, a 48-byte basic header segment plus its data
    segment padded to a multiple of 4 bytes (and 4-byte digests when
    negotiated); ``split_header=True`` writes header and data with two
    calls.
``kind``
    A short description for people (``"R2T for 57344 B"``).

A simulator replays a command by having the client write leg 0, the
server write leg 1 once all of leg 0 has arrived, and so on; the command
completes when the client has received the last leg.  The number of
round trips is ``len(legs) // 2`` (:func:`round_trips` computes it
without building the legs).

The protocol
------------
* Read: the command (no data); then Data-In PDUs of at most the
  *initiator's* MaxRecvDataSegmentLength each, and the SCSI Response (or
  the status in the last Data-In, ``status_in_data_in=True``).  One round
  trip whatever the size: Data-In needs no solicitation.
* Write: the command may carry *immediate data* (ImmediateData=Yes) up to
  ``min(FirstBurstLength, target's MaxRecvDataSegmentLength)``; with
  InitialR2T=No the initiator may also send *unsolicited* Data-Out PDUs
  until ``FirstBurstLength`` bytes have gone without solicitation.  The
  rest waits for R2Ts: each R2T solicits at most MaxBurstLength bytes,
  at most MaxOutstandingR2T of them are outstanding at once, and each is
  answered with Data-Out PDUs of at most the target's
  MaxRecvDataSegmentLength.  The SCSI Response ends the command.
* Keys (RFC 7143 section 13, :data:`KEYS`): InitialR2T is negotiated by
  OR (either side's Yes wins), ImmediateData by AND (either side's No
  wins), MaxBurstLength, FirstBurstLength and MaxOutstandingR2T by the
  minimum; MaxRecvDataSegmentLength is *declared*, each side stating
  what it can receive.  FirstBurstLength must not exceed MaxBurstLength.

Bad input raises ``ValueError`` naming the key or parameter.

>>> legs = exchange("write", 65536, negotiate(target=IET_DEFAULTS))
>>> for leg in legs:
...     print(leg.direction, leg.kind)
C>S command + 8192 B immediate data
S>C R2T for 57344 B
C>S 7 Data-Out (57344 B)
S>C response
>>> round_trips("write", 65536, negotiate(target=IET_DEFAULTS))
2
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from . import framing

__all__ = [
    "BHS_BYTES",
    "DIGEST_BYTES",
    "KeySpec",
    "KEYS",
    "RFC7143_DEFAULTS",
    "IET_DEFAULTS",
    "OPEN_ISCSI_DEFAULTS",
    "Session",
    "negotiate",
    "Pdu",
    "Leg",
    "exchange",
    "round_trips",
    "unsolicited_bytes",
    "leg_wire_bytes",
    "command_latency_s",
    "throughput_bound_Bps",
]

#: Basic header segment of every PDU, bytes (RFC 7143, section 11.2).
BHS_BYTES = framing.ISCSI_HEADER_BYTES
#: A CRC32C header or data digest, bytes (RFC 7143, section 11.2).
DIGEST_BYTES = 4
_LARGEST_24BIT = 2**24 - 1

KeyValue = bool | int | str


@dataclass(frozen=True)
class KeySpec:
    """One negotiated login key: its RFC 7143 default, rule and range.

    ``rule`` is ``"or"``, ``"and"``, ``"min"``, ``"max"``, ``"declared"``
    (each side states its own value) or ``"list"`` (the target picks the
    first of the initiator's values it accepts).
    """

    name: str
    default: KeyValue
    rule: str
    low: int | None = None
    high: int | None = None

    @property
    def boolean(self) -> bool:
        """True for Yes/No keys."""
        return isinstance(self.default, bool)


#: The operational keys this model knows, with RFC 7143 defaults (section
#: 13).  Any other key name raises ``ValueError``.
KEYS: dict[str, KeySpec] = {
    k.name: k
    for k in (
        KeySpec("InitialR2T", True, "or"),
        KeySpec("ImmediateData", True, "and"),
        KeySpec("MaxRecvDataSegmentLength", 8192, "declared", 512, _LARGEST_24BIT),
        KeySpec("MaxBurstLength", 262144, "min", 512, _LARGEST_24BIT),
        KeySpec("FirstBurstLength", 65536, "min", 512, _LARGEST_24BIT),
        KeySpec("MaxOutstandingR2T", 1, "min", 1, 65535),
        KeySpec("MaxConnections", 1, "min", 1, 65535),
        KeySpec("DataPDUInOrder", True, "or"),
        KeySpec("DataSequenceInOrder", True, "or"),
        KeySpec("ErrorRecoveryLevel", 0, "min", 0, 2),
        KeySpec("DefaultTime2Wait", 2, "max", 0, 3600),
        KeySpec("DefaultTime2Retain", 20, "min", 0, 3600),
        KeySpec("HeaderDigest", "None", "list"),
        KeySpec("DataDigest", "None", "list"),
    )
}

#: Every key at its RFC 7143 default.
RFC7143_DEFAULTS: dict[str, KeyValue] = {name: spec.default for name, spec in KEYS.items()}

#: The iSCSI Enterprise Target's (IET) built-in values of the keys that
#: shape a command (its ``usr/param.c`` table; ``ietd.conf(5)``).  The
#: manual page gives ImmediateData's default as No while the code's table
#: and sample configuration say Yes; chapter 10 shows the write's round
#: trips are the same either way.
IET_DEFAULTS: dict[str, KeyValue] = {
    "InitialR2T": True,
    "ImmediateData": True,
    "MaxRecvDataSegmentLength": 8192,
    "MaxBurstLength": 262144,
    "FirstBurstLength": 65536,
    "MaxOutstandingR2T": 1,
}

#: The open-iscsi initiator's offers (``iscsid.conf`` defaults of the
#: 2.0 series, ``usr/iscsi_settings.h``).
OPEN_ISCSI_DEFAULTS: dict[str, KeyValue] = {
    "InitialR2T": False,
    "ImmediateData": True,
    "MaxRecvDataSegmentLength": 131072,
    "MaxBurstLength": 16776192,
    "FirstBurstLength": 262144,
    "MaxOutstandingR2T": 1,
}

_DIGESTS = ("None", "CRC32C")


def _parse(name: str, value: object) -> KeyValue:
    """A key's value as bool, int or digest list, checked against KEYS."""
    if name not in KEYS:
        raise ValueError(f"unknown iSCSI key {name!r}; known keys: {sorted(KEYS)}")
    spec = KEYS[name]
    if spec.rule == "list":
        items = value.split(",") if isinstance(value, str) else None
        if not items or any(v not in _DIGESTS for v in items):
            raise ValueError(f"{name} must be a comma-separated list of {_DIGESTS}, got {value!r}")
        return ",".join(items)
    if spec.boolean:
        if isinstance(value, bool):
            return value
        if value in ("Yes", "No"):
            return value == "Yes"
        raise ValueError(f"{name} must be Yes/No (or a bool), got {value!r}")
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    assert spec.low is not None and spec.high is not None
    if not spec.low <= value <= spec.high:
        raise ValueError(f"{name} must lie in {spec.low}..{spec.high}, got {value!r}")
    return value


def _offers(side: str, given: Mapping[str, object] | None) -> dict:
    """One side's complete set of values: RFC defaults overlaid by given."""
    out: dict[str, KeyValue] = dict(RFC7143_DEFAULTS)
    for name, value in (given or {}).items():
        out[name] = _parse(name, value)
    fbl, mbl = out["FirstBurstLength"], out["MaxBurstLength"]
    assert isinstance(fbl, int) and isinstance(mbl, int)
    if fbl > mbl:
        raise ValueError(
            f"{side}: FirstBurstLength ({fbl}) must not exceed MaxBurstLength ({mbl})"
        )
    return out


@dataclass(frozen=True)
class Session:
    """The operational values of a logged-in session, all in bytes/counts.

    Build one with :func:`negotiate`; constructing it directly checks the
    same rules.

    Parameters
    ----------
    initial_r2t, immediate_data : bool
        InitialR2T and ImmediateData after negotiation.
    first_burst_length, max_burst_length : int
        FirstBurstLength and MaxBurstLength, bytes.
    max_outstanding_r2t : int
        MaxOutstandingR2T, R2Ts per command.
    target_mrdsl : int
        MaxRecvDataSegmentLength declared by the target, bytes: the
        largest data segment the initiator may send (immediate data,
        Data-Out).
    initiator_mrdsl : int
        MaxRecvDataSegmentLength declared by the initiator, bytes: the
        largest Data-In segment.
    header_digest, data_digest : bool
        CRC32C digests in use.
    """

    initial_r2t: bool = True
    immediate_data: bool = True
    first_burst_length: int = 65536
    max_burst_length: int = 262144
    max_outstanding_r2t: int = 1
    target_mrdsl: int = 8192
    initiator_mrdsl: int = 8192
    header_digest: bool = False
    data_digest: bool = False

    def __post_init__(self) -> None:
        checks = (
            ("FirstBurstLength", self.first_burst_length),
            ("MaxBurstLength", self.max_burst_length),
            ("MaxOutstandingR2T", self.max_outstanding_r2t),
            ("MaxRecvDataSegmentLength", self.target_mrdsl),
            ("MaxRecvDataSegmentLength", self.initiator_mrdsl),
        )
        for name, value in checks:
            _parse(name, value)
        if self.first_burst_length > self.max_burst_length:
            raise ValueError(
                f"FirstBurstLength ({self.first_burst_length}) must not "
                f"exceed MaxBurstLength ({self.max_burst_length})"
            )
        for name in ("initial_r2t", "immediate_data", "header_digest", "data_digest"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")


def negotiate(
    initiator: Mapping[str, object] | None = None, target: Mapping[str, object] | None = None
) -> Session:
    """The session two sides agree on, by the rules of RFC 7143.

    Parameters
    ----------
    initiator, target : mapping, optional
        Each side's offered (or declared) values by RFC key name, e.g.
        ``{"InitialR2T": "No", "MaxBurstLength": 262144}``; keys left out
        take the RFC default.  Booleans may be ``True``/``False`` or
        ``"Yes"``/``"No"``.

    Examples
    --------
    >>> s = negotiate(OPEN_ISCSI_DEFAULTS, IET_DEFAULTS)
    >>> s.initial_r2t, s.first_burst_length, s.target_mrdsl
    (True, 65536, 8192)
    """
    ini = _offers("initiator", initiator)
    tgt = _offers("target", target)

    def digest(name: str) -> bool:
        accepted = str(tgt[name]).split(",")
        for choice in str(ini[name]).split(","):
            if choice in accepted:
                return choice == "CRC32C"
        raise ValueError(
            f"{name}: no common value (initiator offers {ini[name]!r}, "
            f"target accepts {tgt[name]!r})"
        )

    return Session(
        initial_r2t=bool(ini["InitialR2T"]) or bool(tgt["InitialR2T"]),
        immediate_data=(bool(ini["ImmediateData"]) and bool(tgt["ImmediateData"])),
        first_burst_length=min(int(ini["FirstBurstLength"]), int(tgt["FirstBurstLength"])),
        max_burst_length=min(int(ini["MaxBurstLength"]), int(tgt["MaxBurstLength"])),
        max_outstanding_r2t=min(int(ini["MaxOutstandingR2T"]), int(tgt["MaxOutstandingR2T"])),
        target_mrdsl=int(tgt["MaxRecvDataSegmentLength"]),
        initiator_mrdsl=int(ini["MaxRecvDataSegmentLength"]),
        header_digest=digest("HeaderDigest"),
        data_digest=digest("DataDigest"),
    )


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


def _positive(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return v


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
    rate = _positive("link_bps", link_bps) / 8  # bits/s -> bytes/s
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
    rate = _positive("link_bps", link_bps) / 8  # bits/s -> bytes/s
    legs = exchange(op, size_bytes, s)
    per_dir = {"C>S": 0, "S>C": 0}
    for leg in legs:
        per_dir[leg.direction] += leg_wire_bytes(leg, mtu)
    ring = qd * size_bytes / command_latency_s(op, size_bytes, rtt_s, link_bps, s, mtu)
    link = size_bytes * rate / max(per_dir.values())
    return min(ring, link)

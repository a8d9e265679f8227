"""One iSCSI command as messages of PDUs, the order they may go in, and the least latency and the
throughput bound they give (RFC 7143); the negotiated keys come from :mod:`models.iscsi.session`.
Standard library only.

A command is a set of :class:`Message` objects, each a run of PDUs one side writes at once and the
message of the other side whose arrival lets it go (``after``).  MaxOutstandingR2T is a *window*: the
target sends up to ``R`` R2Ts as soon as it has the command, and one more each time a Data-Out sequence
(the answer to one R2T) has arrived, until every burst is solicited (RFC 7143, sections 11.8 and
13.17).  :func:`timeline` lays the messages on an idle full-duplex path, each direction one link that
sends one message after another; :func:`command_latency_s` is when the last one arrives.  Where the
messages form a chain, each waiting for the whole previous run of the other side,
:func:`exchange` gives the same command as alternating *legs*.  The packet simulator replays either
form: legs as a chain, messages as they release one another (``models.sim.exchange``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .session import BHS_BYTES, DIGEST_BYTES, Session

__all__ = [
    "MAX_COMMAND_BYTES",
    "Pdu",
    "Leg",
    "Message",
    "messages",
    "is_chain",
    "critical_chain",
    "exchange",
    "bursts",
    "round_trips",
    "unsolicited_bytes",
]


#: The largest command the model describes in bytes, 1 GiB (a command's PDUs are listed one by one,
#: so a larger one would take long to describe; real initiators cap a command far lower, e.g.
#: Linux's max_sectors_kb).
MAX_COMMAND_BYTES = 1 << 30


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


@dataclass(frozen=True)
class Message:
    """PDUs one side writes at once, and what they wait for.

    ``direction`` is ``"C>S"`` or ``"S>C"``; ``pdus`` and ``writes`` (the
    ``send()`` sizes, bytes) as for a :class:`Leg`; ``kind`` a description
    for people; ``after`` the index (in the command's tuple of messages) of
    the other side's message whose arrival lets this one go, or ``None``
    for a message the initiator writes at the start.
    """

    direction: str
    pdus: tuple
    writes: tuple
    kind: str
    after: int | None

    @property
    def socket_bytes(self) -> int:
        """Bytes written to the socket for this message."""
        return sum(self.writes)


_OPS = ("read", "write")


def _check(op: str, size_bytes: int, session: Session | None) -> Session:
    if op not in _OPS:
        raise ValueError(f"op must be one of {_OPS}, got {op!r}")
    if (
        isinstance(size_bytes, bool)
        or not isinstance(size_bytes, int)
        or not 0 <= size_bytes <= MAX_COMMAND_BYTES
    ):
        raise ValueError(
            f"size_bytes must be a whole number from 0 to {MAX_COMMAND_BYTES} bytes (1 GiB), "
            f"got {size_bytes!r}"
        )
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


def bursts(size_bytes: int, session: Session | None = None) -> list:
    """``(offset, length)`` of each burst an R2T solicits in a write of ``size_bytes``: what the
    unsolicited bytes leave, cut into pieces of at most MaxBurstLength."""
    s = _check("write", size_bytes, session)
    immediate, unsolicited = unsolicited_bytes(size_bytes, s)
    offset = immediate + unsolicited
    return _chunks(size_bytes - offset, s.max_burst_length, offset)


def round_trips(op: str, size_bytes: int, session: Session | None = None) -> int:
    """Round trips on the longest chain of a command: 1 for a read, ``1 + ceil(m / R)`` for a
    write of ``m`` R2Ts with MaxOutstandingR2T ``R``.

    The R2T of burst ``j + R`` waits for the Data-Out of burst ``j``, so burst ``m`` ends a chain of
    ``ceil(m / R)`` R2T round trips, and the response adds one.  When the window covers the round
    trip (``R`` bursts take longer to send than one burst's round trip) the link, not these round
    trips, sets the pace: :func:`command_latency_s` and
    ``models.analytic.iscsi.write_latency_expr`` give the time.
    """
    s = _check(op, size_bytes, session)
    if op == "read":
        return 1
    return 1 + math.ceil(len(bursts(size_bytes, s)) / s.max_outstanding_r2t)


def _pdu_writes(pdus: list, session: Session, split_header: bool) -> tuple:
    return tuple(w for p in pdus for w in p.writes(session, split_header))


def _leg(direction: str, pdus: list, kind: str, session: Session, split_header: bool) -> Leg:
    return Leg(direction, tuple(pdus), _pdu_writes(pdus, session, split_header), kind)


def messages(
    op: str,
    size_bytes: int,
    session: Session | None = None,
    *,
    status_in_data_in: bool = False,
    split_header: bool = False,
) -> tuple:
    """The messages of one read or write of ``size_bytes``, in an order each side may send them.

    Read: the command, then the Data-In PDUs (at most the initiator's MaxRecvDataSegmentLength
    each) and the response, after the command.  Write: the command (with immediate data); the
    unsolicited Data-Out, written right after it (``after=None``); one message of the first
    ``min(R, m)`` R2Ts, after the command; for each burst ``j`` its Data-Out (at most the target's
    MaxRecvDataSegmentLength per PDU), after the R2T that solicits it, and the R2T of burst
    ``j + R`` after that Data-Out; the response after the last data.

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

    def msg(direction: str, pdus: list, kind: str, after: int | None) -> Message:
        return Message(direction, tuple(pdus), _pdu_writes(pdus, s, sh), kind, after)

    if op == "read":
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
        return (
            msg("C>S", [Pdu("SCSI Command")], "command", None),
            msg("S>C", pdus, " + ".join(parts), 0),
        )

    immediate, unsolicited = unsolicited_bytes(size_bytes, s)
    cmd_kind = "command" + (f" + {immediate} B immediate data" if immediate else "")
    out: list[Message] = [
        msg("C>S", [Pdu("SCSI Command", immediate, 0, final=unsolicited == 0)], cmd_kind, None)
    ]
    if unsolicited:
        pieces = _chunks(unsolicited, s.target_mrdsl, immediate)
        pdus = [
            Pdu("SCSI Data-Out", n, off, final=i == len(pieces) - 1)
            for i, (off, n) in enumerate(pieces)
        ]
        out.append(msg("C>S", pdus, f"{len(pdus)} unsolicited Data-Out ({unsolicited} B)", None))
    last_data = len(out) - 1
    solicit = bursts(size_bytes, s)
    window = s.max_outstanding_r2t
    r2t_at: dict[int, int] = {}  # burst -> index of the message carrying its R2T
    if solicit:
        first = solicit[:window]
        lengths = ", ".join(str(n) for _, n in first)
        out.append(
            msg(
                "S>C",
                [Pdu("R2T", 0, off, r2t_bytes=n) for off, n in first],
                f"R2T for {lengths} B"
                if len(first) == 1
                else f"{len(first)} R2Ts for {lengths} B",
                0,
            )
        )
        for j in range(len(first)):
            r2t_at[j] = len(out) - 1
    for j, (off, n) in enumerate(solicit):
        pieces = _chunks(n, s.target_mrdsl, off)
        pdus = [
            Pdu("SCSI Data-Out", m, o, final=i == len(pieces) - 1)
            for i, (o, m) in enumerate(pieces)
        ]
        out.append(msg("C>S", pdus, f"{len(pdus)} Data-Out ({n} B)", r2t_at[j]))
        last_data = len(out) - 1
        if j + window < len(solicit):
            o2, n2 = solicit[j + window]
            out.append(msg("S>C", [Pdu("R2T", 0, o2, r2t_bytes=n2)], f"R2T for {n2} B", last_data))
            r2t_at[j + window] = len(out) - 1
    out.append(msg("S>C", [Pdu("SCSI Response", status=True)], "response", last_data))
    return tuple(out)


def critical_chain(op: str, size_bytes: int, session: Session | None = None) -> list:
    """The messages the last one waits for, in turn, back to one that waits for nothing: the
    longest chain of waits of the command, first message first.  Its ``"S>C"`` messages are the
    round trips :func:`round_trips` counts.

    >>> s = Session(max_burst_length=65536, max_outstanding_r2t=2)
    >>> chain = critical_chain("write", 4 * 65536, s)
    >>> [m.kind for m in chain if m.direction == "S>C"]
    ['2 R2Ts for 65536, 65536 B', 'R2T for 57344 B', 'response']
    """
    msgs = messages(op, size_bytes, session)
    chain = [len(msgs) - 1]
    while msgs[chain[-1]].after is not None:
        chain.append(msgs[chain[-1]].after)
    return [msgs[i] for i in reversed(chain)]


def _legs_of(msgs: tuple) -> list | None:
    """The messages grouped into alternating legs, or ``None`` if some message does not wait for
    exactly the last message of the previous leg (then legs would change the timing)."""
    groups: list[list[int]] = []
    for i, m in enumerate(msgs):
        if groups and msgs[groups[-1][0]].direction == m.direction:
            groups[-1].append(i)
        else:
            groups.append([i])
    if msgs[groups[0][0]].direction != "C>S":
        return None
    for k, g in enumerate(groups):
        want = None if k == 0 else groups[k - 1][-1]
        if any(msgs[i].after != want for i in g):
            return None
    return groups


def is_chain(op: str, size_bytes: int, session: Session | None = None) -> bool:
    """True if the command's messages form alternating legs, each waiting for the whole previous
    one: every read, and a write whose R2Ts all fit in one window (or ``R = 1``) and whose R2Ts do
    not overtake unsolicited Data-Out.  Only such a command can be replayed leg by leg."""
    return _legs_of(messages(op, size_bytes, session)) is not None


def exchange(
    op: str,
    size_bytes: int,
    session: Session | None = None,
    *,
    status_in_data_in: bool = False,
    split_header: bool = False,
) -> tuple:
    """The legs of one read or write of ``size_bytes`` (see the package doc).

    Arguments as for ``messages()``.  Raises ``ValueError`` for a command whose messages are not
    a chain (``is_chain()``): a write whose window of MaxOutstandingR2T R2Ts slides (an R2T goes
    as each Data-Out sequence arrives, while others are outstanding) or whose first R2T goes while
    unsolicited Data-Out is still arriving.  Such a command is described by ``messages()``.
    """
    s = _check(op, size_bytes, session)
    msgs = messages(
        op, size_bytes, s, status_in_data_in=status_in_data_in, split_header=split_header
    )
    groups = _legs_of(msgs)
    if groups is None:
        r2ts = len(bursts(size_bytes, s))
        raise ValueError(
            f"a {size_bytes}-byte write with {r2ts} R2Ts, MaxOutstandingR2T="
            f"{s.max_outstanding_r2t} and {sum(unsolicited_bytes(size_bytes, s))} unsolicited "
            "bytes is not a chain of legs (its R2Ts do not each wait for the whole previous "
            "leg); use messages()"
        )
    legs = []
    for g in groups:
        pdus = [p for i in g for p in msgs[i].pdus]
        kinds = [msgs[i].kind for i in g]
        legs.append(
            Leg(
                msgs[g[0]].direction,
                tuple(pdus),
                _pdu_writes(pdus, s, bool(split_header)),
                " + ".join(kinds),
            )
        )
    return tuple(legs)

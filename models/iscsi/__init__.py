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

from .exchange import (
    Leg,
    Pdu,
    command_latency_s,
    exchange,
    leg_wire_bytes,
    round_trips,
    throughput_bound_Bps,
    unsolicited_bytes,
)
from .session import (
    BHS_BYTES,
    DIGEST_BYTES,
    IET_DEFAULTS,
    KEYS,
    OPEN_ISCSI_DEFAULTS,
    RFC7143_DEFAULTS,
    KeySpec,
    Session,
    negotiate,
)

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

"""One iSCSI command as an exchange of PDUs (RFC 7143), standard library only.

A SCSI command over iSCSI is a short conversation between the initiator
(the client, ``C``) and the target (the server, ``S``).  This package
describes that conversation for a read or a write of ``size_bytes`` bytes
under a set of negotiated login keys, in a form both the book's analytic
chapters and the packet simulator can use.

Interface
---------
``messages(op, size_bytes, session=None)`` returns a tuple of
``Message`` objects: runs of PDUs one side writes at once, each with
the message of the other side it waits for (``after``).  Each carries

``direction``
    ``"C>S"`` or ``"S>C"``.
``pdus``
    The :class:`Pdu` objects, in order (opcode, data segment length,
    buffer offset, R2T length, F bit, status).
``writes``
    The ``send()`` calls that put it on the socket, bytes each: one call
    per PDU by default, a 48-byte basic header segment plus its data
    segment padded to a multiple of 4 bytes (and 4-byte digests when
    negotiated); ``split_header=True`` writes header and data with two
    calls.
``kind``
    A short description for people (``"R2T for 57344 B"``).

``timeline()`` lays them on an idle path at a round trip and a link
rate, and :func:`command_latency_s` is when the last one arrives.

When every message waits for the whole previous run of the other side,
the command is a *chain* (``is_chain()``), and :func:`exchange` gives it
as alternating :class:`Leg` objects: the first ``"C>S"``, the last
``"S>C"``.  A simulator replays a chain by having the client write leg 0,
the server write leg 1 once all of leg 0 has arrived, and so on; the
command completes when the client has received the last leg.  A write
whose R2T window slides is not a chain, and :func:`exchange` refuses it;
the simulator replays any command as its messages instead
(``models.sim.exchange``: each side writes what a message it has read
releases; ``models.presets.iscsi_messages``).

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
  rest waits for R2Ts: each R2T solicits at most MaxBurstLength bytes, and
  MaxOutstandingR2T is a window: the target sends that many R2Ts when the
  command arrives and one more as each solicited Data-Out sequence
  completes.  Each R2T is answered with Data-Out PDUs of at most the
  target's MaxRecvDataSegmentLength.  The SCSI Response ends the command.
* Keys (RFC 7143 section 13, ``KEYS``): InitialR2T is negotiated by
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
>>> window = Session(max_burst_length=65536, max_outstanding_r2t=2)
>>> for m in messages("write", 4 * 65536, window)[:5]:
...     print(m.direction, m.kind, m.after, sep=" | ")
C>S | command + 8192 B immediate data | None
S>C | 2 R2Ts for 65536, 65536 B | 0
C>S | 8 Data-Out (65536 B) | 1
S>C | R2T for 65536 B | 2
C>S | 8 Data-Out (65536 B) | 1
>>> is_chain("write", 4 * 65536, window)
False
"""

from __future__ import annotations

from .exchange import *  # noqa: F403  (one command's messages, legs and latency)
from .exchange import __all__ as _exchange_all
from .session import *  # noqa: F403  (login keys and their negotiation)
from .session import __all__ as _session_all
from .timing import *  # noqa: F403  (the messages on the link: latency and bound)
from .timing import __all__ as _timing_all

__all__ = [*_session_all, *_exchange_all, *_timing_all]

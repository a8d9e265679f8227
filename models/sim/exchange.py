"""One operation as messages that release one another: the exchange the
application threads (:mod:`models.sim.app`) replay.

An operation is a tuple of messages ``(direction, writes, after)``:
``direction`` is ``"C>S"`` (the client writes it) or ``"S>C"``;
``writes`` the ``send()`` sizes that put it on the socket, bytes;
``after`` the index of the other side's message whose *reading* releases
it, or ``None`` for a message the client writes when it issues the
operation.  A side's thread, once it has read a message, writes every
message that message releases, in index order and all at once.  The
client completes the operation when it has read every ``"S>C"``
message of it.  :func:`models.iscsi.messages` gives an iSCSI command in
this form (MaxOutstandingR2T as a sliding window: the R2T of burst
``j + R`` is released by the Data-Out of burst ``j``).

A *chain* of legs (``Workload.legs``, or the request and the response) is
the special case in which message ``k`` alternates direction and is
released by message ``k - 1`` (:meth:`Exchange.chain`).

Standard library only.

>>> ex = Exchange((("C>S", (48,), None), ("C>S", (100,), None),
...                ("S>C", (48, 48), 0), ("C>S", (200,), 2),
...                ("S>C", (48,), 3)))
>>> ex.roots, ex.releases[0], ex.releases[2]
((0, 1), (2,), (3,))
>>> ex.reads  # messages the client reads, the server reads
(2, 3)
>>> ex.awaited()  # the unsolicited message 1 releases nothing
2
>>> parse_messages("c:48/s:48@0/c:4096@1/s:48@2")[2]
('C>S', (4096,), 1)
>>> Exchange.chain(((48,), (48, 512))).after
(None, 0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["DIRECTIONS", "Exchange", "check_messages", "parse_messages"]

#: A message's direction, indexed by the side that writes it (0 client, 1 server).
DIRECTIONS = ("C>S", "S>C")
_LETTERS = {"c": "C>S", "s": "S>C"}


class Exchange:
    """One operation's messages, compiled for the threads.

    Attributes
    ----------
    writes : tuple
        Per message, its ``send()`` sizes, bytes.
    sides : tuple
        Per message, the side that writes it (0 client, 1 server).
    after : tuple
        Per message, the index of the message that releases it, or ``None``.
    releases : tuple
        Per message, the indices of the messages its reading releases.
    roots : tuple
        The messages the client writes when it issues the operation.
    reads : tuple
        How many messages the client and the server read per operation.
    full : tuple
        Per side, the bit mask of the messages that side reads (bit ``i``
        for message ``i``): the side is done with an operation when it has
        read them all.
    """

    __slots__ = ("writes", "sides", "after", "releases", "roots", "reads", "full")

    def __init__(self, messages: tuple) -> None:
        self.writes = tuple(tuple(w) for _, w, _ in messages)
        self.sides = tuple(DIRECTIONS.index(d) for d, _, _ in messages)
        self.after = tuple(a for _, _, a in messages)
        releases: list[list[int]] = [[] for _ in messages]
        roots: list[int] = []
        for i, a in enumerate(self.after):
            (roots if a is None else releases[a]).append(i)
        self.releases = tuple(tuple(r) for r in releases)
        self.roots = tuple(roots)
        full = [0, 0]
        for i, side in enumerate(self.sides):
            full[1 - side] |= 1 << i  # the other side reads it
        self.full = (full[0], full[1])
        self.reads = (full[0].bit_count(), full[1].bit_count())

    @classmethod
    def chain(cls, legs: tuple) -> Exchange:
        """Legs alternating direction, the first from the client, each
        released by the one before it."""
        return cls(
            tuple(
                (DIRECTIONS[k % 2], leg, None if k == 0 else k - 1) for k, leg in enumerate(legs)
            )
        )

    def __len__(self) -> int:
        return len(self.writes)

    def plans(self, more: bool, more_last: bool) -> tuple:
        """Per message, its bytes and its ``send()`` calls as ``(size,
        MSG_MORE)`` pairs: ``more`` on each call but the last, which has
        ``more_last``.

        >>> Exchange.chain(((48,), (48, 512))).plans(True, False)[1]
        (560, ((48, True), (512, False)))
        """
        return tuple(
            (sum(w), tuple((n, more_last if i == len(w) - 1 else more) for i, n in enumerate(w)))
            for w in self.writes
        )

    def awaited(self) -> int:
        """How many client messages the server must have read before the
        client can complete the operation: those on the chain of waits of
        some server message."""
        seen = set()
        for i, side in enumerate(self.sides):
            a = self.after[i] if side == 1 else None
            while a is not None and a not in seen:
                seen.add(a)
                a = self.after[a]
        return sum(self.sides[i] == 0 for i in seen)

    def bytes_by_direction(self) -> tuple:
        """The ``send()`` sizes each side writes per operation, client's
        then server's, in message order (bytes)."""
        per: tuple[list, list] = ([], [])
        for side, w in zip(self.sides, self.writes):
            per[side].extend(w)
        return tuple(per[0]), tuple(per[1])


def check_messages(name: str, value: Any, check_sizes: Callable[[str, Any], tuple]) -> tuple:
    """``value`` as a checked tuple of ``(direction, writes, after)``, or ``ValueError`` naming
    ``name``, the rule and the bad value.

    The rules: a direction is ``"C>S"`` or ``"S>C"``; ``writes`` pass ``check_sizes`` (whole
    bytes, at least one call); ``after`` is ``None`` or the index of an *earlier* message of the
    *other* direction; only client messages wait for nothing; at least one message goes from the
    server (the one whose reading completes the operation).  An empty tuple is no messages.
    """
    if isinstance(value, str):
        value = parse_messages(value)
    try:
        items = tuple(value)
    except TypeError:
        raise ValueError(
            f"{name} must be a tuple of (direction, writes, after) messages, got {value!r}"
        ) from None
    out: list[tuple] = []
    for i, item in enumerate(items):
        where = f"{name}[{i}]"
        try:
            direction, writes, after = item
        except (TypeError, ValueError):
            raise ValueError(f"{where} must be (direction, writes, after), got {item!r}") from None
        if direction not in DIRECTIONS:
            raise ValueError(f"{where} direction must be 'C>S' or 'S>C', got {direction!r}")
        sizes = check_sizes(f"{where} writes", writes)
        if after is None:
            if direction != "C>S":
                raise ValueError(
                    f"{where} after must name the message that releases it (an index from 0 "
                    f"to {i - 1}): only the client's messages may wait for nothing, got None"
                )
        elif isinstance(after, bool) or not isinstance(after, int) or not 0 <= after < i:
            raise ValueError(
                f"{where} after must be None or the index of an earlier message (0 to {i - 1}), "
                f"got {after!r}"
            )
        elif out[after][0] == direction:
            raise ValueError(
                f"{where} after must name a message of the other side: message {after} also "
                f"goes {direction}"
            )
        out.append((direction, sizes, after))
    if out and all(d == "C>S" for d, _, _ in out):
        raise ValueError(
            f"{name} must hold at least one S>C message (the client completes an operation by "
            f"reading the server's messages), got {len(out)} C>S messages only"
        )
    return tuple(out)


def parse_messages(text: str) -> tuple:
    """``"c:48/s:48@0/c:4096@1/s:48@2"`` -> messages: split by ``/``, each a side letter (``c``
    client, ``s`` server), a colon, comma-separated ``send()`` sizes in bytes and, unless the
    client writes it at once, ``@`` and the index of the message that releases it.  An empty
    text is no messages.
    """
    if not text.strip():
        return ()
    out = []
    for part in text.split("/"):
        head, colon, rest = part.strip().partition(":")
        sizes, at, after = rest.partition("@")
        try:
            if not colon or head.lower() not in _LETTERS:
                raise ValueError
            writes = tuple(int(x) for x in sizes.split(",") if x.strip())
            if not writes:
                raise ValueError
            out.append((_LETTERS[head.lower()], writes, int(after) if at else None))
        except ValueError:
            raise ValueError(
                f"expected messages split by /, each c: or s:, send() sizes and @ the index of "
                f"the message that releases it, such as c:48/s:48@0/c:4096@1/s:48@2; got {text!r}"
            ) from None
    return tuple(out)

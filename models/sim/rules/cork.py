"""The end of each ``send()``: push now, hold (cork), or autocork.
(``net/ipv4/tcp.c``, ``tcp_push``, ``tcp_should_autocork``)

``tcp_push`` (net/ipv4/tcp.c) marks the tail buffer PSH unless the call
passed ``MSG_MORE``, then pushes the queue: in cork mode when the call
passed ``MSG_MORE`` or the socket has ``TCP_CORK`` set, else in the
socket's own mode (Nagle or ``TCP_NODELAY``).  Corked partial data waits
for more bytes, an ACK (``MSG_MORE`` holds only until the next push;
``TCP_CORK`` holds until it is cleared) or the probe timer.

Since Linux 3.14 ``tcp_autocorking`` may skip the push altogether and
send at the next TX completion instead (``tcp_should_autocork``): only
while the tail buffer is shorter than ``size_goal`` and an earlier packet
of the socket is still in this host (qdisc or driver).  The release runs
in the TX-completion soft interrupt (``tcp_wfree``, ``tcp_tsq_handler``),
which pays its transmit CPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["Cork", "Autocork", "SKB_OVERHEAD_BYTES"]

#: Approximate ``truesize`` of a TCP transmit skb beyond its payload,
#: bytes: ``struct sk_buff`` and ``skb_shared_info`` of an fclone skb with
#: ``MAX_TCP_HEADER`` headroom (about 1 KiB).  It matters only for
#: autocorking with two or more frames in the transmit path.
SKB_OVERHEAD_BYTES = 1024


# rule: cork
class Cork:
    """No autocorking (Linux < 3.14, or ``tcp_autocorking=0``).

    Interface: ``defer(sender, now, tail_bytes) -> bool``: whether the
    push at the end of a ``send()`` is skipped, the sender to be pushed
    again at a TX completion (``sender.push_pending``); optionally
    ``completed(sender, now)``: a frame that waited in a rate limit's
    qdisc left at ``now`` (a TX completion not known in advance).
    """

    autocork = False
    __slots__ = ()

    def defer(self, sender, now: int, tail_bytes: int) -> bool:
        return False

    # end rule: cork

    def completed(self, sender, now: int) -> None:
        """A frame of ``sender``'s that waited in the qdisc left at
        ``now`` (its TX completion); nothing to do without autocorking."""

    def cycle_state(self, view: View) -> Hashable:
        return None  # no state of its own

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing to move."""


# rule: autocork
class Autocork(Cork):
    """``tcp_should_autocork``: skip the push while the tail is shorter
    than ``size_goal``, data is in flight (``!tcp_rtx_queue_empty``), and
    this host's earlier frames still hold more
    memory in the transmit path than the tail (``sk_wmem_alloc >
    skb->truesize``, each skb counted as its payload plus
    ``SKB_OVERHEAD_BYTES``, plus the socket's own reference).  The
    next TX completion pushes in the socket's mode (``tcp_tsq_handler``
    calls ``tcp_write_xmit`` with ``tp->nonagle``), its CPU charged to
    the soft interrupt (``sender.charge_soft``).
    """

    autocork = True
    __slots__ = ("throttled", "event")

    def __init__(self) -> None:
        self.throttled = False  # TSQ_THROTTLED
        self.event = None  # the TX-completion event, if queued

    def defer(self, sender, now: int, tail_bytes: int) -> bool:
        if (
            tail_bytes >= sender.goal
            or sender.snd_una == sender.snd_nxt
            or sender.channel.free_at <= now
        ):  # nothing queued
            return False
        frames, nbytes, first_done = sender.channel.tx_backlog(now)
        wmem = frames * SKB_OVERHEAD_BYTES + nbytes + 1
        if not frames or wmem <= SKB_OVERHEAD_BYTES + tail_bytes:
            return False
        self.throttled = True
        if self.event is None:
            self.event = sender.loop.schedule(
                first_done, self._tx_completion, sender
            )
        return True

    def _tx_completion(self, now: int, sender) -> None:
        self.event = None
        if self.throttled:
            self.throttled = False
            if sender.queue:  # push_pending's test
                sender.push_pending(now)
            if sender.soft_cpu:  # charge_soft's
                sender.charge_soft(now)

    # end rule: autocork

    def completed(self, sender, now: int) -> None:
        """A frame that waited in the qdisc left at ``now``: its TX
        completion, the push if data were deferred (the event was set
        for the watchdog's time, which the frame may have beaten)."""
        event = self.event
        if event is not None and event[0] > now:
            sender.loop.cancel(event)
            self.event = sender.loop.schedule(now, self._tx_completion, sender)

    #: The event's handle is left out of the state, since the pending
    #: event itself is stated.
    cycle_transient = ("event",)

    def cycle_state(self, view: View) -> Hashable:
        return (self.throttled,)  # its event: cycle_event

    def cycle_event(
        self, name: str, time: int, arg: Any, view: View
    ) -> Hashable:
        """The TX completion's time (its argument is this rule's
        sender)."""
        return view.time(time)

    def cycle_shift_event(
        self, name: str, time: int, arg: Any, shift: Shift
    ) -> tuple:
        return time + shift.dt, arg

"""Nagle's algorithm: may the last, partial segment leave now?
(``net/ipv4/tcp_output.c``, ``tcp_nagle_test``, ``tcp_nagle_check``)

The sender asks only about the *last* buffer of its send queue, only
when that buffer is shorter than the MSS, and only in Nagle mode (no
TCP_NODELAY, no cork, no forced push); every earlier buffer leaves.

>>> class S: snd_una, snd_nxt, snd_sml = 1, 49, 49
>>> MinshallNagle().holds(S), ClassicNagle().holds(S)
(True, True)
>>> S.snd_sml = 1          # the small segment was acknowledged
>>> MinshallNagle().holds(S), ClassicNagle().holds(S)
(False, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["NaglePolicy", "MinshallNagle", "ClassicNagle"]


class NaglePolicy:
    """Interface: ``holds(sender) -> bool`` for the last partial buffer.

    ``sender`` exposes ``snd_una`` (oldest unacknowledged byte),
    ``snd_nxt`` (next byte to send) and ``snd_sml`` (end of the last
    segment sent that was shorter than the MSS).
    """

    name = "nagle"

    def holds(self, sender) -> bool:
        raise NotImplementedError

    def cycle_shift(self, shift: Shift) -> None:
        """Nothing to move (a rule with state moves it: the module
        :mod:`models.sim.fastforward`)."""


# rule: minshall
class MinshallNagle(NaglePolicy):
    """Linux: hold only while a *small* segment is unacknowledged.

    ``tcp_nagle_check`` with ``tcp_minshall_check`` (net/ipv4/
    tcp_output.c): ``packets_out && snd_una < snd_sml <= snd_nxt``.  A
    full segment in flight does not hold the next partial one.
    """

    name = "minshall"

    def holds(self, sender) -> bool:
        return sender.snd_una < sender.snd_sml <= sender.snd_nxt

    # end rule: minshall

    def cycle_state(self, view: View) -> Hashable:
        return None  # no state of its own


# rule: classic
class ClassicNagle(NaglePolicy):
    """RFC 896 as written: hold while *any* data is unacknowledged.

    What ns-3's ``TcpSocketBase`` does; Linux never did this after 2.4.
    """

    name = "classic"

    def holds(self, sender) -> bool:
        return sender.snd_una != sender.snd_nxt

    # end rule: classic

    def cycle_state(self, view: View) -> Hashable:
        return None  # no state of its own

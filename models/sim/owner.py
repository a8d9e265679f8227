"""A thread's ``send()`` calls as the socket's owner (``Host.own_socket``).

Linux lets one context at a time work on a socket: while a thread is inside a call on it
(``lock_sock``), a segment that reaches the socket waits in its backlog and is processed when the
call releases it (``release_sock``; :meth:`models.sim.endpoint.Endpoint.release`).  A call that
costs CPU owns its endpoint from its start until that CPU is spent; on a CPU of its own of one
machine (``ep.own_cpu``) it lasts while work that landed on that CPU during it (a timer's
interrupt, a soft interrupt) still runs there.  :class:`models.sim.app.AppThread` takes these
methods; without the flag it never calls them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SocketOwner"]


class SocketOwner:
    """The owning calls of :class:`models.sim.app.AppThread` (a mixin)."""

    def _owning_call(self: Any, now: int, end: int) -> None:
        """A call that began at ``now`` (or earlier, if it is the same call going on) owns the
        socket until ``end``, fs."""
        ep = self.ep
        if not ep.owned:
            ep.owned, ep.owned_since = True, now
        self.loop.schedule(end, self.call_end)

    def _call_end(self: Any, now: int, _arg: object) -> None:
        """The owning call returns: what reached the socket meanwhile is processed, then the
        next call or step."""
        ep = self.ep
        own = ep.own_cpu
        if own is not None and own.free_at[0] > now:  # interrupted: the call ends later
            self.loop.schedule(own.free_at[0], self.call_end)
            return
        ep.release(now)
        (self.next_call if self.writes else self.step)(now, None)

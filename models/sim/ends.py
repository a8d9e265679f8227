"""The two ends' application threads: the target's session thread
(:class:`ServerThread`) and the initiator (:class:`ClientThread`), each
an :class:`~models.sim.app.AppThread` with its own rules.

The server takes operations in the order they were issued, each with
the client's first message; the client keeps exactly ``qd`` operations
outstanding, issuing an operation's successor when it completes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from models.sim.app import AppThread

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.exchange import Exchange
    from models.sim.fastforward import Shift, View

__all__ = ["ServerThread", "ClientThread"]


class ServerThread(AppThread):
    """The server: each message from the client is answered, after
    ``proc``, by the messages it releases (a chain: the next leg)."""

    __slots__ = ("client_proc", "next_op")

    def __init__(self, *args, client_proc: int, **kw) -> None:
        self.client_proc = client_proc  # (before AppThread's: peer_proc)
        super().__init__(*args, **kw)
        self.next_op = -1 if self.setup else 0

    def begin(self, op: int, msg: int, ex: Exchange) -> None:
        """Operations begin in the order issued, each with the client's
        first message."""
        if op != self.next_op or msg != ex.roots[0]:
            raise AssertionError(
                f"server processed message {msg} of op {op} first, expected message "
                f"{ex.roots[0]} of op {self.next_op}"
            )
        self.next_op += 1

    def peer_proc(self, op: int) -> int:
        return self.client_proc

    def cycle_state(self, view: View) -> Hashable:
        return super().cycle_state(view), view.op(self.next_op)

    def cycle_signature(self, view: View) -> Hashable:
        return super().cycle_signature(view), view.op(self.next_op)

    def cycle_shift(self, shift: Shift) -> None:
        super().cycle_shift(shift)
        self.next_op += shift.ops


class ClientThread(AppThread):
    """The initiator: keeps ``qd`` operations outstanding."""

    __slots__ = (
        "server_proc",
        "setup_server_proc",
        "qd",
        "target",
        "pause_every",
        "pause_in",
        "issued",
        "completed",
        "issue_time",
        "done_time",
        "rtts",
    )

    def __init__(
        self,
        *args,
        qd: int,
        server_proc: int,
        setup_server_proc: int,
        target: int,
        **kw,
    ) -> None:
        self.server_proc = server_proc  # (before AppThread's: peer_proc)
        self.setup_server_proc = setup_server_proc
        super().__init__(*args, **kw)
        self.qd = qd
        self.target = target  # completions after which the run stops
        self.pause_every = 0  # pause the loop every n completions
        self.pause_in = 0
        self.issued = 0
        self.completed = 0
        self.issue_time: dict = {}  # op -> fs, operations in flight
        self.done_time: list = []  # fs, per completion
        self.rtts: list = []  # fs, per completion

    def start(self, now: int, _arg: object = None) -> None:
        """At time 0: the setup exchange if any, else ``qd`` operations.

        Their ``send()`` calls are made as at any other time: with a
        transmit cost each waits for the CPU of the one before (the kernel
        harness issues its QD requests with a ``send()`` each), in a busy
        period of the thread that read nothing; without one, all at once.
        """
        if self.setup is not None:
            items = [(-1, j, self.setup_server_proc) for j in self.setup.roots]
        else:
            items = [item for _ in range(self.qd) for item in self._new_op(now)]
        if not self.tx_cpu:
            self.thread_segments += self.send_messages(now, items, at_once=True)
            self.idle_since = now  # (it ran now, whatever came before the run)
            return
        self.busy = True  # (a wake-up's bookkeeping: the thread runs)
        if self.hold_cpu and not self.cpu.acquire(self):
            raise AssertionError("a CPU is held before the run starts")
        self.wakeups += 1
        self.busy_start = now
        self.count = 0
        self._written(now, self.send_messages(now, items))

    def _new_op(self, now: int) -> list:
        """Issue an operation: the messages it starts with."""
        op = self.issued
        self.issued += 1
        self.issue_time[op] = now
        ex = self.exchange
        return [(op, j, self.server_proc) for j in ex.roots]

    def _issue(self, now: int, at_once: bool = False) -> int:
        return self.send_messages(now, self._new_op(now), at_once)

    def peer_proc(self, op: int) -> int:
        return self.setup_server_proc if op < 0 else self.server_proc

    def begin(self, op: int, msg: int, ex: Exchange) -> None:
        """Only an operation in flight (or the setup) has messages."""
        if op >= 0 and op not in self.issue_time:
            raise AssertionError(f"operation {op} completed twice")

    def complete(self, now: int, op: int, items: list) -> int:
        """The operation's last message from the server: it completes and
        its successor keeps ``qd`` (after the setup: ``qd`` start)."""
        if op < 0:  # the setup reply: start
            return self.send_messages(now, items) + sum(self._issue(now) for _ in range(self.qd))
        start = self.issue_time.pop(op)
        self.completed += 1
        self.done_time.append(now)
        self.rtts.append(now - start)
        new = self.issued  # the successor (_new_op, inline; items is finish's own list)
        self.issued = new + 1
        self.issue_time[new] = now
        proc = self.server_proc
        for j in self.exchange.roots:
            items.append((new, j, proc))
        sent = self.send_messages(now, items)
        if self.completed >= self.target:
            self.loop.stop()
        elif self.pause_every:  # let the cycle detector look
            self.pause_in -= 1
            if self.pause_in <= 0:
                self.pause_in = self.pause_every
                self.loop.stop()
        return sent

    #: When to pause for the fast-forward, which is its own business.
    cycle_transient = ("pause_every", "pause_in")

    def cycle_counters(self) -> dict:
        return {
            **super().cycle_counters(),
            "completed": self.completed,
            "done": len(self.done_time),
        }

    def cycle_state(self, view: View) -> Hashable:
        flight = tuple(sorted((view.op(op), view.time(t)) for op, t in self.issue_time.items()))
        return super().cycle_state(view), flight

    def cycle_signature(self, view: View) -> Hashable:
        oldest = min(self.issue_time.values(), default=view.now)
        return super().cycle_signature(view), view.time(oldest)

    def cycle_shift(self, shift: Shift) -> None:
        """Also the operations in flight, and the completion times and
        round trips of the skipped cycles: the last cycle's, again."""
        super().cycle_shift(shift)
        shift.grow(self, "completed")
        d, dt = shift.ops, shift.dt
        self.issued += d
        self.issue_time = {op + d: t + dt for op, t in self.issue_time.items()}
        i, j = shift.before["done"], shift.after["done"]
        done, rtts = self.done_time[i:j], self.rtts[i:j]
        for k in range(1, shift.n + 1):
            self.done_time.extend(t + k * shift.period for t in done)
            self.rtts.extend(rtts)

"""The fast-forward's view of an application thread (:class:`~models.sim.app.AppThread`,
:mod:`models.sim.fastforward`): its state, counters and shift, kept apart from the thread's
logic (a base class of it)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Hashable

    from models.sim.fastforward import Shift, View

__all__ = ["AppThreadView"]


class AppThreadView:
    """The ``cycle_*`` methods of :class:`~models.sim.app.AppThread` (a mixin)."""

    # (the thread's fields its shift sets, for the type checker)
    busy_start: int
    idle_since: int
    count: int
    expect: deque
    parked: tuple | None
    got: dict

    #: The loop's heap and order numbers, which the thread holds for its
    #: fast path; they are the loop's state (its pending events), not the
    #: thread's.
    cycle_transient = ("heap", "ticket")

    @property
    def cycle_stream(self: Any) -> int:
        """The messages it reads come from the peer's stream."""
        return 1 - self.ep.side

    def cycle_parts(self: Any) -> dict:
        return {"cpu": self.cpu}

    def cycle_counters(self: Any) -> dict:
        return {
            "busy_counts": self.busy_counts,
            "empty_wakeups": self.empty_wakeups,
            "wakeups": self.wakeups,
            "busy_fs": self.busy_fs,
            "cpu_fs": self.cpu_fs,
            "thread_segments": self.thread_segments,
            "count": self.count,
            "served": self.served,
        }

    @staticmethod
    def _item_state(item: tuple, view: View) -> tuple:
        end, op, msg, proc = item
        return view.seq(end), view.op(op) if op >= 0 else op, msg, proc

    @staticmethod
    def _item_moved(item: tuple, shift: Shift) -> tuple:
        end, op, msg, proc = item
        return end + shift.seq(), op + shift.ops if op >= 0 else op, msg, proc

    def cycle_state(self: Any, view: View) -> Hashable:
        return (
            self.busy,
            self.waking,
            tuple(self._item_state(i, view) for i in self.expect),
            tuple(self.writes),
            self.unwritten,
            tuple(sorted((view.op(op) if op >= 0 else op, m) for op, m in self.got.items())),
            self._idle_state(view),
            self.read_cpu,
            self.wake_paid,
            self._parked_state(view),
        )

    def _idle_state(self: Any, view: View) -> int | None:
        """How long ago an idle thread went idle, as far as it can still
        matter (a wake-up's latency depends on it only up to
        ``wake_fast_idle``, or up to a curve's last point)."""
        horizon = self.wake_curve[-1][0] if self.wake_curve else self.wake_fast_idle
        horizon = max(horizon, self.woken_horizon)
        if not horizon or self.busy or self.waking:
            return None
        return max(view.time(self.idle_since), -horizon)

    def cycle_signature(self: Any, view: View) -> Hashable:
        return self.busy, self.waking, len(self.expect)

    def cycle_event(self: Any, name: str, time: int, item: Any, view: View) -> Hashable:
        """A wake-up or a step (no argument), or the end of processing
        the message ``item``."""
        if item is None:
            return (view.time(time),)
        return view.time(time), self._item_state(item, view)

    def cycle_shift_event(self: Any, name: str, time: int, item: Any, shift: Shift) -> tuple:
        return time + shift.dt, None if item is None else self._item_moved(item, shift)

    def cycle_shift(self: Any, shift: Shift) -> None:
        """Counters, and the messages it expects.  The messages of the
        busy period under way: if the thread went idle within the cycle,
        the period began within it too (it moves with the cycle); if it
        never did, one period spans every cycle and grows by the same
        amount in each."""
        shift.grow(
            self,
            "busy_counts",
            "empty_wakeups",
            "wakeups",
            "busy_fs",
            "cpu_fs",
            "thread_segments",
            "served",
        )
        a, b = shift.before, shift.after
        ended_a = sum(a["busy_counts"].values()) + a["empty_wakeups"]
        ended_b = sum(b["busy_counts"].values()) + b["empty_wakeups"]
        if ended_a != ended_b:  # its busy periods repeat
            self.busy_start += shift.dt
            self.idle_since += shift.dt
        else:  # one period, still growing
            self.count = shift.grown("count")
        self.expect = deque(self._item_moved(i, shift) for i in self.expect)
        if self.parked is not None and self.parked[1] is not None:
            self.parked = self.parked[0], self._item_moved(self.parked[1], shift)
        d = shift.ops
        self.got = {op + d if op >= 0 else op: m for op, m in self.got.items()}

"""Which woken task preempts the running one on a CPU the two ends share: EEVDF's rules
(:class:`models.sim.eevdf.RunQueue`) replayed over the kernel's own scheduler trace.

``tools/preempt_trace.py`` records, for the loop pinned to one CPU, every event of the CPU's
fair scheduler that moves a task's virtual runtime or its place in the queue (:data:`DATASET`):
each task's added CPU time (``sched_stat_runtime``), each wake-up onto the CPU, each switch.
For a wake-up issued by the running task the trace also says whether it left that task to be
rescheduled (the need-resched flag): the kernel's decision, at the moment it was made.

:func:`replay` feeds the events in order to a :class:`~models.sim.eevdf.RunQueue` and records,
for each such wake-up, the run queue's decision beside the kernel's.  The rules get no
parameter from the trace; its base slice is Linux's default for the machine's CPUs
(:data:`SLICE_NS`).  One row per client socket mode: the share of decisions the rules get
right, a test held to :data:`SHARE` (a fraction).  Each row fails with one of the rules
left out (:data:`WRONG`): without the lag a sleeping task keeps, every woken task is placed at
the queue's average; without the delayed dequeue (EEVDF before Linux 6.12), a task that had
more than its share leaves at once with its negative lag; and woken tasks that never preempt
are the simulator's ``Link.run_to_block``.

>>> import pandas as pd
>>> ev = pd.DataFrame({
...     "event": ["switch", "run", "wake", "run", "switch", "run", "wake"],
...     "task": ["idle", "client", "server", "client", "client", "server", "client"],
...     "other": ["client", "-", "client", "-", "server", "-", "server"],
...     "state": ["R", "-", "-", "-", "S", "-", "-"],
...     "runtime_ns": [0, 5000, 0, 1000, 0, 9000, 0],
...     "resched": [False, False, False, False, False, False, True],
... })
>>> replay(ev)[["waker", "woken", "kernel", "rules"]].to_dict("records")[-1]
{'waker': 'server', 'woken': 'client', 'kernel': True, 'rules': True}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.sim.eevdf import BASE_SLICE_S, RunQueue
from models.validation import Comparison, comparisons

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DATASET",
    "SLICE_NS",
    "SHARE",
    "WRONG",
    "replay",
    "agreement",
    "decision_rows",
    "findings",
]

#: The scheduler's events on the pinned CPU (``tools/preempt_trace.py``).
DATASET = "kernel6_machine4_preempt_events"
#: Linux's default base slice on two CPUs, ns (:data:`models.sim.eevdf.BASE_SLICE_S`).
SLICE_NS = round(BASE_SLICE_S * 1e9)  # s -> ns
#: The share of the kernel's decisions the rules must get right (a fraction).  One in ten may
#: go the other way: the replay starts in the middle of a run with every task at the queue's
#: average, and tasks other than the two ends come and go with what they ran elsewhere unseen.
SHARE = 0.9


class _NoLag(RunQueue):
    """Wrong model: a woken task is placed at the queue's average, whatever it was owed."""

    def block(self, task: Any) -> None:
        super().block(task)
        e = self.tasks[task]
        if not e.delayed:
            e.lag = 0


class _NoDelay(RunQueue):
    """Wrong model: a task that blocks leaves at once, negative lag and all."""

    def block(self, task: Any) -> None:
        e = self._entity(task)
        e.lag = self.average() - e.v
        e.queued = e.delayed = False
        if self.curr == task:
            self.curr = None


class _Never(RunQueue):
    """Wrong model: a woken task never preempts (it waits until the running task blocks)."""

    def wake(self, task: Any) -> bool:
        super().wake(task)
        return False


#: The wrong models, by name: each row fails with one of them at least.
WRONG = {"no lag": _NoLag, "no delayed dequeue": _NoDelay, "never preempts": _Never}


def replay(events: pd.DataFrame, queue: type[RunQueue] = RunQueue) -> pd.DataFrame:
    """Replay one run's ``events`` (rows of :data:`DATASET`, in order) through a ``queue``: one
    row per wake-up issued by the CPU's running task, with the waker, the woken task, the
    kernel's decision (``kernel``: it left the waker to be rescheduled) and the rules'
    (``rules``: the woken task preempts)."""
    import pandas as pd

    rq = queue(SLICE_NS)
    out = []
    for r in events.itertuples(index=False):
        if r.event == "run":
            rq.ran(r.task, int(r.runtime_ns))
        elif r.event == "wake":
            waker = None if r.other == "-" else r.other
            preempts = rq.wake(r.task)
            if waker is not None and waker == rq.curr:
                out.append((waker, r.task, bool(r.resched), preempts))
        elif r.event == "switch":
            if r.task != "idle":
                if r.state == "R":
                    rq.preempted(r.task)
                else:
                    rq.block(r.task)
            rq.pick()  # (a delayed task it would pick leaves: the kernel's pick does that)
            if r.other == "idle":
                rq.idle()
            else:
                rq.switch_to(r.other)
    return pd.DataFrame(out, columns=["waker", "woken", "kernel", "rules"])


def agreement(df: pd.DataFrame, queue: type[RunQueue] = RunQueue) -> pd.DataFrame:
    """Per client socket mode of :data:`DATASET`'s ``df``: the wake-ups decided (``n``), those
    the kernel made preempt (``kernel``), and the share the rules decide as the kernel did
    (``right``)."""
    import pandas as pd

    rows = {}
    for mode, ev in df.groupby("client_sock_mode", sort=True):
        d = replay(ev.sort_values("seq"), queue)
        rows[mode] = {
            "n": len(d),
            "kernel": int(d["kernel"].sum()),
            "right": float((d["kernel"] == d["rules"]).mean()) if len(d) else float("nan"),
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("client_sock_mode")


def decision_rows(table: pd.DataFrame, source: str) -> list[Comparison]:
    """Per client socket mode of an :func:`agreement` table: the share of the kernel's
    wake-up preemption decisions the rules get right, a test held to :data:`SHARE`."""
    return [
        Comparison(
            "ch9",
            f"wake-up preemption on one CPU, {mode} client: share of the kernel's decisions "
            "EEVDF's rules, replayed over its trace, get right",
            measured=1.0,
            predicted=float(r["right"]),
            unit="fraction",
            abs_tol=round(1.0 - SHARE, 12),
            why=f"at least {SHARE:.0%}: the replay starts mid-run, other tasks' state unseen",
            source=source,
            kind="test",
        )
        for mode, r in table.iterrows()
    ]


def findings(table: pd.DataFrame) -> dict[str, bool]:
    """What chapter 9 says of an :func:`agreement` table, each a test it can fail."""
    return {
        "with a Nagle client the kernel's decisions go both ways": bool(
            0 < table.loc["nagle", "kernel"] < table.loc["nagle", "n"]
        ),
        "with a NODELAY client the woken end seldom preempts": bool(
            table.loc["nodelay", "kernel"] <= 0.1 * table.loc["nodelay", "n"]
        ),
    }


@comparisons("ch9.wakeup_preemption")
def wakeup_preemption_comparisons() -> list[Comparison]:
    """Chapter 9's wake-up preemption decisions: EEVDF's rules replayed over the kernel's
    scheduler trace."""
    from models import data

    table = agreement(data.load(DATASET))
    return decision_rows(table, f"scheduler trace ({DATASET})")

"""One CPU's run queue as Linux's fair scheduler keeps it (EEVDF), reduced to what decides
whether a woken task preempts the running one.

Since Linux 6.6 the fair class picks, among the tasks that are *eligible* (whose virtual
runtime is not ahead of the queue's average), the one with the earliest virtual deadline
(``kernel/sched/fair.c``, ``pick_eevdf``).  A task that wakes while another runs is enqueued
and the scheduler asks whether the running task should give way (``check_preempt_wakeup_fair``):
it keeps the CPU while it is eligible and inside the slice it was picked with (``RUN_TO_PARITY``,
``protect_slice``); otherwise the woken task runs first if it is the pick.  What makes a woken
task the pick is its *lag*, the service it was owed or had in excess when it went to sleep:

* a task's virtual runtime grows by the CPU time it runs (equal weights: every task here runs at
  nice 0), including, on a kernel built without ``CONFIG_IRQ_TIME_ACCOUNTING``, the
  soft-interrupt work run in its context (:meth:`RunQueue.ran`); past its deadline it gets a new
  one a slice later (``update_deadline``);
* a task that blocks leaves with its lag, the queue's average less its own virtual runtime; one
  whose lag is negative (it had more than its share) stays queued, *delayed*, until it would be
  picked (``DELAY_DEQUEUE``), and then leaves with its lag clipped at zero from above
  (``DELAY_ZERO``) (:meth:`RunQueue.block`, :meth:`RunQueue.pick`);
* a task that wakes is placed its lag behind the queue's average, the lag scaled up by the
  weight it adds (``place_entity`` with ``PLACE_LAG``), with a deadline a slice later; a delayed
  one just becomes runnable again with its own virtual runtime (:meth:`RunQueue.wake`).

Left out: weights other than nice 0, slices other than the default, ``PREEMPT_SHORT``,
``NEXT_BUDDY``/``PICK_BUDDY`` (off by default), the lag's clamp (a few milliseconds, far above
what two threads that wake each other build up), and task groups.  Tasks are any hashable
values; times are whole numbers in whatever unit the caller uses throughout (nanoseconds for a
kernel trace, femtoseconds in the simulator), averages rounded down as the kernel's are.
``models.validation.wakeup_preemption`` replays a kernel's scheduler trace through it and holds
its decisions to the kernel's; ``models.sim.cpu.CpuPool`` runs it for ``Link.wake_preempt``.

Two tasks on one CPU: ``a`` runs and blocks having had more than its share, so it stays queued,
delayed; ``b`` runs until it is ahead of the average, and ``a``, woken, preempts it:

>>> rq = RunQueue(slice_=1000)
>>> rq.wake("a"), rq.switch_to(rq.pick()), rq.wake("b")
(False, 'a', False)
>>> rq.ran("a", 10); rq.block("a"); rq.switch_to(rq.pick())
'b'
>>> rq.ran("b", 30); rq.wake("a")
True
"""

from __future__ import annotations

from collections.abc import Hashable

__all__ = ["RunQueue", "BASE_SLICE_S"]

#: Linux's default base slice of the fair scheduler on two CPUs, seconds:
#: ``sysctl_sched_base_slice`` 0.75 ms scaled by ``1 + log2(2)`` (``update_sysctl`` in
#: ``kernel/sched/fair.c``).
BASE_SLICE_S = 1.5e-3


class _Entity:
    """A task's scheduling state: virtual runtime, deadline, lag, and whether it is queued
    (runnable or delayed) and delayed."""

    __slots__ = ("v", "deadline", "lag", "queued", "delayed", "protect")

    def __init__(self, v: int, slice_: int) -> None:
        self.v = v
        self.deadline = v + slice_
        self.lag = 0
        self.queued = False
        self.delayed = False
        self.protect = v  # the virtual runtime up to which it keeps the CPU once picked


class RunQueue:
    """The fair-class run queue of one CPU (see the module's text).

    Parameters
    ----------
    slice_ : int
        The base slice (``sysctl_sched_base_slice``: 0.75 ms scaled by ``1 + log2(CPUs)``,
        1.5 ms on two CPUs), in the caller's time unit.
    """

    __slots__ = ("slice", "tasks", "curr", "zero")

    def __init__(self, slice_: int) -> None:
        if not slice_ > 0:
            raise ValueError(f"slice_ must be > 0, got {slice_!r}")
        self.slice = slice_
        self.tasks: dict[Hashable, _Entity] = {}
        self.curr: Hashable | None = None  # the task on the CPU (None: idle)
        self.zero = 0  # the queue's average virtual runtime when it was last non-empty

    # -- what the queue holds ----------------------------------------------

    @property
    def runnable(self) -> set:
        """Tasks queued and not delayed (the one running included)."""
        return {k for k, e in self.tasks.items() if e.queued and not e.delayed}

    def _queued(self) -> list:
        return [e for e in self.tasks.values() if e.queued]

    def average(self) -> int:
        """The queue's average virtual runtime (``avg_vruntime``): the delayed tasks count."""
        q = self._queued()
        return sum(e.v for e in q) // len(q) if q else self.zero

    def _entity(self, task: Hashable) -> _Entity:
        e = self.tasks.get(task)
        if e is None:
            e = self.tasks[task] = _Entity(self.average(), self.slice)
        return e

    # -- events -------------------------------------------------------------

    def ran(self, task: Hashable, work: int) -> None:
        """``task`` ran ``work`` more (``update_curr``): its virtual runtime grows; past its
        deadline it gets a new one."""
        e = self._entity(task)
        e.v += work
        if e.v >= e.deadline:
            e.deadline = e.v + self.slice

    def wake(self, task: Hashable) -> bool:
        """``task`` wakes on this CPU: placed by its lag (or, delayed, just runnable again);
        whether it preempts the task on the CPU (``check_preempt_wakeup_fair``)."""
        e = self._entity(task)
        if e.queued and not e.delayed:
            return False  # (already runnable)
        if e.delayed:
            e.delayed = False
        else:
            others = self._queued()
            n = len(others)
            lag = e.lag * (n + 1) // n if n else 0  # (PLACE_LAG: the weight it adds)
            e.v = self.average() - lag
            e.deadline = e.v + self.slice
            e.queued = True
        curr = self.curr
        if curr is None or curr == task:
            return False
        h = self.tasks[curr]
        if h.v <= self.average() and h.v < h.protect:  # eligible and in its slice
            return False
        return self._eevdf() == task

    def block(self, task: Hashable) -> None:
        """``task`` goes to sleep: it leaves with its lag, or stays delayed if the lag is
        negative."""
        e = self._entity(task)
        lag = self.average() - e.v
        if lag < 0:
            e.delayed = True
        else:
            e.queued = False
            e.lag = lag
        if self.curr == task:
            self.curr = None

    def _eevdf(self) -> Hashable | None:
        """The eligible queued task with the earliest deadline (``pick_eevdf``)."""
        avg = self.average()
        best = None
        for k, e in self.tasks.items():
            if (
                e.queued
                and e.v <= avg
                and (best is None or e.deadline < self.tasks[best].deadline)
            ):
                best = k
        return best

    def pick(self) -> Hashable | None:
        """The next task to run (``pick_next_entity``): a delayed task picked leaves instead,
        its lag clipped at zero from above, and the pick is made again; None: nothing runnable."""
        while True:
            k = self._eevdf()
            if k is None:
                if self.runnable:  # (rounding: every one ahead of the average)
                    k = min(self.runnable, key=lambda t: self.tasks[t].v)
                else:
                    self.idle()
                    return None
            e = self.tasks[k]
            if not e.delayed:
                return k
            e.lag = min(self.average() - e.v, 0)
            e.queued = e.delayed = False

    def switch_to(self, task: Hashable | None) -> Hashable | None:
        """``task`` (a :meth:`pick`) goes on the CPU, protected for the rest of its slice."""
        self.curr = task
        if task is not None:
            e = self._entity(task)
            e.queued = True
            e.delayed = False
            e.protect = e.deadline
        q = self._queued()
        if q:
            self.zero = self.average()
        return task

    def preempted(self, task: Hashable) -> None:
        """``task`` leaves the CPU still runnable."""
        if self.curr == task:
            self.curr = None

    def idle(self) -> None:
        """Nothing runnable: the delayed tasks leave (picked and dropped in turn)."""
        avg = self.average()
        for e in self.tasks.values():
            if e.queued:
                e.lag = min(avg - e.v, 0) if e.delayed else 0
                e.queued = e.delayed = False
        self.curr = None

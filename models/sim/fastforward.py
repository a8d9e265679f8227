"""Fast-forward: jump over exact repeats of a deterministic run.

A deterministic run settles, after a warm-up, into one repeating pattern
(chapters 4 and 6): the same events, at the same offsets, every ``K``
completions.  The detector (``FastForward``) compares the run's
state after completions, with every time taken relative to now, every
sequence number relative to the bytes written so far and every operation
number relative to the operations issued.  When a state comes back, the
run from the second sighting repeats the run from the first, and so on
for ever: every part of the simulation moves itself ``n`` cycles ahead
at once (times, sequence numbers, operation numbers, counters, the
per-operation lists) and the run goes on from there to its end.  The
numbers are those of the long run, exactly (integer time makes "the same
state" exact; ``tests/test_sim_properties.py`` checks the equality over
random scenarios, field by field).

Ticks.  The state leaves out where ``now`` falls inside a clock's tick
(its *phase*).  That is sound only if nothing in the cycle depended on
it: no timer fired and every jiffy comparison had the same answer for
any phase; the clock counts the exceptions (its phase *uses*).
Otherwise a repeat counts only if the phase repeats too (a cycle of
whole ticks, as a delayed-ACK stall is).

The state protocol
------------------
The detector knows no component by name.  It starts from the
simulation (the *root*: ``cycle_parts()`` and ``cycle_bases()``), walks
the tree of parts each part owns, and asks each part for its own state
and its own shift:

``cycle_state(view) -> Hashable``
    Required, and defined by the part's own class (not inherited: a
    subclass that adds state or changes a rule must say what its state
    is; one that keeps its parent's says so with
    ``cycle_state = Parent.cycle_state``).  Everything of the part that
    decides the run's future, made relative with the ``View``.
``cycle_shift(shift) -> None``
    Required.  Move the part ``shift.n`` cycles ahead (``Shift``).
``cycle_parts() -> dict[str, object]``
    The parts it owns (its rules, its timers), by name.
``cycle_counters() -> dict[str, int | dict]``
    Statistics that grow by the same amount every cycle; the detector
    records them at both sightings, ``shift.grow(self)`` sets them to
    their values ``n`` cycles on.
``cycle_signature(view) -> Hashable``
    A cheap part of the state, compared after every completion.
``cycle_stream``
    The byte stream its sequence numbers count (0: written by the
    client, 1: by the server); its parts inherit it.
``cycle_event`` and ``cycle_shift_event``
    ``cycle_event(name, time, arg, view) -> Hashable | None`` and
    ``cycle_shift_event(name, time, arg, shift) -> (time, arg)``, for the
    pending events whose handler is its method ``name``: their state
    (``None``: its ``cycle_state`` covers it) and their move.
    Without them an event's state is its relative time, and it moves by
    ``shift.dt``; its argument must then be ``None``.
``cycle_phase(now) -> (Hashable, int)``
    A clock: where ``now`` falls in its tick, and how often the run has
    depended on that so far.
``cycle_transient``
    Names of fields that carry nothing from one event to the next, or
    only what its state already holds (a cache, the handle of a pending
    event); ``tests/test_sim_core.py`` fails on a field that changes
    during a run and that no ``cycle_*`` method of its class reads, unless
    it is named here.

A part that does not offer its own state, or an event whose handler is
not a method of a part, turns the fast-forward off for the run and says
why (``FastForward.off_reason``, ``Result.fast_forward_off_reason``):
every event is then run.

With ``run.check`` the detector checks the jump itself: the state after
it must equal the state before it (each part's shift agrees with its
state), and the simulation's invariants must hold on the totals.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any, NamedTuple, Protocol

__all__ = ["FastForward", "View", "Shift", "Cyclic", "Root", "Bases"]

#: Where a run's sequence and operation numbers stand: the bytes written
#: to each stream (client's, server's) and the operations issued.
Bases = tuple[tuple[int, int], int]


class Cyclic(Protocol):
    """What every stateful part of a simulation offers (see the module)."""

    def cycle_state(self, view: View) -> Hashable: ...

    def cycle_shift(self, shift: Shift) -> None: ...


class Root(Protocol):
    """The simulation as the detector sees it."""

    def cycle_parts(self) -> dict[str, Any]: ...

    def cycle_bases(self) -> Bases: ...


class View:
    """What a part's state is made relative to, at one look.

    ``now`` (fs); ``stream``: the part's byte stream (or ``None``).
    """

    __slots__ = ("now", "stream", "_bytes", "_ops")

    def __init__(self, now: int, bases: Bases, stream: int | None) -> None:
        self.now = now
        self.stream = stream
        self._bytes, self._ops = bases

    def time(self, t: int) -> int:
        """``t`` (fs) relative to now."""
        return t - self.now

    def seq(self, seq: int, stream: int | None = None) -> int:
        """A sequence number of ``stream`` (default: the part's own)
        relative to the bytes written to it so far."""
        s = self.stream if stream is None else stream
        if s is None:
            raise ValueError("seq() needs a stream: the part has no cycle_stream")
        return seq - self._bytes[s]

    def op(self, op: int) -> int:
        """An operation number relative to the operations issued."""
        return op - self._ops


class Shift:
    """How far one part moves: ``n`` cycles of ``period`` fs.

    ``dt`` is added to every time, ``seq()`` to every sequence number of
    a stream, ``ops`` to every operation number; ``before`` and
    ``after`` are the part's counters at the two sightings a cycle
    apart (``after`` is now).
    """

    __slots__ = ("n", "period", "dt", "ops", "stream", "_bytes", "before", "after")

    def __init__(
        self,
        n: int,
        period: int,
        dbytes: tuple[int, int],
        ops: int,
        stream: int | None,
        before: dict,
        after: dict,
    ) -> None:
        self.n = n
        self.period = period
        self.dt = n * period
        self.ops = ops
        self.stream = stream
        self._bytes = dbytes
        self.before = before
        self.after = after

    def seq(self, stream: int | None = None) -> int:
        """What to add to a sequence number of ``stream`` (default: the
        part's own)."""
        s = self.stream if stream is None else stream
        if s is None:
            raise ValueError("seq() needs a stream: the part has no cycle_stream")
        return self._bytes[s]

    def grown(self, name: str) -> Any:
        """Counter ``name`` ``n`` cycles on: it grew by the same amount
        in every cycle (a dict: key by key)."""
        a, b, n = self.before[name], self.after[name], self.n
        if isinstance(b, dict):
            return {k: v + n * (v - a.get(k, 0)) for k, v in b.items()}
        return b + n * (b - a)

    def grow(self, obj: Any, *names: str) -> None:
        """Set ``obj``'s counters (``names``, default: all of them, each
        an attribute of that name) to their values ``n`` cycles on."""
        for name in names or self.after:
            setattr(obj, name, self.grown(name))


class _Part:
    """One part found by the walk: where it is and its hooks."""

    __slots__ = ("path", "obj", "stream", "counters", "event", "shift_event")

    def __init__(self, path: str, obj: Any, stream: int | None) -> None:
        self.path = path
        self.obj = obj
        self.stream = stream
        self.counters = getattr(obj, "cycle_counters", None)
        self.event = getattr(obj, "cycle_event", None)
        self.shift_event = getattr(obj, "cycle_shift_event", None)


class _Obs(NamedTuple):
    """Where the run was at a look."""

    done: int  # completions
    now: int  # fs
    uses: int  # of the clocks' phases
    bases: Bases
    counters: list  # every part's


class _Plan:
    """A candidate cycle of ``k`` completions, checked at two points."""

    __slots__ = ("k", "exact", "next", "seen")

    def __init__(self, k: int, exact: bool, start: int) -> None:
        self.k = k
        self.exact = exact  # the phase must repeat too
        self.next = start  # the completion of the next look
        self.seen: list = []  # (state, phase, observation)


class _Off(Exception):
    """The run cannot be fast-forwarded; the message says why."""


class FastForward:
    """Watches a simulation and jumps.

    Parameters
    ----------
    root : Root
        The simulation: its parts and its bases.
    loop : EventLoop
        Its event loop.
    target : int
        Completions at which the run ends.
    check : callable, optional
        Called after a jump (the simulation's invariants), with
        ``run.check``; the detector then also compares the state after
        the jump with the state before it.

    The engine calls :meth:`observe` after completions (the client
    thread pauses the loop every :attr:`every` completions, and after
    :attr:`next_in` more when that is set); it returns ``False`` once
    the detector has jumped or given up, after which the engine stops
    calling it.  If the run cannot be fast-forwarded, :attr:`off_reason`
    says why (set at construction or at a look).

    Looking at the whole state after every completion would cost as much
    as simulating.  So each completion records a cheap *signature* (a
    few numbers that equal states share); when a signature comes back
    after ``k`` completions, the full state is compared at that
    completion and ``k`` later (a ``_Plan``).
    """

    #: Failed candidate cycles after which candidates are tried less and
    #: less often (a run with no short cycle pays little for the search).
    PATIENCE = 24
    #: Completions after which the detector looks every 2nd, then every
    #: 4th ... (up to every 64th) completion.
    DENSE = 256

    def __init__(
        self, root: Root, loop: Any, target: int, check: Callable[[], None] | None = None
    ) -> None:
        self.root = root
        self.loop = loop
        self.target = target
        self.check = check
        self.off_reason: str | None = None
        self.skipped_ops = 0
        self.cycle_ops = 0
        self.every = 1  # look every this many completions
        self.next_in = 0  # and once after this many (0: no change)
        self.free: dict = {}
        self.exact: dict = {}
        self.plan: _Plan | None = None
        self.failed = 0
        self.skip = 0
        self.parts: list[_Part] = []
        self.index: dict[int, _Part] = {}
        try:
            self._walk(root.cycle_parts(), "", None)
        except _Off as e:
            self.off_reason = str(e)
        self.signatures = [
            (p, f) for p in self.parts if (f := getattr(p.obj, "cycle_signature", None))
        ]
        self.phases = [f for p in self.parts if (f := getattr(p.obj, "cycle_phase", None))]

    def _walk(self, parts: dict, prefix: str, stream: int | None) -> None:
        for name, obj in parts.items():
            if id(obj) in self.index:  # shared (a CPU pool): once
                continue
            path = prefix + name
            kind = type(obj)
            if "cycle_state" not in vars(kind):
                raise _Off(
                    f"{kind.__name__} ({path}) does not offer its own cycle state "
                    f"(cycle_state and cycle_shift, models.sim.fastforward)"
                )
            if not callable(getattr(obj, "cycle_shift", None)):
                raise _Off(f"{kind.__name__} ({path}) offers no cycle_shift")
            own = getattr(obj, "cycle_stream", None)
            part = _Part(path, obj, stream if own is None else own)
            self.parts.append(part)
            self.index[id(obj)] = part
            sub = getattr(obj, "cycle_parts", None)
            if sub is not None:
                self._walk(sub(), path + ".", part.stream)

    # -- observing --------------------------------------------------------

    def observe(self, done: int, now: int) -> bool:
        """After completion ``done`` at ``now`` (fs): look, maybe jump.
        ``False``: stop calling."""
        if self.off_reason is not None:
            return False
        try:
            return self._observe(done, now)
        except _Off as e:
            self.off_reason = str(e)
            return False

    def _observe(self, done: int, now: int) -> bool:
        if self.plan is None:  # look less often, in time
            self.every = 1 << min(done // self.DENSE, 6)
        plan = self.plan
        if plan is not None and done >= plan.next:
            return self._look(plan, done, now)
        phase, uses = self.phase(now)
        sig = self.signature(now)
        xsig = (sig, phase)
        if plan is None:
            if self.skip:
                self.skip -= 1
            else:
                prev = self.exact.get(xsig)
                if prev is not None:
                    self.plan = _Plan(done - prev[0], True, done)
                else:
                    prev = self.free.get(sig)
                    if prev is not None and prev[1] == uses:
                        self.plan = _Plan(done - prev[0], False, done)
                if self.plan is not None:
                    return self._look(self.plan, done, now)
        self.free[sig] = (done, uses)
        self.exact[xsig] = (done, uses)
        return True

    def phase(self, now: int) -> tuple[tuple, int]:
        """The clocks' phases at ``now`` and their uses so far."""
        keys = []
        uses = 0
        for f in self.phases:
            key, n = f(now)
            keys.append(key)
            uses += n
        return tuple(keys), uses

    def _views(self, now: int, bases: Bases) -> dict:
        return {s: View(now, bases, s) for s in (None, 0, 1)}

    def signature(self, now: int) -> tuple:
        """A few numbers that two equal states share (cheap)."""
        loop = self.loop
        nxt = loop.next_time()
        views = self._views(now, self.root.cycle_bases())
        return (
            loop.live_count(),
            -1 if nxt is None else nxt - now,
            *[f(views[p.stream]) for p, f in self.signatures],
        )

    def _look(self, plan: _Plan, done: int, now: int) -> bool:
        """Compare the full state at the plan's next point."""
        phase, uses = self.phase(now)
        obs = _Obs(done, now, uses, self.root.cycle_bases(), self.counters())
        entry = (self.state(now), phase, obs)
        seen = plan.seen
        if done != plan.next or (
            seen
            and (
                entry[0] != seen[0][0]
                or (plan.exact and entry[1] != seen[0][1])
                or (not plan.exact and obs.uses != seen[0][2].uses)
            )
        ):
            self.plan = None  # not a cycle after all
            self.failed += 1
            if self.failed > self.PATIENCE:
                self.skip = 1 << min(self.failed - self.PATIENCE, 12)
            return True
        if seen:
            self.plan = None
            return self._jump(seen[0][2], obs, entry[0])
        seen.append(entry)
        plan.next = done + plan.k
        self.next_in = plan.k  # pause there to look again
        return True

    def counters(self) -> list:
        """Every part's counters (copies: they go on growing)."""
        return [
            {k: dict(v) if isinstance(v, dict) else v for k, v in p.counters().items()}
            if p.counters is not None
            else {}
            for p in self.parts
        ]

    # -- the state, relative to now ----------------------------------------

    def state(self, now: int) -> tuple:
        """Everything that decides the run's future, made relative: the
        pending events, then every part's own state."""
        views = self._views(now, self.root.cycle_bases())
        return (
            tuple(self._events(views)),
            tuple(p.obj.cycle_state(views[p.stream]) for p in self.parts),
        )

    def _owner(self, handler: Any) -> tuple[_Part, str]:
        part = self.index.get(id(getattr(handler, "__self__", None)))
        if part is None:
            raise _Off(
                f"a pending event's handler {handler!r} is not a method of a part "
                f"that offers its cycle state"
            )
        return part, handler.__func__.__name__

    def _events(self, views: dict) -> Iterator[tuple]:
        for time, _order, handler, arg in self.loop.pending():
            part, name = self._owner(handler)
            view = views[part.stream]
            if part.event is not None:
                st = part.event(name, time, arg, view)
                if st is not None:
                    yield (part.path, name, st)
            elif arg is None:
                yield (part.path, name, view.time(time))
            else:
                raise _Off(
                    f"the event {part.path}.{name} carries an argument and "
                    f"{type(part.obj).__name__} defines no cycle_event"
                )

    # -- the jump -----------------------------------------------------------

    def _jump(self, s2: _Obs, s3: _Obs, state: tuple) -> bool:
        k_ops = s3.done - s2.done
        n = (self.target - s3.done - 1) // k_ops
        if n <= 0:
            return False
        period = s3.now - s2.now
        (b2, o2), (b3, o3) = s2.bases, s3.bases
        dbytes = (n * (b3[0] - b2[0]), n * (b3[1] - b2[1]))
        dops = n * (o3 - o2)
        shifts = [
            Shift(n, period, dbytes, dops, p.stream, before, after)
            for p, before, after in zip(self.parts, s2.counters, s3.counters)
        ]
        by_id = {id(p): s for p, s in zip(self.parts, shifts)}

        def move(entry: list) -> int:
            part, name = self._owner(entry[2])
            shift = by_id[id(part)]
            if part.shift_event is not None:
                entry[0], entry[3] = part.shift_event(name, entry[0], entry[3], shift)
            else:
                entry[0] += shift.dt
            return entry[0]

        # every event is known (the look just stated them all)
        self.loop.shift(n * period, move)
        for p, shift in zip(self.parts, shifts):
            p.obj.cycle_shift(shift)
        self.skipped_ops = n * k_ops
        self.cycle_ops = k_ops
        if self.check is not None:
            after = self.state(self.loop.now)
            where = [("pending events", state[0], after[0])] + [
                (p.path, x, y) for p, x, y in zip(self.parts, state[1], after[1])
            ]
            for path, x, y in where:
                if x != y:
                    raise AssertionError(
                        f"the fast-forward's jump changed the relative state: "
                        f"{path}: {x!r} became {y!r}"
                    )
            self.check()
        return False

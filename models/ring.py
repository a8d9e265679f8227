"""A closed ring of single-server stages with start latencies: the source's abstract pipeline, simulated.

Butterfield (2017, "Abstracted Pipeline Stages") describes every stage of the request/response loop the
same way: an input queue and one queue process that, once busy, takes each operation in turn for a fixed
processing time, and that pays a *start latency* only when an operation reaches it while it is idle with an
empty queue.  This module simulates exactly that ring, event by event, with no TCP at all.  It is the
reference the book uses for Little's law and for the asymptotic bounds; the packet simulator in
``models.sim`` adds segments, ACKs and timers on top of the same picture.

Times are in seconds; inside, the run counts whole femtoseconds on the
packet simulator's event loop (``models.sim.events.EventLoop``), so
its sums are exact.

>>> ring = Ring.four_stage(W1=1e-6, SP=16e-6, W2=5e-6, CP=8e-6)
>>> r = ring.run(qd=1, ops=200)
>>> round(r.rtt_mean * 1e6, 3), round(r.iops)
(30.0, 33333)
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from models.sim.events import FS, EventLoop, seconds_to_fs
from models.sim.parts import MAX_OPS, MAX_QD

__all__ = ["Stage", "Ring", "RingResult", "first_saturated_qd", "plateau_knee"]


@dataclass(frozen=True)
class Stage:
    """One stage of the ring.

    Parameters
    ----------
    name : str
        Label, e.g. ``"SP"``.
    time : float
        Processing time per operation in seconds (positive).
    latency : float
        Start latency in seconds (non-negative), paid when an operation finds the stage idle and empty.
    """

    name: str
    time: float
    latency: float = 0.0

    def __post_init__(self) -> None:
        if not (
            isinstance(self.time, (int, float)) and math.isfinite(self.time) and self.time > 0
        ):
            raise ValueError(
                f"stage {self.name}: time must be a positive number of seconds, got {self.time!r}"
            )
        if not (
            isinstance(self.latency, (int, float))
            and math.isfinite(self.latency)
            and self.latency >= 0
        ):
            raise ValueError(
                f"stage {self.name}: latency must be a non-negative number of seconds, "
                f"got {self.latency!r}"
            )


@dataclass
class RingResult:
    """What one run measured, over the operations that completed after the warm-up.

    Attributes
    ----------
    qd : int
        Operations kept in the ring.
    iops : float
        Completions per second.
    rtt_mean : float
        Mean time from an operation entering the first stage to leaving the last, in seconds.
    rtts : list of float
        Every measured round-trip time, in completion order (seconds).
    busy_fraction : dict
        Share of the measured interval each stage spent processing (not counting start latencies).
    busy_counts : dict
        For each stage, a histogram ``{k: n}``: ``n`` busy periods handled exactly ``k`` operations.
    in_flight_max, in_flight_min : int
        Largest and smallest number of operations in the ring seen at any event (both equal ``qd``).
    """

    qd: int
    iops: float
    rtt_mean: float
    rtts: list[float]
    busy_fraction: dict[str, float]
    busy_counts: dict[str, dict[int, int]]
    in_flight_max: int
    in_flight_min: int
    completed: int = 0
    duplicates: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def tpt(self) -> float:
        """Mean interval between completions, seconds (``1 / iops``)."""
        return 1.0 / self.iops


class Ring:
    """A closed ring of :class:`Stage` objects that keeps ``qd`` operations circulating.

    An operation that leaves the last stage is counted complete and at once re-enters the first stage as
    its successor (the client issuing a new request), so exactly ``qd`` operations are always inside.
    """

    def __init__(self, stages: Sequence[Stage]):
        if not stages:
            raise ValueError("stages must contain at least one Stage")
        names = [s.name for s in stages]
        if len(set(names)) != len(names):
            raise ValueError(f"stages: names must be unique, got {names}")
        self.stages = tuple(stages)

    @classmethod
    def four_stage(
        cls,
        W1: float,
        SP: float,
        W2: float,
        CP: float,
        SL: float = 0.0,
        CL: float = 0.0,
        SN: float = 0.0,
    ) -> Ring:
        """The source's simplified ring: request wire, server thread, response wire, client thread.

        ``SL`` and ``CL`` are the server's and client's wake-up latencies; ``SN`` a start delay on the
        response link (a Nagle-like hold on an idle link).
        """
        return cls(
            [Stage("W1", W1), Stage("SP", SP, SL), Stage("W2", W2, SN), Stage("CP", CP, CL)]
        )

    @classmethod
    def from_times(
        cls, times: Mapping[str, float], latencies: Mapping[str, float] | None = None
    ) -> Ring:
        """A ring from ``{"name": seconds}`` in order, with optional ``{"name": start latency}``."""
        latencies = dict(latencies or {})
        unknown = set(latencies) - set(times)
        if unknown:
            raise ValueError(f"latencies: no stage named {sorted(unknown)}")
        return cls([Stage(n, t, latencies.get(n, 0.0)) for n, t in times.items()])

    def run(self, qd: int, ops: int = 2000, warmup: int | None = None) -> RingResult:
        """Simulate until ``ops`` operations have completed after ``warmup`` completions.

        All operations start at time 0 in the first stage's queue, as if the client issued ``qd``
        requests at once.

        Parameters
        ----------
        qd : int
            Queue depth, 1 to 4096 (the simulator's ``MAX_QD``).
        ops : int
            Completions to measure, 1 to 1,000,000 (``MAX_OPS``).
        warmup : int, optional
            Completions to discard first; default ``4 * qd``.
        """
        if not isinstance(qd, (int,)) or isinstance(qd, bool) or not 1 <= qd <= MAX_QD:
            raise ValueError(f"qd must be an integer from 1 to {MAX_QD}, got {qd!r}")
        if not isinstance(ops, int) or isinstance(ops, bool) or not 1 <= ops <= MAX_OPS:
            raise ValueError(f"ops must be an integer from 1 to {MAX_OPS}, got {ops!r}")
        warmup = 4 * qd if warmup is None else warmup
        if not isinstance(warmup, int) or isinstance(warmup, bool) or not 0 <= warmup <= MAX_OPS:
            raise ValueError(f"warmup must be an integer from 0 to {MAX_OPS}, got {warmup!r}")

        return _RingRun(self.stages, qd, ops, warmup).run()

    def curve(self, qds: Sequence[int], ops: int = 1000) -> list[RingResult]:
        """Run once per queue depth in ``qds``."""
        return [self.run(q, ops=ops) for q in qds]

    def busy_curve(self, stage: str, qds: Sequence[int], ops: int = 1000) -> dict[int, float]:
        """Fraction of the time ``stage`` is busy, per queue depth in ``qds``."""
        if stage not in {s.name for s in self.stages}:
            raise ValueError(f"stage: no stage named {stage!r}")
        return {int(q): self.run(int(q), ops=ops).busy_fraction[stage] for q in qds}


def first_saturated_qd(busy: Mapping[int, float], above: float = 0.999) -> int:
    """The smallest queue depth at which a stage is busy more than ``above`` of the time.

    ``busy`` maps queue depth to busy fraction (:meth:`Ring.busy_curve`);
    the default allows a finite run 0.1 % of idle time at its start.

    >>> first_saturated_qd({1: 0.5, 2: 0.9995, 3: 1.0})
    2
    """
    saturated = [q for q, b in busy.items() if b > above]
    if not saturated:
        raise ValueError(f"busy: no queue depth is busy more than {above} of the time")
    return int(min(saturated))


def plateau_knee(qds: Sequence[int], iops: Sequence[float], within: float = 0.005) -> int:
    """The knee of a measured IOPS curve: the first queue depth whose rate is
    within ``within`` (a fraction) of the plateau, the rate at the deepest queue.

    >>> plateau_knee([1, 2, 3, 4], [10.0, 19.0, 19.95, 20.0])
    3
    """
    depths, rates = [int(q) for q in qds], [float(x) for x in iops]
    if len(depths) != len(rates):
        raise ValueError("qds and iops must have the same length")
    if not depths:
        raise ValueError("qds: at least one queue depth needed")
    pairs = sorted(zip(depths, rates))
    if not 0 <= within < 1:
        raise ValueError(f"within must be in [0, 1), got {within!r}")
    plateau = pairs[-1][1]
    return next(q for q, x in pairs if x >= (1 - within) * plateau)


class _RingRun:
    """One run of a ring on the event loop: each stage is an input queue
    and a process that, once started, takes the queued operations in
    turn; a start latency is paid only when it starts from idle."""

    def __init__(self, stages, qd: int, ops: int, warmup: int) -> None:
        self.stages = stages
        self.times = [seconds_to_fs(s.time) for s in stages]
        self.lats = [seconds_to_fs(s.latency) for s in stages]
        n = len(stages)
        self.loop = EventLoop()
        self.queues: list = [deque() for _ in range(n)]
        self.busy = [False] * n  # processing or waking up
        self.run_count = [0] * n  # operations in this busy period
        self.counts: list = [Counter() for _ in range(n)]
        self.work = [0] * n  # fs of processing while measured
        self.issued_at: dict = {}
        self.next_id = 0
        self.in_ring = 0
        self.in_min = self.in_max = qd
        self.completed = 0
        self.t_start: int | None = None  # fs: end of the warm-up
        self.rtts: list = []
        self.seen: set = set()
        self.duplicates = 0
        self.qd, self.ops, self.warmup = qd, ops, warmup

    def run(self) -> RingResult:
        for _ in range(self.qd):
            self._issue(0)
        self.loop.run()
        t_end = self.loop.now
        t_start = self.t_start or 0
        span = (t_end - t_start) / FS  # fs -> s
        return RingResult(
            qd=self.qd,
            iops=self.ops / span,
            rtt_mean=math.fsum(self.rtts) / len(self.rtts) if self.rtts else math.nan,
            rtts=self.rtts,
            busy_fraction={
                s.name: min(1.0, self.work[k] / FS / span) for k, s in enumerate(self.stages)
            },
            busy_counts={
                s.name: dict(sorted(self.counts[k].items())) for k, s in enumerate(self.stages)
            },
            in_flight_max=self.in_max,
            in_flight_min=self.in_min,
            completed=self.completed,
            duplicates=self.duplicates,
        )

    def _issue(self, t: int) -> None:
        self.issued_at[self.next_id] = t
        self._arrive(t, 0, self.next_id)
        self.next_id += 1
        self.in_ring += 1

    def _arrive(self, t: int, i: int, op: int) -> None:
        self.queues[i].append(op)
        if not self.busy[i]:
            self.busy[i] = True
            self.run_count[i] = 0
            self.loop.schedule(t + self.lats[i], self._start, i)

    def _start(self, t: int, i: int) -> None:
        """Stage ``i`` takes its next operation, or goes idle."""
        if self.queues[i]:
            op = self.queues[i].popleft()
            self.loop.schedule(t + self.times[i], self._done, (i, op))
            if self.t_start is not None:
                self.work[i] += self.times[i]
        else:  # nothing left: the period ends
            self.busy[i] = False
            self.counts[i][self.run_count[i]] += 1

    def _done(self, t: int, arg: tuple) -> None:
        """Hand the operation on; look for more work with no latency."""
        i, op = arg
        self.run_count[i] += 1
        if i + 1 < len(self.stages):
            self._arrive(t, i + 1, op)
        else:
            self._complete(t, op)
        self.in_min = min(self.in_min, self.in_ring)
        self.in_max = max(self.in_max, self.in_ring)
        self.loop.schedule(t, self._start, i)

    def _complete(self, t: int, op: int) -> None:
        self.completed += 1
        self.in_ring -= 1
        issued = self.issued_at.pop(op)
        if self.completed == self.warmup:
            self.t_start = t
        elif self.completed > self.warmup:
            self.rtts.append((t - issued) / FS)  # fs -> s
            if op in self.seen:
                self.duplicates += 1
            self.seen.add(op)
        self._issue(t)  # the successor keeps qd inside
        if self.completed >= self.warmup + self.ops:
            self.loop.stop()

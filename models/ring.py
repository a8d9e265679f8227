"""A closed ring of single-server stages with start latencies: the source's abstract pipeline, simulated.

Butterfield (2017, "Abstracted Pipeline Stages") describes every stage of the request/response loop the
same way: an input queue and one queue process that, once busy, takes each operation in turn for a fixed
processing time, and that pays a *start latency* only when an operation reaches it while it is idle with an
empty queue.  This module simulates exactly that ring, event by event, with no TCP at all.  It is the
reference the book uses for Little's law and for the asymptotic bounds; the packet simulator in
``models.sim`` adds segments, ACKs and timers on top of the same picture.

Times are in seconds.

>>> ring = Ring.four_stage(W1=1e-6, SP=16e-6, W2=5e-6, CP=8e-6)
>>> r = ring.run(qd=1, ops=200)
>>> round(r.rtt_mean * 1e6, 3), round(r.iops)
(30.0, 33333)
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Stage", "Ring", "RingResult"]


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
        if not (isinstance(self.time, (int, float)) and math.isfinite(self.time) and self.time > 0):
            raise ValueError(f"stage {self.name}: time must be a positive number of seconds, got {self.time!r}")
        if not (isinstance(self.latency, (int, float)) and math.isfinite(self.latency) and self.latency >= 0):
            raise ValueError(f"stage {self.name}: latency must be a non-negative number of seconds, "
                             f"got {self.latency!r}")


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
    def four_stage(cls, W1: float, SP: float, W2: float, CP: float, SL: float = 0.0, CL: float = 0.0,
                   SN: float = 0.0) -> "Ring":
        """The source's simplified ring: request wire, server thread, response wire, client thread.

        ``SL`` and ``CL`` are the server's and client's wake-up latencies; ``SN`` a start delay on the
        response link (a Nagle-like hold on an idle link).
        """
        return cls([Stage("W1", W1), Stage("SP", SP, SL), Stage("W2", W2, SN), Stage("CP", CP, CL)])

    @classmethod
    def from_times(cls, times: Mapping[str, float], latencies: Mapping[str, float] | None = None) -> "Ring":
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
            Queue depth, at least 1.
        ops : int
            Completions to measure, at least 1.
        warmup : int, optional
            Completions to discard first; default ``4 * qd``.
        """
        if not isinstance(qd, (int,)) or isinstance(qd, bool) or qd < 1:
            raise ValueError(f"qd must be an integer of at least 1, got {qd!r}")
        if not isinstance(ops, int) or ops < 1:
            raise ValueError(f"ops must be a positive integer, got {ops!r}")
        warmup = 4 * qd if warmup is None else warmup
        if not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")

        n = len(self.stages)
        times = [s.time for s in self.stages]
        lats = [s.latency for s in self.stages]
        queues: list[deque] = [deque() for _ in range(n)]
        busy = [False] * n           # processing or waking up
        run_count = [0] * n          # operations handled in the current busy period
        counts: list[Counter] = [Counter() for _ in range(n)]
        work = [0.0] * n             # processing seconds inside the measured interval
        events: list[tuple[float, int, int, int, int]] = []   # (time, seq, kind, stage, op)
        seq = 0
        START, DONE = 0, 1
        issued_at: dict[int, float] = {}
        next_id = 0
        in_ring = 0
        in_min, in_max = qd, qd
        completed = 0
        t_start = None
        rtts: list[float] = []
        seen: set[int] = set()
        duplicates = 0
        target = warmup + ops

        def arrive(t: float, i: int, op: int) -> None:
            nonlocal seq
            queues[i].append(op)
            if not busy[i]:
                busy[i] = True
                run_count[i] = 0
                seq += 1
                heapq.heappush(events, (t + lats[i], seq, START, i, -1))

        for _ in range(qd):
            issued_at[next_id] = 0.0
            arrive(0.0, 0, next_id)
            next_id += 1
            in_ring += 1

        t = 0.0
        while completed < target:
            t, _, kind, i, op = heapq.heappop(events)
            if kind == START:
                if queues[i]:
                    op = queues[i].popleft()
                    seq += 1
                    heapq.heappush(events, (t + times[i], seq, DONE, i, op))
                    if t_start is not None:
                        work[i] += times[i]
                else:  # nothing left: the process goes idle, its busy period ends
                    busy[i] = False
                    counts[i][run_count[i]] += 1
                continue
            # DONE: hand the operation on, then look for more work without a start latency.
            run_count[i] += 1
            if i + 1 < n:
                arrive(t, i + 1, op)
            else:
                completed += 1
                in_ring -= 1
                if completed == warmup:
                    t_start = t
                elif completed > warmup:
                    rtts.append(t - issued_at.pop(op))
                    if op in seen:
                        duplicates += 1
                    seen.add(op)
                else:
                    issued_at.pop(op)
                issued_at[next_id] = t
                arrive(t, 0, next_id)
                next_id += 1
                in_ring += 1
            in_min, in_max = min(in_min, in_ring), max(in_max, in_ring)
            seq += 1
            heapq.heappush(events, (t, seq, START, i, -1))

        t_end = t
        if t_start is None:  # warmup == 0
            t_start = 0.0
        span = t_end - t_start
        return RingResult(
            qd=qd,
            iops=ops / span,
            # fsum is correctly rounded: the same mean in every Python
            # (Pyodide's too; sum() changed its rounding in 3.12).
            rtt_mean=math.fsum(rtts) / len(rtts) if rtts else math.nan,
            rtts=rtts,
            busy_fraction={s.name: min(1.0, work[k] / span) for k, s in enumerate(self.stages)},
            busy_counts={s.name: dict(sorted(counts[k].items())) for k, s in enumerate(self.stages)},
            in_flight_max=in_max,
            in_flight_min=in_min,
            completed=completed,
            duplicates=duplicates,
        )

    def curve(self, qds: Sequence[int], ops: int = 1000) -> list[RingResult]:
        """Run once per queue depth in ``qds``."""
        return [self.run(q, ops=ops) for q in qds]

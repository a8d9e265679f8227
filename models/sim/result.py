"""What a simulation returns: rates, round trips, per-direction and
per-host statistics, and the packet trace.  Standard library only."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = [
    "Result",
    "DirectionStats",
    "HostStats",
    "TraceRecord",
    "format_trace",
    "percentile",
    "DIRECTIONS",
]

#: The two directions, client to server first.
DIRECTIONS = ("C>S", "S>C")


def percentile(values, q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between
    order statistics (NumPy's default method); ``nan`` if empty."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q!r}")
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclasses.dataclass(frozen=True)
class TraceRecord:
    """One packet as tcpdump on the capture host prints it.

    ``time`` seconds since the start; ``direction`` ``"C > S"`` or
    ``"S > C"``; ``flags`` ``"P."`` (PSH+ACK) or ``"."``; payload
    ``[seq, end)`` in relative sequence numbers; ``ack``; ``length``
    payload bytes.
    """

    time: float
    direction: str
    flags: str
    seq: int
    end: int
    ack: int
    length: int

    def __str__(self) -> str:
        head = f"{self.time:.6f} {self.direction}: Flags [{self.flags}], "
        if self.length:
            return head + f"seq {self.seq}:{self.end}, ack {self.ack}, length {self.length}"
        return head + f"ack {self.ack}, length 0"


def format_trace(records) -> str:
    """The trace as tcpdump-like text, one packet per line."""
    return "\n".join(str(r) for r in records)


@dataclasses.dataclass(frozen=True)
class DirectionStats:
    """One direction of the connection (``"C>S"`` or ``"S>C"``).

    Counts of frames, data segments, pure ACKs, ACKs sent by the
    delayed-ACK timer and segments sent by the probe timer; bytes sent
    and acknowledged; the share of the run its wire was busy; how long a
    data segment's first byte waited in the send queue, on average and
    at most (seconds: Butterfield's ``SN`` or ``CN``, with ``SW``).
    """

    frames: int
    data_segments: int
    pure_acks: int
    delayed_acks: int
    probes: int
    bytes_sent: int
    bytes_acked: int
    link_utilization: float
    hold_mean_s: float = float("nan")
    hold_max_s: float = float("nan")


@dataclasses.dataclass(frozen=True)
class HostStats:
    """One host's thread and soft interrupt.

    ``busy_counts``: ``{k: busy periods that handled k messages}``, closed
    periods only; ``open_busy``: messages handled so far in the period
    still running at the end (0 if the thread was idle).  Utilizations
    are shares of the simulated time.
    """

    busy_counts: dict
    open_busy: int
    cpu_utilization: float
    softirq_utilization: float
    wakeups: int
    empty_wakeups: int
    #: seconds of work the machine's one CPU ran while this host's thread held it (its own and
    #: the soft-interrupt work run meanwhile: a scheduler's view of the task's time on the CPU);
    #: None unless ``Link.shared_cpus`` is 1 with ``Link.run_to_block``
    held_cpu_s: float | None = None
    #: times this host's thread gave way to a woken thread on the one shared CPU (at its next
    #: event); None unless ``Link.wake_preempt``
    preempted: int | None = None
    #: segments that reached this host's socket while its thread was inside a ``send()`` and
    #: were processed when the call ended (``Host.own_socket``), and the segments sent to it in
    #: all (a GRO aggregate counts once); the same two counts for the segments with data
    backlogged: int = 0
    received: int = 0
    backlogged_data: int = 0
    received_data: int = 0
    #: seconds its thread spent inside ``send()`` calls that owned the socket (``Host.own_socket``;
    #: 0 without it)
    owned_s: float = 0.0

    def busy_counts_with_open(self) -> dict:
        """``busy_counts`` with the running period counted as closed."""
        out = dict(self.busy_counts)
        if self.open_busy:
            out[self.open_busy] = out.get(self.open_busy, 0) + 1
        return dict(sorted(out.items()))


@dataclasses.dataclass(frozen=True)
class Result:
    """What :func:`models.sim.engine.simulate` returns (seconds, per second).

    ``iops``: completions after the warm-up over the time they took;
    ``rtts_s``: each measured operation's round trip (writing its
    request to finishing its last message); ``directions`` and
    ``hosts``: the statistics of each; ``events``: events run;
    ``skipped_ops``: operations the fast-forward jumped over
    (:mod:`models.sim.fastforward`), whose events were not run, and
    ``cycle_ops`` the operations of the cycle it repeated;
    ``fast_forward_off_reason``: why the fast-forward was off for the
    run (``None``: it was on, whether or not it found a repeat).
    """

    scenario: Any
    iops: float
    ops: int
    rtts_s: tuple
    sim_time_s: float
    directions: dict
    hosts: dict
    events: int
    wall_time_s: float
    completed_total: int
    in_flight: int
    tick_phase_s: float
    skipped_ops: int = 0
    cycle_ops: int = 0
    fast_forward_off_reason: str | None = None
    trace: list = dataclasses.field(default_factory=list)

    # -- per-direction views --------------------------------------------

    def _by_dir(self, name: str) -> dict:
        return {d: getattr(s, name) for d, s in self.directions.items()}

    @property
    def packets_by_direction(self) -> dict:
        return self._by_dir("frames")

    @property
    def packets(self) -> int:
        return sum(s.frames for s in self.directions.values())

    @property
    def data_segments(self) -> dict:
        return self._by_dir("data_segments")

    @property
    def pure_acks(self) -> dict:
        return self._by_dir("pure_acks")

    @property
    def delayed_acks(self) -> dict:
        return self._by_dir("delayed_acks")

    @property
    def probes(self) -> dict:
        return self._by_dir("probes")

    @property
    def bytes_sent(self) -> dict:
        return self._by_dir("bytes_sent")

    @property
    def bytes_acked(self) -> dict:
        return self._by_dir("bytes_acked")

    @property
    def link_utilization(self) -> dict:
        return self._by_dir("link_utilization")

    # -- per-host views -------------------------------------------------

    @property
    def busy_counts(self) -> dict:
        """The server thread's closed busy periods (the source's table)."""
        return self.hosts["server"].busy_counts

    @property
    def client_busy_counts(self) -> dict:
        return self.hosts["client"].busy_counts

    @property
    def cpu_utilization(self) -> dict:
        h = self.hosts
        return {
            "client": h["client"].cpu_utilization,
            "server": h["server"].cpu_utilization,
            "client_softirq": h["client"].softirq_utilization,
            "server_softirq": h["server"].softirq_utilization,
        }

    def busy_fractions(self, which: str = "server") -> dict:
        """Busy counts as fractions of all closed busy periods."""
        h = self.hosts[which].busy_counts
        total = sum(h.values())
        return {k: v / total for k, v in sorted(h.items())} if total else {}

    # -- round trips ----------------------------------------------------

    @property
    def rtt_mean_s(self) -> float:
        """Mean round trip, seconds (``math.fsum``: exactly rounded, the
        same on every Python version)."""
        r = self.rtts_s
        return math.fsum(r) / len(r) if r else float("nan")

    def rtt_percentile_s(self, q: float) -> float:
        """The ``q``-th percentile (0-100) of the round trip, seconds."""
        return percentile(self.rtts_s, q)

    @property
    def events_per_op(self) -> float:
        """Events run per operation simulated (skipped ones excluded)."""
        run = self.completed_total - self.skipped_ops
        return self.events / run if run else float("nan")

    def format_trace(self) -> str:
        return format_trace(self.trace)

    def to_dict(self) -> dict:
        """A JSON-friendly summary (no trace, no per-operation lists)."""
        return {
            "iops": self.iops,
            "rtt_mean_s": self.rtt_mean_s,
            "rtt_p50_s": self.rtt_percentile_s(50),
            "rtt_p90_s": self.rtt_percentile_s(90),
            "rtt_p99_s": self.rtt_percentile_s(99),
            "ops": self.ops,
            "completed_total": self.completed_total,
            "sim_time_s": self.sim_time_s,
            "packets": self.packets,
            "directions": {d: dataclasses.asdict(s) for d, s in self.directions.items()},
            "hosts": {
                h: {
                    **dataclasses.asdict(s),
                    "busy_counts": {str(k): v for k, v in s.busy_counts.items()},
                }
                for h, s in self.hosts.items()
            },
            "events": self.events,
            "skipped_ops": self.skipped_ops,
            "cycle_ops": self.cycle_ops,
            "fast_forward_off_reason": self.fast_forward_off_reason,
            "wall_time_s": self.wall_time_s,
            "tick_phase_s": self.tick_phase_s,
        }

"""The result of one simulation: throughput, latency, utilizations, busy counts and the packet trace."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Result", "TraceRecord", "format_trace"]

_NAMES = ("C", "S")


@dataclass(frozen=True)
class TraceRecord:
    """One line of the packet trace, as tcpdump on the capture host would print it.

    ``time`` is seconds since the start; ``direction`` is ``"C > S"`` or ``"S > C"``; ``flags`` is ``"P."``
    (PSH + ACK) or ``"."`` (ACK); ``seq``/``end`` are relative sequence numbers (payload ``[seq, end)``);
    ``ack`` the cumulative acknowledgement; ``length`` the payload in bytes.
    """

    time: float
    direction: str
    flags: str
    seq: int
    end: int
    ack: int
    length: int

    def __str__(self) -> str:
        if self.length:
            return (f"{self.time:.6f} {self.direction}: Flags [{self.flags}], seq {self.seq}:{self.end}, "
                    f"ack {self.ack}, length {self.length}")
        return f"{self.time:.6f} {self.direction}: Flags [{self.flags}], ack {self.ack}, length 0"


def format_trace(records) -> str:
    """The trace as tcpdump-like text, one packet per line."""
    return "\n".join(str(r) for r in records)


@dataclass(frozen=True)
class Result:
    """What :func:`models.sim.simulate` returns.  Times in seconds, rates per second.

    Attributes
    ----------
    scenario : Scenario
        The parameters simulated.
    iops : float
        Measured operations per second: completions after the warm-up divided by the time they took.
    ops : int
        Operations measured (after the warm-up).
    rtts_s : numpy.ndarray
        Round-trip time of each measured operation: from writing its request to finishing processing its
        response (Butterfield's RTT).
    sim_time_s : float
        Simulated time at the end.
    packets : int
        Frames sent in both directions (data segments and pure ACKs).
    packets_by_direction, data_segments, pure_acks, delayed_acks, probes : dict
        Counts per direction (``"C>S"``, ``"S>C"``).
    link_utilization : dict
        Fraction of the run each direction's wire was serializing frames.
    cpu_utilization : dict
        Fraction of the run each thread (``"server"``, ``"client"``) spent processing, and each host's
        soft interrupt (``"server_softirq"``, ``"client_softirq"``: receive plus transmit CPU).
    busy_counts, client_busy_counts : dict
        Histogram ``{k: number of busy periods that handled k operations}`` of the server thread (the
        source's table) and of the client thread.
    events : int
        Events the loop ran.
    wall_time_s : float
        Seconds of real time the run took.
    trace : list of TraceRecord
        The packet trace (empty unless ``scenario.trace``).
    """

    scenario: object
    iops: float
    ops: int
    rtts_s: np.ndarray
    sim_time_s: float
    packets: int
    packets_by_direction: dict
    data_segments: dict
    pure_acks: dict
    delayed_acks: dict
    probes: dict
    link_utilization: dict
    cpu_utilization: dict
    busy_counts: dict
    client_busy_counts: dict
    events: int
    wall_time_s: float
    bytes_sent: dict
    bytes_acked: dict
    completed_total: int
    in_flight: int
    trace: list = field(default_factory=list)

    @property
    def rtt_mean_s(self) -> float:
        """Mean round-trip time, seconds."""
        return float(np.mean(self.rtts_s)) if len(self.rtts_s) else float("nan")

    def rtt_percentile_s(self, q: float) -> float:
        """The ``q``-th percentile (0-100) of the round-trip time, seconds."""
        return float(np.percentile(self.rtts_s, q)) if len(self.rtts_s) else float("nan")

    def busy_fractions(self, which: str = "server") -> dict:
        """Busy counts as fractions of all busy periods (the source's table shows percentages)."""
        h = self.busy_counts if which == "server" else self.client_busy_counts
        total = sum(h.values())
        return {k: v / total for k, v in sorted(h.items())} if total else {}

    def format_trace(self) -> str:
        """The packet trace as tcpdump-like text."""
        return format_trace(self.trace)

    def to_dict(self) -> dict:
        """A JSON-friendly summary (no trace, no per-operation arrays)."""
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
            "packets_by_direction": self.packets_by_direction,
            "data_segments": self.data_segments,
            "pure_acks": self.pure_acks,
            "delayed_acks": self.delayed_acks,
            "probes": self.probes,
            "link_utilization": self.link_utilization,
            "cpu_utilization": self.cpu_utilization,
            "busy_counts": {str(k): v for k, v in sorted(self.busy_counts.items())},
            "client_busy_counts": {str(k): v for k, v in sorted(self.client_busy_counts.items())},
            "events": self.events,
            "wall_time_s": self.wall_time_s,
            "kernel": self.scenario.kernel,
            "qd": self.scenario.qd,
        }

"""Cross-check of the delay model with the packet simulator (:mod:`models.sim`), reads only.

The simulator has no hook that delays only the server's data packets; it has a one-way propagation
delay applied to both directions (the ``link.latency_s`` of a ``models.sim.Scenario``). At queue
depth 1 a read's round trip is request + server + response, so delaying every response by ``d`` and
splitting the same ``d`` as ``d/2`` each way lengthen it equally; the client's pure ACKs also gain
``d/2``, which matters only when a window binds, and windows never bind in the simulator. So
:func:`simulated_read_rate` runs the simulator with ``latency_s = d/2`` and a server processing time
chosen so that the undelayed round trip equals ``rtt0_s``. A write's exchange (command, R2T, data,
response) can be replayed the same way with :func:`models.presets.iscsi_command`; chapter 12 checks
there that each round trip gains the delay once.
"""

from __future__ import annotations

from ..checks import non_negative, positive, whole

__all__ = ["simulated_read_rate"]


def simulated_read_rate(
    delay_s: float, rtt0_s: float, iosize_bytes: int = 65536, ops: int = 60, seed: int = 0
) -> float:
    """Bytes per second of a QD = 1 reader of ``iosize_bytes`` when every round trip gains ``delay_s``.

    ``ValueError`` if ``rtt0_s`` is shorter than the simulator's own undelayed round trip (wire and host
    latencies with zero server processing).
    """
    from models.sim import (
        Scenario,
        simulate,
    )  # the simulator is optional for the rest of the package

    d = non_negative("delay_s", delay_s)
    target = positive("rtt0_s", rtt0_s)
    size = whole("iosize_bytes", iosize_bytes, minimum=1)
    n = whole("ops", ops, minimum=10)
    sc = Scenario(
        workload={"response_writes": (48, size)},
        client={"nodelay": True},
        server={"nodelay": True, "proc_s": 0.0},
        run={"ops": n, "seed": whole("seed", seed)},
    )
    base = simulate(sc).rtt_mean_s
    if target < base:
        raise ValueError(
            f"rtt0_s={rtt0_s!r} is below the simulator's undelayed round trip {base!r} s"
        )
    r = simulate(
        sc.replace(server={"proc_s": target - base}, link={"latency_s": d / 2})
    )  # half each way
    return r.iops * size  # operations per second * bytes per operation

"""The plant the controller acts on: a shared disk group, a rate-limited reader, and throttled writers.

Built from the book's identities, following the set-up of Bjørgeengen (2010), sections 5.5-5.9:

* **Writers** are ``n`` synchronous 64 KiB writers, each with one write in flight (QD = 1).  A writer's
  cycle is: time outside the disk group ``z0`` (network, hosts), plus ``k*d`` for the delayed messages
  each write waits for (:mod:`models.control.throttle`), plus its residence time at the disk group.
  Writers therefore form a *closed* ring, and the ring identity ``X = n / (Z + R)`` holds for them.
* **The reader** issues ``lam`` random 8 KiB reads per second whatever happens (an *open* stream: the
  thesis's smalljob is rate-limited to 256 KiB/s).
* **The disk group** is ``stations`` identical queues (1 by default: one shared queue); every request
  picks one at random.  Mean values come from mean-value analysis (MVA) of this mixed network
  (Lazowska et al. 1984, chapter 7): the reads' utilisation ``U_r = lam*S_r/stations`` inflates the
  writers' demand to ``D_w/(1 - U_r)``, exact MVA over ``n`` gives the writers' throughput and queue,
  and a read's mean response is ``S_r (1 + Q_w) / (1 - U_r)`` -- it waits behind the writes queued at its
  station.  The read response rises with the aggregate write rate, which is what the controller exploits.

The queue settles within a few write service times (milliseconds), far below the 100 ms sample interval,
so each sample sees the steady state for the delay in force (a quasi-static plant).  What a sample
*measures* is random: the number of reads completing in the interval is Poisson, each read's wait is
drawn from an exponential distribution with the model's mean, and an interval with no completed read
reports 0 (as ``/proc/diskstats`` arithmetic does in the thesis's scripts).  Randomness comes only from a
stream seeded explicitly: a :class:`models.control.noise.NoiseStream`
(``numpy.random.default_rng``'s draws with the standard library) or a
``numpy.random.Generator``.  SciPy is imported only to calibrate the plant
or to solve for a delay.

Units: seconds, bytes, bytes per second, requests per second.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..checks import non_negative, positive, whole
from .noise import NoiseStream

__all__ = ["PlantState", "SharedDiskPlant", "mva_closed", "calibrate"]


def mva_closed(
    n: int, think_s: float, demand_s: float, stations: int = 1
) -> tuple[float, float, float]:
    """Exact MVA for ``n`` customers, think time ``think_s``, ``stations`` identical queues of ``demand_s`` each.

    Returns ``(X, Q, R)``: throughput (1/s), mean queue length at *one* station, and a customer's total
    residence time over all stations (s).  With ``n = 0`` everything is 0.
    """
    nn = whole("n", n, minimum=0)
    z = non_negative("think_s", think_s)
    dem = positive("demand_s", demand_s)
    c = whole("stations", stations, minimum=1)
    x = q = r = 0.0
    for m in range(1, nn + 1):
        r_station = dem * (1 + q)  # arrival theorem: an arriving customer sees the queue of m - 1
        r = c * r_station
        x = m / (z + r)  # ring identity for m customers
        q = x * r_station  # Little's law at one station
    return x, q, r


@dataclass(frozen=True)
class PlantState:
    """Steady state of the plant for a number of writers and a delay (all means)."""

    writers: int
    delay_s: float
    writes_per_s: float
    write_rate_Bps: float
    read_wait_s: float
    write_queue: float
    utilization: float


@dataclass(frozen=True)
class SharedDiskPlant:
    """Disk group shared by throttled writers and a fixed-rate reader.

    Parameters
    ----------
    write_service_s : float
        Disk time per write, summed over the group (s), > 0.
    read_service_s : float
        Disk time per read at its station (s), > 0.
    writer_base_s : float
        A writer's time per write outside the disk group with no added delay (s), >= 0.
    read_rate_per_s : float
        Reads per second of the rate-limited reader, >= 0 (256 KiB/s of 8 KiB reads: 32).
    write_bytes : int
        Bytes per write (65536).
    rounds_per_write : float
        Delayed messages each write waits for, > 0 (chapter 10 counts 2 from the iSCSI exchange: the R2T
        and the response).
    stations : int
        Independent queues in the group, >= 1.
    """

    write_service_s: float
    read_service_s: float
    writer_base_s: float
    read_rate_per_s: float = 32.0
    write_bytes: int = 65536
    rounds_per_write: float = 2.0
    stations: int = 1

    def __post_init__(self) -> None:
        positive("write_service_s", self.write_service_s)
        positive("read_service_s", self.read_service_s)
        non_negative("writer_base_s", self.writer_base_s)
        non_negative("read_rate_per_s", self.read_rate_per_s)
        whole("write_bytes", self.write_bytes, minimum=1)
        positive("rounds_per_write", self.rounds_per_write)
        whole("stations", self.stations, minimum=1)
        if self.read_utilization >= 1:
            raise ValueError(
                f"read_rate_per_s * read_service_s / stations must be below 1 (the reads alone "
                f"saturate the disks), got {self.read_utilization!r}"
            )

    @property
    def read_utilization(self) -> float:
        """Share of each station's time the reads take: ``lam * S_r / stations`` (utilisation law)."""
        return self.read_rate_per_s * self.read_service_s / self.stations

    def steady_state(self, writers: int, delay_s: float = 0.0) -> PlantState:
        """Mean write rate and read wait with ``writers`` active and ``delay_s`` added per delayed message."""
        n = whole("writers", writers, minimum=0)
        dly = non_negative("delay_s", delay_s)
        ur = self.read_utilization
        demand = (
            self.write_service_s / self.stations / (1 - ur)
        )  # per-station demand, inflated by the reads
        think = self.writer_base_s + self.rounds_per_write * dly
        x, q, _r = mva_closed(n, think, demand, self.stations) if n else (0.0, 0.0, 0.0)
        read_wait = self.read_service_s * (1 + q) / (1 - ur)
        util = ur + x * self.write_service_s / self.stations
        return PlantState(n, dly, x, x * self.write_bytes, read_wait, q, util)

    def sample(
        self, writers: int, delay_s: float, interval_s: float, rng
    ) -> tuple[float, int, PlantState]:
        """One measurement interval: ``(average read wait in s or 0 if
        none completed, reads, state)``.

        ``rng`` is a :class:`~models.control.noise.NoiseStream` or a
        ``numpy.random.Generator``; seeded alike, both give the same
        sample.
        """
        dt = positive("interval_s", interval_s)
        numpy = sys.modules.get("numpy")  # a NumPy generator: NumPy loaded
        is_numpy = numpy is not None and isinstance(rng, numpy.random.Generator)
        if not (is_numpy or isinstance(rng, NoiseStream)):
            raise ValueError(
                "rng must be a models.control.noise.NoiseStream "
                f"or a numpy.random.Generator (seeded), got "
                f"{rng!r}"
            )
        st = self.steady_state(writers, delay_s)
        lam = self.read_rate_per_s * dt  # reads expected in the interval
        if is_numpy:
            n_reads = int(rng.poisson(lam))
            if n_reads == 0:
                return 0.0, 0, st
            mean = float(rng.exponential(st.read_wait_s, n_reads).mean())
            return mean, n_reads, st
        n_reads = rng.poisson(lam)
        if n_reads == 0:
            return 0.0, 0, st
        return rng.exponential_mean(st.read_wait_s, n_reads), n_reads, st

    def delay_for_read_wait(
        self, writers: int, read_wait_s: float, max_delay_s: float = 1.0
    ) -> float:
        """Added delay (s) at which the mean read wait equals ``read_wait_s`` (0 if already below).

        ``ValueError`` if even ``max_delay_s`` cannot bring the wait down to the target.
        """
        target = positive("read_wait_s", read_wait_s)
        top = positive("max_delay_s", max_delay_s)
        if self.steady_state(writers, 0.0).read_wait_s <= target:
            return 0.0
        if self.steady_state(writers, top).read_wait_s > target:
            raise ValueError(
                f"read_wait_s={read_wait_s!r} is out of reach with delays up to {max_delay_s!r} s"
            )
        from scipy.optimize import brentq

        return float(
            brentq(
                lambda z: self.steady_state(writers, z).read_wait_s - target, 0.0, top, xtol=1e-9
            )
        )


def calibrate(
    unregulated_write_Bps: float,
    unregulated_read_wait_s: float,
    single_writer_Bps: float,
    writers: int = 12,
    read_rate_per_s: float = 32.0,
    write_bytes: int = 65536,
    rounds_per_write: float = 2.0,
    stations: int = 1,
) -> SharedDiskPlant:
    """Fit the three disk/host times to three measurements.

    * ``writers`` unthrottled writers reach ``unregulated_write_Bps`` in aggregate, while
    * the reader's mean wait is ``unregulated_read_wait_s``, and
    * one writer alone (no reader, no delay) writes at ``single_writer_Bps``.

    ``ValueError`` if no positive solution exists.
    """
    xw = positive("unregulated_write_Bps", unregulated_write_Bps)
    rw = positive("unregulated_read_wait_s", unregulated_read_wait_s)
    x1 = positive("single_writer_Bps", single_writer_Bps)
    n = whole("writers", writers, minimum=1)
    size = whole("write_bytes", write_bytes, minimum=1)
    cycle1 = size / x1  # one writer's cycle (s): outside time + its own disk time
    if xw <= x1:
        raise ValueError(
            f"unregulated_write_Bps must exceed single_writer_Bps, got {xw!r} <= {x1!r}"
        )

    def build(p):
        sw, sr = p
        return SharedDiskPlant(
            float(sw),
            float(sr),
            float(cycle1 - sw),
            read_rate_per_s,
            size,
            rounds_per_write,
            stations,
        )

    def residuals(p):
        sw, sr = p
        if not (0 < sw < cycle1 and sr > 0 and read_rate_per_s * sr / stations < 1):
            return [1e3, 1e3]
        st = build(p).steady_state(n, 0.0)
        return [st.write_rate_Bps / xw - 1, st.read_wait_s / rw - 1]

    from scipy.optimize import fsolve

    guess = [size / xw * 0.9, rw / (n + 1)]
    sol, info, ier, msg = fsolve(residuals, guess, full_output=True, xtol=1e-12)
    if ier != 1 or max(abs(v) for v in residuals(sol)) > 1e-8:
        raise ValueError(f"no plant matches these measurements ({msg.strip()})")
    return build(sol)

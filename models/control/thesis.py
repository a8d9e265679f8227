"""The Oslo thesis's (2010) experiment in the book's terms: its numbers, read from ``data/``, and the plant.

Everything here is read from the bundled datasets (``thesis2010_*``) through :func:`models.data.load`;
nothing is typed in except unit conversions.  The thesis writes "MB" for 2^20 bytes (its 200 MB job is
fio's ``size=200m``), so rates in MB/s are converted with :data:`MB`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from models import data

from .plant import SharedDiskPlant, calibrate
from .throttle import rounds_from_rates, rtt0_from_rate

__all__ = ["MB", "EndPoints", "end_points", "fio_job", "controller_parameters", "closed_loop_facts", "thesis_plant",
           "fitted_rounds", "rtt0"]

#: The thesis's megabyte (bytes): fio's 'm' suffix.
MB = 2**20


@dataclass(frozen=True)
class EndPoints:
    """Rates (bytes/s) with no delay and with the largest delay of the sweep, for one direction."""

    direction: str
    rate0_Bps: float
    delay_s: float
    rate_Bps: float


def end_points(direction: str) -> EndPoints:
    """The stated end points of the delay sweep (``thesis2010_delay_rate``) for ``"read"`` or ``"write"``."""
    if direction not in ("read", "write"):
        raise ValueError(f"direction must be 'read' or 'write', got {direction!r}")
    df = data.load("thesis2010_delay_rate")
    rows = df[df["direction"] == direction].sort_values("delay_ms")
    lo, hi = rows.iloc[0], rows.iloc[-1]
    return EndPoints(direction, float(lo["rate_MBps"]) * MB, float(hi["delay_ms"]) * 1e-3,  # ms -> s
                     float(hi["rate_MBps"]) * MB)


def fio_job(name: str) -> dict:
    """One row of ``thesis2010_fio_jobs`` as a dict."""
    df = data.load("thesis2010_fio_jobs").set_index("job")
    if name not in df.index:
        raise ValueError(f"name must be one of {sorted(df.index)}, got {name!r}")
    return df.loc[name].to_dict()


def controller_parameters(config: str = "reg_pl") -> dict:
    """One row of ``thesis2010_pid_parameters`` as a dict (missing values as NaN)."""
    df = data.load("thesis2010_pid_parameters").set_index("config")
    if config not in df.index:
        raise ValueError(f"config must be one of {sorted(df.index)}, got {config!r}")
    return df.loc[config].to_dict()


def closed_loop_facts():
    """``thesis2010_closed_loop`` indexed by case."""
    return data.load("thesis2010_closed_loop").set_index("case")


@lru_cache(maxsize=None)
def thesis_plant(rounds_per_write: float = 2.0, stations: int = 1) -> SharedDiskPlant:
    """The plant calibrated to the thesis: 12 unthrottled writers at 39 MB/s while the reader waits 45 ms
    (20 ms set point + 25 ms improvement), one writer alone at 15 MB/s, and the reader's 256 KiB/s of
    8 KiB reads."""
    facts = closed_loop_facts()
    unreg = facts.loc["unregulated"]
    pid20 = facts.loc["pid_20ms"]
    wait_unreg_s = (float(pid20["setpoint_ms"]) + float(pid20["read_wait_reduction_ms"])) * 1e-3  # ms -> s
    reader = fio_job("smalljob")
    read_rate = float(reader["rate_limit_Bps"]) / float(reader["blocksize_bytes"])  # bytes/s / bytes = reads/s
    writer = fio_job("interference")
    single = end_points("write").rate0_Bps
    return calibrate(float(unreg["aggregate_write_MBps"]) * MB, wait_unreg_s, single,
                     writers=int(unreg["write_threads"]), read_rate_per_s=read_rate,
                     write_bytes=int(writer["blocksize_bytes"]), rounds_per_write=rounds_per_write,
                     stations=stations)


def fitted_rounds(direction: str) -> float:
    """Delayed messages per operation implied by the end points (QD = 1, the fio job's block size)."""
    ep = end_points(direction)
    size = fio_job(f"delay_{direction}")["blocksize_bytes"]
    return rounds_from_rates(ep.rate0_Bps, ep.rate_Bps, ep.delay_s, size)


def rtt0(direction: str) -> float:
    """Undelayed round trip (s) of the delay sweep's job: ``IOSIZE / rate0``."""
    ep = end_points(direction)
    return rtt0_from_rate(ep.rate0_Bps, fio_job(f"delay_{direction}")["blocksize_bytes"])

"""The ``tbf`` watchdog's lateness as measured, beside the wake-up that stood in for it.

The dataset (:data:`TABLE`, ``tools/tbf_timer_sweep.py``, :mod:`models.measure.tbftimer`) holds,
for bursts of full frames through a two-frame ``tbf`` bucket on a veth pair at rates from 20 to
300 Mb/s, every frame that waited for tokens: how long it waited (``wait_us``) and how long after
its tokens sufficed it left (``late_us``), with the sending CPU asleep (``idle``) or kept busy by
a lowest-priority process (``spin``).

:func:`measured_late_s` is the value the simulator takes (``Host.tbf_late_s``): the median lateness
at the fastest rate measured, both CPU states pooled, which is the condition nearest to a 1 Gb/s
link's waits of a few microseconds (faster rates cannot be measured this way: the sender cannot
fill the queue faster than the qdisc drains it).  :func:`proxy_late_s` is what the simulator
charged before, for the same waits, from a host profile's measured thread wake-ups
(:class:`models.sim.rules.qdisc.WatchdogWake`).

>>> round(measured_late_s() * 1e6)  # seconds -> microseconds
17
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from models.measure import tbftimer

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "findings",
    "TABLE",
    "BURST_KEY",
    "EARLY_US",
    "in_step",
    "lateness_table",
    "measured_late_s",
    "proxy_late_s",
]

#: The measured lateness (``python tools/tbf_timer_sweep.py``).
TABLE = "kernel6_tbf_timer"
#: The columns that name one burst.
BURST_KEY = ["sweep", "rate_bits_per_s", "cpu_state", "repeat", "burst"]
#: How early a frame may seem to leave before the replay is called out of step, microseconds
#: (the measurement's own rule, which ``calibrate`` applies too).
EARLY_US = tbftimer.EARLY_US


def _load(df: pd.DataFrame | None) -> pd.DataFrame:
    from models import data

    return data.load(TABLE) if df is None else df


def in_step(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of the bursts whose replay stayed in step with the qdisc (no frame of the burst
    left more than :data:`EARLY_US` before its tokens).  A burst loses step when a frame's
    receive time lags its dequeue (the sending CPU interrupted between the two), and then every
    later frame of the burst seems early or late by the same amount."""
    t = _load(df)
    ok = t.groupby(BURST_KEY)["late_us"].transform("min") >= -EARLY_US
    return t[ok]


def lateness_table(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per rate and CPU state, over the bursts :func:`in_step` keeps: the bursts left out, the
    frames that waited, their median wait, and the lateness's 10th, 50th and 90th percentiles
    (microseconds)."""
    every = _load(df)
    t = in_step(every)
    g = t.groupby(["rate_bits_per_s", "cpu_state"])
    out = g.agg(
        frames=("late_us", "size"),
        wait_us=("wait_us", "median"),
        late_p10_us=("late_us", lambda x: x.quantile(0.1)),
        late_us=("late_us", "median"),
        late_p90_us=("late_us", lambda x: x.quantile(0.9)),
    )
    cfg = ["rate_bits_per_s", "cpu_state"]
    bursts = every[BURST_KEY].drop_duplicates().groupby(cfg).size()
    kept = t[BURST_KEY].drop_duplicates().groupby(cfg).size()
    out.insert(0, "bursts_out", (bursts - kept.reindex(bursts.index, fill_value=0)).astype(int))
    return out.reset_index().sort_values(["rate_bits_per_s", "cpu_state"], ascending=[False, True])


@functools.cache
def _bundled_late_s() -> float:
    return measured_late_s(_load(None))


def measured_late_s(df: pd.DataFrame | None = None) -> float:
    """The watchdog's lateness the simulator takes, seconds: the median ``late_us`` at the
    fastest rate of ``df`` (default the bundled table), both CPU states, over the bursts
    :func:`in_step` keeps."""
    if df is None:
        return _bundled_late_s()
    t = in_step(df)
    fastest = t["rate_bits_per_s"].max()
    return float(t.loc[t["rate_bits_per_s"] == fastest, "late_us"].median()) * 1e-6  # us -> s


def proxy_late_s(profile: Any, wait_s: float) -> float:
    """What :class:`~models.sim.rules.qdisc.WatchdogWake` charges after a wait of ``wait_s``
    seconds when the host ``profile`` (a :class:`~models.sim.hostprofile.HostProfile`) has no
    measured lateness: the server side's fast wake-up after a wait of at most its polling window,
    else its slow one, seconds."""
    from models.sim.events import FS
    from models.sim.events import seconds_to_fs as fs
    from models.sim.rules.qdisc import WatchdogWake

    side = profile.side("server")
    slow = side["wake_s"]
    rule = WatchdogWake(
        fs(side.get("wake_fast_s", slow)), fs(side.get("wake_fast_idle_s", 0.0)), fs(slow)
    )
    return rule.delay(fs(wait_s)) / FS  # fs -> s


def findings(profile: Any, df: pd.DataFrame | None = None) -> dict[str, float]:
    """What chapter 9 states about the measurement (``df``, default the bundled table), the
    proxy taken from the host ``profile``: ``late`` (:func:`measured_late_s`, us), ``proxy`` (what
    the wake-ups charge after the fastest rate's median wait, us), ``fast_wait`` and
    ``slow_wait`` (the median idle wait at the fastest and the slowest rate, us), ``fast_idle``,
    ``fast_spin``, ``slow_idle``, ``slow_spin`` (the median lateness there, us), ``spin_spread``
    (the largest distance of a spinning median from ``late``, us), ``out`` and ``bursts`` (bursts
    left out, and all)."""
    t = _load(df)
    table = lateness_table(t).set_index(["rate_bits_per_s", "cpu_state"])
    fast, slow = table.index.levels[0].max(), table.index.levels[0].min()
    late = measured_late_s(df) * 1e6  # s -> us
    wait_s = table.loc[(fast, "idle"), "wait_us"] * 1e-6  # us -> s
    spin = table.xs("spin", level="cpu_state")["late_us"]
    return {
        "late": late,
        "proxy": proxy_late_s(profile, wait_s) * 1e6,  # s -> us
        "fast_wait": float(table.loc[(fast, "idle"), "wait_us"]),
        "slow_wait": float(table.loc[(slow, "idle"), "wait_us"]),
        "fast_idle": float(table.loc[(fast, "idle"), "late_us"]),
        "fast_spin": float(table.loc[(fast, "spin"), "late_us"]),
        "slow_idle": float(table.loc[(slow, "idle"), "late_us"]),
        "slow_spin": float(table.loc[(slow, "spin"), "late_us"]),
        "spin_spread": float((spin - late).abs().max()),
        "out": int(table["bursts_out"].sum()),
        "bursts": int(t[BURST_KEY].drop_duplicates().shape[0]),
    }

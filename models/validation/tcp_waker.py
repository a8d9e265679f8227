"""What a TCP wake-up costs the thread that wakes it, timed at every idle gap, against the two
readings host profiles took before it was timed.

``Host.waker_curve_s`` is what waking a thread asleep on the other end adds to the ``send()`` that
wakes it, against how long the sleeper's CPU had idled.  Until the benchmark timed it, profiles
read it off other measurements:

* **pipe** (:func:`models.measure.wakeups.waker_curve`, every profile before 2026-12-01): the
  waker's pipe ``write()`` after each gap less its value after the shortest gap;
* **moved** (:func:`models.measure.wakeups.socket_waker_curve` without the TCP timing, the fifth
  machine's ``kernel6_machine5_waker.json``): the pipe's curve moved, at every gap, to read the
  ping-pong's waker cost (the requester's ``send()`` CPU with its responder asleep in ``poll()``
  less spinning) at the ping-pong's idle gap.

``python -m models.measure costs`` now times the waker's ``send()`` on a loopback TCP connection
after each gap with the peer asleep in ``poll()`` and, interleaved, with the peer spinning on a
non-blocking peek, which wakes nobody; the difference is the **measured** curve
(:func:`models.measure.wakeups.tcp_waker_curve`), which ``calibrate`` now writes.  The dataset
(:data:`DATASET`, ``tools/tcp_waker.py``) holds five such runs on the sixth machine, each with the
same run's pipe and ping-pong readings, so the two older readings are compared with the measured
one run by run, on the same machine (test rows; nothing is fitted).  A reading is right at a gap
when the median over the runs of its value is within :data:`TOLERANCE` of the median of the
measured cost (a quarter, the book's tolerance for a host cost: the field sweep's rates are
compared within a quarter too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = [
    "DATASET",
    "TOLERANCE",
    "SHORT_MAX_US",
    "READINGS",
    "load",
    "machine",
    "run_wake",
    "curves",
    "table",
    "findings",
    "numbers",
]

DATASET = "kernel6_machine6_tcp_waker"
#: A reading is right at a gap within this share of the measured cost (see the module).
TOLERANCE = 0.25
#: Gaps up to this many microseconds are short: the waker spun through them (``tcp_by_gap``).
SHORT_MAX_US = 1280.0
#: The readings compared with the measured curve, as :func:`curves` names them.
READINGS = ("moved", "pipe")


def load(dataset: str = DATASET) -> pd.DataFrame:
    """The dataset's rows (:mod:`models.data`)."""
    from models import data

    return data.load(dataset)


def machine(dataset: str = DATASET) -> dict[str, Any]:
    """The measured machine as the first run's settings record it: ``kernel`` (its release),
    ``cpuidle_driver`` and ``guest_poll_us`` (how long an idle virtual CPU polls before it halts,
    ``guest_halt_poll_ns``, in microseconds; NaN where not recorded)."""
    from models import data

    first = data.describe(dataset)["measurement"]["runs"]["0"]
    idle = first.get("idle", {})
    poll_ns = idle.get("guest_halt_poll", {}).get("guest_halt_poll_ns")
    return {
        "kernel": first["kernel"]["release"],
        "cpuidle_driver": idle.get("cpuidle_driver", ""),
        "guest_poll_us": float(poll_ns) / 1e3 if poll_ns is not None else float("nan"),  # ns->us
    }


def run_wake(rows: pd.DataFrame) -> dict[str, Any]:
    """One run's rows as the ``wake`` section of a costs run (the keys
    :mod:`models.measure.wakeups` reads), so the readings are computed as ``calibrate`` computes
    them."""

    def tcp(part: pd.DataFrame) -> list:
        return [
            {
                "gap_us": float(r.gap_us),
                "median_us": float(r.lat_median_us),
                "waker_median_us": float(r.waker_median_us),
                "spin_peer_waker_median_us": float(r.spin_peer_waker_median_us),
            }
            for r in part.itertuples()
        ]

    def pipe(part: pd.DataFrame) -> list:
        out = []
        for r in part.itertuples():
            g = {"gap_us": float(r.gap_us), "waker_median_us": float(r.pipe_waker_median_us)}
            if pd.notna(r.pipe_asleep_waker_median_us):
                g["asleep_waker_median_us"] = float(r.pipe_asleep_waker_median_us)
            out.append(g)
        return out

    rows = rows.sort_values("gap_us")
    short, long = rows[rows.waker_idle.eq("spin")], rows[rows.waker_idle.eq("sleep")]
    first = rows.iloc[0]
    return {
        "tcp_by_gap": tcp(short),
        "tcp_by_long_gap": tcp(long),
        "cross_by_gap": pipe(short),
        "cross_by_long_gap": pipe(long),
        "pingpong": {
            "waker_us": float(first.pingpong_waker_us),
            "idle_us": float(first.pingpong_idle_us),
        },
    }


def _older(wake: Mapping[str, Any]) -> dict[str, Any]:
    """``wake`` without the TCP waker's timings: what a benchmark from before them held."""
    return {k: v for k, v in wake.items() if k not in ("tcp_by_gap", "tcp_by_long_gap")}


def curves(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per run and gap (``gap_us``): the ``measured`` cost and the ``moved`` and ``pipe``
    readings (microseconds), each as the simulator would be given it."""
    from models.measure import wakeups as W

    df = load() if df is None else df
    out = []
    for run, rows in df.groupby("run"):
        wake = run_wake(rows)
        measured = W.tcp_waker_curve(wake)
        moved = W.socket_waker_curve(_older(wake))
        pipe = W.waker_curve(_older(wake))
        if not (len(measured) == len(moved) == len(pipe)):
            raise ValueError(f"run {run}: the readings have different gaps")
        for (i, m), (_, v), (_, p) in zip(measured, moved, pipe):
            out.append(
                {
                    "run": int(run),
                    "gap_us": round(i * 1e6, 1),  # s -> us
                    "measured": m * 1e6,  # s -> us
                    "moved": v * 1e6,
                    "pipe": p * 1e6,
                }
            )
    return pd.DataFrame(out)


def table(c: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per gap, the medians over the runs of :func:`curves` (``measured`` with its runs' lowest
    and highest), each reading's ratio to the measured cost and whether it is within
    :data:`TOLERANCE` (``<reading>_ratio``, ``<reading>_right``); every row a test."""
    c = curves() if c is None else c
    g = c.groupby("gap_us")
    t = g[["measured", *READINGS]].median()
    t.insert(1, "runs_lo", g.measured.min())
    t.insert(2, "runs_hi", g.measured.max())
    for r in READINGS:
        t[f"{r}_ratio"] = t[r] / t.measured
        t[f"{r}_right"] = (t[f"{r}_ratio"] - 1).abs() <= TOLERANCE
    t["role"] = "test"
    return t


def _short(t: pd.DataFrame) -> pd.Series:
    return pd.Series(t.index <= SHORT_MAX_US, index=t.index)


def dearer_after_long_idle(t: pd.DataFrame) -> bool:
    """Whether the measured cost after every long gap (2.5-40 ms) is at least twice the dearest
    after the short gaps up to 160 us (a CPU that halted against one still polling)."""
    polling = t.index <= 160.0
    return bool(t.measured[~_short(t)].min() >= 2 * t.measured[polling].max())


def moved_high_short_right_long(t: pd.DataFrame) -> bool:
    """Whether the moved reading is too high by more than the tolerance after the short gaps up to
    320 us and right after every gap from 1.28 ms on: the ping-pong's CPU-clock cost stands for
    more than the wake-up adds to the send()'s time when the CPU was still polling."""
    up_to_320 = t.index <= 320.0
    return bool(
        (t.moved_ratio[up_to_320] > 1 + TOLERANCE).all()
        and t.moved_right[t.index >= SHORT_MAX_US].all()
    )


def pipe_misses_short(t: pd.DataFrame) -> bool:
    """Whether the pipe reading gives less than half the measured cost after every short gap (it
    takes the cost after the shortest gap for the call itself, and that is most of it) and is
    wrong at more gaps than the moved reading."""
    return bool(
        (t.pipe_ratio[_short(t)] < 0.5).all() and (~t.pipe_right).sum() > (~t.moved_right).sum()
    )


def findings(t: pd.DataFrame | None = None) -> dict[str, bool]:
    """The claims chapter 9b makes of :func:`table`, each ``True`` when it holds."""
    t = table() if t is None else t
    return {
        "a wake-up after a long idle costs its waker at least twice a short one's": (
            dearer_after_long_idle(t)
        ),
        "the moved reading is too high after short gaps and right after long ones": (
            moved_high_short_right_long(t)
        ),
        "the pipe reading gives under half the short gaps' cost, and is wrong more often": (
            pipe_misses_short(t)
        ),
    }


def numbers(t: pd.DataFrame | None = None) -> dict[str, float]:
    """The figures chapter 9b quotes (microseconds, ratios, counts)."""
    t = table() if t is None else t
    short = _short(t)
    polling = t.index <= 160.0
    return {
        "runs": float(load().run.nunique()),
        "short_lo_us": float(t.measured[polling].min()),
        "short_hi_us": float(t.measured[polling].max()),
        "mid_lo_us": float(t.measured[short & ~polling].min()),
        "mid_hi_us": float(t.measured[short & ~polling].max()),
        "long_lo_us": float(t.measured[~short].min()),
        "long_hi_us": float(t.measured[~short].max()),
        "moved_short_lo": float(t.moved_ratio[polling].min()),
        "moved_short_hi": float(t.moved_ratio[polling].max()),
        "moved_right": float(t.moved_right.sum()),
        "pipe_right": float(t.pipe_right.sum()),
        "gaps": float(len(t)),
    }

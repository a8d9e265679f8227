"""The wake-up benchmarks' raw samples summarised (:func:`models.measure.costs.summarise`'s
``wake`` section): a thread woken through a pipe, a futex and a loopback TCP socket after each idle
gap, the waker's own call, and the ping-pong of two threads (all times in microseconds).
"""

from __future__ import annotations

from typing import Any

from .stats import median, percentile

__all__ = ["summarise_wake", "tail", "TAIL_SHARE", "pingpong", "pingpong_summary"]

#: The share of a wake-up list's samples kept as its tail (the slowest).
TAIL_SHARE = 0.1


def tail(samples: list[float]) -> list[float]:
    """The slowest :data:`TAIL_SHARE` of ``samples`` (at least one), sorted, slowest last.

    >>> tail([float(v) for v in range(1, 21)])
    [19.0, 20.0]
    >>> tail([4.0, 1.0])
    [4.0]
    """
    keep = max(1, int(len(samples) * TAIL_SHARE))
    return sorted(samples)[-keep:]


def summarise_wake(raw: dict[str, Any]) -> dict[str, Any]:
    """Medians (and the 90th and 99th percentiles and the largest of the sleeper's latency: its
    tail, which a late wake-up share would stand for) of the C program's ``wake``
    samples: ``pipe``, ``futex``, ``pipe_cross`` (each if it ran), the four lists by idle gap
    (``cross_by_gap``, ``cross_by_long_gap``, ``tcp_by_gap``, ``tcp_by_long_gap``, each with the
    waker's call and its spinning-peer and asleep-waker variants where they were timed), and
    ``pingpong`` (:func:`pingpong`).

    >>> w = summarise_wake({"pipe_us": [3.0, 5.0, 4.0], "futex_us": [], "pipe_cross_us": [],
    ...                     "tcp_by_gap": [{"gap_us": 2.0, "lat_us": [9.0, 11.0],
    ...                                     "waker_us": [2.0, 3.0]}]})
    >>> w["pipe"]["median_us"], sorted(w), w["tcp_by_gap"][0]["waker_median_us"]
    (4.0, ['pipe', 'tcp_by_gap'], 2.5)
    >>> w["pipe"]["max_us"], w["tcp_by_gap"][0]["max_us"]
    (5.0, 11.0)
    """
    wake = {
        name: {
            "median_us": median(raw[f"{name}_us"]),
            "p90_us": percentile(raw[f"{name}_us"], 90),
            "p99_us": percentile(raw[f"{name}_us"], 99),
            "max_us": max(raw[f"{name}_us"]),
            "samples": len(raw[f"{name}_us"]),
        }
        for name in ("pipe", "futex", "pipe_cross")
        if raw[f"{name}_us"]  # (no cross-CPU samples on one CPU)
    }
    # all but the first: none before their benchmarks
    for name in ("cross_by_gap", "cross_by_long_gap", "tcp_by_gap", "tcp_by_long_gap"):
        by_gap = [
            {
                "gap_us": g["gap_us"],
                "median_us": median(g["lat_us"]),
                "p90_us": percentile(g["lat_us"], 90),
                "p99_us": percentile(g["lat_us"], 99),
                "max_us": max(g["lat_us"]),
                "samples": len(g["lat_us"]),
                # the slowest tenth, slowest last: how many were late by any measure above the
                # 90th percentile (models.measure.wakeups.late_share)
                "tail_us": tail(g["lat_us"]),
                # the waker's write() (none before its benchmark)
                **({"waker_median_us": median(g["waker_us"])} if g.get("waker_us") else {}),
                # the TCP ones again with the peer spinning, no wake-up (none before it)
                **(
                    {
                        "spin_peer_median_us": median(g["spin_peer_lat_us"]),
                        "spin_peer_waker_median_us": median(g["spin_peer_waker_us"]),
                    }
                    if g.get("spin_peer_waker_us")
                    else {}
                ),
                # the long gaps again with the waker asleep too (none before its benchmark)
                **(
                    {
                        "asleep_median_us": median(g["asleep_lat_us"]),
                        "asleep_waker_median_us": median(g["asleep_waker_us"]),
                    }
                    if g.get("asleep_waker_us")
                    else {}
                ),
            }
            for g in raw.get(name, [])
        ]
        if by_gap:
            wake[name] = by_gap  # type: ignore[assignment]
    pp = raw.get("pingpong")  # none before its benchmark, or on one CPU
    if pp and pp["poll_us"] and pp["spin_us"]:
        wake["pingpong"] = pingpong(pp)
    return wake


def pingpong(raw: dict[str, Any]) -> dict[str, float]:
    """The ping-pong benchmark's medians (microseconds): the round trip with both threads waiting
    in ``poll()`` and with both spinning, what one wake-up adds to a round trip (half their
    difference), and how long each thread idles per round trip (the polling round trip less its
    own two calls, half the spinning one).

    With the requester's ``send()`` timed in its thread's CPU clock (``poll_send_cpu_us``,
    ``spin_send_cpu_us``), also the waker's share of a wake-up (``waker_us``): the median
    ``send()`` that wakes the sleeping responder less the median one that finds it spinning.

    >>> p = pingpong({"bytes": 48, "poll_us": [52.0, 53.0, 54.0], "spin_us": [7.0, 7.2, 7.4],
    ...               "poll_send_cpu_us": [11.0, 11.5], "spin_send_cpu_us": [4.5, 4.75]})
    >>> p["wake_us"], p["idle_us"], p["waker_us"]
    (22.9, 49.4, 6.625)
    """
    poll_send, spin_send = raw.get("poll_send_cpu_us"), raw.get("spin_send_cpu_us")
    return pingpong_summary(
        median(raw["poll_us"]),
        median(raw["spin_us"]),
        raw["bytes"],
        len(raw["poll_us"]),
        (median(poll_send), median(spin_send)) if poll_send and spin_send else None,
    )


def pingpong_summary(
    poll_us: float,
    spin_us: float,
    nbytes: int,
    samples: int,
    send_cpu_us: tuple[float, float] | None = None,
) -> dict:
    """:func:`pingpong`'s fields from the two median round trips (microseconds) and, if measured,
    the two median ``send()`` CPU times (sleeping responder, spinning responder; microseconds)."""
    out = {
        "bytes": nbytes,
        "poll_median_us": poll_us,
        "spin_median_us": spin_us,
        "wake_us": round((poll_us - spin_us) / 2, 6),
        "idle_us": round(poll_us - spin_us / 2, 6),
        "samples": samples,
    }
    if send_cpu_us is not None:
        out["poll_send_cpu_us"], out["spin_send_cpu_us"] = poll_send, spin_send = send_cpu_us
        out["waker_us"] = round(max(poll_send - spin_send, 0.0), 6)
    return out

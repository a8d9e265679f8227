"""The wake-up microbenchmarks (:func:`models.measure.costs.summarise`'s ``wake``) as ``Host``
fields: the wake-up's latency as steps or as a curve of the sleeper's idle time, the spread of the
wake-ups after a long idle (``timer_spread_s``) and what waking costs the waker (``waker_curve_s``).
:mod:`models.measure.profile` builds a host profile with them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "FAST_FACTOR",
    "WAKE_STEPS",
    "wake_costs",
    "wake_curve",
    "socket_wake_curve",
    "late_share",
    "late_mean_s",
    "late_wake_fields",
    "one_way_path_s",
    "timer_spread",
    "SPREAD_QUANTILE",
    "wake_spread",
    "waker_curve",
    "socket_waker_curve",
    "tcp_waker_curve",
    "curve_at_s",
]


def _all_gaps(wake: Mapping[str, Any]) -> list:
    """The idle gaps of ``cross_by_gap`` and ``cross_by_long_gap`` together, shortest first."""
    return sorted(
        [*wake.get("cross_by_gap", []), *wake.get("cross_by_long_gap", [])],
        key=lambda g: g["gap_us"],
    )


#: A wake-up after an idle gap counts as fast (the CPU was still polling) when its median is
#: under this many times the median after the shortest gap.
FAST_FACTOR = 1.5


def wake_costs(wake: Mapping[str, Any]) -> dict[str, float]:
    """``wake_s``, ``wake_fast_s`` and ``wake_fast_idle_s`` (seconds) from the wake-up
    microbenchmarks (:func:`models.measure.costs.summarise`'s ``wake``).

    With the cross-CPU wake-ups after set idle gaps (``cross_by_gap``): ``wake_s`` is the median
    after the longest gap (a CPU that halted), ``wake_fast_s`` the median after the shortest (a
    CPU still polling), and ``wake_fast_idle_s`` the geometric middle between the last gap whose
    median is still fast (under :data:`FAST_FACTOR` times the shortest gap's) and the next gap;
    no step (the longest gap's median under that too) leaves the fast wake-up off.
    Without them: the cross-CPU median (or the same-CPU one on a single CPU), fast wake-up off.

    >>> gaps = [{"gap_us": g, "median_us": m} for g, m in [(2, 5.0), (160, 5.2), (320, 14.6),
    ...                                                      (1280, 52.9)]]
    >>> w = wake_costs({"pipe_cross": {"median_us": 5.4}, "cross_by_gap": gaps})
    >>> round(w["wake_s"] * 1e6, 1), round(w["wake_fast_s"] * 1e6, 1)
    (52.9, 5.0)
    >>> round(w["wake_fast_idle_s"] * 1e6)  # between 160 and 320 us
    226
    """
    single = wake.get("pipe_cross") or wake["pipe"]  # another CPU, if there is one
    gaps = sorted(wake.get("cross_by_gap") or [], key=lambda g: g["gap_us"])
    off = {"wake_s": single["median_us"] * 1e-6, "wake_fast_s": 0.0, "wake_fast_idle_s": 0.0}
    if len(gaps) < 2:
        return off
    fast, slow = gaps[0]["median_us"], gaps[-1]["median_us"]
    cut = FAST_FACTOR * fast
    if not slow >= cut:
        return off
    last = 0
    while last + 1 < len(gaps) and gaps[last + 1]["median_us"] < cut:
        last += 1
    idle_us = math.sqrt(gaps[last]["gap_us"] * gaps[last + 1]["gap_us"])
    return {
        "wake_s": slow * 1e-6,  # us -> s
        "wake_fast_s": fast * 1e-6,  # us -> s
        "wake_fast_idle_s": idle_us * 1e-6,  # us -> s
    }


#: The step fields a measured wake-up curve replaces (a ``Host`` takes one or the other).
WAKE_STEPS = ("wake_fast_s", "wake_fast_idle_s")


def wake_curve(wake: Mapping[str, Any]) -> tuple:
    """The wake-up latency as measured against the sleeper's idle time, ``(idle, latency)``
    points in seconds (``Host.wake_curve_s``): every gap's median of ``cross_by_gap`` and
    ``cross_by_long_gap``; empty without the long gaps (a benchmark from before them: the profile
    keeps the step of :func:`wake_costs`).

    >>> w = {"cross_by_gap": [{"gap_us": 2, "median_us": 10.0}, {"gap_us": 1280, "median_us": 24.0}],
    ...      "cross_by_long_gap": [{"gap_us": 40000, "median_us": 61.0}]}
    >>> [(round(i * 1e6), round(t * 1e6, 1)) for i, t in wake_curve(w)]  # us
    [(2, 10.0), (1280, 24.0), (40000, 61.0)]
    """
    if not wake.get("cross_by_long_gap"):
        return ()
    return tuple((g["gap_us"] * 1e-6, g["median_us"] * 1e-6) for g in _all_gaps(wake))  # us -> s


def timer_spread(wake: Mapping[str, Any]) -> float:
    """``timer_spread_s`` (seconds) from the wake-up microbenchmarks: after the longest idle gap
    of ``cross_by_long_gap`` (a virtual CPU idle as long as a delayed-ACK stall), the wake-ups'
    90th percentile less their median, how much later one CPU may come back than another; 0
    without the long gaps or their percentile (a benchmark from before them).

    >>> round(timer_spread({"cross_by_long_gap": [
    ...     {"gap_us": 20000, "median_us": 80.2, "p90_us": 99.4},
    ...     {"gap_us": 40000, "median_us": 68.9, "p90_us": 95.6}]}) * 1e6, 1)  # us
    26.7
    """
    gaps = sorted(wake.get("cross_by_long_gap") or [], key=lambda g: g["gap_us"])
    if not gaps or gaps[-1].get("p90_us") is None:
        return 0.0
    return max(gaps[-1]["p90_us"] - gaps[-1]["median_us"], 0.0) * 1e-6  # us -> s


#: The upper quantile the benchmark keeps at each idle gap (its ``p90_us``).
SPREAD_QUANTILE = 0.9


def wake_spread(wake: Mapping[str, Any]) -> float:
    """``wake_spread_s`` (seconds) from the socket wake-up benchmark (``tcp_by_gap``, the list the
    profiles' curves come from): at each idle gap, the width of the uniform draw whose median and
    90th percentile are the gap's (they lie half and nine tenths of the width above its start,
    so the width is their difference over 0.4); the median of those widths over the gaps, so that
    the few gaps where the wake-ups split into a fast and a slow group do not set it; 0 without
    the list or its percentiles.

    >>> w = {"tcp_by_gap": [{"gap_us": g, "median_us": m, "p90_us": p} for g, m, p in
    ...      ((10, 34.9, 64.2), (20, 19.9, 23.8), (40, 20.6, 28.2), (80, 26.9, 30.4))]}
    >>> round(wake_spread(w) * 1e6, 1)  # us: widths 73.25, 9.75, 19.0, 8.75
    14.4
    >>> wake_spread({})
    0.0
    """
    gaps = [g for g in wake.get("tcp_by_gap") or [] if g.get("p90_us") is not None]
    if not gaps:
        return 0.0
    # p50 = start + width / 2 and p90 = start + 0.9 width: width = (p90 - p50) / 0.4
    share = SPREAD_QUANTILE - 0.5
    widths = sorted(max(g["p90_us"] - g["median_us"], 0.0) / share for g in gaps)
    mid = len(widths) // 2
    median = widths[mid] if len(widths) % 2 else (widths[mid - 1] + widths[mid]) / 2
    return median * 1e-6  # us -> s


def waker_curve(wake: Mapping[str, Any]) -> tuple:
    """What waking a thread adds to the waker's call, against the sleeper's idle time, as
    ``(idle, seconds)`` points (``Host.waker_curve_s``): per gap of ``cross_by_gap`` and
    ``cross_by_long_gap``, the median of the waker's ``write()`` less its median after the shortest
    gap (the call itself, which the ``send()`` costs already hold), never below 0.  For a long gap
    the median with the waker asleep through the gap too (``asleep_waker_median_us``) is taken
    where it was measured: in a two-thread loop a thread idles for milliseconds only when the
    whole loop stalled, and then its waker had slept as well.  Empty without the long gaps or the
    waker's timings (a benchmark from before them).

    >>> w = {"cross_by_gap": [{"gap_us": 2, "waker_median_us": 5.2},
    ...                       {"gap_us": 1280, "waker_median_us": 5.0}],
    ...      "cross_by_long_gap": [{"gap_us": 40000, "waker_median_us": 18.2}]}
    >>> [(round(i * 1e6), round(c * 1e6, 1)) for i, c in waker_curve(w)]  # us
    [(2, 0.0), (1280, 0.0), (40000, 13.0)]
    >>> w["cross_by_long_gap"][0]["asleep_waker_median_us"] = 20.4
    >>> [round(c * 1e6, 1) for _, c in waker_curve(w)]  # us
    [0.0, 0.0, 15.2]
    """
    gaps = _all_gaps(wake)
    if not wake.get("cross_by_long_gap") or any("waker_median_us" not in g for g in gaps):
        return ()
    base = gaps[0]["waker_median_us"]
    return tuple(
        (
            g["gap_us"] * 1e-6,  # us -> s
            max(g.get("asleep_waker_median_us", g["waker_median_us"]) - base, 0.0) * 1e-6,
        )
        for g in gaps
    )


def socket_waker_curve(wake: Mapping[str, Any]) -> tuple:
    """What waking a thread adds to the waker's ``send()``, as the harness's threads pay it,
    ``(idle, seconds)`` points (``Host.waker_curve_s``).

    :func:`waker_curve` takes the pipe ``write()`` after the shortest gap as the call itself, but
    that write woke a thread too: the sleeper had blocked in ``read()`` 2 us before.  The
    ``send()`` costs the profile holds were timed with no thread asleep on the other end, so
    what the waker pays for the wake-up is the whole difference, which the ping-pong measures at
    one gap (``pingpong``'s ``waker_us``: the requester's ``send()`` with its responder asleep in
    ``poll()`` less the same ``send()`` with the responder spinning).  The curve keeps the pipe's
    shape (:func:`waker_curve`) and is moved, at every gap, so that at the ping-pong's idle gap
    (``idle_us``) it reads the ping-pong's cost; never below 0.  Where the benchmark timed the
    TCP waker at every gap (:func:`tcp_waker_curve`), that curve is taken instead: measured, not
    moved.  Empty without either, or without the ping-pong's waker timing or the pipe's curve
    (the profile keeps :func:`waker_curve`).

    >>> w = {"cross_by_gap": [{"gap_us": 2, "waker_median_us": 4.6},
    ...                       {"gap_us": 80, "waker_median_us": 6.2}],
    ...      "cross_by_long_gap": [{"gap_us": 40000, "waker_median_us": 18.6}],
    ...      "pingpong": {"waker_us": 7.5, "idle_us": 40.0}}
    >>> [(round(i * 1e6), round(c * 1e6, 2)) for i, c in socket_waker_curve(w)]  # us
    [(2, 6.72), (80, 8.32), (40000, 20.72)]
    >>> socket_waker_curve({**w, "pingpong": {"wake_us": 20.0, "idle_us": 40.0}})
    ()
    """
    tcp = tcp_waker_curve(wake)
    if tcp:
        return tcp
    pipe = waker_curve(wake)
    pp = wake.get("pingpong") or {}
    if not pipe or pp.get("waker_us") is None or pp.get("idle_us") is None:
        return ()
    at_idle = curve_at_s(pipe, float(pp["idle_us"]) * 1e-6)  # us -> s
    move = float(pp["waker_us"]) * 1e-6 - at_idle  # us -> s, less the pipe's, s
    return tuple((i, max(c + move, 0.0)) for i, c in pipe)


def tcp_waker_curve(wake: Mapping[str, Any]) -> tuple:
    """What waking a thread asleep in ``poll()`` on a loopback TCP socket adds to the ``send()``
    that wakes it, against the sleeper's idle time, ``(idle, seconds)`` points
    (``Host.waker_curve_s``), measured at every gap: per gap of ``tcp_by_gap`` (the waker spins
    through it) and ``tcp_by_long_gap`` (it sleeps through it, as in a stalled loop), the median
    of the waker's ``send()`` with the peer asleep less its median with the peer spinning on a
    non-blocking peek (no wake-up), never below 0.  Empty without the long gaps or the spinning
    peer's timings (a benchmark from before them).

    >>> w = {"tcp_by_gap": [{"gap_us": 5, "waker_median_us": 14.0,
    ...                      "spin_peer_waker_median_us": 3.5}],
    ...      "tcp_by_long_gap": [{"gap_us": 40000, "waker_median_us": 60.0,
    ...                           "spin_peer_waker_median_us": 35.0}]}
    >>> [(round(i * 1e6), round(c * 1e6, 1)) for i, c in tcp_waker_curve(w)]  # us
    [(5, 10.5), (40000, 25.0)]
    >>> tcp_waker_curve({"tcp_by_gap": w["tcp_by_gap"]})  # no long gaps: not measured
    ()
    """
    gaps = sorted(
        [*wake.get("tcp_by_gap", []), *wake.get("tcp_by_long_gap", [])],
        key=lambda g: g["gap_us"],
    )
    if not wake.get("tcp_by_long_gap") or any(
        "spin_peer_waker_median_us" not in g or "waker_median_us" not in g for g in gaps
    ):
        return ()
    return tuple(
        (
            g["gap_us"] * 1e-6,  # us -> s
            max(g["waker_median_us"] - g["spin_peer_waker_median_us"], 0.0) * 1e-6,  # us -> s
        )
        for g in gaps
    )


def curve_at_s(curve: Sequence[Sequence[float]], idle_s: float) -> float:
    """A curve of ``(idle, value)`` points in seconds read after ``idle_s`` seconds, seconds, as
    the simulator reads it (:func:`models.sim.wakeups.curve_latency`, in whole picoseconds).

    >>> round(curve_at_s([(2e-6, 0.0), (80e-6, 1.6e-6)], 40e-6) * 1e6, 3)  # us
    0.779
    """
    from models.sim.wakeups import curve_latency

    ps = 10**12  # picoseconds per second: whole units for curve_latency
    points = tuple((round(i * ps), round(c * ps)) for i, c in curve)
    return curve_latency(points, round(idle_s * ps)) / ps  # ps -> s


def one_way_path_s(min_rtt_us: float | None) -> float | None:
    """A segment's one-way trip through both stacks, seconds, as the calibration holds it: half
    the kernel's smallest round trip (``tcpi_min_rtt``, whole microseconds; ``None`` without
    one).  A round trip is a data segment's trip, its ACK's trip back and both receptions, so
    one way is at most half of it: the largest the measurement allows.

    >>> one_way_path_s(3.0) * 1e6
    1.5
    >>> one_way_path_s(None) is None
    True
    """
    if min_rtt_us is None or not min_rtt_us > 0:
        return None
    return float(min_rtt_us) / 2 * 1e-6  # round trip in us -> one way in s


def socket_wake_curve(wake: Mapping[str, Any]) -> tuple:
    """The wake-up as the harness's threads meet it, ``(idle, latency)`` points in seconds
    (``Host.wake_curve_s``).

    Its shape comes from ``tcp_by_gap`` (a thread in ``poll()`` on a loopback TCP socket, woken
    by a segment sent from another CPU after each idle gap, the waker spinning on), its level
    from the ping-pong (``pingpong``: what a wake-up adds to a round trip of two threads that
    each go idle after their ``send()``, the trips and calls taken out by the spinning round
    trip): the curve is ``tcp_by_gap`` moved so that at the ping-pong's idle gap it reads the
    ping-pong's wake-up.  The move holds the segment's trip (which the simulator adds as path
    latency before the wake-up) and the dearer wake-up when the waker idles too; it is measured
    at one gap and taken as the same at every short gap.  After the short gaps come the pipe's
    long gaps (``cross_by_long_gap``) as measured, if any.  Empty without both benchmarks (the
    profile keeps the pipe's wake-ups, :func:`wake_curve`).

    >>> w = {"tcp_by_gap": [{"gap_us": 2, "median_us": 18.0}, {"gap_us": 100, "median_us": 20.0},
    ...                     {"gap_us": 1280, "median_us": 40.0}],
    ...      "pingpong": {"wake_us": 23.0, "idle_us": 51.0},
    ...      "cross_by_long_gap": [{"gap_us": 40000, "median_us": 61.0}]}
    >>> [(round(i * 1e6), round(t * 1e6, 1)) for i, t in socket_wake_curve(w)]  # us
    [(2, 22.0), (100, 24.0), (1280, 44.0), (40000, 61.0)]
    >>> socket_wake_curve({"tcp_by_gap": w["tcp_by_gap"]})
    ()
    """
    from models.sim.wakeups import curve_latency  # (read as the simulator reads a curve)

    short = sorted(wake.get("tcp_by_gap") or [], key=lambda g: g["gap_us"])
    pp = wake.get("pingpong")
    if not short or not pp:
        return ()
    pts = [(float(g["gap_us"]), float(g["median_us"])) for g in short]
    ps = 10**6  # picoseconds per microsecond: whole units for curve_latency
    at_idle = curve_latency(
        tuple((round(g * ps), round(m * ps)) for g, m in pts), round(float(pp["idle_us"]) * ps)
    )
    move = float(pp["wake_us"]) - at_idle / ps  # us
    points = [(g * 1e-6, max(m + move, 0.0) * 1e-6) for g, m in pts]  # us -> s
    last = pts[-1][0]
    points += [
        (g["gap_us"] * 1e-6, g["median_us"] * 1e-6)  # us -> s
        for g in sorted(wake.get("cross_by_long_gap") or [], key=lambda g: g["gap_us"])
        if g["gap_us"] > last
    ]
    return tuple(points)


def _late_samples(wake: Mapping[str, Any]) -> tuple[list[float], int] | None:
    """The brief-idle wake-ups that were late (us, moved as the curve moves them) and how many
    were counted, or ``None`` when it cannot be told (:func:`late_share` says when)."""
    short = sorted(wake.get("tcp_by_gap") or [], key=lambda g: g["gap_us"])
    curve = socket_wake_curve(wake)
    if not curve or any("tail_us" not in g for g in short):
        return None
    move_us = curve[0][1] * 1e6 - float(short[0]["median_us"])  # s -> us, the curve's move
    slow_us = curve[-1][1] * 1e6 - move_us  # s -> us: the late latency, as sampled
    late: list[float] = []
    total = 0
    for g in short:
        if g["median_us"] >= slow_us:
            continue  # after this gap every wake-up is that slow already
        kept = sorted(g["tail_us"])
        if kept[0] >= slow_us and len(kept) < g["samples"]:
            return None  # more than the tail is late: the count would be a floor
        late += [v + move_us for v in kept if v >= slow_us]
        total += g["samples"]
    return (late, total) if total else None


def late_share(wake: Mapping[str, Any]) -> float | None:
    """The share of the wake-ups after a brief idle that were late as the simulator means it
    (``Host.wake_late_share``, :func:`models.sim.wakeups.wake_latency`): at least as slow as the
    wake-up after the curve's longest idle, its last point (:func:`socket_wake_curve`).

    Counted over the short gaps of ``tcp_by_gap`` whose own median is under that latency (after
    the longer ones every wake-up is that slow already), each sample moved as the curve moves it;
    only the slowest tenth of each gap is kept (``tail_us``), which is enough while the latency
    sits above every counted gap's 90th percentile.  ``None`` when it cannot be told: no socket
    curve or no tails (a benchmark from before them), or a gap whose whole tail is that slow
    (more than a tenth late: the kept samples would count too few).

    >>> w = {"tcp_by_gap": [{"gap_us": 2, "median_us": 18.0, "samples": 100,
    ...                      "tail_us": [30.0, 33.0, 41.0, 60.0, 900.0, 1800.0, 30.0, 31.0,
    ...                                  32.0, 29.0]},
    ...                     {"gap_us": 1280, "median_us": 40.0, "samples": 100,
    ...                      "tail_us": [41.0] * 9 + [2000.0]}],
    ...      "pingpong": {"wake_us": 22.0, "idle_us": 2.0},
    ...      "cross_by_long_gap": [{"gap_us": 40000, "median_us": 61.0}]}
    >>> late_share(w)  # 3 + 1 of the 200 at 57 us (61 less the curve's move of 4) or more
    0.02
    >>> late_share({**w, "cross_by_long_gap": [{"gap_us": 40000, "median_us": 30.0}]}) is None
    True
    """
    got = _late_samples(wake)
    return None if got is None else len(got[0]) / got[1]


def late_mean_s(wake: Mapping[str, Any]) -> float | None:
    """The mean latency of the late wake-ups that :func:`late_share` counts, seconds, moved as
    the curve moves them (``Host.wake_late_s``: what a late wake-up takes on average); ``None``
    when the share cannot be told or none was late.

    >>> w = {"tcp_by_gap": [{"gap_us": 2, "median_us": 18.0, "samples": 100,
    ...                      "tail_us": [30.0] * 8 + [96.0, 196.0]}],
    ...      "pingpong": {"wake_us": 22.0, "idle_us": 2.0},
    ...      "cross_by_long_gap": [{"gap_us": 40000, "median_us": 61.0}]}
    >>> round(late_mean_s(w) * 1e6, 1)  # (96 + 4 + 196 + 4) / 2, us
    150.0
    """
    got = _late_samples(wake)
    if got is None or not got[0]:
        return None
    return sum(got[0]) / len(got[0]) * 1e-6  # us -> s


def late_wake_fields(wake: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """The ``Host`` fields of the late wake-ups measured in ``wake`` and how each was found:
    ``wake_late_share`` (:func:`late_share`) and ``wake_late_s`` (:func:`late_mean_s`); none
    when the share cannot be told, and no latency beyond its plausible range (a few
    milliseconds-long ones on a noisy run: the share's provenance says so).

    >>> w = {"tcp_by_gap": [{"gap_us": 2, "median_us": 18.0, "samples": 100,
    ...                      "tail_us": [30.0] * 8 + [96.0, 196.0]}],
    ...      "pingpong": {"wake_us": 22.0, "idle_us": 2.0},
    ...      "cross_by_long_gap": [{"gap_us": 40000, "median_us": 61.0}]}
    >>> fields, how = late_wake_fields(w)
    >>> fields["wake_late_share"], round(fields["wake_late_s"] * 1e6), sorted(how)
    (0.02, 150, ['wake_late_s', 'wake_late_share'])
    >>> w["tcp_by_gap"][0]["tail_us"][-1] = 5000.0  # a mean beyond 1 ms: the share alone
    >>> fields, how = late_wake_fields(w)
    >>> sorted(fields), "not kept" in how["wake_late_share"]
    (['wake_late_share'], True)
    """
    from models.sim.hostranges import COST_RANGES

    share = late_share(wake)
    if not share:
        return {}, {}
    top = COST_RANGES["wake_late_s"].hi_s
    mean = late_mean_s(wake)
    kept = mean is not None and mean <= top
    how = {
        "wake_late_share": "measured: the share of the loopback TCP wake-ups after idle gaps "
        "of 2 us to 1.28 ms (tcp_by_gap, each gap's slowest tenth kept) at least as slow as "
        "the curve's last point, over the gaps whose median is faster "
        "(models.measure.wakeups.late_share)"
        + (
            ""
            if kept
            else f"; the late ones' mean latency was beyond wake_late_s's plausible range "
            f"({top * 1e6:g} us) and is not kept: a late wake-up takes the curve's last point"
        )  # s -> us
    }
    fields = {"wake_late_share": share}
    if kept:
        fields["wake_late_s"] = mean  # type: ignore[assignment]
        how["wake_late_s"] = (
            "measured: the mean latency of the late wake-ups that wake_late_share counts "
            "(models.measure.wakeups.late_mean_s)"
        )
    return fields, how

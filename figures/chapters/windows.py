"""Chapter 11 figure: throughput bound min(W/RTT, C) against Charrouf's
runs, live in the book (standard library only: it runs in the browser)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from figures.live import Live, Range
from figures.live.page import legend_below
from models.analytic import windows as wan

__all__ = ["window_bound", "window_live_figure"]

KIB = 1024  # bytes
#: Round trips of the curve, ms: 1 to 160 in steps of 1.
RTTS_MS = [float(r) for r in range(1, 161)]
_SYMBOLS = {"default": "circle-open", "tuned": "square-open"}


def window_bound(
    window_kib: float,
    link_mbps: float,
    measured: Mapping[str, Sequence[Sequence[float]]],
    kb_bytes: float = 1000,
) -> dict:
    """``min(W/RTT, C)`` (:func:`models.analytic.windows.throughput_bound_Bps`) over
    round trips of 1 to 160 ms, for a window of ``window_kib`` KiB and a
    link of ``link_mbps`` Mb/s, in KB/s of ``kb_bytes`` bytes, with the
    measured runs as points.

    ``measured`` maps a configuration (``"default"``, ``"tuned"``) to two
    lists: round trips (ms) and read rates (KB/s).
    """
    w = window_kib * KIB  # KiB -> bytes
    c = link_mbps * 1e6  # Mb/s -> bits per second
    bound = [
        wan.throughput_bound_Bps(w, r * 1e-3, c) / kb_bytes for r in RTTS_MS
    ]  # ms -> s; bytes/s -> KB/s
    cross = wan.crossover_rtt_s(w, c) * 1e3  # s -> ms
    traces = [
        {
            "x": RTTS_MS,
            "y": bound,
            "mode": "lines",
            "name": "min(W/RTT, C)",
            "line": {"color": "black"},
        }
    ]
    for cfg, (rtts, rates) in measured.items():
        traces.append(
            {
                "x": list(rtts),
                "y": list(rates),
                "mode": "markers",
                "name": f"Charrouf 2008, {cfg}",
                "marker": {"symbol": _SYMBOLS.get(cfg, "circle"), "size": 8},
            }
        )
    return {
        "traces": traces,
        "title": (
            f"window {window_kib:g} KiB on {link_mbps:g} Mb/s: link-limited below {cross:.1f} ms"
        ),
    }


def window_live_figure(runs, kb_bytes: float) -> Live:
    """The chapter's main figure, with the measured remote-warm reads as
    points.

    ``runs`` is the chapter's table (a pandas DataFrame with columns
    ``config``, ``rtt_ms`` and ``remote_warm_KBps``), in KB/s of
    ``kb_bytes`` bytes (the source's 1000); its points go to the page as
    plain lists.
    """
    measured = {}
    for cfg in _SYMBOLS:
        s = runs[runs["config"] == cfg]
        measured[cfg] = [
            [float(v) for v in s["rtt_ms"]],
            [float(v) for v in s["remote_warm_KBps"]],
        ]
    return Live(
        "ch11-window",
        window_bound,
        controls=[
            Range(
                "window_kib",
                "window (KiB)",
                4,
                4096,
                grid=[16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0],
                value=64.0,
                log=True,
            ),
            Range(
                "link_mbps",
                "link (Mb/s)",
                1,
                10000,
                grid=[10.0, 45.0, 100.0, 1000.0],
                value=45.0,
                log=True,
            ),
        ],
        fixed={"measured": measured, "kb_bytes": kb_bytes},
        layout=legend_below(
            {
                "xaxis": {"title": {"text": "round-trip time (ms)"}},
                "yaxis": {"title": {"text": "read throughput (KB/s)"}, "type": "log"},
                "margin": {"t": 40, "r": 10, "b": 45, "l": 60},
            }
        ),
        caption=(
            "The bound of models.analytic.windows.throughput_bound_Bps; the points "
            "are the measured runs. 28 points (window x link rate) "
            "were computed when the book was built."
        ),
    )

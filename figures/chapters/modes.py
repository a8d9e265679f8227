"""Chapter 7 figure: what the mean and the median report about a latency
with two modes, live in the book (standard library only: it runs in the
browser)."""

from __future__ import annotations

from figures.live import Live, Range
from figures.live.page import legend_below
from models.analytic.modes import mean_of_modes, median_of_modes

__all__ = ["mean_median", "mean_median_figure"]


def mean_median(
    gap_us: float,
    low_us: float,
    share: float,
    n: int = 300,
    remote_us: float | None = None,
    remote_share: float = 1 / 3,
) -> dict:
    """Mean and median of ``n`` operations, each taking ``low_us`` or
    ``low_us + gap_us`` µs, against the share of slow ones (0 to 1 in
    steps of 0.02), with the chosen ``share`` marked.

    ``remote_us`` (optional) is a measured average drawn as a square at
    ``remote_share``.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n!r}")
    if not 0 <= share <= 1:
        raise ValueError(f"share must lie in [0, 1], got {share!r}")
    modes = [low_us + gap_us, low_us]

    def at(p: float) -> tuple[float, float]:
        n_slow = round(p * n)
        weights = [n_slow, n - n_slow]
        return mean_of_modes(modes, weights), median_of_modes(modes, weights)

    shares = [i / 50 for i in range(51)]
    curves = [at(p) for p in shares]
    mean, median = at(share)
    traces = [
        {"x": shares, "y": [c[0] for c in curves], "name": "mean", "mode": "lines"},
        {
            "x": shares,
            "y": [c[1] for c in curves],
            "name": "median",
            "mode": "lines",
            "line": {"dash": "dot"},
        },
        {
            "x": [share, share],
            "y": [mean, median],
            "name": f"{share:.0%} slow",
            "mode": "markers",
            "marker": {"size": 9, "color": "#d62728"},
        },
    ]
    if remote_us is not None:
        traces.append(
            {
                "x": [remote_share],
                "y": [remote_us],
                "name": f"remote 512 B (average {remote_us:.1f} µs)",
                "mode": "markers",
                "marker": {"symbol": "square", "size": 9, "color": "black"},
            }
        )
    return {
        "traces": traces,
        "title": (
            f"{share:.0%} of operations at {modes[0]:g} µs, the "
            f"rest at {low_us:g} µs: mean {mean:.0f} µs, "
            f"median {median:.0f} µs"
        ),
    }


def mean_median_figure(remote_us: float) -> Live:
    """The chapter's figure, with the measured remote average as a square
    (from the chapter's breakdown, so it is passed in)."""
    return Live(
        "ch7-mean-of-modes",
        mean_median,
        controls=[
            Range(
                "gap_us",
                "gap between modes (µs)",
                0,
                400,
                grid=[float(g) for g in range(0, 401, 50)],
                value=200.0,
            ),
            Range("low_us", "low mode (µs)", 0, 300, grid=[50.0, 135.0, 250.0], value=135.0),
            Range(
                "share",
                "slow share",
                0,
                1,
                grid=[0.0, 0.33, 0.5, 0.67, 1.0],
                value=0.33,
                step=0.01,
            ),
        ],
        fixed={"n": 300, "remote_us": remote_us},
        layout=legend_below(
            {
                "xaxis": {"title": {"text": "share of operations in the slow mode"}},
                "yaxis": {"title": {"text": "latency (µs)"}, "range": [0, 720]},
                "margin": {"t": 40, "r": 10, "b": 45, "l": 60},
            }
        ),
        caption=(
            "Mean and median of 300 operations in two modes "
            "(models.analytic.modes); 135 points (gap x low mode x share) were "
            "computed when the book was built."
        ),
    )

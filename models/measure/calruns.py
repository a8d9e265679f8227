"""The calibration's kernel runs: the eight runs of the iSCSI-like loop on the host loopback that
``python -m models.measure calibrate`` fits what the microbenchmarks cannot measure to
(:data:`RUNS`, :func:`sweep_rows`), and the kernel's smallest round trip among them
(:func:`smallest_round_trip_us`), which bounds the path.  :mod:`models.measure.profile` builds the
profile from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "RUNS",
    "BUSY_RUNS",
    "WINDOW_S",
    "QUICK_WINDOW_S",
    "sweep_rows",
    "smallest_round_trip_us",
]

#: The sweep's runs: (server socket mode, QD, payload bytes), on the host loopback.
RUNS = tuple(
    (mode, qd, size) for mode in ("nodelay", "more") for qd in (1, 8) for size in (512, 4096)
)
#: Runs whose server's CPU sets the rate with few segments per operation (a ``MSG_MORE`` header,
#: Nagle on, QD 64: about a third of a segment per operation): with the ``TCP_NODELAY`` runs at
#: QD 8 (two per operation) they tell the work per message from the cost per segment, which
#: :data:`RUNS` alone cannot (``tools/measure_busy_run.py``; not yet among :data:`RUNS`).
BUSY_RUNS = (("more", 64, 512),)
#: Measurement window per run, seconds (and with ``--quick``).
WINDOW_S = 0.6
QUICK_WINDOW_S = 0.15
_WARMUP_S = 0.2  # seconds excluded from each run's statistics
_QUICK_WARMUP_S = 0.05


def sweep_rows(quick: bool = False, runs: Sequence[tuple] = RUNS) -> list[dict[str, Any]]:
    """Run ``runs`` (default :data:`RUNS`; ``(server socket mode, QD, payload bytes)`` each) on
    the host loopback; the ``iscsi_loop`` rows (one per run)."""
    from .netns import Link, LinkSpec  # noqa: PLC0415 - the harness only when measuring
    from .runner import RunSpec, run_one  # noqa: PLC0415
    from .tables import rows_for  # noqa: PLC0415

    window = QUICK_WINDOW_S if quick else WINDOW_S
    warm = _QUICK_WARMUP_S if quick else _WARMUP_S
    rows: list[dict[str, Any]] = []
    with Link(LinkSpec("loopback")) as link:
        for mode, qd, size in runs:
            spec = RunSpec(
                "iscsi", mode, qd, size, duration_s=window, warmup_s=warm, capture=False
            )
            res = run_one(spec, link)
            # the kernel's smallest round trip on either socket (tcpi_min_rtt, whole microseconds)
            rtts = [
                (end.get("tcp_info") or {}).get("min_rtt_us") for end in (res.server, res.client)
            ]
            seen = [int(x) for x in rtts if x]
            rows += [
                {**row, **({"min_rtt_us": min(seen)} if seen else {})}
                for row in rows_for("iscsi_loop", res, link)
            ]
    return rows


def smallest_round_trip_us(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The kernel's smallest round trip in the sweep's ``rows`` (``min_rtt_us``: each run's
    ``tcpi_min_rtt``, data sent to its ACK received, whole microseconds), ``None`` without it.

    It bounds the simulator's path latency: a round trip holds a data segment's trip, its ACK's
    trip back and both receptions, so one way is at most half of it.  When the socket wake-up was
    measured (``tcp_by_gap``) the calibration holds the path there
    (:func:`~models.measure.wakeups.one_way_path_s`); without it the path is fitted, and the fit
    has put it far above that bound (it stood in for the socket wake-up's extra cost).

    >>> smallest_round_trip_us([{"min_rtt_us": 5}, {"min_rtt_us": 3}])
    3.0
    >>> smallest_round_trip_us([{"qd": 1}]) is None
    True
    """
    seen = [float(r["min_rtt_us"]) for r in rows if r.get("min_rtt_us")]
    return min(seen) if seen else None

"""The calibration's kernel runs: the eight runs of the iSCSI-like loop on the host loopback
(:data:`RUNS`, :func:`sweep_rows`) and the busy run, repeated (:data:`BUSY_RUNS`,
:func:`busy_repeats`, :func:`busy_rows`), that ``python -m models.measure calibrate`` fits what the
microbenchmarks cannot measure to, and the kernel's smallest round trip among them
(:func:`smallest_round_trip_us`), which bounds the path.  :mod:`models.measure.profile` builds the
profile from them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "RUNS",
    "BUSY_RUNS",
    "BUSY_REPEATS",
    "BUSY_KEYS",
    "busy_repeats",
    "busy_rows",
    "busy_record",
    "calibration_sweep",
    "fit_target",
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
#: :data:`RUNS` alone cannot.  Their rate moves by about a tenth from one window to the next, so
#: each is run :data:`BUSY_REPEATS` times and fitted by its median rate (:func:`busy_rows`).
BUSY_RUNS = (("more", 64, 512),)
#: Repeats of each busy run (one with ``--quick``).
BUSY_REPEATS = 5
#: The row keys a busy run's repeat keeps (besides its times and rates).
BUSY_KEYS = ("sock_mode", "client_sock_mode", "qd", "iosize_bytes")
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


def busy_repeats(n: int = BUSY_REPEATS, quick: bool = False) -> list[dict[str, Any]]:
    """``n`` repeats of :data:`BUSY_RUNS` on the loopback: one record per run and repeat
    (:data:`BUSY_KEYS`, the median operation time ``lat_p50_us``, ``iops``, ``stalled_pct``, the
    server's data segments per operation and its mean busy period, in requests)."""
    if not 1 <= n <= 50:
        raise ValueError(f"n: busy-run repeats must be 1..50, got {n!r}")
    out = []
    for k in range(n):
        for row in sweep_rows(quick=quick, runs=BUSY_RUNS):
            kept = (
                "lat_p50_us",
                "iops",
                "stalled_pct",
                "server_data_segments_per_op",
                "mean_busy_count",
            )
            out.append(
                {
                    "repeat": k,
                    **{key: row[key] for key in BUSY_KEYS},
                    **{key: float(row[key]) for key in kept},
                    **({"min_rtt_us": row["min_rtt_us"]} if "min_rtt_us" in row else {}),
                }
            )
    return out


def busy_rows(repeats: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One training row per busy run: the medians over its repeats of the rate and of the
    operation time, the largest stalled share; fitted by its rate (``fit_target`` ``"mean"``: a
    busy run measures what an operation costs a busy server, and its median depends on the order
    in which a Nagle client's batched requests are answered).

    >>> reps = [{"sock_mode": "more", "client_sock_mode": "nagle", "qd": 64, "iosize_bytes": 512,
    ...          "lat_p50_us": x, "iops": 64e6 / x, "stalled_pct": 0.0}
    ...         for x in (180.0, 176.0, 190.0)]
    >>> row = busy_rows(reps)[0]
    >>> row["lat_p50_us"], round(row["iops"]), row["fit_target"], row["repeats"]
    (180.0, 355556, 'mean', 3)
    """
    import statistics  # noqa: PLC0415

    out = []
    for run in sorted({tuple(r[k] for k in BUSY_KEYS) for r in repeats}):
        each = [r for r in repeats if tuple(r[k] for k in BUSY_KEYS) == run]
        trips = [r["min_rtt_us"] for r in each if r.get("min_rtt_us")]
        out.append(
            {
                **dict(zip(BUSY_KEYS, run)),
                "link": "loopback",
                "mtu_bytes": 65536,
                "rate_limit_bits_per_s": None,
                "lat_p50_us": statistics.median(float(r["lat_p50_us"]) for r in each),
                "iops": statistics.median(float(r["iops"]) for r in each),
                "fit_target": "mean",
                "stalled_pct": max(float(r["stalled_pct"]) for r in each),
                "repeats": len(each),
                **({"min_rtt_us": min(trips)} if trips else {}),
            }
        )
    return out


def calibration_sweep(quick: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What ``calibrate`` fits to, measured on the loopback: the eight runs (:func:`sweep_rows`)
    and each busy run's row (:func:`busy_rows`, over
    :data:`BUSY_REPEATS` repeats, one with ``quick``); and the busy runs'
    repeats, which the profile records."""
    repeats = busy_repeats(1 if quick else BUSY_REPEATS, quick=quick)
    return sweep_rows(quick=quick) + busy_rows(repeats), repeats


def fit_target(row: Mapping[str, Any]) -> str:
    """What a training row's fit holds the model to: ``"mean"`` for a row marked so (the
    calibration's busy runs, :func:`models.measure.calruns.busy_rows`: their rate is what they
    measure, and the median of a Nagle client's batched operations depends on the order in which
    a batch's responses leave), else ``"median"``.

    >>> fit_target({"qd": 8}), fit_target({"qd": 64, "fit_target": "mean"})
    ('median', 'mean')
    """
    got = str(row.get("fit_target", "median"))
    if got not in ("median", "mean"):
        raise ValueError(f"row: fit_target must be 'median' or 'mean', got {got!r}")
    return got


def busy_record(settings: Mapping[str, Any], repeats: list[dict[str, Any]]) -> dict[str, Any]:
    """A profile's record of the busy runs' ``repeats`` (``measured.busy_runs``), measured under
    ``settings`` (the microbenchmarks')."""
    return {
        "date": settings["date"],
        "kernel": settings["kernel"]["release"],
        "load": settings.get("load"),
        "repeats": repeats,
    }

"""Chapter 12's second live figure: the latency of one write against its size, with
MaxOutstandingR2T as a sliding window, for any keys, round trip and link rate (standard library
only: it runs in the browser)."""

from __future__ import annotations

from figures.live import Live, Range, Select
from figures.live.page import legend_below
from models import iscsi

__all__ = ["SIZES_KIB", "write_latency", "R2T_WINDOW"]

KIB = 1024  # bytes
#: Write sizes drawn, KiB: 1 KiB to 4 MiB, two per doubling (whole KiB).
SIZES_KIB = sorted({round(2 ** (k / 2)) for k in range(0, 25)})
_YES_NO = {"Yes": True, "No": False}


def write_latency(
    rtt_ms: float,
    link_mbps: float,
    window: int,
    burst_kib: int,
    first_kib: int,
    initial_r2t: str,
    immediate_data: str,
    mark_kib: int = 1024,
) -> dict:
    """Latency of one write of 1 KiB to 4 MiB alone on an idle path (ms), three ways.

    :func:`models.iscsi.command_latency_s` for a session of ``window`` outstanding R2Ts
    (MaxOutstandingR2T), bursts of ``burst_kib`` KiB (MaxBurstLength), a first burst of
    ``first_kib`` KiB (FirstBurstLength, at most the burst), ``initial_r2t`` and ``immediate_data``
    (``"Yes"`` or ``"No"``), an 8 KiB MaxRecvDataSegmentLength, a round trip of ``rtt_ms`` ms and a
    link of ``link_mbps`` Mb/s (MTU 1500); the same with one R2T at a time; and a read of the same
    size, one round trip.  The title says, for a write of ``mark_kib`` KiB, how many R2Ts it needs
    and what sets their pace (:func:`models.iscsi.pace`).
    """
    for name, v in (("window", window), ("burst_kib", burst_kib), ("first_kib", first_kib)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    for name, v in (("initial_r2t", initial_r2t), ("immediate_data", immediate_data)):
        if v not in _YES_NO:
            raise ValueError(f"{name} must be 'Yes' or 'No', got {v!r}")
    first = min(first_kib, burst_kib)
    keys = dict(
        initial_r2t=_YES_NO[initial_r2t],
        immediate_data=_YES_NO[immediate_data],
        first_burst_length=first * KIB,  # KiB -> bytes
        max_burst_length=burst_kib * KIB,
    )
    slid = iscsi.Session(max_outstanding_r2t=window, **keys)
    one = iscsi.Session(max_outstanding_r2t=1, **keys)
    rtt = rtt_ms * 1e-3  # ms -> s
    link = link_mbps * 1e6  # Mb/s -> bit/s
    traces = []
    for name, op, s, dash in (
        (f"write, window of {window} R2T{'s' if window > 1 else ''}", "write", slid, "solid"),
        ("write, one R2T at a time", "write", one, "dash"),
        ("read of the same size", "read", slid, "dot"),
    ):
        y = [
            iscsi.command_latency_s(op, k * KIB, rtt, link, s) * 1e3  # s -> ms
            for k in SIZES_KIB
        ]
        traces.append(
            {"x": SIZES_KIB, "y": y, "name": name, "mode": "lines", "line": {"dash": dash}}
        )
    mark = mark_kib * KIB  # KiB -> bytes
    r2ts = len(iscsi.bursts(mark, slid))
    what = {
        "no R2T": "no R2T",
        "one window": f"{r2ts} R2T{'s' if r2ts > 1 else ''}, all at once",
        "window": f"{r2ts} R2Ts, paced by the window",
        "link": f"{r2ts} R2Ts, paced by the link",
    }[iscsi.pace(mark, rtt, link, slid)]
    clipped = " (first burst cut to the burst)" if first < first_kib else ""
    return {
        "traces": traces,
        "title": f"{mark_kib} KiB write: {what}{clipped}",
    }


#: The chapter's figure of the sliding window.
R2T_WINDOW = Live(
    "ch12-r2t-window",
    write_latency,
    controls=[
        Range("rtt_ms", "round trip (ms)", 0.01, 500, grid=[0.1, 10.0], value=0.1, log=True),
        Range(
            "link_mbps", "link (Mb/s)", 1, 100000, grid=[1000.0, 10000.0], value=1000.0, log=True
        ),
        Range(
            "window",
            "MaxOutstandingR2T",
            1,
            64,
            grid=[1, 4, 16],
            value=4,
            integer=True,
            log=True,
        ),
        Range(
            "burst_kib",
            "MaxBurstLength (KiB)",
            1,
            16383,
            grid=[8, 256],
            value=8,
            integer=True,
            log=True,
        ),
        Range(
            "first_kib",
            "FirstBurstLength (KiB)",
            1,
            16383,
            grid=[8, 64],
            value=8,
            integer=True,
            log=True,
        ),
        Select("initial_r2t", "InitialR2T", ["Yes", "No"], "Yes"),
        Select("immediate_data", "ImmediateData", ["Yes", "No"], "No"),
    ],
    fixed={"mark_kib": 1024},
    layout=legend_below(
        {
            "xaxis": {"title": {"text": "write size (KiB)"}, "type": "log"},
            "yaxis": {"title": {"text": "latency (ms)"}, "type": "log"},
            "margin": {"t": 40, "r": 10, "b": 45, "l": 60},
        }
    ),
    caption=(
        "models.iscsi.command_latency_s for one write alone on an idle path (MTU 1500, 8 KiB "
        "Data-Out PDUs), with MaxOutstandingR2T as a sliding window, beside one R2T at a time "
        "and a read. 192 points (round trip x link x the five keys) were computed when the book "
        "was built."
    ),
)

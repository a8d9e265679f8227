"""Chapter 12 figures: one iSCSI command drawn as a ladder of legs, and
the throughput bound against QD, live in the book (standard library only:
it runs in the browser)."""

from __future__ import annotations

from collections.abc import Sequence

from figures.live import Live, Range
from figures.live.page import legend_below
from models import iscsi

__all__ = ["draw_exchange", "exchange_bounds", "EXCHANGE"]

KIB = 1024  # bytes


def draw_exchange(ax, legs: Sequence, title: str = "", rows: int | None = None) -> None:
    """Draw legs (from :func:`models.iscsi.exchange`) as slanted arrows.

    Time runs down; the initiator is on the left, the target on the right.
    Each leg is one arrow labelled with its ``kind``; a leg leaves only
    after the previous one has arrived, which is what the drawing shows.
    ``rows`` fixes the vertical scale (legs of room), so that panels side
    by side share it.
    """
    x = {"C>S": (0.0, 1.0), "S>C": (1.0, 0.0)}
    y = 0.0
    for leg in legs:
        x0, x1 = x[leg.direction]
        ax.annotate(
            "",
            xy=(x1, y - 1),
            xytext=(x0, y),
            arrowprops=dict(arrowstyle="->", lw=1.2, color="C0" if x0 == 0 else "C1"),
        )
        ax.text(
            0.5,
            y - 0.5,
            leg.kind,
            ha="center",
            va="bottom",
            fontsize=8,
            rotation=0,
            bbox=dict(boxstyle="round,pad=0.15", fc="white", lw=0),
        )
        y -= 1.25
    for xs, name in ((0.0, "initiator"), (1.0, "target")):
        ax.plot([xs, xs], [0.3, y + 0.25], color="k", lw=1)
        ax.text(xs, 0.45, name, ha="center", va="bottom", fontsize=9)
    ax.set_xlim(-0.25, 1.25)
    depth = -1.25 * max(len(legs), rows or 0)
    ax.set_ylim(min(y, depth), 1.0)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)


def exchange_bounds(rtt_ms: float, size_kib: int, link_mbps: float, max_qd: int = 32) -> dict:
    """Throughput bound of writes and reads against QD 1..``max_qd``.

    :func:`models.iscsi.throughput_bound_Bps` for the open-iscsi + IET
    session, with the target's ``InitialR2T=Yes`` and with ``No``, for a
    round trip of ``rtt_ms`` ms, commands of ``size_kib`` KiB and a link
    of ``link_mbps`` Mb/s (MTU 1500).  The title gives the round trips a
    write needs with each.
    """
    if isinstance(max_qd, bool) or not isinstance(max_qd, int) or max_qd < 1:
        raise ValueError(f"max_qd must be a whole number >= 1, got {max_qd!r}")
    pair = iscsi.negotiate(iscsi.OPEN_ISCSI_DEFAULTS, iscsi.IET_DEFAULTS)
    free = iscsi.negotiate(iscsi.OPEN_ISCSI_DEFAULTS, {**iscsi.IET_DEFAULTS, "InitialR2T": False})
    qds = list(range(1, max_qd + 1))
    rtt = rtt_ms * 1e-3  # ms -> s
    link = link_mbps * 1e6  # Mb/s -> bit/s
    n = size_kib * KIB  # KiB -> bytes
    traces = []
    for name, op, s, dash in (
        ("write, InitialR2T=Yes", "write", pair, "solid"),
        ("write, InitialR2T=No", "write", free, "dash"),
        ("read", "read", pair, "dot"),
    ):
        y = [
            iscsi.throughput_bound_Bps(op, n, rtt, link, q, s) / 1e6 for q in qds
        ]  # bytes/s -> MB/s
        traces.append({"x": qds, "y": y, "name": name, "mode": "lines", "line": {"dash": dash}})
    rt = (iscsi.round_trips("write", n, pair), iscsi.round_trips("write", n, free))
    return {
        "traces": traces,
        "title": f"write round trips: {rt[0]} (InitialR2T=Yes), {rt[1]} (No)",
    }


#: The chapter's main figure.
EXCHANGE = Live(
    "ch12-exchange",
    exchange_bounds,
    controls=[
        Range(
            "rtt_ms",
            "round trip (ms)",
            0.01,
            500,
            grid=[0.1, 1.0, 10.0, 50.0, 150.0],
            value=50.0,
            log=True,
        ),
        Range(
            "size_kib",
            "size (KiB)",
            1,
            4096,
            grid=[4, 16, 64, 256, 1024],
            value=64,
            integer=True,
            log=True,
        ),
        Range(
            "link_mbps",
            "link (Mb/s)",
            1,
            100000,
            grid=[45.0, 1000.0, 10000.0],
            value=45.0,
            log=True,
        ),
    ],
    fixed={"max_qd": 32},
    layout=legend_below(
        {
            "xaxis": {"title": {"text": "commands in flight (QD)"}},
            "yaxis": {"title": {"text": "bound (MB/s)"}, "rangemode": "tozero"},
            "margin": {"t": 40, "r": 10, "b": 45, "l": 60},
        }
    ),
    caption=(
        "The bound of models.iscsi.throughput_bound_Bps, open-iscsi "
        "offers against IET (MTU 1500), at QD 1-32. 75 points "
        "(round trip x size x link) were computed when the book was "
        "built."
    ),
)

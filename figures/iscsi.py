"""Chapter 12 figure: one iSCSI command drawn as a ladder of legs."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["draw_exchange"]


def draw_exchange(ax, legs: Sequence, title: str = "",
                  rows: int | None = None) -> None:
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
        ax.annotate("", xy=(x1, y - 1), xytext=(x0, y),
                    arrowprops=dict(arrowstyle="->", lw=1.2,
                                    color="C0" if x0 == 0 else "C1"))
        ax.text(0.5, y - 0.5, leg.kind, ha="center", va="bottom",
                fontsize=8, rotation=0,
                bbox=dict(boxstyle="round,pad=0.15", fc="white", lw=0))
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

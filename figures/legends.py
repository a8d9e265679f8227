"""Does a Matplotlib legend cover data?  (Issue 24.)

A static figure is one picture at every page width (the page scales the
image), so whether its legend covers data is a property of the figure, not
of the reader's screen: :func:`legend_overlaps` draws the figure and
compares, in display pixels, the box of every legend with every data point
of every axes (line vertices and the segments between them, scatter
offsets, bars and other patches).  Data the axes clip away does not count,
so a legend placed outside the axes (``bbox_to_anchor``) never covers any.

The live figures' legends, drawn by Plotly in the page, are measured in
the browser at 390 px (``browser_tests/test_legends.py``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["legend_overlaps"]

#: Pixels shaved off each side of a legend's box before testing (its frame
#: is antialiased, and a point on the border is not covered).
_EDGE_PX = 1.0


def _inside(box: Any, x: Any, y: Any) -> Any:
    """Which of the points ``(x, y)`` (display pixels, arrays) lie strictly
    inside ``box`` less :data:`_EDGE_PX` on each side."""
    return (
        (x > box.x0 + _EDGE_PX)
        & (x < box.x1 - _EDGE_PX)
        & (y > box.y0 + _EDGE_PX)
        & (y < box.y1 - _EDGE_PX)
    )


def _segment_points(xy: Any, joined: bool) -> Any:
    """The vertices ``xy`` (display pixels, one row per point, NaN for a
    gap) and, if ``joined``, points every pixel or so along each segment."""
    import numpy as np

    if not joined or len(xy) < 2:
        return xy
    rows = [xy]
    for a, b in zip(xy[:-1], xy[1:]):
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            continue
        n = int(min(np.ceil(np.hypot(*(b - a))), 10_000))  # pixels
        if n > 1:
            t = np.linspace(0.0, 1.0, n + 1)[1:-1, None]
            rows.append(a + (b - a) * t)
    return np.concatenate(rows)


def _data_points(ax: Any) -> list[tuple[str, Any]]:
    """(artist's label, its points in display pixels) for the data of
    ``ax``: lines (vertices and segments), collections (offsets and path
    vertices) and patches (their outline, filled: corners and centre)."""
    import numpy as np

    found = []
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
        joined = line.get_linestyle() not in ("None", "none", "", " ")
        found.append((line.get_label(), _segment_points(xy, joined)))
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        offsets = np.asarray(coll.get_offsets(), dtype=float)
        if len(offsets):
            found.append((coll.get_label(), coll.get_offset_transform().transform(offsets)))
        for path in coll.get_paths():
            verts = coll.get_transform().transform(path.vertices)
            found.append((coll.get_label(), _segment_points(verts, True)))
    # A bar's own label is "_nolegend_": name it by its container's.
    owner = {id(p): c.get_label() for c in ax.containers for p in c if p is not None}
    for patch in ax.patches:
        if not patch.get_visible():
            continue
        verts = patch.get_transform().transform(patch.get_path().vertices)
        if len(verts):
            centre = verts.mean(axis=0, keepdims=True)
            label = owner.get(id(patch), patch.get_label())
            found.append((label, np.concatenate([verts, centre])))
    return found


def legend_overlaps(fig: Any) -> list[str]:
    """What the legends of the Matplotlib figure ``fig`` cover: one line
    per (legend, artist) naming the axes, the artist's label and how many
    of its points lie under the legend's box; empty if none.

    The figure is drawn first (on its own canvas), so its layout
    (``tight_layout``, ``bbox_to_anchor``, ``loc="best"``) is final.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(4, 3))
    >>> _ = ax.plot([0, 1], [1, 1], label="flat at the top")
    >>> _ = ax.plot([0, 1], [0, 0.2], label="low")
    >>> _ = ax.legend(loc="upper left")
    >>> legend_overlaps(fig)  # doctest: +ELLIPSIS
    ['axes 1: legend covers "flat at the top" (... points)']
    >>> _ = ax.legend(loc="center right")
    >>> legend_overlaps(fig)
    []
    >>> plt.close(fig)
    """
    import numpy as np

    canvas = fig.canvas
    if not hasattr(canvas, "get_renderer"):  # shown and closed in a notebook: a bare canvas
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = [(f"axes {n}", ax.get_legend()) for n, ax in enumerate(fig.axes, 1)]
    legends += [("figure", leg) for leg in fig.legends]
    boxes = [
        (where, leg.get_window_extent(renderer))
        for where, leg in legends
        if leg is not None and leg.get_visible()
    ]
    problems = []
    for ax in fig.axes:
        clip = ax.get_window_extent(renderer)
        for label, xy in _data_points(ax):
            xy = np.asarray(xy, dtype=float).reshape(-1, 2)
            keep = np.isfinite(xy).all(axis=1)
            x, y = xy[keep, 0], xy[keep, 1]
            # Clipped away by the axes: not drawn, so not covered.
            shown = (x >= clip.x0) & (x <= clip.x1) & (y >= clip.y0) & (y <= clip.y1)
            x, y = x[shown], y[shown]
            for where, box in boxes:
                hits = int(_inside(box, x, y).sum())
                if hits:
                    problems.append(f'{where}: legend covers "{label}" ({hits} points)')
    return problems

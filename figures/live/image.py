"""A live figure's data drawn with Matplotlib, for a static image (the
printed book, a notebook of your own): :meth:`figures.live.LiveFigure.plot`
calls :func:`draw`.

This module imports Matplotlib only inside :func:`draw`, so it imports in
the browser too, where it is never called.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["draw"]

_DASH = {"dash": "--", "dot": ":", "dashdot": "-.", "solid": "-"}


def _plot_trace(ax, trace: Mapping[str, Any], n: int) -> None:
    """One Plotly scatter trace on Matplotlib axes."""
    x = [v if v is not None else math.nan for v in trace.get("x", [])]
    y = [v if v is not None else math.nan for v in trace.get("y", [])]
    mode = trace.get("mode", "lines+markers")
    line = trace.get("line", {})
    kw: dict[str, Any] = {
        "label": trace.get("name"),
        "color": line.get("color", trace.get("marker", {}).get("color", f"C{n}")),
    }
    if "lines" in mode:
        kw.update(ls=_DASH.get(line.get("dash", "solid"), "-"), lw=line.get("width", 1.5))
    else:
        kw.update(ls="none")
    if "markers" in mode:
        kw.update(marker="o", ms=3 if "lines" in mode else 6)
    if line.get("shape") == "hv":
        kw.update(drawstyle="steps-post")
    ax.plot(x, y, **kw)


def _set_axes(ax, layout: Mapping[str, Any]) -> None:
    """Axis titles, log scales and ranges of a Plotly ``layout``."""
    for axis, setter in (("xaxis", ax.set_xlabel), ("yaxis", ax.set_ylabel)):
        spec = layout.get(axis, {})
        title = spec.get("title", {})
        setter(title.get("text", "") if isinstance(title, dict) else title)
        if spec.get("type") == "log":
            (ax.set_xscale if axis == "xaxis" else ax.set_yscale)("log")
        rng = spec.get("range")
        if rng and spec.get("type") != "log":
            (ax.set_xlim if axis == "xaxis" else ax.set_ylim)(*rng)
    if layout.get("yaxis", {}).get("rangemode") == "tozero":
        ax.set_ylim(bottom=0)


def draw(frame: Mapping[str, Any], layout: Mapping[str, Any], ax=None):
    """Draw one figure result (``{"traces", "shapes", "title"}``) with its
    Plotly ``layout`` on Matplotlib axes (new ones if ``ax`` is ``None``).

    Lines, markers, dashes, steps, line shapes, the title and the axis
    titles, scales and ranges are drawn; returns the axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    for n, trace in enumerate(frame["traces"]):
        _plot_trace(ax, trace, n)
    for shape in frame.get("shapes", []):
        if shape.get("type", "line") == "line":
            ax.plot(
                [shape["x0"], shape["x1"]],
                [shape["y0"], shape["y1"]],
                color=shape.get("line", {}).get("color", "grey"),
                lw=1,
            )
    layout = {**layout, **{k: frame[k] for k in ("title",) if k in frame}}
    _set_axes(ax, layout)
    title = layout.get("title")
    if title:
        ax.set_title(title["text"] if isinstance(title, dict) else title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax

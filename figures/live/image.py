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
    """One Plotly scatter trace on Matplotlib axes (a ``text`` trace is
    skipped: its labels annotate the live figure only)."""
    mode = trace.get("mode", "lines+markers")
    if mode == "text":
        return
    x = [v if v is not None else math.nan for v in trace.get("x", [])]
    y = [v if v is not None else math.nan for v in trace.get("y", [])]
    line = trace.get("line", {})
    marker = trace.get("marker", {})
    label = trace.get("name") if trace.get("showlegend", True) else None
    colour = line.get("color", marker.get("color", f"C{n}"))
    if isinstance(colour, list):  # one colour per point: markers only
        ax.scatter(x, y, c=colour, s=24, label=label, zorder=3)
        return
    kw: dict[str, Any] = {"label": label, "color": colour}
    if "lines" in mode:
        kw.update(ls=_DASH.get(line.get("dash", "solid"), "-"), lw=line.get("width", 1.5))
    else:
        kw.update(ls="none")
    if "markers" in mode:
        kw.update(marker="o", ms=3 if "lines" in mode else 6)
        if str(marker.get("symbol", "")).endswith("-open"):
            kw.update(mfc="none")
    if line.get("shape") == "hv":
        kw.update(drawstyle="steps-post")
    ax.plot(x, y, **kw)


def _stacked_axes(layout: Mapping[str, Any]):
    """A figure with one Matplotlib axes per Plotly y axis, placed by each
    axis's ``domain`` (a fraction of the plot's height) and sharing x:
    ``({"y": ax, "y2": ax2, ...}, figure)``."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(7, 3.8 if "yaxis2" not in layout else 5))
    left, bottom, width, height = 0.1, 0.2, 0.86, 0.72  # figure fractions
    axes: dict[str, Any] = {}
    keys = sorted(k for k in layout if k.startswith("yaxis")) or ["yaxis"]
    for key in keys:
        lo, hi = layout.get(key, {}).get("domain", [0.0, 1.0])
        rect = (left, bottom + lo * height, width, (hi - lo) * height)
        axes["y" + key[len("yaxis") :]] = fig.add_axes(rect, sharex=axes.get("y"))
    return axes, fig


def _legend(ax, axes: Mapping[str, Any], layout: Mapping[str, Any]) -> None:
    """One legend for every axes' labelled lines: below the plot when the
    layout puts it there (``page.legend_below``), else Matplotlib's best
    place inside."""
    handles, labels = [], []
    for a in axes.values():
        h, lab = a.get_legend_handles_labels()
        handles += h
        labels += lab
    if not handles:
        return
    if layout.get("legend", {}).get("orientation") == "h":
        low = min(axes.values(), key=lambda a: a.get_position().y0)
        # 36 points under the axes, clear of the tick labels and x title
        height_pt = low.get_position().height * low.figure.get_figheight() * 72  # inch -> pt
        low.legend(
            handles,
            labels,
            fontsize=8,
            loc="upper center",
            bbox_to_anchor=(0.5, -36 / height_pt),  # axes fraction
            ncol=min(3, len(handles)),
            frameon=False,
        )
    else:
        ax.legend(handles, labels, fontsize=8)


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
    Plotly ``layout`` on Matplotlib axes (new ones if ``ax`` is ``None``:
    one per y axis of the layout, stacked by their domains).

    Lines, markers (one colour each, or a colour per point), dashes,
    steps, line shapes, the title, the axis titles, scales and ranges, and
    the legend's place (inside, or below the plot) are drawn; returns the
    top axes.
    """
    if ax is None:
        axes, _fig = _stacked_axes(layout)
    else:
        axes = {"y": ax}
    top = max(axes.values(), key=lambda a: a.get_position().y1)
    for n, trace in enumerate(frame["traces"]):
        _plot_trace(axes.get(trace.get("yaxis", "y"), top), trace, n)
    for shape in frame.get("shapes", []):
        if shape.get("type", "line") == "line":
            target = axes.get(str(shape.get("yref", "y")).split(" ")[0], top)
            target.plot(
                [shape["x0"], shape["x1"]],
                [shape["y0"], shape["y1"]],
                color=shape.get("line", {}).get("color", "grey"),
                lw=1,
            )
    layout = {**layout, **{k: frame[k] for k in ("title",) if k in frame}}
    for key, a in axes.items():
        yaxis = "yaxis" + key[1:]
        _set_axes(a, {"xaxis": layout.get("xaxis", {}), "yaxis": layout.get(yaxis, {})})
        a.grid(alpha=0.3)
        if a is not min(axes.values(), key=lambda b: b.get_position().y0):
            a.tick_params(labelbottom=False)  # x labels on the lowest plot only
            a.set_xlabel("")
    title = layout.get("title")
    if title:
        top.set_title(title["text"] if isinstance(title, dict) else title, fontsize=10)
    _legend(top, axes, layout)
    return top

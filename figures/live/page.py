"""What a live figure puts in the page: an HTML fragment holding the plot's
placeholder, the controls, the caption and the figure's JSON, which the
book's ``static/qd/live.js`` finds and draws with Plotly.js; and the Plotly
layout and trace that the IOPS-against-queue-depth figures share.

The fragment, for a figure ``fid``::

    <div class="qd-live-figure" id="fid" data-mode="static"
         data-grid-points="N" data-live="module:function">
      <div class="qd-live-plot" id="fid-plot">(placeholder text)</div>
      <div class="qd-live-controls">one .qd-live-control per control</div>
      <div class="qd-live-caption">caption, .qd-live-status</div>
      <script type="application/json" id="fid-data">(the JSON)</script>
    </div>

``live.js`` reads ``data-mode="static"`` as "not drawn yet", draws the
default frame, sets ``data-mode`` to ``grid``, ``live`` or ``fallback``, and
fills the status line.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "figure_html",
    "iops_qd_layout",
    "iops_bound_trace",
    "LEGEND_BELOW",
    "legend_below",
]

#: Shown where the plot goes until ``live.js`` draws it (in a notebook it
#: stays).
PLACEHOLDER = (
    "This figure is drawn by the book's HTML pages, which serve Plotly.js "
    "and the live Python themselves; in a notebook, call its function or "
    "use its .plot() method."
)


def _control_html(fig_id: str, n: int, c: Mapping[str, Any]) -> str:
    """One control (as :meth:`figures.live.Range.to_json` describes it)."""
    label = html.escape(c["label"])
    cid = f"{fig_id}-c{n}"
    if c["kind"] == "select":
        options = "".join(
            f'<option value="{i}"'
            f"{' selected' if o == c['value'] else ''}>"
            f"{html.escape(str(o))}</option>"
            for i, o in enumerate(c["grid"])
        )
        widget = f'<select id="{cid}" aria-label="{label}">{options}</select>'
    else:
        # A range: the slider (set up by live.js, which knows the log
        # scale) and a number box; a number: the box alone.
        slider = c["kind"] == "range"
        box_id = f"{cid}-box" if slider else cid
        widget = f'<input type="range" id="{cid}" aria-label="{label}">' if slider else ""
        widget += (
            f'<input type="number" class="qd-live-number" '
            f'id="{box_id}" min="{c["min"]}" max="{c["max"]}" '
            f'step="{1 if c["integer"] else "any"}" '
            f'value="{c["value"]}" aria-label="{label}">'
            f'<span class="qd-live-range">{c["min"]:g}–'
            f"{c['max']:g}</span>"
        )
    return (
        f'<div class="qd-live-control" data-kind="{c["kind"]}"'
        f' data-name="{html.escape(c["name"])}">'
        f'<label for="{cid}">{label}</label>{widget}</div>'
    )


def figure_html(
    fig_id: str, payload: Mapping[str, Any], grid_size: int, caption: str, function: str
) -> str:
    """The HTML fragment of a figure.

    ``payload`` is the page's JSON (:meth:`figures.live.LiveFigure.payload`:
    the spec, the frames, the layout, the default frame's key),
    ``grid_size`` the number of frames, ``function`` the
    ``"module:function"`` the browser runs.
    """
    data = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    # "</" cannot end the script element early inside JSON strings.
    data = data.replace("</", "<\\/")
    controls = "".join(_control_html(fig_id, n, c) for n, c in enumerate(payload["controls"]))
    # The plot's box is as tall as its layout asks (pixels; 420 by
    # default): a taller drawing would spill over the controls.
    height = payload.get("layout", {}).get("height", 420)
    text = f'<span class="qd-live-text">{html.escape(caption)}</span> ' if caption else ""
    return (
        f'<div class="qd-live-figure" id="{fig_id}" data-mode="static"'
        f' data-grid-points="{grid_size}" data-live="{html.escape(function)}">\n'
        f'<div class="qd-live-plot" id="{fig_id}-plot" style="width:100%;'
        f'max-width:760px;height:{height:g}px">{PLACEHOLDER}</div>\n'
        f'<div class="qd-live-controls">{controls}</div>\n'
        f'<div class="qd-live-caption">{text}'
        '<span class="qd-live-status" role="status"></span></div>\n'
        f'<script type="application/json" id="{fig_id}-data">{data}'
        "</script>\n</div>"
    )


#: A horizontal legend at the bottom of the figure, under the x axis: its
#: entries wrap to the figure's width, and Plotly reserves its height in the
#: bottom margin (``yref="container"``), so at no width, a phone's 390 px
#: included, does it cover data (``browser_tests/test_legends.py``).
LEGEND_BELOW: dict[str, Any] = {
    "orientation": "h",
    "x": 0,
    "xanchor": "left",
    "yref": "container",
    "y": 0,
    "yanchor": "bottom",
    "font": {"size": 11},
}


def legend_below(layout: Mapping[str, Any]) -> dict:
    """``layout`` (a Plotly layout) with :data:`LEGEND_BELOW` for its
    legend and room for every x axis's tick labels and title above it
    (``automargin``: without it the legend's reserved margin replaces
    theirs).

    >>> out = legend_below({"xaxis": {"title": {"text": "QD"}}})
    >>> out["xaxis"]["automargin"], out["legend"]["orientation"]
    (True, 'h')
    """
    out = {k: v for k, v in layout.items() if k != "legend"}
    for key, axis in layout.items():
        if key.startswith("xaxis"):
            out[key] = {**axis, "automargin": True}
    out.setdefault("xaxis", {"automargin": True})
    out["legend"] = json.loads(json.dumps(LEGEND_BELOW))  # a fresh copy
    return out


def iops_qd_layout(max_qd: float) -> dict:
    """The Plotly layout shared by the book's IOPS-against-queue-depth
    figures (y in thousand IOPS), with the legend under the plot."""
    return legend_below(
        {
            "xaxis": {"title": {"text": "queue depth QD"}, "range": [0, max_qd]},
            "yaxis": {"title": {"text": "thousand IOPS"}, "rangemode": "tozero"},
            "margin": {"t": 40, "r": 10, "b": 45, "l": 55},
        }
    )


def iops_bound_trace(qds: list, iops: list, dash: str = "dash") -> dict:
    """The operational bound ``min(QD/RTTmin, 1/TPTmin)`` at queue depths
    ``qds`` (``iops`` in the figure's unit) as a thin black Plotly line,
    ``dash`` ``"dash"`` or ``"dot"``."""
    return {
        "x": qds,
        "y": iops,
        "name": "bound min(QD/RTTmin, 1/TPTmin)",
        "mode": "lines",
        "line": {"dash": dash, "color": "black", "width": 1},
    }

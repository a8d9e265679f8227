"""Figures that stay interactive in the static HTML book, with no Python kernel.

At build time the real model is evaluated at every point of a small parameter grid; the results are
embedded in the page as JSON, and a few lines of JavaScript redraw a Plotly chart when a slider (an HTML
range input) moves.  Nothing is approximated in the browser: every curve a reader can select was computed
by the Python models.  Plotly.js is served by the book itself (``static/plotly/plotly.min.js``, copied by
``make assets`` and loaded on every page through ``html_js_files``).

Usage::

    fig = LiveFigure("ch3-iops", axes={"IOSIZE": [512, 4096], "SP (µs)": [10, 20]}, compute=f,
                     layout={"xaxis": {"title": "QD"}})
    fig.show()

``compute(**params)`` returns a dict with ``"traces"``: a list of Plotly trace dicts (``x``, ``y``,
``name``, optional ``mode``/``line``), and optionally ``"shapes"``: Plotly layout shapes (vertical lines).
"""

from __future__ import annotations

import html
import itertools
import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["LiveFigure", "iops_qd_layout"]

_ID = re.compile(r"^[a-z][a-z0-9-]*$")


def _round(obj: Any, digits: int) -> Any:
    """Round floats to ``digits`` significant digits to keep the embedded JSON small."""
    if isinstance(obj, float):
        if not math.isfinite(obj) or obj == 0:
            return obj if math.isfinite(obj) else None
        return float(f"{obj:.{digits}g}")
    if isinstance(obj, Mapping):
        return {k: _round(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_round(v, digits) for v in obj]
    if hasattr(obj, "tolist"):
        return _round(obj.tolist(), digits)
    return obj


class LiveFigure:
    """A precomputed, slider-driven Plotly figure for the static book.

    Parameters
    ----------
    fig_id : str
        Unique id on the page (lower case, digits and dashes).
    axes : mapping of str to sequence
        Slider name to the grid values it can take, in order.
    compute : callable
        ``compute(**{name: value})`` for one grid point; returns ``{"traces": [...], "shapes": [...]}``.
        Parameter names are the keys of ``arg_names`` (default: the axis names).
    layout : dict
        Plotly layout shared by every grid point.
    defaults : mapping, optional
        The starting value of each slider (default: the middle of each axis).
    arg_names : mapping, optional
        Axis name to keyword name for ``compute`` when the slider labels are not identifiers.
    digits : int
        Significant digits kept in the embedded data.
    """

    def __init__(self, fig_id: str, axes: Mapping[str, Sequence[Any]], compute: Callable[..., dict],
                 layout: Mapping[str, Any] | None = None, defaults: Mapping[str, Any] | None = None,
                 arg_names: Mapping[str, str] | None = None, digits: int = 5, caption: str = ""):
        if not _ID.match(fig_id):
            raise ValueError(f"fig_id must match {_ID.pattern}, got {fig_id!r}")
        if not axes:
            raise ValueError("axes must name at least one slider")
        for name, values in axes.items():
            if len(values) < 2:
                raise ValueError(f"axes[{name!r}] needs at least two grid values, got {list(values)!r}")
        self.fig_id = fig_id
        self.axes = {k: list(v) for k, v in axes.items()}
        self.arg_names = dict(arg_names or {k: k for k in axes})
        missing = set(self.axes) - set(self.arg_names)
        if missing:
            raise ValueError(f"arg_names: no keyword for axes {sorted(missing)}")
        self.layout = dict(layout or {})
        defaults = dict(defaults or {})
        self.defaults = {}
        for k, v in self.axes.items():
            d = defaults.get(k, v[len(v) // 2])
            if d not in v:
                raise ValueError(f"defaults[{k!r}] = {d!r} is not on the grid {v!r}")
            self.defaults[k] = v.index(d)
        self.digits = digits
        self.caption = caption
        t0 = time.perf_counter()
        self.frames: dict[str, dict] = {}
        for idx in itertools.product(*(range(len(v)) for v in self.axes.values())):
            params = {self.arg_names[k]: self.axes[k][i] for k, i in zip(self.axes, idx)}
            result = compute(**params)
            if "traces" not in result:
                raise ValueError("compute must return a dict with a 'traces' list")
            self.frames[",".join(map(str, idx))] = _round(dict(result), digits)
        self.compute_seconds = time.perf_counter() - t0

    @property
    def grid_size(self) -> int:
        """Number of precomputed grid points."""
        return len(self.frames)

    def frame(self, **values: Any) -> dict:
        """The precomputed frame for slider values (axis name to grid value)."""
        idx = [self.axes[k].index(values.get(k, self.axes[k][self.defaults[k]])) for k in self.axes]
        return self.frames[",".join(map(str, idx))]

    def to_html(self) -> str:
        """The figure as a self-contained HTML fragment (needs ``window.Plotly`` on the page)."""
        fid = self.fig_id
        sliders = []
        for n, (name, values) in enumerate(self.axes.items()):
            label = html.escape(name)
            sliders.append(
                f'<label class="qd-live-slider" style="display:flex;gap:.6em;align-items:center;margin:.15em 0">'
                f'<span style="min-width:11em">{label}</span>'
                f'<input type="range" min="0" max="{len(values) - 1}" step="1" value="{self.defaults[name]}" '
                f'data-axis="{n}" aria-label="{label}" style="width:16em">'
                f'<output style="min-width:5em;font-family:monospace"></output></label>')
        payload = {"axes": [[str(v) for v in vals] for vals in self.axes.values()],
                   "frames": self.frames, "layout": self.layout}
        data = json.dumps(payload, separators=(",", ":"), allow_nan=False)
        caption = f'<div class="qd-live-caption" style="font-size:.85em;color:#555">{html.escape(self.caption)}</div>' \
            if self.caption else ""
        return f"""<div class="qd-live-figure" id="{fid}" data-grid-points="{self.grid_size}">
<div class="qd-live-plot" id="{fid}-plot" style="width:100%;max-width:760px;height:420px"></div>
<div class="qd-live-controls">{''.join(sliders)}</div>{caption}
<script type="application/json" id="{fid}-data">{data}</script>
<script>
(function() {{
  var root = document.getElementById("{fid}");
  var spec = JSON.parse(document.getElementById("{fid}-data").textContent);
  var inputs = root.querySelectorAll("input[type=range]");
  function draw() {{
    var idx = [];
    inputs.forEach(function(el, i) {{
      idx.push(el.value);
      el.parentNode.querySelector("output").textContent = spec.axes[i][+el.value];
    }});
    var frame = spec.frames[idx.join(",")];
    var layout = Object.assign({{}}, spec.layout, {{shapes: frame.shapes || []}});
    if (frame.title) {{ layout.title = {{text: frame.title}}; }}
    root.setAttribute("data-frame", idx.join(","));
    if (window.Plotly) {{
      window.Plotly.react("{fid}-plot", frame.traces, layout, {{responsive: true, displaylogo: false, displayModeBar: false}});
    }} else {{
      document.getElementById("{fid}-plot").textContent =
        "This figure is drawn by the book's HTML pages (Plotly.js is served there); in a notebook use the explorer below.";
    }}
  }}
  inputs.forEach(function(el) {{ el.addEventListener("input", draw); }});
  if (document.readyState === "loading") {{ document.addEventListener("DOMContentLoaded", draw); }} else {{ draw(); }}
}})();
</script>
</div>"""

    def _repr_html_(self) -> str:
        return self.to_html()

    def show(self):
        """Display in a notebook (and so in the built page)."""
        from IPython.display import HTML, display
        display(HTML(self.to_html()))


def iops_qd_layout(max_qd: float, legend_x: float = 0.5) -> dict:
    """The Plotly layout shared by the book's IOPS-against-queue-depth figures (y in thousand IOPS)."""
    return {"xaxis": {"title": {"text": "queue depth QD"}, "range": [0, max_qd]},
            "yaxis": {"title": {"text": "thousand IOPS"}, "rangemode": "tozero"},
            "legend": {"x": legend_x, "y": 0.05, "font": {"size": 11}},
            "margin": {"t": 40, "r": 10, "b": 45, "l": 55}}

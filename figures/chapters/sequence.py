"""Chapter 5 figure: one operation of the two-call response as a time-sequence diagram, live in
the book (standard library only: it runs in the browser).

The diagram is drawn from the packet simulator's traces at both hosts
(:func:`figures.sequence.diagram`): client on the left, server on the right, time down, one arrow
per segment.  A reader moves the data size across the MSS and picks a fix, and sees the stall
(a delayed ACK releasing the data Nagle held), its absence, and one byte more than a segment
costing an extra round trip.
"""

from __future__ import annotations

from figures.live import Live, Range, Select
from figures.live.page import legend_below
from figures.sequence import diagram
from models import framing
from models.sim import Scenario

__all__ = ["FIXES", "two_call_sequence", "TWO_CALL_SEQUENCE"]

#: The fixes a reader can pick, and the server socket options each one sets.
FIXES = {
    "none (Nagle)": {},
    "TCP_NODELAY": {"nodelay": True},
    "MSG_MORE on the header": {"msg_more": True},
}
_COLOURS = {"C > S": "#1f77b4", "S > C": "#d95f02", "ack": "#777777"}
_MS = 1e3  # s -> ms
#: Idle stretches longer than this are drawn shortened, s.
_MAX_GAP_S = 1e-3
_GAP_HEIGHT_S = 150e-6


def _operation(header: int, data: int, fix: str) -> dict:
    """The third operation of a short run, from its request to the next request, as
    :func:`figures.sequence.sequence_arrows` data."""
    sc = Scenario(workload={"response_writes": (header, data)}, server=FIXES[fix], run={"ops": 4})
    d = diagram(sc, first_request=2, max_gap_s=_MAX_GAP_S, gap_height_s=_GAP_HEIGHT_S)
    arrows = d["arrows"]
    # keep up to and including the next request
    nxt = next(i for i, a in enumerate(arrows) if i and a["direction"] == "C > S" and a["length"])
    return {**d, "arrows": arrows[: nxt + 1], "y_max": arrows[nxt]["y1"]}


def _fmt(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if s < 1e-3 else f"{s * 1e3:.1f} ms"  # s -> µs, ms


def two_call_sequence(data: int, fix: str, header: int = 48) -> dict:
    """One operation of a response written as ``header`` then ``data`` bytes (two ``send()``
    calls) with one of :data:`FIXES`, as Plotly traces: segments as lines from the sender's
    timeline to the receiver's (the y axis is the time since the request in ms, long idle
    stretches shortened to grey bands), arrowheads, labels and a ring where a segment left the
    instant an ACK arrived."""
    if fix not in FIXES:
        raise ValueError(f"fix must be one of {list(FIXES)}, got {fix!r}")
    d = _operation(int(header), int(data), fix)
    arrows = d["arrows"]
    lines: dict[str, dict] = {k: {"x": [], "y": []} for k in ("C > S", "S > C", "ack")}
    heads: dict[str, list] = {"x": [], "y": [], "symbol": [], "color": []}
    labels: dict[str, list] = {"x": [], "y": [], "text": []}
    rings: dict[str, list] = {"x": [], "y": []}
    for a in arrows:
        c2s = a["direction"] == "C > S"
        x0, x1 = (0.0, 1.0) if c2s else (1.0, 0.0)
        y0, y1 = a["y0"] * _MS, a["y1"] * _MS
        kind = a["direction"] if a["length"] else "ack"
        lines[kind]["x"] += [x0, x1, None]
        lines[kind]["y"] += [y0, y1, None]
        heads["x"].append(x1)
        heads["y"].append(y1)
        heads["symbol"].append("triangle-right" if c2s else "triangle-left")
        heads["color"].append(_COLOURS[kind])
        f = 0.3 if c2s else 0.7  # labels near the sender
        text = a["label"]
        if a["ack_delay_s"] and a["ack_delay_s"] > 1e-3:
            text += f" (delayed {_fmt(a['ack_delay_s'])})"
        labels["x"].append(x0 + f * (x1 - x0) if c2s else x1 + f * (x0 - x1))
        labels["y"].append(y0 + 0.3 * (y1 - y0))
        labels["text"].append(text)
        if a["released_by_ack"]:
            rings["x"].append(x0)
            rings["y"].append(y0)
    names = {"C > S": "request data", "S > C": "response data", "ack": "pure ACK"}
    traces = [
        {
            "x": lines[k]["x"],
            "y": lines[k]["y"],
            "name": names[k],
            "mode": "lines",
            "line": {"color": _COLOURS[k], "width": 2 if k != "ack" else 1.5}
            | ({"dash": "dash"} if k == "ack" else {}),
            "hoverinfo": "skip",
        }
        for k in lines
    ]
    traces += [
        {
            "x": heads["x"],
            "y": heads["y"],
            "name": "arrowheads",
            "mode": "markers",
            "marker": {"symbol": heads["symbol"], "color": heads["color"], "size": 9},
            "showlegend": False,
            "hoverinfo": "skip",
        },
        {
            "x": rings["x"],
            "y": rings["y"],
            "name": "sent the instant an ACK arrived",
            "mode": "markers",
            "marker": {
                "symbol": "circle-open",
                "color": "#7b3294",
                "size": 12,
                "line": {"width": 2},
            },
        },
        {
            "x": labels["x"],
            "y": labels["y"],
            "name": "labels",
            "mode": "text",
            "text": labels["text"],
            "textposition": "middle center",
            "textfont": {"size": 11},
            "showlegend": False,
            "hoverinfo": "skip",
        },
    ]
    y_max = d["y_max"] * _MS
    shapes = [
        {
            "type": "line",
            "x0": x,
            "x1": x,
            "y0": 0.0,
            "y1": y_max,
            "line": {"color": "#444444", "width": 1.5},
        }
        for x in (0.0, 1.0)
    ]
    gap_text: dict[str, list] = {"x": [], "y": [], "text": []}
    for b in d["breaks"]:
        y0, y1 = b["y"] * _MS, (b["y"] + b["height"]) * _MS
        shapes.append(
            {
                "type": "rect",
                "x0": 0.0,
                "x1": 1.0,
                "y0": y0,
                "y1": y1,
                "fillcolor": "#e8e8e8",
                "line": {"width": 0},
                "layer": "below",
            }
        )
        gap_text["x"].append(0.5)
        gap_text["y"].append((y0 + y1) / 2)
        gap_text["text"].append(f"{_fmt(b['seconds'])}: nothing on the wire")
    if gap_text["x"]:
        traces.append(
            {
                **gap_text,
                "name": "idle stretches",
                "mode": "text",
                "textfont": {"size": 11, "color": "#555555"},
                "showlegend": False,
                "hoverinfo": "skip",
            }
        )
    # the operation: from the request to the last response byte at the client
    last = max(a["received_s"] for a in arrows if a["direction"] == "S > C" and a["length"])
    took = last - arrows[0]["sent_s"]
    return {
        "traces": traces,
        "shapes": shapes,
        "title": f"{header} + {data} bytes, {fix}: the operation takes {_fmt(took)}",
    }


_MSS = framing.mss(1500)  # bytes: the default link's MTU 1500

#: The figure: one operation of chapter 5's two-call response, across the MSS.
TWO_CALL_SEQUENCE = Live(
    "ch5-sequence",
    two_call_sequence,
    controls=[
        Range(
            "data",
            "data (bytes)",
            1,
            4096,
            grid=[512, _MSS - 1, _MSS, _MSS + 1],
            value=512,
            integer=True,
        ),
        Select("fix", "fix", list(FIXES), "none (Nagle)"),
    ],
    fixed={"header": 48},
    layout=legend_below(
        {
            "xaxis": {
                "range": [-0.2, 1.2],
                "tickvals": [0, 1],
                "ticktext": ["client", "server"],
                "side": "top",
                "showgrid": False,
                "zeroline": False,
            },
            "yaxis": {
                "title": {"text": "time since the request (ms; grey bands shortened)"},
                "autorange": "reversed",
                "zeroline": False,
            },
            "margin": {"t": 60, "r": 10, "b": 40, "l": 60},
            "height": 520,
        }
    ),
    digits=6,
    caption=(
        "One operation of a 512-byte read answered with two send() calls, as both hosts see it: "
        "a packet simulation (models.sim, linux-6 profile, 1 Gb/s, MTU 1500, so MSS "
        f"{_MSS} bytes) traced at the client and at the server, the third operation of a short "
        "run. The grid holds 12 points (four data sizes either side of the MSS x three fixes); "
        "any other size runs the simulator in your browser."
    ),
)

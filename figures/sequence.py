"""Time-sequence diagrams of one TCP connection, drawn from the packet simulator's traces.

The client's timeline is on the left, the server's on the right, and time runs down.  Each
segment is an arrow from the moment the sender's stack sent it to the moment the receiver's stack
took it in; a pure ACK is a dashed arrow.  Nothing is drawn by hand: the arrows come from two traces
of the same deterministic run (:func:`both_ends`), one taken at each host, paired packet by packet.

* :func:`sequence_arrows` turns the two traces into plain data (standard library only, so a live
  figure can run it in the reader's browser): one dict per arrow with its times, a display
  coordinate in which long idle gaps are shortened, a label, whether the segment left at the
  instant an ACK arrived at its sender (Nagle's hold ended by that ACK) and, for a pure ACK, how
  long after the data it acknowledges it left (a delayed ACK's timer).
* :func:`both_ends` runs a scenario twice, tracing at each host.
* :func:`draw` and :func:`sequence_figure` draw the data with Matplotlib for the static page.

>>> from models.sim import Scenario
>>> d = diagram(Scenario(run={"ops": 3}), first=7, count=3)
>>> [a["label"] for a in d["arrows"]]
['48 B', 'ACK', '512 B']
>>> d["arrows"][1]["ack_delay_s"] > 0.036, d["arrows"][2]["released_by_ack"]
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "FIELDS",
    "sequence_arrows",
    "both_ends",
    "diagram",
    "draw",
    "sequence_figure",
]

#: The fields of a trace record, in the order of :class:`models.sim.TraceRecord`.
FIELDS = ("time", "direction", "flags", "seq", "end", "ack", "length")

#: Two instants closer than this (seconds) are the same event: the simulator keeps integer
#: femtoseconds, and its trace converts them to seconds one at a time.
_SAME_S = 1e-12

_CLIENT_TO_SERVER = "C > S"


def _record(r: Any) -> dict:
    """A trace record (a :class:`models.sim.TraceRecord`, a mapping or a sequence in the order of
    :data:`FIELDS`) as a dict."""
    if isinstance(r, dict):
        return {k: r[k] for k in FIELDS}
    if isinstance(r, Sequence) and not isinstance(r, str):
        if len(r) != len(FIELDS):
            raise ValueError(f"a trace record needs the {len(FIELDS)} fields {FIELDS}, got {r!r}")
        return dict(zip(FIELDS, r))
    return {k: getattr(r, k) for k in FIELDS}


def _key(r: dict) -> tuple:
    return (r["direction"], r["flags"], r["seq"], r["end"], r["ack"], r["length"])


def _pair(client: Iterable, server: Iterable) -> list[dict]:
    """Each packet with its time at both hosts: the n-th occurrence of a packet (direction, flags,
    sequence numbers, ACK, length) in one trace is the n-th in the other.  A packet one trace lacks
    (still in flight when the run ended) is left out."""
    seen: dict[tuple, int] = {}
    at_server: dict[tuple, float] = {}
    for r in map(_record, server):
        k = _key(r)
        n = seen.get(k, 0)
        seen[k] = n + 1
        at_server[(*k, n)] = float(r["time"])
    seen.clear()
    out = []
    for r in map(_record, client):
        k = _key(r)
        n = seen.get(k, 0)
        seen[k] = n + 1
        if (*k, n) not in at_server:
            continue
        t_client, t_server = float(r["time"]), at_server[(*k, n)]
        c2s = r["direction"] == _CLIENT_TO_SERVER
        sent, received = (t_client, t_server) if c2s else (t_server, t_client)
        if received < sent:
            raise ValueError(f"packet {r!r} arrives before it was sent: the traces do not match")
        out.append({**r, "sent_s": sent, "received_s": received, "c2s": c2s})
    out.sort(key=lambda a: (a["sent_s"], a["received_s"]))
    return out


def _annotate(arrows: list[dict]) -> None:
    """Add ``released_by_ack`` and ``ack_delay_s`` to each arrow, from what each host saw."""
    # events per host: (time, order, arrow); arrivals sort before departures at one instant
    events: dict[bool, list] = {True: [], False: []}  # keyed by "is the client"
    for a in arrows:
        events[a["c2s"]].append((a["sent_s"], 1, a))  # the sender's departure
        events[not a["c2s"]].append((a["received_s"], 0, a))  # the receiver's arrival
    for evs in events.values():
        evs.sort(key=lambda e: (e[0], e[1]))
        best_ack = None  # highest ACK this host has received so far
        advanced_at = None  # when an arrival last advanced it
        data_in: dict[int, float] = {}  # end of received data -> when it arrived
        for t, kind, a in evs:
            if kind == 0:
                if best_ack is None or a["ack"] > best_ack:
                    best_ack, advanced_at = a["ack"], t
                if a["length"]:
                    data_in[a["end"]] = t
                continue
            released = (
                bool(a["length"]) and advanced_at is not None and abs(t - advanced_at) <= _SAME_S
            )
            a["released_by_ack"] = released
            a["ack_delay_s"] = None
            if not a["length"] and a["ack"] in data_in:
                a["ack_delay_s"] = t - data_in[a["ack"]]


def _label(a: dict) -> str:
    return f"{a['length']:,} B" if a["length"] else "ACK"


def sequence_arrows(
    client: Iterable,
    server: Iterable,
    start_s: float | None = None,
    stop_s: float | None = None,
    first: int = 0,
    count: int | None = None,
    first_request: int | None = None,
    max_gap_s: float | None = None,
    gap_height_s: float | None = None,
) -> dict:
    """The arrows of a time-sequence diagram, as plain data.

    Parameters
    ----------
    client, server
        The traces of one run taken at the client and at the server (``Result.trace`` with
        ``run={"trace_at": ...}``; records, dicts or tuples in the order of :data:`FIELDS`).
    start_s, stop_s
        Keep the packets sent in ``[start_s, stop_s)``, seconds since the run's start.
    first, count
        Then keep ``count`` packets (all if ``None``) from the ``first``, in the order they were
        sent.
    first_request
        If given, the window opens instead at the ``first_request``-th data segment the client
        sent (counting from 0) and ``first`` counts from there.
    max_gap_s, gap_height_s
        A stretch longer than ``max_gap_s`` seconds in which nothing is sent or received is drawn
        ``gap_height_s`` tall (default: ``max_gap_s``) and listed in ``breaks``.  ``None``: a
        linear time axis.

    Returns
    -------
    dict
        ``arrows``: one dict per packet, in the order sent, with ``direction`` (``"C > S"`` or
        ``"S > C"``), ``sent_s`` and ``received_s`` (seconds since the run's start), ``y0`` and
        ``y1`` (display coordinates of the two ends: seconds since the first packet, gaps
        shortened), ``seq``, ``end``, ``ack``, ``length`` (bytes), ``psh``, ``label``,
        ``released_by_ack`` (a data segment that left the instant an ACK arrived at its sender)
        and ``ack_delay_s`` (a pure ACK: seconds since the data it acknowledges arrived; ``None``
        otherwise).  ``breaks``: ``{"y", "height", "seconds"}`` per shortened gap.  ``t0``: the
        first packet's send time; ``y_max``: the display height.
    """
    if max_gap_s is not None and max_gap_s <= 0:
        raise ValueError(f"max_gap_s must be positive, got {max_gap_s!r}")
    if gap_height_s is not None and gap_height_s <= 0:
        raise ValueError(f"gap_height_s must be positive, got {gap_height_s!r}")
    if first < 0 or (count is not None and count < 0):
        raise ValueError(f"first and count must be >= 0, got {first!r}, {count!r}")
    arrows = _pair(client, server)
    _annotate(arrows)  # before the window is cut: the history before it counts
    arrows = [
        a
        for a in arrows
        if (start_s is None or a["sent_s"] >= start_s) and (stop_s is None or a["sent_s"] < stop_s)
    ]
    if first_request is not None:
        requests = [i for i, a in enumerate(arrows) if a["c2s"] and a["length"]]
        if not 0 <= first_request < len(requests):
            raise ValueError(
                f"first_request must be in [0, {len(requests)}) for this trace, got {first_request!r}"
            )
        first += requests[first_request]
    arrows = arrows[first : None if count is None else first + count]
    if not arrows:
        return {"arrows": [], "breaks": [], "t0": 0.0, "y_max": 0.0}
    t0 = arrows[0]["sent_s"]
    times = sorted({t for a in arrows for t in (a["sent_s"], a["received_s"])})
    height = max_gap_s if gap_height_s is None else gap_height_s
    # display coordinate of each event time: elapsed time with long gaps cut to `height`
    y_of: dict[float, float] = {times[0]: 0.0}
    breaks = []
    y = 0.0
    for prev, t in zip(times, times[1:]):
        dt = t - prev
        if max_gap_s is not None and height is not None and dt > max_gap_s:
            breaks.append({"y": y, "height": height, "seconds": dt})
            y += height
        else:
            y += dt
        y_of[t] = y
    out = []
    for a in arrows:
        out.append(
            {
                "direction": a["direction"],
                "sent_s": a["sent_s"],
                "received_s": a["received_s"],
                "y0": y_of[a["sent_s"]],
                "y1": y_of[a["received_s"]],
                "seq": a["seq"],
                "end": a["end"],
                "ack": a["ack"],
                "length": a["length"],
                "psh": "P" in a["flags"],
                "label": _label(a),
                "released_by_ack": a["released_by_ack"],
                "ack_delay_s": a["ack_delay_s"],
            }
        )
    return {"arrows": out, "breaks": breaks, "t0": t0, "y_max": y}


def both_ends(scenario) -> tuple[list, list, Any]:
    """Run ``scenario`` (a :class:`models.sim.Scenario`) traced at the client and at the server:
    ``(client trace, server trace, the server-side result)``.  The run is deterministic, so the two
    traces are of the same packets."""
    from models.sim import simulate

    runs = {
        side: simulate(scenario.replace(run={"trace": True, "trace_at": side}))
        for side in ("client", "server")
    }
    return runs["client"].trace, runs["server"].trace, runs["server"]


def diagram(scenario, **window: Any) -> dict:
    """:func:`sequence_arrows` of a scenario's run (``window``: its keyword arguments)."""
    client, server, _ = both_ends(scenario)
    return sequence_arrows(client, server, **window)


# --------------------------------------------------------------------------------------------------
# Drawing (Matplotlib, for the static page)
# --------------------------------------------------------------------------------------------------

_COLOURS = {_CLIENT_TO_SERVER: "#1f77b4", "S > C": "#d95f02"}


def _fmt_time(s: float) -> str:
    """A time in the unit that reads best: µs below a millisecond, else ms."""
    return f"{s * 1e6:.0f} µs" if abs(s) < 1e-3 else f"{s * 1e3:.1f} ms"  # s -> µs, ms


def _merged(arrows: list[dict]) -> list[dict]:
    """Arrows that share both ends (segments sent together and delivered together) drawn as one,
    labelled ``"48 B + 512 B"`` or ``"2 ACKs"``."""
    groups: dict[tuple, list[dict]] = {}
    for a in arrows:
        groups.setdefault((a["direction"], a["y0"], a["y1"]), []).append(a)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        data = [a for a in group if a["length"]]
        acks = len(group) - len(data)
        parts = [a["label"] for a in data] + (
            [f"{acks} ACKs" if acks > 1 else "ACK"] if acks else []
        )
        delays = [a["ack_delay_s"] for a in group if a["ack_delay_s"] is not None]
        out.append(
            {
                **(data[0] if data else group[0]),
                "label": " + ".join(parts),
                "released_by_ack": any(a["released_by_ack"] for a in group),
                "ack_delay_s": max(delays) if delays else None,
            }
        )
    return out


def draw(ax, d: dict, title: str | None = None, notes: bool = True) -> None:
    """Draw the diagram ``d`` (from :func:`sequence_arrows`) on the Matplotlib axes ``ax``.

    Client at x = 0, server at x = 1, time down.  Data segments are solid arrows labelled with
    their length, pure ACKs dashed; a data segment released by an arriving ACK has a ring at its
    start, a pure ACK sent long after its data is labelled with that wait; shortened gaps are
    marked with their length.  The time beside each end is counted from the first packet.
    """
    ax.set_xlim(-0.42, 1.42)
    y_max = d["y_max"] or 1.0
    pad = 0.06 * y_max
    ax.set_ylim(y_max + pad, -pad)
    ax.axis("off")
    for x, name in ((0.0, "client"), (1.0, "server")):
        ax.plot([x, x], [-pad * 0.5, y_max + pad * 0.5], color="0.3", lw=1.2)
        ax.text(x, -pad * 0.6, name, ha="center", va="bottom", fontsize=8.5, fontweight="bold")
    for b in d["breaks"]:
        y0, y1 = b["y"], b["y"] + b["height"]
        ax.axhspan(y0, y1, xmin=0.05, xmax=0.95, color="0.93", lw=0)
        ax.text(
            0.5,
            (y0 + y1) / 2,
            f"{_fmt_time(b['seconds'])}: nothing on the wire",
            ha="center",
            va="center",
            fontsize=7.5,
            color="0.25",
            style="italic",
        )
    marked: dict[tuple[int, float], float] = {}  # (side, y) of a time label already printed
    placed: list[tuple[float, float]] = []  # where arrow labels were put
    for a in _merged(d["arrows"]):
        c2s = a["direction"] == _CLIENT_TO_SERVER
        x0, x1 = (0.0, 1.0) if c2s else (1.0, 0.0)
        colour = _COLOURS[a["direction"]] if a["length"] else "0.45"
        ax.annotate(
            "",
            xy=(x1, a["y1"]),
            xytext=(x0, a["y0"]),
            arrowprops={
                "arrowstyle": "-|>",
                "color": colour,
                "lw": 1.3 if a["length"] else 1.0,
                "ls": "-" if a["length"] else (0, (3, 2)),
                "shrinkA": 0,
                "shrinkB": 0,
                "mutation_scale": 9,
            },
        )
        # the label sits near the sender's end, further along if another label is there
        for f in (0.3, 0.55, 0.75, 0.15):
            lx, ly = x0 + f * (x1 - x0), a["y0"] + f * (a["y1"] - a["y0"])
            if all(abs(lx - px) > 0.3 or abs(ly - py) > 0.04 * y_max for px, py in placed):
                break
        placed.append((lx, ly))
        text = a["label"]
        if notes and a["ack_delay_s"] is not None and a["ack_delay_s"] > 1e-3:
            text += f" (delayed {_fmt_time(a['ack_delay_s'])})"
        ax.text(
            lx,
            ly,
            text,
            ha="center",
            va="center",
            fontsize=7,
            color=colour,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
        )
        if notes and a["released_by_ack"]:
            ax.plot([x0], [a["y0"]], "o", ms=6, mfc="none", mec="#7b3294", mew=1.3)
        for x, t, y in ((x0, a["sent_s"], a["y0"]), (x1, a["received_s"], a["y1"])):
            side = int(x)
            if any(s == side and abs(y - yy) < 0.035 * y_max for s, yy in marked):
                continue
            marked[(side, y)] = y
            ax.text(
                x - 0.05 if side == 0 else x + 0.05,
                y,
                _fmt_time(t - d["t0"]),
                ha="right" if side == 0 else "left",
                va="center",
                fontsize=6.5,
                color="0.35",
            )
    if title:
        ax.set_title(title, fontsize=9, pad=12)


def sequence_figure(panels: Sequence[tuple[str, dict]], legend: bool = True, height: float = 4.2):
    """A Matplotlib figure of several diagrams side by side: ``panels`` is a list of
    ``(title, diagram)``.  A legend under the panels explains the marks."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(3.3 * n, height), squeeze=False)
    for ax, (title, d) in zip(axes[0], panels):
        draw(ax, d, title=title)
    if legend:
        handles = [
            Line2D([], [], color=_COLOURS[_CLIENT_TO_SERVER], lw=1.3, label="request data"),
            Line2D([], [], color=_COLOURS["S > C"], lw=1.3, label="response data"),
            Line2D([], [], color="0.45", lw=1.0, ls=(0, (3, 2)), label="pure ACK"),
            Line2D(
                [],
                [],
                ls="none",
                marker="o",
                mfc="none",
                mec="#7b3294",
                mew=1.3,
                label="sent the instant an ACK arrived",
            ),
        ]
        fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=7.5, frameon=False)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
    else:
        fig.tight_layout()
    return fig

"""Chapter 9 figures: a measured kernel beside the packet simulator, IOPS against queue depth.

The live figure's frames are built from :func:`models.validation.kernel.kernel_tables` (the bundled run, or
``$QUEUE_DEPTH_KERNEL_RUN``): the kernel's runs as points, the simulator's runs of the same scenarios as a
line, plus two extra simulated queue depths on each side of the MSS rule's threshold so the jump shows
where it is.  Everything is computed when the page is built; the browser only switches frames.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import matplotlib.pyplot as plt
import numpy as np

from models import framing
from models.sim import get_profile
from models.validation import kernel as K

from .live import LiveFigure

__all__ = ["MODES", "timer_period_s", "curve", "kernel_live_figure", "plot_kernel_vs_sim", "kernel_explorer"]

#: Server socket modes shown, with their labels (qdperf.c ``--sock``).
MODES = {"nagle": "Nagle, two send() calls", "nodelay": "TCP_NODELAY", "more": "MSG_MORE on the header",
         "more_nodelay": "MSG_MORE + TCP_NODELAY"}
_COLORS = {"bbr": "#d62728", "cubic": "#ff7f0e", "sim": "#1f77b4"}


def timer_period_s(hz: int) -> float:
    """The delayed-ACK period of the ``linux-6`` profile with kernel timers, seconds: ``(10 + 1) / HZ``
    at HZ=250 (``HZ/25`` ticks and the timer wheel's round-up)."""
    return get_profile("linux-6").configured(hz=int(hz)).delack_max_s


def _threshold_qd(link_row, size: int) -> int:
    """Largest QD at which the whole queue can stall (:func:`models.validation.kernel.stall_possible`)."""
    mss = framing.mss(int(link_row["mtu_bytes"]))
    h = K.HEADER_BYTES["iscsi"]
    return max(0, math.ceil((mss + h) / (h + size)) - 1)


def curve(link: str, size: int, mode: str, tables: Optional[tuple] = None) -> dict:
    """Kernel points and simulated curve for one link, response size and socket mode.

    Returns ``{"kernel": {cc: (qds, iops)}, "sim": (qds, iops), "threshold": QD or None, "limit": ...}``
    (``threshold`` only for Nagle: the largest QD that can stall).
    """
    run, host, _, isc, _ = tables or K.kernel_tables()
    g = isc[(isc["link"] == link) & (isc["iosize_bytes"] == size) & (isc["sock_mode"] == mode)
            & (isc["client_sock_mode"] == "nagle")].sort_values("qd")
    out: dict = {"kernel": {}, "sim": ([], []), "threshold": None, "stalls": {}}
    if g.empty:
        return out
    for cc, h in g.groupby("cc", sort=False):
        out["kernel"][cc] = (h["qd"].tolist(), h["iops"].tolist())
        out["stalls"][cc] = h.loc[h["kernel_stalls"], "qd"].tolist()
    sim = g.drop_duplicates("qd")[["qd", "sim_iops", "sim_stalls"]]
    qds, iops = sim["qd"].tolist(), sim["sim_iops"].tolist()
    out["stalls"]["sim"] = sim.loc[sim["sim_stalls"], "qd"].tolist()
    if mode == "nagle":
        q = _threshold_qd(g.iloc[0], size)
        out["threshold"] = q
        base = g.iloc[0].to_dict()
        for extra in (q, q + 1):                     # simulate both sides of the threshold
            if 1 <= extra <= max(qds) and extra not in qds:
                s = K.simulate_summary(K.row_scenario("iscsi_loop", dict(base, qd=extra), host, run.hz))
                qds.append(extra)
                iops.append(s.iops)
                if s.stalls:
                    out["stalls"]["sim"].append(extra)
    order = np.argsort(qds)
    out["sim"] = ([int(qds[i]) for i in order], [float(iops[i]) for i in order])
    return out


def _frame(link: str, size: int, mode: str, tables: tuple) -> dict:
    c = curve(link, size, mode, tables)
    traces = [{"x": c["sim"][0], "y": c["sim"][1], "name": "simulator (linux-6, kernel timers)",
               "mode": "lines+markers", "line": {"color": _COLORS["sim"]}, "marker": {"size": 5}}]
    for cc, (x, y) in c["kernel"].items():
        traces.append({"x": x, "y": y, "name": f"kernel 6.x, {cc}", "mode": "markers",
                       "marker": {"color": _COLORS.get(cc, "#555555"), "size": 9,
                                  "symbol": "circle-open" if cc != "bbr" else "circle"}})
    period = timer_period_s(tables[0].hz)
    qline = list(range(1, 65))
    traces.append({"x": qline, "y": [(q + 1) / period for q in qline],
                   "name": f"(QD + 1) per {period * 1e3:.0f} ms timer period",
                   "mode": "lines", "line": {"color": "black", "dash": "dot", "width": 1}})
    shapes = []
    if c["threshold"]:
        t = c["threshold"] + 0.5
        shapes.append({"type": "line", "x0": t, "x1": t, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": "#2ca02c", "dash": "dash", "width": 1}})
    if not c["kernel"]:
        title = f"{link}, {size} B, {MODES[mode]}: not measured in this run"
    else:
        k = sorted(set(q for cc, qs in c["stalls"].items() if cc != "sim" for q in qs))
        s = sorted(c["stalls"]["sim"])
        def span(qs):
            return f"QD {qs[0]}-{qs[-1]}" if len(qs) > 1 else (f"QD {qs[0]}" if qs else "never")
        title = f"{link}, {size} B, {MODES[mode]}: stalls {span(k)} (kernel), {span(s)} (simulator)"
    return {"traces": traces, "shapes": shapes, "title": title}


def kernel_live_figure(tables: Optional[tuple] = None) -> LiveFigure:
    """The chapter's main figure: IOPS against QD (log scale) over link, response size and socket mode.

    A dimension with a single value in the run (a normal user's sweep has only loopback) gets no slider.
    """
    tables = tables or K.kernel_tables()
    isc = tables[3]
    links = [lk for lk in ("loopback", "veth-1500", "veth-9000", "veth-1500-1g") if lk in set(isc["link"])]
    links += sorted(set(isc["link"]) - set(links))
    sizes = sorted(int(s) for s in set(isc["iosize_bytes"]))
    modes = [m for m in MODES if m in set(isc["sock_mode"])]
    grid = {"link": links, "response data (bytes)": sizes, "server socket": modes}
    names = dict(zip(grid, ["link", "size", "mode"]))
    fixed = {names[k]: v[0] for k, v in grid.items() if len(v) == 1}
    axes = {k: v for k, v in grid.items() if len(v) > 1}
    if not axes:
        raise ValueError("the run holds a single link, size and socket mode: nothing to choose between")
    defaults = {"link": "veth-9000" if "veth-9000" in links else links[0],
                "response data (bytes)": 512 if 512 in sizes else sizes[0],
                "server socket": "nagle" if "nagle" in modes else modes[0]}
    layout = {"xaxis": {"title": {"text": "queue depth QD"}, "type": "log", "range": [-0.05, 1.86],
                        "tickvals": [1, 2, 3, 4, 5, 8, 16, 32, 64]},
              "yaxis": {"title": {"text": "IOPS (log scale)"}, "type": "log", "range": [1, 5.6]},
              "legend": {"x": 0.01, "y": 0.99, "font": {"size": 11}, "bgcolor": "rgba(255,255,255,0.8)"},
              "margin": {"t": 40, "r": 10, "b": 45, "l": 60}}
    n = int(np.prod([len(v) for v in axes.values()]))
    return LiveFigure(
        "ch9-kernel-vs-sim", axes, lambda **kw: _frame(**{**fixed, **kw}, tables=tables),
        layout=layout, arg_names={k: names[k] for k in axes}, defaults={k: defaults[k] for k in axes}, digits=4,
        caption=(f"Precomputed when the book was built from {tables[0].source}: {n} grid points "
                 f"({' x '.join(axes)}). Points: the kernel's runs (filled bbr, open cubic). Line: the packet "
                 "simulator on the same scenarios, with the host times fitted once from the kernel's undelayed "
                 "runs. Dashed green: the largest QD whose responses, less one header, fit in one segment (the "
                 f"queue can stall up to there). Dotted: QD + 1 operations per {timer_period_s(tables[0].hz) * 1e3:.0f} "
                 "ms timer period. No Python runs in your browser."))


def plot_kernel_vs_sim(link: str = "veth-9000", size: int = 512, mode: str = "nagle", ax=None,
                       tables: Optional[tuple] = None):
    """The static version of one frame of :func:`kernel_live_figure` (matplotlib)."""
    tables = tables or K.kernel_tables()
    c = curve(link, size, mode, tables)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    ax.plot(*c["sim"], "o-", ms=4, color=_COLORS["sim"], label="simulator (linux-6, kernel timers)")
    for cc, (x, y) in c["kernel"].items():
        ax.plot(x, y, "o", ms=8, mfc=_COLORS.get(cc, "#555") if cc == "bbr" else "none",
                mec=_COLORS.get(cc, "#555"), label=f"kernel 6.x, {cc}")
    q = np.arange(1, 65)
    period = timer_period_s(tables[0].hz)
    ax.plot(q, (q + 1) / period, "k:", lw=1, label=f"(QD + 1) per {period * 1e3:.0f} ms")
    if c["threshold"]:
        ax.axvline(c["threshold"] + 0.5, color="#2ca02c", ls="--", lw=1,
                   label=f"MSS rule: stalls possible up to QD {c['threshold']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks([1, 2, 3, 4, 5, 8, 16, 32, 64], labels=["1", "2", "3", "4", "5", "8", "16", "32", "64"])
    ax.set_xlabel("queue depth QD")
    ax.set_ylabel("IOPS")
    ax.set_title(f"{link}, {size}-byte reads, {MODES[mode]}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3, which="both")
    return ax


def kernel_explorer(tables: Optional[tuple] = None, qds: Sequence[int] = (1, 2, 3, 4, 5, 8, 16, 32, 64)):
    """An ipywidgets explorer: pick a link, size and mode, and scale the fitted server time SP; the
    simulator re-runs at each QD (updates on release) and is drawn over the kernel's points."""
    import ipywidgets as w
    from IPython.display import display

    tables = tables or K.kernel_tables()
    run, host, _, isc, _ = tables
    kw = dict(continuous_update=False, style={"description_width": "140px"}, layout=w.Layout(width="420px"))
    links = sorted(set(isc["link"]))
    controls = {
        "link": w.Dropdown(options=links, value="veth-9000" if "veth-9000" in links else links[0],
                           description="link", **kw),
        "size": w.Dropdown(options=sorted(int(s) for s in set(isc["iosize_bytes"])), value=512,
                           description="data (bytes)", **kw),
        "mode": w.Dropdown(options=list(MODES), value="nagle", description="server socket", **kw),
        "sp_scale": w.FloatSlider(value=1.0, min=0.1, max=3.0, step=0.1, description="SP x fitted", **kw),
    }
    out = w.Output()

    def redraw(link, size, mode, sp_scale):
        g = isc[(isc["link"] == link) & (isc["iosize_bytes"] == size) & (isc["sock_mode"] == mode)
                & (isc["client_sock_mode"] == "nagle")]
        with out:
            out.clear_output(wait=True)
            if g.empty:
                print("not measured in this run")
                return
            base = g.iloc[0].to_dict()
            opts = {"server": {"proc_s": host.sp_s * sp_scale}}
            sims = [K.simulate_summary(K.row_scenario("iscsi_loop", dict(base, qd=q), host, run.hz).replace(**opts))
                    for q in qds]
            fig, ax = plt.subplots(figsize=(7, 3.8))
            ax.plot(qds, [s.iops for s in sims], "o-", color=_COLORS["sim"], label=f"simulator, SP = "
                    f"{host.sp_s * sp_scale * 1e6:.1f} µs")
            for cc, h in g.groupby("cc"):
                ax.plot(h["qd"], h["iops"], "o", ms=8, mfc="none", mec=_COLORS.get(cc, "#555"), label=f"kernel, {cc}")
            ax.set_xscale("log"); ax.set_yscale("log"); ax.set_xlabel("queue depth QD"); ax.set_ylabel("IOPS")
            ax.legend(fontsize=8); ax.grid(alpha=0.3, which="both")
            plt.show()
            print("stalls at QD", [q for q, s in zip(qds, sims) if s.stalls] or "none")

    w.interactive_output(redraw, controls)
    ui = w.VBox([w.VBox(list(controls.values())), out])
    display(ui)
    return ui

"""IOPS-versus-queue-depth figures for the bottleneck chapter: a static plot and an ipywidgets explorer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from models import analytic as A
from models.ring import Ring

__all__ = ["read_stage_times", "iops_curve", "plot_iops_curve", "iops_explorer"]

GBIT = 1e9  # bits per second


def read_stage_times(iosize: int, sp_us: float, cp_us: float, bandwidth_bps: float = GBIT,
                     mtu: int = 1500) -> dict[str, float]:
    """Stage times in seconds for an iSCSI read: wire times from the sizes, thread times given in µs."""
    return {"W1": A.wire_time(A.ISCSI_HEADER_BYTES, bandwidth_bps, mtu),
            "SP": sp_us * 1e-6,  # microseconds -> seconds
            "W2": A.wire_time(A.ISCSI_HEADER_BYTES + iosize, bandwidth_bps, mtu),
            "CP": cp_us * 1e-6}


def iops_curve(times: Mapping[str, float], latencies: Mapping[str, float], qds: Sequence[int],
               ops: int = 800) -> np.ndarray:
    """Simulated IOPS of the four-stage ring at each queue depth (see :class:`models.ring.Ring`)."""
    ring = Ring.from_times(times, latencies)
    # Measure whole rounds (a multiple of QD completions). This lowers the window-edge error on average
    # (about 0.5 % to 0.3 % at 150 operations) but does not remove it: the steady-state pattern of a ring
    # with start latencies need not repeat every QD completions. Little's window allowance still bounds it.
    return np.array([ring.run(int(q), ops=-(-ops // int(q)) * int(q)).iops for q in qds])


def plot_iops_curve(times: Mapping[str, float], latencies: Mapping[str, float], qds: Sequence[int],
                    ax=None, ops: int = 800, title: str | None = None):
    """Plot the simulated IOPS curve, the operational bound, and the thresholds [1]/[2] on ``ax``."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    qds = np.asarray(qds)
    sim = iops_curve(times, latencies, qds, ops=ops)
    bound = A.iops_bound(qds, times)
    tpt = A.tpt_min(times)
    rtt = A.rtt_min(times)
    ax.plot(qds, bound / 1e3, "k--", lw=1, label="bound min(QD/RTTmin, 1/TPTmin)")
    ax.plot(qds, sim / 1e3, "o-", ms=3, label="ring simulation with start latencies")
    cl, sl = latencies.get("CP", 0.0), latencies.get("SP", 0.0)
    bottleneck = max(times, key=times.get)
    if bottleneck == "SP":
        q_need = (cl + rtt) / times["SP"]                      # inequality [2]
        ax.axvline(q_need, color="C3", lw=1, label=f"[2] CPU bound from QD ≥ {q_need:.1f}")
    elif bottleneck == "W2":
        q_need = (cl + rtt + sl) / times["W2"]                 # inequality [1]
        ax.axvline(q_need, color="C3", lw=1, label=f"[1] network bound from QD ≥ {q_need:.1f}")
    ax.axvline(A.knee_qd(times), color="grey", lw=1, ls=":", label=f"knee RTTmin/TPTmin = {A.knee_qd(times):.1f}")
    ax.set_xlabel("queue depth QD")
    ax.set_ylabel("thousand IOPS")
    ax.set_ylim(0, 1.15 / tpt / 1e3)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title or f"bottleneck: {bottleneck} = {times[bottleneck] * 1e6:.1f} µs")
    return ax


def iops_explorer(iosize: int = 512, sp_us: float = 15.9, cp_us: float = 8.0, sl_us: float = 16.7,
                  cl_us: float = 23.7, max_qd: int = 24):
    """An ipywidgets explorer: sliders for I/O size, SP, CP, SL, CL; redraws only on release."""
    import ipywidgets as w
    from IPython.display import display

    style = {"description_width": "110px"}
    kw = dict(continuous_update=False, style=style, layout=w.Layout(width="420px"))
    controls = {
        "iosize": w.SelectionSlider(options=[512, 1024, 2048, 4096, 8192, 16384], value=iosize,
                                    description="IOSIZE (bytes)", **kw),
        "sp_us": w.FloatSlider(value=sp_us, min=2, max=60, step=0.5, description="SP (µs)", **kw),
        "cp_us": w.FloatSlider(value=cp_us, min=2, max=60, step=0.5, description="CP (µs)", **kw),
        "sl_us": w.FloatSlider(value=sl_us, min=0, max=200, step=1, description="SL (µs)", **kw),
        "cl_us": w.FloatSlider(value=cl_us, min=0, max=200, step=1, description="CL (µs)", **kw),
    }
    out = w.Output()

    def redraw(iosize, sp_us, cp_us, sl_us, cl_us):
        times = read_stage_times(iosize, sp_us, cp_us)
        lat = {"SP": sl_us * 1e-6, "CP": cl_us * 1e-6}  # microseconds -> seconds
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(7, 3.8))
            plot_iops_curve(times, lat, range(1, max_qd + 1), ax=ax, ops=400)
            plt.show()

    w.interactive_output(redraw, controls)
    ui = w.VBox([w.VBox(list(controls.values())), out])
    display(ui)
    return ui


def _frame(iosize: int, sp_us: float, cp_us: float, sl_us: float, cl_us: float, qds: Sequence[int],
           ops: int) -> dict:
    """One precomputed grid point for :func:`iops_live_figure` (IOPS in thousands)."""
    times = read_stage_times(iosize, sp_us, cp_us)
    lat = {"SP": sl_us * 1e-6, "CP": cl_us * 1e-6}  # microseconds -> seconds
    qds = list(qds)
    sim = iops_curve(times, lat, qds, ops=ops) / 1e3
    bound = A.iops_bound(np.array(qds), times) / 1e3
    bottleneck = max(times, key=times.get)
    rtt = A.rtt_min(times)
    if bottleneck == "W2":
        q_need, label = (lat["CP"] + rtt + lat["SP"]) / times["W2"], "[1] network bound"
    else:
        q_need, label = (lat["CP"] + rtt) / times[bottleneck], "[2] CPU bound"
    top = 1.15 / A.tpt_min(times) / 1e3
    return {
        "traces": [
            {"x": qds, "y": bound.tolist(), "name": "bound min(QD/RTTmin, 1/TPTmin)", "mode": "lines",
             "line": {"dash": "dash", "color": "black", "width": 1}},
            {"x": qds, "y": sim.tolist(), "name": "ring simulation", "mode": "lines+markers",
             "line": {"color": "#1f77b4"}},
            {"x": [q_need, q_need], "y": [0, top], "name": f"{label} from QD ≥ {q_need:.1f}", "mode": "lines",
             "line": {"color": "#d62728", "width": 1}},
        ],
        "title": f"bottleneck {bottleneck} = {times[bottleneck] * 1e6:.1f} µs; peak {1 / A.tpt_min(times):,.0f} IOPS",
    }


def iops_live_figure(max_qd: int = 24, ops: int = 150):
    """The chapter's main figure for the static book: a grid over IOSIZE, SP, SL and CL (CP fixed at 8 µs).

    Every curve is a run of :class:`models.ring.Ring` (``ops`` completions per queue depth) made when the
    page is built.
    """
    from .live import LiveFigure, iops_qd_layout

    axes = {"IOSIZE (bytes)": [512, 1024, 2048, 4096, 8192],
            "SP (µs)": [5.0, 10.0, 15.9, 25.0, 40.0],
            "SL (µs)": [0.0, 16.7, 50.0, 100.0],
            "CL (µs)": [0.0, 23.7, 50.0, 100.0]}
    names = dict(zip(axes, ["iosize", "sp_us", "sl_us", "cl_us"]))
    layout = iops_qd_layout(max_qd + 1, legend_x=0.55)
    return LiveFigure(
        "ch3-iops-qd", axes,
        lambda iosize, sp_us, sl_us, cl_us: _frame(iosize, sp_us, 8.0, sl_us, cl_us, range(1, max_qd + 1), ops),
        layout=layout, arg_names=names,
        defaults={"IOSIZE (bytes)": 512, "SP (µs)": 15.9, "SL (µs)": 16.7, "CL (µs)": 23.7},
        caption=(f"Precomputed when the book was built: {5 * 5 * 4 * 4} grid points (IOSIZE x SP x SL x CL; "
                 f"CP = 8 µs, 1 Gb/s, MTU 1500), each a ring simulation of {ops} operations per queue depth "
                 f"1-{max_qd}. Move a slider to switch curves; no Python runs in your browser."))

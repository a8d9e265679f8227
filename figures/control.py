"""Chapter 10 figure: the closed throttling loop against time, live in the static book."""

from __future__ import annotations

import numpy as np

from models.control import pid as P
from models.control import thesis as th
from models.control.loop import on_off_schedule, run_closed_loop, summarize

from .live import LiveFigure

__all__ = ["loop_live_figure"]

MB = th.MB  # the thesis's MB: 2**20 bytes


def loop_live_figure(schedule: dict, seed: int, transient_s: float, every: int = 4) -> LiveFigure:
    """Smoothed read wait and aggregate write rate over time, for a grid of set point, Kp and EWMA alpha.

    Each frame is a run of :func:`models.control.loop.run_closed_loop` on the thesis plant with the
    listing-form controller (Ti, Td, T from listing A.2), made when the page is built; ``every`` keeps
    every n-th sample to keep the page small.
    """
    par = th.controller_parameters("reg_pl")
    interval_s = par["sample_interval_ms"] * 1e-3  # ms -> s
    plant = th.thesis_plant()
    sched = on_off_schedule(interval_s=interval_s, **schedule)
    free = run_closed_loop(plant, sched, np.inf, seed=seed)
    t = free["t_s"].to_numpy()[::every].tolist()
    free_wait = (free["smoothed_s"].to_numpy()[::every] * 1e3).tolist()    # s -> ms
    free_rate = (free["write_rate_Bps"].to_numpy()[::every] / MB).tolist()  # bytes/s -> MB/s

    def frame(setpoint_ms: float, kp: float, alpha: float) -> dict:
        ctl = P.VelocityPID(kp, par["Ti"], par["Td"], par["T"], u_min=-par["max_throttle_steps"], u_max=0,
                            form="listing")
        df = run_closed_loop(plant, sched, setpoint_ms * 1e-3, controller=ctl, alpha=alpha, seed=seed)
        s = summarize(df, transient_s)
        return {"traces": [
            {"x": t, "y": free_wait, "name": "no control", "mode": "lines", "line": {"color": "black", "width": 1}},
            {"x": t, "y": (df["smoothed_s"].to_numpy()[::every] * 1e3).tolist(), "name": "smoothed read wait",
             "mode": "lines", "line": {"color": "#1f77b4"}},
            {"x": [t[0], t[-1]], "y": [setpoint_ms, setpoint_ms], "name": "set point", "mode": "lines",
             "line": {"color": "#d62728", "dash": "dot", "width": 1}},
            {"x": t, "y": free_rate, "name": "writes, no control", "mode": "lines", "xaxis": "x", "yaxis": "y2",
             "line": {"color": "black", "width": 1}, "showlegend": False},
            {"x": t, "y": (df["write_rate_Bps"].to_numpy()[::every] / MB).tolist(), "name": "aggregate writes",
             "mode": "lines", "xaxis": "x", "yaxis": "y2", "line": {"color": "#ff7f0e"}},
        ], "title": (f"settled wait {s.mean_smoothed_s * 1e3:.1f} ms (peak {s.peak_smoothed_s * 1e3:.0f} ms), "
                     f"writes {s.mean_write_rate_Bps / MB:.1f} MB/s")}

    axes = {"set point (ms)": [10.0, 15.0, 20.0, 30.0], "Kp (steps/ms)": [0.1, 0.3, 1.0],
            "EWMA alpha": [0.15, 0.25, 0.5]}
    layout = {"xaxis": {"title": {"text": "time (s)"}, "anchor": "y2"},
              "yaxis": {"title": {"text": "read wait (ms)"}, "domain": [0.45, 1.0], "rangemode": "tozero"},
              "yaxis2": {"title": {"text": "writes (MB/s)"}, "domain": [0.0, 0.38], "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.18}, "margin": {"t": 40, "r": 10, "b": 40, "l": 60}}
    return LiveFigure("ch10-loop", axes, frame, layout=layout,
                      arg_names=dict(zip(axes, ["setpoint_ms", "kp", "alpha"])), digits=4,
                      defaults={"set point (ms)": 15.0, "Kp (steps/ms)": 0.3, "EWMA alpha": 0.25},
                      caption=(f"Precomputed when the book was built: {4 * 3 * 3} closed-loop runs (set point x Kp x "
                               "EWMA alpha; listing-form controller with the thesis's Ti, Td and T; seed "
                               f"{seed}); one 100 ms sample in {every} is drawn."))

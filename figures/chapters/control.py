"""Chapter 10 figure: the closed throttling loop against time, live in the
book (standard library only: it runs in the browser).

Each curve is a run of :func:`models.control.loop.closed_loop` on the
thesis's calibrated plant; the plant's parameters, the workload, the
controller's fixed terms and the delay ladders reach the page as plain
numbers (computed with NumPy, SciPy and pandas when the book is built).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from figures.live import Live, Range, Select
from figures.live.page import legend_below
from models.control.loop import closed_loop, loop_summary, on_off_schedule
from models.control.pid import FORMS, VelocityPID
from models.control.plant import SharedDiskPlant
from models.control.throttle import DelayThrottle

__all__ = ["loop_run", "loop_figure"]

#: The delay ladders a reader can pick: section 4.4's text and the classes
#: listing B.2 builds.
LADDERS = ("section 4.4", "listing B.2")


def loop_run(
    setpoint_ms: float,
    kp: float,
    alpha: float,
    form: str,
    ladder: str,
    plant: Mapping[str, Any],
    schedule: Mapping[str, float],
    controller: Mapping[str, float],
    ladders: Mapping[str, Mapping[str, Any]],
    seed: int,
    transient_s: float,
    interval_s: float = 0.1,
    every: int = 5,
    mb_bytes: int = 2**20,
) -> dict:
    """Smoothed read wait (ms) and aggregate write rate (MB/s) against
    time, with control and without, for a set point of ``setpoint_ms``
    ms, a gain ``kp`` (steps per ms), an EWMA weight ``alpha``, the
    controller's ``form`` and a delay ``ladder``.

    ``plant`` holds the fields of a
    :class:`models.control.plant.SharedDiskPlant`, ``schedule`` the
    arguments of :func:`models.control.loop.on_off_schedule`,
    ``controller`` the fixed ``ti``, ``td``, ``t`` and ``u_min`` of the
    :class:`models.control.pid.VelocityPID`, ``ladders`` the fields of a
    :class:`models.control.throttle.DelayThrottle` per ladder; ``seed``
    seeds the noise, the first ``transient_s`` seconds after writers start
    are left out of the title's means, and one sample in ``every`` is
    drawn.
    """
    if ladder not in ladders:
        raise ValueError(f"ladder must be one of {sorted(ladders)}, got {ladder!r}")
    pl = SharedDiskPlant(**plant)
    sched = on_off_schedule(interval_s=interval_s, **schedule)
    ctl = VelocityPID(
        kp,
        controller["ti"],
        controller["td"],
        controller["t"],
        u_min=controller["u_min"],
        u_max=0.0,
        form=form,
    )
    run = closed_loop(
        pl,
        sched,
        setpoint_ms * 1e-3,
        controller=ctl,
        alpha=alpha,
        throttle=DelayThrottle(**ladders[ladder]),
        interval_s=interval_s,
        seed=seed,
    )  # ms -> s
    free = closed_loop(pl, sched, math.inf, interval_s=interval_s, seed=seed)
    s = loop_summary(run, transient_s)
    t = run["t_s"][::every]

    def ms(col: list) -> list:
        return [v * 1e3 for v in col[::every]]  # s -> ms

    def mbs(col: list) -> list:
        return [v / mb_bytes for v in col[::every]]  # B/s -> MB/s

    return {
        "traces": [
            {
                "x": t,
                "y": ms(free["smoothed_s"]),
                "name": "no control",
                "mode": "lines",
                "line": {"color": "black", "width": 1},
            },
            {
                "x": t,
                "y": ms(run["smoothed_s"]),
                "name": "smoothed read wait",
                "mode": "lines",
                "line": {"color": "#1f77b4"},
            },
            {
                "x": [t[0], t[-1]],
                "y": [setpoint_ms, setpoint_ms],
                "name": "set point",
                "mode": "lines",
                "line": {"color": "#d62728", "dash": "dot", "width": 1},
            },
            {
                "x": t,
                "y": mbs(free["write_rate_Bps"]),
                "name": "writes, no control",
                "mode": "lines",
                "xaxis": "x",
                "yaxis": "y2",
                "line": {"color": "black", "width": 1},
                "showlegend": False,
            },
            {
                "x": t,
                "y": mbs(run["write_rate_Bps"]),
                "name": "aggregate writes",
                "mode": "lines",
                "xaxis": "x",
                "yaxis": "y2",
                "line": {"color": "#ff7f0e"},
            },
        ],
        "title": (
            f"settled wait {s.mean_smoothed_s * 1e3:.1f} ms (peak "
            f"{s.peak_smoothed_s * 1e3:.0f} ms), writes "
            f"{s.mean_write_rate_Bps / mb_bytes:.1f} MB/s"
        ),
    }


def _ladder(throttle: DelayThrottle) -> dict:
    return {k: (float(v) if isinstance(v, float) else v) for k, v in asdict(throttle).items()}


def loop_figure(
    plant: SharedDiskPlant,
    schedule: Mapping[str, float],
    parameters: Mapping[str, Any],
    ladders: Mapping[str, DelayThrottle],
    seed: int,
    transient_s: float,
    mb_bytes: int,
    every: int = 5,
) -> Live:
    """The chapter's main figure: the thesis's plant and workload, its
    controller's ``parameters`` (a row of ``thesis2010_pid_parameters``),
    the two ``ladders`` keyed by :data:`LADDERS`; everything passed as
    plain numbers."""
    interval_s = float(parameters["sample_interval_ms"]) * 1e-3  # ms -> s
    controller = {
        "ti": float(parameters["Ti"]),
        "td": float(parameters["Td"]),
        "t": float(parameters["T"]),
        "u_min": -float(parameters["max_throttle_steps"]),
    }
    fixed = {
        "plant": {
            k: (float(v) if isinstance(v, float) else int(v)) for k, v in asdict(plant).items()
        },
        "schedule": {k: float(v) for k, v in schedule.items()},
        "controller": controller,
        "ladders": {name: _ladder(ladders[name]) for name in LADDERS},
        "seed": int(seed),
        "transient_s": float(transient_s),
        "interval_s": interval_s,
        "every": int(every),
        "mb_bytes": int(mb_bytes),
    }
    layout = legend_below(
        {
            "xaxis": {"title": {"text": "time (s)"}, "anchor": "y2"},
            "yaxis": {
                "title": {"text": "read wait (ms)"},
                "domain": [0.45, 1.0],
                "rangemode": "tozero",
            },
            "yaxis2": {
                "title": {"text": "writes (MB/s)"},
                "domain": [0.0, 0.38],
                "rangemode": "tozero",
            },
            "margin": {"t": 40, "r": 10, "b": 40, "l": 60},
        }
    )
    return Live(
        "ch10-loop",
        loop_run,
        controls=[
            Range("setpoint_ms", "set point (ms)", 5, 40, grid=[15.0, 20.0], value=15.0, step=0.5),
            Range("kp", "Kp (steps/ms)", 0.02, 2, grid=[0.3, 1.0], value=0.3, log=True),
            Range("alpha", "EWMA alpha", 0.02, 1, grid=[0.25, 0.5], value=0.25, step=0.01),
            Select("form", "controller form", list(FORMS), "listing"),
            Select("ladder", "delay ladder", list(LADDERS), LADDERS[0]),
        ],
        fixed=fixed,
        layout=layout,
        digits=3,
        caption=(
            f"Each run is models.control.loop.closed_loop on the "
            f"thesis's calibrated plant, Ti {controller['ti']:g}, "
            f"Td {controller['td']:g}, T {controller['t']:g}, noise "
            f"seed {seed}; one {interval_s * 1e3:g} ms sample in "
            f"{every} is drawn. 48 "
            "runs (set point x Kp x alpha x form x ladder) were "
            "computed when the book was built."
        ),
    )

"""The sampled closed loop: measure, smooth, control, throttle -- every ``interval_s`` seconds.

Each sample (Oslo thesis 2010, listing A.2):

1. the plant reports the average wait of the reads completed in the last interval (0 if none);
2. the EWMA folds it in;
3. the PID turns ``setpoint - smoothed`` (in ms) into an output ``u <= 0``;
4. ``floor(-u)`` picks the delay step, which holds until the next sample.

:func:`run_closed_loop` returns the whole run as a :class:`pandas.DataFrame`; :func:`on_off_schedule`
builds the thesis's workload, all writers starting together and pausing together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..checks import positive, whole
from .ewma import Ewma
from .pid import VelocityPID, throttle_steps
from .plant import SharedDiskPlant
from .throttle import DelayThrottle

__all__ = ["on_off_schedule", "run_closed_loop", "settled", "LoopSummary", "summarize"]


def on_off_schedule(duration_s: float, on_s: float, off_s: float, writers: int, interval_s: float = 0.1,
                    lead_s: float = 0.0) -> np.ndarray:
    """Writers active in each sample: 0 for ``lead_s``, then ``writers`` for ``on_s``, 0 for ``off_s``, repeated."""
    dur = positive("duration_s", duration_s)
    on = positive("on_s", on_s)
    off = positive("off_s", off_s)
    n = whole("writers", writers, minimum=0)
    dt = positive("interval_s", interval_s)
    if lead_s < 0:
        raise ValueError(f"lead_s must not be negative, got {lead_s!r}")
    t = np.arange(int(round(dur / dt))) * dt
    phase = np.mod(t - lead_s, on + off)
    active = (t >= lead_s) & (phase < on - 1e-9)
    return np.where(active, n, 0).astype(int)


def run_closed_loop(plant: SharedDiskPlant, schedule, setpoint_s: float, *, controller: VelocityPID | None = None,
                    alpha: float = 0.25, throttle: DelayThrottle | None = None, interval_s: float = 0.1,
                    seed: int = 0, hold_at_zero: bool | None = None) -> pd.DataFrame:
    """Run the loop over ``schedule`` (writers per sample) and return one row per sample.

    Parameters
    ----------
    plant : SharedDiskPlant
    schedule : sequence of int
        Active writers in each sample.
    setpoint_s : float
        Wait-time threshold (s); ``numpy.inf`` runs open loop (never throttles).
    controller : VelocityPID, optional
        Defaults to the thesis's parameters (Kp 0.3, Ti 500, Td 1, T 16, output in [-40, 0]) in
        listing form.  It is reset before the run.
    alpha : float
        EWMA weight of the newest sample.
    throttle : DelayThrottle, optional
        Step-to-delay ladder (default: 0.5 ms steps up to 40).
    interval_s : float
        Sample interval (s); the thesis's 100 ms.
    seed : int
        Seed of the measurement noise.
    hold_at_zero : bool, optional
        Keep the previous step when the output is clamped to 0; defaults to ``True`` for the listing form.

    Columns: ``t_s, writers, steps, delay_s, measured_s, smoothed_s, mean_wait_s, write_rate_Bps, u``.
    """
    sched = np.asarray(schedule)
    if sched.ndim != 1 or sched.size == 0 or np.any(sched < 0) or np.any(sched != np.round(sched)):
        raise ValueError(f"schedule must be a non-empty sequence of whole numbers of writers, got {schedule!r}")
    if not (setpoint_s == np.inf):
        positive("setpoint_s", setpoint_s)
    dt = positive("interval_s", interval_s)
    ctl = controller if controller is not None else VelocityPID(0.3, 500, 1, 16, -40.0, 0.0, form="listing")
    ctl.reset()
    thr = throttle if throttle is not None else DelayThrottle()
    hold = (ctl.form == "listing") if hold_at_zero is None else bool(hold_at_zero)
    filt = Ewma(alpha)
    rng = np.random.default_rng(whole("seed", seed, minimum=0))
    steps = 0
    rows = []
    for i, n in enumerate(sched.astype(int)):
        delay = thr.delay(steps)
        measured, _reads, st = plant.sample(int(n), delay, dt, rng)
        smoothed = filt.update(measured)
        if setpoint_s == np.inf:
            u = 0.0
        else:
            error_ms = (setpoint_s - smoothed) * 1e3  # seconds -> milliseconds, the thesis's error unit
            u = ctl.step(error_ms)
            steps = min(thr.max_steps, throttle_steps(u, previous=steps, hold_at_zero=hold))
        rows.append((i * dt, int(n), steps, delay, measured, smoothed, st.read_wait_s, st.write_rate_Bps, u))
        # the step chosen now applies from the next sample on (the throttle acts after the measurement)
    df = pd.DataFrame(rows, columns=["t_s", "writers", "steps", "delay_s", "measured_s", "smoothed_s",
                                     "mean_wait_s", "write_rate_Bps", "u"])
    # 'steps' in a row is the step chosen at the end of that sample; 'delay_s' the delay in force during it
    return df


def settled(df: pd.DataFrame, transient_s: float) -> pd.Series:
    """Mask of samples with writers active for at least ``transient_s`` since they last started."""
    tr = positive("transient_s", transient_s)
    active = df["writers"].to_numpy() > 0
    t = df["t_s"].to_numpy()
    start = np.full(len(df), np.nan)
    last = np.nan
    for i in range(len(df)):
        if active[i] and (i == 0 or not active[i - 1]):
            last = t[i]
        start[i] = last if active[i] else np.nan
    return pd.Series(active & (t - start >= tr - 1e-9), index=df.index)


@dataclass(frozen=True)
class LoopSummary:
    """Means over the settled samples of a run, and the worst overshoot after writers start."""

    mean_wait_s: float
    mean_smoothed_s: float
    mean_write_rate_Bps: float
    mean_delay_s: float
    peak_smoothed_s: float


def summarize(df: pd.DataFrame, transient_s: float) -> LoopSummary:
    """Summarise a run of :func:`run_closed_loop` (``ValueError`` if nothing settles)."""
    m = settled(df, transient_s)
    if not m.any():
        raise ValueError(f"no sample has writers active for transient_s={transient_s!r} s")
    s = df[m]
    return LoopSummary(float(s["mean_wait_s"].mean()), float(s["smoothed_s"].mean()),
                       float(s["write_rate_Bps"].mean()), float(s["delay_s"].mean()),
                       float(df.loc[df["writers"] > 0, "smoothed_s"].max()))

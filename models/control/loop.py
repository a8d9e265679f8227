"""The sampled closed loop: measure, smooth, control, throttle -- every
``interval_s`` seconds.

Each sample (Bjørgeengen 2010, listing A.2):

1. the plant reports the average wait of the reads completed in the last
   interval (0 if none);
2. the EWMA folds it in;
3. the PID turns ``setpoint - smoothed`` (in ms) into an output ``u <= 0``;
4. ``floor(-u)`` picks the delay step, which holds until the next sample.

:func:`closed_loop` returns the whole run as columns of plain lists with
the standard library only (chapter 10's live figure runs it in the reader's
browser), and :func:`loop_summary` sums a run up; :func:`run_closed_loop`
and :func:`summarize` do the same with a :class:`pandas.DataFrame`.
:func:`on_off_schedule` builds the thesis's workload, all writers starting
together and pausing together.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..checks import non_negative, positive, whole
from .ewma import Ewma
from .noise import SMALL_MEAN, NoiseStream
from .pid import VelocityPID, throttle_steps
from .plant import SharedDiskPlant
from .throttle import DelayThrottle

if TYPE_CHECKING:  # annotations only: the loop runs without NumPy and pandas
    import numpy as np
    import pandas as pd

__all__ = [
    "COLUMNS",
    "on_off_schedule",
    "closed_loop",
    "run_closed_loop",
    "settled_mask",
    "settled",
    "LoopSummary",
    "loop_summary",
    "summarize",
]

#: The columns of a run, in order.
COLUMNS = (
    "t_s",
    "writers",
    "steps",
    "delay_s",
    "measured_s",
    "smoothed_s",
    "mean_wait_s",
    "write_rate_Bps",
    "u",
)


#: The most samples a schedule may hold (a day at the thesis's 100 ms sampling is 864,000).
MAX_SAMPLES = 10_000_000


def on_off_schedule(
    duration_s: float,
    on_s: float,
    off_s: float,
    writers: int,
    interval_s: float = 0.1,
    lead_s: float = 0.0,
) -> list[int]:
    """Writers active in each sample: 0 for ``lead_s``, then ``writers``
    for ``on_s``, 0 for ``off_s``, repeated."""
    dur = positive("duration_s", duration_s)
    on = positive("on_s", on_s)
    off = positive("off_s", off_s)
    n = whole("writers", writers, minimum=0)
    dt = positive("interval_s", interval_s)
    lead_s = non_negative("lead_s", lead_s)  # NaN and infinity refused too
    samples = int(round(dur / dt))
    if samples > MAX_SAMPLES:
        raise ValueError(
            f"duration_s / interval_s must be at most {MAX_SAMPLES:,} samples, got {samples:,} "
            f"({duration_s!r} s at {interval_s!r} s)"
        )
    out = []
    for i in range(samples):
        t = i * dt
        phase = (t - lead_s) % (on + off)
        out.append(n if t >= lead_s and phase < on - 1e-9 else 0)
    return out


def _schedule(schedule) -> list[int]:
    """``schedule`` as whole numbers of writers, or ``ValueError``."""
    try:
        sched = [float(x) for x in schedule]
    except (TypeError, ValueError):
        sched = []
    if not sched or any(not math.isfinite(x) or x < 0 or x != int(x) for x in sched):
        raise ValueError(
            f"schedule must be a non-empty sequence of whole numbers of writers, got {schedule!r}"
        )
    return [int(x) for x in sched]


def closed_loop(
    plant: SharedDiskPlant,
    schedule: Sequence[int],
    setpoint_s: float,
    *,
    controller: VelocityPID | None = None,
    alpha: float = 0.25,
    throttle: DelayThrottle | None = None,
    interval_s: float = 0.1,
    seed: int = 0,
    hold_at_zero: bool | None = None,
) -> dict[str, list]:
    """Run the loop over ``schedule`` (writers per sample) and return its
    columns (:data:`COLUMNS`), one value per sample.

    Parameters
    ----------
    plant : SharedDiskPlant
    schedule : sequence of int
        Active writers in each sample.
    setpoint_s : float
        Wait-time threshold (s); ``math.inf`` (``numpy.inf``) runs open
        loop (never throttles).
    controller : VelocityPID, optional
        Defaults to the thesis's parameters (Kp 0.3, Ti 500, Td 1, T 16,
        output in [-40, 0]) in listing form.  It is reset before the run.
    alpha : float
        EWMA weight of the newest sample.
    throttle : DelayThrottle, optional
        Step-to-delay ladder (default: 0.5 ms steps up to 40).
    interval_s : float
        Sample interval (s); the thesis's 100 ms.
    seed : int
        Seed of the measurement noise, a
        :class:`~models.control.noise.NoiseStream` (the draws of
        ``numpy.random.default_rng(seed)``); from a Poisson mean of 10
        reads per interval on, NumPy's generator itself.
    hold_at_zero : bool, optional
        Keep the previous step when the output is clamped to 0; defaults
        to ``True`` for the listing form.

    ``steps`` in a sample is the step chosen at its end; ``delay_s`` the
    delay in force during it.
    """
    sched = _schedule(schedule)
    if setpoint_s != math.inf:
        positive("setpoint_s", setpoint_s)
    dt = positive("interval_s", interval_s)
    ctl = (
        controller
        if controller is not None
        else VelocityPID(0.3, 500, 1, 16, -40.0, 0.0, form="listing")
    )
    ctl.reset()
    thr = throttle if throttle is not None else DelayThrottle()
    hold = (ctl.form == "listing") if hold_at_zero is None else bool(hold_at_zero)
    filt = Ewma(alpha)
    s = whole("seed", seed, minimum=0)
    rng: NoiseStream | np.random.Generator
    if plant.read_rate_per_s * dt < SMALL_MEAN:
        rng = NoiseStream(s)
    else:  # NumPy's large-mean Poisson method
        import numpy as np

        rng = np.random.default_rng(s)
    steps = 0
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    for i, n in enumerate(sched):
        delay = thr.delay(steps)
        measured, _reads, st = plant.sample(n, delay, dt, rng)
        smoothed = filt.update(measured)
        if setpoint_s == math.inf:
            u = 0.0
        else:
            # seconds -> milliseconds, the thesis's error unit
            error_ms = (setpoint_s - smoothed) * 1e3
            u = ctl.step(error_ms)
            steps = min(thr.max_steps, throttle_steps(u, previous=steps, hold_at_zero=hold))
        # the step chosen now applies from the next sample on (the
        # throttle acts after the measurement)
        row = (i * dt, n, steps, delay, measured, smoothed, st.read_wait_s, st.write_rate_Bps, u)
        for c, v in zip(COLUMNS, row):
            cols[c].append(v)
    return cols


def run_closed_loop(
    plant: SharedDiskPlant, schedule, setpoint_s: float, **options
) -> pd.DataFrame:
    """:func:`closed_loop` as a :class:`pandas.DataFrame`, one row per
    sample (the same keyword options)."""
    import pandas as pd

    return pd.DataFrame(closed_loop(plant, schedule, setpoint_s, **options), columns=list(COLUMNS))


def settled_mask(columns: Mapping[str, Sequence[float]], transient_s: float) -> list[bool]:
    """Samples with writers active for at least ``transient_s`` since
    they last started (``columns`` needs ``t_s`` and ``writers``)."""
    tr = positive("transient_s", transient_s)
    out = []
    start = math.nan
    previous = False
    for t, w in zip(columns["t_s"], columns["writers"]):
        active = w > 0
        if active and not previous:
            start = t
        out.append(active and t - start >= tr - 1e-9)
        previous = active
    return out


def settled(df: pd.DataFrame, transient_s: float) -> pd.Series:
    """:func:`settled_mask` of a :func:`run_closed_loop` frame, as a
    boolean Series."""
    import pandas as pd

    cols = {"t_s": df["t_s"].tolist(), "writers": df["writers"].tolist()}
    return pd.Series(settled_mask(cols, transient_s), index=df.index)


@dataclass(frozen=True)
class LoopSummary:
    """Means over the settled samples of a run, and the worst overshoot
    after writers start."""

    mean_wait_s: float
    mean_smoothed_s: float
    mean_write_rate_Bps: float
    mean_delay_s: float
    peak_smoothed_s: float


def loop_summary(columns: Mapping[str, Sequence[float]], transient_s: float) -> LoopSummary:
    """Summarise the columns of :func:`closed_loop` (``ValueError`` if
    nothing settles); the means are correctly rounded (``math.fsum``)."""
    mask = settled_mask(columns, transient_s)
    if not any(mask):
        raise ValueError(f"no sample has writers active for transient_s={transient_s!r} s")

    def mean(name: str) -> float:
        kept = [float(v) for v, m in zip(columns[name], mask) if m]
        return math.fsum(kept) / len(kept)

    peak = max(float(v) for v, w in zip(columns["smoothed_s"], columns["writers"]) if w > 0)
    return LoopSummary(
        mean("mean_wait_s"), mean("smoothed_s"), mean("write_rate_Bps"), mean("delay_s"), peak
    )


def summarize(df: pd.DataFrame, transient_s: float) -> LoopSummary:
    """:func:`loop_summary` of a :func:`run_closed_loop` frame."""
    names = ("t_s", "writers", "smoothed_s", "mean_wait_s", "write_rate_Bps", "delay_s")
    return loop_summary({c: df[c].tolist() for c in names}, transient_s)

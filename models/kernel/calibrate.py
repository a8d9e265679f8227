"""The simulator's host cost model, calibrated on the kernel harness's runs.

Chapter 9 first held the simulator against the harness with one fitted
number per host (``models.kernel.HostFit``): every path
latency zero and one per-operation server time.  That gets every stall
verdict right but not how fast the runs without a stall go.  Here the
host is a set of named costs (:class:`HostCosts`), each a field of the
simulator's :class:`~models.sim.scenario.Host`:

``op_s``
    processing of one message by either thread (``proc_s``);
``tx_s``
    CPU of each data segment a thread's ``send()`` transmits
    (``tx_cpu_s``); on loopback and veth the sender's CPU also runs the
    receiver's protocol processing, so this is the cost of a segment end
    to end and ``softirq_s`` stays 0;
``ack_s``
    soft-interrupt CPU per pure ACK received (``ack_cpu_s``);
``wake_s``
    wake-up latency of a thread that slept (``wake_s``);
``path_s``
    start latency of each direction, split evenly between the sender's
    transmit and the receiver's receive path;

fitted on a stated subset of the sweep (:data:`TRAIN`) and tested on the
rest (:func:`split`).  The quantity fitted and tested is each run's
median operation time, the number the kernel repeats best (its two
congestion controls' runs of one scenario agree within a quarter in
three pairs of four, where their IOPS differ by 1.4 times at the
median): a closed loop's IOPS is ``QD / mean``, and the mean of the
loaded two-CPU machine that ran the sweep carries a tail of operations
that waited for another task's time slice, which no cost of the host
explains.  The fit is a Nelder-Mead search in the logarithms of the
costs from a fixed start (deterministic), minimising the mean squared
log-ratio of simulated to measured median, each row's term capped at 1
so that a row the model cannot reach does not drag the others,
restarted until it stops improving.

>>> c = HostCosts(op_s=5e-6, tx_s=6e-6, ack_s=1e-6, wake_s=1e-6,
...               path_s=2e-6)
>>> c.scenario_options()["server"]["tx_latency_s"]
1e-06
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from models import framing

__all__ = [
    "HostCosts",
    "COSTS",
    "TRAIN",
    "START",
    "split",
    "Fit",
    "fit_costs",
    "min_segments",
    "set_by_congestion_control",
]

#: The fitted costs, in the order of :class:`HostCosts`.
COSTS = ("op_s", "tx_s", "ack_s", "wake_s", "path_s")
#: The training subset is one link (loopback, one MTU), its default
#: congestion control, two socket modes (one segment per response, and
#: header and data as separate segments), queue depths 1 to 8.
TRAIN = {"link": "loopback", "cc": "bbr", "sock_mode": ("more", "nodelay"), "qd_max": 8}
#: Where the search starts, in seconds (a few microseconds each).
START = {"op_s": 4e-6, "tx_s": 4e-6, "ack_s": 1e-6, "wake_s": 1e-6, "path_s": 1e-6}
_HEADER = 48  # bytes of the iSCSI-like response header


@dataclasses.dataclass(frozen=True)
class HostCosts:
    """Named host costs, seconds, the same for both ends (one machine,
    one program)."""

    op_s: float
    tx_s: float
    ack_s: float
    wake_s: float
    path_s: float

    def scenario_options(self) -> dict:
        """The ``client`` and ``server`` parts of a
        :class:`~models.sim.scenario.Scenario` for these costs."""
        host = dict(
            proc_s=self.op_s,
            tx_cpu_s=self.tx_s,
            ack_cpu_s=self.ack_s,
            softirq_s=0.0,
            wake_s=self.wake_s,
            tx_latency_s=self.path_s / 2,
            rx_latency_s=self.path_s / 2,
        )
        return {"client": dict(host), "server": dict(host)}

    def as_us(self) -> dict:
        """The costs in microseconds, by name."""
        return {k: getattr(self, k) * 1e6 for k in COSTS}  # s -> us


def min_segments(sock_mode: str, iosize: int, mss: int) -> int | None:
    """Data segments per response a server in ``sock_mode`` sends when
    nothing holds its data back: ``nodelay`` the header and the data
    separately, ``more_nodelay`` both together; ``None`` for the modes
    with Nagle on, whose coalescing is the model's own business."""
    if sock_mode == "nodelay":
        return 1 + math.ceil(iosize / mss)
    if sock_mode == "more_nodelay":
        return math.ceil((_HEADER + iosize) / mss)
    return None


def set_by_congestion_control(df: pd.DataFrame) -> pd.Series:
    """Rows on a link without a rate limit whose server sent fewer
    segments per operation than its ``TCP_NODELAY`` mode writes:
    something held data back and merged it.  There a transmitted frame is
    released at once (loopback and veth orphan it), so autocorking cannot
    hold; what is left is the congestion control (bbr paces and keeps a
    small window; the cubic runs of the same scenarios never merge).
    Behind a ``tbf`` qdisc frames wait in the queue and autocorking can
    merge, so rate-limited links are left out."""
    mss = df["mtu_bytes"].map(lambda m: framing.mss(int(m)))
    need = [
        min_segments(m, int(n), int(s))
        for m, n, s in zip(df["sock_mode"], df["iosize_bytes"], mss)
    ]
    free = df["rate_limit_bits_per_s"].isna()
    return pd.Series(
        [
            bool(f) and n is not None and seg < 0.95 * n
            for f, n, seg in zip(free, need, df["server_data_segments_per_op"])
        ],
        index=df.index,
    )


def split(iscsi: pd.DataFrame, stalls: pd.Series) -> pd.DataFrame:
    """The iSCSI-loop rows with a ``role``: ``train`` (:data:`TRAIN`),
    ``bbr`` (set by the congestion control), ``stall`` (a delayed-ACK
    stall in the kernel's run: chapter 9's other comparisons), or
    ``test``.  ``stalls`` marks the kernel's stalled runs; the misused
    ``MSG_MORE`` runs are stalls too."""
    df = iscsi.copy()
    train = (
        (df["link"] == TRAIN["link"])
        & (df["cc"] == TRAIN["cc"])
        & df["sock_mode"].isin(TRAIN["sock_mode"])
        & (df["qd"] <= TRAIN["qd_max"])
    )
    role = np.where(
        stalls | (df["sock_mode"] == "more_all"), "stall", np.where(train, "train", "test")
    )
    role = np.where((role == "test") & set_by_congestion_control(df), "bbr", role)
    df["role"] = role
    return df


@dataclasses.dataclass(frozen=True)
class Fit:
    """The result of :func:`fit_costs`: the costs, the training rows'
    log residuals (simulated / measured median), evaluations used."""

    costs: HostCosts
    residuals: tuple
    evaluations: int
    loss: float


def fit_costs(rows: list, median_us, start: dict = START, max_evaluations: int = 600) -> Fit:
    """Fit :class:`HostCosts` to ``rows`` (records of the sweep):
    ``median_us(row, costs)`` is the simulated median operation time of
    a row, microseconds.  Deterministic: a fixed start and Nelder-Mead in
    the logarithms of the costs (SciPy), restarted from its result with a
    narrower simplex until a restart no longer improves the loss."""
    from scipy.optimize import minimize

    measured = np.array([float(r["lat_p50_us"]) for r in rows])

    def costs_of(x) -> HostCosts:
        return HostCosts(**{k: float(math.exp(v) * 1e-6) for k, v in zip(COSTS, x)})

    def residuals(x) -> np.ndarray:
        c = costs_of(x)
        sim = np.array([median_us(r, c) for r in rows])
        return np.log(sim / measured)

    def loss(x) -> float:
        return float(np.mean(np.minimum(residuals(x) ** 2, 1.0)))

    x = np.log([start[k] * 1e6 for k in COSTS])  # s -> us, logs
    evaluations, best, step = 0, math.inf, 0.7
    while evaluations < max_evaluations:
        # A simplex as wide as a factor 2 in each cost (the default one,
        # 5 % of each coordinate, barely moves a cost that starts at
        # 1 us, whose logarithm is 0), narrowed at each restart.
        simplex = np.vstack([x] + [x + step * e for e in np.eye(len(x))])
        res = minimize(
            loss,
            x,
            method="Nelder-Mead",
            options={
                "maxfev": max_evaluations - evaluations,
                "xatol": 0.01,
                "fatol": 1e-5,
                "initial_simplex": simplex,
            },
        )
        evaluations += int(res.nfev)
        improved = res.fun < best - 1e-4
        if res.fun < best:
            best, x = float(res.fun), res.x
        if not improved:
            break
        step = 0.3
    return Fit(
        costs=costs_of(x), residuals=tuple(residuals(x)), evaluations=evaluations, loss=best
    )

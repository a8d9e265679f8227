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
``send_s``, ``gso_s``
    CPU per ``send()`` call (``send_cpu_s``) and per GSO/TSO
    super-packet (``gso_cpu_s``); 0 unless measured (below);

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

**Measured costs are fixed, the rest is fitted inside its range.**
What the host-cost microbenchmarks measure
(``python -m models.measure costs``: the wake-up latency and the
``send()`` costs) is passed as ``fixed`` to :func:`fit_costs` and not
searched; every other cost is searched only inside its plausible range
(:data:`RANGES`, each with its source), and a cost that ends at a bound
is reported (``Fit.at_bound``): the data push it past what is
plausible, so the model lacks something, and the number is not a
measurement.  Without ``fixed`` every cost is fitted, as chapter 9 does
for the bundled sweep (no microbenchmark ran with it).

>>> c = HostCosts(op_s=5e-6, tx_s=6e-6, ack_s=1e-6, wake_s=1e-6,
...               path_s=2e-6)
>>> c.scenario_options()["server"]["tx_latency_s"]
1e-06
>>> RANGES["wake_s"].lo_s <= START["wake_s"] <= RANGES["wake_s"].hi_s
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from models import framing
from models.sim.hostranges import COST_RANGES, Range

__all__ = [
    "HostCosts",
    "COSTS",
    "EXTRA",
    "OPTIONAL",
    "RANGES",
    "FIELDS",
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
START = {
    "op_s": 4e-6,
    "tx_s": 4e-6,
    "ack_s": 1e-6,
    "wake_s": 1e-6,
    "path_s": 1e-6,
    "wcpu_s": 1e-6,
}
#: Costs that are only ever fixed (measured) and never fitted, 0 unless given.
EXTRA = ("send_s", "gso_s", "wake_fast_s", "wake_fast_idle_s", "send_byte_s", "recv_byte_s")
#: Costs that are 0 unless given, and fitted only when asked (``fit_costs(also=...)``): a
#: thread's CPU per wake-up beyond the measured wake-up latency (``wcpu_s``).
OPTIONAL = ("wcpu_s",)
#: The ``Host`` field each cost sets (``path_s`` sets half of each path latency).
FIELDS = {
    "op_s": "proc_s",
    "tx_s": "tx_cpu_s",
    "ack_s": "ack_cpu_s",
    "wake_s": "wake_s",
    "path_s": "tx_latency_s",
    "send_s": "send_cpu_s",
    "gso_s": "gso_cpu_s",
    "wake_fast_s": "wake_fast_s",
    "wake_fast_idle_s": "wake_fast_idle_s",
    "send_byte_s": "send_byte_cpu_s",
    "recv_byte_s": "recv_byte_cpu_s",
    "wcpu_s": "wake_cpu_s",
}
_US = (
    "the loop's costs on a Linux host are microseconds: a message's work and a "
    "segment's path through the stack (Butterfield 2017's stage times)"
)
#: Where the search may go (in seconds), narrower than the profile's
#: plausible ranges (:data:`models.sim.hostranges.COST_RANGES`) at the
#: bottom, where a cost of nanoseconds is a corner of the search, not a host.
RANGES: dict[str, Range] = {
    "op_s": Range(0.2e-6, 200e-6, _US),
    "tx_s": Range(0.05e-6, COST_RANGES["tx_cpu_s"].hi_s, _US),
    "ack_s": Range(0.05e-6, COST_RANGES["ack_cpu_s"].hi_s, _US),
    "wake_s": COST_RANGES["wake_s"],
    # a path's start on loopback or veth: from a tenth of a microsecond
    # (a function call) to the NIC's interrupt moderation, each way
    "path_s": Range(0.1e-6, 2 * COST_RANGES["tx_latency_s"].hi_s, _US),
    # a thread's CPU per wake-up beyond the latency measured to poll()'s return: from a fraction
    # of a system call to the tens of microseconds a wake-up itself takes on a virtual machine
    "wcpu_s": Range(
        0.05e-6,
        10e-6,
        "a system call's CPU up to what the thread's CPU clock counts in a poll() that sleeps",
    ),
}
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
    send_s: float = 0.0
    gso_s: float = 0.0
    wake_fast_s: float = 0.0
    wake_fast_idle_s: float = 0.0
    send_byte_s: float = 0.0
    recv_byte_s: float = 0.0
    wcpu_s: float = 0.0

    def host_fields(self) -> dict:
        """The ``Host`` fields these costs set, seconds (both ends)."""
        host = dict(
            proc_s=self.op_s,
            tx_cpu_s=self.tx_s,
            ack_cpu_s=self.ack_s,
            softirq_s=0.0,
            wake_s=self.wake_s,
            tx_latency_s=self.path_s / 2,
            rx_latency_s=self.path_s / 2,
        )
        if self.send_s or self.gso_s:  # fields of the host cost model, 0 by default
            host.update(send_cpu_s=self.send_s, gso_cpu_s=self.gso_s)
        if self.wake_fast_idle_s:  # a wake-up of a thread idle only briefly (off by default)
            host.update(wake_fast_s=self.wake_fast_s, wake_fast_idle_s=self.wake_fast_idle_s)
        if self.send_byte_s or self.recv_byte_s:  # the copies' cost per byte (off by default)
            host.update(send_byte_cpu_s=self.send_byte_s, recv_byte_cpu_s=self.recv_byte_s)
        if self.wcpu_s:  # a thread's CPU per wake-up (off by default)
            host.update(wake_cpu_s=self.wcpu_s)
        return host

    def scenario_options(self) -> dict:
        """The ``client`` and ``server`` parts of a
        :class:`~models.sim.scenario.Scenario` for these costs."""
        host = self.host_fields()
        return {"client": dict(host), "server": dict(host)}

    def as_us(self) -> dict:
        """The costs in microseconds, by name (the measured-only ones
        when they are set)."""
        names = COSTS + tuple(k for k in EXTRA + OPTIONAL if getattr(self, k))
        return {k: getattr(self, k) * 1e6 for k in names}  # s -> us


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
    log residuals (simulated / measured median), evaluations used, the
    loss; which costs were fixed (measured), which optional costs of
    :data:`OPTIONAL` were searched too (``also``), and which fitted ones
    ended at a bound of their range (``(name, "lower" or "upper")``)."""

    costs: HostCosts
    residuals: tuple
    evaluations: int
    loss: float
    fixed: tuple = ()
    at_bound: tuple = ()
    also: tuple = ()

    @property
    def fitted(self) -> tuple:
        """The names of the costs the search set (the optional ones searched too)."""
        return tuple(k for k in COSTS + tuple(self.also) if k not in self.fixed)

    def to_numbers(self) -> dict[str, float]:
        """The fit as named numbers (a disk cache's entry, :mod:`models.kernel.simcache`): each
        name list as ``"fixed.0.op_s": 1``, a bound as 0 (lower) or 1 (upper).  Read back by
        :meth:`from_numbers`, equal to this one.

        >>> f = Fit(HostCosts(1e-6, 2e-6, 0.0, 3e-6, 0.0), (0.5, -0.25), 40, 0.1,
        ...         fixed=("ack_s",), at_bound=(("wake_s", "upper"),))
        >>> Fit.from_numbers(f.to_numbers()) == f
        True
        """
        out: dict[str, float] = {f"cost.{k}": v for k, v in dataclasses.asdict(self.costs).items()}
        out.update({f"residual.{i}": float(r) for i, r in enumerate(self.residuals)})
        out["evaluations"], out["loss"] = self.evaluations, self.loss
        for group, names in (("fixed", self.fixed), ("also", self.also)):
            out.update({f"{group}.{i}.{k}": 1 for i, k in enumerate(names)})
        for i, (k, side) in enumerate(self.at_bound):
            out[f"at_bound.{i}.{k}"] = _SIDES.index(side)
        return out

    @classmethod
    def from_numbers(cls, numbers: dict[str, float]) -> Fit:
        """The fit :meth:`to_numbers` wrote (residuals as NumPy floats, as :func:`fit_costs`
        gives them).  A malformed entry raises ``ValueError`` naming what is wrong."""
        groups: dict[str, list] = {
            g: [] for g in ("cost", "residual", "fixed", "also", "at_bound")
        }
        for name, v in numbers.items():
            head, _, rest = name.partition(".")
            if head not in groups:
                if name not in ("evaluations", "loss"):
                    raise ValueError(f"a fit's numbers: unknown name {name!r}")
                continue
            groups[head].append((rest, v))
        try:
            costs = HostCosts(**{k: v for k, v in groups["cost"]})
            residuals = tuple(np.float64(v) for _, v in groups["residual"])
            evaluations, loss = int(numbers["evaluations"]), float(numbers["loss"])
            bounds = tuple((k.partition(".")[2], _SIDES[int(v)]) for k, v in groups["at_bound"])
        except (TypeError, KeyError, IndexError) as e:
            raise ValueError(f"a fit's numbers are incomplete or malformed: {e}") from None
        return cls(
            costs=costs,
            residuals=residuals,
            evaluations=evaluations,
            loss=loss,
            fixed=tuple(k.partition(".")[2] for k, _ in groups["fixed"]),
            at_bound=bounds,
            also=tuple(k.partition(".")[2] for k, _ in groups["also"]),
        )


_SIDES = ("lower", "upper")  # Fit.at_bound's sides, as Fit.to_numbers numbers them


#: A fitted cost within this fraction of its range's width (in
#: logarithms) of a bound is reported as at that bound.
AT_BOUND = 0.01


def _check_fixed(fixed: Mapping[str, float]) -> dict[str, float]:
    out = {}
    for k, v in fixed.items():
        if k not in COSTS + EXTRA + OPTIONAL:
            known = ", ".join(COSTS + EXTRA + OPTIONAL)
            raise ValueError(f"fixed: {k!r} is not a host cost; known: {known}")
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"fixed: {k} must be a finite number of seconds >= 0, got {v!r}")
        out[k] = float(v)
    return out


def fit_costs(
    rows: list,
    median_us,
    start: Mapping[str, float] = START,
    max_evaluations: int = 600,
    fixed: Mapping[str, float] | None = None,
    ranges: Mapping[str, Range] = RANGES,
    measured_us=None,
    also: tuple[str, ...] = (),
) -> Fit:
    """Fit :class:`HostCosts` to ``rows`` (records of the sweep):
    ``median_us(row, costs)`` is the simulated median operation time of
    a row, microseconds.  The costs in ``fixed`` (seconds; measured) are
    held; every other cost of :data:`COSTS` is searched inside its range
    of ``ranges`` (seconds).  Deterministic: a fixed start and
    Nelder-Mead in bounded coordinates (a logistic map onto the
    logarithm of each range), restarted from its result with a narrower
    simplex until a restart no longer improves the loss.  ``measured_us(row)``
    is the measured value ``median_us`` is held to (default: the row's
    ``lat_p50_us``).  ``also`` names costs of :data:`OPTIONAL` to search too (0 otherwise).

    Raises
    ------
    ValueError
        A fixed cost that is unknown or not a number of seconds >= 0, a
        start outside its range, or no rows.
    """
    from scipy.optimize import minimize

    if not rows:
        raise ValueError("rows: need at least one training row, got none")
    held = _check_fixed(fixed or {})
    unknown = [k for k in also if k not in OPTIONAL]
    if unknown:
        raise ValueError(f"also: {unknown[0]!r} is not an optional cost; known: {OPTIONAL}")
    free = [k for k in COSTS + tuple(also) if k not in held]
    bounds = {k: (math.log(ranges[k].lo_s), math.log(ranges[k].hi_s)) for k in free}
    for k in free:
        if not ranges[k].lo_s <= start[k] <= ranges[k].hi_s:
            raise ValueError(
                f"start: {k} must be in [{ranges[k].lo_s:g}, {ranges[k].hi_s:g}] s, "
                f"got {start[k]!r}"
            )
    measured = np.array(
        [float(r["lat_p50_us"]) if measured_us is None else float(measured_us(r)) for r in rows]
    )

    def values(x) -> dict[str, float]:
        out = {}
        for k, v in zip(free, x):
            lo, hi = bounds[k]
            out[k] = math.exp(lo + (hi - lo) / (1.0 + math.exp(-float(v))))  # logistic
        return out

    def costs_of(x) -> HostCosts:
        return HostCosts(**{**held, **values(x)})

    def residuals(x) -> np.ndarray:
        c = costs_of(x)
        sim = np.array([median_us(r, c) for r in rows])
        return np.log(sim / measured)

    def loss(x) -> float:
        return float(np.mean(np.minimum(residuals(x) ** 2, 1.0)))

    def coordinate(k: str) -> float:
        lo, hi = bounds[k]
        u = min(max((math.log(start[k]) - lo) / (hi - lo), 1e-6), 1 - 1e-6)
        return math.log(u / (1 - u))  # the logistic map's inverse

    x = np.array([coordinate(k) for k in free])
    evaluations, best, step = 0, math.inf, 0.7
    while free and evaluations < max_evaluations:
        # A simplex about a factor 2 wide in each cost at the start (the
        # default one, 5 % of each coordinate, barely moves a cost whose
        # coordinate is near 0), narrowed at each restart.
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
    if not free:
        best, evaluations = loss(x), 1
    got = values(x)
    at_bound = []
    for k in free:
        lo, hi = bounds[k]
        u = (math.log(got[k]) - lo) / (hi - lo)
        if u <= AT_BOUND:
            at_bound.append((k, "lower"))
        elif u >= 1 - AT_BOUND:
            at_bound.append((k, "upper"))
    return Fit(
        costs=costs_of(x),
        residuals=tuple(residuals(x)),
        evaluations=evaluations,
        loss=best,
        fixed=tuple(held),
        at_bound=tuple(at_bound),
        also=tuple(also),
    )

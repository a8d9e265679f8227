"""Throttling by packet delay: what a fixed added delay does to a queue-depth-limited initiator.

A synchronous initiator keeps ``QD`` operations in flight.  By the ring identity ``IOPS = QD / RTT``
(:func:`models.analytic.iops_identity`), anything that lengthens every operation's round trip lowers
its rate.  If the target delays its outgoing packets by ``d`` seconds and each operation has to wait
for ``k`` such delayed messages in turn, the round trip becomes ``RTT0 + k*d`` and the data rate is

    rate(d) = QD * IOSIZE / (RTT0 + k*d)            (bytes per second)

Packets delayed by the same ``d`` travel side by side (netem shifts each packet, it does not space them),
so a many-segment response pays ``d`` once, not once per segment.  ``k`` is therefore the number of
target-to-initiator legs of the exchange, its round trips (:func:`models.iscsi.round_trips`): 1 for a
read, 2 for a write that must wait for an R2T before its data may go.

Units: seconds, bytes, bytes per second.  The thesis's delay classes (Bjørgeengen 2010, listing B.2)
are modelled by :class:`DelayThrottle`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from models.analytic import S, iops_identity

from ..checks import non_negative, positive, whole

__all__ = [
    "d",  # noqa: F822 (made on first use by the module's __getattr__)
    "k",  # noqa: F822
    "RTT0",  # noqa: F822
    "RATE",  # noqa: F822
    "rate_under_delay_expr",
    "transfer_time_expr",
    "rate_under_delay",
    "rtt0_from_rate",
    "rounds_from_rates",
    "transfer_time",
    "DelayThrottle",
]

if TYPE_CHECKING:  # annotations only: the ladder itself needs neither
    import numpy as np
    import sympy as sp

#: The module's SymPy symbols, made on first use (importing SymPy then):
#: ``d`` added delay per delayed message (s), ``k`` delayed messages an
#: operation waits for in turn (1 for a read response), ``RTT0`` round trip
#: of one operation with no added delay (s), ``RATE`` data rate of the
#: initiator (bytes/s).
_SYMBOLS = {
    "d": ("d", {"nonnegative": True}),
    "k": ("k", {"positive": True}),
    "RTT0": ("RTT0", {"positive": True}),
    "RATE": ("rate", {"positive": True}),
}


@functools.cache
def _sym(name: str) -> Any:
    import sympy

    label, assumptions = _SYMBOLS[name]
    return sympy.Symbol(label, **assumptions)


def __getattr__(name: str) -> Any:
    """``d``, ``k``, ``RTT0`` and ``RATE``."""
    if name in _SYMBOLS:
        return _sym(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def rate_under_delay_expr() -> sp.Expr:
    """``rate = QD*IOSIZE/(RTT0 + k*d)``, derived from ``IOPS = QD/RTT`` with ``RTT = RTT0 + k*d``."""
    import sympy as sp

    RTT0, k, d = _sym("RTT0"), _sym("k"), _sym("d")
    iops = sp.solve(iops_identity().subs(S.RTT, RTT0 + k * d), S.IOPS)[0]
    return sp.simplify(S.IOSIZE * iops)


def transfer_time_expr(total_bytes: sp.Symbol | None = None) -> sp.Expr:
    """Seconds to move ``N`` bytes at the delayed rate: linear in ``d`` with slope ``k*N/(QD*IOSIZE)``."""
    import sympy as sp

    n = total_bytes if total_bytes is not None else sp.Symbol("N", positive=True)
    return sp.expand(n / rate_under_delay_expr())


def rate_under_delay(
    iosize_bytes: float, rtt0_s: float, delay_s, rounds: float = 1.0, qd: int = 1
):
    """Bytes per second of a ``qd``-deep initiator when each operation waits for ``rounds`` delayed messages.

    Parameters
    ----------
    iosize_bytes : float
        Data per operation (bytes), e.g. 65536 for the thesis's fio job.
    rtt0_s : float
        Round trip of one operation without added delay (s).
    delay_s : float or array
        Added delay per delayed message (s), >= 0.
    rounds : float
        Delayed messages per operation, > 0 (1 for reads).
    qd : int
        Operations in flight, >= 1.

    >>> round(rate_under_delay(65536, 65536 / 22e6, 9.6e-3) / 1e6, 2)
    5.21
    """
    size = positive("iosize_bytes", iosize_bytes)
    rtt0 = positive("rtt0_s", rtt0_s)
    kk = positive("rounds", rounds)
    q = whole("qd", qd, minimum=1)
    import numpy as np

    delay = np.asarray(delay_s, dtype=float)
    if not np.all(np.isfinite(delay)) or np.any(delay < 0):
        raise ValueError(f"delay_s must be finite and not negative, got {delay_s!r}")
    out = q * size / (rtt0 + kk * delay)  # bytes per op * ops per second
    return float(out) if np.ndim(delay_s) == 0 else out


def rtt0_from_rate(rate_Bps: float, iosize_bytes: float, qd: int = 1) -> float:
    """Undelayed round trip (s) implied by a measured rate: ``RTT0 = QD*IOSIZE/rate`` (ring identity)."""
    return (
        whole("qd", qd, minimum=1)
        * positive("iosize_bytes", iosize_bytes)
        / positive("rate_Bps", rate_Bps)
    )


def rounds_from_rates(
    rate0_Bps: float, rate_Bps: float, delay_s: float, iosize_bytes: float, qd: int = 1
) -> float:
    """Delayed messages per operation implied by two measured rates: ``k = (QD*IOSIZE/rate - RTT0)/d``."""
    dd = positive("delay_s", delay_s)
    rtt0 = rtt0_from_rate(rate0_Bps, iosize_bytes, qd)
    rtt = rtt0_from_rate(rate_Bps, iosize_bytes, qd)
    return (rtt - rtt0) / dd


def transfer_time(
    total_bytes: float,
    iosize_bytes: float,
    rtt0_s: float,
    delay_s,
    rounds: float = 1.0,
    qd: int = 1,
):
    """Seconds to move ``total_bytes`` at :func:`rate_under_delay` (a straight line in the delay)."""
    total = positive("total_bytes", total_bytes)
    return total / rate_under_delay(iosize_bytes, rtt0_s, delay_s, rounds, qd)


@dataclass(frozen=True)
class DelayThrottle:
    """A ladder of fixed delays selected by an integer step (the iptables mark of the thesis).

    Step 0 adds nothing; step ``m >= 1`` adds ``first_s + step_s*(m - 1)`` seconds.  The default is the
    book's reading of section 4.4 (Bjørgeengen 2010): 0.5 ms steps from 0.5 ms up to 20 ms, which is 40
    steps (the marks up to which listing A.2 clamps its output).  Section 4.4 also says 21 steps, which
    does not fit its other two numbers; the default keeps the step and the largest delay.

    The classes the thesis actually lists are fewer.  Listing B.2 builds 20 netem classes, 0.1, 0.6, ...,
    9.6 ms, with a filter for marks 1 to 20 only, under an HTB root whose default class does not exist;
    a packet with any other mark matches no filter and leaves unshaped.  The controller (listing A.2)
    still sets marks up to 40.  ``classes=20`` models that: steps ``classes + 1 .. max_steps`` are legal
    marks that add *no* delay.  ``DelayThrottle(0.5e-3, 40, first_s=0.1e-3, classes=20)`` is the listed
    ladder under the listed controller.

    Parameters
    ----------
    step_s : float
        Delay increment per step (s), > 0.
    max_steps : int
        Highest step (mark) the controller may set, >= 1.
    first_s : float, optional
        Delay of step 1 (s), >= 0; defaults to ``step_s``.
    classes : int, optional
        Steps that have a delay class, ``1 <= classes <= max_steps``; higher steps fall through to no
        delay.  Defaults to ``max_steps`` (every step has a class).
    """

    step_s: float = 0.5e-3
    max_steps: int = 40
    first_s: float | None = None
    classes: int | None = None

    def __post_init__(self) -> None:
        positive("step_s", self.step_s)
        whole("max_steps", self.max_steps, minimum=1)
        if self.first_s is not None:
            non_negative("first_s", self.first_s)
        if self.classes is not None:
            c = whole("classes", self.classes, minimum=1)
            if c > self.max_steps:
                raise ValueError(
                    f"classes must not exceed max_steps={self.max_steps}, got {self.classes!r}"
                )

    @property
    def shaped_steps(self) -> int:
        """The highest step that has a delay class."""
        return self.max_steps if self.classes is None else int(self.classes)

    def delay(self, steps: int) -> float:
        """Added delay (s) of a step; ``ValueError`` outside ``0..max_steps``."""
        m = whole("steps", steps, minimum=0)
        if m > self.max_steps:
            raise ValueError(f"steps must be at most max_steps={self.max_steps}, got {steps!r}")
        if m == 0 or m > self.shaped_steps:
            return 0.0
        first = self.step_s if self.first_s is None else self.first_s
        return first + self.step_s * (m - 1)

    @property
    def max_delay_s(self) -> float:
        """The largest delay any step adds (s)."""
        return self.delay(self.shaped_steps)

    def delays(self) -> np.ndarray:
        """Delay of every step ``0..max_steps`` (s)."""
        import numpy as np

        return np.array([self.delay(m) for m in range(self.max_steps + 1)])

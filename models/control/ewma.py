"""Exponentially weighted moving average: the thesis's smoothing of the measured wait time.

``L_k = alpha*l_k + (1 - alpha)*L_{k-1}`` (Bjørgeengen 2010, section 4.4.1): a first-order low-pass
filter.  A large ``alpha`` follows the input quickly but passes its noise; a small one smooths more and
lags more.  The lag is exact for simple inputs:

* after a step the output has covered ``1 - (1 - alpha)**n`` of it after ``n`` samples;
* on a ramp it trails by ``(1 - alpha)/alpha`` samples;
* its time constant is ``-T/ln(1 - alpha)`` for a sample interval ``T``.

:func:`step_response_expr` and :func:`ramp_lag_expr` derive the last two in SymPy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..checks import finite, fraction, positive

if TYPE_CHECKING:  # annotations only: the filter itself needs neither
    import numpy as np
    import sympy as sp

__all__ = [
    "Ewma",
    "ewma",
    "time_constant_s",
    "ramp_lag_samples",
    "step_response_expr",
    "ramp_lag_expr",
]


class Ewma:
    """Running EWMA of a sampled signal.

    Parameters
    ----------
    alpha : float
        Weight of the newest sample, in (0, 1].  The thesis fits 0.15 and runs its controller at 0.25.
    initial : float
        Starting value of the average (the thesis's scripts start at 0).

    >>> f = Ewma(0.25)
    >>> [f.update(x) for x in (8.0, 8.0)]
    [2.0, 3.5]
    """

    def __init__(self, alpha: float, initial: float = 0.0) -> None:
        self.alpha = fraction("alpha", alpha)
        self._initial = finite("initial", initial)
        self.value = self._initial

    def update(self, sample: float) -> float:
        """Fold in one sample and return the new average."""
        x = finite("sample", sample)
        self.value = self.value + self.alpha * (x - self.value)
        return self.value

    def reset(self) -> None:
        """Return to the initial value."""
        self.value = self._initial


def ewma(samples: Iterable[float], alpha: float, initial: float = 0.0) -> np.ndarray:
    """The EWMA of a whole series (same length as ``samples``)."""
    import numpy as np

    f = Ewma(alpha, initial)
    return np.array([f.update(x) for x in samples], dtype=float)


def time_constant_s(alpha: float, sample_interval_s: float) -> float:
    """Time for the step response to cover ``1 - 1/e`` of a step: ``-T / ln(1 - alpha)`` seconds."""
    a = fraction("alpha", alpha)
    t = positive("sample_interval_s", sample_interval_s)
    if a == 1:
        return 0.0
    return -t / math.log(1 - a)


def ramp_lag_samples(alpha: float) -> float:
    """Samples by which the EWMA trails a ramp in steady state: ``(1 - alpha)/alpha``."""
    a = fraction("alpha", alpha)
    return (1 - a) / a


def _symbols() -> tuple:
    """SymPy, and the symbols ``alpha`` and ``n`` of the derivations."""
    import sympy as sp

    return (sp, sp.Symbol("alpha", positive=True), sp.Symbol("n", integer=True, nonnegative=True))


def step_response_expr() -> sp.Expr:
    """Output after ``n`` samples of a unit step from 0, solved from the recurrence with SymPy's rsolve."""
    sp, _ALPHA, _N = _symbols()
    L = sp.Function("L")
    rec = L(_N + 1) - (_ALPHA * 1 + (1 - _ALPHA) * L(_N))
    return sp.simplify(sp.rsolve(rec, L(_N), {L(0): 0}))


def ramp_lag_expr() -> sp.Expr:
    """Steady-state lag (in samples) behind the ramp ``l_n = n``: solve ``L_n = n - lag`` in the recurrence."""
    sp, _ALPHA, _ = _symbols()
    lag = sp.Symbol("lag")
    n = sp.Symbol("n")
    # L_n = alpha*n + (1-alpha)*L_{n-1} with L_n = n - lag, L_{n-1} = n - 1 - lag
    eq = sp.Eq(n - lag, _ALPHA * n + (1 - _ALPHA) * (n - 1 - lag))
    return sp.simplify(sp.solve(eq, lag)[0])

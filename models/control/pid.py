"""The single-sided, velocity-form PID controller of Bjørgeengen (2010), section 4.4.2.

The controller reads the smoothed wait time ``y`` every sample, forms the error ``e = setpoint - y``
(negative when the wait is too high) and updates an output ``u`` that is clamped to ``[u_min, 0]``.
A negative output is throttling: ``floor(-u)`` is the delay step (:func:`throttle_steps`).  Clamping the
stored output is the thesis's guard against integral wind-up, and the zero ceiling means it never
throttles while the wait is below the set point for long enough to drive ``u`` back up.

Three increments are offered:

``form="textbook"``: the velocity form of the backward-Euler PID, derived here from the thesis's
equation 4.1 (:func:`velocity_increment_expr`).  It is a reconstruction: the thesis does not print it ::

    u_k = u_{k-1} + Kp(1 + T/Ti) e_k - Kp e_{k-1} + (Kp Td/T)(e_k - 2 e_{k-1} + e_{k-2})

``form="printed"``: equation 4.2 as the thesis prints it, with no ``e_k`` outside the derivative term
(:func:`printed_increment_expr`) ::

    u_k = u_{k-1} + Kp(1 + T/Ti) + Kp e_{k-1} + (Kp Td/T)(e_k - 2 e_{k-1} + e_{k-2})

``form="listing"``: the increment as coded in listings A.2 and A.3 ::

    u_k = u_{k-1} + Kp(1 - T/Ti) + Kp e_k + (Kp Td/T)(e_k - 2 e_{k-1} + e_{k-2})

The listing's ``Kp e_k`` term acts as an integrator with gain ``Kp`` per sample, and the constant
``Kp(1 - T/Ti)`` pulls ``u`` towards zero every sample, so in steady state it holds the error at
``-(1 - T/Ti)``: the wait sits that many milliseconds above the set point (:func:`steady_error_expr`).
The printed form is the same kind of integrator, one sample late (``e_{k-1}``), with a constant
``Kp(1 + T/Ti)``: it rests ``1 + T/Ti`` ms above the set point.
Also as in the listings, ``form="listing"`` keeps the previous step when ``u`` is clamped to exactly 0
(the Perl code only recomputes the mark when ``u < 0``); pass ``hold_at_zero`` to :func:`throttle_steps`.

Units follow the thesis: error in milliseconds, output in throttle steps, so ``Kp`` is in steps per ms;
``T``, ``Ti`` and ``Td`` only enter as the ratios ``T/Ti`` and ``Td/T``.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from ..checks import finite, non_negative, positive

if TYPE_CHECKING:  # annotations only: the controller itself needs no SymPy
    import sympy as sp

__all__ = [
    "VelocityPID",
    "throttle_steps",
    "positional_expr",
    "velocity_increment_expr",
    "printed_increment_expr",
    "listing_increment_expr",
    "steady_error_expr",
    "FORMS",
]

#: The increments :class:`VelocityPID` implements (see the module docstring).
FORMS = ("textbook", "printed", "listing")


class VelocityPID:
    """Discrete PID in velocity (incremental) form with a clamped output.

    Parameters
    ----------
    kp : float
        Proportional gain (output units per error unit), > 0.  Thesis: 0.3 steps per ms.
    ti : float
        Integral time, > 0 (same unit as ``t``).  Thesis: 500.
    td : float
        Derivative time, >= 0 (same unit as ``t``).  Thesis: 1.
    t : float
        Sample time as it enters the formula, > 0.  Thesis: 16.
    u_min, u_max : float
        Output clamp, ``u_min < u_max``.  Thesis: -40 and 0.
    form : {"textbook", "printed", "listing"}
        Which increment to apply (see the module docstring).

    >>> pid = VelocityPID(kp=0.3, ti=500, td=1, t=16)
    >>> round(pid.step(-10.0), 4)     # wait 10 ms above the set point: throttle
    -3.2835
    """

    def __init__(
        self,
        kp: float,
        ti: float,
        td: float,
        t: float,
        u_min: float = -40.0,
        u_max: float = 0.0,
        form: str = "textbook",
    ) -> None:
        self.kp = positive("kp", kp)
        self.ti = positive("ti", ti)
        self.td = non_negative("td", td)
        self.t = positive("t", t)
        self.u_min = finite("u_min", u_min)
        self.u_max = finite("u_max", u_max)
        if not self.u_min < self.u_max:
            raise ValueError(f"u_min must be below u_max, got u_min={u_min!r}, u_max={u_max!r}")
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        self.form = form
        self.reset()

    def reset(self) -> None:
        """Zero the output and the remembered errors."""
        self.u = 0.0
        self._e1 = 0.0  # e_{k-1}
        self._e2 = 0.0  # e_{k-2}

    def increment(self, error: float) -> float:
        """The unclamped change of output this error would cause (does not update the state)."""
        e = finite("error", error)
        kp, ratio_i, ratio_d = self.kp, self.t / self.ti, self.td / self.t
        derivative = kp * ratio_d * (e - 2 * self._e1 + self._e2)
        if self.form == "textbook":
            return kp * (1 + ratio_i) * e - kp * self._e1 + derivative
        if self.form == "printed":
            return kp * (1 + ratio_i) + kp * self._e1 + derivative
        return kp * (1 - ratio_i) + kp * e + derivative

    def step(self, error: float) -> float:
        """Apply one sample's error (set point minus measurement) and return the clamped output."""
        du = self.increment(error)
        self.u = min(self.u_max, max(self.u_min, self.u + du))
        self._e2, self._e1 = self._e1, float(error)
        return self.u


def throttle_steps(u: float, previous: int = 0, hold_at_zero: bool = False) -> int:
    """Delay step for a controller output ``u <= 0``: ``-ceil(u)`` as in the listings, i.e. ``floor(-u)``.

    With ``hold_at_zero`` (the listings' behaviour) an output of exactly 0 keeps ``previous``.
    """
    v = finite("u", u)
    if v > 0:
        raise ValueError(f"u must not be positive (the output is clamped to <= 0), got {u!r}")
    if v == 0 and hold_at_zero:
        return int(previous)
    return int(-math.ceil(v))


# ---------------------------------------------------------------------------------------------------
# Symbolic forms
# ---------------------------------------------------------------------------------------------------

#: The symbols of the derivations, made on first use (importing SymPy then):
#: ``Kp, Ti, Td, T`` (positive) and the errors ``e_k, e_k1, e_k2``.
_SYMBOLS = {
    "Kp": "K_p",
    "Ti": "T_i",
    "Td": "T_d",
    "T": "T",
    "e_k": "e_k",
    "e_k1": "e_k1",
    "e_k2": "e_k2",
}


@functools.cache
def _sym(name: str) -> Any:
    import sympy

    if name.startswith("e_"):
        return sympy.Symbol(_SYMBOLS[name])
    return sympy.Symbol(_SYMBOLS[name], positive=True)


def __getattr__(name: str) -> Any:
    """``Kp``, ``Ti``, ``Td``, ``T``, ``e_k``, ``e_k1``, ``e_k2``."""
    if name in _SYMBOLS:
        return _sym(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def positional_expr(errors: list[sp.Expr], k: int) -> sp.Expr:
    """Backward-Euler PID output at sample ``k``: ``Kp(e_k + T/Ti*sum(e_0..e_k) + Td/T*(e_k - e_{k-1}))``."""
    import sympy as sp

    Kp, Ti, Td, T = (_sym(n) for n in ("Kp", "Ti", "Td", "T"))
    ek = errors[k]
    ek1 = errors[k - 1] if k >= 1 else 0
    return Kp * (ek + T / Ti * sp.Add(*errors[: k + 1]) + Td / T * (ek - ek1))


def velocity_increment_expr() -> sp.Expr:
    """``u_k - u_{k-1}`` of :func:`positional_expr` in ``e_k, e_{k-1}, e_{k-2}`` (the textbook form)."""
    import sympy as sp

    es = list(sp.symbols("e0:6"))
    k = 5
    du = sp.expand(positional_expr(es, k) - positional_expr(es, k - 1))
    return du.subs({es[k]: _sym("e_k"), es[k - 1]: _sym("e_k1"), es[k - 2]: _sym("e_k2")})


def printed_increment_expr() -> sp.Expr:
    """Equation 4.2 exactly as printed in the thesis (see the module docstring)."""
    Kp, Ti, Td, T, e_k, e_k1, e_k2 = (_sym(n) for n in _SYMBOLS)
    return Kp * (1 + T / Ti) + Kp * e_k1 + Kp * Td / T * (e_k - 2 * e_k1 + e_k2)


def listing_increment_expr() -> sp.Expr:
    """The increment coded in listings A.2/A.3 (see the module docstring)."""
    Kp, Ti, Td, T, e_k, e_k1, e_k2 = (_sym(n) for n in _SYMBOLS)
    return Kp * (1 - T / Ti) + Kp * e_k + Kp * Td / T * (e_k - 2 * e_k1 + e_k2)


def steady_error_expr(form: str = "listing") -> sp.Expr:
    """The constant error at which the increment is zero (the controller's resting error)."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    import sympy as sp

    e_k, e_k1, e_k2 = _sym("e_k"), _sym("e_k1"), _sym("e_k2")
    inc = {
        "textbook": velocity_increment_expr,
        "printed": printed_increment_expr,
        "listing": listing_increment_expr,
    }[form]()
    ess = sp.Symbol("e_ss")
    sol = sp.solve(inc.subs({e_k: ess, e_k1: ess, e_k2: ess}), ess)
    return sp.simplify(sol[0])

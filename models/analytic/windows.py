"""Windows over distance: how much a window, a link and a round trip allow (chapter 11).

A sender that may have at most ``W`` bytes unacknowledged moves at most ``W`` bytes per round trip, and
never faster than the link:

    X <= min(W / RTT, C)                         (bytes per second)

This is the ring identity ``IOPS = QD / RTT`` (``models.analytic.iops_identity``) with the window
as the data in flight (``QD * IOSIZE = W``).  The link is full only when ``W >= C * RTT``, the
bandwidth-delay product (BDP), and a window ``W`` fills a link of rate ``C`` only up to ``RTT* = W / C``.
Without window scaling (RFC 1323/7323) the TCP window field holds at most 65535 bytes.

Message windows (Charrouf 2008's COM window) count *messages* in flight; with ``n`` messages of ``m``
bytes, each taking ``RTT + L`` to be acknowledged, ``X = n*m/(RTT + L)``; two (window, RTT) pairs that
each just fill the link fix ``m`` and ``L`` (``message_window_fit``).

Units: bytes, seconds, bytes per second; link rates in bits per second as quoted (converted where used).

The numeric bounds need only the standard library (chapter 11's live figure runs them in the reader's
browser): SymPy is imported on first use of a symbol (``W``, ``C``) or a symbolic result, NumPy only by
:func:`effective_window_bytes`.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from ..checks import non_negative as _nonneg
from ..checks import positive as _pos
from .symbolic import S, iops_identity

__all__ = [
    "T3_BPS",
    "MAX_UNSCALED_WINDOW_BYTES",
    "W",  # noqa: F822 (made on first use by the module's __getattr__)
    "C",  # noqa: F822
    "window_bound_expr",
    "bdp_expr",
    "crossover_rtt_expr",
    "message_window_exprs",
    "window_bound_Bps",
    "throughput_bound_Bps",
    "bdp_bytes",
    "crossover_rtt_s",
    "effective_window_bytes",
    "message_window_fit",
]

#: T3 line rate as Charrouf (2008) quotes it ("around 45 Mbps"), bits per second.
T3_BPS = 45e6
#: Largest window a TCP header can carry without the window-scale option (16-bit field), bytes.
MAX_UNSCALED_WINDOW_BYTES = 65535

if TYPE_CHECKING:  # annotations only: neither is imported with the module
    import sympy as sp

#: The module's SymPy symbols, made on first use: ``W`` (window, bytes
#: allowed in flight), ``C`` (link rate, bytes per second) and the message
#: window's ``m`` and ``L``.
_SYMBOLS = {"W": "W", "C": "C", "_m": "m", "_L": "L"}


@functools.cache
def _symbol(name: str) -> Any:
    import sympy

    return sympy.Symbol(_SYMBOLS[name], positive=True)


def __getattr__(name: str) -> Any:
    """``W`` and ``C`` on first access (importing SymPy then)."""
    if name in ("W", "C"):
        return _symbol(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def window_bound_expr() -> sp.Expr:
    """``W/RTT``: ``IOSIZE * IOPS`` from ``IOPS = QD/RTT`` with the bytes in flight ``QD*IOSIZE = W``."""
    import sympy as sp

    W = _symbol("W")
    iops = sp.solve(iops_identity(), S.IOPS)[0]
    rate = sp.expand(S.IOSIZE * iops)
    return sp.simplify(rate.subs(S.QD, W / S.IOSIZE))


def bdp_expr() -> sp.Expr:
    """Window that makes the window bound equal the link rate: solve ``W/RTT = C`` for ``W``."""
    import sympy as sp

    return sp.solve(sp.Eq(window_bound_expr(), _symbol("C")), _symbol("W"))[0]


def crossover_rtt_expr() -> sp.Expr:
    """Round trip beyond which a window ``W`` can no longer fill a link ``C``: solve ``W/RTT = C`` for RTT."""
    import sympy as sp

    return sp.solve(sp.Eq(window_bound_expr(), _symbol("C")), S.RTT)[0]


def message_window_exprs() -> dict:
    """Message size ``m`` and per-message latency ``L`` from two windows ``n1, n2`` that fill ``C`` at ``RTT1, RTT2``.

    Solves ``n_i*m/(RTT_i + L) = C`` for ``i = 1, 2``.
    """
    import sympy as sp

    C, _m, _L = _symbol("C"), _symbol("_m"), _symbol("_L")
    n1, n2, r1, r2 = sp.symbols("n1 n2 RTT1 RTT2", positive=True)
    sol = sp.solve(
        [sp.Eq(n1 * _m, C * (r1 + _L)), sp.Eq(n2 * _m, C * (r2 + _L))], [_m, _L], dict=True
    )[0]
    return {"m": sp.simplify(sol[_m]), "L": sp.simplify(sol[_L]), "symbols": (n1, n2, r1, r2)}


def window_bound_Bps(window_bytes: float, rtt_s: float) -> float:
    """``W / RTT`` in bytes per second (infinite for ``rtt_s = 0``)."""
    w = _pos("window_bytes", window_bytes)
    r = _nonneg("rtt_s", rtt_s)
    return math.inf if r == 0 else w / r


def throughput_bound_Bps(
    window_bytes: float, rtt_s: float, link_bps: float = T3_BPS, connections: int = 1
) -> float:
    """``min(connections * W / RTT, C)`` in bytes per second; ``link_bps`` in bits per second."""
    c = _pos("link_bps", link_bps) / 8  # bits/s -> bytes/s
    k = _pos("connections", connections)
    if k != int(k):
        raise ValueError(f"connections must be a whole number, got {connections!r}")
    return min(k * window_bound_Bps(window_bytes, rtt_s), c)


def bdp_bytes(rtt_s: float, link_bps: float = T3_BPS) -> float:
    """Bandwidth-delay product ``C * RTT`` in bytes (``link_bps`` in bits per second)."""
    return (
        _pos("link_bps", link_bps) / 8 * _nonneg("rtt_s", rtt_s)
    )  # bits/s -> bytes/s, times seconds


def crossover_rtt_s(window_bytes: float, link_bps: float = T3_BPS) -> float:
    """Largest RTT at which ``window_bytes`` still fills the link: ``W / C`` seconds."""
    return _pos("window_bytes", window_bytes) / (
        _pos("link_bps", link_bps) / 8
    )  # bytes / (bytes/s)


def effective_window_bytes(throughput_Bps, rtt_s):
    """Bytes in flight implied by a measured throughput, by Little's law: ``X * RTT``."""
    import numpy as np

    x = np.asarray(throughput_Bps, dtype=float)
    r = np.asarray(rtt_s, dtype=float)
    if np.any(~np.isfinite(x)) or np.any(x < 0):
        raise ValueError(f"throughput_Bps must be finite and not negative, got {throughput_Bps!r}")
    if np.any(~np.isfinite(r)) or np.any(r < 0):
        raise ValueError(f"rtt_s must be finite and not negative, got {rtt_s!r}")
    out = x * r
    return float(out) if out.ndim == 0 else out


def message_window_fit(
    n1: float, rtt1_s: float, n2: float, rtt2_s: float, link_bps: float = T3_BPS
) -> tuple[float, float]:
    """``(m, L)``: message bytes and per-message latency (s) if windows ``n1``, ``n2`` just fill the link.

    ``ValueError`` unless ``n2 > n1`` and ``rtt2_s > rtt1_s`` (a longer path needs a larger window).
    """
    a, b = _pos("n1", n1), _pos("n2", n2)
    r1, r2 = _nonneg("rtt1_s", rtt1_s), _nonneg("rtt2_s", rtt2_s)
    c = _pos("link_bps", link_bps) / 8  # bits/s -> bytes/s
    if not (b > a and r2 > r1):
        raise ValueError(
            f"need n2 > n1 and rtt2_s > rtt1_s, got n1={n1!r}, n2={n2!r}, rtt1_s={rtt1_s!r}, rtt2_s={rtt2_s!r}"
        )
    ex = message_window_exprs()
    s1, s2, t1, t2 = ex["symbols"]
    vals = {s1: a, s2: b, t1: r1, t2: r2, _symbol("C"): c}
    return float(ex["m"].subs(vals)), float(ex["L"].subs(vals))

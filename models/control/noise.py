"""The plant's measurement noise, with the standard library only.

A sample of the plant (:meth:`models.control.plant.SharedDiskPlant.sample`)
draws how many reads complete in the interval (Poisson) and the mean of
their waits (exponential).  :class:`NoiseStream` draws both exactly as
``numpy.random.default_rng(seed)`` does -- the same PCG64 stream
(:class:`models.rng.PCG64`), the same algorithms, the same sum for the
mean -- so a seed gives the same closed-loop run with or without NumPy, in
CPython and in the reader's browser (chapter 10's live figure).
``tests/test_control.py`` checks it against NumPy draw by draw.

The algorithms are the published ones NumPy uses:

* **Poisson** with a small mean (below 10): multiply uniforms until the
  product falls to ``exp(-lam)`` (Knuth); the count of factors before that
  is the draw.  Larger means use NumPy's transformed rejection, which this
  module does not reproduce: :meth:`NoiseStream.poisson` raises
  ``ValueError`` there, and :func:`models.control.loop.closed_loop` falls
  back to NumPy.
* **Exponential**: the ziggurat of Marsaglia and Tsang (2000) with 256
  layers and 53-bit mantissas.  Its tables are computed here from the
  ziggurat's right edge ``r`` in 40-digit decimal arithmetic (correctly
  rounded, so the same on every platform; 24 digits already give the same
  doubles), then rounded to doubles.
* **Mean** of the ``n`` waits: NumPy's pairwise summation (eight running
  sums over blocks of up to 128 values), divided by ``n``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from decimal import Decimal, localcontext

from models.rng import PCG64

__all__ = ["NoiseStream", "numpy_sum", "SMALL_MEAN"]

#: Largest Poisson mean (exclusive) drawn by multiplication, as NumPy does.
SMALL_MEAN = 10.0
#: Right edge of the exponential ziggurat's base strip (Marsaglia and Tsang
#: 2000, 256 layers), to 60 digits.
_R = "7.69711747013104971404462804811408952334296818528283253278834"
_R_FLOAT = float(Decimal(_R))
_LAYERS = 256
_MANTISSA_BITS = 53  # random bits left for a draw after the layer


@functools.cache
def _ziggurat() -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
    """``(k, w, f)``: the exponential ziggurat's acceptance bounds, layer
    widths per unit of the 53-bit draw, and densities at the layer edges.

    Every layer has the area ``v = (r + 1) exp(-r)`` of the base strip;
    going down from the top, each edge ``x`` is found from the one above
    by ``x = -ln(v / x_above + exp(-x_above))``.
    """
    with localcontext() as ctx:
        ctx.prec = 40
        r = Decimal(_R)
        v = (r + 1) * (-r).exp()
        scale = Decimal(2) ** _MANTISSA_BITS
        k = [0] * _LAYERS
        w = [0.0] * _LAYERS
        f = [0.0] * _LAYERS
        q = v / (-r).exp()  # the base strip's width
        k[0] = int(r / q * scale)
        w[0] = float(q / scale)
        w[-1] = float(r / scale)
        f[0] = 1.0
        f[-1] = float((-r).exp())
        x = above = r
        for i in range(_LAYERS - 2, 0, -1):
            x = -(v / x + (-x).exp()).ln()
            k[i + 1] = int(x / above * scale)
            above = x
            f[i] = float((-x).exp())
            w[i] = float(x / scale)
    return tuple(k), tuple(w), tuple(f)


def numpy_sum(values: Sequence[float]) -> float:
    """The sum of ``values`` exactly as NumPy's ``add.reduce`` forms it for
    a contiguous float64 array (pairwise, eight running sums per block of
    up to 128 values)."""
    n = len(values)
    if n < 8:
        total = 0.0
        for v in values:
            total += v
        return total
    if n <= 128:
        r = list(values[:8])
        i = 8
        while i < n - n % 8:
            for j in range(8):
                r[j] += values[i + j]
            i += 8
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for v in values[i:]:
            total += v
        return total
    half = n // 2
    half -= half % 8
    return numpy_sum(values[:half]) + numpy_sum(values[half:])


class NoiseStream:
    """``numpy.random.default_rng(seed)``'s Poisson and exponential draws.

    >>> s = NoiseStream(2010)
    >>> s.poisson(3.2), round(s.exponential_mean(0.045, 3), 12)
    (3, 0.035334058566)
    """

    __slots__ = ("_bits",)

    def __init__(self, seed: int) -> None:
        self._bits = PCG64(seed)

    def poisson(self, lam: float) -> int:
        """``Generator.poisson(lam)`` for ``0 <= lam < 10``."""
        if not 0 <= lam < SMALL_MEAN:
            raise ValueError(
                f"lam must lie in [0, {SMALL_MEAN:g}) for the standard-library stream, got {lam!r}"
            )
        if lam == 0:
            return 0
        floor = math.exp(-lam)
        count, product = 0, 1.0
        while True:
            product *= self._bits.random()
            if product <= floor:
                return count
            count += 1

    def standard_exponential(self) -> float:
        """``Generator.standard_exponential()``: one draw, mean 1."""
        k, w, f = _ziggurat()
        bits = self._bits
        while True:
            draw = bits.next_uint64() >> 3
            layer = draw & 0xFF
            draw >>= 8
            x = draw * w[layer]
            if draw < k[layer]:
                return x  # inside the layer's rectangle
            if layer == 0:  # the tail beyond r
                return _R_FLOAT - math.log1p(-bits.random())
            if (f[layer - 1] - f[layer]) * bits.random() + f[layer] < math.exp(-x):
                return x

    def exponential(self, scale: float, size: int) -> list[float]:
        """``Generator.exponential(scale, size)`` as a list."""
        return [scale * self.standard_exponential() for _ in range(size)]

    def exponential_mean(self, scale: float, size: int) -> float:
        """``Generator.exponential(scale, size).mean()`` (``size >= 1``)."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be a whole number >= 1, got {size!r}")
        return numpy_sum(self.exponential(scale, size)) / size

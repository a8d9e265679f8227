"""NumPy's default random generator (PCG64 seeded by SeedSequence), in
pure Python.

The simulator draws its few random numbers (the tick phase, processing
time jitter) from ``numpy.random.default_rng(seed)``'s stream.  This
module reproduces that stream bit for bit with the standard library, so
a seed gives the same numbers with or without NumPy, in CPython and in
the reader's browser.  The algorithms are NumPy's
(``numpy/random/bit_generator.pyx``: ``SeedSequence``;
``numpy/random/src/pcg64``: the 128-bit LCG with the XSL-RR output;
``random_uniform``: ``low + (high - low) * next_double``), checked
against NumPy in ``tests/test_sim_core.py``.

>>> g = PCG64(0)
>>> round(g.uniform(0.0, 1.0), 12)
0.636961687321
"""

from __future__ import annotations

__all__ = ["PCG64", "seed_sequence_state"]

_M32 = 0xFFFFFFFF
_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_L = 0xCA01F9DD
_MIX_R = 0x4973F715
_POOL = 4
_LCG_MULT = (2549297995355413924 << 64) + 4865540595714422341


def _words(n: int) -> list[int]:
    """A non-negative int as little-endian 32-bit words (0 -> [0])."""
    if n < 0:
        raise ValueError(f"seed must be non-negative, got {n}")
    out = [] if n else [0]
    while n:
        out.append(n & _M32)
        n >>= 32
    return out


def seed_sequence_state(seed: int, n_words64: int) -> list[int]:
    """``SeedSequence(seed).generate_state(n_words64, uint64)``."""
    h = [_INIT_A]

    def hashmix(value: int) -> int:
        value = (value ^ h[0]) & _M32
        h[0] = (h[0] * _MULT_A) & _M32
        value = (value * h[0]) & _M32
        return value ^ (value >> 16)

    def mix(x: int, y: int) -> int:
        r = (_MIX_L * x - _MIX_R * y) & _M32
        return r ^ (r >> 16)

    entropy = _words(seed)
    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL, len(entropy)):
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(entropy[src]))
    hb = _INIT_B
    words = []
    for i in range(2 * n_words64):
        v = pool[i % _POOL] ^ hb
        hb = (hb * _MULT_B) & _M32
        v = (v * hb) & _M32
        words.append(v ^ (v >> 16))
    return [words[2 * i] | (words[2 * i + 1] << 32) for i in range(n_words64)]


class PCG64:
    """The PCG64 bit generator of ``numpy.random.default_rng(seed)``."""

    __slots__ = ("state", "inc")

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be a whole number, got {seed!r}")
        s0, s1, i0, i1 = seed_sequence_state(seed, 4)
        init_state = (s0 << 64) | s1
        init_seq = (i0 << 64) | i1
        self.inc = ((init_seq << 1) | 1) & _M128
        self.state = 0
        self._step()
        self.state = (self.state + init_state) & _M128
        self._step()

    def _step(self) -> None:
        self.state = (self.state * _LCG_MULT + self.inc) & _M128

    def next_uint64(self) -> int:
        """The next 64 random bits (XSL-RR output of the new state)."""
        self._step()
        s = self.state
        x = ((s >> 64) ^ s) & _M64
        rot = s >> 122
        return ((x >> rot) | (x << ((-rot) & 63))) & _M64

    def random(self) -> float:
        """A float in [0, 1) with 53 random bits."""
        return (self.next_uint64() >> 11) * (1.0 / 9007199254740992.0)

    def uniform(self, low: float, high: float) -> float:
        """``Generator.uniform(low, high)``: ``low + (high - low) * u``."""
        return low + (high - low) * self.random()

"""A speed device for classes whose hot methods are shared by subclasses that alternate.

CPython (3.11 and later) specialises each attribute access and method call of a function's code
for the one type it last saw there (an inline cache), and falls back to the generic lookup, and
sooner or later specialises again, when the type changes.  The client's and the server's threads
(:mod:`models.sim.ends`) run the same :class:`models.sim.app.AppThread` methods in turn, so
without this every access to ``self`` in them missed about half the time: about a tenth of the
raw engine's wall time in the standard benchmark.  :class:`OwnCode` gives each subclass its own
copy of the code of the methods named in ``own_code`` that it inherits: the same instructions,
constants and names (``code.replace()`` with no changes), so the same behaviour, with caches of
its own.  A method a subclass defines itself is left alone, so overriding works as before.

>>> class Base(OwnCode):
...     own_code = ("twice",)
...     def twice(self, x):
...         return 2 * x
>>> class Sub(Base):
...     pass
>>> Sub.twice is Base.twice, Sub.twice.__code__ is Base.twice.__code__, Sub().twice(4)
(False, False, 8)
"""

from __future__ import annotations

from types import FunctionType
from typing import Any

__all__ = ["OwnCode"]


class OwnCode:
    """A mixin: each subclass gets its own copy of the methods named in ``own_code``."""

    #: Names of the (plain function) methods each subclass gets its own copy of.
    own_code: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls.own_code:
            if name in vars(cls):  # (its own, or its class's own copy)
                continue
            f = getattr(cls, name)
            copy = FunctionType(
                f.__code__.replace(), f.__globals__, f.__name__, f.__defaults__, f.__closure__
            )
            copy.__kwdefaults__ = f.__kwdefaults__
            copy.__doc__ = f.__doc__
            copy.__qualname__ = f.__qualname__
            setattr(cls, name, copy)

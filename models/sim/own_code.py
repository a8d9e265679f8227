"""A speed device for classes whose hot methods are shared by subclasses that alternate.

CPython (3.11 and later) specialises each attribute access and method call of a function's code
for the one type it last saw there (an inline cache), and falls back to the generic lookup, and
sooner or later specialises again, when the type changes.  The client's and the server's threads
(:mod:`models.sim.ends`) run the same :class:`models.sim.app.AppThread` methods in turn, so
without this every access to ``self`` in them missed about half the time: about a tenth of the
raw engine's wall time in the standard benchmark.  :class:`OwnCode` gives the class of each
instance its own copy of the code of the methods named in ``own_code`` that it inherits: the
same instructions, constants and names (``code.replace()`` with no changes), so the same
behaviour, with caches of its own.

The copies are made, or made again, when an instance is made (``_own_code``, called by the
class's ``__init__``), from what the class inherits then: a method a subclass defines itself is
left alone, and a method replaced on a base class (a test's ``monkeypatch``, a user's change) is
what the next instance's class copies.

>>> class Base(OwnCode):
...     own_code = ("twice",)
...     def __init__(self):
...         self._own_code()
...     def twice(self, x):
...         return 2 * x
>>> class Sub(Base):
...     pass
>>> Sub().twice(4), Sub.twice is Base.twice
(8, False)
>>> Sub.twice.__code__ is Base.twice.__code__
False
>>> Base.twice = lambda self, x: 3 * x  # replaced on the base:
>>> Sub().twice(4)                      # the next instance sees it
12
"""

from __future__ import annotations

from types import FunctionType

__all__ = ["OwnCode"]


class OwnCode:
    """A mixin: the class of each instance gets its own copy of the methods named in
    ``own_code`` it inherits (``_own_code``)."""

    #: Names of the (plain function) methods each subclass gets its own copy of.
    own_code: tuple[str, ...] = ()

    def _own_code(self) -> None:
        """Give this instance's class its own copy of each method named in ``own_code`` that
        it inherits, unless it has a copy of that method already."""
        cls = type(self)
        for name in cls.own_code:
            have = vars(cls).get(name)
            f = _inherited(cls, name)
            if not isinstance(f, FunctionType):  # its own, or not a plain function: as is
                if getattr(have, "own_copy_of", None) is not None:
                    delattr(cls, name)  # (a copy of what the class no longer inherits)
                continue
            if getattr(have, "own_copy_of", None) is not f:
                copy = FunctionType(
                    f.__code__.replace(), f.__globals__, f.__name__, f.__defaults__, f.__closure__
                )
                copy.__kwdefaults__ = f.__kwdefaults__
                copy.__doc__ = f.__doc__
                copy.__qualname__ = f.__qualname__
                copy.own_copy_of = f  # type: ignore[attr-defined]
                setattr(cls, name, copy)


def _inherited(cls: type, name: str) -> object:
    """What ``cls`` would inherit as ``name`` without the copies (``None``: it defines it
    itself, or nothing)."""
    for klass in cls.__mro__:
        v = vars(klass).get(name)
        if v is None or getattr(v, "own_copy_of", None) is not None:
            continue  # (none, or a copy)
        return None if klass is cls else v
    return None

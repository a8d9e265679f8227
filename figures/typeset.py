"""How the book typesets SymPy: names upright, products visible.

SymPy's default LaTeX runs the factors of a product together in italics,
so ``CL*H + CL*IOSIZE`` reads as "CLH + CLIOSIZE".  The book's printer
writes every name of more than one letter upright (``\\mathrm{CL}``), puts
a centred dot between the factors of a product, and makes a trailing
``min``/``max`` and anything after an underscore a subscript, as the
source writes them (``RTTmin`` is RTT with subscript min).

>>> import sympy as sp
>>> CL, H, IOSIZE = sp.symbols("CL H IOSIZE")
>>> latex(CL * H + CL * IOSIZE)
'\\\\mathrm{CL} \\\\cdot H + \\\\mathrm{CL} \\\\cdot \\\\mathrm{IOSIZE}'
>>> latex(sp.Symbol("RTTmin") / sp.Symbol("SP"))
'\\\\frac{\\\\mathrm{RTT}_{\\\\mathrm{min}}}{\\\\mathrm{SP}}'

Chapters call :func:`use_book_notation` once, in their first cell.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["latex", "use_book_notation", "symbol_latex", "glue"]

_TAIL = re.compile(r"^(?P<base>[A-Za-z]{2,}?)(?P<sub>min|max)$")


def _word(text: str) -> str:
    """A name part: upright if longer than one letter."""
    return text if len(text) == 1 else rf"\mathrm{{{text}}}"


def symbol_latex(name: str) -> str:
    """The LaTeX of one symbol name in the book's notation."""
    if "_" in name:
        base, _, sub = name.partition("_")
        return f"{_word(base)}_{{{_word(sub)}}}"
    m = _TAIL.match(name)
    if m:
        return f"{_word(m['base'])}_{{{_word(m['sub'])}}}"
    return _word(name)


def _printer(settings: dict) -> Any:
    from sympy.printing.latex import LatexPrinter

    class BookLatexPrinter(LatexPrinter):
        """SymPy's LaTeX printer with the book's symbol names."""

        def _print_Symbol(self, expr: Any, style: str = "plain") -> str:
            return symbol_latex(expr.name)

    return BookLatexPrinter({"mul_symbol": "dot", **settings})


def latex(expr: Any, **settings: Any) -> str:
    """``expr`` as LaTeX in the book's notation (``settings`` as for
    :func:`sympy.latex`, e.g. ``mode="inline"``)."""
    return _printer(settings).doprint(expr)


def use_book_notation() -> None:
    """Make every SymPy result a cell displays use the book's notation."""
    import sympy as sp

    # print_builtin=False: plain Python numbers keep their own repr (glue)
    sp.init_printing(use_latex="mathjax", latex_printer=latex, print_builtin=False)


def glue(name: str, value: Any, display: bool = False) -> None:
    """``myst_nb.glue`` for the page's text, with a NumPy scalar turned into the Python number it
    holds first: under NumPy 2 a scalar's text is ``np.float64(...)``, which a ``{glue:text}``
    format such as ``:.1f`` cannot read (the build would warn and fail)."""
    from myst_nb import glue as _glue

    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        value = item()
    _glue(name, value, display=display)

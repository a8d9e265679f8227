"""How the book shows :class:`models.validation.Comparison` rows: one number format, one table layout."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from pandas.io.formats.style import Styler

__all__ = ["fmt_value", "comparison_table", "styled"]


def fmt_value(v: float) -> str:
    """Four significant figures; whole numbers with thousands separators from 10,000 up."""
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"


def styled(df: pd.DataFrame) -> Styler:
    """``df.style`` without an ``id`` on every cell (the book sets no cell's style, and the ids
    make up a third of a large table's HTML)."""
    return Styler(df, cell_ids=False)


def comparison_table(rows: Sequence, extra: Sequence[str] = (), caption: str = ""):
    """Comparison rows as a styled table: quantity, measured, predicted, unit, tolerance, extras, kind
    (when any row is not a plain check) and passed, under ``caption``."""
    df = pd.DataFrame([r.row() for r in rows])
    kind = ["kind"] if "kind" in df and (df["kind"] != "check").any() else []
    cols = ["quantity", "measured", "predicted", "unit", "tolerance", *extra, *kind, "passed"]
    table = styled(df[cols]).format({"measured": fmt_value, "predicted": fmt_value})
    table = table.hide(axis="index")
    return table.set_caption(caption) if caption else table

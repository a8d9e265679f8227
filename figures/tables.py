"""How the book shows :class:`models.validation.Comparison` rows: one number format, one table layout."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

__all__ = ["fmt_value", "comparison_table"]


def fmt_value(v: float) -> str:
    """Four significant figures; whole numbers with thousands separators from 10,000 up."""
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"


def comparison_table(rows: Sequence, extra: Sequence[str] = (), caption: str = ""):
    """Comparison rows as a styled table: quantity, measured, predicted, unit, tolerance, extras, kind
    (when any row is not a plain check) and passed, under ``caption``."""
    df = pd.DataFrame([r.row() for r in rows])
    kind = ["kind"] if "kind" in df and (df["kind"] != "check").any() else []
    cols = ["quantity", "measured", "predicted", "unit", "tolerance", *extra, *kind, "passed"]
    styled = (
        df[cols].style.format({"measured": fmt_value, "predicted": fmt_value}).hide(axis="index")
    )
    return styled.set_caption(caption) if caption else styled
